"""Helpers shared by the check modules."""

from __future__ import annotations

from collections.abc import Sequence

from pcidoc.doctor.context import Context
from pcidoc.doctor.finding import Finding
from pcidoc.model.report import Confidence, Evidence


def median(values: Sequence[float]) -> float:
    """``statistics.median`` (the middle value, or the mean of the two middle ones), without
    importing ``statistics`` and its dependencies at every start of ``pcidoc check``."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError("median of no values")
    if n % 2:
        return ordered[n // 2]
    return (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def ev(
    label: str,
    value: str | float | int | bool | None = None,
    unit: str | None = None,
    subject: str | None = None,
) -> Evidence:
    """Evidence with positional arguments (the model itself takes keywords only)."""
    return Evidence(label=label, value=value, unit=unit, subject=subject)


def no_gpu(ctx: Context) -> Finding:
    """The skip for a capture without GPUs, with the recorded reason when there is one."""
    gap = ctx.capture.unavailable.get("gpus")
    return Finding(
        "skip",
        "no GPU in this capture" + (f" ({gap})" if gap else ""),
        needs="a capture with GPUs: run `pcidoc check` on the GPU machine",
    )


def with_gap(ctx: Context, findings: list[Finding]) -> list[Finding]:
    """Add an info when the capture lists only some of the machine's GPUs (never a pass)."""
    gap = ctx.capture.unavailable.get("gpus")
    if gap and ctx.gpus and any(f.severity != "skip" for f in findings):
        findings.append(
            Finding(
                "info",
                f"judged only {', '.join(g.label for g in ctx.gpus)}: {gap}",
                confidence="low",
                needs="import the output for every GPU, or run `pcidoc check` on the machine",
            )
        )
    return findings


def judged_of(ctx: Context, judged: int) -> str:
    """`` (judged 3 of 8 GPUs)`` when a verdict rests on part of the machine's GPUs, else ""."""
    total = len(ctx.gpus)
    return f" (judged {judged} of {total} GPUs)" if 0 < judged < total else ""


def not_applicable(summary: str, confidence: Confidence = "high") -> Finding:
    """A check with nothing to judge on this machine: ``skip``, never ``pass``.

    ``summary`` says why (``"no NVLink on these GPUs"``); it is prefixed with
    ``"not applicable: "``. A pass must mean something was judged healthy.
    """
    return Finding("skip", f"not applicable: {summary}", confidence=confidence)

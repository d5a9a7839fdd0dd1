"""The ``transfer.pageable`` check."""

from __future__ import annotations

from pcidoc.doctor import config
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.checks.transfer._shared import _DIRECTION, _best, _group
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import gbps as _gbps
from pcidoc.model.measurements import WorkloadEvidence
from pcidoc.model.units import format_bytes

# ---------------------------------------------------------------------- transfer.pageable


def _workload_finding(ctx: Context, w: WorkloadEvidence) -> Finding | None:
    h2d = [m for m in w.memcpy if m.direction == "h2d"]
    if not h2d:
        return None
    total = sum(m.bytes for m in h2d)
    pageable = [m for m in h2d if m.memory == "pageable"]
    paged_bytes = sum(m.bytes for m in pageable)
    paged_time_us = sum(m.time_us for m in pageable)
    steps = w.steps or 1
    per_step = paged_bytes / steps
    share = paged_bytes / total if total else 0.0
    source = w.source or "profiler trace"
    evidence = [
        _ev("H2D bytes per step", format_bytes(total / steps), subject=source),
        _ev("pageable share of H2D bytes", f"{share:.0%}", subject=source),
        _ev(
            "pageable H2D time per step",
            round(paged_time_us / steps / 1000, 2),
            "ms",
            subject=source,
        ),
    ]
    if w.step_time_ms:
        evidence.append(_ev("step time", w.step_time_ms, "ms", subject=source))
    if share > config.PAGEABLE_WORKLOAD_WARN_SHARE and per_step >= (
        config.PAGEABLE_WORKLOAD_MIN_BYTES_PER_STEP
    ):
        pinned = [t.bandwidth_gbps for t in ctx.transfers(direction="h2d", memory="pinned")]
        saving = ""
        if pinned and paged_time_us:
            pinned_ms = per_step / (max(pinned) * 1e9) * 1000
            saving = (
                f"; pinned at the measured {_gbps(max(pinned))} GB/s it would take "
                f"~{pinned_ms:.1f} ms instead of {paged_time_us / steps / 1000:.1f} ms"
            )
        return Finding(
            "warn",
            f"your job copies {format_bytes(per_step)}/step from pageable memory ({share:.0%} "
            f"of its H2D bytes){saving}",
            evidence=evidence,
            remediation=[
                "Load batches into pinned memory: `DataLoader(..., pin_memory=True, "
                "num_workers>0)`, then `batch.to(device, non_blocking=True)`.",
                "Do not call `.pin_memory()` right before each copy (it is no faster than a "
                "plain `.to()`); preallocate pinned staging buffers and reuse them.",
                "In containers allow locking memory: `docker run --ulimit memlock=-1 ...`.",
            ],
            confidence="high" if w.steps else "medium",
        )
    return Finding(
        "pass",
        f"profiled job: {share:.0%} of H2D bytes ({format_bytes(per_step)}/step) come from "
        "pageable memory",
        evidence=evidence,
    )


@check("transfer.pageable")
def transfer_pageable(ctx: Context) -> Finding | list[Finding]:
    """The cost of not pinning host memory, from a micro-benchmark and from a profiler trace."""
    findings: list[Finding] = []
    groups = _group(ctx.transfers(bidirectional=False))
    ratios: list[tuple[str, float, float, float]] = []
    for (index, direction), items in sorted(groups.items()):
        pinned = [t for t in items if t.memory == "pinned" and t.placement != "remote"]
        pageable = [t for t in items if t.memory == "pageable" and t.placement != "remote"]
        if pinned and pageable:
            p, q = _best(pinned).bandwidth_gbps, _best(pageable).bandwidth_gbps
            if q > 0:
                ratios.append((f"GPU{index} {_DIRECTION[direction]}", p / q, p, q))
    if ratios:
        worst = max(ratios, key=lambda r: r[1])
        findings.append(
            Finding(
                "info",
                f"pinned copies are {worst[1]:.1f}× pageable on {worst[0]} ({_gbps(worst[2])} vs "
                f"{_gbps(worst[3])} GB/s): the cost of not pinning host buffers",
                evidence=[
                    _ev(f"pinned vs pageable {who}", f"{p:.1f} vs {q:.1f} ({r:.1f}×)", "GB/s")
                    for who, r, p, q in ratios
                ],
                remediation=[
                    "Pin what you copy every step (`DataLoader(pin_memory=True)`); "
                    "a ratio of 2-3× is normal and not a fault."
                ],
            )
        )
    for w in ctx.measurements.workloads:
        finding = _workload_finding(ctx, w)
        if finding is not None:
            findings.append(finding)
    if not findings:
        return ctx.unmeasured(
            "transfer",
            "no pageable-vs-pinned measurement and no profiler trace with copies",
            needs=ctx.probe_hint() + "; or import a `torch.profiler` trace of your job",
        )
    return findings

"""The ``nvlink.errors`` check."""

from __future__ import annotations

import operator

from pcidoc.doctor import config
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.checks._common import judged_of, not_applicable
from pcidoc.doctor.checks._common import with_gap as _with_gap
from pcidoc.doctor.checks.nvlink._shared import _NVLINK_RESET, _links_known
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import joined as _names
from pcidoc.model.report import Evidence

# =========================================================================== nvlink.errors

_SEVERE = ("replay", "recovery", "symbol")

_ERRORS = operator.attrgetter("errors")
"""A link's error counters (empty when they were not read)."""


def _error_class(name: str) -> str:
    lowered = name.lower()
    if "crc" in lowered:
        return "crc"
    if "effective" in lowered:
        # NVLink5 (Blackwell, NVML field 219): errors forward error correction could not fix,
        # which DCGM's NVLink5 health watch judges (symbol errors before FEC are not read).
        return "effective"
    if any(key in lowered for key in _SEVERE):
        return "replay/recovery"
    return "other"


@check("nvlink.errors")
def nvlink_errors(ctx: Context) -> list[Finding]:
    """Judge NVLink replay/recovery/CRC counters (cumulative since the driver loaded).

    Args:
        ctx: The machine.

    Returns:
        A warning per GPU with replay/recovery or CRC errors (failure when the average rate
        since boot already exceeds DCGM's limits), a pass when all counters are zero, a skip when
        no counter was read.
    """
    gpus = [g for g in ctx.gpus if g.nvlinks]
    if not gpus:
        if any(_links_known(g) for g in ctx.gpus) or (
            ctx.has_topology and not ctx.has_nvlink_pair and ctx.gpus
        ):
            return [not_applicable("no NVLink on these GPUs")]
        return [
            Finding(
                "skip",
                "no NVLink facts in this capture",
                needs="run `pcidoc check` on the machine, or import `nvidia-smi nvlink -e`",
            )
        ]
    counted = [g for g in gpus if any(map(_ERRORS, g.nvlinks))]  # a link with counters read
    if not counted:
        return [
            Finding(
                "skip",
                "NVLink error counters were not read",
                needs="run `pcidoc check --only nvlink.errors` on the machine, or import "
                "`nvidia-smi nvlink -e`",
            )
        ]
    uptime = ctx.host.uptime_s
    minutes = uptime / 60.0 if uptime else None
    findings: list[Finding] = []
    for gpu in counted:
        totals: dict[str, int] = {"replay/recovery": 0, "crc": 0, "effective": 0, "other": 0}
        per_link: list[Evidence] = []
        for link in gpu.nvlinks:
            for name, value in sorted(link.errors.items()):
                totals[_error_class(name)] += value
                if value:
                    per_link.append(_ev(f"link {link.link} {name}", value, "errors", gpu.label))
        severe, crc = totals["replay/recovery"], totals["crc"]
        remediation = [
            f"Get a rate instead of a lifetime total: `sudo nvidia-smi nvlink -re -i {gpu.index}`"
            f" (reset the counters), run a load for a few minutes, then `nvidia-smi nvlink -e -i "
            f"{gpu.index}`; `dcgmi health -s n` watches them continuously.",
            _NVLINK_RESET.format(index=gpu.index),
        ]
        if severe:
            rate = severe / minutes if minutes else None
            findings.append(
                _counter_finding(
                    gpu.label,
                    f"{severe} NVLink replay/recovery errors",
                    rate,
                    "min",
                    config.NVLINK_ERROR_FAIL_PER_MIN,
                    "DCGM fails at",
                    per_link,
                    remediation,
                )
            )
        if crc:
            per_s = crc / uptime if uptime else None
            findings.append(
                _counter_finding(
                    gpu.label,
                    f"{crc} NVLink CRC errors",
                    per_s,
                    "s",
                    config.NVLINK_CRC_FAIL_PER_S,
                    "they matter from",
                    per_link,
                    remediation,
                )
            )
        effective = totals["effective"]
        if effective:
            # No published rate limit for these (DCGM's is not in its public limits): any
            # uncorrected error since the driver loaded is worth a look, not a verdict of failure.
            findings.append(
                Finding(
                    "warn",
                    f"{gpu.label}: {effective} NVLink errors left uncorrected by FEC (effective "
                    "errors, cumulative since the driver loaded)",
                    subjects=[gpu.label],
                    evidence=per_link,
                    remediation=remediation,
                    confidence="medium",
                )
            )
        if totals["other"] and not (severe or crc or effective):
            findings.append(
                Finding(
                    "info",
                    f"{gpu.label}: {totals['other']} other NVLink error events counted",
                    subjects=[gpu.label],
                    evidence=per_link,
                    remediation=remediation[:1],
                    confidence="low",
                )
            )
    read = {id(g) for g in counted}  # by identity: comparing GPU models field by field is slow
    missing = [g.label for g in gpus if id(g) not in read]
    if missing:
        findings.append(
            Finding(
                "info",
                f"NVLink error counters not read for {_names(missing)}",
                subjects=missing,
                confidence="low",
            )
        )
    if not any(f.severity in ("warn", "fail", "info") and f.subjects != missing for f in findings):
        links = sum(len(g.nvlinks) for g in counted)
        findings.append(
            Finding(
                "pass",
                f"0 NVLink errors on {links} links of {len(counted)} GPU(s) (cumulative since the "
                f"driver loaded){judged_of(ctx, len(counted))}",
                evidence=[_ev("NVLinks counted", links, "links")],
                confidence="high" if not missing else "medium",
            )
        )
    return _with_gap(ctx, findings)


def _counter_finding(
    label: str,
    what: str,
    rate: float | None,
    unit: str,
    limit: float,
    limit_words: str,
    evidence: list[Evidence],
    remediation: list[str],
) -> Finding:
    """warn, or fail when the average ``rate`` per ``unit`` since boot reaches ``limit``."""
    detail = (
        f"an average of {rate:.2g}/{unit} since boot"
        if rate is not None
        else ("cumulative, no time window")
    )
    return Finding(
        "fail" if rate is not None and rate >= limit else "warn",
        f"{label}: {what} ({detail}; {limit_words} {limit:g}/{unit})",
        subjects=[label],
        evidence=evidence,
        remediation=remediation,
        confidence="low" if rate is not None else "medium",
    )

"""``nccl.inspector``: production bus bandwidth from the NCCL Inspector plugin, per GPU,
collective and message size, against what the links between the GPUs should give (the same
link model as ``scaling.allreduce``). Small messages are latency-bound and not judged; jobs
across nodes are bound by the network, which the link model does not cover.
"""

from __future__ import annotations

from pcidoc.doctor import config
from pcidoc.doctor.busbw import allreduce_model
from pcidoc.doctor.checks._common import ev
from pcidoc.doctor.checks.nccl._shared import evidence
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, bare_skip, check
from pcidoc.doctor.wording import gbps, short_list
from pcidoc.model.report import Severity
from pcidoc.model.units import format_bytes

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


def _label(r: Any) -> str:
    where = "/".join(
        x for x in (r.host, r.gpu or (f"rank {r.rank}" if r.rank is not None else None)) if x
    )
    size = r.msg_size_label or (format_bytes(r.msg_size_bytes) if r.msg_size_bytes else "?")
    return f"{r.collective} {size}" + (f" on {where}" if where else "")


def _model(ctx: Context, r: Any) -> tuple[float | None, str]:
    """The model bus bandwidth for a one-node record, from the capture's GPUs."""
    indices = sorted(ctx.gpu_by_index)
    if not indices or (r.nranks and r.nranks > len(indices)):
        return None, "the links of that node are not in the capture"
    model = allreduce_model(ctx, indices[: r.nranks or len(indices)])
    return model.gbps, model.basis


def _judge(
    ctx: Context, records: list[Any]
) -> tuple[list[tuple[str, Any, float, str]], list[Any], list[Any]]:
    """(low records with their model, records that pass, records not judged)."""
    low: list[tuple[str, Any, float, str]] = []
    ok: list[Any] = []
    unjudged: list[Any] = []
    pcie_top = config.pcie_ceiling_gbps(config.PCIE_NEWEST_GEN, 16) or float("inf")
    for r in records:
        if r.busbw_gbps is None or (r.msg_size_bytes or 0) < config.BUSBW_MIN_SIZE_BYTES:
            unjudged.append(r)
            continue
        if r.nnodes and r.nnodes > 1:
            unjudged.append(r)
            continue
        model, basis = _model(ctx, r)
        if model is None:
            (ok if r.busbw_gbps > pcie_top else unjudged).append(r)
            continue
        fraction = r.busbw_gbps / model
        if fraction < config.BUSBW_FAIL_FRACTION:
            low.append(("fail", r, model, basis))
        elif fraction < config.BUSBW_WARN_FRACTION:
            low.append(("warn", r, model, basis))
        else:
            ok.append(r)
    return low, ok, unjudged


@check("nccl.inspector")
def inspector(ctx: Context) -> list[Finding]:
    """Inspector records below the link model (large messages, one node)."""
    ev_all = evidence(ctx)
    records = list(getattr(ev_all, "inspector", ()))
    traces = list(getattr(ev_all, "profiler_traces", ()))
    if not records:
        return [
            bare_skip(
                "nccl.inspector",
                (" (the profiler plugin trace holds timings, not bandwidth)" if traces else ""),
            )
        ]
    low, ok, unjudged = _judge(ctx, records)
    findings = []
    severity: Severity
    for severity in ("fail", "warn"):
        rows = [x for x in low if x[0] == severity]
        if not rows:
            continue
        findings.append(
            Finding(
                severity,
                "production bus bandwidth below the link model on "
                + short_list(
                    [f"{_label(r)} ({gbps(r.busbw_gbps)} of {gbps(m)} GB/s)" for _, r, m, _ in rows]
                ),
                evidence=[
                    ev(_label(r), r.busbw_gbps, "GB/s", subject=basis)
                    for _, r, _m, basis in rows[:6]
                ],
                remediation=[
                    "Compare with a benchmark on the same GPUs (`all_reduce_perf -b 1G -e 4G`, "
                    "`pcidoc check --probes full`): if it is also low, the links are (see "
                    "pcie.link-speed, nvlink.state, p2p.*); if not, other traffic or the "
                    "job's NCCL settings are (env.nccl).",
                ],
                confidence="medium",
            )
        )
    if findings:
        return findings
    if ok:
        best = max(r.busbw_gbps for r in ok)
        return [
            Finding(
                "pass",
                f"production bus bandwidth as the links allow on {len(ok)} record(s) (up to "
                f"{gbps(best)} GB/s)"
                + (
                    f"; {len(unjudged)} not judged (small messages or several nodes)"
                    if unjudged
                    else ""
                ),
                evidence=[ev(_label(r), r.busbw_gbps, "GB/s") for r in ok[:4]],
                confidence="medium",
            )
        ]
    return [
        Finding(
            "info",
            f"{len(unjudged)} Inspector record(s) not judged: messages under "
            f"{format_bytes(config.BUSBW_MIN_SIZE_BYTES)} are latency-bound, jobs across nodes "
            "are network-bound, and the links of the node are not in the capture",
            evidence=[ev(_label(r), r.busbw_gbps, "GB/s") for r in unjudged[:4]],
            confidence="low",
        )
    ]

"""The ``scaling.efficiency`` check."""

from __future__ import annotations

from pcidoc.doctor import alpha_beta, config
from pcidoc.doctor.busbw import (
    _KIND_NAME,
    _RANK_CLASS,
    LinkModel,
    _bottleneck_rank,
    allreduce_model,
)
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.context import Context
from pcidoc.doctor.placement import locality_groups
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import gbps as _gbps
from pcidoc.doctor.wording import gpu_set
from pcidoc.model.links import is_nvlink
from pcidoc.model.measurements import (
    ScalingMeasurement,
    WorkloadEvidence,
)
from pcidoc.model.report import Confidence, Evidence, Severity
from pcidoc.model.units import format_bytes

# ---------------------------------------------------------------------- scaling.efficiency


def _efficiencies(m: ScalingMeasurement) -> list[tuple[int, float, list[int]]]:
    points = sorted(m.points, key=lambda p: p.ranks)
    base = next((p for p in points if p.ranks == 1), None)
    out = []
    for p in points:
        if p.ranks <= 1:
            continue
        eff = p.efficiency
        if eff is None and base and base.throughput_samples_per_s > 0:
            eff = p.throughput_samples_per_s / (p.ranks * base.throughput_samples_per_s)
        if eff is not None:
            out.append((p.ranks, eff, list(p.gpus)))
    return out


def _compute_time_s(m: ScalingMeasurement) -> float | None:
    base = next((p for p in m.points if p.ranks == 1), None)
    if base is None:
        return None
    if base.step_time_ms:
        return base.step_time_ms / 1000
    if m.per_rank_batch and base.throughput_samples_per_s > 0:
        return m.per_rank_batch / base.throughput_samples_per_s
    return None


def _slowest_edge(ctx: Context, m: ScalingMeasurement, gpus: list[int]) -> str | None:
    if m.slowest_edge:
        return m.slowest_edge
    worst = _bottleneck_rank(ctx, gpus) if len(gpus) > 1 else None
    if worst is None:
        return None
    return "NV" if worst == 1 else _RANK_CLASS.get(worst)


def _what_ifs(
    ctx: Context,
    m: ScalingMeasurement,
    model: alpha_beta.CommModel,
    gpus: list[int],
    target: float,
) -> tuple[list[str], list[Evidence]]:
    lines: list[str] = []
    evidence: list[Evidence] = []

    def show(w: alpha_beta.WhatIf) -> str:
        return (
            f"{w.label}: communication {w.t_comm_s * 1000:.1f} ms per step, "
            f"predicted E {w.efficiency:.0%}"
        )

    k = alpha_beta.accumulation_steps_for(target, model.t_compute_s, model.t_comm_s)
    k = k if k and k > 1 else config.GRAD_ACCUM_WHAT_IF_STEPS
    scenarios = [model.with_accumulation(k)]
    if model.buckets > 1:
        scenarios.append(model.with_buckets(config.DDP_LARGE_BUCKET_BYTES))
    if m.model_params and m.gradient_bytes and m.gradient_bytes >= 4 * m.model_params:
        scenarios.append(
            model.with_gradient_bytes(m.gradient_bytes / 2, "bf16 gradients (half the bytes)")
        )
    current = allreduce_model(ctx, gpus) if gpus else None
    if current and current.gbps:
        for group in locality_groups(ctx, [g.index for g in ctx.gpus]):
            if len(group) < len(gpus) or set(group) == set(gpus):
                continue
            better = allreduce_model(ctx, group[: len(gpus)])
            if better.gbps and better.gbps > current.gbps:
                scenarios.append(
                    model.with_busbw(
                        model.busbw_gbps * better.gbps / current.gbps,
                        f"placement on {gpu_set(group[: len(gpus)])} "
                        f"(no {current.slowest_edge} hop)",
                    )
                )
                break
    for w in scenarios:
        lines.append(show(w))
        evidence.append(
            _ev(f"what-if: {w.label}", f"{w.t_comm_s * 1000:.1f} ms, E {w.efficiency:.0%}")
        )
    return lines, evidence


@check("scaling.efficiency")
def scaling_efficiency(ctx: Context) -> Finding | list[Finding]:
    """E(N) = throughput(N) / (N × throughput(1)), explained with the α–β model."""
    findings: list[Finding] = []
    for m in ctx.measurements.scaling:
        findings.extend(_judge_scaling(ctx, m))
    for w in ctx.measurements.workloads:
        finding = _judge_workload(w)
        if finding is not None:
            findings.append(finding)
    if not findings:
        return ctx.unmeasured(
            "scaling",
            "no scaling ladder and no profiler trace with NCCL time",
            needs=ctx.probe_hint() + "; or import a `torch.profiler` trace of your job",
        )
    return findings


class _Rung:
    """One rank count of a ladder with what the α–β model predicts for it."""

    __slots__ = ("busbw", "eff", "gpus", "link", "predicted_links", "predicted_measured", "ranks")

    def __init__(
        self,
        ranks: int,
        eff: float,
        gpus: list[int],
        busbw: float | None,
        link: LinkModel,
        predicted_links: float | None,
        predicted_measured: float | None,
    ) -> None:
        self.ranks = ranks
        self.eff = eff
        self.gpus = gpus
        self.busbw = busbw
        """All-reduce busbw measured at the gradient size on these ranks."""
        self.link = link
        self.predicted_links = predicted_links
        """E(N) the α–β model predicts with the links' busbw (the link model)."""
        self.predicted_measured = predicted_measured
        """E(N) the α–β model predicts with the measured busbw."""

    @property
    def transport(self) -> str:
        return "nvlink" if self.link.kind == "nvlink" else "pcie"

    @property
    def busbw_ratio(self) -> float | None:
        """Measured busbw / link model (``None`` when either is unknown)."""
        if self.busbw is None or not self.link.gbps:
            return None
        return self.busbw / self.link.gbps


def _rungs(ctx: Context, m: ScalingMeasurement, t_compute: float) -> list[_Rung]:
    largest = max(p.ranks for p in m.points)
    by_ranks = {p.ranks: p for p in m.points}
    rungs = []
    for n, eff, gpus in _efficiencies(m):
        if not gpus and n == len(ctx.gpus):
            gpus = [g.index for g in ctx.gpus]
        busbw = by_ranks[n].allreduce_busbw_gbps
        if busbw is None and n == largest:
            busbw = m.allreduce_busbw_gbps
        link = (
            allreduce_model(ctx, gpus)
            if len(gpus) >= 2
            else LinkModel(None, "unknown", "which GPUs ran is not known", "low")
        )
        transport = "nvlink" if link.kind == "nvlink" else "pcie"
        grads = float(m.gradient_bytes or 0)

        def predict(
            bw: float | None, n: int = n, transport: str = transport, grads: float = grads
        ) -> float | None:
            if not bw or bw <= 0 or not grads:
                return None
            return alpha_beta.comm_model(n, grads, bw, t_compute, transport).efficiency

        rungs.append(_Rung(n, eff, gpus, busbw, link, predict(link.gbps), predict(busbw)))
    return rungs


def _rung_evidence(rungs: list[_Rung]) -> list[Evidence]:
    """E(N) for every rank count, with the predictions next to it."""
    evidence = []
    for r in rungs:
        parts = []
        if r.predicted_links is not None:
            parts.append(f"links predict {r.predicted_links:.0%}")
        if r.busbw is not None:
            parts.append(f"busbw {_gbps(r.busbw)} GB/s")
        evidence.append(_ev(f"E({r.ranks})", round(r.eff, 3), subject="; ".join(parts) or None))
    return evidence


def _judge_scaling(ctx: Context, m: ScalingMeasurement) -> list[Finding]:
    effs = _efficiencies(m)
    if not effs:
        return [
            Finding(
                "info",
                "scaling ladder without a usable 1-rank baseline: E(N) not computed",
                confidence="low",
            )
        ]
    if (m.backend or "").lower() == "gloo":
        ranks, eff, _ = max(effs, key=lambda e: e[0])
        return [
            Finding(
                "info",
                f"gloo (CPU) scaling ladder: E({ranks}) = {eff:.0%}; functional check only",
                evidence=[_ev(f"E({n})", round(e, 3)) for n, e, _ in effs],
            )
        ]
    t_compute = _compute_time_s(m)
    if not (m.gradient_bytes and t_compute):
        return [_judge_by_thresholds(ctx, m, effs)]
    rungs = _rungs(ctx, m, t_compute)
    top = rungs[-1]
    if top.link.gbps is None and top.busbw is None:
        return [_judge_by_thresholds(ctx, m, effs)]
    return _judge_rungs(ctx, m, rungs, t_compute)


def _threshold_severity(eff: float, nvlink: bool) -> Severity:
    """E(N) alone (nothing to predict it from): NVLink pass/warn/fail, PCIe pass/info/fail."""
    if eff >= config.SCALING_PASS_NVLINK:
        return "pass"
    if nvlink:
        return "warn" if eff >= config.SCALING_FAIL_NVLINK else "fail"
    return "info" if eff >= config.SCALING_FAIL_PCIE else "fail"


def _judge_by_thresholds(
    ctx: Context, m: ScalingMeasurement, effs: list[tuple[int, float, list[int]]]
) -> Finding:
    """No gradient size or compute time, or no link and no busbw: E(N) against thresholds."""
    ranks, eff, gpus = max(effs, key=lambda e: e[0])
    if not gpus and ranks == len(ctx.gpus):
        gpus = [g.index for g in ctx.gpus]
    edge = _slowest_edge(ctx, m, gpus)
    nvlink = edge is not None and (edge == "NV" or is_nvlink(edge))
    severity = _threshold_severity(eff, nvlink)
    evidence = [_ev(f"E({n})", round(e, 3)) for n, e, _ in effs]
    summary = f"E({ranks}) = {eff:.0%} on {gpu_set(gpus) if gpus else f'{ranks} ranks'}"
    if edge:
        summary += f" (slowest edge {edge})"
        evidence.append(_ev("slowest edge among the GPUs used", edge, subject=gpu_set(gpus)))
    remediation = []
    if severity != "pass":
        remediation = [
            "Measure the all-reduce bus bandwidth at the gradient size to explain the loss "
            "(`pcidoc check --probes full`).",
            "Check the slowest edge: P2P (p2p.*), NVLink (nvlink.state) and "
            "cross-socket placement (numa.cross-socket).",
        ]
    return Finding(
        severity,
        summary,
        subjects=[f"GPU{i}" for i in gpus],
        evidence=evidence,
        remediation=remediation,
        confidence="high" if edge else "medium",
    )


def _model_evidence(
    m: ScalingMeasurement, top: _Rung, model: alpha_beta.CommModel, t_compute: float
) -> list[Evidence]:
    evidence = [
        _ev("gradient bytes per step", format_bytes(m.gradient_bytes or 0)),
        _ev("link model (what the links should give)", top.link.gbps, "GB/s", top.link.basis),
    ]
    if top.busbw is not None:
        evidence.append(_ev("measured all-reduce busbw (W)", top.busbw, "GB/s"))
    if top.busbw_ratio is not None:
        evidence.append(_ev("busbw / link model", f"{top.busbw_ratio:.0%}"))
    evidence += [
        _ev("α per all-reduce", round(model.alpha_us, 1), "us", f"{model.buckets} bucket(s)"),
        _ev("1-rank step (compute)", round(t_compute * 1000, 2), "ms"),
        _ev("modelled communication per step", round(model.t_comm_s * 1000, 2), "ms"),
        _ev("predicted E (no overlap)", f"{model.efficiency:.0%}"),
    ]
    if top.predicted_links is not None and top.busbw is not None:
        evidence.append(_ev("predicted E with the links' busbw", f"{top.predicted_links:.0%}"))
    return evidence


def _judge_rungs(
    ctx: Context, m: ScalingMeasurement, rungs: list[_Rung], t_compute: float
) -> list[Finding]:
    """The verdict of the largest rank count against the α–β model of this machine's links."""
    top = rungs[-1]
    busbw = top.busbw if top.busbw is not None else top.link.gbps
    assert busbw is not None  # _judge_scaling checked one of them is known
    model = alpha_beta.comm_model(
        top.ranks, float(m.gradient_bytes or 0), busbw, t_compute, top.transport
    )
    edge = _slowest_edge(ctx, m, top.gpus)
    evidence = _rung_evidence(rungs) + _model_evidence(m, top, model, t_compute)
    if edge:
        evidence.append(_ev("slowest edge among the GPUs used", edge, gpu_set(top.gpus)))
    where = gpu_set(top.gpus) if top.gpus else f"{top.ranks} ranks"
    summary = f"E({top.ranks}) = {top.eff:.0%} on {where}" + (
        f" (slowest edge {edge})" if edge else ""
    )
    summary += (
        f"; the α–β model predicts {model.efficiency:.0%} with no overlap (communication "
        f"{model.t_comm_s * 1000:.1f} ms per step at {_gbps(busbw)} GB/s vs "
        f"{t_compute * 1000:.1f} ms of compute)"
    )
    severity, summary, remediation = _verdict(ctx, m, top, model, summary, edge)
    confidence: Confidence = top.link.confidence if top.busbw is None else "high"
    return [
        Finding(
            severity,
            summary,
            subjects=[f"GPU{i}" for i in top.gpus],
            evidence=evidence,
            remediation=remediation,
            confidence=confidence if severity in ("warn", "fail") else "high",
        )
    ]


_CHECK_EDGE = (
    "Check the slowest edge: P2P (p2p.*), NVLink (nvlink.state) and cross-socket placement "
    "(numa.cross-socket); `pcidoc probe allreduce` measures the bus bandwidth alone."
)


_NOT_INTERCONNECT = (
    "Look at the input pipeline (DataLoader workers, pageable copies: transfer.pageable), "
    "stragglers (one slow GPU or rank: p2p.fallback outliers, thermal throttling) and CPU "
    "binding (numa.process-affinity)."
)


def _verdict(
    ctx: Context,
    m: ScalingMeasurement,
    top: _Rung,
    model: alpha_beta.CommModel,
    summary: str,
    edge: str | None,
) -> tuple[Severity, str, list[str]]:
    """Severity, summary and remedies: links short of their model (warn/fail), E(N) short of
    the prediction (warn), otherwise pass or — a communication-heavy workload on healthy
    links — info with what would change it."""
    ratio = top.busbw_ratio
    severity: Severity | None = None
    remediation: list[str] = []
    predicted = top.predicted_measured or top.predicted_links
    if predicted is not None and top.eff < config.SCALING_GAP_FRACTION * predicted:
        severity = "warn"
        summary += (
            f"; E({top.ranks}) is below {config.SCALING_GAP_FRACTION:.0%} of the "
            f"{predicted:.0%} the interconnect explains: the loss is not the interconnect"
        )
        remediation.append(_NOT_INTERCONNECT)
    if ratio is not None and ratio < config.BUSBW_WARN_FRACTION:
        severity = "fail" if ratio < config.BUSBW_FAIL_FRACTION else "warn"
        summary += (
            f"; the all-reduce reached {_gbps(top.busbw or 0)} GB/s busbw, {ratio:.0%} of the "
            f"{_KIND_NAME.get(top.link.kind, top.link.kind)} model ({_gbps(top.link.gbps or 0)} "
            "GB/s): the interconnect delivers less than the links should"
        )
        remediation.append(_CHECK_EDGE)
    if severity is not None:
        return severity, summary, remediation
    if top.eff >= config.SCALING_PASS_NVLINK:
        return "pass", summary, []
    lines, _extra = _what_ifs(ctx, m, model, top.gpus, config.SCALING_PASS_NVLINK)
    summary += (
        "; the links deliver what their model says, so this workload is "
        "communication-heavy for them"
        if ratio is not None
        else "; as the links' model predicts for this workload"
    )
    return (
        "info",
        summary,
        [
            f"Communication takes {model.comm_share:.0%} of the step in the model; what would "
            "change it: " + "; ".join(lines) + ".",
        ],
    )


def _judge_workload(w: WorkloadEvidence) -> Finding | None:
    share = w.nccl_exposed_share
    if share is None:
        return None
    source = w.source or "profiler trace"
    evidence = [_ev("exposed NCCL share of the step", f"{share:.0%}", subject=source)]
    if w.nccl_time_share is not None:
        evidence.append(
            _ev(
                "NCCL share of the step (overlapped or not)",
                f"{w.nccl_time_share:.0%}",
                subject=source,
            )
        )
    if share <= config.NCCL_EXPOSED_SHARE_WARN:
        return Finding(
            "pass",
            f"profiled job: {share:.0%} of the step waits on exposed NCCL communication",
            evidence=evidence,
        )
    lines = []
    if w.step_time_ms:
        step = w.step_time_ms / 1000
        t_comm = share * step
        t_compute = step - t_comm
        current = alpha_beta.efficiency(t_compute, t_comm)
        k = alpha_beta.accumulation_steps_for(config.SCALING_PASS_NVLINK, t_compute, t_comm)
        k = k if k and k > 1 else config.GRAD_ACCUM_WHAT_IF_STEPS
        accum = alpha_beta.efficiency(t_compute, t_comm / k)
        half = alpha_beta.efficiency(t_compute, t_comm / 2)
        evidence.append(_ev("exposed NCCL time per step", round(t_comm * 1000, 1), "ms"))
        lines = [
            f"now {t_comm * 1000:.1f} ms of {w.step_time_ms:.1f} ms is exposed (compute share "
            f"{current:.0%})",
            f"gradient accumulation over {k} steps → compute share ~{accum:.0%}",
            f"halving the bytes (bf16 gradients) → ~{half:.0%} if bandwidth-bound",
        ]
    return Finding(
        "warn",
        f"profiled job: {share:.0%} of each step waits on NCCL with no compute overlapping it",
        evidence=evidence,
        remediation=[
            ("The α–β view of your step: " + "; ".join(lines) + ".")
            if lines
            else "Overlap communication with compute (DDP buckets during backward), accumulate "
            "gradients, or send bf16 gradients.",
            "Larger DDP buckets (`bucket_cap_mb=100`) cut the per-call latency terms; check the "
            "placement of ranks (numa.cross-socket) and the all-reduce bandwidth "
            "(scaling.allreduce).",
        ],
        confidence="medium",
    )

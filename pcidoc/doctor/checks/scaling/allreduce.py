"""The ``scaling.allreduce`` check."""

from __future__ import annotations

from pcidoc.doctor import config
from pcidoc.doctor.busbw import _KIND_NAME, LinkModel, allreduce_model
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import counted, gpu_set
from pcidoc.doctor.wording import gbps as _gbps
from pcidoc.model.measurements import (
    CollectiveMeasurement,
    CollectiveRow,
    ScalingMeasurement,
)
from pcidoc.model.report import Confidence, Evidence, Severity
from pcidoc.model.units import format_bytes

# ------------------------------------------------------------------------ scaling.allreduce


def _rows(m: CollectiveMeasurement) -> list[CollectiveRow]:
    rows = [r for r in m.rows if r.busbw_gbps is not None and not r.in_place]
    rows = rows or [r for r in m.rows if r.busbw_gbps is not None]
    return sorted(rows, key=lambda r: r.size_bytes)


def find_cliff(rows: list[CollectiveRow]) -> tuple[CollectiveRow, float, bool] | None:
    """First size where busbw drops below ``BUSBW_CLIFF_FRACTION`` of the best smaller size.

    Returns ``(row, best_before_gbps, persistent)``; persistent when no larger size recovers.
    Sizes below 1 MiB are ignored (latency-bound, noisy).
    """
    best = 0.0
    for pos, row in enumerate(rows):
        bw = row.busbw_gbps or 0.0
        if row.size_bytes >= 1024**2 and best >= 1.0 and bw < config.BUSBW_CLIFF_FRACTION * best:
            later = [r.busbw_gbps or 0.0 for r in rows[pos:]]
            persistent = max(later) < config.BUSBW_CLIFF_FRACTION * best
            return row, best, persistent
        if row.size_bytes >= 1024**2:
            best = max(best, bw)
    return None


def _gpus_used(ctx: Context, m: CollectiveMeasurement) -> tuple[list[int], Confidence]:
    if m.gpus:
        return sorted(m.gpus), "high"
    ranks = m.ranks or 0
    if ranks and ranks == len(ctx.gpus):
        return [g.index for g in ctx.gpus], "medium"
    return [], "low"


def _multi_node(ctx: Context, m: CollectiveMeasurement) -> bool:
    if m.nodes is not None:
        return m.nodes > 1
    return bool(m.ranks and ctx.gpus and m.ranks > len(ctx.gpus))


@check("scaling.allreduce")
def scaling_allreduce(ctx: Context) -> Finding | list[Finding]:
    """All-reduce busbw at large sizes vs NCCL's model of the GPUs' links; cliffs and errors."""
    runs = [
        m
        for m in ctx.measurements.collectives
        if m.op.replace("_", "").lower() in ("allreduce", "all-reduce") and m.rows
    ]
    runs += [run for m in ctx.measurements.scaling if (run := _ladder_allreduce(m)) is not None]
    # Wrong results of any other collective are judged here too: one rule for #wrong.
    findings: list[Finding] = [
        wrong
        for m in ctx.measurements.collectives
        if m not in runs and (wrong := _wrong_results(m)) is not None
    ]
    if not runs:
        return findings or ctx.unmeasured("allreduce", "no all-reduce was measured")
    for m in runs:
        findings.extend(_judge_run(ctx, m))
    return findings


def _ladder_allreduce(m: ScalingMeasurement) -> CollectiveMeasurement | None:
    """The gradient-size all-reduce a scaling ladder timed on its largest rank count, as a
    one-row collective, so its busbw is judged against the link model like any other."""
    if not m.points or not m.gradient_bytes or (m.backend or "").lower() == "gloo":
        return None
    top = max(m.points, key=lambda p: p.ranks)
    busbw = top.allreduce_busbw_gbps if top.allreduce_busbw_gbps is not None else None
    busbw = busbw if busbw is not None else m.allreduce_busbw_gbps
    if busbw is None or top.ranks < 2:
        return None
    return CollectiveMeasurement(
        op="all_reduce",
        backend=m.backend,
        ranks=top.ranks,
        nodes=1,
        gpus=list(top.gpus),
        rows=[CollectiveRow(size_bytes=m.gradient_bytes, busbw_gbps=busbw)],
        tool="pcidoc scaling ladder (all-reduce at the gradient size)",
        source=m.source,
    )


def _wrong_results(m: CollectiveMeasurement) -> Finding | None:
    """A failure when the collective (any nccl-tests collective, not only all-reduce) returned
    wrong results: nccl-tests' ``#wrong`` column or its ``Out of bounds values`` line."""
    wrong = [r for r in m.rows if r.wrong]
    if wrong or m.correct is False:
        count = sum(r.wrong or 0 for r in wrong)
        name = m.op.replace("_", "-")
        head = f"{count} wrong results" if count else "wrong results"
        return Finding(
            "fail",
            f"{head} in the {name} ({len(wrong)} size(s)): data corruption in the collective; "
            "check P2P/IOMMU",
            evidence=[
                _ev("#wrong", r.wrong, subject=format_bytes(r.size_bytes)) for r in wrong[:6]
            ],
            remediation=[
                "Wrong results mean data is corrupted in flight, most often on the peer path: "
                "check p2p.fallback (byte verification), p2p.acs-iommu (an IOMMU translating "
                "peer traffic; try `iommu=pt` or the IOMMU off) and nvlink.errors; rerun with "
                "`NCCL_P2P_DISABLE=1` to see whether the peer path is the culprit.",
            ],
        )
    return None


def _one_rank(m: CollectiveMeasurement, rows: list[CollectiveRow]) -> Finding | None:
    """busbw 0 at every size while data moved (algbw > 0): the job had one rank."""
    if m.op.replace("_", "") in ("broadcast", "reduce"):
        return None
    sized = [r for r in rows if r.size_bytes > 0]
    if not sized or any(r.busbw_gbps for r in sized) or not any(r.algbw_gbps for r in sized):
        return None
    return Finding(
        "info",
        "busbw 0 at every size with algbw above 0: each process ran as a 1-rank job, so "
        "nothing between GPUs was measured (see nccl.tests-launch)",
        evidence=[_ev("sizes", len({r.size_bytes for r in sized}))],
        confidence="medium",
    )


def _cliff_finding(rows: list[CollectiveRow]) -> Finding | None:
    """A busbw cliff at large sizes (see :func:`find_cliff`) as a finding."""
    cliff = find_cliff(rows)
    if cliff:
        row, before, persistent = cliff
        dip = _dip(rows, row, before)
        if dip is not None:
            return dip
        return Finding(
            "fail" if persistent else "warn",
            f"busbw collapses from {_gbps(before)} to {_gbps(row.busbw_gbps or 0)} GB/s at "
            f"{format_bytes(row.size_bytes)}"
            + (" and stays there" if persistent else "")
            + ": a large-message path problem (protocol switch, NIC/GDR selection or network)",
            evidence=[
                _ev("busbw", r.busbw_gbps, "GB/s", subject=format_bytes(r.size_bytes))
                for r in rows
                if r.size_bytes >= row.size_bytes // 4
            ][:6],
            remediation=[
                "Rerun with `NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH` and compare the "
                "transport and protocol chosen below and above the cliff; A/B with "
                "`NCCL_PROTO=Simple`, `NCCL_NET_GDR_LEVEL=0` and `NCCL_ALGO=Ring`.",
                "For multi-node runs check the NICs NCCL picked (numa.nic-affinity) and the "
                "switch/network counters for congestion or PFC pauses.",
            ],
            confidence="medium",
        )
    return None


def _dip(rows: list[CollectiveRow], row: CollectiveRow, before: float) -> Finding | None:
    """A drop at one size only inside a flat curve, every larger size back on it: NCCL
    switched algorithm or protocol (or channel count) there. Info, not a path problem."""
    earlier = [r.busbw_gbps or 0.0 for r in rows if r.size_bytes < row.size_bytes]
    later = [r for r in rows if r.size_bytes > row.size_bytes]
    if not earlier or not later:
        return None
    if any((r.busbw_gbps or 0.0) < config.BUSBW_CLIFF_FRACTION * before for r in later):
        return None
    # Flat around the dip: the sizes either side of it within BUSBW_FLAT_FRACTION of each
    # other and of the best busbw (a curve still climbing that drops is a warning).
    peak = max(r.busbw_gbps or 0.0 for r in rows)
    sides = (earlier[-1], later[0].busbw_gbps or 0.0)
    if min(sides) < config.BUSBW_FLAT_FRACTION * max(*sides, peak):
        return None
    return Finding(
        "info",
        f"busbw dips from {_gbps(before)} to {_gbps(row.busbw_gbps or 0)} GB/s at "
        f"{format_bytes(row.size_bytes)} only and recovers at "
        f"{format_bytes(later[0].size_bytes)}: NCCL switching algorithm or protocol at that "
        "size, not a fault",
        evidence=[
            _ev("busbw", r.busbw_gbps, "GB/s", subject=format_bytes(r.size_bytes))
            for r in rows
            if row.size_bytes // 4 <= r.size_bytes <= later[0].size_bytes
        ][:6],
        remediation=[
            "Nothing to fix; to confirm, rerun that size with `NCCL_DEBUG=INFO "
            "NCCL_DEBUG_SUBSYS=TUNING` or pin `NCCL_ALGO`/`NCCL_PROTO` and compare.",
        ],
        confidence="medium",
    )


def _not_judged(
    ctx: Context,
    m: CollectiveMeasurement,
    bw: float,
    top: CollectiveRow,
    ranks: int,
    large: bool,
    evidence: list[Evidence],
) -> Finding | None:
    """Runs reported without a verdict: gloo, multi-node, or sizes too small to reach peak."""
    alone = _one_rank(m, _rows(m))
    if alone is not None:
        return alone
    if (m.backend or "").lower() == "gloo":
        return Finding(
            "info",
            f"gloo all-reduce {_gbps(bw)} GB/s busbw on {ranks} rank(s): CPU path, "
            "functional check only",
            evidence=evidence,
            confidence="high",
        )
    if _multi_node(ctx, m):
        nodes = m.nodes or "several"
        return Finding(
            "info",
            f"{ranks}-rank all-reduce over {nodes} nodes: {_gbps(bw)} GB/s busbw at "
            f"{format_bytes(top.size_bytes)}, bounded by the NICs and the network (no network "
            "model to judge it against)",
            evidence=evidence,
            remediation=[
                "Compare with the NICs' line rate (busbw ≈ per-GPU NIC bandwidth on a "
                "rail-optimised fabric) and with a single-node run of the same GPUs."
            ],
            confidence="low",
        )
    if not large:
        return Finding(
            "info",
            f"largest all-reduce was {format_bytes(top.size_bytes)} (< "
            f"{format_bytes(config.BUSBW_MIN_SIZE_BYTES)}): too small to reach peak, busbw "
            f"{_gbps(bw)} GB/s not judged",
            evidence=evidence,
            remediation=["Sweep to large sizes: `all_reduce_perf -b 8 -e 8G -f 2 -g <n>`."],
            confidence="low",
        )
    return None


def _judge_run(ctx: Context, m: CollectiveMeasurement) -> list[Finding]:
    findings: list[Finding] = []
    rows = _rows(m)
    ranks = m.ranks or len(m.gpus) or 0
    wrong = _wrong_results(m)
    if wrong is not None:
        findings.append(wrong)
    if not rows:
        findings.append(
            Finding(
                "info",
                f"all-reduce on {counted(ranks, 'rank')}: no bus bandwidth was reported (busbw "
                "N/A at every size), so it was not judged",
                evidence=[_ev("sizes", len(m.rows))],
                confidence="low",
            )
        )
        return findings
    cliff = _cliff_finding(rows)
    if cliff is not None:
        findings.append(cliff)
    large = [r for r in rows if r.size_bytes >= config.BUSBW_MIN_SIZE_BYTES]
    top = large[-1] if large else rows[-1]
    bw = top.busbw_gbps or 0.0
    peak = max(rows, key=lambda r: r.busbw_gbps or 0.0)
    evidence = [
        _ev("busbw at the largest size", bw, "GB/s", subject=format_bytes(top.size_bytes)),
        _ev("peak busbw", peak.busbw_gbps, "GB/s", subject=format_bytes(peak.size_bytes)),
        _ev("ranks", ranks or None),
    ]
    if m.avg_busbw_gbps is not None:
        evidence.append(_ev("nccl-tests average busbw (all sizes)", m.avg_busbw_gbps, "GB/s"))
    if m.nccl_env:  # settings that change bus bandwidth: the number holds under them only
        settings = " ".join(f"{k}={v}" for k, v in sorted(m.nccl_env.items()))
        evidence.append(_ev("measured with NCCL settings", settings))
    unjudged = _not_judged(ctx, m, bw, top, ranks, bool(large), evidence)
    if unjudged is not None:
        findings.append(unjudged)
        return findings
    indices, gpus_confidence = _gpus_used(ctx, m)
    model = (
        allreduce_model(ctx, indices)
        if indices
        else LinkModel(None, "unknown", "which GPUs ran is not known", "low")
    )
    findings.append(_judge_busbw(ctx, m, bw, top, indices, model, gpus_confidence, evidence))
    return _with_peak(findings, peak, top)


def _with_peak(findings: list[Finding], peak: CollectiveRow, top: CollectiveRow) -> list[Finding]:
    """Quote the peak busbw and its size, as nccl-tests users do, when it is not the largest
    size's (issue 8: the peak can sit below the largest size, e.g. before a cliff)."""
    if peak is top or (peak.busbw_gbps or 0) <= (top.busbw_gbps or 0):
        return findings
    text = f" (peak {_gbps(peak.busbw_gbps or 0)} GB/s at {format_bytes(peak.size_bytes)})"
    for finding in findings:
        if "busbw at" in finding.summary and "peak" not in finding.summary:
            finding.summary = finding.summary.replace(
                f"busbw at {format_bytes(top.size_bytes)}",
                f"busbw at {format_bytes(top.size_bytes)}{text}",
                1,
            )
    return findings


def _shortfall(ctx: Context, model: LinkModel, head: str) -> tuple[str, list[str]]:
    """What a busbw short of the link model adds to the summary, and the remedies."""
    remediation: list[str] = []
    if model.no_p2p:
        codes = sorted(
            {c for p in model.no_p2p if (c := ctx.p2p_code(*_pair(p))) and c not in ("OK", "U")}
        )
        head += (
            f"; P2P is unavailable on {', '.join(model.no_p2p[:3])}"
            + (f" ({'/'.join(codes)})" if codes else "")
            + ", so NCCL stages through shared memory: this is the cost of no P2P"
        )
        remediation.append(
            "See p2p.capability: without P2P the shared-memory path is the "
            "ceiling; only GPUs with peer access (or NVLink) lift it."
        )
    else:
        remediation += [
            "Check what the GPUs should get: P2P and ACS (p2p.capability, p2p.acs-iommu, "
            "p2p.fallback), NVLink state (nvlink.state), link speed (pcie.link-speed) and "
            "NCCL variables that defeat the topology (env.nccl, e.g. `NCCL_P2P_LEVEL=LOC`).",
            "Measure at large sizes (≥ 1 GiB; `all_reduce_perf -b 1G -e 8G -f 2`) with the "
            "GPUs otherwise idle.",
        ]
    if model.slowest_edge == "SYS":
        remediation.append(
            "The ring goes through the CPU interconnect (SYS): keep the job on GPUs of one "
            "socket or NUMA node (see numa.cross-socket)."
        )
    return head, remediation


def _judge_busbw(
    ctx: Context,
    m: CollectiveMeasurement,
    bw: float,
    top: CollectiveRow,
    indices: list[int],
    model: LinkModel,
    gpus_confidence: Confidence,
    evidence: list[Evidence],
) -> Finding:
    used = gpu_set(indices) if indices else counted(m.ranks, "rank")
    evidence = [*evidence, _ev("link model", model.gbps, "GB/s", subject=model.basis)]
    floor = config.BUSBW_WARN_FRACTION * config.BUSBW_FLOOR_MODEL_GBPS
    if model.gbps is None and (m.ranks or len(indices)) >= 2 and bw < floor:
        return _below_floor(ctx, bw, top, indices, used, evidence)
    if model.gbps is None:
        return Finding(
            "info",
            f"all-reduce on {used}: {_gbps(bw)} GB/s busbw at {format_bytes(top.size_bytes)}; "
            f"no link model to judge it against ({model.basis})",
            evidence=evidence,
            needs="the topology and link facts of the machine (`pcidoc capture`)",
            confidence="low",
        )
    ratio = bw / model.gbps
    evidence.append(_ev("busbw / link model", f"{ratio:.0%}"))
    confidence: Confidence = min(
        (model.confidence, gpus_confidence), key=["low", "medium", "high"].index
    )
    head = (
        f"all-reduce on {used}: {_gbps(bw)} GB/s busbw at {format_bytes(top.size_bytes)} = "
        f"{ratio:.0%} of the {_KIND_NAME.get(model.kind, model.kind)} model "
        f"({_gbps(model.gbps)} GB/s)"
    )
    if model.kind == "nvlink" and ratio > 1.0:
        evidence.append(
            _ev(
                "note",
                "busbw above NCCL's NVLink model: NVLink SHARP (NVLS) "
                "all-reduce; busbw is not wire bandwidth",
            )
        )
    if ratio >= config.BUSBW_WARN_FRACTION:
        return Finding("pass", head, evidence=evidence, confidence=confidence)
    severity: Severity = "fail" if ratio < config.BUSBW_FAIL_FRACTION else "warn"
    if model.no_p2p:
        severity = "warn"
    head, remediation = _shortfall(ctx, model, head)
    return Finding(
        severity,
        head,
        evidence=evidence,
        remediation=remediation,
        subjects=[f"GPU{i}" for i in indices],
        confidence=confidence,
    )


def _below_floor(
    ctx: Context,
    bw: float,
    top: CollectiveRow,
    indices: list[int],
    used: str,
    evidence: list[Evidence],
) -> Finding:
    """busbw below even the slowest hop NCCL models, while the real links are unknown."""
    floor = config.BUSBW_FLOOR_MODEL_GBPS
    evidence = [
        *evidence,
        _ev(
            "slowest link NCCL models",
            floor,
            "GB/s",
            subject="PCIe Gen3 x8 or a QPI-class socket link",
        ),
    ]
    pairs = [(a, b) for pos, a in enumerate(indices) for b in indices[pos + 1 :]]
    refused = [f"GPU{a}-GPU{b}" for a, b in pairs if ctx.p2p_available(a, b) is False]
    consumer = [f"GPU{i}" for i in indices if ctx.is_geforce(ctx.gpu_by_index.get(i))]
    head = (
        f"all-reduce on {used}: {_gbps(bw)} GB/s busbw at {format_bytes(top.size_bytes)}, "
        f"below {config.BUSBW_WARN_FRACTION:.0%} of even the slowest link NCCL models "
        f"({floor:g} GB/s); the real links are not in the capture"
    )
    if refused:
        head += (
            f"; P2P is unavailable on {', '.join(refused[:3])}, so NCCL stages through shared "
            "memory"
        )
        evidence.append(_ev("pairs without P2P", ", ".join(refused)))
    elif consumer:
        head += (
            "; these are consumer GPUs, whose stock driver refuses P2P, so NCCL most likely "
            "stages through shared memory"
        )
        evidence.append(_ev("consumer GPUs", ", ".join(consumer)))
    else:
        head += (
            "; likely causes: no P2P (NCCL then stages through shared memory), a narrow or "
            "downtrained link, or other traffic on the GPUs"
        )
    return Finding(
        "warn",
        head,
        subjects=[f"GPU{i}" for i in indices],
        evidence=evidence,
        remediation=[
            "Find out why: `nvidia-smi topo -m` and `nvidia-smi topo -p2p r` show the path and "
            "whether P2P is granted (p2p.capability), `nvidia-smi -q -d PCIE` the link of each "
            "GPU (pcie.link-speed); `pcidoc check` on the machine reads all of them.",
            "Without P2P the shared-memory path is the ceiling: only GPUs with peer access (or "
            "NVLink) lift it.",
        ],
        confidence="low",
    )


def _pair(label: str) -> tuple[int, int]:
    a, b = label.replace("GPU", "").split("-")
    return int(a), int(b)

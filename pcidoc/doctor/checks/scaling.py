"""Scaling checks: all-reduce bus bandwidth against the link model of the GPUs used
(``scaling.allreduce``) and data-parallel scaling efficiency with an α–β explanation of where
the time goes (``scaling.efficiency``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pcidoc.doctor import alpha_beta, config
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.checks.numa._shared import gpu_set, locality_groups, pcie_model_of
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import gbps as _gbps
from pcidoc.model import linkmodel
from pcidoc.model.links import is_nvlink, nvlink_count, rank
from pcidoc.model.measurements import (
    CollectiveMeasurement,
    CollectiveRow,
    ScalingMeasurement,
    WorkloadEvidence,
)
from pcidoc.model.report import Confidence, Evidence, Severity
from pcidoc.model.units import format_bytes

_RANK_CLASS = {2: "PIX", 3: "PXB", 4: "PHB", 5: "NODE", 6: "SYS"}
_KIND_NAME = {"nvlink": "NVLink", "pcie": "PCIe", "sys": "cross-socket"}


# --------------------------------------------------------------------------- link model


@dataclass
class LinkModel:
    """What the GPUs used can deliver to an all-reduce, in NCCL's model."""

    gbps: float | None
    kind: str
    """``nvlink``, ``pcie``, ``sys`` or ``unknown``."""
    basis: str
    confidence: Confidence = "high"
    slowest_edge: str | None = None
    no_p2p: list[str] = field(default_factory=list)
    """Pairs on the bottleneck whose peer access is refused (NCCL uses shared memory)."""


def nvlink_links_per_gpu(ctx: Context, indices: list[int]) -> int | None:
    """NVLinks each GPU of the set can use in a ring over the set (the minimum over GPUs).

    From the GPUs' own link lists when known (links to an NVSwitch count fully, links to a GPU
    only when that GPU is in the set); otherwise from the topology: when NV# per pair times the
    peers exceeds the most links a GPU can have, NV# is the GPU's links to an NVSwitch.
    """
    by_bus = {g.bus_id: g.index for g in ctx.gpus if g.bus_id}
    counts: list[int] = []
    for i in indices:
        gpu = ctx.gpu_by_index.get(i)
        ups = [link for link in (gpu.nvlinks if gpu else []) if link.state == "up"]
        if ups and all(link.remote_type for link in ups):
            usable = sum(
                1
                for link in ups
                if link.remote_type == "switch"
                or (link.remote_type == "gpu" and by_bus.get(link.remote_bus_id or "") in indices)
            )
            counts.append(usable)
            continue
        peers = [nvlink_count(ctx.gpu_link(i, j)) for j in ctx.gpu_by_index if j != i]
        if sum(peers) > config.NVLINK_MAX_LINKS_PER_GPU:
            counts.append(max(peers))
        else:
            counts.append(sum(nvlink_count(ctx.gpu_link(i, j)) for j in indices if j != i))
    known = [c for c in counts if c]
    return min(known) if known and len(known) == len(counts) else None


def _bottleneck_rank(ctx: Context, indices: list[int]) -> int | None:
    """Smallest link rank that connects all GPUs of the set (a ring needs at least that)."""
    edges = []
    for pos, a in enumerate(indices):
        for b in indices[pos + 1 :]:
            r = rank(ctx.gpu_link(a, b))
            if r is None:
                return None
            edges.append((r, a, b))
    parent = {i: i for i in indices}

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    joined, worst = 1, 0
    for r, a, b in sorted(edges):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra
            joined += 1
            worst = r
            if joined == len(indices):
                break
    return worst


def _model_from_gpu_names(ctx: Context, indices: list[int]) -> LinkModel:
    """No topology: the link model (issue 8) may still know the links from the GPU model."""
    gpus = [ctx.gpu_by_index[i] for i in indices if i in ctx.gpu_by_index]
    inferred = linkmodel.inferred_switch_links(gpus) if len(gpus) == len(indices) else None
    if inferred is None:
        return LinkModel(None, "unknown", "the topology between these GPUs is not known", "low")
    model, links = inferred
    cc = model.compute_capability
    gbps = config.nccl_nvlink_model_gbps(model.nvlink_version, links, None, cc)
    basis = (
        f"{links} NVLinks × {(gbps or 0) / links:.1f} GB/s (NCCL's effective rate) inferred from "
        f"the GPU model ({model.key} on NVSwitches; no topology in the capture)"
    )
    return LinkModel(gbps, "nvlink", basis, "medium", "NV")


def _measured_pcie(ctx: Context, indices: list[int]) -> float | None:
    values = [
        t.bandwidth_gbps
        for t in ctx.transfers(direction="h2d", memory="pinned")
        if t.gpu in indices and t.placement != "remote" and t.bandwidth_gbps > 0
    ]
    return min(values) if values else None


def _pcie_model(ctx: Context, index: int) -> tuple[float | None, bool]:
    """NCCL's PCIe model of one GPU: from its link facts, else from its GPU model in the link
    model (``inferred`` = True), else ``None``."""
    gpu = ctx.gpu_by_index.get(index)
    if gpu is None:
        return None, False
    value = pcie_model_of(gpu)
    if value:
        return value, False
    model = linkmodel.gpu_model_of(gpu)
    if model is None or not model.pcie_gen or not model.pcie_width:
        return None, False
    return linkmodel.pcie_nccl_model_gbps(model.pcie_gen, model.pcie_width), True


def _pcie_part(ctx: Context, indices: list[int]) -> tuple[float | None, str, Confidence]:
    """The PCIe term of the bottleneck: ``(GB/s or None, basis, confidence)``."""
    known = [_pcie_model(ctx, i) for i in indices]
    models = [(value, inferred) for value, inferred in known if value]
    complete = len(models) == len(indices)
    if complete and not any(inferred for _, inferred in models):
        pcie = min(value for value, _ in models)
        return pcie, f"NCCL's PCIe model {pcie:.0f} GB/s (slowest GPU link)", "high"
    # The slot may hold the card below its own generation: a measurement of this machine
    # beats what the GPU model could do.
    measured = _measured_pcie(ctx, indices)
    if measured is not None:
        basis = f"measured pinned H2D {measured:.1f} GB/s (link generation unknown)"
        return measured, basis, "medium"
    if complete:
        pcie = min(value for value, _ in models)
        basis = (
            f"NCCL's PCIe model {pcie:.0f} GB/s (inferred from the GPU model; the slot may be "
            "slower)"
        )
        return pcie, basis, "medium"
    return None, "PCIe link of the GPUs unknown", "low"


def _nvlink_part(ctx: Context, indices: list[int]) -> LinkModel:
    links = nvlink_links_per_gpu(ctx, indices)
    version, speed = None, None
    for i in indices:
        version, speed = ctx.nvlink_rate(i)
        if version or speed:
            break
    model = config.nccl_nvlink_model_gbps(version, links, speed)
    if model is None:
        return LinkModel(
            None,
            "nvlink",
            f"{links or '?'} NVLinks per GPU at an unknown "
            "per-link rate (no NVLink version or speed in the capture)",
            "low",
            "NV",
        )
    per_link = model / links if links else 0
    basis = f"{links} NVLinks × {per_link:.1f} GB/s (NCCL's effective rate" + (
        f", NVLink {version})" if version else ")"
    )
    return LinkModel(model, "nvlink", basis, "high", "NV")


def allreduce_model(ctx: Context, indices: list[int]) -> LinkModel:
    """NCCL's model of the all-reduce bottleneck for a set of GPUs on one node (facts of the
    capture first; what the GPU model implies where the capture lacks them)."""
    if len(indices) < 2:
        return LinkModel(None, "unknown", "fewer than two GPUs", "low")
    worst = _bottleneck_rank(ctx, indices)
    if worst is None:
        return _model_from_gpu_names(ctx, indices)
    if worst == 1:
        return _nvlink_part(ctx, indices)
    edge = _RANK_CLASS.get(worst, "SYS")
    no_p2p = [
        f"GPU{a}-GPU{b}"
        for pos, a in enumerate(indices)
        for b in indices[pos + 1 :]
        if not is_nvlink(ctx.gpu_link(a, b)) and ctx.p2p_available(a, b) is False
    ]
    pcie, basis, confidence = _pcie_part(ctx, indices)
    if edge != "SYS":
        return LinkModel(pcie, "pcie", basis + f"; slowest hop {edge}", confidence, edge, no_p2p)
    socket = config.socket_interconnect_gbps(ctx.host.cpu_vendor, ctx.host.cpu_model)
    if socket is not None and (pcie is None or socket < pcie):
        return LinkModel(
            socket,
            "sys",
            f"socket interconnect {socket:.0f} GB/s (NCCL "
            f"model of {ctx.host.cpu_model or ctx.host.cpu_vendor}) on the SYS "
            "hop",
            "medium" if pcie is None else confidence,
            edge,
            no_p2p,
        )
    return LinkModel(
        pcie,
        "sys",
        basis + "; SYS hop, CPU model unknown",
        "low" if pcie is None else "medium",
        edge,
        no_p2p,
    )


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


@check("scaling.allreduce", "All-reduce bus bandwidth vs the link model", needs="probe")
def scaling_allreduce(ctx: Context) -> Finding | list[Finding]:
    """All-reduce busbw at large sizes vs NCCL's model of the GPUs' links; cliffs and errors."""
    runs = [
        m
        for m in ctx.measurements.collectives
        if m.op.replace("_", "").lower() in ("allreduce", "all-reduce") and m.rows
    ]
    runs += [run for m in ctx.measurements.scaling if (run := _ladder_allreduce(m)) is not None]
    if not runs:
        return ctx.unmeasured("allreduce", "no all-reduce was measured")
    findings: list[Finding] = []
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
    """A failure when the all-reduce returned wrong sums."""
    wrong = [r for r in m.rows if r.wrong]
    if wrong or m.correct is False:
        return Finding(
            "fail",
            f"all-reduce returned wrong results ({sum(r.wrong or 0 for r in wrong)} wrong "
            f"elements at {len(wrong)} size(s))",
            evidence=[
                _ev("#wrong", r.wrong, subject=format_bytes(r.size_bytes)) for r in wrong[:6]
            ],
            remediation=[
                "Wrong sums mean data is corrupted in flight: check p2p.fallback (byte "
                "verification), p2p.acs-iommu and nvlink.errors; run with `NCCL_P2P_DISABLE=1` "
                "to see whether the peer path is the culprit.",
            ],
        )
    return None


def _cliff_finding(rows: list[CollectiveRow]) -> Finding | None:
    """A busbw cliff at large sizes (see :func:`find_cliff`) as a finding."""
    cliff = find_cliff(rows)
    if cliff:
        row, before, persistent = cliff
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
                f"all-reduce on {ranks or '?'} rank(s): no bus bandwidth was reported (busbw "
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
            "The ring crosses sockets: keep the job on one socket's GPUs (see numa.cross-socket)."
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
    used = gpu_set(indices) if indices else f"{m.ranks or '?'} ranks"
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


@check("scaling.efficiency", "Data-parallel scaling efficiency", needs="probe")
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


@dataclass
class _Rung:
    """One rank count of a ladder with what the α–β model predicts for it."""

    ranks: int
    eff: float
    gpus: list[int]
    busbw: float | None
    """All-reduce busbw measured at the gradient size on these ranks."""
    link: LinkModel
    predicted_links: float | None
    """E(N) the α–β model predicts with the links' busbw (the link model)."""
    predicted_measured: float | None
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

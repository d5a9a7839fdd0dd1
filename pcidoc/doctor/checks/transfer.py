"""Host↔device transfer checks: pinned bandwidth against the negotiated link
(``transfer.pinned``), the cost of pageable memory (``transfer.pageable``) and the penalty of
remote-socket host memory (``transfer.remote-numa``)."""

from __future__ import annotations

from dataclasses import dataclass

from pcidoc.doctor import config
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import gbps as _gbps
from pcidoc.model import linkmodel
from pcidoc.model.facts import Gpu
from pcidoc.model.measurements import TransferMeasurement, WorkloadEvidence
from pcidoc.model.report import Confidence, Evidence, Severity
from pcidoc.model.units import format_bytes, link_label

_DIRECTION = {"h2d": "H2D", "d2h": "D2H"}


def _is_sm_copy(t: TransferMeasurement) -> bool:
    """SM (kernel) copies are asymmetric by nature (nvbandwidth-sm: 35 vs 53 GB/s on H100)."""
    method = (t.method or "").lower()
    return method.endswith(("-sm", "_sm")) or method == "sm"


def _best(transfers: list[TransferMeasurement]) -> TransferMeasurement:
    return max(transfers, key=lambda t: t.bandwidth_gbps)


def _group(
    transfers: list[TransferMeasurement],
) -> dict[tuple[int, str], list[TransferMeasurement]]:
    groups: dict[tuple[int, str], list[TransferMeasurement]] = {}
    for t in transfers:
        if t.direction in _DIRECTION:
            groups.setdefault((t.gpu, t.direction), []).append(t)
    return groups


@dataclass
class LinkBasis:
    """The PCIe link a transfer is judged against, and how it was learned."""

    gen: int
    width: int
    basis: str
    confidence: Confidence


def negotiated_link(gpu: Gpu | None, t: TransferMeasurement) -> LinkBasis | None:
    """The link to judge ``t`` against: measured under load, else current at P0, else max."""
    pcie = gpu.pcie if gpu else None
    if t.link_gen_under_load and (t.link_width_under_load or (pcie and pcie.current_width)):
        width = t.link_width_under_load or (pcie.current_width if pcie else None)
        if width:
            return LinkBasis(t.link_gen_under_load, width, "negotiated under load", "high")
    if pcie is None:
        return None
    if pcie.current_gen and pcie.current_width and gpu is not None and gpu.pstate == 0:
        return LinkBasis(
            pcie.current_gen,
            pcie.current_width,
            "current at capture, GPU in P0",
            "high",
        )
    if pcie.max_gen and pcie.max_width:
        return LinkBasis(
            pcie.max_gen,
            pcie.max_width,
            "maximum of GPU and slot, not read under load",
            "medium",
        )
    return None


def link_class(bandwidth_gbps: float) -> int | None:
    """Highest PCIe gen whose x16 NCCL model the number reaches at the warn fraction."""
    for gen in (6, 5, 4, 3):
        model = config.pcie_nccl_model_gbps(gen, 16)
        if model and bandwidth_gbps >= config.PINNED_WARN_FRACTION * model:
            return gen
    return None


def _environment_caveat(ctx: Context) -> tuple[str, bool]:
    virt = ctx.host.virtualization
    if virt.confidential_compute:
        return "confidential computing bounces copies through encrypted buffers", True
    if ctx.is_vm:
        return "measured inside a VM (virtual root ports, IOMMU translation)", True
    return "", False


# ------------------------------------------------------------------------ transfer.pinned


@check("transfer.pinned", "Pinned host↔device bandwidth vs the link", needs="probe")
def transfer_pinned(ctx: Context) -> Finding | list[Finding]:
    """Pinned H2D/D2H per GPU as a share of NCCL's model of the negotiated PCIe link."""
    pinned = [
        t
        for t in ctx.transfers(memory="pinned", bidirectional=False)
        if t.direction in _DIRECTION and t.placement != "remote"
    ]
    if not pinned:
        return ctx.unmeasured("transfer", "no pinned host↔device transfer was measured")
    caveat, lowered = _environment_caveat(ctx)
    findings: list[Finding] = []
    passes: list[tuple[Finding, str, float]] = []
    groups = _group(pinned)
    unknown: dict[int, list[TransferMeasurement]] = {}
    for (index, _), items in sorted(groups.items()):
        best = _best(items)
        if negotiated_link(ctx.gpu_by_index.get(index), best) is None:
            unknown.setdefault(index, []).append(best)
    for index, transfers in sorted(unknown.items()):
        findings.append(_unknown_link(ctx.gpu_by_index.get(index), transfers))
    judged = {
        key: _judge_pinned(ctx, ctx.gpu_by_index.get(key[0]), _best(items), caveat, lowered)
        for key, items in groups.items()
        if key[0] not in unknown
    }
    for (index, direction), (finding, share) in sorted(judged.items()):
        finding = _sm_leniency(groups, judged, index, direction, finding)
        if finding.severity == "pass" and share is not None:
            passes.append((finding, f"GPU{index} {_DIRECTION[direction]}", share))
        else:
            findings.append(finding)
    findings.extend(_asymmetry(ctx, groups))
    if passes:
        if any(f.severity in ("warn", "fail") for f in findings):
            findings.extend(f for f, _, _ in passes)
        else:
            _, who, share = min(passes, key=lambda p: p[2])
            ranks = ["low", "medium", "high"]
            findings.append(
                Finding(
                    "pass",
                    f"pinned copies reach ≥ {config.PINNED_WARN_FRACTION:.0%} of the link model on "
                    f"{len(passes)} GPU direction(s) (lowest: {who} at {share:.0%})",
                    evidence=[e for f, _, _ in passes for e in f.evidence],
                    confidence=min((f.confidence for f, _, _ in passes), key=ranks.index),
                )
            )
    return findings


def _sm_leniency(
    groups: dict[tuple[int, str], list[TransferMeasurement]],
    judged: dict[tuple[int, str], tuple[Finding, float | None]],
    index: int,
    direction: str,
    finding: Finding,
) -> Finding:
    """SM-copy H2D runs well below SM-copy D2H on healthy hosts (nvbandwidth#24: 35 vs 53 GB/s
    on H100): when the other SM direction of the GPU passes, a low one is reported as info."""
    other = "d2h" if direction == "h2d" else "h2d"
    mine, theirs = groups.get((index, direction)), groups.get((index, other))
    if finding.severity != "warn" or not mine or not theirs:
        return finding
    if not (_is_sm_copy(_best(mine)) and _is_sm_copy(_best(theirs))):
        return finding
    if judged[(index, other)][0].severity != "pass":
        return finding
    return Finding(
        "info",
        finding.summary + f"; SM copies are asymmetric, and {_DIRECTION[other]} on the same GPU "
        "reaches the link, so the link itself is fine",
        subjects=finding.subjects,
        evidence=finding.evidence,
        confidence="medium",
    )


def _judge_pinned(
    ctx: Context, gpu: Gpu | None, t: TransferMeasurement, caveat: str, lowered: bool
) -> tuple[Finding, float | None]:
    label = f"GPU{t.gpu}"
    name = _DIRECTION[t.direction]
    bw = t.bandwidth_gbps
    evidence = [_ev(f"pinned {name}", bw, "GB/s", label)]
    if t.method:
        evidence.append(_ev("method", t.method, subject=label))
    link = negotiated_link(gpu, t)
    model = config.pcie_nccl_model_gbps(link.gen, link.width) if link else None
    if link is None or model is None:
        return _unknown_link(gpu, [t]), None
    raw = config.pcie_ceiling_gbps(link.gen, link.width)
    share = bw / model
    evidence += [
        _ev(f"link ({link.basis})", link_label(link.gen, link.width), subject=label),
        _ev("NCCL model of the link", model, "GB/s", label),
        _ev("share of the NCCL model", f"{share:.0%}", subject=label),
    ]
    if raw:
        evidence.append(
            _ev(
                "share of the raw link ceiling",
                f"{bw / raw:.0%} of {_gbps(raw)} GB/s",
                subject=label,
            )
        )
    confidence: Confidence = link.confidence
    if lowered:
        confidence = "medium" if confidence == "high" else "low"
        evidence.append(_ev("caveat", caveat))
    head = (
        f"{label} pinned {name} {_gbps(bw)} GB/s = {share:.0%} of NCCL's "
        f"{link_label(link.gen, link.width)} model ({_gbps(model)} GB/s, link "
        f"{link.basis})"
    )
    pcie = gpu.pcie if gpu else None
    below_max = bool(
        pcie
        and link.basis.startswith("negotiated")
        and pcie.max_gen
        and pcie.max_width
        and (link.gen < pcie.max_gen or link.width < pcie.max_width)
    )
    severity: Severity = "pass"
    if share < config.PINNED_FAIL_FRACTION:
        severity = "fail"
    elif share < config.PINNED_WARN_FRACTION:
        severity = "warn"
    if severity == "pass" and below_max and pcie:
        return Finding(
            "warn",
            f"{head}, but the link trains at {link_label(link.gen, link.width)} under load while "
            f"it can do {link_label(pcie.max_gen, pcie.max_width)} (see pcie.link-speed)",
            subjects=[label],
            evidence=evidence,
            remediation=[
                f"Fix the link first: reseat the GPU/riser, check the slot's BIOS "
                f"settings, then re-measure (`nvidia-smi -q -d PCIE -i {t.gpu}` under "
                "load)."
            ],
            confidence=confidence,
        ), share
    if severity == "pass":
        return Finding(
            "pass", head, subjects=[label], evidence=evidence, confidence=confidence
        ), share
    causes = _low_causes(ctx, gpu, t)
    evidence += causes
    return Finding(
        severity,
        head + (f"; {caveat}" if caveat else ""),
        subjects=[label],
        evidence=evidence,
        remediation=_pinned_fix(t, gpu),
        confidence=confidence,
    ), share


def _low_causes(ctx: Context, gpu: Gpu | None, t: TransferMeasurement) -> list[Evidence]:
    out = []
    label = f"GPU{t.gpu}"
    if t.placement in (None, "unbound") and len(ctx.host.numa_nodes) > 1:
        out.append(_ev("host memory placement", t.placement or "not controlled", subject=label))
    if gpu is not None:
        if gpu.iommu_group_type and gpu.iommu_group_type.upper().startswith("DMA"):
            out.append(_ev("IOMMU group type", gpu.iommu_group_type, subject=label))
        if t.pstate_under_load not in (None, 0):
            out.append(_ev("P-state during the copy", t.pstate_under_load, subject=label))
    return out


def _pinned_fix(t: TransferMeasurement, gpu: Gpu | None) -> list[str]:
    node = gpu.numa_node if gpu and gpu.numa_node is not None and gpu.numa_node >= 0 else "<n>"
    return [
        f"Read the link while copying: `nvidia-smi -q -d PCIE -i {t.gpu}` (current vs max "
        "generation and width; see pcie.link-speed).",
        f"Measure from the GPU's own NUMA node: `numactl --cpunodebind={node} --membind={node} "
        f"pcidoc probe transfer --gpus {t.gpu}` (see transfer.remote-numa).",
        "Run with the GPU otherwise idle: other GPUs copying behind the same switch share its "
        "uplink (see pcie.shared-uplink); an IOMMU in translating mode also costs bandwidth.",
    ]


def _unknown_link(gpu: Gpu | None, transfers: list[TransferMeasurement]) -> Finding:
    """Pinned copies of one GPU whose link is not in the capture: the PCIe class of the number.

    The link is the same in both directions, so the faster direction names its class; a GPU
    known to support a newer generation, or a number below even the Gen3 x16 class, warns.
    """
    ordered = sorted(transfers, key=lambda t: t.direction != "h2d")
    index = ordered[0].gpu
    label = f"GPU{index}"
    numbers = " / ".join(f"{_DIRECTION[t.direction]} {_gbps(t.bandwidth_gbps)}" for t in ordered)
    head = f"{label} pinned {numbers} GB/s"
    evidence = []
    for t in ordered:
        evidence.append(_ev(f"pinned {_DIRECTION[t.direction]}", t.bandwidth_gbps, "GB/s", label))
        if t.method:
            evidence.append(_ev("method", t.method, subject=label))
    best = _best(ordered)
    gen = link_class(best.bandwidth_gbps)
    device_gen = (gpu.pcie.device_max_gen or gpu.pcie.max_gen) if gpu else None
    model = linkmodel.gpu_model_of(gpu)
    if device_gen is None and model is not None and model.pcie_gen:
        # The card's own generation from the link model (its datasheet), when the paste has
        # no link facts: a Gen4-class number on a Gen5 card is still worth a look.
        device_gen = model.pcie_gen
        evidence.append(
            _ev("PCIe generation of the card", f"Gen{device_gen}", subject=model.source)
        )
    check_cmd = f"`nvidia-smi -q -d PCIE -i {index}`"
    if gen is None:
        g3 = config.pcie_nccl_model_gbps(3, 16) or 0
        return Finding(
            "warn",
            f"{head} is below even the Gen3-x16 class "
            f"(≥ {_gbps(config.PINNED_WARN_FRACTION * g3)} GB/s); the link is not in the "
            f"capture: check {check_cmd}",
            subjects=[label],
            evidence=evidence,
            remediation=[
                f"Read the link under load with {check_cmd}; a Gen3 x8 or Gen2 link, "
                "a remote NUMA node or a VM can each explain this."
            ],
            confidence="low",
        )
    evidence.append(_ev("link class of the number", f"Gen{gen} x16", subject=label))
    if device_gen and device_gen > gen:
        from_model = not ((gpu.pcie.device_max_gen or gpu.pcie.max_gen) if gpu else None)
        return Finding(
            "warn",
            f"{head} is Gen{gen}-x16-class although the GPU supports Gen{device_gen}"
            + (" (its model's datasheet)" if from_model else "")
            + ": the link may be downtrained or slot-limited",
            subjects=[label],
            evidence=evidence,
            remediation=[f"Check the negotiated link under load with {check_cmd}."],
            confidence="low" if from_model else "medium",
        )
    return Finding(
        "info",
        f"{head} is Gen{gen}-x16-class; the link is not in the capture: if the GPU supports "
        f"a newer generation, check {check_cmd}",
        subjects=[label],
        evidence=evidence,
        remediation=[f"Import `nvidia-smi -q -d PCIE` with the output, or run {check_cmd}."],
        confidence="low",
    )


def _asymmetry(
    ctx: Context, groups: dict[tuple[int, str], list[TransferMeasurement]]
) -> list[Finding]:
    findings = []
    for index in sorted({g for g, _ in groups}):
        h2d, d2h = groups.get((index, "h2d")), groups.get((index, "d2h"))
        if not h2d or not d2h:
            continue
        h, d = _best(h2d), _best(d2h)
        if _is_sm_copy(h) or _is_sm_copy(d):
            continue
        low, high = (h, d) if h.bandwidth_gbps <= d.bandwidth_gbps else (d, h)
        if low.bandwidth_gbps < config.H2D_D2H_ASYMMETRY_WARN * high.bandwidth_gbps:
            label = f"GPU{index}"
            findings.append(
                Finding(
                    "warn",
                    f"{label} pinned {_DIRECTION[low.direction]} "
                    f"{_gbps(low.bandwidth_gbps)} GB/s is far below "
                    f"{_DIRECTION[high.direction]} {_gbps(high.bandwidth_gbps)} GB/s: copy "
                    "engines move both directions at the same speed on a healthy host",
                    subjects=[label],
                    evidence=[
                        _ev(
                            "pinned H2D vs D2H (copy engines)",
                            f"{_gbps(h.bandwidth_gbps)} vs {_gbps(d.bandwidth_gbps)}",
                            "GB/s",
                            label,
                        )
                    ],
                    remediation=[
                        "Look at the host side: NUMA binding (`numactl --cpunodebind=N "
                        "--membind=N`), IOMMU translation (p2p.acs-iommu), BIOS PCIe settings "
                        "(max read request / payload size), then compare with "
                        "`nvbandwidth -t host_to_device_memcpy_ce device_to_host_memcpy_ce`.",
                    ],
                    confidence="medium",
                )
            )
    return findings


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


@check("transfer.pageable", "Pageable vs pinned copies", needs="probe")
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


# ------------------------------------------------------------------- transfer.remote-numa


def _placement(ctx: Context, t: TransferMeasurement) -> str | None:
    if t.placement in ("local", "remote"):
        return t.placement
    gpu = ctx.gpu_by_index.get(t.gpu)
    if (
        t.host_numa_node is not None
        and gpu is not None
        and gpu.numa_node is not None
        and gpu.numa_node >= 0
    ):
        return "local" if t.host_numa_node == gpu.numa_node else "remote"
    return None


def _placement_comparisons(pinned: list[TransferMeasurement]) -> list[Finding]:
    """The same copy run under different placements (``numactl -m/-N``...): their ratio.

    Works without the GPU's own NUMA node: when one import holds the run with its buffer on
    two nodes, the slower node is the remote one for this GPU.
    """
    runs: dict[tuple[int, str], dict[str, TransferMeasurement]] = {}
    for t in pinned:
        key = t.context or "no placement given"
        slot = runs.setdefault((t.gpu, t.direction), {})
        if key not in slot or t.bandwidth_gbps > slot[key].bandwidth_gbps:
            slot[key] = t
    findings = []
    for (index, direction), by_context in sorted(runs.items()):
        if len(by_context) < 2:
            continue
        fast = max(by_context.values(), key=lambda t: t.bandwidth_gbps)
        slow = min(by_context.values(), key=lambda t: t.bandwidth_gbps)
        if fast.bandwidth_gbps <= 0:
            continue
        findings.append(_placement_finding(index, direction, fast, slow))
    return findings


def _placement_finding(
    index: int, direction: str, fast: TransferMeasurement, slow: TransferMeasurement
) -> Finding:
    label, name = f"GPU{index}", _DIRECTION[direction]
    ratio = slow.bandwidth_gbps / fast.bandwidth_gbps
    nodes = (fast.host_numa_node, slow.host_numa_node)
    other_node = None not in nodes and nodes[0] != nodes[1]
    fast_how, slow_how = fast.context or "no placement", slow.context or "no placement"
    evidence = [
        _ev(f"pinned {name} under {how}", t.bandwidth_gbps, "GB/s", label)
        for t, how in ((fast, fast_how), (slow, slow_how))
    ]
    evidence.append(_ev("slow / fast", f"{ratio:.0%}", subject=label))
    if ratio >= config.REMOTE_NUMA_WARN_FRACTION:
        return Finding(
            "pass",
            f"{label} pinned {name} keeps {ratio:.0%} across placements ({slow_how} vs {fast_how})",
            subjects=[label],
            evidence=evidence,
            confidence="medium",
        )
    slower = f"{1 / ratio:.1f}× slower" if ratio > 0 else "at 0 GB/s"
    head = (
        f"{label} pinned {name} is {slower} under `{slow_how}` than under `{fast_how}` "
        f"({_gbps(slow.bandwidth_gbps)} vs {_gbps(fast.bandwidth_gbps)} GB/s)"
    )
    if other_node:
        head += f": memory on node {nodes[1]} is remote to this GPU, node {nodes[0]} is local"
    step = (
        f"Run this GPU's work with its memory and threads placed like `{fast.context}` "
        "(`numactl --cpunodebind=<n> --membind=<n>`; Slurm `--gpu-bind=closest "
        "--cpu-bind=cores`)."
        if fast.context
        else "Compare with `nvidia-smi topo -m` (NUMA Affinity) to learn the GPU's node."
    )
    return Finding(
        "warn" if other_node else "info",
        head,
        subjects=[label],
        evidence=evidence,
        remediation=[step],
        confidence="medium",
    )


@check("transfer.remote-numa", "Pinned copies from the remote socket", needs="probe")
def transfer_remote_numa(ctx: Context) -> Finding | list[Finding]:
    """Pinned H2D/D2H from the GPU's local NUMA node vs a remote one."""
    pinned = [
        t for t in ctx.transfers(memory="pinned", bidirectional=False) if t.direction in _DIRECTION
    ]
    # pcidoc's probe measures local and remote in one NUMA step (same allocator and copy
    # count): compare those two, not the remote run with the plateau (issue 9).
    numa_step = {(t.gpu, t.direction) for t in pinned if t.conditions.get("step") == "numa"}
    pinned = [
        t
        for t in pinned
        if (t.gpu, t.direction) not in numa_step or t.conditions.get("step") == "numa"
    ]
    placed: dict[tuple[int, str], dict[str, list[TransferMeasurement]]] = {}
    for t in pinned:
        where = _placement(ctx, t)
        if where:
            placed.setdefault((t.gpu, t.direction), {}).setdefault(where, []).append(t)
    comparable = {k: v for k, v in placed.items() if "local" in v and "remote" in v}
    if not comparable:
        compared = _placement_comparisons(pinned)
        if compared:
            return compared
        if ctx.single_numa_node:
            return Finding("info", "single NUMA node: remote-socket memory does not apply")
        return ctx.unmeasured(
            "transfer", "no pinned copy was measured from both the local and a remote NUMA node"
        )
    findings: list[Finding] = []
    ratios = []
    for (index, direction), where in sorted(comparable.items()):
        local, remote = _best(where["local"]), _best(where["remote"])
        ratio = remote.bandwidth_gbps / local.bandwidth_gbps if local.bandwidth_gbps else 1.0
        label = f"GPU{index}"
        name = _DIRECTION[direction]
        ratios.append(ratio)
        evidence = [
            _ev(f"pinned {name} from the local node", local.bandwidth_gbps, "GB/s", label),
            _ev(f"pinned {name} from a remote node", remote.bandwidth_gbps, "GB/s", label),
        ]
        for t in (local, remote):
            if t.context:
                evidence.append(_ev(f"{_placement(ctx, t)} run", t.context, subject=label))
        if ratio < config.REMOTE_NUMA_WARN_FRACTION:
            gpu = ctx.gpu_by_index.get(index)
            node = gpu.numa_node if gpu and gpu.numa_node is not None else "<n>"
            findings.append(
                Finding(
                    "warn",
                    f"{label} pinned {name} from remote memory runs at {ratio:.0%} of local "
                    f"({_gbps(remote.bandwidth_gbps)} vs {_gbps(local.bandwidth_gbps)} GB/s): "
                    "unbound ranks pay this whenever they land on the wrong socket",
                    subjects=[label],
                    evidence=evidence,
                    remediation=[
                        f"Bind ranks to their GPU's node: `numactl --cpunodebind={node} "
                        f"--membind={node} <cmd>`; with torchrun wrap each rank in `taskset -c "
                        "<local cpus>`; with Slurm use `--gpu-bind=closest --cpu-bind=cores`.",
                    ],
                )
            )
        else:
            findings.append(
                Finding(
                    "pass",
                    f"{label} {name} remote/local = {ratio:.0%}",
                    evidence=evidence,
                )
            )
    if not any(f.severity == "warn" for f in findings):
        evidence = [e for f in findings for e in f.evidence]
        return Finding(
            "pass",
            f"remote-node pinned copies keep ≥ {config.REMOTE_NUMA_WARN_FRACTION:.0%} of local "
            f"bandwidth (lowest {min(ratios):.0%})",
            evidence=evidence,
        )
    return [f for f in findings if f.severity != "pass"]

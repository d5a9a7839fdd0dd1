"""The ``transfer.pinned`` check."""

from __future__ import annotations

from pcidoc.doctor import config
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.checks.transfer._shared import _DIRECTION, _best, _group
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import gbps as _gbps
from pcidoc.model import linkmodel
from pcidoc.model.facts import Gpu
from pcidoc.model.measurements import TransferMeasurement
from pcidoc.model.report import Confidence, Evidence, Severity
from pcidoc.model.units import link_label


def _is_sm_copy(t: TransferMeasurement) -> bool:
    """SM (kernel) copies are asymmetric by nature (nvbandwidth-sm: 35 vs 53 GB/s on H100)."""
    method = (t.method or "").lower()
    return method.endswith(("-sm", "_sm")) or method == "sm"


class LinkBasis:
    """The PCIe link a transfer is judged against, and how it was learned."""

    __slots__ = ("basis", "confidence", "gen", "width")

    def __init__(self, gen: int, width: int, basis: str, confidence: Confidence) -> None:
        self.gen = gen
        self.width = width
        self.basis = basis
        self.confidence: Confidence = confidence


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


@check("transfer.pinned")
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

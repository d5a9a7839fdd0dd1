"""The ``p2p.acs-iommu`` check."""

from __future__ import annotations

from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.checks.p2p._shared import (
    ACS_ROOT_HINT,
    NCCL_AB_TEST,
    PairPath,
    _best,
    _first,
    _iommu_translating,
    _uni_or_bidir,
    pcie_pair_paths,
)
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import gbps as _gbps
from pcidoc.doctor.wording import short_list as _list
from pcidoc.model.facts import Gpu, PcieHop
from pcidoc.model.report import Confidence, Evidence, Severity

# ------------------------------------------------------------------------ p2p.acs-iommu


def _acs_fix_steps(bridges: list[PcieHop], gpus: list[Gpu]) -> list[str]:
    steps = []
    if bridges:
        ids = sorted({h.bus_id for h in bridges})
        steps.append(
            "Turn ACS redirect off on the bridges between the GPUs (until the next reboot): "
            + "; ".join(f"`sudo setpci -s {bdf} ECAP_ACS+0x6.w=0000`" for bdf in ids)
        )
        steps.append(
            "Make it permanent with the kernel argument "
            f"`pci=disable_acs_redir={';'.join(ids)}` (or ACS off in the BIOS). This removes "
            "isolation between the devices behind those bridges."
        )
    bdf = next((g.bus_id for g in gpus if g.bus_id), "<gpu-bdf>")
    steps.append(iommu_fix(bdf))
    steps.append(NCCL_AB_TEST)
    return steps


def iommu_fix(bdf: str) -> str:
    """The IOMMU remediation step, for one GPU bus id."""
    return (
        "If the IOMMU translates GPU DMA, turn VT-d/AMD-Vi off in the BIOS or boot with "
        "`iommu=pt` (the IOMMU stays available for VFIO but host DMA is mapped 1:1), then check "
        f"that `cat /sys/bus/pci/devices/{bdf}/iommu_group/type` reads `identity`."
    )


_VM_ACS_ADVICE = (
    "Virtual machines need ACS and a translating IOMMU to isolate passed-through devices: leave "
    "them on. For GPUDirect RDMA enable ATS on the NICs (`mlxconfig -d <dev> set "
    "ATS_ENABLED=true`, then check `lspci -vvv | grep ATSCtl` shows `Enable+`); for GPU P2P ask "
    "the hypervisor for a GPUDirect clique."
)


@check("p2p.acs-iommu")
def p2p_acs_iommu(ctx: Context) -> Finding | list[Finding]:
    """ACS redirect bits on the ports between GPUs and IOMMU translation of GPU DMA."""
    indices = ctx.p2p_gpu_indices()
    paths_known = any(g.path for g in ctx.gpus)
    iommu = ctx.host.iommu
    types_known = any(g.iommu_group_type for g in ctx.gpus) or bool(iommu.default_domain_type)
    if len(indices) < 2 and not ctx.nics:
        return Finding("skip", "fewer than two GPUs and no NICs: no peer path to check")
    if not paths_known and iommu.enabled is None and not types_known:
        where = "on this machine" if ctx.capture.origin.kind == "live" else "on the machine itself"
        return Finding(
            "skip",
            "PCIe paths, ACS and IOMMU state are not in the capture",
            needs=f"ACS and IOMMU state are read from sysfs {where}: {ACS_ROOT_HINT}",
        )
    vm = ctx.is_vm
    findings: list[Finding] = []
    pairs, nv = pcie_pair_paths(ctx, indices)  # NVLink pairs are counted: ACS is not theirs
    p2p_pairs = [p for p in pairs if p.uses_pcie_p2p]
    findings.extend(_acs_findings(ctx, pairs, p2p_pairs, vm))
    findings.extend(_iommu_findings(ctx, p2p_pairs, vm))
    if not findings:
        if nv and not pairs:
            text = f"all {nv} GPU pair(s) are joined by NVLink: PCIe ACS does not affect their P2P"
        elif not p2p_pairs:
            text = (
                "no GPU pair uses PCIe P2P by default (NVLink or through the CPU/across sockets, "
                "where NCCL uses shared memory)"
            )
        else:
            text = f"no ACS redirect on the PCIe P2P path of {len(p2p_pairs)} pair(s)"
        findings.append(Finding("pass", text))
    return findings


def _acs_findings(
    ctx: Context, pairs: list[PairPath], p2p_pairs: list[PairPath], vm: bool | None
) -> list[Finding]:
    findings: list[Finding] = []
    redirected = [p for p in p2p_pairs if p.redirecting]
    if redirected:
        bridges = list({h.bus_id: h for p in redirected for h in p.redirecting}.values())
        refused = [p for p in redirected if ctx.p2p_available(p.a, p.b) is False]
        live = [p for p in redirected if p not in refused]
        evidence = [
            _ev(
                "ACSCtl",
                f"{h.acs.describe()} (0x{h.acs.raw:04x})" if h.acs else None,
                subject=h.bus_id,
            )
            for h in bridges
        ]
        evidence += _measured_evidence(ctx, redirected)
        gpus = [
            ctx.gpu_by_index[i] for p in redirected for i in (p.a, p.b) if i in ctx.gpu_by_index
        ]
        bridge_text = _list([h.bus_id for h in bridges], 3)
        if vm:
            findings.append(
                Finding(
                    "info",
                    f"ACS redirect on {bridge_text} between "
                    f"{_list([p.label for p in redirected])}: "
                    "expected in a virtual machine",
                    subjects=[p.label for p in redirected],
                    evidence=evidence,
                    remediation=[_VM_ACS_ADVICE],
                    confidence="medium",
                )
            )
        elif live:
            sev: Severity = "fail"
            conf: Confidence = "high" if vm is False else "medium"
            amd_cpu = any(p.kind in ("cpu", "sys") for p in live)
            what = (
                "on the root ports: with few GPUs on an AMD host NCCL does P2P through the root "
                "complex, and redirected P2P there has hung all-reduce"
                if amd_cpu
                else "between GPUs behind a PCIe switch: peer traffic is forced up to the root "
                "complex (slow, and a hang with the IOMMU on)"
            )
            findings.append(
                Finding(
                    sev,
                    f"ACS redirect on {bridge_text} {what} ({_list([p.label for p in live])})",
                    subjects=[p.label for p in live],
                    evidence=evidence,
                    remediation=_acs_fix_steps(bridges, gpus),
                    confidence=conf,
                )
            )
        if refused and not vm:
            findings.append(
                Finding(
                    "info",
                    f"ACS redirect on the path of {_list([p.label for p in refused])}, "
                    "but the driver "
                    "refuses P2P there anyway (see p2p.capability)",
                    subjects=[p.label for p in refused],
                    confidence="medium",
                )
            )
    unreadable = [p for p in p2p_pairs if p.unreadable and not p.redirecting]
    if unreadable:
        ports = list({h.bus_id: h for p in unreadable for h in p.unreadable}.values())
        reasons = sorted({h.why("acs") or "unreadable" for h in ports})
        iommu_on = ctx.host.iommu.enabled
        if vm:
            sev, conf = "info", "low"
        elif iommu_on:
            sev, conf = "warn", "low"
        else:
            sev, conf = "info", "low"
        note = (
            "; the IOMMU is on, and Linux then sets ReqRedir/CmpltRedir on switch ports"
            if iommu_on and not vm
            else ""
        )
        findings.append(
            Finding(
                sev,
                f"ACS state of {len(ports)} port(s) between GPUs could not be read "
                f"({', '.join(reasons)}){note}",
                subjects=[p.label for p in unreadable],
                evidence=[
                    _ev("ACS unreadable", h.why("acs") or "unknown", subject=h.bus_id)
                    for h in ports
                ],
                remediation=[
                    "Read the ACS registers as root: `sudo pcidoc check --only "
                    "p2p.acs-iommu` (or `sudo lspci -vvv | grep ACSCtl`)."
                ],
                confidence=conf,
                needs=ACS_ROOT_HINT,
            )
        )
    unknown_paths = [p for p in p2p_pairs if not p.paths_known]
    if unknown_paths and not unreadable and not redirected:
        findings.append(
            Finding(
                "info",
                f"PCIe path of {len(unknown_paths)} P2P pair(s) not in the capture: ACS not judged",
                subjects=[p.label for p in unknown_paths],
                confidence="low",
                needs=ACS_ROOT_HINT,
            )
        )
    benign = [p for p in p2p_pairs if p.benign_acs and not p.redirecting]
    if benign:
        ports = list({h.bus_id: h for p in benign for h in p.benign_acs}.values())
        findings.append(
            Finding(
                "info",
                f"ACS on {_list([h.bus_id for h in ports], 3)} has only SrcValid/UpstreamFwd set: "
                "that does not redirect P2P",
                evidence=[
                    _ev("ACSCtl", h.acs.describe() if h.acs else None, subject=h.bus_id)
                    for h in ports
                ],
                confidence="high",
            )
        )
    off_path = [p for p in pairs if p.kind == "cpu" and not p.uses_pcie_p2p and p.redirecting]
    if off_path and not vm:
        findings.append(
            Finding(
                "info",
                f"ACS redirect on the root ports of {_list([p.label for p in off_path])}: these "
                "pairs go through the CPU, where NCCL uses shared memory by default",
                subjects=[p.label for p in off_path],
                confidence="medium",
            )
        )
    return findings


def _measured_evidence(ctx: Context, paths: list[PairPath]) -> list[Evidence]:
    out = []
    for p in paths:
        enabled, baseline = measured_pair(ctx, p.a, p.b)
        if enabled is not None and baseline is not None:
            out.append(
                _ev(
                    "measured P2P vs staged",
                    f"{_gbps(enabled)} vs {_gbps(baseline)}",
                    "GB/s",
                    subject=p.label,
                )
            )
    return out


def _iommu_findings(ctx: Context, p2p_pairs: list[PairPath], vm: bool | None) -> list[Finding]:
    iommu = ctx.host.iommu
    translating = [g for g in ctx.gpus if _iommu_translating(ctx, g)]
    args = list(iommu.kernel_args) or [
        token for token in (ctx.host.cmdline or "").split() if "iommu" in token or "acs" in token
    ]
    arg_evidence = [_ev("IOMMU/ACS kernel arguments", " ".join(args) or "none")]
    if not translating:
        if iommu.enabled is None and not any(g.iommu_group_type for g in ctx.gpus):
            return [
                Finding(
                    "info",
                    "IOMMU state unknown: translation of GPU DMA not judged",
                    evidence=arg_evidence,
                    confidence="low",
                    needs="run `pcidoc check` on the machine (reads /sys/kernel/iommu_groups)",
                )
            ]
        return []
    gpu_labels = [g.label for g in translating]
    evidence = [
        _ev("IOMMU group type", g.iommu_group_type or iommu.default_domain_type, subject=g.label)
        for g in translating
    ]
    evidence += arg_evidence
    if any(a in ("iommu=pt", "iommu.passthrough=1") for a in args):
        evidence.append(
            _ev(
                "note",
                "passthrough is on the kernel command line but sysfs reads a translating "
                "type: the running state wins",
            )
        )
    if vm:
        return [
            Finding(
                "info",
                f"IOMMU translates DMA of {_list(gpu_labels)}: required in a virtual machine",
                subjects=gpu_labels,
                evidence=evidence,
                remediation=[_VM_ACS_ADVICE],
                confidence="medium",
            )
        ]
    involved = {i for p in p2p_pairs for i in (p.a, p.b)}
    rdma = bool(ctx.nics)
    at_risk = [g for g in translating if g.index in involved] or (translating if rdma else [])
    bdf = next((g.bus_id for g in translating if g.bus_id), "<gpu-bdf>")
    remediation = [iommu_fix(bdf), NCCL_AB_TEST]
    if at_risk:
        why = "PCIe P2P" if any(g.index in involved for g in at_risk) else "GPUDirect RDMA"
        return [
            Finding(
                "warn",
                f"IOMMU translates DMA of {_list([g.label for g in at_risk])} on bare metal: "
                f"{why} can slow down, hang or return zeroed data",
                subjects=[g.label for g in at_risk],
                evidence=evidence,
                remediation=remediation,
                confidence="high" if vm is False else "medium",
            )
        ]
    return [
        Finding(
            "info",
            f"IOMMU translates DMA of {_list(gpu_labels)}; no GPU pair here uses PCIe P2P, so the "
            "cost is limited to host copies",
            subjects=gpu_labels,
            evidence=evidence,
            remediation=remediation[:1],
            confidence="medium",
        )
    ]


def measured_pair(ctx: Context, a: int, b: int) -> tuple[float | None, float | None]:
    """Best enabled and baseline (disabled/staged) peer bandwidth of the pair, either direction
    (the slower direction, since one bad direction is enough)."""
    enabled, baseline = _uni_or_bidir(ctx)
    pairs = [(_best(enabled, s, d), _first(baseline, s, d)) for s, d in ((a, b), (b, a))]
    known = [(e, s) for e, s in pairs if e is not None]
    if not known:
        return None, None
    return min(known, key=lambda p: p[0])

"""P2P checks: what the driver grants (``p2p.capability``), what the PCIe fabric does to peer
traffic (``p2p.acs-iommu``) and what peer copies deliver (``p2p.fallback``).

The three link cause and effect both ways: a refused or redirected pair explains a slow copy,
and a slow copy names the bridge, IOMMU mode or driver policy that explains it.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from pcidoc.doctor import config
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import all_pairs as _all_pairs
from pcidoc.doctor.wording import gbps as _gbps
from pcidoc.doctor.wording import gpu_ref
from pcidoc.doctor.wording import short_list as _list
from pcidoc.doctor.wording import span as _span
from pcidoc.model.facts import P2P_CODES, Gpu, PcieHop
from pcidoc.model.links import is_nvlink, nvlink_count
from pcidoc.model.measurements import P2PMatrixMeasurement
from pcidoc.model.report import Confidence, Evidence, Severity
from pcidoc.model.units import format_bytes, link_label

ACS_ROOT_HINT = "needs root: `sudo pcidoc check --only p2p.acs-iommu`"
NCCL_AB_TEST = (
    "Confirm the diagnosis with an A/B run: the same job or `all_reduce_perf` once with "
    "`NCCL_P2P_DISABLE=1`; if that run is faster or stops hanging, the peer path is at fault."
)


_SWITCH_CLASSES = ("PIX", "PXB")
_CPU_CLASSES = ("PHB", "NODE")


# ------------------------------------------------------------------------------ helpers


def pair_label(a: int, b: int) -> str:
    """``GPU<a>-GPU<b>`` with the lower index first."""
    lo, hi = sorted((a, b))
    return f"GPU{lo}-GPU{hi}"


def _pairs(indices: list[int]) -> Iterable[tuple[int, int]]:
    for pos, a in enumerate(indices):
        for b in indices[pos + 1 :]:
            yield a, b


def is_amd_small_box(ctx: Context) -> bool:
    """NCCL uses P2P up to SYS on AMD CPUs with few GPUs (paths.cc)."""
    vendor = (ctx.host.cpu_vendor or "").lower()
    model = (ctx.host.cpu_model or "").lower()
    amd = vendor == "amd" or "epyc" in model or "threadripper" in model or "ryzen" in model
    return amd and len(ctx.p2p_gpu_indices()) <= config.NCCL_AMD_P2P_SYS_MAX_GPUS


@dataclass
class PairPath:
    """The PCIe ports that decide what happens to peer traffic between two GPUs."""

    a: int
    b: int
    link: str | None
    kind: str
    """``nvlink``, ``switch`` (PIX/PXB), ``cpu`` (PHB/NODE), ``sys`` or ``unknown``."""
    uses_pcie_p2p: bool
    """True when NCCL/CUDA would send peer traffic over PCIe P2P on this pair by default."""
    hops: list[PcieHop] = field(default_factory=list)
    """Ports below the lowest common ancestor (all ports when the GPUs share none)."""
    paths_known: bool = False

    @property
    def label(self) -> str:
        return pair_label(self.a, self.b)

    @property
    def redirecting(self) -> list[PcieHop]:
        return [h for h in self.hops if h.acs is not None and h.acs.redirects_p2p]

    @property
    def unreadable(self) -> list[PcieHop]:
        return [h for h in self.hops if h.acs is None and h.acs_capable is not False]

    @property
    def benign_acs(self) -> list[PcieHop]:
        return [
            h
            for h in self.hops
            if h.acs is not None
            and not h.acs.redirects_p2p
            and (h.acs.source_validation or h.acs.upstream_forwarding)
        ]


def pair_path(ctx: Context, a: int, b: int) -> PairPath:
    """Classify the path between two GPUs and collect the ports that can redirect it."""
    link = ctx.gpu_link(a, b)
    ga, gb = ctx.gpu_by_index.get(a), ctx.gpu_by_index.get(b)
    path_a = ga.path if ga else []
    path_b = gb.path if gb else []
    paths_known = bool(path_a) and bool(path_b)
    hops: list[PcieHop] = []
    common_role: str | None = None
    if paths_known:
        ids_b = [h.bus_id for h in path_b]
        common = next((i for i, h in enumerate(path_a) if h.bus_id in ids_b), None)
        if common is None:
            hops = list(path_a) + list(path_b)
        else:
            common_role = path_a[common].role
            hops = list(path_a[:common]) + list(path_b[: ids_b.index(path_a[common].bus_id)])
    if is_nvlink(link):
        kind = "nvlink"
    elif link in _SWITCH_CLASSES:
        kind = "switch"
    elif link in _CPU_CLASSES:
        kind = "cpu"
    elif link == "SYS":
        kind = "sys"
    elif paths_known:
        kind = "switch" if common_role in ("switch_upstream", "switch_downstream") else "cpu"
    else:
        kind = "unknown"
    amd_small = is_amd_small_box(ctx)
    uses = kind in ("switch", "unknown") or (kind in ("cpu", "sys") and amd_small)
    return PairPath(a, b, link, kind, uses, hops, paths_known)


def _iommu_translating(ctx: Context, gpu: Gpu) -> bool | None:
    kind = gpu.iommu_group_type or ctx.host.iommu.default_domain_type
    if kind:
        return kind.upper().startswith("DMA")
    if ctx.host.iommu.enabled is False:
        return False
    return None


def _downtrained(gpu: Gpu | None) -> str | None:
    if gpu is None:
        return None
    link = gpu.pcie
    gen_low = link.current_gen and link.max_gen and link.current_gen < link.max_gen
    width_low = link.current_width and link.max_width and link.current_width < link.max_width
    if width_low or (gen_low and gpu.pstate == 0):
        return (
            f"{link_label(link.current_gen, link.current_width)} of "
            f"{link_label(link.max_gen, link.max_width)}"
        )
    return None


def static_causes(ctx: Context, a: int, b: int) -> list[Evidence]:
    """Static facts that explain a slow or broken peer path between GPU ``a`` and ``b``."""
    label = pair_label(a, b)
    out: list[Evidence] = []
    path = pair_path(ctx, a, b)
    for hop in path.redirecting:
        out.append(
            _ev(
                "ACS redirect on bridge",
                f"{hop.acs.describe()} (0x{hop.acs.raw:04x})" if hop.acs else None,
                subject=hop.bus_id,
            )
        )
    if path.unreadable and not path.redirecting:
        out.append(
            _ev("ACS on the bridges between them", f"unreadable ({ACS_ROOT_HINT})", subject=label)
        )
    code = ctx.p2p_code(a, b)
    if code and code not in ("OK", "U"):
        out.append(_ev("NVML P2P status", f"{code}: {P2P_CODES.get(code, code)}", subject=label))
    if path.link in ("SYS", "PHB", "NODE"):
        out.append(_ev("path class", f"{path.link} (peer traffic crosses the CPU)", subject=label))
    for idx in (a, b):
        gpu = ctx.gpu_by_index.get(idx)
        if gpu is None:
            continue
        if _iommu_translating(ctx, gpu):
            out.append(
                _ev(
                    "IOMMU group type",
                    gpu.iommu_group_type or ctx.host.iommu.default_domain_type,
                    subject=gpu.label,
                )
            )
        low = _downtrained(gpu)
        if low:
            out.append(_ev("PCIe link below its maximum", low, subject=gpu.label))
        if ctx.is_geforce(gpu):
            out.append(_ev("consumer GPU (driver P2P policy applies)", gpu.name, subject=gpu.label))
        if gpu.bar1_total_bytes and gpu.bar1_total_bytes < config.BAR1_SMALL_BYTES:
            out.append(
                _ev(
                    "small BAR1 (Resizable BAR off?)",
                    format_bytes(gpu.bar1_total_bytes),
                    subject=gpu.label,
                )
            )
    return out


def _summarize_causes(causes: list[Evidence]) -> str:
    """``"; likely cause: ACS redirect at 0000:41:00.0, ..."``, strongest causes first."""
    ranked: list[tuple[int, str]] = []
    for ev in causes:
        if ev.label.startswith("ACS redirect"):
            ranked.append((0, f"ACS redirect at {ev.subject}"))
        elif ev.label == "IOMMU group type":
            ranked.append((1, f"IOMMU translating ({ev.value}) on {ev.subject}"))
        elif ev.label.startswith("small BAR1"):
            ranked.append((2, f"small BAR1 on {ev.subject}"))
        elif ev.label.startswith("PCIe link below"):
            ranked.append((3, f"{ev.subject} link at {ev.value}"))
        elif ev.label == "NVML P2P status":
            ranked.append((4, f"NVML status {str(ev.value).split(':')[0]}"))
        elif ev.label == "path class":
            ranked.append((5, f"{str(ev.value).split()[0]} path"))
    unique = list(dict.fromkeys(name for _, name in sorted(ranked, key=lambda r: r[0])))
    return "; likely cause: " + ", ".join(unique[:3]) if unique else ""


def _capped(evidence: list[Evidence], limit: int = 8) -> list[Evidence]:
    """At most ``limit`` evidence rows, with a row saying how many were left out."""
    if len(evidence) <= limit:
        return evidence
    return [*evidence[:limit], _ev("more rows like these", len(evidence) - limit)]


def short_meaning(code: str) -> str:
    """The short name of a P2P status code (``CNS`` -> ``chipset not supported``)."""
    return P2P_CODES.get(code, "CUDA reports no peer access").split(":")[0]


# ------------------------------------------------------------------------ p2p.capability


_CODE_ADVICE: dict[str, str] = {
    "GNS": (
        "GNS is the driver's policy for consumer GPUs: peer copies are staged through host "
        "memory, so even two GPUs behind one PCIe switch send every byte up the shared uplink to "
        "the CPU and back down. Plan for it (NCCL falls back to shared memory), or use GPUs whose "
        "driver allows P2P; community drivers that force P2P on need Resizable BAR, the IOMMU off "
        "and a byte-verified test before you trust them."
    ),
    "CNS": (
        "CNS means the root complex is not on the driver's P2P allow-list. Inside a VM that is the "
        "emulated chipset: ask the hypervisor to put the GPUs in one GPUDirect clique (QEMU "
        "`-device vfio-pci,host=<bdf>,x-nv-gpudirect-clique=0` on each GPU); BAR size, driver "
        "flavour and registry keys do not clear it."
    ),
    "CNS-bare": (
        "CNS means the platform's root complex is not on the driver's P2P allow-list: update the "
        "driver and the BIOS; until then NCCL uses shared memory for these pairs."
    ),
    "TNS": (
        "TNS means the PCIe path between the GPUs cannot carry P2P (a bridge the driver does not "
        "accept). Move the GPUs under one supported PCIe switch or onto CPU slots of one socket."
    ),
    "NS": (
        "NS means P2P is not supported for this pair by the driver or GPU (consumer GPUs report "
        "it too); copies are staged through host memory and NCCL uses shared memory."
    ),
    "DR": (
        "DR means a driver registry key turned P2P off: look for `NVreg_RegistryDwords` in "
        "`/etc/modprobe.d/*.conf` and `grep RegistryDwords /proc/driver/nvidia/params`, remove "
        "the key and reload the driver (`sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia "
        "&& sudo modprobe nvidia`) or reboot."
    ),
    "CUDA": (
        "CUDA reports no peer access for these pairs, so every peer copy is staged through host "
        "memory. `nvidia-smi topo -p2p r` shows the driver's reason code."
    ),
}


def _has_p2p_measurement(ctx: Context) -> bool:
    return bool(ctx.p2p_matrices(p2p="enabled") or ctx.measurements.p2p_verification)


@check("p2p.capability", "P2P capability vs topology", needs="facts")
def p2p_capability(ctx: Context) -> Finding | list[Finding]:
    """Pairs that should but cannot do P2P, with the driver's reason code explained."""
    indices = ctx.p2p_gpu_indices()
    if len(indices) < 2:
        return Finding("skip", "fewer than two GPUs: no peer pairs to check")
    status = ctx.capture.p2p
    if not status.matrices and status.can_access_peer is None:
        return Finding(
            "skip",
            "no P2P status matrix and no CUDA peer-access answer in the capture",
            needs=(
                "the P2P status matrix: `pcidoc capture` on the machine (NVML), or import "
                "`nvidia-smi topo -p2p r` / p2pBandwidthLatencyTest output with `pcidoc import`"
            ),
        )

    refused: dict[tuple[str, str], list[tuple[int, int, str | None]]] = {}
    granted: list[tuple[int, int, str | None]] = []
    unknown: list[str] = []
    contradictions: list[Finding] = []
    for a, b in _pairs(indices):
        link = ctx.gpu_link(a, b)
        code = ctx.p2p_code(a, b)
        cuda = ctx.can_access_peer(a, b)
        if (code == "OK" and cuda is False) or (code not in (None, "OK", "U") and cuda is True):
            contradictions.append(
                Finding(
                    "warn",
                    f"{pair_label(a, b)}: NVML says {code} but CUDA says peer access is "
                    f"{'possible' if cuda else 'impossible'}",
                    subjects=[pair_label(a, b)],
                    evidence=[
                        _ev("NVML P2P status", code, subject=pair_label(a, b)),
                        _ev("cudaDeviceCanAccessPeer", cuda, subject=pair_label(a, b)),
                    ],
                    remediation=[
                        "A grant that CUDA and NVML disagree on is not dependable: run a "
                        "byte-verified peer copy (`pcidoc check --probes quick`) and check that "
                        "both tools ran in the same container/VM with the same driver.",
                    ],
                    confidence="medium",
                )
            )
        if cuda is False or (cuda is None and code not in (None, "OK", "U")):
            reason = code if code not in (None, "OK", "U") else "CUDA"
            if is_nvlink(link):
                klass = "nvlink"
            elif link == "SYS":
                klass = "sys"
            else:
                klass = "pcie"
            refused.setdefault((klass, reason), []).append((a, b, link))
        elif cuda is True or code == "OK":
            granted.append((a, b, link))
        else:
            unknown.append(pair_label(a, b))

    findings: list[Finding] = list(contradictions)
    nvlink_granted = [p for p in granted if is_nvlink(p[2])]
    for (klass, reason), pairs in sorted(refused.items()):
        findings.append(_refusal_finding(ctx, klass, reason, pairs, bool(nvlink_granted)))
    if unknown:
        findings.append(
            Finding(
                "info",
                f"P2P status unknown for {len(unknown)} pair(s): {_list(unknown)}",
                subjects=unknown,
                confidence="low",
            )
        )
    if not refused and not contradictions:
        findings.append(_granted_finding(ctx, granted))
    elif granted:
        findings.append(
            Finding(
                "pass",
                f"P2P granted on {len(granted)} pair(s)",
                evidence=[_ev("pairs with P2P granted", len(granted))],
            )
        )
    return findings


def _refusal_finding(
    ctx: Context,
    klass: str,
    reason: str,
    pairs: list[tuple[int, int, str | None]],
    nvlink_ok: bool,
) -> Finding:
    labels = [pair_label(a, b) for a, b, _ in pairs]
    shown = _list([f"{pair_label(a, b)} ({link or 'path unknown'})" for a, b, link in pairs])
    where = shown if len(pairs) == 1 else f"{len(pairs)} pairs: {shown}"
    meaning = short_meaning(reason)
    code = "CUDA: no peer access" if reason == "CUDA" else f"{reason}: {meaning}"
    evidence = _capped(
        [_ev("P2P refused", f"{reason}: {meaning}", subject=pair_label(a, b)) for a, b, _ in pairs]
    )
    if klass == "nvlink":
        return Finding(
            "fail",
            f"P2P refused ({reason}) on NVLink-connected pair(s) {shown}: NCCL aborts on such "
            "pairs ('P2P is disabled between NVLINK connected GPUs')",
            subjects=labels,
            evidence=evidence,
            remediation=[
                "NVLink pairs must always have P2P: check `nvidia-smi nvlink -s` and "
                "`nvidia-smi -q | grep -A3 Fabric` (see nvlink.state / nvlink.fabric), restart "
                "`nvidia-fabricmanager` on NVSwitch systems, then reset the GPUs or reboot.",
            ],
        )
    if klass == "sys":
        return Finding(
            "info",
            f"P2P refused ({code}) across sockets on {where}: normal, NCCL uses shared memory "
            "between sockets",
            subjects=labels,
            evidence=evidence,
            remediation=[
                "Nothing to fix for NCCL; keep tightly coupled ranks on one socket "
                "(see numa.cross-socket).",
            ],
        )
    geforce = [g.label for g in ctx.gpus if ctx.is_geforce(g)]
    key = "CNS-bare" if reason == "CNS" and ctx.is_vm is False else reason
    advice = _CODE_ADVICE.get(key, _CODE_ADVICE["CUDA"])
    summary = f"P2P refused ({code}) on {where}"
    summary += "; peer copies are staged through host memory"
    if nvlink_ok:
        summary += " (NVLink pairs have P2P; only these PCIe pairs are refused)"
    if any(link == "PIX" for *_, link in pairs) and reason in ("GNS", "NS", "CUDA"):
        summary += ", even between PIX GPUs (up the switch uplink and back)"
    consumer = bool(geforce) and reason in ("GNS", "NS", "CUDA")
    if consumer:
        evidence.append(_ev("consumer GPUs", ", ".join(geforce)))
        summary += "; on consumer GPUs that is the driver's policy, not a fault"
    if ctx.is_vm:
        evidence.append(_ev("virtual machine", True))
    remediation = [advice]
    if consumer:
        remediation.insert(
            0,
            "This is not a fault: the stock driver refuses P2P on consumer GPUs. Plan for "
            "host-staged copies (NCCL uses shared memory, see scaling.allreduce), or run "
            "GPU-to-GPU heavy jobs on GPUs with P2P support or NVLink.",
        )
    return Finding(
        "warn",
        summary,
        subjects=labels,
        evidence=evidence,
        remediation=remediation,
        confidence="high" if reason != "CUDA" else "medium",
    )


def _granted_finding(ctx: Context, granted: list[tuple[int, int, str | None]]) -> Finding:
    geforce = [g for g in ctx.gpus if ctx.is_geforce(g)]
    verifications = ctx.measurements.p2p_verification
    verified_ok = bool(verifications) and all(v.ok for v in verifications)
    evidence = [_ev("pairs with P2P granted", len(granted))]
    if geforce and not verified_ok:
        return Finding(
            "info",
            f"P2P reported OK on consumer GPUs ({', '.join(g.label for g in geforce)}): "
            "a patched driver? A grant is not delivery; byte-verify before trusting it",
            subjects=[g.label for g in geforce],
            evidence=[
                *evidence,
                _ev("consumer GPUs", ", ".join(g.name or "" for g in geforce)),
            ],
            remediation=[
                "Stock drivers refuse P2P on consumer GPUs, so an OK here usually comes from a "
                "patched driver. Such peer paths have returned wrong data while reporting "
                "success: run `pcidoc check --probes quick` (byte-verified peer copies) and, for "
                "vLLM, consider `--disable-custom-all-reduce` until it passes.",
            ],
            confidence="medium",
        )
    if not _has_p2p_measurement(ctx):
        return Finding(
            "pass",
            f"P2P granted on {_all_pairs(len(granted))}; OK is a grant, not delivery: no peer "
            "copy was measured",
            evidence=evidence,
            remediation=[
                "Measure what the grant delivers: `pcidoc check --probes quick` "
                "(see p2p.fallback).",
            ],
            confidence="medium",
        )
    return Finding(
        "pass",
        f"P2P granted on {_all_pairs(len(granted))} and measured (see p2p.fallback)",
        evidence=evidence,
    )


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


@check("p2p.acs-iommu", "ACS redirect and IOMMU translation", needs="facts")
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
    pairs = [pair_path(ctx, a, b) for a, b in _pairs(indices)]
    p2p_pairs = [p for p in pairs if p.uses_pcie_p2p]
    findings.extend(_acs_findings(ctx, pairs, p2p_pairs, vm))
    findings.extend(_iommu_findings(ctx, p2p_pairs, vm))
    if not findings:
        nv = sum(1 for p in pairs if p.kind == "nvlink")
        if pairs and nv == len(pairs):
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


# ------------------------------------------------------------------------- p2p.fallback


def _uni_or_bidir(ctx: Context) -> tuple[list[P2PMatrixMeasurement], list[P2PMatrixMeasurement]]:
    for bidir in (False, True):
        enabled = ctx.p2p_matrices("bandwidth", "enabled", bidirectional=bidir)
        if enabled:
            baseline = ctx.p2p_matrices("bandwidth", "disabled", bidirectional=bidir)
            baseline += ctx.p2p_matrices("bandwidth", "staged", bidirectional=bidir)
            return enabled, baseline
    return [], []


def _best(matrices: list[P2PMatrixMeasurement], src: int, dst: int) -> float | None:
    values = [v for m in matrices if (v := m.value(src, dst)) is not None]
    return max(values) if values else None


def measured_pair(ctx: Context, a: int, b: int) -> tuple[float | None, float | None]:
    """Best enabled and baseline (disabled/staged) peer bandwidth of the pair, either direction
    (the slower direction, since one bad direction is enough)."""
    enabled, baseline = _uni_or_bidir(ctx)
    pairs = [(_best(enabled, s, d), _first(baseline, s, d)) for s, d in ((a, b), (b, a))]
    known = [(e, s) for e, s in pairs if e is not None]
    if not known:
        return None, None
    return min(known, key=lambda p: p[0])


def _first(matrices: list[P2PMatrixMeasurement], src: int, dst: int) -> float | None:
    ordered = sorted(matrices, key=lambda m: m.p2p != "disabled")
    for m in ordered:
        value = m.value(src, dst)
        if value is not None:
            return value
    return None


def _latency(ctx: Context, mode: str, src: int, dst: int) -> float | None:
    for m in ctx.p2p_matrices("latency", mode):
        if m.latency_side in (None, "gpu"):
            value = m.value(src, dst)
            if value is not None:
                return value
    return None


def _nvlink_model(ctx: Context, a: int, b: int, link: str) -> tuple[float | None, str]:
    version, speed = ctx.nvlink_rate(a)
    if version is None and speed is None:
        version, speed = ctx.nvlink_rate(b)
    nominal = config.nvlink_nominal_rate_gbps(version, speed)
    links = nvlink_count(link)
    if nominal is None or not links:
        return None, "per-link NVLink rate unknown (no NVLink version or speed in the capture)"
    basis = f"{links} links × {nominal:g} GB/s" + (f" (NVLink {version})" if version else "")
    return links * nominal, basis


@dataclass
class _Verdicts:
    nv_unused: list[str] = field(default_factory=list)
    nv_slow: list[str] = field(default_factory=list)
    nv_ok: list[float] = field(default_factory=list)
    slower: list[tuple[int, int]] = field(default_factory=list)
    no_speedup: list[tuple[int, int]] = field(default_factory=list)
    fallback: list[float] = field(default_factory=list)
    fallback_pairs: list[str] = field(default_factory=list)
    indistinct: list[tuple[int, int]] = field(default_factory=list)
    ok_speedups: list[float] = field(default_factory=list)
    ok_unknown_path: list[float] = field(default_factory=list)
    """Enabled bandwidth of passing pairs whose path is not in the topology."""
    nv_rate_unknown: bool = False
    pcie_unjudged: bool = False
    nv_model: tuple[float, str] | None = None
    evidence: list[Evidence] = field(default_factory=list)
    proven: list[tuple[int, int, str]] = field(default_factory=list)
    """PCIe pairs whose weak unidirectional speedup was overruled by stronger evidence that
    the peer path works (latency, bidirectional bandwidth): ``(a, b, what showed it)``."""
    confirmed: set[tuple[int, int]] = field(default_factory=set)
    """Pairs whose bad verdict stronger evidence confirmed (high confidence)."""
    nv_inferred: list[float] = field(default_factory=list)
    """Pairs of unknown path faster than any PCIe x16 link: NVLink without a topology."""


@check("p2p.fallback", "P2P enabled vs staged copies", needs="probe")
def p2p_fallback(ctx: Context) -> Finding | list[Finding]:
    """Peer copies with P2P on that are no faster than staging through the host, NVLink pairs
    not using NVLink, outlier GPUs and byte-verification failures."""
    enabled, baseline = _uni_or_bidir(ctx)
    verifications = ctx.measurements.p2p_verification
    if not enabled and not verifications:
        return ctx.unmeasured("p2p", "no peer-to-peer copy was measured")
    findings: list[Finding] = []
    bad = [v for v in verifications if not v.ok]
    if bad:
        labels = [pair_label(v.src, v.dst) for v in bad]
        findings.append(
            Finding(
                "fail",
                f"P2P returned wrong data on {_list([f'GPU{v.src}→GPU{v.dst}' for v in bad])}",
                subjects=labels,
                evidence=[
                    _ev(
                        "byte verification failed",
                        v.detail or "mismatch",
                        subject=f"GPU{v.src}→GPU{v.dst}",
                    )
                    for v in bad
                ]
                + [e for v in bad for e in static_causes(ctx, v.src, v.dst)],
                remediation=[
                    "Do not run peer-to-peer work on these pairs until fixed: set "
                    "`NCCL_P2P_DISABLE=1` (and for vLLM `--disable-custom-all-reduce`).",
                    "Wrong data with a success status is the signature of a translating IOMMU or a "
                    "forced P2P path: see p2p.acs-iommu, boot with `iommu=pt` or the IOMMU off, "
                    "enable Resizable BAR, then re-run `pcidoc check --probes quick`.",
                ],
            )
        )
    elif verifications:
        findings.append(
            Finding(
                "pass",
                f"byte-verified peer copies correct on {len(verifications)} pair(s)",
                evidence=[_ev("byte-verified pairs", len(verifications))],
            )
        )
    if not enabled:
        return findings
    indices = sorted({i for m in enabled for i in m.gpus})
    mode = "bidirectional" if enabled[0].bidirectional else "unidirectional"
    v = _Verdicts()
    for a in indices:
        for b in indices:
            if a != b:
                _judge_direction(ctx, a, b, enabled, baseline, v)
    findings.extend(_fallback_findings(ctx, v, mode))
    findings.extend(_outliers(ctx, enabled, indices))
    if not any(f.severity in ("warn", "fail", "info") for f in findings):
        parts = []
        evidence = list(v.evidence)
        if v.ok_speedups:
            kind = "PCIe pair" if not v.ok_unknown_path else "pair"
            parts.append(f"P2P beats staging on every {kind} (min {min(v.ok_speedups):.1f}×)")
            evidence.append(_ev("lowest P2P speedup over staging", round(min(v.ok_speedups), 2)))
            beyond = _beyond_pcie(v.ok_unknown_path, mode)
            if beyond:
                parts.append(beyond)
        if v.proven:
            parts.append(
                f"the peer path works on {len(v.proven)} direction(s) whose unidirectional gain "
                "is small (stronger evidence decides)"
            )
            evidence += [
                _ev("peer path works", what, subject=f"GPU{a}→GPU{b}") for a, b, what in v.proven
            ]
        if v.nv_inferred:
            parts.append(_beyond_pcie(v.nv_inferred, mode) or "")
        if v.nv_ok:
            span = _span(v.nv_ok)
            parts.append(f"NVLink pairs {span} GB/s {mode}")
            evidence.append(_ev(f"NVLink P2P {mode}", span, "GB/s"))
            if v.nv_model:
                model, basis = v.nv_model
                parts[-1] += f" ({min(v.nv_ok) / model:.0%}+ of {_gbps(model)} GB/s line rate)"
                evidence.append(_ev("NVLink line rate", model, "GB/s", subject=basis))
            else:
                evidence.append(_ev("NVLink line rate", None, subject="per-link rate unknown"))
        findings.append(
            Finding(
                "pass",
                "; ".join(parts) or f"peer copies measured on {len(indices)} GPUs",
                evidence=_capped(evidence),
                confidence="medium"
                if v.nv_rate_unknown or v.nv_inferred or not ctx.has_topology
                else "high",
            )
        )
    return findings


def _beyond_pcie(values: list[float], mode: str) -> str | None:
    """A note when peer copies of pairs with an unknown path outrun every PCIe x16 link."""
    fastest = config.PCIE_NEWEST_GEN
    ceiling = config.pcie_ceiling_gbps(fastest, 16)
    if not values or ceiling is None:
        return None
    if mode == "bidirectional":
        ceiling *= 2
    if min(values) <= ceiling:
        return None
    return (
        f"{_span(values)} GB/s {mode} is beyond any PCIe x16 link "
        f"(Gen{fastest} x16 = {_gbps(ceiling)} GB/s), so these pairs talk over NVLink (the "
        "topology is not in the capture to confirm it)"
    )


def _judge_direction(
    ctx: Context,
    a: int,
    b: int,
    enabled: list[P2PMatrixMeasurement],
    baseline: list[P2PMatrixMeasurement],
    v: _Verdicts,
) -> None:
    on = _best(enabled, a, b)
    if on is None:
        return
    off = _first(baseline, a, b)
    link = ctx.gpu_link(a, b)
    if is_nvlink(link):
        _judge_nvlink_direction(ctx, a, b, on, link or "", v)
        return
    available = ctx.p2p_available(a, b)
    if link is None and on > _pcie_x16_limit(bool(enabled[0].bidirectional)):
        v.nv_inferred.append(on)
        return
    if off is None:
        v.pcie_unjudged = True
        return
    speedup = on / off if off > 0 else float("inf")
    if available is False:
        v.fallback.append(on)
        if pair_label(a, b) not in v.fallback_pairs:
            v.fallback_pairs.append(pair_label(a, b))
        return
    weak = speedup < config.P2P_MIN_SPEEDUP
    stronger = peer_path_evidence(ctx, a, b) if weak else None
    if stronger is not None and stronger[0] and speedup >= 1.0 - config.P2P_FALLBACK_TOLERANCE:
        # The unidirectional speedup is the weakest evidence: healthy P2P through the CPU is
        # often only ~1.1x the staged copy while its latency drops 10x.
        v.proven.append((a, b, stronger[1]))
        v.ok_speedups.append(speedup)
        return
    if stronger is not None and not stronger[0]:
        v.confirmed.add((a, b))
    if available is None and abs(speedup - 1) <= config.P2P_FALLBACK_TOLERANCE:
        v.indistinct.append((a, b))
    elif speedup < 1.0:
        v.slower.append((a, b))
    elif weak:
        v.no_speedup.append((a, b))
    else:
        v.ok_speedups.append(speedup)
        if link is None:
            v.ok_unknown_path.append(on)


def _judge_nvlink_direction(
    ctx: Context, a: int, b: int, on: float, link: str, v: _Verdicts
) -> None:
    """An NVLink pair: at PCIe rates (not using NVLink), below the model, or fine."""
    arrow = f"GPU{a}→GPU{b}"
    model, basis = _nvlink_model(ctx, a, b, link)
    if on < config.NVLINK_AT_PCIE_RATE_GBPS:
        v.nv_unused.append(arrow)
        v.evidence.append(_ev(f"P2P {arrow} over {link}", on, "GB/s", pair_label(a, b)))
    elif model and on < config.NVLINK_P2P_WARN_FRACTION * model:
        v.nv_slow.append(arrow)
        v.evidence.append(
            _ev(
                f"P2P {arrow} vs NVLink model ({basis})",
                f"{_gbps(on)} of {_gbps(model)}",
                "GB/s",
                pair_label(a, b),
            )
        )
    else:
        v.nv_ok.append(on)
        v.nv_rate_unknown |= model is None
        if model:
            v.nv_model = (model, basis)


def _pcie_x16_limit(bidirectional: bool) -> float:
    """The fastest PCIe x16 link NCCL models (both directions summed when bidirectional)."""
    ceiling = config.pcie_ceiling_gbps(config.PCIE_NEWEST_GEN, 16) or float("inf")
    return 2 * ceiling if bidirectional else ceiling


def peer_path_evidence(ctx: Context, a: int, b: int) -> tuple[bool, str] | None:
    """Whether the peer path GPU ``a`` -> ``b`` works, from evidence stronger than a
    unidirectional bandwidth ratio, strongest first; ``None`` when there is none.

    1. latency with P2P enabled vs disabled: a direct path answers in ~1-3 us, a staged copy in
       ~10-25 us (``P2P_LATENCY_STAGED_FRACTION``);
    2. bidirectional bandwidth enabled vs disabled: a working peer path carries both directions
       at once, staging through one host buffer does not (>= ``P2P_BIDIR_WORKS_SPEEDUP``).

    (Byte-verified copies rank above both but prove correctness, not the path: they are judged
    on their own in :func:`p2p_fallback`.)
    """
    lat_on, lat_off = _latency(ctx, "enabled", a, b), _latency(ctx, "disabled", a, b)
    if lat_on is not None and lat_off:
        works = lat_on < config.P2P_LATENCY_STAGED_FRACTION * lat_off
        return works, f"latency {lat_on:.2f} vs {lat_off:.2f} us staged"
    on = _best(ctx.p2p_matrices("bandwidth", "enabled", bidirectional=True), a, b)
    off = _first(
        ctx.p2p_matrices("bandwidth", "disabled", bidirectional=True)
        + ctx.p2p_matrices("bandwidth", "staged", bidirectional=True),
        a,
        b,
    )
    if on is not None and off:
        ratio = on / off
        if ratio >= config.P2P_BIDIR_WORKS_SPEEDUP:
            return True, f"bidirectional {_gbps(on)} vs {_gbps(off)} GB/s staged ({ratio:.1f}×)"
        if ratio < config.P2P_MIN_SPEEDUP:
            return False, f"bidirectional {_gbps(on)} vs {_gbps(off)} GB/s staged ({ratio:.1f}×)"
    return None


def _direction_evidence(
    ctx: Context, pairs: list[tuple[int, int]], enabled_label: str
) -> list[Evidence]:
    enabled, baseline = _uni_or_bidir(ctx)
    out = []
    for a, b in pairs:
        on, off = _best(enabled, a, b), _first(baseline, a, b)
        out.append(
            _ev(
                f"{enabled_label} GPU{a}→GPU{b} (enabled vs staged)",
                f"{_gbps(on or 0)} vs {_gbps(off or 0)}",
                "GB/s",
                pair_label(a, b),
            )
        )
        lat_on, lat_off = _latency(ctx, "enabled", a, b), _latency(ctx, "disabled", a, b)
        if lat_on is not None and lat_off is not None:
            staged = lat_on >= config.P2P_LATENCY_STAGED_FRACTION * lat_off
            out.append(
                _ev(
                    f"P2P latency GPU{a}→GPU{b} vs staged",
                    f"{lat_on:.2f} vs {lat_off:.2f} us"
                    + (" (staged-like)" if staged else " (the path is up; throughput collapses)"),
                    subject=pair_label(a, b),
                )
            )
    return out


def _fallback_findings(ctx: Context, v: _Verdicts, mode: str) -> list[Finding]:
    findings: list[Finding] = []
    if v.nv_unused:
        findings.append(
            Finding(
                "fail",
                f"NVLink not used: {_list(v.nv_unused)} measured below "
                f"{config.NVLINK_AT_PCIE_RATE_GBPS:.0f} GB/s (PCIe rates) although the topology "
                "shows NVLink",
                subjects=sorted({_unordered(x) for x in v.nv_unused}),
                evidence=[e for e in v.evidence if "over NV" in e.label],
                remediation=[
                    "Check the links (`nvidia-smi nvlink -s`, nvlink.state), the fabric manager on "
                    "NVSwitch systems (nvlink.fabric) and that `NCCL_P2P_DISABLE`/"
                    "`NCCL_P2P_LEVEL` are not set (env.nccl); then re-measure.",
                ],
            )
        )
    if v.nv_slow:
        findings.append(
            Finding(
                "warn",
                f"NVLink P2P below {config.NVLINK_P2P_WARN_FRACTION:.0%} of the link model on "
                f"{_list(v.nv_slow)}",
                subjects=sorted({_unordered(x) for x in v.nv_slow}),
                evidence=[e for e in v.evidence if "NVLink model" in e.label],
                remediation=[
                    "Look for down or erroring links (nvlink.state, nvlink.errors) and for other "
                    "traffic on the GPUs during the test; re-measure with the GPUs idle.",
                ],
                confidence="medium",
            )
        )
    for pairs, sev, what in (
        (v.slower, "fail", "P2P is slower than staging through the host"),
        (v.no_speedup, None, f"P2P under {config.P2P_MIN_SPEEDUP:.1f}× the staged copy"),
    ):
        if not pairs:
            continue
        causes = [e for a, b in pairs for e in static_causes(ctx, a, b)]
        causes = list({(e.label, e.subject, str(e.value)): e for e in causes}.values())
        if sev is None:
            switch = [p for p in pairs if pair_path(ctx, *p).kind in ("switch", "unknown")]
            sev = "warn" if switch else "info"
        sys_only = all(ctx.gpu_link(a, b) == "SYS" for a, b in pairs)
        if sev == "fail" and sys_only:
            sev = "warn"
        arrows = [f"GPU{a}→GPU{b}" for a, b in pairs]
        findings.append(
            Finding(
                sev,  # type: ignore[arg-type]
                f"{what} on {_list(arrows)} ({mode})"
                + (
                    _summarize_causes(causes)
                    or "; no cause visible in the capture (ACS and IOMMU state are read on the "
                    "machine: `sudo pcidoc check --only p2p`)"
                ),
                subjects=sorted({pair_label(a, b) for a, b in pairs}),
                evidence=_direction_evidence(ctx, pairs[:6], "P2P") + causes,
                remediation=_fallback_remediation(ctx, pairs, causes),
                confidence=_weak_or_confirmed(ctx, v, pairs),
            )
        )
    if v.indistinct:
        arrows = [f"GPU{a}→GPU{b}" for a, b in v.indistinct]
        findings.append(
            Finding(
                "warn",
                f"P2P enabled measures the same as staged on {_list(arrows)}: "
                "either peer access is "
                "unavailable (the copy fell back) or the peer path is redirected",
                subjects=sorted({pair_label(a, b) for a, b in v.indistinct}),
                evidence=_direction_evidence(ctx, v.indistinct[:6], "P2P"),
                remediation=[
                    "Check p2p.capability (`nvidia-smi topo -p2p r`) and p2p.acs-iommu; "
                    + NCCL_AB_TEST,
                ],
                confidence="high" if set(v.indistinct) <= v.confirmed else "medium",
            )
        )
    if v.fallback:
        median = statistics.median(v.fallback)
        codes = sorted(
            {
                c
                for p in v.fallback_pairs
                if (c := ctx.p2p_code(*_indices(p))) and c not in ("OK", "U")
            }
        )
        findings.append(
            Finding(
                "info",
                "P2P not available on "
                + (
                    v.fallback_pairs[0]
                    if len(v.fallback_pairs) == 1
                    else f"{len(v.fallback_pairs)} pairs ({_list(v.fallback_pairs)})"
                )
                + f"; copies staged through host memory at {_gbps(median)} GB/s"
                + (" (median)" if len(v.fallback_pairs) > 1 else "")
                + (f", driver code {'/'.join(codes)}" if codes else ""),
                subjects=v.fallback_pairs,
                evidence=[_ev("staged copy (fallback)", median, "GB/s")],
                remediation=[
                    "This is the fallback copy, not a broken peer path: see p2p.capability "
                    "for why peer access is refused."
                ],
            )
        )
    if v.pcie_unjudged:
        findings.append(
            Finding(
                "info",
                "no P2P-disabled or staged baseline was measured: PCIe pairs not judged",
                confidence="low",
                needs=ctx.probe_hint(),
            )
        )
    return findings


def _weak_or_confirmed(ctx: Context, v: _Verdicts, pairs: list[tuple[int, int]]) -> Confidence:
    """High when stronger evidence (latency, bidirectional) confirmed every pair's verdict or
    the drop is severe (slower than staging with a known path); medium on a weak
    unidirectional gain alone or without a topology."""
    if set(pairs) <= v.confirmed:
        return "high"
    if not ctx.has_topology:
        return "medium"
    return "high" if pairs is v.slower else "medium"


def _unordered(arrow: str) -> str:
    a, b = arrow.replace("GPU", "").split("→")
    return pair_label(int(a), int(b))


def _indices(label: str) -> tuple[int, int]:
    a, b = label.replace("GPU", "").split("-")
    return int(a), int(b)


def _fallback_remediation(
    ctx: Context, pairs: list[tuple[int, int]], causes: list[Evidence]
) -> list[str]:
    steps = []
    if any(e.label.startswith("ACS") for e in causes) or any(
        e.label == "IOMMU group type" for e in causes
    ):
        steps.append(
            "Remove the redirect/translation first: see p2p.acs-iommu for the exact "
            "`setpci` and kernel-argument commands."
        )
    if any(e.label.startswith("small BAR1") for e in causes):
        steps.append(
            "Enable Resizable BAR (and Above 4G Decoding) in the BIOS; BAR1-based peer "
            "mappings need a BAR1 as large as GPU memory."
        )
    if any(e.label.startswith("consumer GPU") for e in causes):
        steps.append(
            "Consumer GPUs' peer path is unreliable on some drivers: prefer "
            "`NCCL_P2P_DISABLE=1` (staged copies are faster here) or a driver that "
            "refuses P2P cleanly."
        )
    if any(e.label == "path class" for e in causes):
        steps.append(
            "Peer traffic through the CPU is often slower than staging; NCCL avoids it "
            "by default (leave `NCCL_P2P_LEVEL` unset)."
        )
    steps.append(NCCL_AB_TEST)
    return steps


def _outliers(
    ctx: Context, enabled: list[P2PMatrixMeasurement], indices: list[int]
) -> list[Finding]:
    findings: list[Finding] = []
    for group in ("nvlink", "pcie"):
        per_gpu: dict[int, float] = {}
        for g in indices:
            values = []
            for peer in indices:
                if peer == g or is_nvlink(ctx.gpu_link(g, peer)) != (group == "nvlink"):
                    continue
                values += [
                    x for x in (_best(enabled, g, peer), _best(enabled, peer, g)) if x is not None
                ]
            if values:
                per_gpu[g] = statistics.median(values)
        if len(per_gpu) < 3:
            continue
        for g, med in per_gpu.items():
            others = [m for k, m in per_gpu.items() if k != g]
            ref = statistics.median(others)
            if ref > 0 and med < config.P2P_OUTLIER_FRACTION * ref:
                gpu = ctx.gpu_by_index.get(g)
                evidence = [
                    _ev(
                        "P2P row/column median",
                        f"{_gbps(med)} vs peers {_gbps(ref)}",
                        "GB/s",
                        f"GPU{g}",
                    )
                ]
                low = _downtrained(gpu)
                if low:
                    evidence.append(_ev("PCIe link below its maximum", low, subject=f"GPU{g}"))
                elif gpu and gpu.pcie.current_width and gpu.pcie.current_gen:
                    evidence.append(
                        _ev(
                            "PCIe link",
                            link_label(gpu.pcie.current_gen, gpu.pcie.current_width),
                            subject=f"GPU{g}",
                        )
                    )
                findings.append(
                    Finding(
                        "warn",
                        f"{gpu_ref(gpu) if gpu else f'GPU{g}'} is the P2P outlier: its {group} "
                        "peer copies run at "
                        f"{_gbps(med)} GB/s "
                        f"vs {_gbps(ref)} GB/s for the other GPUs (narrow or downtrained link?)"
                        + (f"; its link is at {low}" if low else ""),
                        subjects=[f"GPU{g}"],
                        evidence=evidence,
                        remediation=[
                            f"Check GPU{g}'s link under load (`nvidia-smi -q -d PCIE -i {g}`, "
                            "pcie.link-speed) and its NVLinks (nvlink.state); reseat or move it if "
                            "the link trains below its maximum.",
                        ],
                        confidence="medium",
                    )
                )
    return findings

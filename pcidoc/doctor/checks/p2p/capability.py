"""The ``p2p.capability`` check."""

from __future__ import annotations

from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.checks.p2p._shared import _capped, pair_label
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import all_pairs as _all_pairs
from pcidoc.doctor.wording import short_list as _list
from pcidoc.model.facts import P2P_CODES
from pcidoc.model.links import is_nvlink


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


def _contradiction(a: int, b: int, code: str | None, cuda: bool | None) -> Finding:
    """NVML and CUDA disagree about one pair."""
    return Finding(
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


class _Tally:
    """Every GPU pair's verdict: refused (by path class and reason), granted (its link class),
    unknown, and the pairs NVML and CUDA disagree about."""

    def __init__(self) -> None:
        self.refused: dict[tuple[str, str], list[tuple[int, int, str | None]]] = {}
        self.granted: list[str | None] = []  # the link class of every granted pair
        self.unknown: list[str] = []
        self.contradictions: list[Finding] = []

    def row(self, ctx: Context, a: int, rest: list[int]) -> None:
        """GPU ``a`` against every later GPU."""
        links = ctx.gpu_links(a, rest)
        codes = ctx.p2p_codes_from(a, rest)
        cudas = ctx.can_access_peer_from(a, rest)
        if codes.count("OK") == len(codes) and cudas.count(None) == len(cudas):
            # The usual row: every pair granted by NVML with no CUDA answer, nothing to judge.
            self.granted += links
            return
        for b, link, code, cuda in zip(rest, links, codes, cudas, strict=True):
            if code == "OK" and cuda is None:  # the usual pair: granted, nothing to say
                self.granted.append(link)
                continue
            self.judge(a, b, link, code, cuda)

    def judge(self, a: int, b: int, link: str | None, code: str | None, cuda: bool | None) -> None:
        if (code == "OK" and cuda is False) or (code not in (None, "OK", "U") and cuda is True):
            self.contradictions.append(_contradiction(a, b, code, cuda))
        if cuda is False or (cuda is None and code not in (None, "OK", "U")):
            reason = code if code not in (None, "OK", "U") else "CUDA"
            klass = "nvlink" if is_nvlink(link) else ("sys" if link == "SYS" else "pcie")
            self.refused.setdefault((klass, reason), []).append((a, b, link))
        elif cuda is True or code == "OK":
            self.granted.append(link)
        else:
            self.unknown.append(pair_label(a, b))


@check("p2p.capability")
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

    tally = _Tally()
    for pos, a in enumerate(indices):
        tally.row(ctx, a, indices[pos + 1 :])
    refused, granted, unknown = tally.refused, tally.granted, tally.unknown
    contradictions = tally.contradictions

    findings: list[Finding] = list(contradictions)
    nvlink_granted = bool(refused) and any(map(is_nvlink, granted))
    for (klass, reason), pairs in sorted(refused.items()):
        findings.append(_refusal_finding(ctx, klass, reason, pairs, nvlink_granted))
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
    evidence = _capped([_ev("P2P refused", code, subject=pair_label(a, b)) for a, b, _ in pairs])
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
            f"P2P refused ({code}) through the CPU interconnect (SYS) on {where}: normal, NCCL "
            "uses shared memory on SYS paths",
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
    # One severity per root cause, whatever the path: the stock driver's policy on consumer GPUs
    # is not a fault to repair (info, as across sockets); its cost is judged where it is
    # measured (p2p.fallback, scaling.allreduce). A refusal on other GPUs has a cause to fix.
    policy = consumer or reason == "GNS"  # GNS is that policy's own code, names or not
    return Finding(
        "info" if policy else "warn",
        summary,
        subjects=labels,
        evidence=evidence,
        remediation=remediation,
        confidence="high" if reason != "CUDA" else "medium",
    )


def _granted_finding(ctx: Context, granted: list[str | None]) -> Finding:
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

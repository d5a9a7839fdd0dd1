"""``nccl.acs-redirect`` and ``nccl.lspci-link``: what pasted ``lspci`` output says about the
PCIe path NCCL's P2P and GPUDirect traffic takes.

* ``nccl.acs-redirect``: ACSCtl with ``ReqRedir+``/``CmpltRedir+``/``EgressCtrl+`` sends peer
  traffic up to the root complex/IOMMU (hangs, corruption, illegal-address faults, slow P2P).
  ``SrcValid+`` alone does not redirect.
* ``nccl.lspci-link``: LnkSta below LnkCap (``(downgraded)``), and AER/DevSta error bits.
"""

from __future__ import annotations

from pcidoc.doctor.checks.nccl_common import evidence, gpu_by_bus, quote
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check


def _who(ctx: Context, bus_id: str | None, fallback: str) -> str:
    gpu = gpu_by_bus(ctx, bus_id)
    if gpu is not None:
        return gpu.label
    return bus_id or fallback


def _gpus_below(ctx: Context, bridges: list[str]) -> list[str]:
    """GPUs (capture labels, or lspci -tv bus ids of display/3D devices) below the bridges."""
    out: list[str] = []
    for tree in evidence(ctx).lspci_trees:
        for bus_id, text in tree.devices.items():
            parent = tree.parents.get(bus_id)
            seen = 0
            while parent is not None and parent not in bridges and seen < 32:
                parent, seen = tree.parents.get(parent), seen + 1
            if parent is None:
                continue
            gpu = gpu_by_bus(ctx, bus_id)
            lowered = text.lower()
            if gpu is not None:
                out.append(gpu.label)
            elif ("nvidia" in lowered or "amd" in lowered) and (
                "3d" in lowered or "vga" in lowered or "display" in lowered
            ):
                out.append(bus_id)
    return list(dict.fromkeys(out))


@check("nccl.acs-redirect", "ACS redirect in pasted lspci output")
def acs_redirect(ctx: Context) -> list[Finding]:
    """Ports whose ACS control redirects peer-to-peer traffic."""
    devices = [d for d in evidence(ctx).lspci if d.acs_ctl]
    if not devices:
        return [
            Finding(
                "skip",
                "no ACSCtl line in the evidence",
                needs="import `sudo lspci -vvv` (or `sudo lspci -vvv | grep ACSCtl`)",
            )
        ]
    redirect = [d for d in devices if d.acs_redirect]
    if redirect:
        named = [d.bus_id for d in redirect if d.bus_id]
        below = _gpus_below(ctx, named)
        where = f" ({', '.join(named[:6])})" if named else ""
        if below:
            where += f", above {', '.join(below[:8])}"
        return [
            Finding(
                "warn",
                f"ACS redirects peer-to-peer traffic on {len(redirect)} of {len(devices)} "
                f"port(s){where}: P2P and GPUDirect RDMA through them go up to the root "
                "complex",
                subjects=named[:8],
                evidence=[quote(f"ACSCtl: {d.acs_ctl}", "lspci", d.bus_id) for d in redirect[:4]],
                remediation=[
                    "On a bare-metal machine disable ACS redirect on the bridges between GPUs "
                    "and NICs: BIOS (ACS off), `setpci -s <bridge> ECAP_ACS+6.w=0000` at every "
                    "boot, or the kernel argument `pci=noacs` where available.",
                    "In a VM leave ACS alone (it isolates passthrough devices); the hypervisor "
                    "decides P2P there.",
                    "Without bus ids a grep cannot say which ports lie between GPUs: run "
                    "`pcidoc check --only p2p.acs-iommu` on the machine.",
                ],
                confidence="high" if below else "medium",
            )
        ]
    return [
        Finding(
            "pass",
            f"no ACS redirect on the {len(devices)} port(s) shown (source validation only "
            "does not reroute P2P)",
            evidence=[quote(f"ACSCtl: {devices[0].acs_ctl}", "lspci", devices[0].bus_id)],
        )
    ]


@check("nccl.lspci-link", "PCIe link state and errors in pasted lspci output")
def lspci_link(ctx: Context) -> list[Finding]:
    """Downgraded links and AER/DevSta error bits."""
    devices = [
        d
        for d in evidence(ctx).lspci
        if d.lnksta_gts or d.lnksta_width or d.uncorrectable or d.correctable or d.devsta_errors
    ]
    if not devices:
        return [
            Finding(
                "skip",
                "no LnkSta/AER line in the evidence",
                needs="import `sudo lspci -vvv -s <GPU bus id>`",
            )
        ]
    findings: list[Finding] = []
    for pos, d in enumerate(devices):
        who = _who(ctx, d.bus_id, f"device {pos + 1}")
        cap = (
            f"{d.lnkcap_gts:g} GT/s x{d.lnkcap_width}" if d.lnkcap_gts and d.lnkcap_width else None
        )
        sta = f"{d.lnksta_gts:g} GT/s x{d.lnksta_width}" if d.lnksta_gts else None
        if d.width_downgraded:
            findings.append(
                Finding(
                    "warn",
                    f"{who}: the PCIe link runs at {sta}, fewer lanes than the device supports"
                    + (f" ({cap})" if cap else ""),
                    subjects=[who],
                    evidence=[quote(d.lnksta_quote, "lspci", d.bus_id)],
                    remediation=[
                        "Lanes are missing: the slot (or riser, or host) provides fewer lanes, "
                        "or the card is not seated fully. Move the card to a full-width slot; "
                        "if the platform only has one lane, this is its ceiling.",
                    ],
                    confidence="high",
                )
            )
        elif d.speed_downgraded:
            findings.append(
                Finding(
                    "info",
                    f"{who}: the PCIe link trained at {sta}, below the device's speed"
                    + (f" ({cap})" if cap else "")
                    + "; GPUs drop the link speed when idle",
                    subjects=[who],
                    evidence=[quote(d.lnksta_quote, "lspci", d.bus_id)],
                    remediation=[
                        "Read LnkSta again while the GPU is busy (e.g. during `nvidia-smi dmon` "
                        "of a running job); only a low speed under load is a fault.",
                    ],
                    confidence="medium",
                )
            )
        if d.uncorrectable:
            findings.append(
                Finding(
                    "warn",
                    f"{who}: uncorrectable PCIe error status set ({', '.join(d.uncorrectable)})",
                    subjects=[who],
                    evidence=[
                        quote("UESta: " + " ".join(f"{b}+" for b in d.uncorrectable), "lspci")
                    ],
                    remediation=[
                        "Look at `dmesg` for AER reports; reseat the card, check the riser "
                        "and slot.",
                    ],
                )
            )
        latched = d.correctable + [e for e in d.devsta_errors if e not in d.correctable]
        if latched:
            findings.append(
                Finding(
                    "info",
                    f"{who}: error status bits latched ({', '.join(latched)}); correctable "
                    "errors and UnsupReq are often benign, but a rising count is not",
                    subjects=[who],
                    evidence=[quote(" ".join(f"{b}+" for b in latched), "lspci status bits")],
                    remediation=[
                        "Watch the counters over time (`pcidoc check --only pcie.errors` on "
                        "the machine)."
                    ],
                    confidence="medium",
                )
            )
    if not findings:
        return [
            Finding(
                "pass",
                f"{len(devices)} link(s) shown at their full speed and width, no error bits",
            )
        ]
    return findings

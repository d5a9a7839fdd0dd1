"""``nccl.acs-redirect``: ACSCtl with ``ReqRedir+``/``CmpltRedir+``/``EgressCtrl+`` sends peer
traffic up to the root complex/IOMMU (hangs, corruption, illegal-address faults, slow P2P).
``SrcValid+`` alone does not redirect.
"""

from __future__ import annotations

from pcidoc.doctor.checks.nccl._shared import evidence, gpu_by_bus, quote
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, bare_skip, check
from pcidoc.doctor.wording import short_list


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


@check("nccl.acs-redirect")
def acs_redirect(ctx: Context) -> list[Finding]:
    """Ports whose ACS control redirects peer-to-peer traffic."""
    devices = [d for d in evidence(ctx).lspci if d.acs_ctl]
    if not devices:
        return [bare_skip("nccl.acs-redirect")]
    redirect = [d for d in devices if d.acs_redirect]
    if redirect:
        named = [d.bus_id for d in redirect if d.bus_id]
        below = _gpus_below(ctx, named)
        where = f" ({short_list(named, 6)})" if named else ""
        if below:
            where += f", above {short_list(below, 8)}"
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

"""``nccl.lspci-link``: LnkSta below LnkCap (``(downgraded)``), a LnkCtl2 target speed below the
device's, and AER/DevSta error bits."""

from __future__ import annotations

from pcidoc.doctor.checks.nccl._shared import evidence, gpu_by_bus, quote
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, bare_skip, check
from pcidoc.model.evidence import LspciDevice


def _who(ctx: Context, bus_id: str | None, fallback: str) -> str:
    gpu = gpu_by_bus(ctx, bus_id)
    if gpu is not None:
        return gpu.label
    return bus_id or fallback


def _target_cap(d: LspciDevice, who: str) -> Finding | None:
    """``LnkCtl2: Target Link Speed`` below what the device supports: the link cannot train
    faster than that target, busy or idle (unlike an idle downclock)."""
    target = d.lnkctl2_target_gts
    best = max(d.lnkcap_gts or 0.0, d.lnkcap2_gts or 0.0)
    if target is None or not best or target >= best:
        return None
    return Finding(
        "warn",
        f"{who}: the link's target speed is set to {target:g} GT/s (LnkCtl2), below the "
        f"{best:g} GT/s the device supports: the link cannot train faster, even under load",
        subjects=[who],
        evidence=[quote(d.lnkctl2_quote, "lspci", d.bus_id), quote(d.lnksta_quote, "lspci")],
        remediation=[
            "Look for a PCIe speed limit in the BIOS (slot 'Link Speed' set to GenN instead of "
            "Auto) or a `setpci` that lowered the target; set it back and reboot, then read "
            "LnkSta under load.",
        ],
        confidence="medium",
    )


@check("nccl.lspci-link")
def lspci_link(ctx: Context) -> list[Finding]:
    """Downgraded links and AER/DevSta error bits."""
    devices = [
        d
        for d in evidence(ctx).lspci
        if d.lnksta_gts
        or d.lnksta_width
        or d.lnkctl2_target_gts
        or d.uncorrectable
        or d.correctable
        or d.devsta_errors
    ]
    if not devices:
        return [bare_skip("nccl.lspci-link")]
    findings: list[Finding] = []
    for pos, d in enumerate(devices):
        who = _who(ctx, d.bus_id, f"device {pos + 1}")
        cap = (
            f"{d.lnkcap_gts:g} GT/s x{d.lnkcap_width}" if d.lnkcap_gts and d.lnkcap_width else None
        )
        sta = f"{d.lnksta_gts:g} GT/s x{d.lnksta_width}" if d.lnksta_gts else None
        capped = _target_cap(d, who)
        if capped is not None:
            findings.append(capped)
        elif d.width_downgraded:
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

"""``nccl.nic-inventory``: NIC lists so long (virtual functions, extra ports) that the rail NICs
— the ones next to a GPU — are hard to find, or that the report clipped.
"""

from __future__ import annotations

from pcidoc.doctor.checks.nccl._shared import evidence, quote
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import short_list


@check("nccl.nic-inventory", "NIC inventory vs GPUs (rails)")
def nic_inventory(ctx: Context) -> list[Finding]:
    """Dozens of NICs (VFs, extra ports) hiding the rail NICs."""
    ev = evidence(ctx)
    notices = [r.nic_notice for r in ev.env_reports if r.nic_notice]
    nics = ctx.nics
    gpus = ctx.gpus
    findings: list[Finding] = []
    if notices:
        findings.append(
            Finding(
                "info",
                "the report lists only part of the NICs",
                evidence=[quote(notices[0])],
                remediation=["Run `nvidia-smi topo -m` on the node for the full list."],
            )
        )
    if nics and gpus:
        rails = []
        for nic in nics:
            column = ctx.nic_column(nic.label)
            if "PIX" in column or "PXB" in column:
                rails.append(nic.name or nic.label)
        many = len(nics) >= 16 and len(nics) > 2 * len(gpus)
        if many:
            findings.append(
                Finding(
                    "info",
                    f"{len(nics)} NICs for {len(gpus)} GPUs: most are virtual functions or "
                    "ports that are not GPU rails"
                    + (f"; the NICs next to a GPU are {short_list(rails, 8)}" if rails else ""),
                    evidence=[quote(str(len(nics)), "NICs in the topology")],
                    remediation=[
                        "Pin NCCL to the rail NICs (`NCCL_IB_HCA=" + ",".join(rails) + "`)"
                        if rails
                        else "Find the NICs that share a PCIe switch with a GPU "
                        "(`nvidia-smi topo -m`, PIX/PXB) and list them in NCCL_IB_HCA.",
                        "Hide SR-IOV virtual functions from the job if NCCL should not use them.",
                    ],
                    confidence="medium",
                )
            )
        elif not notices:
            findings.append(
                Finding(
                    "pass",
                    f"{len(nics)} NIC(s) for {len(gpus)} GPU(s)"
                    + (f"; rails: {short_list(rails, 8)}" if rails else "")
                    + "; no virtual functions or extra ports hiding the NICs next to the GPUs",
                )
            )
    if not findings:
        return [Finding("skip", "no NIC inventory in the evidence", needs="import topo -m")]
    return findings

"""``kernel.iommu-fault``: IOMMU faults (Intel DMAR, AMD-Vi ``IO_PAGE_FAULT``, ARM SMMU) on
GPUs and NICs.

A GPU or NIC whose DMA faults in the IOMMU is moving data through a translation that does not
map its peer: peer-to-peer copies and GPUDirect RDMA then hang, crash or deliver zeros while
CUDA still reports success (NVIDIA/cuda-samples#48, fixed by turning the IOMMU off;
research/checks.md §2). The fix is the IOMMU in passthrough (or off), and ACS redirect off
between the devices; the P2P probe shows whether the bytes arrive.
"""

from __future__ import annotations

from pcidoc.doctor.checks.kernel._shared import (
    device_label,
    line,
    read_logs,
    relation,
    subject,
)
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.model.kernel import IommuFault

_FIX = [
    "Put the IOMMU in passthrough for host devices: boot with `iommu=pt` (Intel also "
    "`intel_iommu=on iommu=pt`), or disable VT-d / AMD-Vi (IOMMU) in the BIOS when nothing "
    "needs it.",
    "Turn ACS redirect off on the switch ports between the GPUs/NICs (`pcidoc check --only "
    "p2p.acs-iommu` shows them).",
    "Verify the data: `pcidoc probe p2p` (it compares peer and host-staged "
    "copies); until fixed, `NCCL_P2P_DISABLE=1` avoids the broken peer path.",
]


_SEVERITY = {"gpu": "fail", "nic": "fail", "unknown": "warn", "other": "info"}


@check("kernel.iommu-fault", "IOMMU faults in the kernel log")
def iommu_fault(ctx: Context) -> list[Finding]:
    """IOMMU faults grouped by device; GPUs and NICs fail."""
    missing, logs, gpus = read_logs(ctx, "IOMMU faults")
    if missing is not None:
        return [missing]
    by_device: dict[str | None, list[IommuFault]] = {}
    for log in logs:
        for fault in log.iommu_faults:
            by_device.setdefault(fault.bus_id, []).append(fault)
    findings: list[Finding] = []
    for bus, faults in by_device.items():
        kinds = ", ".join(dict.fromkeys(f.kind for f in faults if f.kind)) or "fault"
        iommu = faults[0].iommu
        addresses = list(dict.fromkeys(f.address for f in faults if f.address))
        related = relation(ctx, [bus], faults[0].driver, gpus)
        findings.append(
            Finding(
                _SEVERITY[related],  # type: ignore[arg-type]
                f"{len(faults)} {iommu} IOMMU fault(s) ({kinds}) on {device_label(ctx, bus, gpus)}"
                f" at {len(addresses)} address(es): "
                + (
                    "not a GPU or NIC, so not peer traffic"
                    if related == "other"
                    else "its DMA (peer-to-peer or RDMA) goes through the IOMMU and is refused"
                ),
                subjects=[s for s in [subject(ctx, bus)] if s],
                evidence=[line(f.quote, subject(ctx, bus)) for f in faults[:3]],
                remediation=_FIX,
                confidence="high" if related in ("gpu", "nic") else "medium",
            )
        )
    if findings:
        return findings
    off = next((log.iommu_off for log in logs if log.iommu_off), None)
    lines = sum(log.lines for log in logs)
    return [
        Finding(
            "pass",
            f"no IOMMU fault in {lines} kernel line(s)"
            + (" (the IOMMU is off or in passthrough)" if off else ""),
            evidence=[line(off)] if off else [],
        )
    ]

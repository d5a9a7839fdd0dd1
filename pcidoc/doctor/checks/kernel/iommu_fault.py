"""``kernel.iommu-fault``: IOMMU faults (Intel DMAR, AMD-Vi ``IO_PAGE_FAULT``, ARM SMMU) on
GPUs and NICs.

A GPU or NIC whose DMA faults in the IOMMU is moving data through a translation that does not
map its peer: peer-to-peer copies and GPUDirect RDMA then hang, crash or deliver zeros while
CUDA still reports success (NVIDIA/cuda-samples#48, fixed by turning the IOMMU off;
research/checks.md §2). The fix is the IOMMU in passthrough (or off), and ACS redirect off
between the devices; the P2P probe shows whether the bytes arrive.

What a fault means is data: the Intel fault reasons, AMD-Vi event types and SMMUv3 event ids
of the failure catalogue (``pcidoc/catalogue/data/iommu.toml``, after the kernel's own tables).
Fault lines the kernel-log reader cannot place (the two-line DMAR format of older kernels, a
redacted line quoted in a question) are catalogue lines of this check, reported when the reader
found no fault.
"""

from __future__ import annotations

from pcidoc._lazyre import lazy
from pcidoc.doctor.context import Context
from pcidoc.doctor.devices import device_label, relation, subject
from pcidoc.doctor.evidence import line, read_logs
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.signatures import catalogue_table, signature_findings
from pcidoc.model.evidence import SignatureHit
from pcidoc.model.kernel import IommuFault, KernelLog
from pcidoc.model.report import Evidence

CHECK_ID = "kernel.iommu-fault"
_REASON_RE = lazy(r"^(0x)?([0-9a-fA-F]{1,3})h?\b\s*(.*)$")

_FIX = [
    "Put the IOMMU in passthrough for host devices: boot with `iommu=pt` (Intel also "
    "`intel_iommu=on iommu=pt`), or disable VT-d / AMD-Vi (IOMMU) in the BIOS when nothing "
    "needs it.",
    "Turn ACS redirect off on the switch ports between the GPUs/NICs (`pcidoc check --only "
    "p2p.acs-iommu` shows them).",
    "Verify the data: `pcidoc probe p2p` (it compares peer and host-staged "
    "copies); until fixed, `NCCL_P2P_DISABLE=1` avoids the broken peer path.",
]


_SEVERITY = {"gpu": "fail", "nic": "fail", "unknown": "warn", "other": "info", "igpu": "info"}
_WHAT = {
    "other": "not a GPU or NIC, so not peer traffic",
    "igpu": "Intel's integrated graphics (its fixed address), not a device of the GPU "
    "interconnect: such faults come from the firmware's or the graphics driver's own mappings "
    "(often at boot)",
}
INTEL_IGPU = "0000:00:02.0"
"""Intel's integrated graphics device: bus 0, device 2, function 0 on every Intel platform that
has one (Intel's processor datasheets, "Integrated Graphics Device"); DMAR is Intel's IOMMU."""


def _related(ctx: Context, bus: str | None, faults: list[IommuFault], gpus: list[str]) -> str:
    related = relation(ctx, [bus], faults[0].driver, gpus)
    if related == "unknown" and faults[0].iommu == "DMAR" and bus == INTEL_IGPU:
        return "igpu"
    return related


def dmar_reason(reason: str | None) -> str | None:
    """What an Intel fault reason (``06 PTE Read access is not set``, ``0x05 ...``) means."""
    found = _REASON_RE.match((reason or "").strip())
    if found is None:
        return None
    rows = catalogue_table("dmar_fault_reason")
    text = found.group(3).strip().lower()
    for row in rows.values():
        if text and row["name"].lower() == text:
            return str(row["meaning"])
    digits = found.group(2)
    number = int(digits, 16 if found.group(1) or not digits.isdecimal() else 10)
    known = rows.get(f"{number:02d}")
    return str(known["meaning"]) if known else None


def fault_meaning(fault: IommuFault) -> str | None:
    """What one fault means, by its IOMMU's table."""
    if fault.iommu == "DMAR":
        return dmar_reason(fault.reason)
    if fault.iommu == "AMD-Vi":
        return catalogue_table("amd_vi_event").get(fault.kind or "", {}).get("meaning")
    for row in catalogue_table("smmu_v3_event").values():
        if row["name"] == fault.kind:
            return str(row["meaning"])
    return None


def _explained(faults: list[IommuFault]) -> list[Evidence]:
    meanings: dict[str, str] = {}
    for fault in faults:
        meaning = fault_meaning(fault)
        key = fault.reason if fault.iommu == "DMAR" else fault.kind
        if meaning and key and key not in meanings and len(meanings) < 3:
            meanings[key] = meaning
    if not meanings:
        return []
    return [
        Evidence(
            label="what the fault means", value="; ".join(f"{k}: {v}" for k, v in meanings.items())
        )
    ]


def _catalogue_lines(ctx: Context, logs: list[KernelLog]) -> list[Finding]:
    """IOMMU fault lines of the catalogue the reader made no fault of."""
    read = any(log.iommu_faults for log in logs)

    def keep(_hit: SignatureHit) -> bool:
        return not read

    return signature_findings(ctx, CHECK_ID, keep)


@check(CHECK_ID)
def iommu_fault(ctx: Context) -> list[Finding]:
    """IOMMU faults grouped by device; GPUs and NICs fail."""
    missing, logs, gpus = read_logs(ctx, CHECK_ID)
    if missing is not None:
        return _catalogue_lines(ctx, []) or [missing]
    by_device: dict[str | None, list[IommuFault]] = {}
    for log in logs:
        for fault in log.iommu_faults:
            by_device.setdefault(fault.bus_id, []).append(fault)
    findings: list[Finding] = []
    for bus, faults in by_device.items():
        kinds = ", ".join(dict.fromkeys(f.kind for f in faults if f.kind)) or "fault"
        iommu = faults[0].iommu
        addresses = list(dict.fromkeys(f.address for f in faults if f.address))
        related = _related(ctx, bus, faults, gpus)
        findings.append(
            Finding(
                _SEVERITY[related],  # type: ignore[arg-type]
                f"{len(faults)} {iommu} IOMMU fault(s) ({kinds}) on {device_label(ctx, bus, gpus)}"
                f" at {len(addresses)} address(es): "
                + _WHAT.get(
                    related, "its DMA (peer-to-peer or RDMA) goes through the IOMMU and is refused"
                ),
                subjects=[s for s in [subject(ctx, bus)] if s],
                evidence=[line(f.quote, subject(ctx, bus)) for f in faults[:3]]
                + _explained(faults),
                remediation=[] if related == "igpu" else _FIX,
                confidence="high" if related in ("gpu", "nic") else "medium",
            )
        )
    findings += _catalogue_lines(ctx, logs)
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

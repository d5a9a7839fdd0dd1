"""Pure data models of pcidoc (no I/O): facts, measurements, captures and reports.

Names are resolved lazily (PEP 562) so that importing a light submodule such as
``pcidoc.model.formats`` or ``pcidoc.model.links`` does not build every pydantic model class.
"""

from __future__ import annotations

from importlib import import_module

_WHERE: dict[str, str] = {
    "AcsControl": "facts",
    "CAPTURE_SCHEMA": "capture",
    "Capture": "capture",
    "CheckResult": "report",
    "CollectiveMeasurement": "measurements",
    "CollectiveRow": "measurements",
    "Driver": "facts",
    "Evidence": "report",
    "Fabric": "facts",
    "FabricManager": "facts",
    "Gpu": "facts",
    "GpuDirect": "facts",
    "GpuProcess": "facts",
    "Host": "facts",
    "Iommu": "facts",
    "Measurements": "measurements",
    "MemcpyKind": "measurements",
    "Mig": "facts",
    "Nic": "facts",
    "NumaNode": "facts",
    "NvLink": "facts",
    "Origin": "capture",
    "OriginSource": "capture",
    "P2PMatrixMeasurement": "measurements",
    "P2PStatus": "facts",
    "P2PVerification": "measurements",
    "PcieHop": "facts",
    "PcieLink": "facts",
    "ProbeError": "measurements",
    "REPORT_SCHEMA": "report",
    "Report": "report",
    "ReportSource": "report",
    "SampleInfo": "capture",
    "ScalingMeasurement": "measurements",
    "ScalingPoint": "measurements",
    "SweepPoint": "measurements",
    "Topology": "facts",
    "TransferMeasurement": "measurements",
    "Virtualization": "facts",
    "WorkloadEvidence": "measurements",
}

__all__ = [
    "CAPTURE_SCHEMA",
    "REPORT_SCHEMA",
    "AcsControl",
    "Capture",
    "CheckResult",
    "CollectiveMeasurement",
    "CollectiveRow",
    "Driver",
    "Evidence",
    "Fabric",
    "FabricManager",
    "Gpu",
    "GpuDirect",
    "GpuProcess",
    "Host",
    "Iommu",
    "Measurements",
    "MemcpyKind",
    "Mig",
    "Nic",
    "NumaNode",
    "NvLink",
    "Origin",
    "OriginSource",
    "P2PMatrixMeasurement",
    "P2PStatus",
    "P2PVerification",
    "PcieHop",
    "PcieLink",
    "ProbeError",
    "Report",
    "ReportSource",
    "SampleInfo",
    "ScalingMeasurement",
    "ScalingPoint",
    "SweepPoint",
    "Topology",
    "TransferMeasurement",
    "Virtualization",
    "WorkloadEvidence",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'pcidoc.model' has no attribute {name!r}")
    value = getattr(import_module(f"pcidoc.model.{module}"), name)
    globals()[name] = value
    return value


TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

    from pcidoc.model.capture import (
        CAPTURE_SCHEMA,
        Capture,
        Origin,
        OriginSource,
        SampleInfo,
    )
    from pcidoc.model.facts import (
        AcsControl,
        Driver,
        Fabric,
        FabricManager,
        Gpu,
        GpuDirect,
        GpuProcess,
        Host,
        Iommu,
        Mig,
        Nic,
        NumaNode,
        NvLink,
        P2PStatus,
        PcieHop,
        PcieLink,
        Topology,
        Virtualization,
    )
    from pcidoc.model.measurements import (
        CollectiveMeasurement,
        CollectiveRow,
        Measurements,
        MemcpyKind,
        P2PMatrixMeasurement,
        P2PVerification,
        ProbeError,
        ScalingMeasurement,
        ScalingPoint,
        SweepPoint,
        TransferMeasurement,
        WorkloadEvidence,
    )
    from pcidoc.model.report import (
        REPORT_SCHEMA,
        CheckResult,
        Evidence,
        Report,
        ReportSource,
    )

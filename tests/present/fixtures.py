"""Hand-made reports for presenter tests (synthetic machines, no check modules involved)."""

from __future__ import annotations

from pcidoc.model import (
    CheckResult,
    CollectiveMeasurement,
    CollectiveRow,
    Evidence,
    OriginSource,
    P2PMatrixMeasurement,
    ProbeError,
    Report,
    ReportSource,
    ScalingMeasurement,
    ScalingPoint,
    TransferMeasurement,
)
from pcidoc.model.capture import Capture
from tests.builders import machine, square

GENERATED_AT = "2024-05-01T12:00:00Z"
VERSION = "0.0.0-test"


def eight_gpu_capture() -> Capture:
    """8 × H100, NV18 everywhere, two NUMA nodes, 4 NICs on even GPUs (synthetic)."""
    cap = machine(
        8,
        link="NV18",
        numa_nodes=2,
        nics=["NIC0", "NIC1", "NIC2", "NIC3"],
        nic_links={(0, "NIC0"): "PIX", (2, "NIC1"): "PIX", (4, "NIC2"): "PIX", (6, "NIC3"): "PIX"},
        kind="synthetic",
    )
    return cap


def checks() -> list[CheckResult]:
    """One result of every severity, in a deliberately unsorted order."""
    return [
        CheckResult(
            id="nvml.health",
            title="NVML and driver health",
            severity="pass",
            summary="NVML 12.550 reached 8 GPUs; driver and library agree",
        ),
        CheckResult(
            id="pcie.link-speed",
            title="PCIe link speed",
            severity="warn",
            summary="GPU2 at Gen1 x16 under load (max Gen5 x16)",
            evidence=[
                Evidence(label="current link", value="Gen1 x16", subject="GPU2"),
                Evidence(label="max link", value="Gen5 x16", subject="GPU2"),
                Evidence(label="pinned H2D", value=3.1, unit="GB/s", subject="GPU2"),
            ],
            remediation=[
                "Reseat GPU2 or move it to another slot; check `nvidia-smi -q -i 2 -d PCIE`.",
                "Check the BIOS PCIe speed setting for the slot.",
            ],
            subjects=["GPU2"],
            confidence="medium",
        ),
        CheckResult(
            id="transfer.pinned",
            title="Pinned host-device bandwidth",
            severity="skip",
            summary="no transfer measurements",
            needs="run `pcidoc check --probes quick` on the GPU machine",
            confidence="low",
        ),
        CheckResult(
            id="p2p.acs-iommu",
            title="ACS and IOMMU on the P2P path",
            severity="fail",
            summary="ACS Request Redirect on at bridge 0000:41:00.0 between GPU2 and GPU3",
            evidence=[
                Evidence(label="ACS control", value="SrcValid+ ReqRedir+", subject="0000:41:00.0"),
                Evidence(label="IOMMU translating", value=True),
            ],
            remediation=[
                "Disable ACS redirect: `sudo setpci -s 41:00.0 ECAP_ACS+0x6.w=0000`.",
                "Make it permanent with a boot script; not applicable inside a VM.",
            ],
            subjects=["GPU2", "GPU3"],
        ),
        CheckResult(
            id="numa.nic-affinity",
            title="NIC placement",
            severity="info",
            summary="GPU1, GPU3, GPU5, GPU7 have no NIC behind their PCIe switch",
        ),
        CheckResult(
            id="scaling.allreduce",
            title="All-reduce bus bandwidth",
            severity="error",
            summary="the check crashed: ValueError: boom",
            remediation=["Please report this with the capture (`pcidoc capture --redact`)."],
            confidence="low",
        ),
        CheckResult(
            id="transfer.pageable",
            title="Pageable vs pinned",
            severity="skip",
            summary="no transfer measurements",
            needs="run `pcidoc check --probes quick` on the GPU machine",
            confidence="low",
        ),
    ]


def small_report(capture: Capture | None = None) -> Report:
    """A fixed report over the synthetic 8-GPU machine (deterministic: golden tests)."""
    results = checks()
    summary = {sev: 0 for sev in ("pass", "info", "warn", "fail", "skip", "error")}
    for result in results:
        summary[result.severity] += 1
    from pcidoc.doctor.topology_notes import topology_notes

    machine = capture or eight_gpu_capture()
    return Report(
        pcidoc_version=VERSION,
        generated_at=GENERATED_AT,
        source=ReportSource(kind="capture", path="h100-synthetic.json"),
        machine=machine,
        checks=results,
        summary=summary,
        worst="fail",
        topology_notes=topology_notes(machine),  # the doctor computes them; presenters render
    )


def measured_report() -> Report:
    """The small report with a few (synthetic) measurements and an import origin."""
    cap = eight_gpu_capture()
    cap.origin.kind = "import"
    cap.origin.sources = [
        OriginSource(
            path="topo.txt",
            formats=["nvidia-smi-topo"],
            read=["topology 8 GPUs + 4 NICs"],
            warnings=["NIC rows after NIC3 were cut off"],
            citation="https://github.com/example/issue/1",
        )
    ]
    cap.measurements.transfers = [
        TransferMeasurement(
            gpu=0,
            direction="h2d",
            memory="pinned",
            bandwidth_gbps=53.2,
            size_bytes=256 << 20,
            method="cuda-events",
        ),
        TransferMeasurement(
            gpu=0,
            direction="h2d",
            memory="pageable",
            bandwidth_gbps=9.8,
            size_bytes=256 << 20,
            method="host-timer",
        ),
    ]
    cap.measurements.p2p = [
        P2PMatrixMeasurement(
            kind="bandwidth",
            p2p="enabled",
            unit="GB/s",
            gpus=[0, 1, 2],
            values=square(3, 370.5, diag=1500.0),
            method="ce",
        ),
    ]
    cap.measurements.collectives = [
        CollectiveMeasurement(
            op="all_reduce",
            backend="nccl",
            ranks=8,
            gpus=list(range(8)),
            rows=[
                CollectiveRow(
                    size_bytes=1 << 30, busbw_gbps=410.0, algbw_gbps=234.3, time_us=4583.0
                )
            ],
            avg_busbw_gbps=380.1,
            tool="nccl-tests",
        ),
    ]
    cap.measurements.scaling = [
        ScalingMeasurement(
            backend="nccl",
            points=[
                ScalingPoint(ranks=1, throughput_samples_per_s=100.0, efficiency=1.0),
                ScalingPoint(ranks=8, throughput_samples_per_s=720.0, efficiency=0.9),
            ],
            slowest_edge="NV18",
        ),
    ]
    cap.measurements.probe_errors = [
        ProbeError(probe="p2p", message="deadline of 60 s passed", kind="timeout"),
    ]
    report = small_report(cap)
    report.source = ReportSource(kind="import", path="topo.txt")
    return report

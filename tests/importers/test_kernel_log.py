"""The kernel-log and link-history importers on small inputs, and the checks over them: every
timestamp style, Xid/AER/IOMMU parsing, bus-id joining, flap counting vs idle downclock.
The log lines are synthetic (written in the kernel's and the driver's formats)."""

from __future__ import annotations

import pytest

from pcidoc.collect.importers import import_texts
from pcidoc.doctor import run
from pcidoc.model.capture import Capture
from pcidoc.model.report import Report, ReportSource

XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python3, GPU has fallen off the bus."


def _import(text: str) -> Capture:
    return import_texts([("log.txt", text)]).capture


def _klog(c: Capture):  # type: ignore[no-untyped-def]
    assert c.evidence is not None and c.evidence.kernel_logs
    return c.evidence.kernel_logs[0]


def _report(text: str) -> Report:
    return run(_import(text), ReportSource(kind="import"), generated_at="2026-01-01T00:00:00Z")


@pytest.mark.parametrize(
    "prefix",
    [
        "[ 1234.567890] ",
        "[Mon Jan  5 10:11:12 2026] ",
        "[  +0.000844] ",
        "[  +0,000844] ",  # dmesg -H under a locale whose decimal mark is a comma
        "[ 1234,567890] ",
        "[Jan 5 10:11] ",
        "Jan  5 10:11:12 gpu-node-7 kernel: ",
        "Jan  5 10:11:12 gpu-node-7 kernel: [ 1234.567890] ",
        "2026-01-05T10:11:12.123456+0000 gpu-node-7 kernel: ",
        "kernel: ",
        "kern  :warn  : [ 1234.567890] ",
        "",
    ],
)
def test_xid_is_read_under_every_timestamp_style(prefix: str) -> None:
    c = _import(f"some unrelated line\n{prefix}{XID}\nanother unrelated line\n")
    (event,) = _klog(c).xids
    assert (event.code, event.bus_id, event.pid, event.process) == (
        79,
        "0000:3b:00.0",
        4242,
        "python3",
    )
    assert event.text == "GPU has fallen off the bus"


def test_times_are_seconds_since_boot_or_since_the_first_stamp() -> None:
    mono = _klog(_import(f"[  10.5] {XID}\n[  70.5] {XID}\n")).xids
    assert [e.time_s for e in mono] == [10.5, 70.5]
    rel = _klog(_import(f"[  +1.000000] {XID}\n[  +0.500000] {XID}\n")).xids
    assert [e.time_s for e in rel] == [1.0, 1.5]
    comma = _klog(_import(f"[  +1,000000] {XID}\n[  +0,500000] {XID}\n")).xids
    assert [e.time_s for e in comma] == [1.0, 1.5]
    wall = _klog(
        _import(f"Jan  5 10:11:12 h kernel: {XID}\nJan  5 10:12:12 h kernel: {XID}\n")
    ).xids
    assert [e.time_s for e in wall] == [0.0, 60.0]


def test_redacted_bus_id_keeps_the_event_and_the_nvlink_number() -> None:
    (event,) = _klog(
        _import("kernel: NVRM: Xid (PCI:...): 145, RLW_RXPIPE Nonfatal Link 11\n")
    ).xids
    assert (event.code, event.bus_id, event.link) == (145, None, 11)


AER = """\
[  100.000001] pcieport 0000:00:01.0: AER: Corrected error message received from 0000:3b:00.0
[  100.000002] nvidia 0000:3b:00.0: PCIe Bus Error: severity=Correctable, type=Physical Layer, \
(Receiver ID)
[  100.000003] nvidia 0000:3b:00.0:   device [10de:2330] error status/mask=00000001/0000e000
[  100.000004] nvidia 0000:3b:00.0:    [ 0] RxErr                  (First)
"""


def test_aer_event_has_severity_layer_bits_and_reporting_port() -> None:
    (event,) = _klog(_import(AER)).aer
    assert (event.severity, event.layer, event.agent, event.bus_id, event.port) == (
        "corrected",
        "Physical Layer",
        "Receiver ID",
        "0000:3b:00.0",
        "0000:00:01.0",
    )
    assert (event.vendor_device, event.status, event.bits) == ("10de:2330", "00000001", ["RxErr"])


def test_one_corrected_error_is_info_a_burst_is_a_storm_uncorrectable_fails() -> None:
    assert _report(AER).check("kernel.aer").severity == "info"  # type: ignore[union-attr]
    burst = AER + AER.replace("100.00", "100.10") + AER.replace("100.00", "100.20")
    assert _report(burst).check("kernel.aer").severity == "warn"  # type: ignore[union-attr]
    spread = AER + AER.replace("100.00", "400.00") + AER.replace("100.00", "900.00")
    assert _report(spread).check("kernel.aer").severity == "info"  # type: ignore[union-attr]
    fatal = AER.replace("severity=Correctable", "severity=Uncorrected (Fatal)")
    assert _report(fatal).check("kernel.aer").severity == "fail"  # type: ignore[union-attr]


def test_clean_log_with_firmware_first_passes_with_low_confidence() -> None:
    lines = [f"[    1.{i:06d}] usb 1-1: new device {i}" for i in range(10)]
    lines.append("[    2.000000] acpi PNP0A08:00: _OSC: platform does not support [AER LTR]")
    result = _report("\n".join(lines) + "\n").check("kernel.aer")
    assert result is not None and (result.severity, result.confidence) == ("pass", "low")
    assert "firmware" in result.summary
    native = "\n".join(lines[:-1]) + "\n[ 2.0] acpi PNP0A08:00: _OSC: OS now controls [PME AER]\n"
    result = _report(native).check("kernel.aer")
    assert result is not None and (result.severity, result.confidence) == ("pass", "high")


@pytest.mark.parametrize(
    ("line", "kind", "bus", "address"),
    [
        (
            "[ 5.1] DMAR: [DMA Read NO_PASID] Request device [3b:00.0] fault addr 0x7f3c0000 "
            "[fault reason 0x06] PTE Read access is not set",
            "DMA Read",
            "0000:3b:00.0",
            "0x7f3c0000",
        ),
        (
            "[ 5.1] DMAR: [DMA Write] Request device [0000:3b:00.0] fault addr 7f3c0000 "
            "[fault reason 05] PTE Write access is not set",
            "DMA Write",
            "0000:3b:00.0",
            "7f3c0000",
        ),
        (
            "[ 0.9] DMAR: [DMA Read NO_PASID] Request device [0x3b:0x00.0] fault addr 0x7f3c0000 "
            "[fault reason 0x07] Next page table ptr is invalid",
            "DMA Read",
            "0000:3b:00.0",
            "0x7f3c0000",
        ),
        (
            "[ 5.1] nvidia 0000:3b:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x000d "
            "address=0x1f0000000 flags=0x0020]",
            "IO_PAGE_FAULT",
            "0000:3b:00.0",
            "0x1f0000000",
        ),
        (
            "[ 5.1] AMD-Vi: Event logged [IO_PAGE_FAULT device=3b:00.0 domain=0x000d "
            "address=0x000000001f000000 flags=0x0020]",
            "IO_PAGE_FAULT",
            "0000:3b:00.0",
            "0x000000001f000000",
        ),
    ],
)
def test_iommu_faults(line: str, kind: str, bus: str, address: str) -> None:
    (fault,) = _klog(_import(line + "\n")).iommu_faults
    assert (fault.kind, fault.bus_id, fault.address) == (kind, bus, address)


def test_bus_ids_join_the_capture_gpus_in_a_mixed_import() -> None:
    query = (
        "==============NVSMI LOG==============\n\nAttached GPUs : 1\n"
        "GPU 00000000:3B:00.0\n    Product Name : NVIDIA H100 80GB HBM3\n"
    )
    fault = (
        "[ 5.1] nvidia 0000:3b:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x000d "
        "address=0x1f0000000 flags=0x0020]\n"
    )
    capture = import_texts([("q.txt", query), ("dmesg.txt", fault + f"[ 6.0] {XID}\n")]).capture
    assert [g.bus_id for g in capture.gpus] == ["0000:3b:00.0"]
    report = run(capture, ReportSource(kind="import"), generated_at="2026-01-01T00:00:00Z")
    iommu, xid = report.check("kernel.iommu-fault"), report.check("kernel.xid")
    assert iommu is not None and iommu.severity == "fail" and iommu.subjects == ["GPU0"]
    assert "GPU0 (0000:3b:00.0)" in iommu.summary
    assert xid is not None and xid.severity == "fail" and xid.subjects == ["GPU0"]


def test_link_notice_width_limit_on_a_gpu_warns_speed_only_is_info() -> None:
    notice = (
        "[ 3.0] nvidia 0000:3b:00.0: 63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s "
        "PCIe x8 link at 0000:3a:00.0 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)\n"
    )
    (event,) = _klog(_import(notice)).link_notices
    assert (event.limited_by, event.speed_gts, event.width, event.capable_width) == (
        "0000:3a:00.0",
        8.0,
        8,
        16,
    )
    assert _report(notice).check("pcie.link-flap").severity == "warn"  # type: ignore[union-attr]
    # Speed only, at the lowest speed a link idles at: possibly power saving at enumeration.
    speed_only = notice.replace("8.0 GT/s PCIe x8 link at", "2.5 GT/s PCIe x16 link at")
    assert _report(speed_only).check("pcie.link-flap").severity == "info"  # type: ignore[union-attr]


def _csv(readings: list[list[tuple[int, int, int]]]) -> str:
    header = "pci.bus_id, pcie.link.gen.current, pcie.link.width.current, utilization.gpu [%]\n"
    blocks = []
    for reading in readings:
        rows = [
            f"00000000:{0x18 + i:02X}:00.0, {gen}, {width}, {util} %"
            for i, (gen, width, util) in enumerate(reading)
        ]
        blocks.append("\n".join(rows))
    return header + "\n".join(blocks) + "\n"


def test_flap_counting_tells_idle_downclock_from_instability() -> None:
    idle = _csv([[(1, 16, 0), (5, 16, 0)], [(5, 16, 0), (1, 16, 0)], [(1, 16, 0), (5, 16, 0)]])
    history = _import(idle).evidence.link_histories[0]  # type: ignore[union-attr]
    assert (history.readings, len(history.traces)) == (3, 2)
    assert _report(idle).check("pcie.link-flap").severity == "info"  # type: ignore[union-attr]
    width = _csv([[(5, 16, 90)], [(5, 8, 90)], [(5, 16, 90)]])
    assert _report(width).check("pcie.link-flap").severity == "warn"  # type: ignore[union-attr]
    loaded = _csv([[(5, 16, 95)], [(3, 16, 95)], [(5, 16, 95)]])
    result = _report(loaded).check("pcie.link-flap")
    assert result is not None and result.severity == "warn" and "under load" in result.summary
    stable = _csv([[(5, 16, 90)], [(5, 16, 90)]])
    assert _report(stable).check("pcie.link-flap").severity == "pass"  # type: ignore[union-attr]


def test_repeated_nvidia_smi_q_pcie_readings() -> None:
    block = (
        "Timestamp : Mon Jan  5 10:11:{s:02d} 2026\nAttached GPUs : 1\n"
        "GPU 00000000:3B:00.0\n    PCI\n        GPU Link Info\n            PCIe Generation\n"
        "                Max                       : 5\n"
        "                Current                   : {gen}\n"
        "            Link Width\n                Max                       : 16x\n"
        "                Current                   : {width}x\n"
    )
    text = "\n".join(block.format(s=s, gen=g, width=w) for s, g, w in ((0, 5, 16), (10, 5, 4)))
    trace = _import(text).evidence.link_histories[0].traces[0]  # type: ignore[union-attr]
    assert [(s.gen, s.width, s.max_width) for s in trace.samples] == [(5, 16, 16), (5, 4, 16)]


GPU_ENUM = "[ 1.0] pci 0000:3b:00.0: [10de:2330] type 00 class 0x030200 PCIe Endpoint\n"


def test_gpus_enumerated_in_the_log_are_known_without_a_capture() -> None:
    assert _klog(_import(GPU_ENUM + f"[ 6.0] {XID}\n")).nvidia_devices == ["0000:3b:00.0"]


def test_storm_on_a_port_that_is_not_a_gpus_link_is_only_info() -> None:
    # An Intel PCH root port reporting for a 1 GbE NIC: a well-known nuisance, not a GPU link.
    storm = "".join(
        f"[ 50.{i}00000] pcieport 0000:00:1c.5: AER: Corrected error received: 0000:03:00.0\n"
        f"[ 50.{i}00001] r8169 0000:03:00.0: PCIe Bus Error: severity=Corrected, "
        "type=Physical Layer, (Receiver ID)\n"
        for i in range(5)
    )
    alone = _report(storm).check("kernel.aer")
    assert alone is not None and alone.severity == "info"
    assert "not on a GPU" in alone.summary
    on_gpu = storm.replace("0000:03:00.0", "0000:3b:00.0").replace("r8169", "nvidia")
    assert _report(GPU_ENUM + on_gpu).check("kernel.aer").severity == "warn"  # type: ignore[union-attr]


def test_iommu_fault_on_another_device_is_info_when_the_gpus_are_known() -> None:
    igpu = (
        "[ 9.0] DMAR: [DMA Read NO_PASID] Request device [00:02.0] fault addr 0x1000 "
        "[fault reason 0x06] PTE Read access is not set\n"
    )
    assert _report(GPU_ENUM + igpu).check("kernel.iommu-fault").severity == "info"  # type: ignore[union-attr]
    on_gpu = igpu.replace("[00:02.0]", "[3b:00.0]")
    assert _report(on_gpu).check("kernel.iommu-fault").severity == "warn"  # type: ignore[union-attr]
    assert _report(GPU_ENUM + on_gpu).check("kernel.iommu-fault").severity == "fail"  # type: ignore[union-attr]


def test_firmware_reported_aer_and_dpc_containment() -> None:
    text = (
        "[ 5.0] GHES: APEI firmware first mode is enabled by APEI bit and WHEA _OSC.\n"
        "[100.0] {1}[Hardware Error]: event severity: recoverable\n"
        "[100.0] {1}[Hardware Error]:   section_type: PCIe error\n"
        "[100.1] nvidia 0000:3b:00.0: AER: aer_status: 0x00004000, aer_mask: 0x00000000\n"
        "[100.1] nvidia 0000:3b:00.0: AER:    [14] CmpltTO                (First)\n"
        "[100.1] nvidia 0000:3b:00.0: AER: aer_layer=Transaction Layer, aer_agent=Requester ID\n"
    )
    log = _klog(_import(text))
    (event,) = log.aer
    assert (event.severity, event.bus_id, event.layer, event.bits) == (
        "non-fatal",
        "0000:3b:00.0",
        "Transaction Layer",
        ["CmpltTO"],
    )
    assert log.firmware_first is not None
    assert _report(text).check("kernel.aer").severity == "fail"  # type: ignore[union-attr]
    dpc = "[200.0] pcieport 0000:00:03.0: DPC: containment event, status:0x1f01 source:0x0000\n"
    assert _report(dpc).check("kernel.aer").severity == "fail"  # type: ignore[union-attr]


def test_nvswitch_sxid_lines_warn_and_fatal_ones_fail() -> None:
    nonfatal = (
        "[ 9.0] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress "
        "non-posted PRIV error\n"
    )
    result = _report(nonfatal).check("kernel.xid")
    assert result is not None and result.severity == "warn" and "link 32" in result.summary
    fatal = "[ 9.0] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 30 LTSSM Fault\n"
    assert _report(fatal).check("kernel.xid").severity == "fail"  # type: ignore[union-attr]


def test_healthy_boot_log_has_no_warn_or_fail() -> None:
    lines = [
        GPU_ENUM.strip(),
        "[ 1.1] pci 0000:3b:00.0: 504.112 Gb/s available PCIe bandwidth (32.0 GT/s PCIe x16 link)",
        "[ 1.2] pci 0000:5e:00.0: 2.000 Gb/s available PCIe bandwidth, limited by 2.5 GT/s "
        "PCIe x1 link at 0000:5d:00.0 (capable of 31.504 Gb/s with 8.0 GT/s PCIe x4 link)",
        "[ 2.0] acpi PNP0A08:00: _OSC: OS now controls [PCIeHotplug PME AER PCIeCapability]",
        "[ 2.1] pcieport 0000:3a:00.0: AER: enabled with IRQ 30",
        "[ 8.0] nvidia-nvlink: Nvlink Core is being initialized, major device number 510",
        "[ 8.1] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.158.01",
        "[ 9.0] nvidia 0000:3b:00.0: enabling device (0000 -> 0002)",
        "[ 9.5] DMAR: IOMMU enabled",
        "[12.0] NVRM: Xid (PCI:0000:3b:00): 13, pid=77, name=python, Graphics Exception",
    ]
    report = _report("\n".join(lines) + "\n")
    for check_id in ("kernel.xid", "kernel.aer", "kernel.iommu-fault", "pcie.link-flap"):
        result = report.check(check_id)
        assert result is not None and result.severity in ("pass", "info", "skip"), check_id


def test_idle_link_below_its_generation_is_info_and_kernel_findings_reach_prom() -> None:
    from pcidoc.fleet.prom import report_registry

    header = "pci.bus_id, pcie.link.gen.current, pcie.link.gen.max, pcie.link.width.current\n"
    idle = header + "00000000:3B:00.0, 1, 4, 16\n00000000:3B:00.0, 1, 4, 16\n"
    result = _report(idle).check("pcie.link-flap")
    assert result is not None and result.severity == "info" and "Gen1 of Gen4" in result.summary
    report = _report(f"[ 6.0] {XID}\n")
    samples = {
        (s.labels["check"], s.labels["subject"]): s.value
        for metric in report_registry(report, node="n1").collect()
        for s in metric.samples
        if s.name == "pcidoc_check_severity"
    }
    assert samples[("kernel.xid", "0000:3b:00.0")] == 5.0  # fail


def test_redaction_removes_syslog_host_names_from_kernel_quotes() -> None:
    import json

    from pcidoc.collect.capture import redact_capture

    text = f"Sep 19 16:18:02 gpu-node-secret kernel: [ 5.0] {XID}\n"
    capture = _import(text)
    assert _klog(capture).hosts == ["gpu-node-secret"]
    red = redact_capture(capture)
    assert "gpu-node-secret" not in json.dumps(red.model_dump(mode="json"))
    assert [x.code for x in _klog(red).xids] == [79]


def test_transitions_too_fast_for_power_management_warn_without_load_data() -> None:
    rows = ["timestamp, pci.bus_id, pcie.link.gen.current, pcie.link.width.current"]
    for i in range(40):  # a change every second for 40 s, utilisation not recorded
        rows.append(f"2026/08/01 10:00:{i:02d}.000, 00000000:01:00.0, {1 if i % 2 else 5}, 16")
    result = _report("\n".join(rows) + "\n").check("pcie.link-flap")
    assert result is not None and result.severity == "warn" and "retraining" in result.summary
    slow = rows[:1] + [
        f"2026/08/01 10:0{i}:00.000, 00000000:01:00.0, {1 if i % 2 else 5}, 16" for i in range(5)
    ]  # a change a minute: idle power saving
    assert _report("\n".join(slow) + "\n").check("pcie.link-flap").severity == "info"  # type: ignore[union-attr]


def test_a_port_that_trains_below_the_cards_speed_is_the_slots_ceiling() -> None:
    """As pcie.link-speed judges a slot-limited GPU (warn): a Gen4 card behind a Gen3 root port.
    At 2.5 GT/s the same notice may be a link idling at enumeration (info)."""
    notice = (
        "[ 0.58] pci 0000:0b:00.0: 126.016 Gb/s available PCIe bandwidth, limited by 8.0 GT/s "
        "PCIe x16 link at 0000:00:03.1 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)\n"
    )
    result = _report(notice).check("pcie.link-flap")
    assert result is not None and result.severity == "warn"
    assert "ceiling" in result.summary and "50 %" in result.summary
    idle = notice.replace("8.0 GT/s PCIe x16 link at", "2.5 GT/s PCIe x16 link at")
    assert _report(idle).check("pcie.link-flap").severity == "info"  # type: ignore[union-attr]


def test_narrow_link_notice_of_an_unknown_device_warns_of_another_driver_is_info() -> None:
    notice = (
        "[ 3.0] pci 0000:01:00.0: 31.504 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe "
        "x4 link at 0000:00:1c.0 (capable of 126.016 Gb/s with 8.0 GT/s PCIe x16 link)\n"
    )
    assert _report(notice).check("pcie.link-flap").severity == "warn"  # type: ignore[union-attr]
    nvme = notice.replace("pci 0000:01:00.0", "nvme 0000:01:00.0")
    assert _report(nvme).check("pcie.link-flap").severity == "info"  # type: ignore[union-attr]


# ARM SMMUv3 event dumps as drivers/iommu/arm/arm-smmu-v3 prints them (synthetic lines in the
# kernel's format: a header and the event's four words; 6.15+ adds a decoded line).
_SMMU3_RAW = (
    "[ 80.1] arm-smmu-v3 arm-smmu-v3.5.auto: event 0x10 received:\n"
    "[ 80.1] arm-smmu-v3 arm-smmu-v3.5.auto: \t0x0000010000000010\n"
    "[ 80.1] arm-smmu-v3 arm-smmu-v3.5.auto: \t0x0000020800000000\n"
    "[ 80.1] arm-smmu-v3 arm-smmu-v3.5.auto: \t0x00000000fe7c0000\n"
    "[ 80.1] arm-smmu-v3 arm-smmu-v3.5.auto: \t0x0000000000000000\n"
)
_SMMU3_DECODED = (
    "[ 80.1] arm-smmu-v3 arm-smmu-v3.5.auto: event: F_TRANSLATION client: 0009:01:00.0 "
    "sid: 0x100 ssid: 0 iova: 0xfe7c0000 ipa: 0\n"
    '[ 80.1] arm-smmu-v3 arm-smmu-v3.5.auto: unpriv data write s1 "Input address caused '
    'fault" stag: 0\n'
)


def test_smmu_v3_raw_event_is_one_fault_with_its_stream_and_address() -> None:
    (fault,) = _klog(_import(_SMMU3_RAW)).iommu_faults
    assert (fault.iommu, fault.kind, fault.address) == ("SMMU", "F_TRANSLATION", "0xfe7c0000")
    assert fault.reason == "StreamID 0x100"
    assert fault.bus_id is None  # a StreamID is not a PCI address on every platform


def test_smmu_v3_decoded_line_stands_for_the_raw_words_above_it() -> None:
    (fault,) = _klog(_import(_SMMU3_RAW + _SMMU3_DECODED)).iommu_faults
    assert (fault.kind, fault.bus_id, fault.address) == (
        "F_TRANSLATION",
        "0009:01:00.0",
        "0xfe7c0000",
    )
    assert fault.reason == "StreamID 0x100"


def test_smmu_v3_events_back_to_back_and_a_cut_dump_each_count_once() -> None:
    second = _SMMU3_RAW.replace("event 0x10", "event 0x04").replace("0x00000000fe7c", "0x1")
    cut = "".join(_SMMU3_RAW.splitlines(keepends=True)[:3])
    faults = _klog(_import(_SMMU3_RAW + second + cut)).iommu_faults
    assert [(f.kind, f.address) for f in faults] == [
        ("F_TRANSLATION", "0xfe7c0000"),
        ("C_BAD_STE", None),  # a configuration error: no faulting address
        ("F_TRANSLATION", None),  # the log ends after two of its words
    ]
    report = _report(_SMMU3_RAW)
    assert report.check("kernel.iommu-fault").severity in ("warn", "fail")  # type: ignore[union-attr]


def test_a_journal_in_another_locale_is_a_kernel_log() -> None:
    text = (
        "jan. 29 20:50:17 kevin kernel: pcieport 0000:00:1c.5: AER: Corrected error received: "
        "id=00e5\n"
        "jan. 29 20:50:17 kevin kernel: pcieport 0000:00:1c.5: PCIe Bus Error: "
        "severity=Corrected, type=Physical Layer, id=00e5(Receiver ID)\n"
    )
    log = _klog(_import(text))
    assert log.hosts == ["kevin"] and [e.severity for e in log.aer] == ["corrected"]


def test_kernel_lines_behind_a_log_shippers_packaging() -> None:
    text = (
        "192.168.11.119: kern: warning: [2026-04-22T21:30:51.494604223Z]: NVRM: Xid "
        "(PCI:0000:0b:00): 119, pid=11431, name=x, Timeout after 45s of waiting for RPC "
        "response from GPU3 GSP!\n"
        "19:15:34  NVRM: Xid (PCI:0000:9a:00): 31, pid=477445, name=python3, channel 0x2\n"
    )
    log = _klog(_import(text))
    assert [(x.code, x.bus_id) for x in log.xids] == [(119, "0000:0b:00.0"), (31, "0000:9a:00.0")]
    prose = "the docs say that after the upgrade NVRM: Xid (PCI:0000:0b:00): 119, pid=1 happens\n"
    assert not _klog(_import(prose + "[ 1.0] nvidia 0000:0b:00.0: x\n" * 20)).xids


def test_notices_that_alternate_for_one_device_are_a_retraining_link() -> None:
    def notice(t: float, speed: str, width: int) -> str:
        return (
            f"[{t}] nvidia 0000:01:00.0: 8.000 Gb/s available PCIe bandwidth, limited by "
            f"{speed} GT/s PCIe x{width} link at 0000:00:01.0 (capable of 252.048 Gb/s with "
            "16.0 GT/s PCIe x16 link)"
        )

    lines = [notice(1.0, "2.5", 16), notice(90.0, "16.0", 8), notice(91.0, "2.5", 16)]
    result = _report("\n".join(lines) + "\n").check("pcie.link-flap")
    assert result is not None and result.severity == "warn"
    assert "2 link states in 3 notices" in result.summary and "retrained" in result.summary


def test_an_nvtop_screen_is_one_reading_of_each_link() -> None:
    text = (
        "Device 0 [GeForce GTX 1080 Ti] PCIe GEN 3@16x RX: 0.000 KiB/s TX: 0.000 KiB/s\n"
        "Device 1 [GeForce GTX 1080 Ti] PCIe GEN 1@16x RX: 0.000 KiB/s TX: 0.000 KiB/s\n"
    )
    result = _report(text).check("pcie.link-flap")
    assert result is not None and result.severity == "info"
    assert "GPU1: at Gen1" in result.summary and "under load" in result.summary
    sentence = "On my box GPU 1 runs at Gen1 x16 while GPU 0 is at Gen3 x16, is that bad?\n"
    from pcidoc.errors import PcidocError

    with pytest.raises(PcidocError, match="no supported output"):
        _report(sentence)


def test_a_fallen_off_the_bus_message_under_comma_stamps_names_its_gpu() -> None:
    """The driver's multi-line message in probe, with ``dmesg -H`` stamps of a comma locale."""
    text = (
        "[  +0,000150] NVRM: The NVIDIA GPU 0000:04:00.0\n"
        "              NVRM: (PCI ID: 10de:1140) installed in this system has\n"
        "              NVRM: fallen off the bus and is not responding to commands.\n"
        "[  +0,000045] nvidia: probe of 0000:04:00.0 failed with error -1\n"
    )
    (event,) = _klog(_import(text)).fallen_off_bus
    assert event.bus_id == "0000:04:00.0"

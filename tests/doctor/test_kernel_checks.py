"""The ``kernel.*`` checks read what a code, an error bit or a fault reason means from the
failure catalogue (``pcidoc/catalogue/data/{xid,aer,iommu,kernel}.toml``): every Xid code of the
table explained with its own severity, cascades judged by their cause, GSP-era lines that name
the GPU by index, AER bits and IOMMU fault reasons explained, catalogue lines the kernel-log
reader keeps no event for reported once, healthy boot logs kept quiet.

The log lines are synthetic, written in the drivers' and the kernel's formats (the sources are
cited in the catalogue entries)."""

from __future__ import annotations

import pytest

from pcidoc import catalogue
from pcidoc.collect.importers import import_texts, kernel_log
from pcidoc.doctor import run
from pcidoc.doctor.checks.kernel import aer, iommu_fault, xid
from pcidoc.model.report import CheckResult, ReportSource

SEVERITIES = ("info", "warn", "fail")
CLASSES = {
    "application", "engine", "memory", "pcie", "nvlink", "c2c", "firmware", "driver",
    "hardware", "power", "recovery", "security", "virtualization", "unused",
}  # fmt: skip


def _check(text: str, check_id: str) -> CheckResult:
    capture = import_texts([("dmesg.txt", text)]).capture
    report = run(capture, ReportSource(kind="import"), only=[check_id], generated_at="x")
    result = report.check(check_id)
    assert result is not None
    return result


def _xid(code: int, text: str, bus: str = "3b", pid: int | None = 4242) -> str:
    who = f"pid={pid}, name=python3, " if pid is not None else ""
    return f"[ 100.0] NVRM: Xid (PCI:0000:{bus}:00): {code}, {who}{text}\n"


# ----------------------------------------------------------------------------- the Xid table


def test_the_xid_table_is_nvidias_whole_catalogue_with_our_judgement() -> None:
    codes = xid.xid_codes()
    assert set(range(1, 173)) <= set(codes), "every code of NVIDIA's catalogue (1-172)"
    actions = catalogue.table("xid_action")
    for row in codes.values():
        assert row.klass in CLASSES, row
        assert row.severity in SEVERITIES and (row.repeat or "info") in SEVERITIES, row
        assert row.action in actions and (row.then is None or row.then in actions), row
        assert row.meaning.strip() and row.name.isupper(), row
    links = {74, 79, 136, 144, 145, 146, 147, 148, 149, 150, 155, 167}
    assert {c for c in links if codes[c].severity == "fail"} == links
    assert all(codes[c].severity == "fail" for c in (48, 64, 95, 119, 120, 140, 171, 172))
    assert all(codes[c].severity == "info" for c in (13, 31, 43, 45, 68, 69, 109))
    assert codes[63].severity == "info" and codes[92].severity == "warn"


def test_every_code_of_the_table_is_explained_with_its_own_severity() -> None:
    codes = xid.xid_codes()
    log = "".join(
        _xid(code, "event text", bus=f"{(code % 250) + 1:02x}", pid=None) for code in sorted(codes)
    )
    result = _check(log, "kernel.xid")
    by_code = {}
    for note in result.findings:
        head = note.summary.split(" (", 1)[0]
        by_code[int(head.removeprefix("Xid "))] = note
    assert set(by_code) == set(codes)
    for code, row in codes.items():
        note = by_code[code]
        assert note.severity == row.severity, (code, note.summary)
        assert row.name in note.summary and row.meaning in note.summary


def test_application_xids_are_info_with_their_meaning_and_say_the_links_are_fine() -> None:
    result = _check(_xid(13, "Graphics SM Warp Exception") + _xid(13, "x", bus="5e"), "kernel.xid")
    assert result.severity == "info"
    assert "out-of-range access" in result.summary and "x2" in result.summary
    assert set(result.subjects) == {"0000:3b:00.0", "0000:5e:00.0"}
    assert any("PCIe or NVLink" in step for step in result.remediation)


def test_unknown_codes_are_counted_not_judged() -> None:
    result = _check(_xid(250, "something new") + _xid(250, "again"), "kernel.xid")
    assert result.severity == "info" and "Xid 250 x2" in result.summary
    assert "not in pcidoc's table" in result.summary


# ----------------------------------------------------------------------------- cascades


def test_xid45_cascade_is_judged_by_the_nvlink_xid_it_names() -> None:
    # Only the consequences are in the log (NVIDIA/open-gpu-kernel-modules#1150).
    log = _xid(45, "Ch 00000001 caused by previous Xid 149", bus="dc") + _xid(
        45, "Ch 00000002 caused by previous Xid 149", bus="dc"
    )
    result = _check(log, "kernel.xid")
    assert result.severity == "fail"
    assert result.summary.startswith("Xid 149 (NVLINK_NETIR_ERROR), named as the cause of 2 Xid 45")
    assert "its own Xid 149 line is not in the log" in result.summary
    assert result.remediation[0].startswith("Act on Xid 149 first")


def test_a_nonfatal_nvlink_xid_warns_and_fails_once_it_kills_applications() -> None:
    nonfatal = _xid(
        145, "RLW_REMAP Nonfatal XC0 i0 Link 05 (0x00000004 0x00000001 0x0 0x0)", pid=None
    )
    alone = _check(nonfatal, "kernel.xid")
    assert alone.severity == "warn" and "NVLink 5" in alone.summary
    killed = nonfatal + _xid(45, "Ch 00000003 caused by previous Xid 145")
    result = _check(killed, "kernel.xid")
    assert result.severity == "fail" and len(result.findings) == 1
    assert "Xid 145 (NVLINK_RLW_ERROR) x1, named as the cause of 1 Xid 45" in result.summary
    fatal = _xid(149, "NETIR_LINK_EVT/NETIR_LINK_DOWN Fatal XC0 i0 Link 05 (0x11 0x0 0x0 0x0)")
    assert _check(fatal, "kernel.xid").severity == "fail"


def test_the_first_xid_of_a_gpu_is_named() -> None:
    log = _xid(79, "GPU has fallen off the bus.") + _xid(
        154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"
    )
    result = _check(log, "kernel.xid")
    first = next(n for n in result.findings if n.summary.startswith("Xid 79"))
    assert "the first Xid of this GPU in the log" in first.summary
    assert all("first Xid" not in n.summary for n in result.findings if n is not first)
    redacted = log.replace("PCI:0000:3b:00", "PCI:...")  # two codes, but maybe two GPUs
    assert "first Xid" not in " ".join(n.summary for n in _check(redacted, "kernel.xid").findings)


def test_xid_154_follows_the_recovery_action_it_prints() -> None:
    reboot = _xid(154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)")
    assert _check(reboot, "kernel.xid").severity == "fail"
    cleared = _xid(154, "GPU recovery action changed from 0x2 (Node Reboot Required) to 0x0 (None)")
    assert _check(cleared, "kernel.xid").severity == "info"


def test_one_gpu_faulting_for_several_processes_warns() -> None:
    fault = "Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS faulted @ 0x7fd7_90743000"
    one_program = "".join(_xid(31, fault, pid=77) for _ in range(3))
    assert _check(one_program, "kernel.xid").severity == "info"
    three = "".join(_xid(31, fault, pid=pid) for pid in (77, 78, 79))
    result = _check(three, "kernel.xid")
    assert result.severity == "warn" and "from 3 processes" in result.summary
    assert result.confidence == "high"
    assert any("dcgmi diag" in step for step in result.remediation)


# ----------------------------------------------------------------------------- devices


def test_a_line_that_names_the_gpu_by_index_names_the_device() -> None:
    # issue 30: Xid 137 "on unknown device" when the line says GPU0 (NVIDIA/nccl#2241).
    line = (
        "kernel: NVRM: Xid (PCI:...): 137, RLW_RXPIPE interrupt hit on link 11 on GPU0: "
        "PRIV Error\n"
    )
    result = _check(line, "kernel.xid")
    assert result.severity == "warn" and result.subjects == ["GPU0"]
    assert "unknown device" not in result.summary and "GPU0" in result.summary
    assert "NVLink 11" in result.summary


def test_a_mig_attributed_xid_keeps_its_pci_address() -> None:
    line = (
        "[ 99.1] NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel "
        "(0x9). RST: No, D-RST: No\n"
    )
    result = _check(line, "kernel.xid")
    assert result.severity == "warn" and result.subjects == ["0000:01:00.0"]


def test_catalogue_lines_of_a_lost_gpu_are_reported_once() -> None:
    probe = "[ 1843.4] NVRM: The NVIDIA probe routine failed for 1 device(s).\n"
    alone = _check(probe, "kernel.xid")
    assert alone.severity == "fail" and "could not probe a GPU" in alone.summary
    fallen = (
        "[ 1843.3] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
        "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
        "               NVRM: fallen off the bus and is not responding to commands.\n"
    )
    both = _check(fallen + probe, "kernel.xid")
    assert both.severity == "fail" and len(both.findings) == 1
    assert "probe failed" in both.summary


# ----------------------------------------------------------------------------- AER


AER_FATAL = """\
[  100.1] pcieport 0000:00:03.0: AER: Uncorrected (Fatal) error message received from 0000:00:03.0
[  100.1] pcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)
[  100.1] pcieport 0000:00:03.0:   device [8086:6f08] error status/mask=00004020/00000000
[  100.1] pcieport 0000:00:03.0:    [ 5] Surprise Down Error    (First)
[  100.1] pcieport 0000:00:03.0:    [14] Completion Timeout
"""  # noqa: E501


def test_aer_bits_are_explained_from_the_table_short_and_spelled_out() -> None:
    assert aer.aer_bit("Completion Timeout") == ("CmpltTO", catalogue.table("aer_error")["CmpltTO"])
    assert aer.aer_bit("SDES") is not None and aer.aer_bit("NoSuchBit") is None
    result = _check(AER_FATAL, "kernel.aer")
    assert result.severity == "fail" and len(result.findings) == 1
    meant = next(e for e in result.evidence if e.label == "what the AER bits mean")
    assert "SDES = surprise down" in meant.text() and "CmpltTO = completion timeout" in meant.text()
    assert any("slot, riser or the GPU's power" in step for step in result.remediation)


def test_every_bit_name_linux_prints_is_in_the_table() -> None:
    short = [
        "RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr",
        "HeaderOF", "Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt",
        "RxOF", "MalfTLP", "ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP",
        "AtomicOpBlocked", "TLPBlockedErr", "PoisonTLPBlocked",
    ]  # fmt: skip
    spelled = [
        "Receiver Error", "Bad TLP", "Replay Timer Timeout", "Completion Timeout",
        "Surprise Down Error", "Data Link Protocol", "Poisoned TLP", "Unsupported Request",
    ]  # fmt: skip
    assert all(aer.aer_bit(name) is not None for name in short + spelled)


def test_an_error_received_line_without_its_report_is_reported_cautiously() -> None:
    corrected = "[ 50.0] pcieport 0000:00:1c.5: AER: Corrected error received: 0000:00:1c.5\n"
    result = _check(corrected, "kernel.aer")
    assert result.severity == "info" and "report" in result.summary
    fatal = AER_FATAL.splitlines(keepends=True)[0]
    assert _check(fatal, "kernel.aer").severity == "fail"
    # With its report, the reader's event says it all: no second finding.
    assert len(_check(AER_FATAL, "kernel.aer").findings) == 1


def test_boot_lines_of_error_reporting_are_no_fault() -> None:
    boot = "".join(
        f"[    2.{i}] {line}\n"
        for i, line in enumerate(
            [
                "pcieport 0000:00:01.1: AER: enabled with IRQ 26",
                "pcieport 0000:00:01.1: PME: Signaling with IRQ 26",
                "pcieport 0000:00:01.1: DPC: enabled with IRQ 26",
                "pcieport 0000:00:01.1: DPC: error containment capabilities: Int Msg #0, RPExt+ "
                "PoisonedTLP+ SwTrigger+ RP PIO Log 6, DL_ActiveErr+",
                "acpi PNP0A08:00: _OSC: OS now controls [PCIeHotplug PME AER PCIeCapability]",
            ]
        )
    )
    for check_id in ("kernel.aer", "log.signatures"):
        assert _check(boot, check_id).severity in ("pass", "skip"), check_id


# ----------------------------------------------------------------------------- IOMMU


@pytest.mark.parametrize(
    ("reason", "meaning"),
    [
        ("06 PTE Read access is not set", "does not map"),
        ("0x05 PTE Write access is not set", "for writing"),
        ("05", "for writing"),
        ("48", "invalid root table"),  # 0x30, printed with %02d
        ("2 whatever the text", "no context entry"),
        ("0c", "page table entry"),
        ("99 Unknown", None),
    ],
)
def test_dmar_fault_reasons_as_linux_prints_them(reason: str, meaning: str | None) -> None:
    found = iommu_fault.dmar_reason(reason)
    assert (found is None) if meaning is None else (found is not None and meaning in found)


def test_iommu_faults_are_explained() -> None:
    line = (
        "[ 5.1] DMAR: [DMA Read NO_PASID] Request device [3b:00.0] fault addr 0x7f3c0000 "
        "[fault reason 06] PTE Read access is not set\n"
    )
    result = _check(line, "kernel.iommu-fault")
    meant = next(e for e in result.evidence if e.label == "what the fault means")
    assert "a DMA or peer-to-peer read the IOMMU refused" in meant.text()
    assert len(result.findings) == 1  # the catalogue line of the same fault adds nothing


IGPU_FAULT = (
    "[    0.938401] DMAR: [DMA Read NO_PASID] Request device [00:02.0] fault addr 0x70ad5000 "
    "[fault reason 0x07] Next page table ptr is invalid\n"
)


def test_dmar_faults_of_intels_integrated_graphics_are_info() -> None:
    """Bus 0, device 2 is Intel's integrated graphics: not a device of the interconnect."""
    result = _check(IGPU_FAULT, "kernel.iommu-fault")
    assert (result.severity, result.remediation) == ("info", [])
    assert "integrated graphics" in result.summary
    elsewhere = _check(IGPU_FAULT.replace("[00:02.0]", "[3b:00.0]"), "kernel.iommu-fault")
    assert elsewhere.severity == "warn"  # an unknown device may be a GPU or a NIC


def test_a_gpu_the_driver_names_at_00_02_0_is_a_gpu() -> None:
    """In a VM a passed-through GPU may sit on bus 0: the driver's own line says what it is."""
    named = "[    0.5] nvidia 0000:00:02.0: enabling device (0000 -> 0003)\n" + IGPU_FAULT
    assert _check(named, "kernel.iommu-fault").severity == "fail"


def test_the_two_line_dmar_format_and_quoted_lines_are_found() -> None:
    old = (
        "[ 301.2] DMAR:[DMA Write] Request device [02:00.0] fault addr 7f3c0000\n"
        "[ 301.2] DMAR:[fault reason 05] PTE Write access is not set\n"
    )
    assert _check(old, "kernel.iommu-fault").severity in ("warn", "fail")
    question = (
        "After enabling the IOMMU, benchmarking throws lots of errors such as:\n\n"
        "`DMAR: [DMA Write] Request Device [  :  :  .  ] fault addr`\n"
        "`DMAR: [fault reason 05] PTE Write access is not set`\n"
    )
    result = _check(question, "kernel.iommu-fault")
    assert result.severity == "warn"
    assert any("PTE Write access is not set" in n.summary for n in result.findings)


def test_the_smmu_event_table_and_the_readers_names_agree() -> None:
    table = {int(k, 16): row["name"] for k, row in catalogue.table("smmu_v3_event").items()}
    assert kernel_log._SMMU3_EVENTS.items() <= table.items()


def test_a_healthy_vt_d_boot_log_is_recognised_and_quiet() -> None:
    lines = [
        "DMAR: IOMMU enabled",
        "DMAR: Host address width 46",
        "DMAR: DRHD base: 0x000000d37fc000 flags: 0x0",
        "DMAR: dmar0: reg_base_addr d37fc000 ver 1:0 cap 8d2078c106f0466 ecap f020df",
        "DMAR-IR: IOAPIC id 8 under DRHD base  0xd37fc000 IOMMU 0",
        "DMAR-IR: Enabled IRQ remapping in x2apic mode",
        "iommu: Default domain type: Translated",
        "DMAR: Intel(R) Virtualization Technology for Directed I/O",
    ]
    text = "".join(f"kern  :info  : [Fri Apr  7 00:04:33 2023] {line}\n" for line in lines)
    capture = import_texts([("dmesg.txt", text)]).capture
    report = run(capture, ReportSource(kind="import"), generated_at="x")
    assert capture.evidence is not None and capture.evidence.signatures
    assert all(c.severity not in ("warn", "fail") for c in report.checks), [
        (c.id, c.summary) for c in report.checks if c.severity in ("warn", "fail")
    ]


LINK_LOST = (
    "[ 50.0] pcieport 0000:00:01.2: AER: Uncorrectable (Non-Fatal) error received: 0000:63:00.0\n"
    "[ 50.1] nvidia 0000:63:00.0: AER: can't recover (no error_detected callback)\n"
    "[ 50.2] pcieport 0000:62:00.0: AER: device recovery failed\n"
)
XID_31 = "[ {t}] NVRM: Xid (PCI:0000:{bus}:00): 31, pid=77, name=python, MMU Fault: FAULT_PDE\n"


def test_an_application_xid_after_its_gpus_link_failed_is_read_as_its_consequence() -> None:
    after = _check(LINK_LOST + XID_31.format(t="60.0", bus="63"), "kernel.xid")
    assert after.severity == "info"
    assert "consequence of the lost link" in after.summary and "before it" in after.summary
    assert after.remediation == [
        "Act on the link failure first (kernel.aer): this Xid is its consequence."
    ]
    before = _check(XID_31.format(t="10.0", bus="63") + LINK_LOST, "kernel.xid")
    assert "lost link" not in before.summary  # the Xid came first: the program's, as usual
    other_gpu = _check(LINK_LOST + XID_31.format(t="60.0", bus="3b"), "kernel.xid")
    assert "lost link" not in other_gpu.summary
    unstamped = (LINK_LOST + XID_31.format(t="60.0", bus="63")).replace("[ 50.0] ", "")
    unstamped = "".join(line.split("] ", 1)[-1] + "\n" for line in unstamped.splitlines())
    assert "in the same log" in _check(unstamped, "kernel.xid").summary

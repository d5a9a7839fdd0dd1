"""The NVIDIA driver's reasons for not taking a GPU (a kernel module of the wrong flavour, a
release that does not support it, GSP firmware that does not boot) lead over the generic lines
that follow them ("RmInitAdapter failed", "probe routine failed"), whose advice (cold reboot,
Above 4G decoding) does not fit these causes. The lines are built from the driver's format
strings (open-gpu-kernel-modules osapi.c, osinit.c, kernel_gsp.c) and the proprietary module's
message as quoted in its issue tracker."""

from __future__ import annotations

import pytest

from pcidoc import catalogue
from pcidoc.collect.importers import import_texts
from pcidoc.doctor.runner import run
from pcidoc.model.report import Report, ReportSource

RM_INIT = "[    3.82] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:1050)\n"
RM_MINOR = "[    3.82] NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0\n"
PROBE = "[    3.90] NVRM: The NVIDIA probe routine failed for 1 device(s).\n"

NEEDS_OPEN = (
    "[    3.80] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2d58)\n"
    "[    3.80] NVRM: installed in this system requires use of the NVIDIA open kernel modules.\n"
)
NO_GSP = (  # journalctl -k: one kernel message, its later lines indented without a tag
    "Aug 02 10:00:01 host kernel: NVRM: The NVIDIA GPU 0000:09:00.0 (PCI ID: 10de:1d01)\n"
    "                             NVRM: installed in this system is not supported by open\n"
    "                             NVRM: nvidia.ko because it does not include the required GPU\n"
    "                             NVRM: System Processor (GSP).\n"
)
DATACENTER_ONLY = (
    "[    3.51] NVRM: Open nvidia.ko is only ready for use on Data Center GPUs.\n"
    "[    3.51] NVRM: To force use of Open nvidia.ko on other GPUs, see the\n"
    "[    3.51] NVRM: 'OpenRmEnableUnsupportedGpus' kernel module parameter described\n"
    "[    3.51] NVRM: in the README.\n"
)
UNSUPPORTED = (
    "[    4.30] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1021)\n"
    "[    4.30] NVRM: installed in this system is not supported by the\n"
    "[    4.30] NVRM: NVIDIA 580.95.05 driver release.\n"
)
GSP_BOOT = """\
[   12.80] NVRM: GPU0 s_executeBooterUcode_TU102: Booter failed with non-zero error code: 0x5
[   12.80] NVRM: GPU0 _kgspBootGspRm: unexpected WPR2 already up, cannot proceed with booting GSP
[   12.80] NVRM: GPU0 _kgspBootGspRm: (the GPU is likely in a bad state and may need to be reset)
[   12.80] NVRM: GPU0 RmInitAdapter: Cannot initialize GSP firmware RM
"""
GSP_ENGINE = (
    "[    3.59] NVRM kgspInitRm_IMPL: missing NVDEC0 engine, cannot initialize GSP-RM\n"
    "[    3.59] NVRM RmInitAdapter: Cannot initialize GSP firmware RM\n"
)
GSP_FIRMWARE = (
    "[    4.40] nvidia 0000:01:00.0: Direct firmware load for nvidia/550.54.14/gsp_ga10x.bin "
    "failed with error -2\n"
    "[    4.40] NVRM: GPU0 RmInitAdapter: Cannot initialize GSP firmware RM\n"
)


def report(text: str) -> Report:
    capture = import_texts([("dmesg.txt", text)]).capture
    return run(capture, ReportSource(kind="import", path="dmesg.txt"), generated_at="x")


def lead(text: str) -> str:
    """The summary of the first finding "What to do first" lists (worst check first)."""
    first = next(c for c in report(text).sorted_checks() if c.severity == "fail")
    return first.findings[0].summary if first.findings else first.summary


@pytest.mark.parametrize(
    ("reason", "title"),
    [
        (NEEDS_OPEN, "GPU needs the NVIDIA open kernel modules"),
        (NO_GSP, "Open NVIDIA kernel module on a GPU without GSP"),
        (DATACENTER_ONLY, "Open NVIDIA kernel module refused a non-data-center GPU"),
        (UNSUPPORTED, "GPU not supported by this NVIDIA driver release"),
        (GSP_BOOT, "NVIDIA driver could not boot the GPU's GSP firmware"),
        (GSP_ENGINE, "GSP firmware refused the GPU: an engine is missing"),
        (GSP_FIRMWARE, "NVIDIA GSP firmware file not found"),
    ],
    ids=["needs-open", "no-gsp", "datacenter-only", "unsupported", "gsp-boot", "gsp-engine",
         "gsp-firmware"],
)  # fmt: skip
@pytest.mark.parametrize("consequence", [RM_INIT + RM_MINOR, PROBE], ids=["rm-init", "probe"])
def test_the_drivers_reason_leads_over_the_generic_failure(
    reason: str, title: str, consequence: str
) -> None:
    assert lead(reason + consequence).startswith(title)
    # The same when a log viewer shows the newest line first.
    reversed_text = "".join(reversed((reason + consequence).splitlines(keepends=True)))
    assert lead(reversed_text).startswith(title)


def test_the_consequence_lines_are_carriers_and_alone_still_fail() -> None:
    for entry_id in (
        "kernel.nvrm.rm-init-adapter-failed",
        "kernel.nvrm.probe-failed",
        "kernel.nvrm.gsp-init-failed",
    ):
        entry = catalogue.entry(entry_id)
        assert entry is not None and entry.carrier, entry_id
    assert lead(RM_INIT).startswith("NVIDIA driver could not initialise the GPU")
    assert lead(PROBE).startswith("NVIDIA driver could not probe a GPU")
    assert lead("[ 3.59] NVRM: GPU0 RmInitAdapter: Cannot initialize GSP firmware RM\n").startswith(
        "NVIDIA driver could not initialise the GSP firmware"
    )


def test_a_multi_line_driver_message_is_one_finding_of_its_reason_line() -> None:
    hits = catalogue.scan(NO_GSP.splitlines()).hits
    assert [h.id for h in hits] == ["kernel.nvrm.open-module-needs-gsp"]
    hits = catalogue.scan(DATACENTER_ONLY.splitlines()).hits
    assert [h.id for h in hits] == ["kernel.nvrm.open-module-datacenter-only"]
    hits = catalogue.scan(UNSUPPORTED.splitlines()).hits
    assert [(h.id, h.values.get("version")) for h in hits] == [
        ("kernel.nvrm.unsupported-by-release", "580.95.05")
    ]


def test_the_fix_of_each_reason_is_not_the_generic_hardware_advice() -> None:
    generic = catalogue.entry("kernel.nvrm.rm-init-adapter-failed")
    assert generic is not None and "Read the NVRM lines just before it" in generic.fix
    fixes = {
        "kernel.nvrm.needs-open-modules": "open kernel modules",
        "kernel.nvrm.open-module-needs-gsp": "proprietary kernel module",
        "kernel.nvrm.open-module-datacenter-only": "NVreg_OpenRmEnableUnsupportedGpus=1",
        "kernel.nvrm.gsp-boot-failed": "roll the driver back",
        "kernel.nvrm.gsp-missing-engine": "proprietary kernel module",
    }
    for entry_id, words in fixes.items():
        entry = catalogue.entry(entry_id)
        assert entry is not None and words in entry.fix, entry_id
        assert "Above 4G" not in entry.fix, entry_id


def test_a_lost_gpu_still_hides_the_catalogue_lines_of_its_check() -> None:
    fallen = (
        "[ 1843.3] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
        "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
        "               NVRM: fallen off the bus and is not responding to commands.\n"
    )
    result = report(fallen + GSP_BOOT).check("kernel.xid")
    assert result is not None and result.severity == "fail"
    assert len(result.findings) == 1 and "fallen off the bus" in result.summary

"""Tests of the nvml.health check."""

from __future__ import annotations

import pytest

from pcidoc.doctor import run
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import load_checks
from pcidoc.doctor.runner import run_check
from pcidoc.model import Capture, ReportSource
from pcidoc.model.report import CheckResult
from tests.builders import machine

STAMP = "2026-01-01T00:00:00Z"


def result(cap: Capture) -> CheckResult:
    """The merged nvml.health result, as the engine builds it."""
    return run_check(load_checks()["nvml.health"], Context(cap))


def no_nvml(error: str | None, on_bus: int | None, container: str | None = None) -> Capture:
    """A live machine whose NVML did not initialise."""
    cap = machine(0)
    cap.driver.nvml_available = False
    cap.driver.nvml_error = error
    cap.driver.driver_version = None
    cap.driver.nvidia_pci_devices = on_bus
    cap.host.virtualization.container = container
    return cap


def test_healthy_live_machine_passes():
    cap = machine(4)
    cap.driver.nvidia_pci_devices = 4
    res = result(cap)
    assert res.severity == "pass"
    assert "550.54.15" in res.summary


@pytest.mark.parametrize(
    ("error", "on_bus", "severity", "needle", "remedy"),
    [
        ("DRIVER_NOT_LOADED", 4, "fail", "4 NVIDIA GPUs on the PCI bus", "modprobe nvidia"),
        ("LIBRARY_NOT_FOUND", 2, "fail", "libnvidia-ml.so.1", "--gpus all"),
        ("LIBRARY_NOT_FOUND", 0, "info", "no NVIDIA GPU on this machine", None),
        ("DRIVER_NOT_LOADED", 0, "info", "no NVIDIA GPU on this machine", None),
        ("LIBRARY_NOT_FOUND", None, "info", "cannot tell", "lspci -d 10de:"),
        ("DRIVER_NOT_LOADED", None, "fail", "GPUs are expected", "dkms status"),
        ("LIB_RM_VERSION_MISMATCH", 8, "fail", "different versions", "rmmod"),
        ("NO_PERMISSION", 8, "fail", "refused access", "/dev/nvidia*"),
        ("OPERATING_SYSTEM", 8, "fail", "blocked by the operating system", "cgroup"),
        ("UNKNOWN", 8, "fail", "UNKNOWN", "nvidia-smi"),
    ],
)
def test_nvml_unavailable_table(error, on_bus, severity, needle, remedy):
    res = result(no_nvml(error, on_bus))
    assert res.severity == severity, res.summary
    assert needle in res.summary
    if remedy:
        assert any(remedy in step for step in res.remediation), res.remediation


def test_version_mismatch_says_reboot_or_reload():
    res = result(no_nvml("LIB_RM_VERSION_MISMATCH", 8))
    text = " ".join(res.remediation)
    assert "Reboot" in text
    assert "modprobe nvidia" in text


def test_gpu_lost_fails_naming_the_gpu():
    cap = machine(4)
    cap.gpus[3].nvml_error = "GPU_IS_LOST"
    res = result(cap)
    assert res.severity == "fail"
    assert res.summary.startswith("GPU3")
    assert "fallen off the bus" in res.summary
    assert res.subjects == ["GPU3"]
    text = " ".join(res.remediation)
    assert "nvidia-bug-report.sh" in text
    assert "Drain the node" in text


def test_per_gpu_no_permission_in_a_container():
    cap = machine(2)
    cap.host.virtualization.container = "docker"
    cap.gpus[1].nvml_error = "NO_PERMISSION"
    res = result(cap)
    assert res.severity == "fail"
    assert "docker container" in res.summary


@pytest.mark.parametrize(("container", "severity"), [(None, "warn"), ("kubernetes", "info")])
def test_fewer_gpus_in_nvml_than_on_the_bus(container, severity):
    cap = machine(2)
    cap.driver.nvidia_pci_devices = 4
    cap.host.virtualization.container = container
    res = result(cap)
    assert res.severity == severity
    assert "2 of" in res.summary


def test_import_with_driver_version_is_info_never_pass():
    cap = machine(2, kind="import")
    res = result(cap)
    assert res.severity == "info"
    assert res.confidence == "low"
    assert "on the machine itself" in (res.needs or "")


def test_import_without_anything_is_a_skip():
    cap = machine(0, kind="import")
    cap.driver.driver_version = None
    res = result(cap)
    assert res.severity == "skip"
    assert res.needs


def test_import_showing_a_lost_gpu_fails():
    cap = machine(2, kind="import")
    cap.gpus[0].nvml_error = "GPU_IS_LOST"
    assert result(cap).severity == "fail"


def test_engine_survives_odd_driver_states():
    cap = no_nvml("lib_rm_version_mismatch", -1)  # lower case, impossible count
    cap.gpus = machine(1).gpus
    cap.gpus[0].nvml_error = ""
    report = run(cap, ReportSource(kind="synthetic"), only=["nvml.health"], generated_at=STAMP)
    assert report.checks[0].severity == "fail"

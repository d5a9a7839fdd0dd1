"""The NVML choke point: error mapping, enum tables, and PynvmlBackend over the real bindings
driven by a fake C library (no GPU needed)."""

from __future__ import annotations

import ctypes.util
import os
import sys
from pathlib import Path

import pytest

from pcidoc.collect.nvml import (
    NVLINK_VERSIONS,
    ConfCompute,
    NvmlBackend,
    NvmlError,
    PynvmlBackend,
    Unavailable,
    cuda_version_text,
    decode_fabric_health,
    fabric_status_name,
    format_uuid_bytes,
    nvlink_version_name,
    possible_cpu_count,
    query,
)
from tests.collect import fake_libnvml


def test_query_passes_values_and_maps_pcidoc_errors() -> None:
    assert query(lambda x: x + 1, 1) == 2
    result = query(lambda: (_ for _ in ()).throw(NvmlError("NOT_SUPPORTED")))
    assert result == Unavailable("NOT_SUPPORTED", "NVML: NOT_SUPPORTED")
    assert not result.fatal


@pytest.mark.parametrize(
    ("exc_name", "error", "reason"),
    [
        ("NVMLError_NotSupported", "NOT_SUPPORTED", "NVML: NOT_SUPPORTED"),
        ("NVMLError_NoPermission", "NO_PERMISSION", "NVML: NO_PERMISSION"),
        ("NVMLError_GpuIsLost", "GPU_IS_LOST", "NVML: GPU_IS_LOST"),
        (
            "NVMLError_FunctionNotFound",
            "FUNCTION_NOT_FOUND",
            "NVML: FUNCTION_NOT_FOUND (driver too old for this call)",
        ),
        ("NVMLError_LibRmVersionMismatch", "LIB_RM_VERSION_MISMATCH", None),
        ("NVMLError_LibraryNotFound", "LIBRARY_NOT_FOUND", None),
        ("NVMLError_DriverNotLoaded", "DRIVER_NOT_LOADED", None),
    ],
)
def test_query_maps_every_pynvml_error_class(exc_name: str, error: str, reason: str | None) -> None:
    import pynvml

    exc_class = getattr(pynvml, exc_name)

    def boom() -> None:
        raise exc_class()

    result = query(boom)
    assert isinstance(result, Unavailable)
    assert result.error == error
    assert result.reason == (reason or f"NVML: {error}")
    assert result.fatal is (error == "GPU_IS_LOST")


def test_query_maps_library_mismatch_wrapper_and_unexpected_errors() -> None:
    import pynvml

    def mismatch() -> None:
        raise pynvml.NVMLLibraryMismatchError("unversioned call")

    assert query(mismatch).error == "FUNCTION_NOT_FOUND"  # type: ignore[union-attr]
    unexpected = query(lambda: 1 / 0)
    assert isinstance(unexpected, Unavailable)
    assert unexpected.error == "UNEXPECTED"
    assert "ZeroDivisionError" in unexpected.reason


def test_importing_nvml_module_does_not_import_pynvml() -> None:
    import subprocess

    code = "import pcidoc.collect.nvml, sys; print('pynvml' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_nvlink_version_mapping_uses_the_enum_not_the_raw_integer() -> None:
    assert nvlink_version_name(3) == "2.2"
    assert nvlink_version_name(4) == "3.0"
    assert nvlink_version_name(6) == "4.0"
    assert nvlink_version_name(7) == "5.0"
    assert nvlink_version_name(0) is None
    assert nvlink_version_name(None) is None
    assert NVLINK_VERSIONS == {
        1: "1.0",
        2: "2.0",
        3: "2.2",
        4: "3.0",
        5: "3.1",
        6: "4.0",
        7: "5.0",
        8: "6.0",
    }


def test_fabric_decoding() -> None:
    assert decode_fabric_health(0) == []
    assert decode_fabric_health(None) == []
    # Every condition reporting "false" (2) and configuration "none" (1): healthy.
    healthy = 2 | (2 << 2) | (2 << 4) | (2 << 6) | (1 << 8)
    assert decode_fabric_health(healthy) == []
    bad = 1 | (2 << 2) | (1 << 6) | (5 << 8)
    assert decode_fabric_health(bad) == [
        "degraded_bandwidth",
        "access_timeout_recovery",
        "incorrect_configuration:insufficient_nvlinks",
    ]
    assert fabric_status_name(0) == "success"
    assert fabric_status_name(23) == "insufficient_resources"
    assert format_uuid_bytes(bytes(range(16))) == "00010203-0405-0607-0809-0a0b0c0d0e0f"
    assert cuda_version_text(12060) == "12.6"
    assert cuda_version_text(11080) == "11.8"


def test_pynvml_backend_is_a_backend() -> None:
    assert isinstance(PynvmlBackend(), NvmlBackend)


@pytest.mark.skipif(
    ctypes.util.find_library("nvidia-ml") is not None, reason="an NVIDIA driver is installed"
)
def test_pynvml_backend_without_driver_reports_library_not_found() -> None:
    backend = PynvmlBackend()
    error = backend.init()
    assert error is not None
    assert error.error == "LIBRARY_NOT_FOUND"
    assert backend.device_count() == Unavailable.from_name("UNINITIALIZED")
    backend.shutdown()  # harmless without a session


def test_calls_before_init_are_uninitialized() -> None:
    backend = PynvmlBackend()
    assert backend.name(0) == Unavailable.from_name("UNINITIALIZED")
    assert backend.p2p_status(0, 1, 0) == Unavailable.from_name("UNINITIALIZED")
    assert backend.conf_compute() == Unavailable.from_name("UNINITIALIZED")


def test_pynvml_backend_over_fake_c_library(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_libnvml.install(monkeypatch)
    backend = PynvmlBackend()
    assert backend.init() is None
    try:
        assert backend.driver_version() == "000.00-synthetic"
        assert backend.cuda_driver_version() == 12060
        assert backend.device_count() == 2
        assert backend.device_open(0) is None
        lost = backend.device_open(1)
        assert isinstance(lost, Unavailable)
        assert lost.error == "GPU_IS_LOST"
        assert backend.name(1) == lost  # every later call on that GPU says the same
        assert backend.name(0) == "Fake C-level GPU 0 (synthetic)"
        assert backend.pci_bus_id(0) == "0000:03:00.0"
        assert backend.architecture(0) == "hopper"
        assert backend.pcie_current_gen(0) == 4
        assert backend.pcie_max_width(0) == Unavailable.from_name("NOT_SUPPORTED")
        serial = backend.serial(0)  # symbol missing from the library: an old driver
        assert isinstance(serial, Unavailable)
        assert serial.reason == "NVML: FUNCTION_NOT_FOUND (driver too old for this call)"
        assert backend.mig_mode(0) == (False, True)
        assert (backend.cpu_affinity(0) or "").startswith("0-3,33")
        values = backend.field_values(0, [(197, 0), (198, 0), (94, 0)])
        assert values == [123_456_789_012, Unavailable.from_name("NOT_SUPPORTED"), 7]
        assert backend.nvlink_state(0, 0) is True
        assert backend.nvlink_state(0, 5) == Unavailable.from_name("INVALID_ARGUMENT")
        assert backend.nvlink_version(0, 0) == 4
        assert backend.nvlink_remote_bus_id(0, 0) == "0000:a0:00.0"
        assert backend.nvlink_remote_type(0, 0) == "switch"
        fabric = backend.fabric_info(0)
        assert not isinstance(fabric, Unavailable)
        assert (fabric.state, fabric.clique_id, fabric.health_mask) == (3, 5, 1)
        processes = backend.compute_processes(0)
        assert isinstance(processes, Unavailable)
        assert processes.error == "FUNCTION_NOT_FOUND"
        assert backend.conf_compute() == ConfCompute(enabled=True, multi_gpu_mode="protected_pcie")
    finally:
        backend.shutdown()


def _backend(monkeypatch: pytest.MonkeyPatch, lib: fake_libnvml.FakeLibNvml, **kwargs: object):
    fake_libnvml.install(monkeypatch, lib)
    return PynvmlBackend(**kwargs)  # type: ignore[arg-type]


def test_a_failed_handle_is_asked_again_not_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = fake_libnvml.FakeLibNvml()
    backend = _backend(monkeypatch, lib)
    assert backend.init() is None
    try:
        assert backend.device_open(1) == Unavailable.from_name("GPU_IS_LOST")
        lib.lost.clear()  # the GPU answers again (it was busy, or came back after a reset)
        assert backend.device_open(1) is None
        assert backend.name(1) == "Fake C-level GPU 1 (synthetic)"
        calls = lib.handle_calls
        backend.name(1)
        assert lib.handle_calls == calls  # a handle that worked is reused
    finally:
        backend.shutdown()


def test_after_the_last_shutdown_every_call_is_uninitialized(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lib = fake_libnvml.FakeLibNvml()
    backend = _backend(monkeypatch, lib)
    assert backend.init() is None
    assert backend.init() is None
    assert backend.name(0) == "Fake C-level GPU 0 (synthetic)"
    backend.shutdown()
    assert backend.device_count() == 2  # one session still open
    backend.shutdown()
    assert lib.refs == 0
    uninitialized = Unavailable.from_name("UNINITIALIZED")
    assert backend.name(0) == uninitialized
    assert backend.device_count() == uninitialized
    assert backend.topology_common_ancestor(0, 1) == uninitialized
    assert backend.fabric_info(0) == uninitialized
    assert backend.conf_compute() == uninitialized


def test_the_fake_library_itself_refuses_calls_without_a_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pynvml = fake_libnvml.install(monkeypatch)
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        pynvml.nvmlDeviceGetCount()


def test_cpu_affinity_mask_covers_every_possible_cpu_id(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cpu = tmp_path / "devices" / "system" / "cpu"
    cpu.mkdir(parents=True)
    (cpu / "possible").write_text("0-255\n")
    backend = _backend(monkeypatch, fake_libnvml.FakeLibNvml(), sys_root=str(tmp_path))
    assert backend.init() is None
    try:
        assert backend.cpu_affinity(0) == "0-3,33,200"
    finally:
        backend.shutdown()


def test_possible_cpu_count_reads_sysfs_and_never_undercounts(tmp_path: Path) -> None:
    cpu = tmp_path / "devices" / "system" / "cpu"
    cpu.mkdir(parents=True)
    (cpu / "possible").write_text("0-3,64-67\n")
    assert possible_cpu_count(str(tmp_path)) == max(68, os.cpu_count() or 1)
    assert possible_cpu_count(str(tmp_path / "missing")) == max(1, os.cpu_count() or 1)


def test_old_bindings_returning_bytes_give_text(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_libnvml.install(monkeypatch)
    old = fake_libnvml.old_bindings("11.495")
    assert old.nvmlDeviceGetName is not None
    backend = PynvmlBackend(old)
    assert backend.init() is None
    try:
        assert backend.driver_version() == "000.00-synthetic"
        assert backend.nvml_version() == "00.000.00-synthetic"
        assert backend.name(0) == "Fake C-level GPU 0 (synthetic)"
        assert backend.uuid(0) == "GPU-00000000-0000-4000-8000-000000000000"
        assert backend.pci_bus_id(0) == "0000:03:00.0"
    finally:
        backend.shutdown()


@pytest.mark.parametrize("branch", ["R535", "R550", "R570", "R580"])
def test_field_ids_follow_the_driver_branch(monkeypatch: pytest.MonkeyPatch, branch: str) -> None:
    backend = _backend(monkeypatch, fake_libnvml.FakeLibNvml(branch=branch))
    assert backend.init() is None
    try:
        values = backend.field_values(0, [(197, 0), (94, 0), (165, 0), (219, 0)])
        assert not isinstance(values, Unavailable)
        pcie_bytes, replays, state, effective = values
        has_bytes = branch in ("R570", "R580")
        assert pcie_bytes == (
            123_456_789_012 if has_bytes else Unavailable.from_name("NOT_SUPPORTED")
        )
        assert (replays, state) == (7, 2)
        assert effective == (1 if has_bytes else Unavailable.from_name("NOT_SUPPORTED"))
        assert backend.pcie_throughput(0, 0) == 2_000_000  # KB/s on every branch
        assert backend.pcie_throughput(0, 1) == 1_000_000
    finally:
        backend.shutdown()


def test_blackwell_has_no_dl_error_counters(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = _backend(monkeypatch, fake_libnvml.FakeLibNvml(architecture=10))
    assert backend.init() is None
    try:
        assert backend.architecture(0) == "blackwell"
        assert backend.nvlink_error_counter(0, 0, 0) == Unavailable.from_name("NOT_SUPPORTED")
        replay, recovery = backend.field_values(0, [(161, 0), (215, 0)])  # type: ignore[misc]
        assert replay == Unavailable.from_name("NOT_SUPPORTED")
        assert recovery == 4
    finally:
        backend.shutdown()


def test_r535_has_no_conf_compute_settings_call(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = _backend(monkeypatch, fake_libnvml.FakeLibNvml(branch="R535"))
    assert backend.init() is None
    try:
        assert backend.conf_compute() == ConfCompute(enabled=True, multi_gpu_mode=None)
    finally:
        backend.shutdown()

"""The NVML choke point: error mapping, enum tables, and PynvmlBackend over the real bindings
driven by a fake C library (no GPU needed)."""

from __future__ import annotations

import ctypes.util
import sys

import pytest

from pcidoc.collect.nvml import (
    NVLINK_VERSIONS,
    NvmlBackend,
    NvmlError,
    PynvmlBackend,
    Unavailable,
    cuda_version_text,
    decode_fabric_health,
    fabric_status_name,
    format_uuid_bytes,
    nvlink_version_name,
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
        assert backend.cpu_affinity(0) == "0-3,33"
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
        assert isinstance(backend.conf_compute(), Unavailable)
    finally:
        backend.shutdown()

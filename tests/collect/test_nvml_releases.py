"""PynvmlBackend through the real ``pynvml.py`` of every supported nvidia-ml-py release.

Each release's own module (downloaded once, see :mod:`tests.collect.nvml_releases`) runs over
:class:`tests.collect.fake_libnvml.FakeLibNvml`, which answers at the C level and writes the
structures as ``nvml.h`` lays them out. The releases differ exactly where pcidoc was wrong:
12.535 names the clique ``partitionId`` and sizes ``clusterUuid`` 80 bytes, 12.550 keeps 80
bytes in the versioned structure, 12.570/12.575 decode the UUID as text, and 12.535 has no
wrapper for the versioned call at all.
"""

from __future__ import annotations

import pytest

from pcidoc.collect import live
from pcidoc.collect.nvml import ConfCompute, FabricInfo, PynvmlBackend, Unavailable
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import load_checks
from pcidoc.doctor.runner import run_check
from tests.builders import machine
from tests.collect import nvml_releases
from tests.collect.fake_libnvml import FabricState, FakeLibNvml

RELEASES = nvml_releases.RELEASES
BINARY_UUID = bytes([0xFF, 0xFE, 0x00, 0x80, 0xC3, 0x28, 0xA0, 0xA1] * 2)
"""Not UTF-8, with a NUL inside: what a text decode or a ``c_char`` array cannot carry."""


@pytest.fixture(scope="session")
def release_files() -> dict:
    return nvml_releases.release_paths()


def _open(release_files: dict, version: str, lib: FakeLibNvml) -> PynvmlBackend:
    module = nvml_releases.load_release(release_files, version, lib)
    backend = PynvmlBackend(module)
    assert backend.init() is None
    return backend


@pytest.mark.parametrize("version", RELEASES)
def test_every_release_reads_the_device_basics(release_files: dict, version: str) -> None:
    lib = FakeLibNvml()
    backend = _open(release_files, version, lib)
    try:
        assert backend.driver_version() == "000.00-synthetic"
        assert backend.device_count() == 2
        assert backend.device_open(1) == Unavailable.from_name("GPU_IS_LOST")
        assert backend.name(0) == "Fake C-level GPU 0 (synthetic)"
        assert backend.uuid(0) == "GPU-00000000-0000-4000-8000-000000000000"
        assert backend.pci_bus_id(0) == "0000:03:00.0"
        assert backend.architecture(0) == "hopper"
        assert backend.pcie_current_gen(0) == 4
        assert (backend.cpu_affinity(0) or "").startswith("0-3,33")
        values = backend.field_values(0, [(197, 0), (94, 0), (165, 0)])
        assert values == [123_456_789_012, 7, 2]
        assert backend.nvlink_state(0, 0) is True
        assert backend.nvlink_remote_bus_id(0, 0) == "0000:a0:00.0"
        assert backend.conf_compute() == ConfCompute(enabled=True, multi_gpu_mode="protected_pcie")
    finally:
        backend.shutdown()
    assert lib.refs == 0


FABRICS = {
    "completed": (FabricState(), "f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff"),
    "binary uuid": (
        FabricState(cluster_uuid=BINARY_UUID, clique_id=32767, health_mask=0x1AA),
        "fffe0080-c328-a0a1-fffe-0080c328a0a1",
    ),
    "all-zero uuid": (
        FabricState(cluster_uuid=bytes(16), clique_id=0, health_mask=0),
        "00000000-0000-0000-0000-000000000000",
    ),
    "not started": (
        FabricState(state=1, status=27, clique_id=0, cluster_uuid=bytes(16), health_mask=0),
        "00000000-0000-0000-0000-000000000000",
    ),
}


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("branch", ["R535", "R550", "R580"])
@pytest.mark.parametrize("case", list(FABRICS))
def test_fabric_state_reads_through_every_release(
    release_files: dict, version: str, branch: str, case: str
) -> None:
    """R535 offers only the legacy call (no health mask), R550 the v2 structure, R580 v3."""
    fabric, uuid_text = FABRICS[case]
    lib = FakeLibNvml(branch=branch)
    lib.fabric = fabric
    backend = _open(release_files, version, lib)
    try:
        info = backend.fabric_info(0)
    finally:
        backend.shutdown()
    health = None if branch == "R535" else fabric.health_mask
    assert info == FabricInfo(fabric.state, fabric.status, fabric.clique_id, uuid_text, health)


@pytest.mark.parametrize("version", RELEASES)
def test_a_fabric_that_never_started_still_fails_nvlink_fabric(
    release_files: dict, version: str
) -> None:
    """The chain the bindings broke: NVML's "not started" -> the capture -> a failed check."""
    lib = FakeLibNvml(branch="R570")
    lib.fabric = FABRICS["not started"][0]
    backend = _open(release_files, version, lib)
    capture = machine(8, link="NV18")
    capture.driver.fabric_manager.active = True
    try:
        for gpu in capture.gpus:
            live._read_fabric(live._GpuReader(backend, gpu), 0)
    finally:
        backend.shutdown()
    assert {g.fabric.state for g in capture.gpus} == {"not_started"}
    result = run_check(load_checks()["nvlink.fabric"], Context(capture))
    assert result.severity == "fail", result.summary


def test_the_fake_library_writes_nvml_h_layout_not_the_bindings(release_files: dict) -> None:
    """Guard on the stand-in itself: read with 12.535's own structure (80-byte UUID), the
    fields land where that release's declaration says they do not."""
    lib = FakeLibNvml(branch="R535")
    module = nvml_releases.load_release(release_files, "12.535.161", lib)
    module.nvmlInit()
    try:
        record = module.c_nvmlGpuFabricInfo_t()
        handle = module.nvmlDeviceGetHandleByIndex(0)
        module.nvmlDeviceGetGpuFabricInfo(handle, __import__("ctypes").byref(record))
        assert (record.state, record.partitionId) != (3, 5)
    finally:
        module.nvmlShutdown()

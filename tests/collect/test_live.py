"""collect_live(): on this machine, and over the fake backend with fake trees."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pcidoc.collect.live import collect_live, nvml_failure_message
from pcidoc.collect.nvml import ConfCompute, PynvmlBackend
from pcidoc.collect.sysfs import NEEDS_ROOT_ACS
from pcidoc.model.capture import Capture
from tests.collect.conftest import DSP0, GPU0, GPU1, GPU2, GPU3, RP2, Box
from tests.collect.fakefs import GPU_3D, NVIDIA, FakeProc, FakeSysfs
from tests.fakes.fake_nvml import FakeGpu, FakeNvLink, FakeNvmlBackend


def _box_backend(**gpu_changes: dict) -> FakeNvmlBackend:
    """Four synthetic GPUs at the switch box's addresses; GPU0 and GPU1 bridged by 2 NVLinks."""
    gpus = [
        FakeGpu(
            bus_id=bus,
            cpu_affinity="8-15" if bus == GPU3 else "0-7",
            memory_affinity="1" if bus == GPU3 else "0",
            processes=[(4242, 1 << 30)] if bus == GPU0 else [],
        )
        for bus in (GPU0, GPU1, GPU2, GPU3)
    ]
    gpus[0].nvlinks = [
        FakeNvLink(link=k, version=5, remote_bus_id=GPU1, remote_type="gpu") for k in range(2)
    ]
    gpus[1].nvlinks = [
        FakeNvLink(link=k, version=5, remote_bus_id=GPU0, remote_type="gpu") for k in range(2)
    ]
    for index, changes in gpu_changes.items():
        for key, value in changes.items():
            setattr(gpus[int(index.removeprefix("gpu"))], key, value)
    topology = {(0, 1): 10, (0, 2): 30, (1, 2): 30, (0, 3): 50, (1, 3): 50, (2, 3): 50}
    return FakeNvmlBackend(gpus, topology=topology, default_p2p="OK", p2p={(0, 3): "CNS"})


def _collect(box: Box, backend: FakeNvmlBackend, **kwargs: object) -> Capture:
    return collect_live(
        sys_root=str(box.sys),
        proc_root=str(box.proc),
        etc_root=str(box.etc),
        backend=backend,
        environ={"NCCL_P2P_LEVEL": "NVL", "HOME": "/root"},
        fs_root=str(box.fs),
        **kwargs,  # type: ignore[arg-type]
    )


def test_full_capture_over_the_switch_box_round_trips(box: Box) -> None:
    box.procfs.add_process(4242, "train.py", cpus="8-15", mems="1")
    capture = _collect(box, _box_backend())
    assert capture.origin.kind == "synthetic"  # a fake backend never yields a "live" capture
    assert capture.origin.created_at
    assert capture.origin.pcidoc_version
    assert [g.bus_id for g in capture.gpus] == [GPU0, GPU1, GPU2, GPU3]
    assert capture.driver.nvml_available is True
    assert capture.driver.cuda_driver_version == "12.4"
    assert capture.driver.nvidia_pci_devices == 4
    assert capture.host.environment == {"NCCL_P2P_LEVEL": "NVL"}
    gpu0 = capture.gpus[0]
    assert next(h.bus_id for h in gpu0.path) == DSP0
    assert gpu0.path[0].acs is not None
    assert gpu0.path[0].acs.request_redirect
    assert (gpu0.numa_node, gpu0.iommu_group, gpu0.iommu_group_type) == (0, 10, "DMA")
    assert [link.version for link in gpu0.nvlinks] == ["3.1", "3.1"]
    assert capture.gpus[3].numa_node == 1
    gpu2 = capture.gpus[2]
    assert gpu2.path[0].bus_id == RP2
    assert (gpu2.path[0].current_gen, gpu2.path[0].max_gen) == (1, 4)
    assert gpu2.pcie.host_max_gen == 4
    assert capture.host.iommu.default_domain_type == "DMA"
    # eth1 has no RDMA device: like nvidia-smi topo -m, only RDMA NICs are listed.
    assert [n.name for n in capture.nics] == ["mlx5_0"]

    topo = capture.topology
    assert topo.labels == ["GPU0", "GPU1", "GPU2", "GPU3", "NIC0"]
    assert topo.link("GPU0", "GPU1") == "NV2"
    assert topo.link("GPU0", "GPU2") == "PHB"
    assert topo.link("GPU0", "GPU3") == "SYS"
    assert topo.link("GPU0", "NIC0") == "PIX"
    assert topo.link("GPU3", "NIC0") == "SYS"
    assert topo.link("NIC0", "NIC0") == "X"
    assert topo.source == "nvml"
    assert "topology" not in capture.unavailable

    assert capture.p2p.status("read", 0, 1) == "OK"
    assert capture.p2p.status("write", 0, 3) == "CNS"
    assert capture.p2p.status("pci", 2, 2) == "X"

    (proc,) = capture.host.processes
    assert (proc.pid, proc.name, proc.gpus, proc.cpu_affinity) == (4242, "train.py", [0], "8-15")

    again = Capture.model_validate_json(capture.model_dump_json(by_alias=True))
    assert again == capture


def test_hgx_is_nv18_everywhere_with_fabric(tmp_path: Path) -> None:
    proc = FakeProc(tmp_path / "proc")
    proc.basics()
    capture = collect_live(
        sys_root=str(tmp_path / "sys"),
        proc_root=str(proc.root),
        etc_root=str(tmp_path / "etc"),
        backend=FakeNvmlBackend.hgx(n=8),
        environ={},
        fs_root=str(tmp_path),
    )
    assert len(capture.gpus) == 8
    cells = {
        capture.topology.link(f"GPU{a}", f"GPU{b}") for a in range(8) for b in range(8) if a != b
    }
    assert cells == {"NV18"}
    gpu = capture.gpus[5]
    assert len(gpu.nvlinks) == 18
    assert all(link.state == "up" and link.version == "4.0" for link in gpu.nvlinks)
    assert (gpu.fabric.state, gpu.fabric.status, gpu.fabric.health) == ("completed", "success", [])
    assert capture.driver.fabric_manager.active is False  # no nv-fabricmanager in the fake /proc
    proc.add_process(321, "nv-fabricmanager")
    again = collect_live(
        sys_root=str(tmp_path / "sys"),
        proc_root=str(proc.root),
        etc_root=str(tmp_path / "etc"),
        backend=FakeNvmlBackend.hgx(n=2),
        environ={},
        fs_root=str(tmp_path),
    )
    assert again.driver.fabric_manager.active is True
    # No sysfs: GPU facts that come from sysfs say why they are missing.
    assert "not in" in (gpu.why("numa_node") or "")


def test_pcie_pair_without_nvlink(box: Box) -> None:
    fake = FakeNvmlBackend.pcie_pair()
    fake.gpus[0].bus_id, fake.gpus[1].bus_id = GPU0, GPU1
    capture = _collect(box, fake)
    assert capture.topology.link("GPU0", "GPU1") == "PIX"
    for gpu in capture.gpus:
        assert gpu.nvlinks == []
        assert gpu.why("nvlinks") == "NVML: NOT_SUPPORTED (no NVLink on this GPU)"
        assert gpu.fabric.why("state") == "NVML: NOT_SUPPORTED"
    assert capture.p2p.matrices["read"] == [["X", "OK"], ["OK", "X"]]


def test_gpu_lost_at_open_does_not_stop_the_others(box: Box) -> None:
    capture = _collect(box, _box_backend(gpu2={"lost": True}))
    lost = capture.gpus[2]
    assert lost.nvml_error == "GPU_IS_LOST"
    assert lost.bus_id is None
    assert lost.why("bus_id") == "NVML: GPU_IS_LOST"
    assert [g.nvml_error for g in capture.gpus] == [None, None, "GPU_IS_LOST", None]
    assert capture.gpus[3].name == "Fake GPU (synthetic)"
    assert capture.p2p.status("read", 0, 2) is None
    assert capture.p2p.status("read", 3, 1) == "OK"
    assert "GPU2" in capture.unavailable["p2p.read"]
    assert capture.topology.link("GPU0", "GPU2") is None
    assert "GPU2" in capture.unavailable["topology"]


def test_gpu_lost_midway_stops_querying_that_gpu(box: Box) -> None:
    fake = _box_backend(gpu1={"errors": {"pcie_max_gen": "GPU_IS_LOST"}})
    capture = _collect(box, fake)
    gpu = capture.gpus[1]
    assert gpu.name is not None  # read before the GPU was lost
    assert gpu.pcie.current_gen == 4
    assert gpu.nvml_error == "GPU_IS_LOST"
    assert gpu.pcie.max_gen == 4  # derived from sysfs once NVML lost the GPU
    assert gpu.why("persistence_mode") == "NVML: GPU_IS_LOST"
    assert gpu.why("pstate") == "NVML: GPU_IS_LOST"
    assert gpu.why("nvlinks") == "NVML: GPU_IS_LOST"
    # sysfs facts still come from its bus id
    assert gpu.numa_node == 0
    assert capture.gpus[2].nvml_error is None


def test_not_supported_and_no_permission_are_reasons_not_failures(box: Box) -> None:
    errors = {
        "persistence_mode": "NOT_SUPPORTED",
        "virtualization_mode": "NOT_SUPPORTED",
        "pcie_replay_counter": "NOT_SUPPORTED",
        "cpu_affinity": "NO_PERMISSION",
        "performance_state": "NO_PERMISSION",
    }
    fake = _box_backend(gpu0={"errors": errors, "field_errors": {94: "NOT_SUPPORTED"}})
    capture = _collect(box, fake)
    gpu = capture.gpus[0]
    assert gpu.nvml_error is None
    assert gpu.persistence_mode is None
    assert gpu.why("persistence_mode") == "NVML: NOT_SUPPORTED"
    assert gpu.why("virtualization_mode") == "NVML: NOT_SUPPORTED"
    assert gpu.replay_count is None
    assert gpu.why("replay_count") == "NVML: NOT_SUPPORTED"
    assert gpu.why("pstate") == "NVML: NO_PERMISSION"
    assert gpu.cpu_affinity == "0-7"  # from sysfs local_cpulist instead
    assert gpu.why("cpu_affinity") is None


def test_max_link_falls_back_to_min_of_gpu_and_port(box: Box) -> None:
    capture = _collect(box, _box_backend(gpu2={"pcie_max_gen": None, "pcie_max_width": None}))
    pcie = capture.gpus[2].pcie
    assert (pcie.max_gen, pcie.max_width) == (4, 16)  # from sysfs: GPU and root port maxima
    assert pcie.why("max_gen") is None
    assert (pcie.current_gen, pcie.current_width) == (4, 16)  # NVML's own reading


def test_field_value_errors_are_per_field(box: Box) -> None:
    fake = _box_backend(
        gpu0={"field_errors": {95: "NOT_SUPPORTED", 94: "NO_DATA"}, "replay_count": 12}
    )
    fake.gpus[0].pcie_counters = {169: 3, 173: 0}
    capture = _collect(box, fake)
    gpu = capture.gpus[0]
    assert gpu.replay_count == 12  # fell back to the dedicated call
    assert gpu.replay_rollover_count is None
    assert gpu.why("replay_rollover_count") == "NVML: NOT_SUPPORTED"
    assert gpu.pcie_counters == {"l0_to_recovery": 3, "correctable_errors": 0}


def test_identity_calls_failing_mark_the_gpu(box: Box) -> None:
    fake = _box_backend(gpu3={"errors": {"uuid": "NO_PERMISSION", "pci_bus_id": "NO_PERMISSION"}})
    capture = _collect(box, fake)
    assert capture.gpus[3].nvml_error == "NO_PERMISSION"
    assert capture.gpus[0].nvml_error is None


@pytest.mark.parametrize(
    ("error", "fragment"),
    [
        ("LIB_RM_VERSION_MISMATCH", "versions differ"),
        ("LIBRARY_NOT_FOUND", "4 NVIDIA GPUs are on the PCI bus"),
        ("DRIVER_NOT_LOADED", "kernel driver is not loaded (4 NVIDIA GPUs"),
        ("NO_PERMISSION", "/dev/nvidia*"),
    ],
)
def test_init_errors_become_driver_facts(box: Box, error: str, fragment: str) -> None:
    capture = _collect(box, FakeNvmlBackend(init_error=error))
    assert capture.gpus == []
    assert capture.driver.nvml_available is False
    assert capture.driver.nvml_error == error
    assert fragment in (capture.driver.nvml_error_message or "")
    assert fragment in capture.unavailable["gpus"]
    assert capture.host.hostname == "testhost"  # host facts are still collected
    assert capture.topology.labels == ["NIC0"]


def test_version_mismatch_reports_the_loaded_kernel_module(box: Box) -> None:
    box.procfs.write(
        "driver/nvidia/version",
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  999.99.99  (synthetic)\n",
    )
    capture = _collect(box, FakeNvmlBackend(init_error="LIB_RM_VERSION_MISMATCH"))
    assert capture.driver.driver_version == "999.99.99"
    assert "999.99.99" in (capture.driver.nvml_error_message or "")


def test_failure_messages_without_devices_and_in_containers() -> None:
    assert nvml_failure_message("LIBRARY_NOT_FOUND", 0, None) == (
        "NVML library libnvidia-ml.so.1 not found: the NVIDIA driver is not installed "
        "(no NVIDIA devices on the PCI bus)"
    )
    in_docker = nvml_failure_message("LIBRARY_NOT_FOUND", 2, "docker")
    assert "2 NVIDIA GPUs are on the PCI bus" in in_docker
    assert "--gpus all" in in_docker
    assert "1 NVIDIA GPU is on" in nvml_failure_message("DRIVER_NOT_LOADED", 1, None)


def test_caller_session_stays_open(box: Box) -> None:
    fake = _box_backend()
    assert fake.init() is None
    _collect(box, fake)
    assert fake.refs == 1
    assert fake.device_count() == 4


def test_a_crashing_backend_call_becomes_a_reason(box: Box) -> None:
    fake = _box_backend()

    def broken(index: int) -> str:
        raise RuntimeError("synthetic collector bug")

    fake.serial = broken  # type: ignore[method-assign]
    capture = _collect(box, fake)
    assert len(capture.gpus) == 4
    assert all(g.nvml_error == "UNKNOWN" for g in capture.gpus)
    assert "synthetic collector bug" in capture.unavailable["gpus[0]"]
    assert fake.refs == 0  # shut down despite the crash


def test_confidential_compute_mig_and_virtualization(box: Box) -> None:
    fake = _box_backend(gpu0={"mig_mode": (True, True), "virtualization_mode": "passthrough"})
    fake._conf_compute = ConfCompute(enabled=True, multi_gpu_mode="protected_pcie")
    capture = _collect(box, fake)
    assert capture.host.virtualization.confidential_compute is True
    assert capture.host.virtualization.cc_multi_gpu_mode == "protected_pcie"
    assert (capture.gpus[0].mig.enabled, capture.gpus[0].mig.pending) == (True, True)
    assert capture.gpus[0].virtualization_mode == "passthrough"


def test_non_root_capture_says_acs_needs_root(tmp_path: Path) -> None:
    sysfs = FakeSysfs(tmp_path / "sys")
    rp = sysfs.add_device(["pci0000:00", "0000:00:01.0"], port_type=4, config_size=64)
    sysfs.add_device([*rp, "0000:01:00.0"], vendor=NVIDIA, cls=GPU_3D, config_size=64)
    proc = FakeProc(tmp_path / "proc")
    proc.basics()
    capture = collect_live(
        sys_root=str(sysfs.root),
        proc_root=str(proc.root),
        etc_root=str(tmp_path / "etc"),
        backend=FakeNvmlBackend([FakeGpu(bus_id="0000:01:00.0")]),
        environ={},
        fs_root=str(tmp_path),
    )
    (hop,) = capture.gpus[0].path
    assert hop.acs is None
    assert hop.why("acs") == NEEDS_ROOT_ACS


def test_this_machine() -> None:
    """On this (driverless) machine: no GPUs, host facts, a plain reason; on a GPU box: GPUs."""
    capture = collect_live()
    assert capture.origin.kind == "live"
    assert capture.host.kernel
    assert capture.host.logical_cpus
    assert capture.driver.nvidia_pci_devices is not None
    if capture.driver.nvml_available:
        assert capture.gpus or "gpus" in capture.unavailable
    else:
        assert capture.gpus == []
        assert capture.driver.nvml_error
        assert capture.unavailable["gpus"] == capture.driver.nvml_error_message
        if capture.driver.nvml_error == "LIBRARY_NOT_FOUND":
            assert "libnvidia-ml.so.1 not found" in capture.unavailable["gpus"]
    again = Capture.model_validate_json(capture.model_dump_json(by_alias=True))
    assert again == capture


def test_this_machine_is_fast() -> None:
    collect_live()  # warm: pydantic builds its validators on first use
    started = time.perf_counter()
    collect_live(backend=PynvmlBackend())
    elapsed = time.perf_counter() - started
    assert elapsed < 0.5, f"collect_live took {elapsed * 1000:.0f} ms"


def test_topology_is_read_from_nvml_before_the_session_closes(tmp_path: Path) -> None:
    """No sysfs knows these GPUs: the matrix can only come from NVML, and must, although
    collect_live opens and closes the only session itself (the command line's case)."""
    proc = FakeProc(tmp_path / "proc")
    proc.basics()
    fake = FakeNvmlBackend.pcie_pair()
    capture = collect_live(
        sys_root=str(tmp_path / "sys"),
        proc_root=str(proc.root),
        etc_root=str(tmp_path / "etc"),
        backend=fake,
        environ={},
        fs_root=str(tmp_path),
    )
    assert fake.refs == 0  # the session was closed afterwards
    assert capture.topology.link("GPU0", "GPU1") == "PIX"
    assert capture.topology.source == "nvml"
    assert "topology" not in capture.unavailable


def test_sleeping_links_are_neither_up_nor_down_but_still_join_gpus(box: Box) -> None:
    fake = _box_backend()
    fake.gpus[0].nvlinks[1].sleep = True  # type: ignore[index]
    capture = _collect(box, fake)
    link = capture.gpus[0].nvlinks[1]
    assert link.state == "sleep"
    assert link.remote_bus_id == GPU1
    assert capture.topology.link("GPU0", "GPU1") == "NV2"


def test_a_link_with_traffic_disabled_is_down_not_up(box: Box) -> None:
    fake = _box_backend()
    fake.gpus[0].nvlinks[1].traffic_disabled = True  # type: ignore[index]
    fake.gpus[0].nvlinks[1].speed_mbps = 25_000  # type: ignore[index]
    capture = _collect(box, fake)
    link = capture.gpus[0].nvlinks[1]
    assert link.state == "down"
    assert link.speed_gbps is None
    assert "traffic disabled" in (link.why("speed_gbps") or "")
    assert capture.topology.link("GPU0", "GPU1") == "NV1"


def test_blackwell_link_errors_and_their_absence(box: Box) -> None:
    errors = {"recovery_events": 1, "effective_errors": 0, "symbol_errors": 40}
    fake = _box_backend(gpu0={"architecture": "blackwell"})
    for link in fake.gpus[0].nvlinks or []:
        link.errors = dict(errors)
    capture = _collect(box, fake)
    read = {"recovery_events": 1, "effective_errors": 0}  # pre-FEC symbol errors stay out
    assert [link.errors for link in capture.gpus[0].nvlinks] == [read, read]
    assert capture.gpus[0].nvlinks[0].why("errors") is None

    old = FakeNvmlBackend(fake.gpus, topology=fake.topology, driver_branch="R550")
    capture = _collect(box, old)
    link = capture.gpus[0].nvlinks[0]
    assert link.errors == {}
    assert "R570" in (link.why("errors") or "")

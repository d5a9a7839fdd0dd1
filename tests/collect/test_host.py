"""Host facts over fake /proc, /sys and /etc trees."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pcidoc.collect.host import (
    collect_environment,
    collect_host,
    collect_processes,
    detect_container,
    iommu_kernel_args,
    parse_cpuinfo,
)
from tests.collect.conftest import Box
from tests.collect.fakefs import (
    AMD_CPUINFO,
    ARM_CPUINFO,
    INTEL_CPUINFO,
    POWER_CPUINFO,
    FakeProc,
    FakeSysfs,
    cpuinfo,
    fake_etc,
)


def _host(tmp_path: Path, cpu_text: str, **basics: str):  # type: ignore[no-untyped-def]
    proc = FakeProc(tmp_path / "proc")
    proc.basics(cpuinfo_text=cpu_text, **basics)
    sysfs = FakeSysfs(tmp_path / "sys")
    fs = tmp_path / "root"
    fake_etc(fs / "etc")
    return collect_host(
        str(proc.root), str(sysfs.root), str(fs / "etc"), environ={}, fs_root=str(fs)
    )


@pytest.mark.parametrize(
    ("template", "vendor", "model_part"),
    [
        (INTEL_CPUINFO, "intel", "Xeon"),
        (AMD_CPUINFO, "amd", "EPYC"),
        (ARM_CPUINFO, "arm", "implementer 0x41 part 0xd4f"),
        (POWER_CPUINFO, "ibm", "POWER9"),
    ],
)
def test_cpu_vendor_and_model(template: str, vendor: str, model_part: str) -> None:
    summary = parse_cpuinfo(cpuinfo(template, 4, packages=2))
    assert summary["vendor"] == vendor
    assert model_part in str(summary["model"])
    assert summary["logical"] == 4


@pytest.mark.parametrize("hypervisor", [True, False])
def test_hypervisor_flag(tmp_path: Path, hypervisor: bool) -> None:
    host = _host(tmp_path, cpuinfo(INTEL_CPUINFO, 2, hypervisor=hypervisor))
    assert host.virtualization.hypervisor is hypervisor
    if hypervisor:
        assert host.virtualization.vendor is None
        assert "DMI" in (host.virtualization.why("vendor") or "")
    else:
        assert host.virtualization.why("vendor") is None


def test_hypervisor_vendor_from_dmi(tmp_path: Path) -> None:
    sysfs = FakeSysfs(tmp_path / "sys")
    sysfs.set_dmi("QEMU", "Standard PC (Q35 + ICH9, 2009)")
    proc = FakeProc(tmp_path / "proc")
    proc.basics(cpuinfo_text=cpuinfo(AMD_CPUINFO, 2, hypervisor=True))
    fs = tmp_path / "root"
    fake_etc(fs / "etc")
    host = collect_host(str(proc.root), str(sysfs.root), str(fs / "etc"), {}, str(fs))
    assert host.virtualization.vendor == "kvm"


def test_basics_from_fake_trees(box: Box) -> None:
    host = collect_host(str(box.proc), str(box.sys), str(box.etc), {}, str(box.fs))
    assert host.hostname == "testhost"
    assert host.kernel == "6.1.0-test"
    assert host.os == "Synthetic Linux 1.0 (test)"
    assert host.cpu_vendor == "amd"
    assert host.logical_cpus == 16
    assert host.sockets == 2
    assert host.uptime_s == pytest.approx(12345.67)
    assert host.numa_balancing is True
    assert host.virtualization.hypervisor is False
    assert host.virtualization.container is None
    assert host.unavailable == {}


def test_two_numa_nodes_with_distances(box: Box) -> None:
    host = collect_host(str(box.proc), str(box.sys), str(box.etc), {}, str(box.fs))
    assert [(n.id, n.cpus, n.distances) for n in host.numa_nodes] == [
        (0, "0-7", [10, 21]),
        (1, "8-15", [21, 10]),
    ]
    assert host.numa_nodes[1].memory_total_bytes == 2048 * 1024


def test_iommu_state_and_kernel_args(box: Box) -> None:
    host = collect_host(str(box.proc), str(box.sys), str(box.etc), {}, str(box.fs))
    assert host.iommu.enabled is True
    assert host.iommu.vendor == "intel"  # the box's units are dmar*
    assert host.iommu.kernel_args == ["amd_iommu=on", "iommu=pt"]
    assert host.iommu.group_count == 4


def test_iommu_kernel_args_parsing() -> None:
    cmdline = (
        "ro quiet intel_iommu=on iommu=pt iommu.passthrough=1 pci=noaer "
        "pci=disable_acs_redir=0000:02:00.0 pcie_acs_override=downstream,multifunction "
        "-- iommu=off"
    )
    assert iommu_kernel_args(cmdline) == [
        "intel_iommu=on",
        "iommu=pt",
        "iommu.passthrough=1",
        "pci=disable_acs_redir=0000:02:00.0",
        "pcie_acs_override=downstream,multifunction",
    ]


def test_iommu_off_when_no_units_and_no_groups(tmp_path: Path) -> None:
    sysfs = FakeSysfs(tmp_path / "sys")
    sysfs.empty_iommu()
    proc = FakeProc(tmp_path / "proc")
    proc.basics()
    host = collect_host(str(proc.root), str(sysfs.root), str(tmp_path / "etc"), {}, str(tmp_path))
    assert host.iommu.enabled is False
    assert host.iommu.group_count == 0
    assert host.os is None
    assert "os-release" in (host.why("os") or "")


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ("dockerenv", "docker"),
        ("containerenv", "podman"),
        ("kube_env", "kubernetes"),
        ("kube_cgroup", "kubernetes"),
        ("lxc_cgroup", "lxc"),
        ("none", None),
    ],
)
def test_container_detection(tmp_path: Path, setup: str, expected: str | None) -> None:
    proc = FakeProc(tmp_path / "proc")
    proc.basics()
    fs = tmp_path / "root"
    (fs / "run").mkdir(parents=True)
    environ: dict[str, str] = {}
    if setup == "dockerenv":
        (fs / ".dockerenv").write_text("")
    elif setup == "containerenv":
        (fs / "run" / ".containerenv").write_text("")
    elif setup == "kube_env":
        environ["KUBERNETES_SERVICE_HOST"] = "10.0.0.1"
    elif setup == "kube_cgroup":
        proc.write("1/cgroup", "0::/kubepods/burstable/pod1234/abcd\n")
    elif setup == "lxc_cgroup":
        proc.write("1/cgroup", "0::/lxc/container1\n")
    runtime, evidence = detect_container(str(proc.root), environ, str(fs))
    assert runtime == expected
    assert bool(evidence) is (expected is not None)


def test_environment_filter() -> None:
    env = {
        "NCCL_P2P_DISABLE": "1",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "NVIDIA_VISIBLE_DEVICES": "all",
        "HOME": "/root",
        "CUDA_HOME": "/usr/local/cuda",
    }
    assert collect_environment(env) == {
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "NCCL_P2P_DISABLE": "1",
        "NVIDIA_VISIBLE_DEVICES": "all",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    }


def test_gpudirect_modules(box: Box) -> None:
    box.sysfs.add_module("nvidia_peermem")
    host = collect_host(str(box.proc), str(box.sys), str(box.etc), {}, str(box.fs))
    assert host.gpudirect.nvidia_peermem is True
    assert host.gpudirect.nv_peer_mem is False


def test_gpudirect_unknown_without_sys_module(tmp_path: Path) -> None:
    host = _host(tmp_path, cpuinfo(INTEL_CPUINFO, 2))
    assert host.gpudirect.nvidia_peermem is None
    assert "does not exist" in (host.gpudirect.why("nvidia_peermem") or "")


def test_missing_proc_files_give_reasons(tmp_path: Path) -> None:
    host = collect_host(
        str(tmp_path / "noproc"), str(tmp_path / "nosys"), str(tmp_path / "noetc"), {}
    )
    for name in ("hostname", "kernel", "cmdline", "cpu_model", "uptime_s", "numa_nodes"):
        assert host.why(name), name
    assert host.hostname is None


def test_processes_from_fake_proc(tmp_path: Path) -> None:
    proc = FakeProc(tmp_path / "proc")
    proc.add_process(4242, "python", cpus="0-7", mems="0")
    entries = [(0, 4242, 1000), (1, 4242, 500), (1, 9999, None)]
    processes = collect_processes(entries, str(proc.root))
    assert [p.pid for p in processes] == [4242, 9999]
    train, ghost = processes
    assert (train.name, train.cpu_affinity, train.mems_allowed) == ("python", "0-7", "0")
    assert train.gpus == [0, 1]
    assert train.used_memory_bytes == 1500
    assert ghost.name is None
    assert "PID namespace" in (ghost.why("cpu_affinity") or "")


def test_process_without_status_fields(tmp_path: Path) -> None:
    proc = FakeProc(tmp_path / "proc")
    proc.add_process(77, "worker", cpus=None, mems=None)
    (process,) = collect_processes([(0, 77, None)], str(proc.root))
    assert process.cpu_affinity is None
    assert process.why("cpu_affinity")
    assert "Mems_allowed_list" in (process.why("mems_allowed") or "")


def test_process_affinity_via_psutil_on_real_proc() -> None:
    (me,) = collect_processes([(0, os.getpid(), None)], "/proc")
    expected = sorted(os.sched_getaffinity(0))
    assert me.cpu_affinity is not None
    assert me.name
    from pcidoc.model.cpulist import parse_cpulist

    assert sorted(parse_cpulist(me.cpu_affinity) or []) == expected


def test_real_host_collects_basics() -> None:
    host = collect_host()
    assert host.kernel == os.uname().release
    assert host.logical_cpus
    assert host.logical_cpus >= 1
    assert host.numa_nodes or host.why("numa_nodes")

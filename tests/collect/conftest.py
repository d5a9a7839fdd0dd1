"""Fixtures for collector tests: a synthetic PCIe tree with switches, ACS and NICs, and fake
/proc and /etc trees."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.collect.fakefs import (
    AMD_CPUINFO,
    ETHERNET,
    GPU_3D,
    INFINIBAND,
    NVIDIA,
    FakeProc,
    FakeSysfs,
    cpuinfo,
    fake_etc,
)


@dataclass
class Box:
    """Paths and addresses of the synthetic switch box."""

    sys: Path
    proc: Path
    etc: Path
    fs: Path
    sysfs: FakeSysfs
    procfs: FakeProc


# Addresses of the switch box (synthetic):
#
# pci0000:00 (NUMA 0)
#   00:01.0 root port (ACS SrcValid only)
#     01:00.0 switch upstream
#       02:00.0 downstream (ACS 0x001d) -> 03:00.0 GPU0
#       02:01.0 downstream (ACS 0x001d) -> 04:00.0 GPU1
#       02:02.0 downstream (ACS off)    -> 05:00.0 NIC mlx5_0 (InfiniBand)
#   00:02.0 root port, downtrained (2.5 GT/s x8 of 16 GT/s x16) -> 06:00.0 GPU2
# pci0000:40 (NUMA 0)
#   40:01.0 root port -> 41:00.0 NIC eth1 (Ethernet) + 41:00.1 its SR-IOV VF
# pci0000:80 (NUMA 1)
#   80:01.0 root port -> 81:00.0 GPU3
GPU0, GPU1, GPU2, GPU3 = "0000:03:00.0", "0000:04:00.0", "0000:06:00.0", "0000:81:00.0"
NIC_IB, NIC_ETH, NIC_VF = "0000:05:00.0", "0000:41:00.0", "0000:41:00.1"
DSP0, DSP1, DSP2 = "0000:02:00.0", "0000:02:01.0", "0000:02:02.0"
USP, RP1, RP2 = "0000:01:00.0", "0000:00:01.0", "0000:00:02.0"


def build_switch_box(sysfs: FakeSysfs) -> None:
    """Populate ``sysfs`` with the switch box above."""
    gen4 = {"current_speed": "16.0 GT/s PCIe", "max_speed": "16.0 GT/s PCIe"}
    rp1 = sysfs.add_device(
        ["pci0000:00", RP1], port_type=4, acs_control=0x0001, aer={"correctable": 3}, **gen4
    )
    usp = sysfs.add_device([*rp1, USP], port_type=5, **gen4)
    for dsp, gpu, group in ((DSP0, GPU0, 10), (DSP1, GPU1, 11)):
        chain = sysfs.add_device([*usp, dsp], port_type=6, acs_control=0x001D, **gen4)
        sysfs.add_device(
            [*chain, gpu],
            vendor=NVIDIA,
            device=0x0001,
            cls=GPU_3D,
            iommu_group=group,
            driver="nvidia",
            aer={"correctable": 0, "nonfatal": 0, "fatal": 0},
            **gen4,
        )
        sysfs.set_iommu_group_type(group, "DMA")
    dsp2 = sysfs.add_device([*usp, DSP2], port_type=6, acs_control=0x0000, **gen4)
    nic = sysfs.add_device([*dsp2, NIC_IB], vendor=0x15B3, cls=INFINIBAND, **gen4)
    sysfs.add_rdma("mlx5_0", nic, "InfiniBand")
    sysfs.add_netdev("ib0", nic)
    rp2 = sysfs.add_device(
        ["pci0000:00", RP2],
        port_type=4,
        acs_control=0x0000,
        current_speed="2.5 GT/s PCIe",
        current_width=8,
        max_speed="16.0 GT/s PCIe",
        max_width=16,
    )
    sysfs.add_device(
        [*rp2, GPU2],
        vendor=NVIDIA,
        cls=GPU_3D,
        iommu_group=12,
        current_speed="2.5 GT/s PCIe",
        current_width=8,
        max_speed="16.0 GT/s PCIe",
        max_width=16,
    )
    sysfs.set_iommu_group_type(12, "DMA")
    rp40 = sysfs.add_device(["pci0000:40", "0000:40:01.0"], port_type=4, acs_control=0x1D)
    eth = sysfs.add_device([*rp40, NIC_ETH], vendor=0x8086, cls=ETHERNET, numa_node=0)
    sysfs.add_netdev("eth1", eth)
    vf = sysfs.add_device([*rp40, NIC_VF], vendor=0x8086, cls=ETHERNET, numa_node=0)
    (sysfs.device_dir(vf) / "physfn").symlink_to("../" + NIC_ETH)
    rp80 = sysfs.add_device(
        ["pci0000:80", "0000:80:01.0"], port_type=4, acs_control=0x1D, numa_node=1
    )
    sysfs.add_device(
        [*rp80, GPU3],
        vendor=NVIDIA,
        cls=GPU_3D,
        numa_node=1,
        local_cpulist="8-15",
        iommu_group=13,
    )
    sysfs.set_iommu_group_type(13, "DMA")
    sysfs.add_iommu_unit("dmar0")
    sysfs.add_iommu_unit("dmar1")
    sysfs.add_numa_node(0, "0-7", [10, 21], mem_kb=1024)
    sysfs.add_numa_node(1, "8-15", [21, 10], mem_kb=2048)
    for cpu in range(16):
        sysfs.add_cpu(cpu, cpu // 8)


@pytest.fixture
def box(tmp_path: Path) -> Box:
    """The switch box with a 2-socket AMD host (no hypervisor, no container)."""
    sysfs = FakeSysfs(tmp_path / "sys")
    build_switch_box(sysfs)
    procfs = FakeProc(tmp_path / "proc")
    procfs.basics(
        cpuinfo_text=cpuinfo(AMD_CPUINFO, 16, packages=2),
        cmdline="BOOT_IMAGE=/vmlinuz ro amd_iommu=on iommu=pt quiet",
    )
    fs = tmp_path / "root"
    etc = fake_etc(fs / "etc")
    return Box(sys=sysfs.root, proc=procfs.root, etc=etc, fs=fs, sysfs=sysfs, procfs=procfs)

"""SysfsReader over synthetic trees: paths, roles, ACS, AER, NUMA, IOMMU and link classes."""

from __future__ import annotations

from pathlib import Path

import pytest

from pcidoc.collect.sysfs import (
    NEEDS_ROOT_ACS,
    NO_EXTENDED_CONFIG,
    NUMA_UNKNOWN,
    SysfsReader,
    find_extended_capability,
    iommu_vendor,
    normalize_bus_id,
    parse_aer_total,
    pcie_port_type,
)
from tests.collect.conftest import (
    DSP0,
    DSP2,
    GPU0,
    GPU1,
    GPU2,
    GPU3,
    NIC_ETH,
    NIC_IB,
    RP1,
    RP2,
    USP,
    Box,
)
from tests.collect.fakefs import GPU_3D, NVIDIA, FakeSysfs, config_space


def test_normalize_bus_id_forms() -> None:
    assert normalize_bus_id("00000000:1B:00.0") == "0000:1b:00.0"
    assert normalize_bus_id("0000:1b:00.0") == "0000:1b:00.0"
    assert normalize_bus_id("1B:00.0") == "0000:1b:00.0"
    assert normalize_bus_id("10000:E0:06.0") == "10000:e0:06.0"  # VMD domain kept
    assert normalize_bus_id("not a bus id") == "not a bus id"


def test_upstream_path_nearest_first_with_roles_from_config(box: Box) -> None:
    reader = SysfsReader(str(box.sys))
    path = reader.upstream_path(GPU0)
    assert [hop.bus_id for hop in path] == [DSP0, USP, RP1]
    assert [hop.role for hop in path] == ["switch_downstream", "switch_upstream", "root_port"]
    assert reader.chain(GPU0) == ("pci0000:00", RP1, USP, DSP0, GPU0)


def test_acs_redirect_on_and_off(box: Box) -> None:
    reader = SysfsReader(str(box.sys))
    on = reader.hop(DSP0)
    assert on.acs_capable is True
    assert on.acs is not None
    assert on.acs.raw == 0x001D
    assert on.acs.request_redirect
    assert on.acs.completion_redirect
    assert on.acs.redirects_p2p
    assert "ReqRedir+ CmpltRedir+" in on.acs.describe()
    off = reader.hop(DSP2)
    assert off.acs is not None
    assert off.acs.raw == 0
    assert not off.acs.redirects_p2p
    root = reader.hop(RP1)
    assert root.acs is not None
    assert root.acs.source_validation
    assert not root.acs.redirects_p2p


def test_downtrained_hop_reports_current_below_max(box: Box) -> None:
    hop = SysfsReader(str(box.sys)).hop(RP2)
    assert (hop.current_gen, hop.current_width) == (1, 8)
    assert (hop.max_gen, hop.max_width) == (4, 16)


def test_aer_totals_and_missing_aer_reason(box: Box) -> None:
    reader = SysfsReader(str(box.sys))
    root = reader.hop(RP1)
    assert root.aer_correctable == 3
    assert root.aer_fatal is None
    assert "aer_dev_fatal" in (root.why("aer_fatal") or "")
    assert parse_aer_total("RxErr 1\nTOTAL_ERR_NONFATAL 7\n") == 7
    assert parse_aer_total("garbage") is None


def test_hop_is_a_copy(box: Box) -> None:
    reader = SysfsReader(str(box.sys))
    first = reader.hop(DSP0)
    first.bus_id = "changed"
    assert reader.hop(DSP0).bus_id == DSP0


def test_non_root_config_says_needs_root(tmp_path: Path) -> None:
    sysfs = FakeSysfs(tmp_path / "sys")
    rp = sysfs.add_device(
        ["pci0000:00", "0000:00:01.0"], port_type=4, acs_control=0x1D, config_size=64
    )
    usp = sysfs.add_device([*rp, "0000:01:00.0"], port_type=5, config_size=64)
    dsp = sysfs.add_device([*usp, "0000:02:00.0"], port_type=6, config_size=64)
    sysfs.add_device([*dsp, "0000:03:00.0"], vendor=NVIDIA, cls=GPU_3D, config_size=64)
    reader = SysfsReader(str(sysfs.root))
    path = reader.upstream_path("0000:03:00.0")
    for hop in path:
        assert hop.acs is None
        assert hop.acs_capable is None
        assert hop.why("acs") == NEEDS_ROOT_ACS
    # Port types are in the truncated part: roles come from the tree structure instead.
    assert [hop.role for hop in path] == ["switch_downstream", "switch_upstream", "root_port"]
    assert "0000:00:01.0" in reader.config_truncated


def test_256_byte_config_and_no_acs_capability(tmp_path: Path) -> None:
    sysfs = FakeSysfs(tmp_path / "sys")
    sysfs.add_device(["pci0000:00", "0000:00:01.0"], port_type=4, config_size=256)
    sysfs.add_device(["pci0000:00", "0000:00:02.0"], port_type=4, acs_control=None)
    reader = SysfsReader(str(sysfs.root))
    short = reader.hop("0000:00:01.0")
    assert short.acs_capable is None
    assert short.why("acs") == NO_EXTENDED_CONFIG
    bare = reader.hop("0000:00:02.0")
    assert bare.acs_capable is False
    assert bare.acs is None
    assert bare.why("acs") == "port has no ACS capability"


def test_unreadable_config_is_reported(tmp_path: Path) -> None:
    sysfs = FakeSysfs(tmp_path / "sys")
    chain = sysfs.add_device(["pci0000:00", "0000:00:01.0"], port_type=4)
    (sysfs.device_dir(chain) / "config").unlink()
    hop = SysfsReader(str(sysfs.root)).hop("0000:00:01.0")
    assert hop.acs is None
    assert (hop.why("acs") or "").startswith("config space unreadable")


def test_extended_capability_walk_survives_a_loop() -> None:
    data = bytearray(config_space(acs_control=0x1D))
    # Point ACS's "next" back at the AER header: the walk must stop, not spin.
    data[0x148:0x14C] = (0x0002 | (1 << 16) | (0x100 << 20)).to_bytes(4, "little")
    assert find_extended_capability(bytes(data), 0x000D) is None
    assert find_extended_capability(config_space(acs_control=0), 0x000D) == 0x148
    assert find_extended_capability(config_space(), 0x000D) is None


def test_port_type_from_capability_list() -> None:
    assert pcie_port_type(config_space(port_type=6)) == 6
    assert pcie_port_type(config_space(port_type=4)) == 4
    assert pcie_port_type(config_space(port_type=None)) is None
    assert pcie_port_type(config_space(port_type=6, size=64)) is None


def test_endpoint_numa_iommu_and_link(box: Box) -> None:
    reader = SysfsReader(str(box.sys))
    gpu = reader.endpoint(GPU0)
    assert gpu.present
    assert gpu.numa_node == 0
    assert gpu.local_cpulist == "0-7"
    assert (gpu.iommu_group, gpu.iommu_group_type) == (10, "DMA")
    assert gpu.driver == "nvidia"
    assert (gpu.current_gen, gpu.current_width, gpu.max_gen, gpu.max_width) == (4, 16, 4, 16)
    assert gpu.aer_correctable == 0
    far = reader.endpoint(GPU3)
    assert (far.numa_node, far.local_cpulist) == (1, "8-15")
    missing = reader.endpoint("0000:ff:00.0")
    assert not missing.present
    assert "0000:ff:00.0" in missing.unavailable["sysfs"]


def test_numa_minus_one_and_no_iommu_group(tmp_path: Path) -> None:
    sysfs = FakeSysfs(tmp_path / "sys")
    sysfs.add_device(["pci0000:00", "0000:00:04.0"], vendor=NVIDIA, cls=GPU_3D, numa_node=-1)
    info = SysfsReader(str(sysfs.root)).endpoint("0000:00:04.0")
    assert info.numa_node is None
    assert info.unavailable["numa_node"] == NUMA_UNKNOWN
    assert info.iommu_group is None
    assert "IOMMU" in info.unavailable["iommu_group"]


def test_iommu_group_types_identity_and_dma(tmp_path: Path) -> None:
    sysfs = FakeSysfs(tmp_path / "sys")
    sysfs.add_device(["pci0000:00", "0000:00:04.0"], cls=GPU_3D, vendor=NVIDIA, iommu_group=1)
    sysfs.add_device(["pci0000:00", "0000:00:05.0"], cls=GPU_3D, vendor=NVIDIA, iommu_group=2)
    sysfs.set_iommu_group_type(1, "identity")
    sysfs.set_iommu_group_type(2, "DMA-FQ")
    sysfs.add_iommu_unit("ivhd0")
    reader = SysfsReader(str(sysfs.root))
    assert reader.endpoint("0000:00:04.0").iommu_group_type == "identity"
    assert reader.endpoint("0000:00:05.0").iommu_group_type == "DMA-FQ"
    assert reader.iommu_group_count() == 2
    assert reader.iommu_units() == ["ivhd0"]


def test_iommu_vendor_names() -> None:
    assert iommu_vendor(["dmar0", "dmar1"]) == "intel"
    assert iommu_vendor(["ivhd0"]) == "amd"
    assert iommu_vendor(["smmu3.0x0000000012000000"]) == "arm"
    assert iommu_vendor(["virtio-iommu0"]) == "virtio-iommu"
    assert iommu_vendor([]) is None


def test_nvidia_gpus_counted_without_driver(box: Box) -> None:
    reader = SysfsReader(str(box.sys))
    assert reader.nvidia_gpus() == [GPU0, GPU1, GPU2, GPU3]


def test_nics_named_from_class_links_without_vfs(box: Box) -> None:
    nics = SysfsReader(str(box.sys)).nics()
    assert [(n.bus_id, n.name, n.kind) for n in nics] == [
        (NIC_IB, "mlx5_0", "infiniband"),
        (NIC_ETH, "eth1", "ethernet"),
    ]
    assert nics[0].netdevs == ["ib0"]


def test_netdev_below_a_virtio_node_maps_to_its_pci_function(tmp_path: Path) -> None:
    sysfs = FakeSysfs(tmp_path / "sys")
    nic = sysfs.add_device(["pci0000:00", "0000:00:03.0"], vendor=0x1AF4, cls=0x020000)
    sysfs.add_netdev("eth0", nic, via="virtio2")
    nics = SysfsReader(str(sysfs.root)).nics()
    assert [(n.bus_id, n.name, n.netdevs) for n in nics] == [("0000:00:03.0", "eth0", ["eth0"])]


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (GPU0, GPU0, "X"),
        (GPU0, GPU1, "PIX"),  # two downstream ports of one switch
        (GPU0, NIC_IB, "PIX"),
        (GPU0, GPU2, "PHB"),  # same host bridge, different root ports
        (GPU0, NIC_ETH, "NODE"),  # another host bridge on NUMA node 0
        (GPU0, GPU3, "SYS"),  # NUMA node 1
        (NIC_ETH, GPU3, "SYS"),
    ],
)
def test_link_classes_in_the_switch_box(box: Box, a: str, b: str, expected: str) -> None:
    cls, reason = SysfsReader(str(box.sys)).link_class(a, b, numa_nodes=2)
    assert (cls, reason) == (expected, None)


def test_link_class_pxb_across_two_switch_levels(tmp_path: Path) -> None:
    sysfs = FakeSysfs(tmp_path / "sys")
    rp = sysfs.add_device(["pci0000:00", "0000:00:03.0"], port_type=4)
    usp = sysfs.add_device([*rp, "0000:10:00.0"], port_type=5)
    dsp_a = sysfs.add_device([*usp, "0000:11:00.0"], port_type=6)
    dsp_b = sysfs.add_device([*usp, "0000:11:01.0"], port_type=6)
    usp2 = sysfs.add_device([*dsp_a, "0000:12:00.0"], port_type=5)
    dsp2 = sysfs.add_device([*usp2, "0000:13:00.0"], port_type=6)
    sysfs.add_device([*dsp2, "0000:14:00.0"], vendor=NVIDIA, cls=GPU_3D)
    sysfs.add_device([*dsp_b, "0000:15:00.0"], vendor=NVIDIA, cls=GPU_3D)
    # A device behind an extra bridge below one switch port is no longer PIX either.
    bridge = sysfs.add_device([*dsp_b, "0000:16:00.0"], cls=0x060400)
    sysfs.add_device([*bridge, "0000:17:00.0"], vendor=NVIDIA, cls=GPU_3D)
    dsp_c = sysfs.add_device([*usp, "0000:11:02.0"], port_type=6)
    sysfs.add_device([*dsp_c, "0000:18:00.0"], vendor=NVIDIA, cls=GPU_3D)
    reader = SysfsReader(str(sysfs.root))
    assert reader.link_class("0000:14:00.0", "0000:15:00.0") == ("PXB", None)
    assert reader.link_class("0000:17:00.0", "0000:15:00.0") == ("PIX", None)  # same port
    assert reader.link_class("0000:17:00.0", "0000:14:00.0") == ("PXB", None)
    assert reader.link_class("0000:17:00.0", "0000:18:00.0") == ("PXB", None)
    assert [h.role for h in reader.upstream_path("0000:14:00.0")] == [
        "switch_downstream",
        "switch_upstream",
        "switch_downstream",
        "switch_upstream",
        "root_port",
    ]


def test_vm_flat_tree_is_phb_or_node(tmp_path: Path) -> None:
    sysfs = FakeSysfs(tmp_path / "sys")
    for slot in (4, 5, 6):
        sysfs.add_device(
            ["pci0000:00", f"0000:00:0{slot}.0"], vendor=NVIDIA, cls=GPU_3D, numa_node=-1
        )
    sysfs.add_device(["pci0000:01", "0000:01:00.0"], vendor=NVIDIA, cls=GPU_3D, numa_node=-1)
    reader = SysfsReader(str(sysfs.root))
    assert reader.upstream_path("0000:00:04.0") == []
    assert reader.link_class("0000:00:04.0", "0000:00:05.0") == ("PHB", None)
    # Unknown NUMA across host bridges: NODE on a single-node guest, unknown otherwise.
    assert reader.link_class("0000:00:04.0", "0000:01:00.0", numa_nodes=1) == ("NODE", None)
    cls, reason = reader.link_class("0000:00:04.0", "0000:01:00.0", numa_nodes=2)
    assert cls is None
    assert reason is not None
    assert NUMA_UNKNOWN in reason


def test_link_class_device_missing(box: Box) -> None:
    cls, reason = SysfsReader(str(box.sys)).link_class(GPU0, "0000:ee:00.0")
    assert cls is None
    assert reason == "0000:ee:00.0 is not in sysfs"


def test_empty_or_missing_sysfs_is_harmless(tmp_path: Path) -> None:
    reader = SysfsReader(str(tmp_path / "nothing"))
    assert reader.bus_ids() == []
    assert reader.nvidia_gpus() == []
    assert reader.nics() == []
    assert reader.iommu_units() is None
    assert reader.iommu_group_count() is None
    assert not reader.exists()

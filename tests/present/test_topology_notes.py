"""topology_notes: notable wiring facts on varied synthetic topologies."""

from __future__ import annotations

import time

from pcidoc.doctor.topology_notes import gpu_list, topology_notes
from pcidoc.model import Capture, NvLink
from tests.builders import machine


def notes_of(cap: Capture) -> list[str]:
    return topology_notes(cap)


def within_node(n: int, per_node: int, link: str) -> dict[tuple[int, int], str]:
    """Pairs inside each NUMA node of ``per_node`` GPUs set to ``link``."""
    return {
        (a, b): link for a in range(n) for b in range(a + 1, n) if a // per_node == b // per_node
    }


# ----------------------------------------------------------------------------- NVLink


def test_full_mesh_through_nvswitch_from_link_facts() -> None:
    notes = notes_of(machine(8, link="NV18"))  # builder links report remote_type="switch"
    assert notes[0] == "all 8 GPUs are NV18 to each other (full mesh through NVSwitch)"


def test_full_mesh_inferred_nvswitch_class_without_link_facts() -> None:
    cap = machine(8, link="NV18")
    for gpu in cap.gpus:
        gpu.nvlinks = []
    assert notes_of(cap)[0] == "all 8 GPUs are NV18 to each other (NVSwitch-class full mesh)"


def test_small_mesh_is_not_called_nvswitch() -> None:
    # 4 GPUs x NV4: 12 links per GPU, possible with direct links: no NVSwitch claim.
    cap = machine(4, link="NV4")
    for gpu in cap.gpus:
        gpu.nvlinks = []
    assert notes_of(cap)[0] == "all 4 GPUs are NV4 to each other (full NVLink mesh)"


def test_direct_mesh_when_links_point_at_gpus() -> None:
    cap = machine(4, link="NV4")
    for gpu in cap.gpus:
        gpu.nvlinks = [NvLink(link=i, state="up", remote_type="gpu") for i in range(12)]
    assert notes_of(cap)[0] == "all 4 GPUs are NV4 to each other (direct NVLink full mesh)"


def test_two_gpus_joined_by_nvlink() -> None:
    cap = machine(2, link="NV2")
    for gpu in cap.gpus:
        gpu.nvlinks = []
    notes = notes_of(cap)
    assert notes[0] == "GPU0 and GPU1 are joined by NV2"
    assert not any("NVSwitch" in n for n in notes)


def test_gpu_without_nvlink_peers() -> None:
    pairs = {(min(2, j), max(2, j)): "SYS" for j in range(8) if j != 2}
    notes = notes_of(machine(8, link="NV18", pairs=pairs))
    assert "GPU2 has no NVLink peer while the other GPUs have NV18 between them" in notes
    assert "NVLink joins 21 of 28 GPU pairs directly (NV18); the other pairs use SYS" in notes


def test_bridge_pairs() -> None:
    notes = notes_of(machine(4, link="PHB", pairs={(0, 1): "NV4", (2, 3): "NV4"}))
    assert notes[0] == "NVLink bridge pairs: (0,1) (2,3) (NV4); other GPU pairs use PCIe"
    assert not any("no NVLink peer" in n for n in notes)


def test_single_bridge_pair_and_pcie_only_gpu() -> None:
    notes = notes_of(machine(3, link="NODE", pairs={(0, 1): "NV4"}))
    assert notes[0] == "NVLink bridge pairs: (0,1) (NV4); other GPU pairs use PCIe"
    assert "GPU2 has no NVLink peer while the other GPUs have NV4 between them" in notes


def test_nvlink_islands() -> None:
    cap = machine(8, link="SYS", pairs=within_node(8, 4, "NV12"), numa_nodes=2)
    notes = notes_of(cap)
    assert notes[0] == (
        "NVLink islands: GPUs 0-3 (NV12 full mesh); GPUs 4-7 (NV12 full mesh); "
        "pairs between islands use SYS"
    )


def test_one_degraded_pair_is_named() -> None:
    notes = notes_of(machine(8, link="NV18", pairs={(2, 5): "NV16"}))
    assert notes[0] == (
        "every GPU pair has NVLink but not the same number of links: (2,5) NV16, the others NV18"
    )


def test_unknown_pairs_prevent_structure_claims() -> None:
    cap = machine(8, link="NV18")
    cap.topology.links[5][6] = cap.topology.links[6][5] = None
    notes = notes_of(cap)
    assert notes[0] == "every known GPU pair has NVLink (NV18); 1 pair unknown"
    assert "the link class of 1 GPU pair is unknown: (5,6)" in notes
    assert not any("full mesh" in n for n in notes)


# ------------------------------------------------------------------------------- PCIe


def test_pix_pairs_share_a_switch() -> None:
    notes = notes_of(machine(4, link="PHB", pairs={(0, 1): "PIX", (2, 3): "PIX"}))
    assert "pairs (0,1) (2,3) share a PCIe switch (PIX)" in notes
    assert "GPU pair paths: 2 × PIX, 4 × PHB (of 6 pairs)" in notes


def test_pix_group_of_four() -> None:
    cap = machine(8, link="SYS", pairs=within_node(8, 4, "PIX"), numa_nodes=2)
    notes = notes_of(cap)
    assert "GPUs 0-3; GPUs 4-7 share a PCIe switch (PIX)" in notes


def test_pxb_pairs() -> None:
    notes = notes_of(machine(4, link="SYS", pairs={(0, 1): "PXB"}, numa_nodes=2))
    assert "pairs (0,1) connect through several PCIe bridges without the CPU (PXB)" in notes


def test_uniform_pcie_class() -> None:
    assert "every GPU pair is PHB" in notes_of(machine(4, link="PHB"))
    assert notes_of(machine(2, link="PIX"))[0] == "GPU0 and GPU1 are PIX to each other"


# ------------------------------------------------------------------------------- NUMA


def test_dual_socket() -> None:
    cap = machine(8, link="SYS", pairs=within_node(8, 4, "PHB"), numa_nodes=2)
    notes = notes_of(cap)
    assert (
        "GPUs 0-3 on NUMA 0 and 4-7 on NUMA 1; pairs across nodes are SYS, within a node PHB"
        in notes
    )
    assert not any("flattened" in n or "fewer NUMA" in n for n in notes)


def test_nvlink_across_sockets() -> None:
    notes = notes_of(machine(8, link="NV18", numa_nodes=2))
    assert "GPUs 0-3 on NUMA 0 and 4-7 on NUMA 1" in notes


def test_all_sys_within_and_across_nodes() -> None:
    notes = notes_of(machine(8, link="SYS", numa_nodes=2))
    assert "GPUs 0-3 on NUMA 0 and 4-7 on NUMA 1; pairs are SYS both across and within nodes" in (
        notes
    )


def test_each_gpu_own_node() -> None:
    notes = notes_of(machine(4, link="SYS", numa_nodes=4))
    assert "each GPU is on its own NUMA node (4 nodes)" in notes


def test_all_gpus_on_one_of_two_nodes() -> None:
    cap = machine(4, link="PIX", numa_nodes=2)
    for gpu in cap.gpus:
        gpu.numa_node = 0
    assert "all 4 GPUs are on NUMA 0 (the host has 2 NUMA nodes)" in notes_of(cap)


def test_partial_numa_unknown() -> None:
    cap = machine(4, link="PHB")
    cap.gpus[3].numa_node = None
    assert "NUMA node of GPU3 is not reported" in notes_of(cap)


# -------------------------------------------------------------------------- flattening


def test_flattened_vm() -> None:
    notes = notes_of(machine(4, link="SYS", hypervisor=True))
    assert notes[0] == (
        "every GPU pair is SYS while all GPUs report NUMA 0: "
        "topology flattened by the hypervisor (this host is a VM)"
    )
    assert "every GPU pair is SYS" not in notes  # not said twice


def test_flattened_unknown_hypervisor_says_likely() -> None:
    notes = notes_of(machine(4, link="SYS", hypervisor=None))
    assert (
        "every GPU pair is SYS while all GPUs report NUMA 0: topology likely flattened by a "
        "hypervisor" in notes
    )


def test_all_sys_across_real_sockets_is_not_flattened() -> None:
    notes = notes_of(machine(4, link="SYS", numa_nodes=2))
    assert not any("flattened" in n for n in notes)
    assert "every GPU pair is SYS" in notes


def test_sys_paths_with_single_numa_node() -> None:
    cap = machine(2, link="NV12", nics=["NIC0", "NIC1"], nic_links={(0, "NIC0"): "PXB"})
    notes = notes_of(cap)
    assert any(
        n.startswith("3 SYS paths (SYS crosses NUMA nodes) while every GPU reports NUMA 0")
        for n in notes
    )


# -------------------------------------------------------------------------------- NICs


def rail_machine() -> Capture:
    return machine(
        8,
        link="NV18",
        numa_nodes=2,
        nics=["NIC0", "NIC1", "NIC2", "NIC3", "NIC4"],
        nic_links={(0, "NIC0"): "PIX", (2, "NIC1"): "PIX", (4, "NIC2"): "PXB", (6, "NIC3"): "PIX"},
    )


def test_gpus_without_near_nic() -> None:
    notes = notes_of(rail_machine())
    assert "GPU1, GPU3, GPU5, GPU7 have no NIC at PIX/PXB distance" in notes


def test_nic_sys_to_every_gpu() -> None:
    cap = rail_machine()
    cap.nics[4].name = "mlx5_bond_0"
    assert "NIC4 (mlx5_bond_0) is SYS to every GPU" in notes_of(cap)


def test_every_gpu_has_a_near_nic() -> None:
    links = {(g, f"NIC{g}"): "PIX" for g in range(4)}
    cap = machine(
        4, link="NV6", nics=["NIC0", "NIC1", "NIC2", "NIC3"], nic_links=links, numa_nodes=4
    )
    notes = notes_of(cap)
    assert "every GPU has a NIC at PIX/PXB distance" in notes
    assert not any("SYS to every GPU" in n for n in notes)


def test_no_gpu_has_a_near_nic() -> None:
    cap = machine(4, link="SYS", nics=["NIC0", "NIC1"], hypervisor=True)
    notes = notes_of(cap)
    assert "no GPU has a NIC at PIX/PXB distance (nearest: SYS)" in notes
    assert "every NIC is SYS to every GPU" in notes


def test_unknown_nic_cells_are_not_counted_as_far() -> None:
    cap = rail_machine()
    nic_positions = range(8, 13)
    for j in nic_positions:  # GPU7's NIC cells unknown
        cap.topology.links[7][j] = cap.topology.links[j][7] = None
    notes = notes_of(cap)
    assert "GPU1, GPU3, GPU5 have no NIC at PIX/PXB distance" in notes
    assert "5 GPU-NIC paths are unknown" in notes


def test_no_nics_no_nic_notes() -> None:
    assert not any("NIC" in n for n in notes_of(machine(4, link="NV4")))


# --------------------------------------------------------------------------- data gaps


def test_clipped_cpu_affinity() -> None:
    cap = machine(8, link="NV8", numa_nodes=2)
    for gpu in cap.gpus[:4]:
        gpu.cpu_affinity = "-31,64-95"
    notes = notes_of(cap)
    assert (
        "CPU affinity of GPUs 0-3 ('-31,64-95') is not a valid CPU list: likely clipped in the "
        "paste" in notes
    )


def test_cpu_affinity_unavailable_reason() -> None:
    cap = machine(2, link="PHB")
    cap.gpus[0].cpu_affinity = None
    cap.gpus[0].mark_unavailable("cpu_affinity", "clipped in the paste")
    assert "CPU affinity of GPU0 is unknown: clipped in the paste" in notes_of(cap)


def test_odd_affinity_within_a_node() -> None:
    cap = machine(8, link="NV8", numa_nodes=2)
    cap.gpus[7].cpu_affinity = "2-63,96-127"
    notes = notes_of(cap)
    assert "GPU7 on NUMA 1 reports CPU affinity '2-63,96-127', unlike GPUs 4-6 ('48-95')" in notes


def test_na_affinity_is_not_clipped() -> None:
    cap = machine(2, link="PHB")
    for gpu in cap.gpus:
        gpu.cpu_affinity = "N/A"
    assert not any("clipped" in n for n in notes_of(cap))


def test_asymmetric_matrix() -> None:
    cap = machine(4, link="NV4")
    cap.topology.links[0][1] = "NV2"
    notes = notes_of(cap)
    assert "the matrix is not symmetric: GPU0→GPU1 is NV2 but GPU1→GPU0 is NV4" in notes


def test_gpu_missing_from_matrix() -> None:
    cap = machine(4, link="PHB")
    cap.topology.labels = cap.topology.labels[:3]
    cap.topology.links = [row[:3] for row in cap.topology.links[:3]]
    assert "GPU3 is not in the topology matrix" in notes_of(cap)


def test_no_matrix() -> None:
    cap = Capture.empty("import")
    cap.unavailable["topology"] = "not in the pasted output"
    assert notes_of(cap) == ["no topology matrix: not in the pasted output"]


def test_single_gpu_has_no_pair_notes() -> None:
    notes = notes_of(machine(1, link="SYS"))
    assert not any("pair" in n or "NVLink" in n for n in notes)


def test_gpu_list_formats() -> None:
    assert gpu_list([3]) == "GPU3"
    assert gpu_list([7, 1, 3, 5]) == "GPU1, GPU3, GPU5, GPU7"
    assert gpu_list([0, 1, 2, 3, 8]) == "GPUs 0-3,8"
    assert gpu_list([1, 3, 5, 7, 9]) == "GPUs 1,3,5,7,9"


def test_72_gpus_fast() -> None:
    cap = machine(72, link="NV18", nics=[f"NIC{i}" for i in range(18)], numa_nodes=2)
    start = time.perf_counter()
    notes = notes_of(cap)
    elapsed = time.perf_counter() - start
    print(f"\ntopology_notes on 72 GPUs + 18 NICs: {elapsed * 1000:.1f} ms")
    assert notes[0].startswith("all 72 GPUs are NV18 to each other")

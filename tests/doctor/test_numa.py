"""numa.cross-socket, numa.process-affinity and numa.nic-affinity.

Topologies follow files of the real-output corpus (../shared/realdata/topo/...), named next to
each fixture; the machines themselves are synthetic (tests/builders.py).
"""

from __future__ import annotations

import pytest

from pcidoc.doctor.checks.numa.nic_affinity import numa_nic_affinity
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import load_checks
from pcidoc.doctor.runner import run_check
from pcidoc.model import Capture, CheckResult, GpuProcess
from tests.builders import machine


def result(cap: Capture, check_id: str) -> CheckResult:
    return run_check(load_checks()[check_id], Context(cap))


def xeon(cap: Capture, model: str) -> Capture:
    cap.host.cpu_vendor = "intel"
    cap.host.cpu_model = model
    return cap


def gen(cap: Capture, generation: int, width: int = 16) -> Capture:
    for g in cap.gpus:
        g.pcie.current_gen = g.pcie.max_gen = generation
        g.pcie.current_width = g.pcie.max_width = width
    return cap


# ========================================================================= numa.cross-socket


def test_cross_socket_nvswitch_box_on_two_sockets_passes() -> None:
    # topo/h100x8-nv18-compacted-columns-ml-engineering: NV18 everywhere, 2 sockets.
    r = result(machine(8, link="NV18", numa_nodes=2), "numa.cross-socket")
    assert r.severity == "pass"


def four_gpu_667() -> Capture:
    # topo/4gpu-pxb-pix-hang-vtd-nccl-667: GPU0-1 PXB (socket 0), GPU2-3 PIX (socket 1), SYS
    # across.
    cap = machine(4, link="SYS", pairs={(0, 1): "PXB", (2, 3): "PIX"}, numa_nodes=2)
    return gen(xeon(cap, "Intel(R) Xeon(R) Gold 6132 CPU @ 2.60GHz"), 3)


def test_cross_socket_sys_pairs_slower_than_the_pcie_links_warn_with_gpu_sets() -> None:
    r = result(four_gpu_667(), "numa.cross-socket")
    assert r.severity == "warn"
    assert "4 GPU pairs cross sockets" in r.summary
    assert "~10 GB/s" in r.summary
    assert "12 GB/s" in r.summary
    assert any("use GPUs 0-1 or GPUs 2-3 together" in step for step in r.remediation)


def test_cross_socket_socket_link_faster_than_pcie_is_info() -> None:
    cap = machine(
        4, link="SYS", pairs={(0, 1): "PXB", (2, 3): "PIX"}, numa_nodes=2, cpu_vendor="amd"
    )
    r = result(gen(cap, 3), "numa.cross-socket")  # AMD 16 GB/s vs Gen3 x16 12 GB/s
    assert r.severity == "info"


def test_cross_socket_unknown_cpu_is_info_medium() -> None:
    cap = machine(2, link="SYS", numa_nodes=2, cpu_vendor=None)
    r = result(cap, "numa.cross-socket")
    assert (r.severity, r.confidence) == ("info", "medium")


def test_flattened_vm_topology_is_not_a_fault() -> None:
    # topo/a10x4-all-sys-vm-2nic-xuesongtap: every pair SYS, all GPUs NUMA 0, cloud VM.
    cap = machine(4, link="SYS", numa_nodes=1, hypervisor=True, nics=["NIC0", "NIC1"])
    r = result(cap, "numa.cross-socket")
    assert (r.severity, r.confidence) == ("info", "low")
    assert "flattened" in r.summary


def test_sys_on_one_numa_node_without_vm_flag_is_still_flattened() -> None:
    cap = machine(2, link="SYS", numa_nodes=1, hypervisor=None)
    r = result(cap, "numa.cross-socket")
    assert r.severity == "info"
    assert "flattened" in r.summary


def test_sys_pairs_with_unknown_numa_nodes_are_not_called_flattened() -> None:
    cap = machine(2, link="SYS", numa_nodes=2, hypervisor=False)
    for g in cap.gpus:
        g.numa_node = None
    r = result(cap, "numa.cross-socket")
    assert "flattened" not in r.summary
    assert "crosses sockets" in r.summary or "cross sockets" in r.summary


def nps4_box() -> Capture:
    # topo/rtx4090x8-dual-epyc7542-nps4-4mlx5-all-sys-blog: all SYS, one GPU per NUMA node.
    cap = machine(8, link="SYS", numa_nodes=8, cpu_vendor="amd")
    cap.host.cpu_model = "AMD EPYC 7542 32-Core Processor"
    cap.host.sockets = 2
    for node in cap.host.numa_nodes:
        node.distances = [
            10 if i == node.id else (12 if i // 4 == node.id // 4 else 32) for i in range(8)
        ]
    return gen(cap, 4)


def test_nps_nodes_of_one_socket_are_told_apart_from_other_sockets() -> None:
    r = result(nps4_box(), "numa.cross-socket")
    assert r.severity == "warn"  # AMD 16 GB/s < Gen4 x16 24 GB/s for the cross-socket pairs
    assert "16 GPU pairs cross sockets" in r.summary
    assert any("GPUs 0-3 or GPUs 4-7" in step for step in r.remediation)
    assert any(e.label == "NUMA nodes per socket" for e in r.evidence)


@pytest.mark.parametrize("sockets", [None, 2])
def test_nps_nodes_without_distances_are_not_called_sockets(sockets: int | None) -> None:
    # The same box as pasted (topo -m only): 8 NUMA nodes, no SLIT distances. 12 of the 28 SYS
    # pairs are inside one socket, which the paste cannot show, so none is called cross-socket.
    cap = nps4_box()
    cap.host.sockets = sockets
    for node in cap.host.numa_nodes:
        node.distances = None
    r = result(cap, "numa.cross-socket")
    assert r.severity == "info" and r.confidence == "medium"
    assert "28 GPU pairs cross NUMA nodes" in r.summary
    assert "GPU pairs cross sockets" not in r.summary
    assert "cannot tell which of them also cross sockets" in r.summary
    assert any("numactl -H" in step for step in r.remediation)
    p2p = result(cap, "p2p.capability")
    assert "socket" not in p2p.summary


def test_two_numa_nodes_without_distances_are_still_two_sockets() -> None:
    cap = machine(4, link="SYS", numa_nodes=2)
    cap.host.sockets = None
    r = result(cap, "numa.cross-socket")
    assert "crosses sockets" in r.summary or "cross sockets" in r.summary


def test_cross_socket_skips_without_topology() -> None:
    cap = machine(2, link="SYS", numa_nodes=2)
    cap.topology.links = [[None] * 2 for _ in range(2)]
    r = result(cap, "numa.cross-socket")
    assert r.severity == "skip"
    assert r.needs is not None
    assert "topo -m" in r.needs


def test_nic_on_the_other_socket_is_reported() -> None:
    # topo/l40s-x4-node-sys-2mlx5-warpem-106: NICs NODE to GPU2/3, SYS to GPU0/1.
    cap = machine(
        4,
        link="SYS",
        pairs={(0, 1): "NODE", (2, 3): "NODE"},
        numa_nodes=2,
        nics=["NIC0"],
        nic_links={(2, "NIC0"): "NODE", (3, "NIC0"): "NODE"},
    )
    xeon(cap, "Intel(R) Xeon(R) Platinum 8468")  # Sapphire Rapids: 22 GB/s
    r = result(gen(cap, 4), "numa.cross-socket")
    assert r.severity == "warn"  # Sapphire Rapids 22 GB/s < Gen4 x16 24 GB/s
    assert "NIC0" in r.subjects
    nic_rows = [e for e in r.evidence if e.label == "GPUs at SYS from this NIC"]
    assert [(e.subject, e.value) for e in nic_rows] == [("NIC0 (mlx5_0)", "GPUs 0-1")]


# ===================================================================== numa.process-affinity


def proc(gpus: list[int], cpus: str, mems: str | None = None, pid: int = 4242) -> GpuProcess:
    return GpuProcess(pid=pid, name="python", gpus=gpus, cpu_affinity=cpus, mems_allowed=mems)


def test_process_affinity_skips_outside_live_captures() -> None:
    r = result(machine(2, kind="import"), "numa.process-affinity")
    assert r.severity == "skip"
    assert "live" in r.summary


def test_process_affinity_no_processes_is_info() -> None:
    r = result(machine(2), "numa.process-affinity")
    assert r.severity == "info"
    assert "no GPU processes" in r.summary


def test_process_pinned_to_the_other_socket_fails() -> None:
    cap = machine(2, numa_nodes=2)  # GPU0 on node 0 (0-47), GPU1 on node 1 (48-95)
    cap.host.processes = [proc([1], "0-47", "0")]
    r = result(cap, "numa.process-affinity")
    assert (r.severity, r.confidence) == ("fail", "high")
    assert "none local" in r.summary
    assert any("numactl --cpunodebind=1 --membind=1" in step for step in r.remediation)


@pytest.mark.parametrize(("cpus", "severity"), [("0-8,48-95", "warn"), ("0-47", "pass")])
def test_process_local_share_edge(cpus: str, severity: str) -> None:
    cap = machine(2, numa_nodes=2)
    cap.host.processes = [proc([0], cpus)]
    assert result(cap, "numa.process-affinity").severity == severity


def test_unbound_process_on_two_sockets_is_info_not_warn() -> None:
    cap = machine(2, numa_nodes=2)
    cap.host.processes = [proc([0], "0-95")]  # exactly half local
    r = result(cap, "numa.process-affinity")
    assert r.severity == "info"
    assert "not bound" in r.summary


def test_mems_allowed_excluding_the_gpu_node_warns() -> None:
    cap = machine(2, numa_nodes=2)
    cap.host.processes = [proc([0], "0-47", mems="1")]
    r = result(cap, "numa.process-affinity")
    assert r.severity == "warn"
    assert "memory only on NUMA node(s) 1" in r.summary


def test_container_compares_against_the_cpuset() -> None:
    cap = machine(2, numa_nodes=2)
    cap.host.virtualization.container = "docker"
    cap.host.processes = [proc([1], "0-15")]
    r = result(cap, "numa.process-affinity")
    assert (r.severity, r.confidence) == ("fail", "medium")
    assert "container's cpuset" in r.summary
    assert any("--cpuset-cpus=48-95 --cpuset-mems=1" in step for step in r.remediation)


def test_numa_balancing_with_bound_ranks_is_info() -> None:
    cap = machine(2, numa_nodes=2)
    cap.host.numa_balancing = True
    cap.host.processes = [proc([0], "0-47", "0", pid=1), proc([1], "48-95", "1", pid=2)]
    r = result(cap, "numa.process-affinity")
    assert r.severity == "info"
    assert any("kernel.numa_balancing=0" in step for step in r.remediation)


def test_process_affinity_unknown_locality_is_not_judged() -> None:
    cap = machine(1, numa_nodes=1)
    cap.gpus[0].cpu_affinity = None
    cap.gpus[0].numa_node = None
    cap.host.processes = [proc([0], "0-3")]
    r = result(cap, "numa.process-affinity")
    assert (r.severity, r.confidence) == ("info", "low")


# ========================================================================= numa.nic-affinity


def test_nic_affinity_without_nics_is_single_node_info() -> None:
    r = result(machine(2), "numa.nic-affinity")
    assert r.severity == "info"
    assert "single-node" in r.summary


def test_nic_affinity_of_an_import_without_topology_is_a_skip() -> None:
    # bandwidth/*: a bandwidthTest paste says nothing about NICs, so "no NICs" is not known.
    cap = machine(1, kind="import")
    cap.topology.labels, cap.topology.links = [], []
    r = result(cap, "numa.nic-affinity")
    assert r.severity == "skip"
    assert r.needs is not None
    assert "topo -m" in r.needs


def test_sparse_nics_name_the_gpus_without_a_local_nic() -> None:
    # topo/h800-8gpu-nv8-2nic-pxb-vllm-8852: NIC0 PXB to GPU2/3, NIC1 PXB to GPU6/7.
    cap = machine(
        8,
        link="NV8",
        numa_nodes=2,
        nics=["NIC0", "NIC1"],
        nic_links={(2, "NIC0"): "PXB", (3, "NIC0"): "PXB", (6, "NIC1"): "PXB", (7, "NIC1"): "PXB"},
    )
    r = result(cap, "numa.nic-affinity")
    assert r.severity == "warn"
    assert r.subjects == ["GPU0", "GPU1", "GPU4", "GPU5"]
    assert "GPUs 0-1,4-5 have no PCIe-local NIC" in r.summary
    assert "25%" in r.summary
    assert any("PXN" in step for step in r.remediation)


def test_half_the_gpus_nic_less_expect_half_bandwidth() -> None:
    # topo/h100-8gpu-nv18-only-4-pix-nics-nccl-tests-232: NIC0-3 PIX to GPU0/2/4/6.
    cap = machine(
        8,
        link="NV18",
        numa_nodes=2,
        nics=["NIC0", "NIC1", "NIC2", "NIC3"],
        nic_links={(0, "NIC0"): "PIX", (2, "NIC1"): "PIX", (4, "NIC2"): "PIX", (6, "NIC3"): "PIX"},
    )
    r = result(cap, "numa.nic-affinity")
    assert r.severity == "warn"
    assert r.subjects == ["GPU1", "GPU3", "GPU5", "GPU7"]
    assert "50%" in r.summary


def test_all_nics_far_from_every_gpu_warns() -> None:
    # topo/a100-sxm4-80gb-x8-nv12-4nic-all-sys-distserve-3: all NICs SYS, 2 sockets.
    cap = machine(8, link="NV12", numa_nodes=2, nics=["NIC0", "NIC1", "NIC2", "NIC3"])
    r = result(cap, "numa.nic-affinity")
    assert r.severity == "warn"
    assert "no GPU has a PCIe-local NIC" in r.summary


def test_the_nearest_nic_class_is_the_first_seen_among_equally_near_ones() -> None:
    # Classes of equal rank (unknown ones here) keep the order of the NICs.
    nics = ["NIC0", "NIC1", "NIC2"]
    links = {(0, "NIC0"): "BAR", (0, "NIC1"): "FOO", (0, "NIC2"): "BAR"}
    links |= {(1, "NIC0"): "FOO", (1, "NIC1"): "BAR", (1, "NIC2"): "FOO"}
    cap = machine(2, link="NV12", nics=nics, nic_links=links)
    findings = numa_nic_affinity(Context(cap))
    assert [(e.subject, e.value) for e in findings[0].evidence] == [
        ("GPU0", "BAR"),
        ("GPU1", "FOO"),
    ]


def test_one_pix_nic_per_gpu_passes() -> None:
    # topo/h100-4gpu-nv6-4nic-nccl-1617: 1:1 GPU-NIC PIX.
    nics = [f"NIC{i}" for i in range(4)]
    cap = machine(
        4, link="NV6", numa_nodes=4, nics=nics, nic_links={(i, f"NIC{i}"): "PIX" for i in range(4)}
    )
    r = result(cap, "numa.nic-affinity")
    assert r.severity == "pass"
    assert "1:1 PIX" in r.summary


def test_passing_nic_affinity_names_the_nearest_nics() -> None:
    # topo/2gpu-nv12-slice-8-mlx5-columns-lmdeploy-1944: mlx5_6/mlx5_7 PXB to both GPUs.
    nics = [f"NIC{i}" for i in range(4)]
    links = {(g, nic): "PXB" for g in (0, 1) for nic in ("NIC2", "NIC3")}
    cap = machine(2, link="NV12", nics=nics, nic_links=links)
    r = result(cap, "numa.nic-affinity")
    assert r.severity == "pass"
    assert any(e.value == "mlx5_2, mlx5_3 (PXB)" for e in r.evidence if e.subject == "GPU0")


def test_bonded_management_nic_is_info() -> None:
    # topo/a100-sxm4-8gpu-nv12-17nic-bond-single-numa-xuesongtap: NIC16 = mlx5_bond_0, SYS.
    cap = machine(
        2, link="NV12", nics=["NIC0", "NIC1"], nic_links={(0, "NIC0"): "PXB", (1, "NIC0"): "PXB"}
    )
    cap.nics[1].name = "mlx5_bond_0"
    r = result(cap, "numa.nic-affinity")
    assert r.severity == "info"
    assert "bonded" in r.summary
    assert any("NCCL_IB_HCA" in step for step in r.remediation)


def test_missing_peermem_warns_on_live_rdma_host() -> None:
    cap = machine(1, nics=["NIC0"], nic_links={(0, "NIC0"): "PIX"})
    cap.nics[0].kind = "infiniband"
    cap.host.gpudirect.nvidia_peermem = False
    r = result(cap, "numa.nic-affinity")
    assert r.severity == "warn"
    assert any("sudo modprobe nvidia-peermem" in step for step in r.remediation)
    cap.host.gpudirect.nvidia_peermem = True
    assert result(cap, "numa.nic-affinity").severity == "pass"


def test_flattened_vm_nics_are_not_judged() -> None:
    cap = machine(4, link="SYS", numa_nodes=1, hypervisor=True, nics=["NIC0", "NIC1"])
    r = result(cap, "numa.nic-affinity")
    assert (r.severity, r.confidence) == ("info", "low")
    assert "flattened" in r.summary


def test_slit_distance_21_is_another_socket_not_a_subnode() -> None:
    # Two-socket Intel hosts report SLIT 10/21; nodes of one socket (SNC/NPS) sit at 11-12.
    # Anything at 20 or above is another socket: 21 must never merge two nodes.
    cap = gen(machine(4, link="SYS", numa_nodes=2), 4)
    for node in cap.host.numa_nodes:
        node.distances = [10 if i == node.id else 21 for i in range(2)]
    r = result(cap, "numa.cross-socket")
    assert "crosses sockets" in r.summary or "cross sockets" in r.summary
    assert r.severity != "pass"


def _hypervisor_view(link: str, numa_affinity: str | None, numa_node: int | None) -> Capture:
    cap = gen(machine(4, link=link, numa_nodes=2, hypervisor=None), 4)
    cap.host.numa_nodes = []
    for g in cap.gpus:
        g.numa_node, g.numa_affinity, g.cpu_affinity = numa_node, numa_affinity, "0-63"
    return cap


@pytest.mark.parametrize(
    ("link", "affinity", "node"),
    [("PHB", "0-1", None), ("SYS", "0-1", None), ("SYS", "-1", -1), ("PHB", "-1", -1)],
)
def test_hypervisor_view_lowers_locality_confidence_and_points_to_a_topo_file(
    link: str, affinity: str, node: int | None
) -> None:
    cap = _hypervisor_view(link, affinity, node)
    for check_id in ("numa.cross-socket", "pcie.shared-uplink"):
        r = result(cap, check_id)
        assert r.severity != "pass" and r.confidence == "low", (check_id, r.summary)
        assert "flattened" in r.summary
        assert any("NCCL_TOPO_FILE" in step for step in r.remediation), check_id


def test_old_driver_matrix_with_per_gpu_affinity_is_two_sockets_not_a_hypervisor() -> None:
    # SOC legend era: no NUMA column, CPU affinity differs per GPU -> two sockets.
    cap = gen(machine(4, link="SYS", numa_nodes=2, hypervisor=None), 4)
    cap.host.numa_nodes = []
    for g in cap.gpus:
        g.numa_node, g.numa_affinity = None, None
        g.cpu_affinity = "0-9,20-29" if g.index < 2 else "10-19,30-39"
    assert Context(cap).flattened_view is None
    assert "flattened" not in result(cap, "env.virtualization").summary
    assert "flattened" not in result(cap, "numa.cross-socket").summary

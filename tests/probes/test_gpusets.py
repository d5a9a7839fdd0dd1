"""choose_gpu_sets / slowest_edge on typical topologies (synthetic captures)."""

from __future__ import annotations

from pcidoc.probes import gpusets
from tests.builders import machine


def _dual_socket_pix_pairs():
    """8 PCIe GPUs: PIX pairs (0,1) (2,3) on socket 0, (4,5) (6,7) on socket 1."""
    pairs = {}
    for a in range(8):
        for b in range(a + 1, 8):
            same_socket = (a < 4) == (b < 4)
            pairs[(a, b)] = "NODE" if same_socket else "SYS"
    for a, b in ((0, 1), (2, 3), (4, 5), (6, 7)):
        pairs[(a, b)] = "PIX"
    return machine(8, link="SYS", pairs=pairs, numa_nodes=2)


def test_nvswitch_8() -> None:
    cap = machine(8, link="NV18", numa_nodes=2)
    sets = gpusets.choose_gpu_sets(cap, [1, 2, 4, 8])
    assert sets == {1: [0], 2: [0, 1], 4: [0, 1, 2, 3], 8: list(range(8))}
    assert gpusets.slowest_edge(cap, sets[8]) == "NV18"


def test_dual_socket_pcie_with_pix_pairs() -> None:
    cap = _dual_socket_pix_pairs()
    sets = gpusets.choose_gpu_sets(cap, [1, 2, 4, 8])
    assert sets[2] == [0, 1]  # a PIX pair
    assert sets[4] == [0, 1, 2, 3]  # one socket: worst link NODE, not SYS
    assert sets[1] == [0]
    assert gpusets.slowest_edge(cap, sets[2]) == "PIX"
    assert gpusets.slowest_edge(cap, sets[4]) == "NODE"
    assert gpusets.slowest_edge(cap, sets[8]) == "SYS"


def test_two_bridged_pairs_prefers_the_nvlink_pair() -> None:
    # 4 GPUs; NVLink bridges only on (2,3) and (0,1) is PHB; everything else SYS.
    cap = machine(4, link="SYS", pairs={(0, 1): "PHB", (2, 3): "NV4"})
    sets = gpusets.choose_gpu_sets(cap, [1, 2, 4])
    assert sets[2] == [2, 3]
    assert sets[1] == [2]  # the baseline GPU belongs to the 2-GPU set
    assert sets[4] == [0, 1, 2, 3]
    assert gpusets.slowest_edge(cap, [2, 3]) == "NV4"
    assert gpusets.slowest_edge(cap, [0, 1, 2, 3]) == "SYS"


def test_more_nvlinks_win_and_sets_nest() -> None:
    # (0,1) NV2, (2,3) NV4, 4-7 NV4 among themselves; cross groups SYS.
    pairs = {(0, 1): "NV2", (2, 3): "NV4"}
    for a in range(4, 8):
        for b in range(a + 1, 8):
            pairs[(a, b)] = "NV4"
    cap = machine(8, link="SYS", pairs=pairs, numa_nodes=2)
    sets = gpusets.choose_gpu_sets(cap, [2, 4])
    assert sets[2] == [2, 3]
    assert sets[4] == [4, 5, 6, 7]
    assert gpusets.slowest_edge(cap, [0, 1, 2, 3]) == "SYS"
    assert gpusets.slowest_edge(cap, [0, 1]) == "NV2"


def test_counts_above_the_gpus_are_dropped_and_gpus_restrict() -> None:
    cap = machine(4, link="NV4")
    assert gpusets.choose_gpu_sets(cap, [1, 2, 4, 8]).keys() == {1, 2, 4}
    assert gpusets.choose_gpu_sets(cap, [2], gpus=[1, 3]) == {2: [1, 3]}


def test_unknown_topology_takes_the_lowest_indices() -> None:
    cap = machine(4, link="SYS")
    cap.topology.links = []
    assert gpusets.choose_gpu_sets(cap, [2, 4]) == {2: [0, 1], 4: [0, 1, 2, 3]}
    assert gpusets.slowest_edge(cap, [0, 1]) is None
    assert gpusets.slowest_edge(cap, [0]) is None


def test_greedy_path_for_many_gpus(monkeypatch) -> None:
    monkeypatch.setattr(gpusets, "MAX_SUBSETS", 10)
    cap = _dual_socket_pix_pairs()
    sets = gpusets.choose_gpu_sets(cap, [2, 4])
    assert sets[2] == [0, 1]
    assert gpusets.slowest_edge(cap, sets[4]) == "NODE"


def test_default_rank_counts() -> None:
    assert gpusets.default_gpu_ranks(8) == [1, 2, 4, 8]
    assert gpusets.default_gpu_ranks(3) == [1, 2, 3]
    assert gpusets.default_gpu_ranks(16) == [1, 2, 4, 8, 16]
    assert gpusets.default_gpu_ranks(1) == [1]
    assert gpusets.default_cpu_ranks(2) == [1, 2]
    assert gpusets.default_cpu_ranks(16) == [1, 2, 4, 8]
    assert gpusets.default_cpu_ranks(64) == [1, 2, 4, 8]
    assert gpusets.world_order({1: [2], 2: [2, 3], 4: [0, 1, 2, 3]}) == [0, 1, 2, 3]

"""The launcher environment of ``probe fabric``: torchrun's and Slurm's variables, host lists."""

from __future__ import annotations

import pytest

from pcidoc.errors import PcidocError
from pcidoc.probes.fabric import round_robin, slowest
from pcidoc.probes.launch import expand_hostlist, expand_tasks_per_node, launch_env


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("gpu[01-03,07],cpu5", ["gpu01", "gpu02", "gpu03", "gpu07", "cpu5"]),
        ("node1", ["node1"]),
        ("a,b,c", ["a", "b", "c"]),
        ("n[8-10]", ["n8", "n9", "n10"]),
        ("n[098-101]", ["n098", "n099", "n100", "n101"]),
        ("r[1-2]n[1,3]", ["r1n1", "r1n3", "r2n1", "r2n3"]),
        ("gpu-[1-2].cluster", ["gpu-1.cluster", "gpu-2.cluster"]),
        ("x[5],y[1-2]", ["x5", "y1", "y2"]),
    ],
)
def test_hostlist_expansion(text: str, hosts: list[str]) -> None:
    assert expand_hostlist(text) == hosts


@pytest.mark.parametrize("text", ["gpu[01-03", "gpu01-03]", "n[a-b]", "n[5-2]", "n[1-2-3]"])
def test_malformed_hostlists_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        expand_hostlist(text)


def test_tasks_per_node() -> None:
    assert expand_tasks_per_node("2(x3),1") == [2, 2, 2, 1]
    assert expand_tasks_per_node("8") == [8]
    with pytest.raises(ValueError):
        expand_tasks_per_node("2(3)")


def test_torchrun_environment() -> None:
    env = launch_env(
        {
            "RANK": "9",
            "WORLD_SIZE": "16",
            "LOCAL_RANK": "1",
            "LOCAL_WORLD_SIZE": "8",
            "GROUP_RANK": "1",
            "MASTER_ADDR": "10.0.0.1",
            "MASTER_PORT": "29400",
            "TORCHELASTIC_USE_AGENT_STORE": "True",
            "TORCHELASTIC_RUN_ID": "job7",
            # torchrun wins over a surrounding Slurm allocation
            "SLURM_PROCID": "0",
            "SLURM_NTASKS": "2",
        }
    )
    assert (env.launcher, env.rank, env.world, env.local_rank, env.node_rank) == (
        "torchrun",
        9,
        16,
        1,
        1,
    )
    assert env.nodes == 2 and env.agent_store and env.run_id == "job7.0"
    assert (env.master_addr, env.master_port) == ("10.0.0.1", 29400)
    assert env.expected_node(12) == "node rank 1"


def test_slurm_environment_maps_master_to_the_first_host() -> None:
    env = launch_env(
        {
            "SLURM_PROCID": "5",
            "SLURM_NTASKS": "7",
            "SLURM_LOCALID": "1",
            "SLURM_NODEID": "2",
            "SLURM_NNODES": "4",
            "SLURM_JOB_NODELIST": "gpu[07-08,11],gpu20",
            "SLURM_TASKS_PER_NODE": "2(x3),1",
            "SLURM_JOB_ID": "4242",
            "SLURM_STEP_ID": "3",
        }
    )
    assert (env.launcher, env.rank, env.world, env.local_rank, env.node_rank, env.nodes) == (
        "slurm",
        5,
        7,
        1,
        2,
        4,
    )
    assert env.master_addr == "gpu07" and env.master_port == 20000 + 4242
    assert env.node_hosts == ("gpu07", "gpu08", "gpu11", "gpu20")
    assert env.run_id == "slurm-4242.3"
    assert env.expected_node(6) == "gpu20 (by Slurm's block distribution)"
    assert env.expected_node(2) == "gpu08 (by Slurm's block distribution)"


def test_slurm_master_port_from_the_environment_wins() -> None:
    env = launch_env(
        {"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_JOB_NODELIST": "a", "MASTER_PORT": "1234"}
    )
    assert env.master_port == 1234


@pytest.mark.parametrize(
    ("environ", "needle"),
    [
        ({}, "torchrun or srun"),
        ({"RANK": "0", "WORLD_SIZE": "2"}, "MASTER_ADDR"),
        ({"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, "outside"),
        ({"RANK": "x", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, "integer"),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "n[1-"}, "unbalanced"),
    ],
)
def test_bad_environments_are_one_line_errors(environ: dict, needle: str) -> None:
    with pytest.raises(PcidocError, match=needle):
        launch_env(environ)


@pytest.mark.parametrize("count", [2, 3, 4, 5, 8])
def test_round_robin_pairs_every_two_nodes_once(count: int) -> None:
    rounds = round_robin(count)
    pairs = [p for r in rounds for p in r]
    assert len(pairs) == len(set(pairs)) == count * (count - 1) // 2
    for r in rounds:
        used = [n for p in r for n in p]
        assert len(used) == len(set(used)), "a node in two pairs of one round"


def test_slowest_node_and_pair() -> None:
    names = ["a", "b", "c", "d"]
    good, bad = 20.0, 5.0
    matrix = [[None if i == j else good for j in range(4)] for i in range(4)]
    for k in range(4):
        if k != 2:
            matrix[2][k] = matrix[k][2] = bad
    matrix[2][0] = 4.0
    node, pair = slowest(names, matrix)
    assert node is not None and node["name"] == "c" and node["significant"]
    assert pair == {"from": "c", "to": "a", "gbps": 4.0}
    even = [[None if i == j else good for j in range(4)] for i in range(4)]
    node, _ = slowest(names, even)
    assert node is not None and not node["significant"]
    node, pair = slowest(["a", "b"], [[None, 1.0], [2.0, None]])
    assert node is None and pair == {"from": "a", "to": "b", "gbps": 1.0}

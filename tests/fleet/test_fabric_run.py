"""``pcidoc probe fabric`` for real, with gloo on loopback: two torchrun "nodes", a fake Slurm
step, and a rank that never joins.

Each test starts fresh interpreters that import torch (a few seconds each on a busy runner).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

# The probe imports torch in its own processes; this test process only needs to know it is
# installed (importing it here would load torch into the test worker for nothing).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]

BIN = Path(sys.executable).parent
PCIDOC = shutil.which("pcidoc", path=str(BIN)) or "pcidoc"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLURM_", "TORCHELASTIC_"))
        and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    }
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["GLOO_SOCKET_IFNAME"] = "lo"
    env["OMP_NUM_THREADS"] = "1"
    env.update(extra)
    return env


def _check_document(doc: dict, launcher: str) -> None:
    assert doc["schema"] == "pcidoc.probe/1" and doc["probe"] == "fabric", doc
    assert doc["ok"], doc["errors"]
    assert doc["params"]["launcher"] == launcher and doc["params"]["nodes"] == 2
    world = doc["measurements"]["collectives"][0]
    assert world["ranks"] == 2 and world["nodes"] == 2 and world["correct"] is True
    assert all(r["busbw_gbps"] > 0 for r in world["rows"])
    fabric = doc["fabric"]
    assert [n["ranks"] for n in fabric["nodes"]] == [[0], [1]]
    values = fabric["pair_matrix"]["values"]
    assert values[0][0] is None and values[0][1] > 0 and values[1][0] > 0
    assert fabric["slowest_pair"]["gbps"] == min(values[0][1], values[1][0])
    assert fabric["slowest_node"] is None and "two nodes" in doc["info"]["slowest_node"]


def test_two_torchrun_nodes_on_loopback(tmp_path: Path) -> None:
    port = _free_port()
    procs = []
    for node_rank in (0, 1):
        cmd = [
            sys.executable, "-m", "torch.distributed.run",
            "--nnodes", "2", "--nproc-per-node", "1", "--node-rank", str(node_rank),
            "--master-addr", "127.0.0.1", "--master-port", str(port),
            "--rdzv-conf", "timeout=90",
            "--no-python", PCIDOC, "probe", "fabric", "--backend", "gloo", "--json",
            "--timeout", "120",
        ]  # fmt: skip
        procs.append(
            subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=_env(),
                cwd=tmp_path,
            )
        )
    outs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    doc = json.loads(outs[0][0])
    _check_document(doc, "torchrun")
    assert outs[1][0].strip() == "", "only rank 0 writes the document"


def test_fake_slurm_step_maps_ranks_and_master(tmp_path: Path) -> None:
    """What ``srun --ntasks-per-node=1 -N2 pcidoc probe fabric`` gives each task, on loopback:
    the master is the first host of SLURM_JOB_NODELIST."""
    port = _free_port()
    procs = []
    for rank in (0, 1):
        env = _env(
            SLURM_PROCID=str(rank),
            SLURM_NTASKS="2",
            SLURM_LOCALID="0",
            SLURM_NODEID=str(rank),
            SLURM_NNODES="2",
            SLURM_JOB_NODELIST="localhost,127.0.0.[2]",
            SLURM_TASKS_PER_NODE="1(x2)",
            SLURM_JOB_ID="77",
            MASTER_PORT=str(port),
        )
        cmd = [PCIDOC, "probe", "fabric", "--backend", "gloo", "--json", "--timeout", "120"]
        if rank == 0:
            cmd += ["-o", str(tmp_path / "fabric.json")]
        procs.append(
            subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
            )
        )
    outs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    doc = json.loads(outs[0][0])
    _check_document(doc, "slurm")
    assert doc["params"]["master"] == f"localhost:{port}"
    assert json.loads((tmp_path / "fabric.json").read_text()) == doc


def test_a_rank_that_never_joins_is_named(tmp_path: Path) -> None:
    env = _env(
        RANK="0",
        WORLD_SIZE="2",
        LOCAL_RANK="0",
        LOCAL_WORLD_SIZE="1",
        GROUP_RANK="0",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(_free_port()),
    )
    proc = subprocess.run(
        [PCIDOC, "probe", "fabric", "--backend", "gloo", "--json", "--timeout", "10"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert not doc["ok"] and doc["fabric"]["missing_ranks"] == [1]
    message = doc["errors"][0]["message"]
    assert "rank 1 on node rank 1" in message and "never joined" in message
    assert "never joined" in proc.stderr


def test_the_deadline_ends_the_rank_and_names_the_phase() -> None:
    """A deadline shorter than the join wait: the watchdog ends rank 0 during the join, and the
    document names the phase and the rank that had not reached it."""
    env = _env(
        RANK="0",
        WORLD_SIZE="2",
        LOCAL_WORLD_SIZE="1",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(_free_port()),
    )
    proc = subprocess.run(
        [PCIDOC, "probe", "fabric", "--backend", "gloo", "--json", "--timeout", "2"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    error = doc["errors"][0]
    assert error["kind"] == "timeout"
    assert "deadline of 2 s passed during join" in error["message"]
    assert "1 (not joined)" in error["message"]

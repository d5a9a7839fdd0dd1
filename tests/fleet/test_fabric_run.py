"""``pcidoc probe fabric`` for real, with gloo on loopback: two torchrun "nodes", a fake Slurm
step, and a rank that never joins.

Each test starts fresh interpreters that import torch (a few seconds each on a busy runner).
"""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
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
    assert "rank 1 on node rank 1" in message and "never joined within 5 s" in message
    assert "never joined" in proc.stderr
    assert "NumPy" not in proc.stderr  # torch's warning where NumPy is missing stays out


def test_a_rank_whose_master_never_comes_waits_the_join_timeout_once() -> None:
    """torch's store client retries its connect once more after its timeout (twice the wait
    the message names, with a C++ stack trace each time): the rank waits for the port itself."""
    env = _env(
        RANK="1", WORLD_SIZE="2", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(_free_port()),
    )  # fmt: skip
    # The join waits half the deadline; the other half is margin for what runs before the
    # join on a loaded machine (importing torch.distributed), so the deadline's own watchdog
    # does not end the rank first.
    proc = subprocess.run(
        [PCIDOC, "probe", "fabric", "--backend", "gloo", "--json", "--timeout", "30"],
        capture_output=True, text=True, env=env, timeout=180,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert "could not reach the rendezvous store at 127.0.0.1:" in proc.stderr
    assert "within 15 s" in proc.stderr
    assert "retrying" not in proc.stderr and "Exception raised from" not in proc.stderr
    assert proc.stdout == ""


def _listeners(port: int) -> list[str]:
    """Local addresses listening on ``port`` (from /proc/net/tcp and tcp6)."""
    found = []
    for name in ("tcp", "tcp6"):
        try:
            lines = Path("/proc/net", name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, state = fields[1], fields[3]
            if state == "0A" and int(address.rsplit(":", 1)[1], 16) == port:
                found.append(address.rsplit(":", 1)[0])
    return found


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_ends_the_rank_with_one_line_and_leaves_nothing(tmp_path: Path, signum) -> None:
    """Rank 0 waiting for a rank that never comes (inside torch's store), MASTER_ADDR on
    loopback: the store listens on 127.0.0.1 only, and SIGTERM / SIGHUP / SIGINT end the rank
    at once with 143 / 129 / 130, one line, no traceback, no file, no process."""
    port = _free_port()
    env = _env(
        RANK="0", WORLD_SIZE="2", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1", GROUP_RANK="0",
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
    )  # fmt: skip
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen(
        [PCIDOC, "probe", "fabric", "--backend", "gloo", "--timeout", "300",
         "-o", str(out / "fabric.json")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        start_new_session=True,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(
        target=lambda: [lines.put(line) for line in proc.stderr],
        daemon=True,  # type: ignore[union-attr]
    )
    reader.start()
    seen = []
    while not any("fabric: join" in line for line in seen):
        seen.append(lines.get(timeout=120))  # Empty (a failure) if the rank never gets there
    try:
        addresses = _listeners(port)
        assert addresses, "rank 0 should be listening"
        loopback = {"0100007F", "0000000000000000FFFF00000100007F"}
        assert set(addresses) <= loopback, addresses  # never 0.0.0.0 or ::
    finally:
        os.killpg(proc.pid, signum)
    proc.wait(timeout=60)
    reader.join(timeout=10)
    rest = []
    while not lines.empty():
        rest.append(lines.get())
    stderr = "".join(seen + rest)
    assert proc.returncode == 128 + signum, stderr[-2000:]
    name = signal.Signals(signum).name
    assert stderr.strip().splitlines()[-1] == (
        f"pcidoc: fabric rank 0: interrupted by {name} during join"
    )
    assert "Traceback" not in stderr
    assert list(out.iterdir()) == []
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)


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

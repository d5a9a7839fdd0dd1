"""Signals during a probe: SIGTERM/SIGHUP end the probe's process group like Ctrl-C and exit
143/129 with one JSON document; a ``kill -9`` of pcidoc cannot orphan the probe (parent-death
signal); the single-node rendezvous store listens on loopback only; the gloo probes without
torch say so in one line. Real processes, the gloo probe on CPU (no GPU)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from pcidoc.probes import protocol
from pcidoc.probes.runner import ProbeSpec, SubprocessProbeRunner, group_members
from tests.probes.test_child_and_cli import needs_torch

ROOT = Path(__file__).resolve().parents[2]


def _probe_child_of(pid: int, timeout_s: float = 60.0, members: int = 3) -> int:
    """The probe child's pid (= its process group) once it has ``members`` processes."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            children = psutil.Process(pid).children()
        except psutil.NoSuchProcess:
            break
        for child in children:
            if child.pid == os.getpgid(child.pid) and len(group_members(child.pid)) >= members:
                return child.pid
        time.sleep(0.1)
    raise AssertionError("the probe child and its workers did not start")


def _wait_gone(pgid: int, timeout_s: float = 15.0) -> list[int]:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and group_members(pgid):
        time.sleep(0.1)
    return group_members(pgid)


_LONG_GLOO_PROBE = """
import sys
from argparse import Namespace
from pcidoc.probes import console

plain = console.collective_spec


def endless(*args, **kwargs):
    spec = plain(*args, **kwargs)
    spec.params["steps"] = 10**9  # the real gloo scaling probe, made to run until stopped
    return spec


console.collective_spec = endless
args = Namespace(name="scaling", gpus=None, backend="gloo", ranks="1,2", mode="quick",
                 json=True, timeout=None, force=False)
sys.exit(console.probe_command(args, lambda line: print(line, file=sys.stderr, flush=True)))
"""


def _start_gloo_probe() -> subprocess.Popen[str]:
    """``pcidoc probe scaling --backend gloo --json`` (probe_command, the subprocess runner and
    the real gloo child), with a step count that keeps it running until it is stopped."""
    return subprocess.Popen(
        [sys.executable, "-c", _LONG_GLOO_PROBE],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@needs_torch
@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "code", "how"),
    [
        (signal.SIGTERM, 143, "SIGTERM"),
        (signal.SIGHUP, 129, "SIGHUP"),
        (signal.SIGINT, 130, "Ctrl-C"),
    ],
)
def test_sigterm_and_sighup_end_the_probe_group_and_print_json(
    signum: int, code: int, how: str
) -> None:
    proc = _start_gloo_probe()
    try:
        pgid = _probe_child_of(proc.pid)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    assert _wait_gone(pgid) == []
    document = json.loads(out)
    assert document["interrupted"] == how
    assert any(e["kind"] == "interrupted" for e in document["errors"])
    assert f"interrupted by {how}" in err
    assert "Traceback" not in err


@needs_torch
@pytest.mark.slow
def test_kill_9_of_pcidoc_does_not_orphan_the_probe() -> None:
    proc = _start_gloo_probe()
    try:
        pgid = _probe_child_of(proc.pid)
        proc.kill()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _wait_gone(pgid) == [], "the probe's processes outlived a kill -9 of pcidoc"


@needs_torch
def test_single_node_rendezvous_store_listens_on_loopback_only() -> None:
    from datetime import timedelta

    import torch.distributed as dist

    from pcidoc.probes.distributed import loopback_store

    store = loopback_store(dist, 1, timedelta(seconds=5))
    listening = [
        c
        for c in psutil.Process().net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr.port == store.port
    ]
    assert listening and all(c.laddr.ip == "127.0.0.1" for c in listening)
    store.set("k", "v")
    assert store.get("k") == b"v"


def test_gloo_probe_without_torch_gives_the_install_hint(tmp_path: Path) -> None:
    shadow = tmp_path / "torch"
    shadow.mkdir()
    (shadow / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n"
    )
    spec = ProbeSpec(
        name="allreduce",
        params={"mode": "quick", "backend": "gloo", "world": 2, "members": {"1": [0], "2": [0, 1]}},
        expected_s=5.0,
        startup_s=30.0,
        env={"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"},
    )
    outcome = SubprocessProbeRunner().run(spec)
    assert [(e.kind, e.message) for e in outcome.errors] == [
        ("unavailable", f"torch is not installed: {protocol.INSTALL_HINT}")
    ]
    assert "--python" in protocol.INSTALL_HINT


_LONG_CHECK = """
import sys
from pcidoc import cli
from pcidoc.probes import session

plain = session.collective_spec


def endless(*args, **kwargs):
    spec = plain(*args, **kwargs)
    spec.params["steps"] = 10**9  # the real gloo scaling probe of `check`, kept running
    return spec


session.collective_spec = endless
sys.exit(cli.main(["check", "--probes", "quick", "--json"]))
"""


@needs_torch
@pytest.mark.slow
def test_sigterm_during_check_probes_exits_143() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _LONG_CHECK],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        pgid = _probe_child_of(proc.pid, timeout_s=90.0)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert _wait_gone(pgid) == []
    assert "interrupted by SIGTERM" in err
    assert "Traceback" not in err

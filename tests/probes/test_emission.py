"""The scaling probe reports its ladder after every rank count (a real gloo run on CPU), so a
deadline keeps the counts that finished; read from the child's raw protocol stream."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pcidoc.probes.runner import child_environment
from tests.probes.test_child_and_cli import needs_torch

ROOT = Path(__file__).resolve().parents[2]


@needs_torch
@pytest.mark.slow
def test_scaling_emits_the_ladder_after_each_rank_count() -> None:
    params = {
        "mode": "quick",
        "backend": "gloo",
        "world": 2,
        "members": {"1": [0], "2": [0, 1]},
        "gpus_by_count": {"1": [], "2": []},
        "threads_per_rank": 1,
        "width": 64,
        "depth": 2,
        "batch": 8,
        "warmup_steps": 1,
        "steps": 3,
        "busbw_iters": 2,
    }
    env = child_environment({"CUDA_VISIBLE_DEVICES": ""})
    proc = subprocess.run(
        [sys.executable, "-m", "pcidoc.probes.child", "scaling", "--params", json.dumps(params)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    messages = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    ladders = [m for m in messages if m["type"] == "result" and m["kind"] == "scaling"]
    assert [[p["ranks"] for p in m["measurement"]["points"]] for m in ladders] == [[1], [1, 2]]
    last = ladders[-1]["measurement"]
    assert last["points"][1]["allreduce_busbw_gbps"] is not None
    plans = [m["data"]["plan"] for m in messages if m["type"] == "info" and "plan" in m["data"]]
    assert plans == [{"rank_counts": [1, 2]}]

"""The small matrix: real torch.distributed jobs (gloo on CPU) made to fail by tools/inject.py,
then explained. The full matrix is tests/benchmarks/explain_accuracy.py (docs/explain.md has
its table); these runs keep the README's test command under a minute for them.

Each job leaves only what a real job leaves in its folder; the truth is written outside it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pcidoc.explain import explain_paths

ROOT = Path(__file__).resolve().parents[2]
INJECT = ROOT / "tools" / "inject.py"
EVIDENCE = ROOT.parent / "shared" / "realdata-evidence" / "kernel-log"

pytest.importorskip("torch")


def inject(tmp_path: Path, *args: str) -> tuple[Path, dict[str, Any]]:
    """Run one job; its folder and its truth."""
    out, truth = tmp_path / "job", tmp_path / "truth.json"
    command = [sys.executable, str(INJECT), *args, "--steps", "6", "--out", str(out)]
    run = subprocess.run(
        [*command, "--truth", str(truth)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return out, json.loads(truth.read_text(encoding="utf-8"))


CASES = [
    ("--ranks", "2", "--fault", "hang", "--victim", "1", "--launcher", "slurm", "--seed", "1"),
    (
        "--ranks",
        "3",
        "--fault",
        "die",
        "--victim",
        "0",
        "--launcher",
        "mpi",
        "--variant",
        "sigkill",
    ),
    ("--ranks", "2", "--fault", "slow", "--victim", "0", "--launcher", "ray", "--seed", "2"),
    (
        "--ranks",
        "3",
        "--fault",
        "mismatch",
        "--variant",
        "op",
        "--victim",
        "2",
        "--launcher",
        "slurm",
    ),
    ("--ranks", "2", "--fault", "none", "--launcher", "mpi", "--seed", "4"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[3]}-{c[1]}ranks")
def test_a_real_failed_job_is_explained(case: tuple[str, ...], tmp_path: Path) -> None:
    out, truth = inject(tmp_path, *case, "--timeout", "2")
    assert truth["valid"], truth["retried"]
    result = explain_paths([str(out)])
    got = (result.culprit.rank, result.culprit.cause) if result.culprit else (None, None)
    want = (truth["victim"]["rank"], truth["cause"]) if truth["victim"] else (None, None)
    assert got == want, result.summary
    if truth["victim"] is None:
        assert result.exit_code == 0
    # What the job left holds no answer (the harness's file name aside: it is the job's script).
    text = "\n".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    for word in ("victim", "truth", "INJECT_"):
        assert word not in text, word


@pytest.mark.skipif(
    not EVIDENCE.is_dir(), reason="../shared/realdata-evidence is not beside this checkout"
)
def test_two_nodes_an_xid_and_a_clock_set_off(tmp_path: Path) -> None:
    out, truth = inject(
        tmp_path,
        *("--ranks", "4", "--nodes", "2", "--fault", "xid", "--victim", "3", "--seed", "5"),
        *("--launcher", "slurm", "--timeout", "2"),
    )
    result = explain_paths([str(out)])
    assert result.culprit is not None
    victim = truth["victim"]
    assert (result.culprit.rank, result.culprit.cause) == (victim["rank"], "xid")
    assert (result.culprit.host, result.culprit.bus_id) == (victim["host"], victim["bus_id"])
    skew = truth["clock_skew_s"][victim["host"]]
    assert result.clock_offsets[victim["host"]] == pytest.approx(skew, abs=0.25)
    assert any(e.role == "hardware" and "journalctl" in e.ref.file for e in result.evidence)


def test_the_truth_may_not_go_into_the_jobs_folder(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(INJECT), "--ranks", "2", "--fault", "hang", "--out", str(tmp_path),
         "--truth", str(tmp_path / "t.json")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 3 and "outside --out" in run.stderr

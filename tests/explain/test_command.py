"""``pcidoc explain``: the JSON contract, exit codes, text output, hostile inputs, and the
headless rule (no Textual, no torch)."""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from pcidoc.cli import main
from pcidoc.explain import read
from pcidoc.explain.gather import gather

ROOT = Path(__file__).resolve().parents[2]


def _console(ranks: int, stuck: int | None, steps: int = 4, host: str = "node-a1") -> str:
    """An ``srun -l`` console of a job (as tools/inject.py's jobs print it); rank ``stuck``
    stops after step 2 and the others time out."""
    stamp = "2026-01-05 10:00:0"
    lines = [
        f"{r}: {stamp}0,{100 + r:03d} INFO rank {r}/{ranks} (local rank {r}) on {host} "
        f"pid {100 + r}"
        for r in range(ranks)
    ]
    last = steps if stuck is None else 2
    for step in range(1, last + 1):
        lines += [
            f"{r}: {stamp}{step},{200 + r:03d} INFO step {step}/{steps} loss 0.3 "
            "compute_ms 40.0 allreduce_ms 5.0"
            for r in range(ranks)
        ]
    for r in range(ranks) if stuck is not None else []:
        if r == stuck:
            continue
        lines += [
            f"{r}: [rank{r}]: Traceback (most recent call last):",
            f'{r}: [rank{r}]:   File "/venv/torch/distributed/distributed_c10d.py", line 3252, '
            "in all_reduce",
            f"{r}: [rank{r}]:     work.wait()",
            f"{r}: [rank{r}]: RuntimeError: [gloo/transport/tcp/unbound_buffer.cc:78] Timed out "
            "waiting 3000ms for recv operation to complete",
            f"srun: error: {host}: task {r}: Exited with exit code 1",
        ]
    return "\n".join(lines) + "\n"


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def hung_job(tmp_path: Path) -> Path:
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "slurm-1234.out").write_text(_console(3, stuck=1), encoding="utf-8")
    return folder


def test_the_json_contract(hung_job: Path) -> None:
    code, out, err = _run("explain", "--json", str(hung_job))
    assert code == 2, err
    data = json.loads(out)
    assert data["schema"] == "pcidoc.explain/1"
    assert data["culprit"]["rank"] == 1 and data["culprit"]["host"] == "node-a1"
    assert data["culprit"]["cause"] == "hang" and 0.0 < data["confidence"] <= 1.0
    assert data["waiting_ranks"] == [0, 2]
    evidence = data["evidence"][0]
    assert evidence["file"] == "job/slurm-1234.out" and evidence["line"] > 0
    assert "step 2/4" in evidence["text"]
    chain = {c["rank"]: c for c in data["chain"]}
    assert chain[1]["local_rank"] == 1 and chain[1]["bus_id"] is None
    assert any("bus id" in gap for gap in chain[1]["not_established"])
    assert data["timeline"]["clock_offsets_s"] == {"node-a1": 0.0}
    assert data["timeline"]["first_anomaly"]["rank"] == 1
    assert data["actions"] and data["collect_next_time"]
    assert [r["role"] for r in data["ranks"]] == ["waited", "culprit", "waited"]
    assert data["exit_code"] == 2


def test_the_text_says_the_same(hung_job: Path) -> None:
    code, out, _ = _run("explain", str(hung_job))
    assert code == 2
    assert out.startswith("pcidoc explain: rank 1 on node-a1 stopped first (hang)")
    assert "job/slurm-1234.out:" in out and "What to do" in out


def test_a_healthy_job_exits_0(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(_console(3, stuck=None), encoding="utf-8")
    code, out, _ = _run("explain", "--json", str(tmp_path))
    data = json.loads(out)
    assert code == 0 and data["culprit"] is None and data["status"] == "ok"


@pytest.mark.parametrize("what", ["missing", "empty", "binary"])
def test_nothing_readable_is_bad_input(tmp_path: Path, what: str) -> None:
    path = tmp_path / "job"
    if what != "missing":
        path.mkdir()
    if what == "binary":
        (path / "core").write_bytes(b"\x00\x01\x02" * 1000)
    code, out, err = _run("explain", str(path))
    assert code == 3 and out == ""
    assert err.count("\n") == 1 and err.startswith("pcidoc: no readable job file")


def test_terminal_escapes_in_a_log_never_reach_the_terminal(tmp_path: Path) -> None:
    text = _console(3, stuck=1).replace("INFO step 2/4", "INFO \x1b]0;owned\x07\x1b[2J step 2/4")
    (tmp_path / "n\x1b[31mode.log").write_text(text, encoding="utf-8")
    code, out, _ = _run("explain", "--verbose", str(tmp_path))
    assert code == 2
    assert "\x1b" not in out and "\x07" not in out
    code, out, _ = _run("explain", "--json", str(tmp_path))
    assert "\\u001b" not in out and "\x1b" not in out


def test_special_files_links_and_loops_are_skipped_without_blocking(
    hung_job: Path, tmp_path: Path
) -> None:
    os.mkfifo(hung_job / "pipe.log")
    os.symlink(hung_job, hung_job / "loop")
    os.symlink("/dev/zero", hung_job / "zero.log")
    facts = gather([str(hung_job)])
    reasons = {Path(u.path).name: u.reason for u in facts.unread}
    assert reasons["pipe.log"] == "not a regular file"
    assert reasons["zero.log"] == "not a regular file"
    assert not any("loop" in f for f in facts.files_read)


def test_sizes_and_time_are_bounded(
    hung_job: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (hung_job / "huge.log").write_text("x" * 5000, encoding="utf-8")
    monkeypatch.setattr(read, "MAX_FILE_BYTES", 4096)
    facts = gather([str(hung_job)])
    assert any(u.reason.startswith("larger than") for u in facts.unread)
    late = gather([str(hung_job)], budget_s=0.0)
    assert late.notes and "longer than" in late.notes[0]
    assert {Path(u.path).name for u in late.unread} >= {"slurm-1234.out"}


def test_a_dump_that_would_run_code_is_skipped_and_said(hung_job: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"

    class Runs:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {marker}",))

    (hung_job / "nccl_trace_rank_1").write_bytes(pickle.dumps({"entries": [Runs()]}))
    code, out, _ = _run("explain", "--json", str(hung_job))
    data = json.loads(out)
    assert code == 2 and not marker.exists()
    assert any("refused" in u["reason"] for u in data["inputs"]["unread"])


def test_explain_never_loads_textual_or_torch(hung_job: Path) -> None:
    probe = (
        "import io, sys, contextlib, json\n"
        "from pcidoc.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main(['explain', '--json', {str(hung_job)!r}])\n"
        "print(json.dumps([code, sorted(m for m in ('textual', 'torch') if m in sys.modules)]))\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT,
                         timeout=120, check=True)  # fmt: skip
    assert json.loads(run.stdout.splitlines()[-1]) == [2, []]

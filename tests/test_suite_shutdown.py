"""A passing run ends without a ``KeyboardInterrupt`` traceback (issue 30).

execnet gives an xdist worker 5 s to finish after the run, then sends it SIGINT; pytest's five
garbage collections at unconfigure took longer than that on a whole run's heap, so the
interrupt landed in whatever ran (Hypothesis's gc callback) and printed a traceback. The
suite's ``pytest_sessionfinish`` collects once and freezes the survivors; this test runs a small
session in a child and checks that the heap is frozen by the time pytest collects at the end.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_PLUGIN = """
import gc


def pytest_unconfigure(config):
    print(f"frozen at unconfigure: {gc.get_freeze_count()}", flush=True)
"""


def test_the_heap_is_frozen_before_pytest_collects_at_the_end(tmp_path: Path) -> None:
    (tmp_path / "freeze_probe.py").write_text(_PLUGIN, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "freeze_probe",
            "tests/test_lazyre.py",
        ],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("frozen at unconfigure")]
    assert int(line.rsplit(" ", 1)[1]) > 10_000, line

"""Every pattern of ``pcidoc explain`` runs in linear time: the importers' check
(``tests/importers/regex_child.py``: 100,000-character runs under a CPU-time limit per
pattern, no clock read) over the explain modules."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULES = [f"pcidoc.explain.{name}" for name in ("lines", "read", "gather", "flight", "hardware")]


def test_every_explain_pattern_is_linear() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.importers.regex_child", "20", *MODULES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,  # a guard against a hung child, not a timing assertion
    )
    lines = done.stdout.strip().splitlines()
    assert done.returncode not in (-signal.SIGXCPU, -signal.SIGKILL), (
        f"{lines[-1] if lines else '?'} backtracks on a 100,000-character run"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert lines[-1] == "done"
    assert sum(1 for line in lines if "PREFIX_PATTERNS" in line) == 4  # the launchers
    assert len(lines) > 30

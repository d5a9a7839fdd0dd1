"""Every pattern of ``pcidoc explain`` runs in linear time: the importers' check
(``tests/importers/regex_child.py``: inputs built from each pattern's own prefixes, CPU time of
a long run compared with short runs in one process, no clock read) over the explain modules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULES = [f"pcidoc.explain.{name}" for name in ("lines", "read", "gather", "flight", "hardware")]


def test_every_explain_pattern_is_linear() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.importers.regex_child", *MODULES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,  # a guard against a hung child, not a timing assertion
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines and lines[-1].startswith("done "), done.stdout[-2000:]
    found = [json.loads(line) for line in lines[:-1]]
    assert not found, "\n".join(f"{f['name']}: {f['pattern']!r} on {f['input']}" for f in found)
    assert int(lines[-1].split()[1]) > 30, "fewer patterns than explain holds: the collection broke"

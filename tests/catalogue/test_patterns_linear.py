"""Every pattern of the failure catalogue runs in linear time (docs/catalogue.md: bounded
repetitions, no nested or adjacent unbounded quantifiers over the same characters).

The patterns (each entry's and its ``when`` rules') are fed the runs of
``tests/importers/regex_child.py`` — 100,000 blanks, word characters, digits and mixed tokens,
alone and around the pattern's own words — in a child process with a CPU-time limit per pattern.
A pattern that backtracks quadratically needs ~10^10 steps there and is killed; nothing here
reads a clock."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.importers.test_regex_linear import LIMIT_S, _killed_by_cpu_limit

ROOT = Path(__file__).resolve().parents[2]
CHILD = (
    "import sys\n"
    "from pcidoc import catalogue\n"
    "catalogue.catalogue()\n"
    "from tests.importers.regex_child import main\n"
    "sys.exit(main(int(sys.argv[1]), ['pcidoc.catalogue']))\n"
)


def test_every_catalogue_pattern_is_linear() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(LIMIT_S)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,  # a guard against a hung child, not a timing assertion
    )
    lines = done.stdout.strip().splitlines()
    if _killed_by_cpu_limit(done.returncode):
        pytest.fail(f"{lines[-1] if lines else '?'}: backtracks on a 100,000-character run")
    assert done.returncode == 0, done.stderr[-2000:]
    assert lines and lines[-1] == "done"
    assert len(lines) > 40, "fewer patterns than the catalogue holds: the collection broke"

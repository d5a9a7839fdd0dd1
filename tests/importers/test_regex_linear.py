"""Every importer pattern runs in linear time (issue 23: quadratic regexes).

Each importer module's patterns are fed runs of 100,000 blanks, word characters, digits and
mixed tokens, alone and around the pattern's own words (``tests/importers/regex_child.py``), in a
child process with a CPU-time limit per pattern (``RLIMIT_CPU``). A pattern that backtracks
quadratically needs ~10^10 steps there and is killed; linear ones need milliseconds. The
limit is generous and nothing here reads a clock, so the test cannot flake on a slow machine.
The two repro files of ``../shared/bad-inputs/`` are imported under the same kind of limit.
"""

from __future__ import annotations

import pkgutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import pcidoc.collect.importers as importers

ROOT = Path(__file__).resolve().parents[2]
LIMIT_S = 20
MODULES = [importers.__name__] + [
    f"{importers.__name__}.{info.name}" for info in pkgutil.iter_modules(importers.__path__)
]
BAD_INPUTS = ROOT.parent / "shared" / "bad-inputs"


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,  # a guard against a hung child, not a timing assertion
    )


def _killed_by_cpu_limit(code: int) -> bool:
    return code in (-signal.SIGXCPU, -signal.SIGKILL)


def test_every_importer_pattern_is_linear() -> None:
    # One child for every module (each child start costs more than a module's patterns).
    done = _run(["-m", "tests.importers.regex_child", str(LIMIT_S), *MODULES])
    lines = done.stdout.strip().splitlines()
    if _killed_by_cpu_limit(done.returncode):
        pytest.fail(
            f"{lines[-1] if lines else '?'}: over {LIMIT_S} s of CPU on a 100,000-character "
            "run: the pattern backtracks (quadratic or worse); anchor it, bound its tokens "
            "or split the line in Python first"
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert lines and lines[-1] == "done"
    assert len(lines) > 100, "fewer patterns than the importers hold: the collection broke"


def test_the_child_finds_the_patterns_of_a_module() -> None:
    from tests.importers import regex_child

    names = [name for name, _ in regex_child.patterns(f"{importers.__name__}.nccl_tests")]
    assert any("_RANK_RE" in name or "Rank" in name for name in names)
    assert len(names) >= 10


def test_the_cpu_limit_stops_a_quadratic_pattern() -> None:
    # The method must be able to fail: the prefix nccl-tests' importer used to carry.
    code = (
        "import re, resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_CPU, ({LIMIT_S}, resource.RLIM_INFINITY))\n"
        "re.compile(r'^\\s*#?\\s*nThread').search(' ' * 100_000 + 'x')\n"
    )
    done = _run(["-c", code])
    assert _killed_by_cpu_limit(done.returncode), done.returncode


_IMPORT_UNDER_LIMIT = """
import resource, sys
resource.setrlimit(resource.RLIMIT_CPU, ({limit}, resource.RLIM_INFINITY))
from pcidoc.collect.importers import import_paths
from pcidoc.errors import PcidocError
try:
    result = import_paths([sys.argv[1]])
    print("imported", len(result.capture.origin.sources))
except PcidocError as exc:
    print("refused", exc)
"""


@pytest.mark.parametrize("name", ["spaces-line.txt", "nccl-long-token.txt"])
def test_bad_input_repro_imports_within_the_cpu_limit(name: str) -> None:
    path = BAD_INPUTS / name
    if not path.is_file():
        pytest.skip(f"{path} is not here (../shared is absent)")
    done = _run(["-c", _IMPORT_UNDER_LIMIT.format(limit=LIMIT_S), str(path)])
    assert not _killed_by_cpu_limit(done.returncode), f"{name}: over {LIMIT_S} s of CPU"
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(("imported", "refused"))

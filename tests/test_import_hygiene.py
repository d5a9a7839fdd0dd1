"""Layer rules of DESIGN.md §2, checked at run time in fresh interpreters.

The headless commands must never import Textual or torch; torch loads only in a probe's child
process; only collect/nvml.py may import pynvml (checked statically by ruff's banned-api rule
and here by scanning the source).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pcidoc.collect.capture import save_capture
from pcidoc.samples.synthetic import synthetic_16

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = ("textual", "textual_plotext", "torch", "plotext")

_PROBE = """
import io, json, sys, contextlib
from pcidoc.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
    code = main({argv!r})
loaded = sorted(m for m in {forbidden!r} if m in sys.modules)
print(json.dumps({{"code": code, "loaded": loaded}}))
"""


def _run(argv: list[str], forbidden: tuple[str, ...] = FORBIDDEN) -> dict:
    code = _PROBE.format(argv=argv, forbidden=forbidden)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def capture_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("hygiene") / "m.json"
    save_capture(synthetic_16(), path)
    return str(path)


@pytest.mark.parametrize(
    "argv",
    [
        ["topo", "--json", "--from", "{capture}"],
        ["topo", "--from", "{capture}"],
        ["check", "--json", "--from", "{capture}"],
        ["check", "--from", "{capture}", "-o", "{tmp}/r.html"],
        ["capture", "-o", "-"],
        ["samples"],
    ],
    ids=["topo-json", "topo-text", "check-json", "check-html", "capture", "samples"],
)
def test_headless_commands_do_not_load_tui_or_torch(
    argv: list[str], capture_file: str, tmp_path: Path
) -> None:
    real = [a.format(capture=capture_file, tmp=tmp_path) for a in argv]
    result = _run(real)
    assert result["code"] in (0, 1, 2), result
    assert result["loaded"] == [], f"{argv} imported {result['loaded']}"


def test_check_loads_the_catalogue_only_for_lines_to_judge(capture_file: str) -> None:
    """A machine without log lines: the failure catalogue's module (~1.5 ms of start-up) and its
    TOML reader stay unloaded; the checks import it when they have lines to explain."""
    result = _run(["check", "--json", "--from", capture_file], ("pcidoc.catalogue", "tomllib"))
    assert result["code"] in (0, 1, 2), result
    assert result["loaded"] == []


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--json", "--from", "{capture}"],
        ["check", "--json", "--demo", "h800-8gpu-hgx"],  # a real sample
        ["check", "--json", "--demo", "autodl-2080ti-2gpu"],  # a real sample with evidence
        ["topo", "--json", "--from", "{capture}"],
    ],
)
def test_json_commands_do_not_import_typing(argv: list[str], capture_file: str) -> None:
    """typing costs ~3 ms of every start and only the type checker needs it: modules on these
    paths import its names under ``TYPE_CHECKING = False``, and model modules take ``Any`` and
    ``Literal`` from :mod:`pcidoc.model.base` (docs/performance.md). ``copy`` (with ``weakref``,
    ~1 ms) is not needed to build the report: a default that is an immutable scalar is used as
    it is."""
    argv = [a.format(capture=capture_file) for a in argv]
    result = _run(argv, ("typing", "pydantic", "copy"))
    assert result["code"] in (0, 1, 2), result
    assert result["loaded"] == [], f"{argv} imported {result['loaded']}"


@pytest.mark.parametrize(
    "argv",
    [["check", "--json", "--demo", "synthetic-16gpu"], ["topo", "--demo", "synthetic-16gpu"]],
    ids=["check-json", "topo-text"],
)
def test_headless_commands_skip_the_pydantic_plugin_scan(argv: list[str]) -> None:
    """Looking for pydantic plugins reads every installed distribution's entry points (7-11 ms
    with torch installed) when the first validator is built; pcidoc needs no plugin."""
    code = (
        "import io, sys, contextlib, importlib.metadata as md\n"
        "scans = []\n"
        "real = md.entry_points\n"
        "md.entry_points = lambda *a, **k: scans.append(k) or real(*a, **k)\n"
        "from pcidoc.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main({argv!r})\n"
        "print(code, any(k.get('group') == 'pydantic' for k in scans))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    code_text, scanned = proc.stdout.split()
    assert code_text in ("0", "1", "2")
    assert scanned == "False", f"{argv} scanned the installed distributions for pydantic plugins"


def test_the_probe_must_detect_a_leak() -> None:
    """The probe above is able to fail: importing the TUI package loads textual."""
    code = "import sys, pcidoc.tui.app; print('textual' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert proc.stdout.strip().endswith("True"), proc.stderr


def test_only_nvml_module_imports_pynvml() -> None:
    pattern = re.compile(r"^\s*(import pynvml|from pynvml\b)", re.MULTILINE)
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "pcidoc").rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
        and path.relative_to(ROOT).as_posix() != "pcidoc/collect/nvml.py"
    ]
    assert offenders == []


def test_torch_is_imported_only_by_probe_child_code() -> None:
    pattern = re.compile(r"^\s*(import torch|from torch\b)", re.MULTILINE)
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "pcidoc").rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
        and "probes" not in path.relative_to(ROOT).parts
    ]
    assert offenders == []

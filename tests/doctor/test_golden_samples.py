"""Golden outputs of ``pcidoc check`` on every bundled sample: what a user of ``--demo`` sees.

For each sample of ``pcidoc.samples.sample_names()``: the ``--json`` report and the Markdown
report (``-o report.md``), run in-process through ``pcidoc.cli.main`` with a fixed clock
(``SOURCE_DATE_EPOCH``) and a fixed pcidoc version, compared byte for byte with
``tests/doctor/golden/``. The synthetic samples' JSON keeps only the report's own part (their
machine is big generated data, and it is the bundled file itself). The default demo's terminal
output is kept too, and must fit one 100x40 screen.

Rewrite the goldens after an intended change and review the diff::

    PCIDOC_UPDATE_GOLDEN=1 .venv/bin/pytest tests/doctor/test_golden_samples.py

(The variable is read at import time: tests/conftest.py clears PCIDOC_* before each test.)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pcidoc.cli import main
from pcidoc.samples import default_demo, sample_names

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("PCIDOC_UPDATE_GOLDEN") == "1"

EPOCH = "1700000000"  # 2023-11-14T22:13:20Z
VERSION = "0.0.0-golden"
SCREEN = (100, 40)
"""The terminal a newcomer runs ``pcidoc check --demo`` in: columns, lines."""

SAMPLES = sample_names()
CHECKS_ONLY = {name for name in SAMPLES if name.startswith("synthetic-")}
"""Samples whose JSON golden keeps the checks, not the (generated, large) machine."""

EXIT_FOR_WORST = {"fail": 2, "error": 3, "warn": 1}


@pytest.fixture(autouse=True)
def _fixed_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    monkeypatch.setenv("COLUMNS", str(SCREEN[0]))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setattr("pcidoc.doctor.runner.__version__", VERSION)


def compare(name: str, actual: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(actual, encoding="utf-8", newline="\n")
    assert path.exists(), f"missing golden {path}; run with PCIDOC_UPDATE_GOLDEN=1"
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"{name} differs from its golden; PCIDOC_UPDATE_GOLDEN=1 rewrites it"


def test_every_sample_is_covered() -> None:
    assert default_demo() in SAMPLES
    names = {p.name for p in GOLDEN.glob("check-*")} if GOLDEN.is_dir() else set()
    expected = {f"check-{n}.json" for n in SAMPLES} | {f"check-{n}.md" for n in SAMPLES}
    expected.add(f"check-{default_demo()}.txt")
    if not UPDATE:
        assert names == expected, "stale or missing goldens; PCIDOC_UPDATE_GOLDEN=1 rewrites them"


@pytest.mark.parametrize("name", SAMPLES)
def test_json_report(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "--json", "--demo", name])
    out = capsys.readouterr().out
    data = json.loads(out)
    assert data["schema"] == "pcidoc.report/1"
    assert data["generated_at"] == "2023-11-14T22:13:20Z"
    assert code == EXIT_FOR_WORST.get(data["worst"], 0)
    if name in CHECKS_ONLY:
        del data["machine"]
        out = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    compare(f"check-{name}.json", out)


@pytest.mark.parametrize("name", SAMPLES)
def test_markdown_report(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "report.md"
    main(["check", "--demo", name, "-o", str(target)])
    captured = capsys.readouterr()
    assert f"pcidoc: wrote {target}" in captured.err
    text = target.read_text(encoding="utf-8")
    assert "(unknown host)" not in text
    compare(f"check-{name}.md", text)


def test_default_demo_fits_one_screen(capsys: pytest.CaptureFixture[str]) -> None:
    """A newcomer's first command: what is wrong and what to do, without scrolling."""
    code = main(["check", "--demo"])
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) < SCREEN[1], f"{len(lines)} lines do not fit a {SCREEN} screen with prompt"
    assert max(len(line) for line in lines) <= SCREEN[0]
    assert code == 1
    assert "What to do first" in out
    assert "(unknown host)" not in out
    compare(f"check-{default_demo()}.txt", out)

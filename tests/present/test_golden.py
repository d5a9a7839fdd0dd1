"""Golden tests: exact output of the presenters for fixed synthetic reports.

Rewrite the goldens after an intended change with::

    PCIDOC_UPDATE_GOLDEN=1 .venv/bin/pytest tests/present/test_golden.py

and review the diff. (The variable is read at import time: the autouse fixture in
tests/conftest.py clears PCIDOC_* variables before each test runs.)
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from pcidoc.doctor.topology_notes import topology_notes
from pcidoc.model import ReportSource
from pcidoc.present.json import report_json, topology_json
from pcidoc.present.markdown import render_markdown
from pcidoc.present.text import make_console, render_report, render_topology
from tests.present.fixtures import eight_gpu_capture, measured_report, small_report

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("PCIDOC_UPDATE_GOLDEN") == "1"


def _text(render: Callable[..., None], *args: object, **kwargs: object) -> str:
    out = io.StringIO()
    render(*args, make_console(out, width=100), **kwargs)
    return out.getvalue()


CASES: dict[str, Callable[[], str]] = {
    "report_small.md": lambda: render_markdown(small_report()),
    "report_measured.md": lambda: render_markdown(measured_report()),
    "report_small.json": lambda: report_json(small_report()),
    "topology_8gpu.json": lambda: topology_json(eight_gpu_capture()),
    "check_small.txt": lambda: _text(render_report, small_report()),
    "check_small_verbose.txt": lambda: _text(render_report, small_report(), verbose=True),
    "topo_8gpu.txt": lambda: _text(
        render_topology,
        eight_gpu_capture(),
        source=ReportSource(kind="synthetic"),
        notes=topology_notes(eight_gpu_capture()),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name: str) -> None:
    actual = CASES[name]()
    path = GOLDEN / name
    if UPDATE:
        path.write_text(actual, encoding="utf-8", newline="\n")
    assert path.exists(), f"missing golden {path}; run with PCIDOC_UPDATE_GOLDEN=1"
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"{name} differs from its golden; PCIDOC_UPDATE_GOLDEN=1 rewrites it"

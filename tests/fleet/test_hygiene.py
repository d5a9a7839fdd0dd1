"""Layer rules for the fleet commands, in fresh interpreters: no textual or torch in fleet,
diff or check -o .prom; prometheus_client only when a .prom file is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pcidoc.model.fleet import FleetReport
from tests.fleet.conftest import write_fleet

ROOT = Path(__file__).resolve().parents[2]
WATCHED = ("textual", "torch", "prometheus_client")

_PROBE = """
import io, json, sys, contextlib
from pcidoc.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
    code = main({argv!r})
print(json.dumps({{"code": code, "loaded": sorted(m for m in {watched!r} if m in sys.modules),
                  "out": out.getvalue()}}))
"""


def _run(argv: list[str]) -> dict:
    code = _PROBE.format(argv=argv, watched=WATCHED)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def caps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hyg") / "caps"
    write_fleet(folder, 3)
    return folder


def test_fleet_json_loads_neither_tui_torch_nor_prometheus(caps: Path) -> None:
    result = _run(["fleet", "--json", str(caps)])
    assert result["loaded"] == [] and result["code"] == 1
    # The printed document validates against the published model.
    FleetReport.model_validate_json(result["out"])


def test_prom_output_loads_prometheus_client_only(caps: Path, tmp_path: Path) -> None:
    result = _run(["fleet", str(caps), "-o", str(tmp_path / "f.prom")])
    assert result["loaded"] == ["prometheus_client"]
    result = _run(["check", "--from", str(caps / "node01.json"), "-o", str(tmp_path / "n.prom")])
    assert result["loaded"] == ["prometheus_client"]


def test_diff_and_check_json_stay_light(caps: Path) -> None:
    assert _run(["diff", str(caps / "node01.json"), str(caps / "node02.json")])["loaded"] == []
    assert _run(["check", "--json", "--from", str(caps / "node01.json")])["loaded"] == []

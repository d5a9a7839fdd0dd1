"""``pcidoc`` / ``pcidoc --demo`` / ``pcidoc --from``: loading before the app starts, exit codes,
and what the first screen does not import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

from pcidoc.errors import PcidocError
from pcidoc.tui import run_tui
from tests.tui.conftest import ROOT


def _pcidoc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pcidoc", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """stdin and stdout count as a terminal (the TUI refuses to start without one)."""
    monkeypatch.setattr("pcidoc.cli.output.isatty", lambda _stream: True)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--from", "/nonexistent/machine.json"], "machine.json"),
        (["--demo", "no-such-sample"], "no-such-sample"),
    ],
    ids=["missing-file", "unknown-demo"],
)
def test_load_errors_exit_3_with_one_line_before_the_app_starts(
    args: list[str], expected: str, terminal: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from pcidoc.cli import main

    assert main(args) == 3
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pcidoc: ") and expected in lines[0]
    assert "Traceback" not in err
    assert out == ""


def test_a_damaged_capture_is_a_load_error(
    tmp_path: Path, terminal: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from pcidoc.cli import main

    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert main(["--from", str(bad)]) == 3
    assert "Traceback" not in capsys.readouterr().err


def test_without_a_terminal_the_tui_refuses_before_loading() -> None:
    # Even a missing file is not looked at: the refusal names the commands that work here.
    result = _pcidoc("--from", "/nonexistent/machine.json")
    assert result.returncode == 3 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert "needs a terminal" in line and "`pcidoc check`" in line


class _Recorder:
    """Stands in for the app: records how run_tui built it."""

    built: ClassVar[list[dict[str, Any]]] = []

    crash = None
    crash_log = None
    debug_errors = False

    def __init__(self, capture: Any, source: Any, **kwargs: Any) -> None:
        _Recorder.built.append({"capture": capture, "source": source, **kwargs})
        self.freeze_gc = False

    def run(self) -> int:
        return 0


def test_run_tui_loads_before_building_the_app(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import pcidoc.tui.app as app_module

    monkeypatch.setattr(app_module, "PcidocApp", _Recorder)
    _Recorder.built.clear()
    with pytest.raises(PcidocError):
        run_tui(from_file=str(tmp_path / "missing.json"))
    assert _Recorder.built == []
    assert run_tui(demo="", interval=0.5) == 0
    from pcidoc.samples import default_demo

    built = _Recorder.built[-1]
    assert built["source"].kind == "demo" and built["source"].name == default_demo()
    assert built["options"].interval == 0.5
    assert run_tui(demo="synthetic-16gpu") == 0
    assert _Recorder.built[-1]["capture"].origin.kind == "synthetic"
    assert run_tui() == 0
    assert _Recorder.built[-1]["capture"] is None  # live: collected inside the app


def test_run_tui_on_a_capture_file_labels_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import pcidoc.tui.app as app_module
    from pcidoc.collect.capture import save_capture
    from tests.tui.machines import acs_machine

    monkeypatch.setattr(app_module, "PcidocApp", _Recorder)
    path = tmp_path / "box.json"
    capture = acs_machine()
    capture.origin.kind = "live"
    save_capture(capture, path)
    assert run_tui(from_file=str(path)) == 0
    source = _Recorder.built[-1]["source"]
    assert source.kind == "capture" and source.path == str(path)


FIRST_SCREEN = """
import asyncio, json, sys
sys.path.insert(0, {root!r})
from tests.tui.conftest import demo_app, settle

async def main():
    app = demo_app("a100-sxm4-8gpu-nvswitch")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.report is not None
    heavy = ("torch", "textual_plotext", "plotext", "pynvml", "pcidoc.probes.runner",
             "pcidoc.collect.live")
    print(json.dumps([m for m in heavy if m in sys.modules]))

asyncio.run(main())
"""


def test_the_demo_first_screen_imports_no_torch_plotext_nvml_or_probes() -> None:
    result = subprocess.run(
        [sys.executable, "-c", FIRST_SCREEN.format(root=str(ROOT))],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []

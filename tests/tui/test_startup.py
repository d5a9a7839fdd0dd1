"""Start-up of the TUI: no cyclic garbage collection before the first screen (issue 12 item 7).

Start-up allocates a lot and frees little, so the collector's passes over it (~45 ms of CPU
on the 2-core CI machine) find nothing. ``run_tui`` turns the collector off; the app turns it
back on after its first complete screen, with everything alive frozen. The time itself is a
benchmark figure (``tests/benchmarks/run.py --only tui``), not asserted here.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any, ClassVar

import pytest

from pcidoc.errors import PcidocError
from pcidoc.tui import run_tui
from tests.tui.conftest import demo_app, settle


class _GcRecorder:
    """Stands in for the app: records whether the collector ran while it was built and run."""

    seen: ClassVar[list[tuple[str, bool]]] = []
    crash = None
    crash_log = None
    debug_errors = False

    def __init__(self, capture: Any, source: Any, **kwargs: Any) -> None:
        _GcRecorder.seen.append(("built", gc.isenabled()))
        self.freeze_gc = False

    def run(self) -> int:
        _GcRecorder.seen.append(("run", gc.isenabled()))
        return 0


@pytest.fixture
def collector_on() -> Any:
    assert gc.isenabled()
    yield
    gc.enable()  # whatever a failing test left behind


def test_run_tui_keeps_the_collector_off_while_starting_and_on_after(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, collector_on: None
) -> None:
    import pcidoc.tui.app as app_module

    monkeypatch.setattr(app_module, "PcidocApp", _GcRecorder)
    _GcRecorder.seen.clear()
    assert run_tui(demo="") == 0
    assert _GcRecorder.seen == [("built", False), ("run", False)]
    assert gc.isenabled()
    # A file that cannot be loaded ends run_tui with the collector on again.
    with pytest.raises(PcidocError):
        run_tui(from_file=str(tmp_path / "missing.json"))
    assert gc.isenabled()


async def test_the_app_turns_the_collector_back_on_after_its_first_screen(
    collector_on: None,
) -> None:
    app = demo_app("autodl-2080ti-2gpu")
    app.freeze_gc = True  # as run_tui sets it
    gc.disable()  # as run_tui leaves it
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            assert app.first_screen_at is not None
            assert gc.isenabled()
    finally:
        gc.unfreeze()


def test_the_first_screen_does_not_load_textuals_tabbed_content() -> None:
    # TabbedContent (a Tabs bar with a widget per tab, an animated underline) cost about 40 ms
    # of the first screen; the one-line PaneTabs and a ContentSwitcher do the same job.
    import subprocess
    import sys

    code = (
        "import sys, pcidoc.tui.app\n"
        "print(sorted(m for m in sys.modules if m.startswith('textual.widgets._tab')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]", result.stdout


class _Built:
    """Stands in for the app: keeps what ``run_tui`` built it with."""

    kwargs: ClassVar[dict[str, Any]] = {}
    crash = None
    crash_log = None
    debug_errors = False

    def __init__(self, capture: Any, source: Any, **kwargs: Any) -> None:
        _Built.kwargs = {"capture": capture, "source": source, **kwargs}
        self.freeze_gc = False

    def run(self) -> int:
        return 0


def test_run_tui_diagnoses_a_loaded_machine_before_the_app_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first screen then has the verdicts in its first paint (no screen of facts alone, no
    # worker beside the first paints): docs/performance.md, sixth session.
    import pcidoc.tui.app as app_module
    from pcidoc.model.report import Report

    monkeypatch.setattr(app_module, "PcidocApp", _Built)
    assert run_tui(demo="") == 0
    report = _Built.kwargs["report"]
    assert isinstance(report, Report)
    assert report.machine is _Built.kwargs["capture"]
    assert report.source == _Built.kwargs["source"]
    assert [c.id for c in report.checks][:2] == ["nvml.health", "pcie.link-speed"]


async def test_an_app_given_its_report_shows_it_at_once_without_running_the_doctor() -> None:
    from pcidoc.samples import load_sample
    from pcidoc.tui.app import make_app
    from pcidoc.tui.live import diagnose
    from pcidoc.tui.services import TuiServices

    calls: list[str] = []

    def counting(capture: Any, source: Any, probes: bool, stamp: str) -> Any:
        calls.append(stamp)
        return diagnose(capture, source, probes, stamp)

    name = "autodl-2080ti-2gpu"
    capture = load_sample(name)
    from pcidoc.model.report import ReportSource

    source = ReportSource(kind="demo", name=name)
    services = TuiServices(diagnose=counting)
    report = services.run_doctor(capture, source)
    assert len(calls) == 1
    app = make_app(capture, source, services=services, report=report)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.report is report
        assert app.displayed is not None and app.displayed.capture is capture
        assert app.first_screen_at is not None
        assert not [w for w in app.workers if w.group == "load"]
    assert len(calls) == 1  # the app did not diagnose the machine again


def test_the_first_screen_does_not_load_the_panes_it_does_not_show() -> None:
    # The Links, Doctor and Host panes (and the probe panel) mount when first opened; their
    # modules load then too (about 10 ms of the first screen).
    import subprocess
    import sys

    lazy = ["links_pane", "doctor_pane", "host_pane", "probe_panel"]
    code = (
        "import sys, pcidoc.tui.app\n"
        f"print(sorted(m for m in {lazy!r} if 'pcidoc.tui.widgets.' + m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]", result.stdout

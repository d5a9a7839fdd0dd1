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

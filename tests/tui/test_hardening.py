"""The TUI under real use (issue 12): keys that arrive together, internal errors, searches,
filters, sorting and jumps."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from textual import events
from textual.binding import Binding, BindingType
from textual.pilot import Pilot

from pcidoc.tui.app import PcidocApp
from pcidoc.tui.screens.export import ExportScreen
from pcidoc.tui.screens.main import MainScreen
from pcidoc.tui.screens.samples import SamplePicker
from tests.tui.conftest import demo_app, make_app, settle
from tests.tui.machines import acs_machine, acs_source


async def burst(pilot: Pilot[Any], *keys: str) -> None:
    """Keys that arrive in one read (a slow SSH link): all queued before any is handled."""
    characters = {"enter": "\r", "escape": "\x1b", "down": None}
    for key in keys:
        pilot.app.post_message(events.Key(key, characters.get(key, key)))
    await pilot.pause()


async def test_two_enters_in_the_export_dialog_export_once(export_dir: Path) -> None:
    # Over a slow SSH link both Enter presses arrive in one read.
    app = make_app(acs_machine(), acs_source(), export_dir=export_dir)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, ExportScreen)
        await burst(pilot, "enter", "enter")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        assert len(app.screen_stack) == 1
        assert len([p for p in export_dir.iterdir() if p.suffix == ".json"]) == 1
    assert app.return_code in (None, 0)


async def test_two_enters_in_the_sample_picker_open_one_sample() -> None:
    loads: list[str | None] = []
    app = demo_app("autodl-2080ti-2gpu")
    original = app._load_demo

    def load(name: str | None):  # type: ignore[no-untyped-def]
        loads.append(name)
        return original(name)

    app._load_demo = load
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, SamplePicker)
        await pilot.press("down")
        await burst(pilot, "enter", "enter")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen) and len(app.screen_stack) == 1
        assert len(loads) == 1
    assert app.return_code in (None, 0)


async def test_escape_then_enter_together_close_the_dialog_once(export_dir: Path) -> None:
    app = make_app(acs_machine(), acs_source(), export_dir=export_dir)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        await burst(pilot, "escape", "enter")
        await settle(pilot)
        assert len(app.screen_stack) == 1
        assert list(export_dir.iterdir()) == []


# ------------------------------------------------------------------------- internal errors


class _Broken(PcidocApp):
    """The app plus a key whose action has a bug."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("z", "broken", "Broken")]

    def action_broken(self) -> None:
        raise RuntimeError("a bug in a key handler")

    def run(self, *args: Any, **kwargs: Any) -> Any:  # as run_tui calls it, but headless
        self.animation_level = "none"

        async def press_z(pilot: Pilot[Any]) -> None:
            await settle(pilot)
            await pilot.press("z")

        return super().run(*args, headless=True, size=(100, 30), auto_pilot=press_z, **kwargs)


def test_an_internal_error_exits_3_in_one_line_with_a_log_of_the_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pcidoc.cli as cli
    import pcidoc.tui.app as app_module

    monkeypatch.setattr(app_module, "PcidocApp", _Broken)
    monkeypatch.setattr(cli, "_isatty", lambda _stream: True)
    monkeypatch.setenv("PCIDOC_LOG_DIR", str(tmp_path / "logs"))
    code = cli.main(["--demo", "autodl-2080ti-2gpu"])
    out, err = capsys.readouterr()
    assert code == 3
    assert "Traceback" not in err and "Traceback" not in out
    (line,) = err.strip().splitlines()
    assert "internal error" in line and "RuntimeError: a bug in a key handler" in line
    (log,) = (tmp_path / "logs").iterdir()
    assert str(log) in line
    text = log.read_text()
    assert "Traceback" in text and "action_broken" in text and "a bug in a key handler" in text


async def test_the_export_notification_names_the_files_once(export_dir: Path) -> None:
    app = make_app(acs_machine(), acs_source(), export_dir=export_dir)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
    (wrote,) = [m for _, m in app.notices if m.startswith("Wrote")]
    assert "pcidoc-report-acs-box-20260101T120000Z.{md,html,json,svg}" in wrote
    assert wrote.endswith(f"in {export_dir}")


async def test_x_with_nothing_running_says_so() -> None:
    app = demo_app("autodl-2080ti-2gpu")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("x")
        await pilot.pause()
    assert any("No probes are running" in m for _, m in app.notices)


async def test_settle_raises_when_the_app_never_settles() -> None:
    def broken_collector():  # type: ignore[no-untyped-def]
        raise OSError("NVML went away")

    app = make_app(collect=broken_collector)
    async with app.run_test(size=(100, 30)) as pilot:
        with pytest.raises(AssertionError, match="did not settle"):
            await settle(pilot, rounds=5)

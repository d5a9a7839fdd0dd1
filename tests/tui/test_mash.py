"""The screen stack and the table cursors survive any key order (issue 23 item 9).

Two key sequences found by key-mashing crashed the app, and a crash ended ``pcidoc --fleet``
with exit code 0. The mashing tests send a fixed-seed random burst of keys from every screen
(deterministic, bounded, a few seconds) and assert that nothing crashed.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, ClassVar

import pytest
from textual.binding import Binding, BindingType
from textual.pilot import Pilot
from textual.widgets import Static

from pcidoc.tui.app import PcidocApp
from pcidoc.tui.screens.export import ExportScreen
from pcidoc.tui.screens.fleet import FleetScreen
from pcidoc.tui.screens.help import HelpScreen
from pcidoc.tui.screens.main import MainScreen
from pcidoc.tui.screens.samples import SamplePicker
from tests.tui.conftest import burst, demo_app, make_app, plain, settle, wait_until


def fleet_report(tmp_path: Path, single: bool = False) -> Any:
    """A fleet of two identical nodes (one group too small to compare) plus, with
    ``single``, a node of another model alone in its group."""
    from pcidoc.fleet.analyze import analyse
    from pcidoc.samples import sample_path

    folder = tmp_path / "fleet"
    folder.mkdir()
    for n in (1, 2):
        (folder / f"node{n}.json").write_text(
            sample_path("a100-sxm4-8gpu-nvswitch").read_text(encoding="utf-8"), encoding="utf-8"
        )
    if single:
        (folder / "odd.json").write_text(
            sample_path("autodl-2080ti-2gpu").read_text(encoding="utf-8"), encoding="utf-8"
        )
    return analyse([str(folder)], workers=1, generated_at="t")


def fleet_app(tmp_path: Path, **kwargs: Any) -> PcidocApp:
    return make_app(
        None, None, collect=lambda: None, fleet=fleet_report(tmp_path), allow_probes=False, **kwargs
    )


async def drained(pilot: Pilot[Any]) -> None:
    """Wait until every queued key was handled."""
    app = pilot.app
    await wait_until(pilot, lambda: app.keys.idle or app.crash is not None, limit=3000)
    await pilot.pause()


# --------------------------------------------------------------------------- the two crashes


@pytest.mark.parametrize("together", [False, True], ids=["press", "one-read"])
async def test_enter_twice_on_the_fleet_node_list_opens_one_node(
    tmp_path: Path, together: bool
) -> None:
    app = fleet_app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen))
        await pilot.pause()
        if together:
            await burst(pilot, "enter", "enter")
        else:
            await pilot.press("enter", "enter")
        await drained(pilot)
        await wait_until(pilot, lambda: app.report is not None)
        assert app.crash is None
        assert isinstance(app.screen, MainScreen) and len(app.screen_stack) == 1
    assert app.crash is None


async def test_links_cursor_survives_opening_a_smaller_machine() -> None:
    # 72 GPUs, GPU3 selected on the Links pane, then the first sample (2 GPUs): the sort
    # restored the cursor on GPU3 before the selection was reset (RowDoesNotExist).
    app = demo_app("synthetic-72gpu", export_dir=Path("."))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2", "down", "down", "down", "s", "home", "enter")
        await drained(pilot)
        await settle(pilot)
        assert app.crash is None
        links = app.main.links
        assert links.capture is not None and len(links.capture.gpus) < 72
        assert links.selected_gpu == links.capture.gpus[0].index


class _BrokenFleet(PcidocApp):
    """The fleet app plus a key whose action has a bug."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("z", "broken", "Broken")]

    def action_broken(self) -> None:
        raise RuntimeError("a bug in a key handler")

    def run(self, *args: Any, **kwargs: Any) -> Any:  # as run_fleet_tui calls it, headless
        self.animation_level = "none"

        async def press_z(pilot: Pilot[Any]) -> None:
            await wait_until(pilot, lambda: isinstance(self.screen, FleetScreen))
            await pilot.press("z")

        return super().run(*args, headless=True, size=(100, 30), auto_pilot=press_z, **kwargs)


def test_a_crash_in_the_fleet_tui_exits_non_zero_naming_the_log(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import pcidoc.tui.app as app_module
    from pcidoc.tui import TuiCrashed
    from pcidoc.tui.screens.fleet import run_fleet_tui

    monkeypatch.setattr(app_module, "PcidocApp", _BrokenFleet)
    monkeypatch.setenv("PCIDOC_LOG_DIR", str(tmp_path / "logs"))
    with pytest.raises(TuiCrashed) as raised:
        run_fleet_tui(fleet_report(tmp_path))
    line = raised.value.message
    assert "\n" not in line and "RuntimeError: a bug in a key handler" in line
    (log,) = (tmp_path / "logs").iterdir()
    assert str(log) in line
    assert raised.value.exit_code != 0


# ------------------------------------------------------------------------------ fleet screen


async def test_a_node_alone_in_its_group_says_too_few_nodes_to_compare(tmp_path: Path) -> None:
    report = fleet_report(tmp_path, single=True)
    app = make_app(None, None, collect=lambda: None, fleet=report, allow_probes=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen))
        await pilot.pause()
        table = app.screen.query_one("#fleet-nodes")
        rows = {
            str(table.get_row_at(i)[1]): str(table.get_row_at(i)[4]) for i in range(table.row_count)
        }
    alone = next(n.name for n in report.nodes if n.path.endswith("odd.json"))
    assert rows[alone].startswith("too few nodes to compare")  # the words of pcidoc fleet
    assert all(what != "matches its peer group" for what in rows.values())


async def test_help_on_the_fleet_screen_lists_only_its_keys(tmp_path: Path) -> None:
    app = fleet_app(tmp_path)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen))
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        keys = plain(app.screen.query_one("#help-keys", Static))
    listed = {line.split()[0] for line in keys.splitlines() if line.strip()}
    assert {"w", "s", "2", "1", "c", "o", "p"}.isdisjoint(listed)
    assert {"enter", "e", "escape"} <= listed


async def test_the_fleet_report_is_exported_from_the_fleet_screen(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    app = fleet_app(tmp_path, export_dir=out)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen))
        await pilot.press("e")
        await drained(pilot)
        assert isinstance(app.screen, ExportScreen)
        await pilot.press(*"fleet", "enter")
        await drained(pilot)
        await wait_until(pilot, lambda: any("Wrote" in m for _, m in app.notices))
        assert isinstance(app.screen, FleetScreen)
    assert sorted(p.name for p in out.iterdir()) == ["fleet.html", "fleet.json", "fleet.md"]
    assert '"pcidoc.fleet/1"' in (out / "fleet.json").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------- key mashing

MASH_KEYS = [
    *"1234wpPxesbonfchjklyn",
    *("slash", "question_mark", "up", "down", "left", "right", "home", "end", "pageup"),
    *("pagedown", "tab", "shift+tab", "enter", "enter", "escape", "f1", "space", "backspace"),
]
"""Every key of every screen but quit (q, ctrl+c), enter twice as likely."""


def mash(seed: int, count: int) -> list[str]:
    """A fixed random sequence of keys."""
    rng = random.Random(seed)
    return [rng.choice(MASH_KEYS) for _ in range(count)]


SCREENS = {
    "topology": [],
    "links": ["2"],
    "doctor": ["3"],
    "host": ["4"],
    "help": ["question_mark"],
    "export": ["e"],
    "samples": ["s"],
}


async def test_mashing_keys_on_every_screen_never_crashes(tmp_path: Path) -> None:
    # One app (a start-up per screen would triple the time), each screen in turn: back to the
    # panes (escape closes any dialog), open the screen, then a burst of random keys.
    app = demo_app("synthetic-16gpu", export_dir=tmp_path)
    expected = {"help": HelpScreen, "export": ExportScreen, "samples": SamplePicker}
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        for number, (start, keys) in enumerate(SCREENS.items()):
            await pilot.press("escape", "escape", "escape")
            await drained(pilot)
            assert isinstance(app.screen, MainScreen), start
            await pilot.press(*keys)
            await drained(pilot)
            assert isinstance(app.screen, expected.get(start, MainScreen)), start
            await burst(pilot, *mash(seed=23 + number, count=25))
            await drained(pilot)
            assert app.crash is None, start
            assert isinstance(app.screen_stack[0], MainScreen), start
    assert app.crash is None and app.return_code in (None, 0)


async def test_mashing_keys_on_the_fleet_screen_never_crashes(tmp_path: Path) -> None:
    app = fleet_app(tmp_path, export_dir=tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen))
        await burst(pilot, *mash(seed=9, count=40))
        await drained(pilot)
        assert app.crash is None
    assert app.crash is None and app.return_code in (None, 0)

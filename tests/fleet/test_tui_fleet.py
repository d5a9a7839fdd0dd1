"""``pcidoc --fleet DIR``: the fleet screen, Enter opens a node, Escape comes back (Pilot)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable

from pcidoc.fleet.analyze import analyse
from pcidoc.tui.screens.fleet import FleetScreen
from tests.tui.conftest import make_app, plain, wait_until


def _app(fleet_dir: Path):
    report = analyse([str(fleet_dir)], workers=1, generated_at="t")
    return make_app(None, None, collect=lambda: None, fleet=report, allow_probes=False)


async def test_fleet_screen_lists_worst_first_and_opens_a_node(fleet_dir: Path) -> None:
    app = _app(fleet_dir)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen))
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        assert table.row_count == 24
        first = [str(cell) for cell in table.get_row_at(0)]
        second = [str(cell) for cell in table.get_row_at(1)]
        assert first[1] == "node05" and first[0] == "!*" and first[2] == "FAIL"
        assert second[1] == "node12" and "replays 5000" in second[4]
        assert [str(table.get_row_at(2)[0])] == [" "]  # a node like its peers: no mark
        detail = plain(app.screen.query_one("#fleet-detail"))
        assert "node05" in detail and "exclude:" in detail and "width x8" in detail
        # Enter on the second row opens node12 in the usual panes.
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: app.report is not None)
        assert not isinstance(app.screen, FleetScreen)
        assert app.source is not None and app.source.path.endswith("node12.json")
        assert "node12" in plain(app.main.query_one("#header-machine"))
        # Escape returns to the fleet, the cursor on the node that was open.
        await pilot.press("escape", "w", "s")
        await pilot.pause()
        assert isinstance(app.screen, FleetScreen)  # the panes' keys do nothing here
        assert app.screen.query_one(DataTable).cursor_row == 1
        # e exports the fleet report (issue 22); Escape closes the dialog, back to the fleet.
        await pilot.press("e")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "ExportScreen")
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen))
        assert app.screen.query_one(DataTable).cursor_row == 1
        # The list is the top: escape there does not re-open the last node (issue 30).
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, FleetScreen)
        # Enter on that node (the cursor stayed on it) shows it again, without reloading.
        report = app.report
        await pilot.press("enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, FleetScreen))
        assert app.source is not None and app.source.path.endswith("node12.json")
        assert app.report is report


async def test_escape_before_any_node_stays_on_the_fleet(fleet_dir: Path) -> None:
    app = _app(fleet_dir)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen))
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, FleetScreen)


async def test_a_skipped_file_is_named_once_on_the_fleet_screen(fleet_dir: Path) -> None:
    broken = fleet_dir / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    app = _app(fleet_dir)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen))
        await pilot.pause()
        text = plain(app.screen.query_one("#fleet-unreadable"))
        assert "skipped" in text and text.count("broken.json") == 1, text


async def test_the_fleet_export_dialog_keeps_the_typed_path_after_a_failure(
    fleet_dir: Path, tmp_path: Path
) -> None:
    report = analyse([str(fleet_dir)], workers=1, generated_at="t")
    app = make_app(
        None, None, collect=lambda: None, fleet=report, allow_probes=False, export_dir=tmp_path
    )
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen))
        await pilot.press("e")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "ExportScreen")
        app.screen.query_one("#export-path").value = "missing/fleet"
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(app.export_retry))
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen))
        await pilot.press("e")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "ExportScreen")
        assert app.screen.query_one("#export-path").value == "missing/fleet"

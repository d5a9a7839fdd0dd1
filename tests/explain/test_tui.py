"""``pcidoc --explain PATH``: the explanation screen (Pilot)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Static

from pcidoc.explain import explain_paths
from pcidoc.tui.screens.explain import ExplainApp, ExplainScreen
from tests.explain.test_command import _console
from tests.tui.conftest import plain, wait_until


async def test_the_culprit_comes_first_and_the_keys_switch_the_detail(tmp_path: Path) -> None:
    (tmp_path / "slurm-7.out").write_text(_console(4, stuck=2), encoding="utf-8")
    result = explain_paths([str(tmp_path)])
    app = ExplainApp(result, source="job/")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ExplainScreen))
        await pilot.pause()
        screen = app.screen
        assert "rank 2 on node-a1 stopped first (hang)" in plain(
            screen.query_one("#explain-title", Static)
        )
        table = screen.query_one(DataTable)
        assert table.row_count == 4
        assert [str(table.get_row_at(i)[0]) for i in range(4)] == ["2", "0", "1", "3"]
        detail = screen.query_one("#explain-detail-text", Static)
        assert "[culprit]" in plain(detail) and "step 2/4" in plain(detail)
        await pilot.press("t")
        assert "last step logged (2)" in plain(detail)
        await pilot.press("a")
        assert "py-spy dump" in plain(detail)
        await pilot.press("down", "e")
        assert "[peer]" in plain(detail) and "rank 0 waited" not in plain(detail).split("[peer]")[0]
        await pilot.press("q")
    assert app.return_code in (0, None)

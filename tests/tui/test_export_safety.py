"""TUI export goes through the project's one safe writer (issue 23 item 4)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.tui.conftest import make_app, settle, wait_until
from tests.tui.machines import acs_machine, acs_source


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
async def test_a_fifo_at_the_export_path_is_refused_and_q_still_quits(export_dir: Path) -> None:
    # Path.write_text opened the FIFO and blocked the export thread until a reader came.
    os.mkfifo(export_dir / "report.md")
    app = make_app(acs_machine(), acs_source(), export_dir=export_dir)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        await pilot.press(*"report", "enter")
        await wait_until(pilot, lambda: any(s == "error" for s, _ in app.notices))
        (error,) = [m for s, m in app.notices if s == "error"]
        assert "report.md" in error and "pipe" in error and "press e" in error
        assert not (export_dir / "report.html").exists()
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_an_export_that_fails_part_way_says_what_it_wrote(export_dir: Path) -> None:
    # The writer stops at the first refusal (here a folder where mine.html should go), says
    # which files it wrote before, and leaves no empty file behind.
    old = export_dir / "mine.md"
    old.write_text("my notes\n", encoding="utf-8")
    (export_dir / "mine.html").mkdir()  # the second file cannot be written
    app = make_app(acs_machine(), acs_source(), export_dir=export_dir)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        await pilot.press(*"mine", "enter")
        await settle(pilot)
        await pilot.press("y")
        await wait_until(pilot, lambda: any(s == "error" for s, _ in app.notices))
    (error,) = [m for s, m in app.notices if s == "error"]
    assert "mine.html" in error and "written before it" in error
    assert (export_dir / "mine.md").read_text(encoding="utf-8").startswith("# ")
    assert not any(p.stat().st_size == 0 for p in export_dir.iterdir() if p.is_file())

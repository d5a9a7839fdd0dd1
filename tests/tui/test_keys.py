"""Keys typed together land where they would one at a time (issue 22 item 4).

Each burst is sent twice: in one ``pilot.press`` call, and as keys that arrive in one read over
a slow SSH link (all queued before the first is handled, :func:`burst`). Before the key queue
(:mod:`pcidoc.tui.keyqueue`) the keys after a pane key went to the pane being left.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from pcidoc.tui.screens.main import MainScreen
from tests.tui.conftest import burst, demo_app, settle

WAYS = pytest.mark.parametrize("together", [False, True], ids=["press", "one-read"])


async def send(pilot: Pilot[Any], keys: str, together: bool) -> None:
    """``keys`` (one character each, ``/`` included) in one burst, then wait until done."""
    names = ["slash" if k == "/" else k for k in keys]
    if together:
        await burst(pilot, *names)
    else:
        await pilot.press(*names)
    await settle(pilot)


def probe_refusals(app: Any) -> list[str]:
    return [m for _, m in app.notices if "probes measure" in m or "Probes" in m]


@WAYS
async def test_3_slash_p2p_from_topology_searches_the_doctor(together: bool) -> None:
    app = demo_app("synthetic-16gpu")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert app.main.active_pane == "topology"
        await send(pilot, "3/p2p", together)
        assert isinstance(app.screen, MainScreen)
        assert app.main.active_pane == "doctor"
        assert app.main.doctor.search == "p2p"
        assert probe_refusals(app) == []


@WAYS
async def test_3_slash_nv_keeps_the_nics_on_topology(together: bool) -> None:
    app = demo_app("synthetic-16gpu")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        shown = app.main.topology.show_nics
        await send(pilot, "3/nv", together)
        assert app.main.active_pane == "doctor"
        assert app.main.doctor.search == "nv"
        assert app.main.topology.show_nics == shown


@WAYS
async def test_1c_from_links_changes_the_colour(together: bool) -> None:
    app = demo_app("synthetic-16gpu")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        assert app.main.active_pane == "links"
        mode = app.main.topology.mode
        await send(pilot, "1c", together)
        assert app.main.active_pane == "topology"
        assert app.main.topology.mode != mode

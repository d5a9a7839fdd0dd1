"""Everything keyed by a pane comes from the one table, :data:`pcidoc.tui.panes.PANES`."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from textual.widget import Widget

from pcidoc.tui import panes as pane_table
from pcidoc.tui.app import PcidocApp
from pcidoc.tui.keys import KEY_HELP
from pcidoc.tui.panes import PANES
from pcidoc.tui.screens.main import MainScreen
from pcidoc.tui.widgets.key_bar import KeyBar
from pcidoc.tui.widgets.pane_tabs import PaneTabs
from tests.tui.conftest import demo_app, settle

TUI = Path(pane_table.__file__).parent.parent
IDS = {pane.id for pane in PANES}
KEY_NAMES = {"/": "slash"}


def test_the_number_keys_are_the_tables() -> None:
    bound = {b.key: b.action for b in PcidocApp.BINDINGS if b.action.startswith("pane(")}  # type: ignore[union-attr]
    assert bound == {pane.number: f"pane('{pane.id}')" for pane in PANES}


def test_the_help_of_the_panes_is_the_tables() -> None:
    sections = dict(KEY_HELP)
    numbers = " ".join(pane.number for pane in PANES)
    assert dict(sections["Everywhere"])[numbers].startswith(", ".join(pane.title for pane in PANES))
    for pane in PANES:
        if pane.help:
            assert sections[f"{pane.title} pane"] == list(pane.help)
        else:
            assert f"{pane.title} pane" not in sections


def test_each_panes_keys_are_its_widgets_bindings_and_in_its_help() -> None:
    for pane in PANES:
        widget = pane.widget_class()
        assert issubclass(widget, Widget)
        bindings = {
            key.strip(): binding.action
            for binding in widget.BINDINGS
            for key in binding.key.split(",")  # type: ignore[union-attr]
        }
        helped = {name for keys, _ in pane.help for name in keys.split()}
        for key in pane.keys:
            assert bindings.get(KEY_NAMES.get(key.key, key.key)) == key.action, (pane.id, key)
            assert callable(getattr(widget, f"action_{key.action}", None)), (pane.id, key)
            assert key.key in helped, (pane.id, key)


def test_each_pane_has_a_module_that_binds_it() -> None:
    for pane in PANES:
        module = pane.module()
        for name in ("bind", "shown"):
            parameters = list(inspect.signature(getattr(module, name)).parameters)
            assert parameters == ["screen", parameters[1]], (pane.id, name)


def _keyed_by_pane(path: Path) -> list[str]:
    """Dicts, tuples and lists that name two panes or more, and tests of a pane's id: a
    registry of panes outside the table."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = path.stem if path.parent.name == "panes" else None
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Dict, ast.Tuple, ast.List, ast.Set)):
            items = node.keys if isinstance(node, ast.Dict) else node.elts
            named = {i.value for i in items if isinstance(i, ast.Constant) and i.value in IDS}
            if len(named) >= 2:
                found.append(f"{path.name}:{node.lineno} {sorted(named)}")
        elif isinstance(node, ast.Compare):
            constants = [
                c.value for c in (node.left, *node.comparators) if isinstance(c, ast.Constant)
            ]
            tested = [c for c in constants if c in IDS and c != own]
            if tested:
                found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    return found


def test_nothing_outside_the_table_is_keyed_by_pane() -> None:
    table = Path(pane_table.__file__)
    found = [
        use for path in sorted(TUI.rglob("*.py")) if path != table for use in _keyed_by_pane(path)
    ]
    assert found == []


def test_the_walk_finds_a_registry_keyed_by_pane(tmp_path: Path) -> None:
    old = tmp_path / "main.py"
    old.write_text(
        'TARGETS = {"topology": "#matrix", "links": "#gpu-table"}\n'
        'if pane == "doctor" and key == "f":\n    pass\n',
        encoding="utf-8",
    )
    assert len(_keyed_by_pane(old)) == 2


async def test_each_pane_opens_with_its_key_tab_focus_and_key_bar() -> None:
    app = demo_app("synthetic-16gpu")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        main = app.main
        assert main.query_one(PaneTabs).panes == tuple((p.id, p.tab) for p in PANES)
        for pane in (*PANES[1:], PANES[0]):
            await pilot.press(pane.number)
            await settle(pilot)
            assert isinstance(app.screen, MainScreen)
            assert main.active_pane == pane.id
            assert main.pane(pane.id) is main.query_one(f"#{pane.widget_id}")
            assert app.focused is main.query_one(pane.focus)
            hints = main.query_one(KeyBar).hints
            assert [hint[0] for hint in hints[: len(pane.keys)]] == [k.key for k in pane.keys]

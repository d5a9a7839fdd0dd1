"""Textual's private attributes: used in one module only, and still there in the installed Textual.

:mod:`pcidoc.tui._textual_private` holds every use; when a Textual upgrade renames or drops one,
these tests fail (instead of the TUI failing in front of a user), and a new private access
elsewhere in the TUI fails the source walk.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest
from textual.app import App

from pcidoc.tui import _textual_private
from pcidoc.tui._textual_private import USED, USED_STATE, CrashHookedApp

TUI = Path(_textual_private.__file__).parent
QUARANTINE = Path(_textual_private.__file__)


@pytest.mark.parametrize("name", sorted(USED))
def test_each_private_method_used_is_in_the_installed_textual(name: str) -> None:
    owner, attribute = name.split(".")
    assert owner == "App"
    method = getattr(App, attribute, None)
    assert callable(method), f"Textual's App has no {attribute} any more"
    assert tuple(inspect.signature(method).parameters) == USED[name]


@pytest.mark.parametrize("name", sorted(USED_STATE))
def test_each_private_attribute_read_is_in_the_installed_textual(name: str) -> None:
    owner, attribute = name.split(".")
    assert owner == "App"
    app = App[None]()
    assert isinstance(getattr(app, attribute, None), USED_STATE[name]), attribute


def test_the_quarantine_declares_every_private_name_it_uses() -> None:
    tree = ast.parse(QUARANTINE.read_text(encoding="utf-8"))
    used = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr.startswith("_")
    } | {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name.startswith("_")
    }
    declared = {name.split(".")[1] for name in (*USED, *USED_STATE)}
    assert used == declared


def test_the_crash_hooks_override_what_textual_calls() -> None:
    for name in USED:
        attribute = name.split(".")[1]
        assert attribute in vars(CrashHookedApp), attribute


def _textual_private_names(cls: type) -> set[str]:
    """Private names of the Textual classes ``cls`` derives from: their class attributes, and
    the instance attributes of the nearest one built without arguments."""
    bases = [base for base in cls.__mro__ if base.__module__.startswith("textual")]
    names = {name for base in bases for name in vars(base) if name.startswith("_")}
    for base in bases:
        try:
            names |= {name for name in vars(base()) if name.startswith("_")}
            break
        except Exception:
            continue
    return {name for name in names if not name.startswith("__")}


def _module_name(path: Path) -> str:
    parts = path.relative_to(TUI.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _private_uses(path: Path) -> list[str]:
    """Private attributes of other objects (``x._y``, ``super()._y``), and private names of
    Textual a class of this module overrides or reads on itself."""
    module = importlib.import_module(_module_name(path))
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
        obj = getattr(module, cls.name, None)
        if not inspect.isclass(obj):
            continue
        private = _textual_private_names(obj)
        for node in ast.walk(cls):
            name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "name", None)
            if name in private and isinstance(
                node, (ast.Attribute, ast.FunctionDef, ast.AsyncFunctionDef)
            ):
                found.append(f"{path.name}:{node.lineno} {cls.name}.{name}")
    return found


def test_no_other_tui_module_touches_textual_private_attributes() -> None:
    found = [
        use
        for path in sorted(TUI.rglob("*.py"))
        if path != QUARANTINE
        for use in _private_uses(path)
    ]
    assert found == []


def test_the_walk_finds_a_private_access() -> None:
    # The walk itself can fail: the quarantine module is full of what it looks for.
    found = _private_uses(QUARANTINE)
    assert any("app._closing" in use for use in found)
    assert any("CrashHookedApp._handle_exception" in use for use in found)

"""The export dialog: one path, four files (Markdown, HTML, JSON and an SVG screenshot)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Input, Static

from pcidoc.tui.screens.dialog import Dialog

EXPORT_SUFFIXES: tuple[str, ...] = (".md", ".html", ".json", ".svg")


def export_target(base: str, folder: Path, default_name: str) -> Path:
    """Where ``PATH`` typed in the dialog writes: relative to ``folder``; a folder (one that
    exists, or any path ending in ``/``) gets the default name inside it, not ``FOLDER.md``
    beside it."""
    target = Path(base).expanduser()
    if not target.is_absolute():
        target = folder / target
    if base.endswith(("/", os.sep)) or target.is_dir():
        target = target / default_name
    return target


def existing_files(target: Path) -> list[Path]:
    """The files an export to ``target`` would replace."""
    return [
        target.with_name(target.name + suffix)
        for suffix in EXPORT_SUFFIXES
        if target.with_name(target.name + suffix).is_file()
    ]


class ExportScreen(Dialog[str | None]):
    """Asks for the base path; enter exports, escape cancels. Returns the path or ``None``."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, default: str, folder: str) -> None:
        super().__init__()
        self.default = default
        self.folder = folder
        self.confirmed: str | None = None
        """A path whose existing files the user agreed to replace (enter pressed twice)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box"):
            yield Static(Text("Export the report", style="bold"), id="export-title")
            yield Static(
                Text(
                    "Writes PATH.md (for an issue), PATH.html (self-contained page), PATH.json "
                    "(pcidoc.report/1) and PATH.svg (this screen).",
                    style="dim",
                ),
                id="export-help",
            )
            yield Input(self.default, id="export-path", select_on_focus=False)
            yield Static("", id="export-warning")
            yield Static(
                Text(f"relative to {self.folder} · enter exports · escape cancels", style="dim"),
                id="export-foot",
            )

    def on_mount(self) -> None:
        field = self.query_one(Input)
        field.cursor_blink = False
        field.cursor_position = len(field.value)
        field.focus()
        self.query_one("#export-warning", Static).display = False

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        for suffix in EXPORT_SUFFIXES:
            if value.lower().endswith(suffix):
                value = value[: -len(suffix)]
        if not value:
            self.dismiss(None)
            return
        target = export_target(value, Path(self.folder), self.default)
        replaced = existing_files(target)
        if replaced and self.confirmed != value:
            # Never replace someone's files silently: say which, and let a second enter agree.
            self.confirmed = value
            names = ", ".join(p.name for p in replaced)
            warning = self.query_one("#export-warning", Static)
            warning.update(
                Text(
                    f"{names} already in {target.parent}: enter again replaces "
                    f"{'it' if len(replaced) == 1 else 'them'}, or edit the name",
                    style="bold yellow",
                )
            )
            warning.display = True
            return
        self.dismiss(value)

    @on(Input.Changed)
    def _edited(self, event: Input.Changed) -> None:
        """A new name: any agreement to replace was for the old one."""
        if self.confirmed is not None and event.value.strip() != self.confirmed:
            self.confirmed = None
            self.query_one("#export-warning", Static).display = False

    def action_cancel(self) -> None:
        """Close without writing anything."""
        self.dismiss(None)

"""The export dialog: one path, four files (Markdown, HTML, JSON and an SVG screenshot)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Input, Static

from pcidoc.tui.screens.dialog import Dialog

EXPORT_SUFFIXES: tuple[str, ...] = (".md", ".html", ".json", ".svg")


class ExportScreen(Dialog[str | None]):
    """Asks for the base path; enter exports, escape cancels. Returns the path or ``None``."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, default: str, folder: str) -> None:
        super().__init__()
        self.default = default
        self.folder = folder

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
            yield Static(
                Text(f"relative to {self.folder} · enter exports · escape cancels", style="dim"),
                id="export-foot",
            )

    def on_mount(self) -> None:
        field = self.query_one(Input)
        field.cursor_blink = False
        field.cursor_position = len(field.value)
        field.focus()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        for suffix in EXPORT_SUFFIXES:
            if value.lower().endswith(suffix):
                value = value[: -len(suffix)]
        self.dismiss(value or None)

    def action_cancel(self) -> None:
        """Close without writing anything."""
        self.dismiss(None)

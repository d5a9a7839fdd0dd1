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


REPORT_FILES = (
    "Writes PATH.md (for an issue), PATH.html (self-contained page), PATH.json "
    "(pcidoc.report/1) and PATH.svg (this screen)."
)
FLEET_FILES = (
    "Writes PATH.md (for an issue), PATH.html (self-contained page) and PATH.json "
    "(pcidoc.fleet/1) of the whole fleet."
)


def existing_files(target: Path, suffixes: tuple[str, ...] = EXPORT_SUFFIXES) -> list[Path]:
    """The files an export to ``target`` would replace (a symbolic link counts, even one to
    nowhere: it is asked about, then refused or followed by the safe writer's rules; a
    folder, a device or a pipe is not asked about: the writer refuses it)."""
    paths = [target.with_name(target.name + suffix) for suffix in suffixes]
    return [p for p in paths if p.is_symlink() or p.is_file()]


class ExportScreen(Dialog[str | None]):
    """Asks for the base path; enter exports, escape cancels. Returns the path or ``None``.

    Files of that name already there are replaced only after a question that Enter cannot
    answer: ``y`` replaces them, Enter (or ``n``) goes back to the name. A second Enter typed
    with the first, or pressed before the question was read, therefore never replaces a file,
    whatever the timing of the keys.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("y", "replace", "Replace", show=False),
        Binding("n,enter", "edit", "Edit the name", show=False),
    ]

    def __init__(
        self,
        default: str,
        folder: str,
        *,
        what: str = REPORT_FILES,
        suffixes: tuple[str, ...] = EXPORT_SUFFIXES,
        title: str = "Export the report",
    ) -> None:
        super().__init__()
        self.default = default
        self.folder = folder
        self.what = what
        self.suffixes = suffixes
        self.title_text = title
        self.asking: str | None = None
        """The path whose existing files the dialog asks about (``y`` replaces them)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box"):
            yield Static(Text(self.title_text, style="bold"), id="export-title")
            yield Static(Text(self.what, style="dim"), id="export-help")
            # Selected when focused: typing replaces the proposed name, arrows keep it.
            yield Input(self.default, id="export-path", select_on_focus=True)
            yield Static("", id="export-warning")
            yield Static(
                Text(f"relative to {self.folder} · enter exports · escape cancels", style="dim"),
                id="export-foot",
            )

    def on_mount(self) -> None:
        field = self.query_one(Input)
        field.cursor_blink = False
        self.set_focus(field)
        self.query_one("#export-warning", Static).display = False

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        for suffix in self.suffixes:
            if value.lower().endswith(suffix):
                value = value[: -len(suffix)]
        if not value:
            self.dismiss(None)
            return
        target = export_target(value, Path(self.folder), self.default)
        replaced = existing_files(target, self.suffixes)
        if replaced:
            self._ask(value, target, replaced)
            return
        self.dismiss(value)

    def _ask(self, value: str, target: Path, replaced: list[Path]) -> None:
        """Never replace someone's files silently: name them and wait for ``y``."""
        self.asking = value
        names = ", ".join(p.name for p in replaced)
        them = "it" if len(replaced) == 1 else "them"
        warning = self.query_one("#export-warning", Static)
        warning.update(
            Text(
                f"{names} already in {target.parent}: y replaces {them} · "
                "enter or n edits the name",
                style="bold yellow",
            )
        )
        warning.display = True
        field = self.query_one(Input)
        field.disabled = True  # its keys are the question's now (y / n / enter)
        self.set_focus(None)

    def action_replace(self) -> None:
        """``y`` to the question: replace the files."""
        if self.asking is not None:
            self.dismiss(self.asking)

    def action_edit(self) -> None:
        """Enter or ``n`` to the question: back to the name, nothing replaced."""
        if self.asking is None:
            return
        self.asking = None
        self.query_one("#export-warning", Static).display = False
        field = self.query_one(Input)
        field.disabled = False
        self.set_focus(field)

    def action_cancel(self) -> None:
        """Close without writing anything."""
        self.dismiss(None)

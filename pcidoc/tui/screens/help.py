"""The help screen: every key, generated from :data:`pcidoc.tui.keys.KEY_HELP`."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from pcidoc.tui.keys import KEY_HELP
from pcidoc.tui.screens.dialog import Dialog

INTRO = (
    "pcidoc shows how the GPUs are wired (Topology), what flows over each link (Links) and what "
    "is wrong with the fix (Doctor). Find the worst problem: press w. Share it: press e."
)


def help_table() -> Table:
    """The keys as one two-column table, by section."""
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True, style="bold cyan")
    table.add_column(ratio=1)
    for number, (section, entries) in enumerate(KEY_HELP):
        if number:
            table.add_row("", "")
        table.add_row(Text(section, style="bold underline"), "")
        for keys, what in entries:
            table.add_row(keys, what)
    return table


class HelpScreen(Dialog[None]):
    """Keys and what they do; escape, q, ? or F1 closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "close", "Close"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(Text("pcidoc — keys", style="bold"), id="help-title")
            yield Static(Text(INTRO, style="dim"), id="help-intro")
            yield Static(help_table(), id="help-keys")
            yield Static(
                Text("escape closes this help · docs/tui.md has the walkthrough", style="dim"),
                id="help-foot",
            )

    def action_close(self) -> None:
        """Back to the panes."""
        self.dismiss(None)

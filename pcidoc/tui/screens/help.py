"""The help screen: the keys of the screen it was opened from (:mod:`pcidoc.tui.keys`)."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from pcidoc.tui.keys import help_sections
from pcidoc.tui.screens.dialog import Dialog

INTRO = (
    "pcidoc shows how the GPUs are wired (Topology), what flows over each link (Links) and what "
    "is wrong with the fix (Doctor). Find the worst problem: press w. Share it: press e."
)


def help_table(screen: str = "main", fleet: bool = False) -> Table:
    """The keys of ``screen`` as one two-column table, by section."""
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True, style="bold cyan")
    table.add_column(ratio=1)
    for number, (section, entries) in enumerate(help_sections(screen, fleet)):
        if number:
            table.add_row("", "")
        table.add_row(Text(section, style="bold underline"), "")
        for keys, what in entries:
            table.add_row(keys, what)
    return table


FLEET_INTRO = (
    "The fleet's nodes, worst first: * marks an outlier of its peer group, ! a node to drain. "
    "Enter opens a node in the usual panes (Topology, Links, Doctor, Host)."
)


class HelpScreen(Dialog[None]):
    """Keys and what they do on the screen it was opened from; escape, q, ? or F1 closes it.

    Args:
        screen: ``"main"`` (the panes) or ``"fleet"`` (the node list of ``pcidoc --fleet``).
        fleet: The panes show a node of a fleet (escape goes back to the node list).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "close", "Close"),
    ]

    def __init__(self, screen: str = "main", fleet: bool = False) -> None:
        super().__init__()
        self.context = screen
        self.fleet = fleet

    def compose(self) -> ComposeResult:
        intro = FLEET_INTRO if self.context == "fleet" else INTRO
        with VerticalScroll(id="help-box"):
            yield Static(Text("pcidoc — keys", style="bold"), id="help-title")
            yield Static(Text(intro, style="dim"), id="help-intro")
            yield Static(help_table(self.context, self.fleet), id="help-keys")
            yield Static(
                Text("escape closes this help · docs/tui.md has the walkthrough", style="dim"),
                id="help-foot",
            )

    def action_close(self) -> None:
        """Back to the panes."""
        self.dismiss(None)

"""The sample picker: open another bundled machine (or go back to this one)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from pcidoc.model.capture import SampleInfo
from pcidoc.tui.screens.dialog import Dialog

THIS_MACHINE = "@live"
"""Option id of "this machine" (when it has GPUs to show)."""


class SamplePicker(Dialog[str | None]):
    """Lists the bundled samples; enter opens one, escape cancels."""

    # q closes the picker like the help screen: a modal screen keeps the app's keys from
    # running, so q would otherwise do nothing at all (the list has no text to type into).
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "cancel", "Cancel")]

    def __init__(self, samples: list[SampleInfo], current: str | None, offer_live: bool) -> None:
        super().__init__()
        self.samples = samples
        self.current = current
        self.offer_live = offer_live

    def compose(self) -> ComposeResult:
        options: list[Option] = []
        if self.offer_live:
            options.append(Option(Text("This machine (live)", style="bold green"), id=THIS_MACHINE))
        for sample in self.samples:
            prompt = Text()
            prompt.append(sample.name, style="bold")
            if sample.name == self.current:
                prompt.append("  (on display)", style="dim")
            prompt.append("\n  " + sample.title, style="dim")
            options.append(Option(prompt, id=sample.name))
        with Vertical(id="samples-box"):
            yield Static(Text("Open a sample machine", style="bold"), id="samples-title")
            yield Static(
                Text(
                    "Real machines from public reports (imported outputs), then synthetic "
                    "scale tests.",
                    style="dim",
                ),
                id="samples-help",
            )
            yield OptionList(*options, id="samples-list")
            yield Static(Text("enter opens · escape or q cancels", style="dim"))

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.focus()
        ids = [o.id for o in options.options]
        if self.current in ids:
            options.highlighted = ids.index(self.current)

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        """Keep the machine on display."""
        self.dismiss(None)

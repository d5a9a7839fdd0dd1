"""The banner shown when this machine has no usable GPU and a demo machine is on display."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class NoGpuBanner(Static):
    """Says why there are no GPUs here and that the panes show a DEMO machine instead."""

    def show(self, reason: str | None, demo: str | None) -> None:
        """Show the banner (``reason`` set) or hide it (``None``)."""
        if reason is None:
            self.display = False
            return
        text = Text()
        text.append("No GPU on this machine: ", style="bold")
        text.append(reason)
        text.append(".  ")
        if demo:
            text.append("The panes show the DEMO machine ", style="")
            text.append(demo, style="bold")
            text.append(": a real machine from a public report, not this one. ")
        text.append("4", style="bold reverse")
        text.append(" this machine  ")
        text.append("s", style="bold reverse")
        text.append(" other demos")
        self.update(text)
        self.display = True

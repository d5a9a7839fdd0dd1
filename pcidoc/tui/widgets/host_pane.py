"""The Host pane: this machine's (or the displayed machine's) host facts."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Container, VerticalScroll
from textual.widgets import Static

from pcidoc.model.capture import Capture
from pcidoc.tui.hanging import Hanging
from pcidoc.tui.panes.host import host_detail

WIDE_MIN_COLUMNS = 120
"""From this width on, this machine and the machine on display stand side by side."""


class HostPane(VerticalScroll, can_focus=True):
    """Hostname, kernel, CPU, sockets, NUMA, IOMMU, virtualization, NCCL env, why no GPUs.

    When pcidoc runs live and shows another machine (a demo because this one has no GPU), both
    machines' facts are shown: side by side from 120 columns, one under the other below that.
    """

    def compose(self) -> ComposeResult:
        with Container(id="host-columns"):
            yield Static(Text("collecting…", style="dim"), id="host-facts")
            yield Static("", id="host-displayed")

    def on_mount(self) -> None:
        self.query_one("#host-displayed").display = False

    def on_resize(self) -> None:
        """Side by side from 120 columns, one under the other below."""
        # The terminal's width, as the docs say (the pane's own is 2 columns less: padding).
        self.set_class(self.screen.size.width >= WIDE_MIN_COLUMNS, "-wide")

    def show(
        self,
        this_machine: Capture | None,
        displayed: Capture | None,
        displayed_title: str,
        why_no_gpus: str | None = None,
    ) -> None:
        """Show this machine's facts when known, then the displayed machine's if different."""
        parts: list[Hanging] = []
        if this_machine is not None:
            parts.append(Hanging(host_detail(this_machine, "This machine (live)", why_no_gpus)))
        if displayed is not None and displayed is not this_machine:
            parts.append(Hanging(host_detail(displayed, displayed_title)))
        first = self.query_one("#host-facts", Static)
        second = self.query_one("#host-displayed", Static)
        first.update(parts[0] if parts else Text("collecting…", style="dim"))
        second.update(parts[1] if len(parts) > 1 else "")
        second.display = len(parts) > 1

"""The Host pane: this machine's (or the displayed machine's) host facts."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from pcidoc.model.capture import Capture
from pcidoc.tui.describe import host_detail
from pcidoc.tui.hanging import Hanging


class HostPane(VerticalScroll, can_focus=True):
    """Hostname, kernel, CPU, sockets, NUMA, IOMMU, virtualization, NCCL env, why no GPUs."""

    def compose(self) -> ComposeResult:
        yield Static(Text("collecting…", style="dim"), id="host-facts")

    def show(
        self,
        this_machine: Capture | None,
        displayed: Capture | None,
        displayed_title: str,
        why_no_gpus: str | None = None,
    ) -> None:
        """Show this machine's facts when known, then the displayed machine's if different."""
        parts: list[Text | Hanging] = []
        if this_machine is not None:
            parts.append(Hanging(host_detail(this_machine, "This machine (live)", why_no_gpus)))
        if displayed is not None and displayed is not this_machine:
            if parts:
                parts.append(Text(""))
            parts.append(Hanging(host_detail(displayed, displayed_title)))
        if not parts:
            parts.append(Text("collecting…", style="dim"))
        self.query_one("#host-facts", Static).update(Group(*parts))

"""The pane tabs under the header: one line of text, the pane on display in reverse, clickable.

Textual's ``TabbedContent`` mounts a ``Tabs`` bar with a widget per tab and an animated
underline, and its module and widgets cost about 40 ms of the first screen on a 2-core machine;
pcidoc only needs four labels and a ``ContentSwitcher``. Clicking a label runs ``app.pane``, as
its number key does.
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.widgets import Static


class PaneTabs(Static):
    """``1 Topology  2 Links  3 Doctor  4 Host``; a click on a label opens its pane."""

    def __init__(self, panes: tuple[tuple[str, str], ...], *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.panes = panes
        self.active: str | None = None
        self._spans: list[tuple[int, int, str]] = []

    def show(self, active: str) -> None:
        """Mark ``active`` as the pane on display."""
        if active == self.active:
            return
        self.active = active
        text = Text(no_wrap=True, overflow="ellipsis")
        self._spans = []
        text.append(" ")
        for pane, label in self.panes:
            start = len(text)
            text.append(label, style="bold reverse" if pane == active else "dim")
            self._spans.append((start, len(text), pane))
            text.append("  ")
        self.update(text)

    async def on_click(self, event: events.Click) -> None:
        """Open the clicked pane."""
        for start, end, pane in self._spans:
            if start <= event.x < end:
                await self.app.run_action(f"pane('{pane}')")
                return

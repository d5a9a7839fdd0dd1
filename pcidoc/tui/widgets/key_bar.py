"""The key bar at the bottom: the keys that matter on the pane on display, clickable.

A single line of text rather than Textual's ``Footer``, which mounts one widget per key and
rebuilds them on every focus change (a quarter of a second of the first screen on a small
machine). Clicking a key runs its action, as pressing it does.
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.widgets import Static

KeyHint = tuple[str, str, str]
"""``(key shown, label, action)``."""


class KeyBar(Static):
    """Key hints; a click on a hint runs its action."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.hints: list[KeyHint] = []
        self._spans: list[tuple[int, int, str]] = []

    def show(self, hints: list[KeyHint]) -> None:
        """Show these hints, left to right."""
        if hints == self.hints:
            return
        self.hints = list(hints)
        text = Text(no_wrap=True, overflow="ellipsis")
        self._spans = []
        text.append(" ")
        for key, label, action in hints:
            start = len(text)
            text.append(key, style="bold reverse")
            text.append(f" {label}")
            self._spans.append((start, len(text), action))
            text.append("  ")
        self.update(text)

    async def on_click(self, event: events.Click) -> None:
        """Run the action of the clicked hint."""
        for start, end, action in self._spans:
            if start <= event.x < end:
                await self.app.run_action(action)
                return

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

DROP: tuple[str, ...] = ("s", "w", "p", "?")
"""Keys left out of a bar too narrow for all, first to last (they still work; ``?`` lists
them)."""


def _width(hints: list[KeyHint]) -> int:
    # " k Label  k Label": no gap needed after the last hint.
    return 1 + sum(len(key) + 1 + len(label) + 2 for key, label, _ in hints) - 2


class KeyBar(Static):
    """Key hints; a click on a hint runs its action."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.hints: list[KeyHint] = []
        self.shown: list[KeyHint] = []
        """The hints on display (:attr:`hints` less those the width could not hold)."""
        self._spans: list[tuple[int, int, str]] = []

    def show(self, hints: list[KeyHint]) -> None:
        """Show these hints, left to right (as many as the width holds: see :data:`DROP`)."""
        if hints == self.hints:
            return
        self.hints = list(hints)
        self._layout()

    def on_resize(self) -> None:
        """Fit the hints to the new width."""
        self._layout()

    def _layout(self) -> None:
        width = self.size.width
        shown = list(self.hints)
        # Too wide (80 columns while probes run): drop the least needed keys whole, rather
        # than cut "q Quit" off at the end.
        for key in DROP:
            if not width or _width(shown) <= width:
                break
            shown = [hint for hint in shown if hint[0] != key]
        self.shown = shown
        text = Text(no_wrap=True, overflow="ellipsis")
        self._spans = []
        text.append(" ")
        for key, label, action in shown:
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

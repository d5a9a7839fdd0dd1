"""The banner shown when this machine has no usable GPU and a demo machine is on display."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class NoGpuBanner(Static):
    """Says why there are no GPUs here and that the panes show a DEMO machine instead.

    ``b`` hides it (the header still says DEMO; ``4`` still shows why there is no GPU) and
    shows it again.
    """

    hidden_by_user = False
    """``b`` was pressed: stay hidden until it is pressed again."""

    def show(self, reason: str | None, demo: str | None) -> None:
        """Show the banner (``reason`` set) or hide it (``None``)."""
        self.has_reason = reason is not None
        if reason is None:
            self.display = False
            return
        # What it means and the keys first: on a small terminal the banner has two rows and
        # the rest is cut (4 shows the whole reason).
        text = Text()
        text.append("No GPU on this machine", style="bold")
        text.append("  ")
        text.append("4", style="bold reverse")
        text.append(" this machine  ")
        text.append("s", style="bold reverse")
        text.append(" other demos  ")
        text.append("b", style="bold reverse")
        text.append(" hide this\n")
        if demo:
            text.append("The panes show the DEMO machine ")
            text.append(demo, style="bold")
            text.append(" (a real machine from a public report, not this one). ")
        text.append("Why: ", style="bold")
        text.append(f"{reason}.")
        self.update(text)
        self.display = not self.hidden_by_user

    has_reason = False
    """A reason is set (there is something to show)."""

    def toggle(self) -> bool:
        """Hide or show again (``b``); returns whether it is now shown."""
        if not self.has_reason:
            return False
        self.hidden_by_user = not self.hidden_by_user
        self.display = not self.hidden_by_user
        return bool(self.display)

"""The base of pcidoc's dialogs: a modal screen that dismisses once.

Keys that arrive together (two Enter presses in one read over a slow SSH link, or Escape then
Enter) are all handled by the dialog before it leaves the screen stack. Textual's ``dismiss``
pops a screen each time it is called, so the second call popped the main screen and crashed the
app with ``ScreenStackError``. Here every call after the first is ignored.
"""

from __future__ import annotations

from typing import TypeVar

from textual.await_complete import AwaitComplete
from textual.screen import ModalScreen

ResultT = TypeVar("ResultT")


async def _nothing() -> None:
    return None


class Dialog(ModalScreen[ResultT]):
    """A modal screen whose result is delivered, and whose screen is popped, exactly once."""

    dismissed = False
    """True once :meth:`dismiss` was called (later calls do nothing)."""

    def on_mount(self) -> None:
        """A notification still on screen ("Wrote … in …" after an export) would cover the
        dialog; the user has moved on, so it goes (``app.notices`` keeps every one). The
        screen below the dialog still draws its own toasts, so its toast rack is hidden too
        (Textual shows it again, with whatever is new, when that screen is back on top)."""
        self.app.clear_notifications()
        for screen in self.app.screen_stack:
            if screen is not self:
                for rack in screen.query("ToastRack"):
                    rack.display = False

    def dismiss(self, result: ResultT | None = None) -> AwaitComplete:
        """Close the dialog with ``result``; only the first call has an effect."""
        if self.dismissed or self.app.screen is not self:
            return AwaitComplete(_nothing())
        self.dismissed = True
        return super().dismiss(result)

"""Every use pcidoc makes of Textual's private attributes, in one place.

Textual keeps these out of its public API, so a Textual release may rename or remove them
without notice. pcidoc needs three things Textual offers no public way to do:

* end the app on an internal error as Textual does, but keep the traceback in a log file
  first and print one line instead of Textual's screenful (:class:`CrashHookedApp`, over
  ``App._handle_exception``, ``App._print_error_renderables`` and ``App._exit_renderables``);
* hand an error raised outside a message handler (the key queue's task) to that same path
  (:func:`fail`);
* know that the app is shutting down, so the key queue stops handing keys over
  (:func:`closing`, ``App._closing``).

Nothing else in :mod:`pcidoc.tui` touches a private attribute of a Textual object (a test walks
the sources); :data:`USED` lists what this module relies on and a test checks each against the
installed Textual, so an upgrade that changes them fails there, not in front of a user.
"""

from __future__ import annotations

from typing import Any

from textual.app import App

USED: dict[str, tuple[str, ...]] = {
    "App._handle_exception": ("self", "error"),
    "App._print_error_renderables": ("self",),
}
"""Private methods this module overrides or calls, with the parameters it passes."""

USED_STATE: dict[str, type] = {
    "App._closing": bool,
    "App._exit_renderables": list,
}
"""Private attributes of an app that this module reads, with their type."""


class CrashHookedApp(App[int]):
    """An app whose internal errors go to :meth:`internal_error` before Textual ends the app,
    and whose traceback printout after the terminal is restored can be left out
    (:meth:`print_traceback`)."""

    def internal_error(self, error: Exception) -> None:
        """An error nothing handled (the app ends after this): log it."""

    def print_traceback(self) -> bool:
        """Print Textual's traceback once the terminal is restored (else nothing: the app
        says it in one line itself)."""
        return True

    def _handle_exception(self, error: Exception) -> None:
        self.internal_error(error)
        super()._handle_exception(error)

    def _print_error_renderables(self) -> None:
        if not self.print_traceback():
            self._exit_renderables.clear()
            return
        super()._print_error_renderables()


def fail(app: App[Any], error: Exception) -> None:
    """End ``app`` on ``error`` as an error in one of its handlers would."""
    app._handle_exception(error)


def closing(app: App[Any]) -> bool:
    """The app is shutting down."""
    return bool(app._closing)


__all__ = ["USED", "USED_STATE", "CrashHookedApp", "closing", "fail"]

"""The one path every key takes: a queue, handled one key at a time, each to its end.

Textual hands a key to the focused widget's own message queue and goes on with the next key at
once; the key's binding runs later, when the key has bubbled back up to the app. Keys that
arrive together (one read over a slow SSH link, a paste, a fast typist) were therefore all sent
to the widget that had the focus before the first of them was handled: from Topology, ``3/p2p``
sent ``/p2p`` to the matrix while the Doctor pane was still being opened, and ``1c`` on the
Links pane changed no colour.

:class:`KeyQueue` puts every key the terminal sends into one queue. It hands the app one key,
then waits until everything that key caused is done (the key bubbled up, its action ran, the
pane it opened is mounted and focused, the dialog it pushed is on screen, the messages those
posted are handled), and only then hands over the next key, which therefore goes to the widget
that now has the focus. "Done" is decided by the message queues, not by the clock: every
message pump of the app and its screen that holds messages, and the app and the focused widget
and its ancestors (which may be in the middle of one), is asked to run a callback after what it
already holds; when all ran and no queue holds anything, twice in a row, the key is done.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import TYPE_CHECKING, Any

from textual import events

from pcidoc.tui._textual_private import closing, fail

if TYPE_CHECKING:
    from textual.app import App
    from textual.message_pump import MessagePump

_MAX_ROUNDS = 64
"""Rounds of waiting for one key (a safety bound: a key settles in a handful)."""

_POLL_S = 0.05
"""How often a wait checks whether a pump it waits on was closed (its callback then never
runs: a dialog that closed, a pane that was removed)."""


class KeyQueue:
    """Keys of ``app`` handled in order, each once everything the one before caused is done.

    The app calls :meth:`take` from ``on_event`` for each key the terminal sends; a key
    :meth:`owns` is one the queue handed over itself, which the app then handles as Textual
    does (priority bindings, then the focused widget, bubbling up to the bindings).
    """

    def __init__(self, app: App[Any]) -> None:
        self.app = app
        self._pending: deque[events.Key] = deque()
        self._current: events.Key | None = None
        self._task: asyncio.Task[None] | None = None

    def owns(self, event: events.Key) -> bool:
        """True for the key the queue is handing over now."""
        return event is self._current

    def take(self, event: events.Key) -> None:
        """Queue a key from the terminal (handled after the keys before it are done)."""
        self._pending.append(event)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    @property
    def pending(self) -> int:
        """Keys waiting for the one being handled."""
        return len(self._pending)

    @property
    def idle(self) -> bool:
        """No key is being handled and none waits."""
        return not self._pending and (self._task is None or self._task.done())

    def discard(self) -> int:
        """Drop the keys typed ahead of a question (a dialog asks before it replaces files:
        an Enter typed with the first must not be the answer); how many were dropped."""
        dropped = len(self._pending)
        self._pending.clear()
        return dropped

    def close(self) -> None:
        """Stop handing keys over (the app is ending)."""
        self._pending.clear()
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def _run(self) -> None:
        app = self.app
        try:
            while self._pending and not closing(app):
                key = self._pending.popleft()
                handed = events.Key(key.key, key.character)
                self._current = handed
                app.post_message(handed)
                await self._settle()
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a bug here must end the app like any other
            fail(app, error)
        finally:
            self._current = None

    def _pumps(self) -> list[MessagePump]:
        """Every message pump of the app and the screen on top."""
        app = self.app
        try:
            screen = app.screen
        except Exception:
            return [app]
        return [app, *screen.walk_children(with_self=True)]

    def _watched(self, pumps: list[MessagePump]) -> list[MessagePump]:
        """The pumps a round waits on: those holding messages, and those that may be in the
        middle of one with an empty queue (the app runs the key's action, the focused widget
        and its ancestors handle the key on its way up)."""
        app = self.app
        chain: list[MessagePump] = [app]
        focused = app.focused
        if focused is not None:
            chain += [focused, *focused.ancestors]
        busy = [pump for pump in pumps if pump.message_queue_size]
        return list({id(p): p for p in chain + busy}.values())

    async def _settle(self) -> None:
        """Wait until every message pump has handled what it held, and nothing new came."""
        quiet = 0
        for _ in range(_MAX_ROUNDS):
            if closing(self.app):
                return
            await self._round(self._watched(self._pumps()))
            if all(pump.message_queue_size == 0 for pump in self._pumps()):
                quiet += 1
                if quiet >= 2:
                    return
            else:
                quiet = 0

    async def _round(self, pumps: list[MessagePump]) -> None:
        """One round: each pump runs a callback after the messages it holds now."""
        app = self.app
        waits: dict[asyncio.Task[bool], MessagePump] = {}
        loop = asyncio.get_running_loop()
        for pump in pumps:
            done = asyncio.Event()
            if pump.call_later(done.set):
                waits[loop.create_task(done.wait())] = pump
        try:
            while waits and not closing(app):
                finished, _ = await asyncio.wait(waits, timeout=_POLL_S)
                for task in finished:
                    del waits[task]
                for task, pump in list(waits.items()):
                    # A pump that closed (a dialog dismissed, a pane removed) never runs it.
                    if pump is not app and not pump.is_attached:
                        task.cancel()
                        del waits[task]
        finally:
            for task in waits:
                task.cancel()


__all__ = ["KeyQueue"]

"""The TUI's listener of a probe session: each orchestrator event becomes a message.

:class:`pcidoc.probes.session.ProbeSession` runs the probes for the CLI and the TUI alike; this
listener (called on the probe worker's thread) turns its events into the messages the probe
panel renders (``post_message`` is thread-safe), and re-runs the doctor after every probe so
the findings follow the measurements.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pcidoc.model.capture import Capture
from pcidoc.model.measurements import ProbeError
from pcidoc.model.report import ReportSource
from pcidoc.probes.session import Plan, SessionListener
from pcidoc.tui.messages import (
    ProbeFinished,
    ProbeProgressed,
    ProbesEnded,
    ProbesPlanned,
    ReportUpdated,
)

if TYPE_CHECKING:
    from pcidoc.probes.runner import ProbeOutcome, ProbeProgress, ProbeSpec


class ProbeMessenger(SessionListener):
    """Posts ``ProbesPlanned`` / ``ProbeProgressed`` / ``ProbeFinished`` / ``ProbesEnded`` and
    ``ReportUpdated`` for a probe session on ``capture``.

    Args:
        app: The app (``post_message`` and ``diagnose``, its doctor stamped by its clock).
        mode: ``quick`` or ``full``.
        capture: The capture the session extends (diagnosed after each probe).
        source: Where the capture came from (for the report).
    """

    def __init__(self, app: Any, mode: str, capture: Capture, source: ReportSource) -> None:
        self.app = app
        self.mode = mode
        self.capture = capture
        self.source = source

    def report(self) -> None:
        """Re-run the doctor on a copy of the capture as measured so far."""
        copy = self.capture.model_copy(deep=True)
        self.app.post_message(ReportUpdated(self.app.diagnose(copy, self.source, True)))

    def env_started(self) -> None:
        self.app.post_message(ProbeProgressed("env", 0.0, "checking torch and CUDA…"))

    def env_finished(self, outcome: ProbeOutcome, errors: list[ProbeError]) -> None:
        if errors:
            self.app.post_message(ProbeFinished("env", "torch environment", 0, errors[:1]))
            self.app.post_message(ProbesPlanned(self.mode, [], errors))
            self.report()
            return
        self.app.post_message(ProbeFinished("env", "torch environment", 0, [], outcome.wall_s))

    def planned(self, plan: Plan) -> None:
        self.app.post_message(
            ProbesPlanned(
                self.mode,
                [(s.name, s.label or s.name) for s in plan.specs],
                list(plan.errors),
                list(plan.notes),
            )
        )
        if plan.errors and not plan.specs:
            self.report()

    def progress(self, spec: ProbeSpec, event: ProbeProgress) -> None:
        name = spec.name
        text = event.message if event.probe == name else f"{event.probe}: {event.message}"
        self.app.post_message(ProbeProgressed(name, float(event.fraction), text))

    def finished(self, spec: ProbeSpec, outcome: ProbeOutcome) -> None:
        self.app.post_message(
            ProbeFinished(
                spec.name,
                spec.label or spec.name,
                len(outcome.results),
                list(outcome.errors),
                outcome.wall_s,
            )
        )
        self.report()

    def skipped(self, spec: ProbeSpec, errors: list[ProbeError]) -> None:
        self.app.post_message(ProbeFinished(spec.name, spec.label or spec.name, 0, errors))

    def ended(self, cancelled: bool) -> None:
        if cancelled:
            self.report()
        self.app.post_message(ProbesEnded(cancelled=cancelled))

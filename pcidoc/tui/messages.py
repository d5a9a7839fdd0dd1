"""Messages that carry data from the background workers to the UI thread.

Workers never touch a widget: they post one of these (``post_message`` is thread-safe) and the
app's handlers, on the UI thread, update the panes. Names are past tense: each message reports
something that has already happened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

from pcidoc._record import field, record
from pcidoc.model.capture import Capture
from pcidoc.model.counters import CounterSample
from pcidoc.model.measurements import ProbeError
from pcidoc.model.report import Report, ReportSource

if TYPE_CHECKING:
    from pcidoc.collect.counters import CounterSampler


@record
class FactsCollected(Message):
    """A machine's facts are known (collected live, loaded from a file or a bundled sample).

    ``fallback`` is True when this is the demo machine opened because this machine has no GPU.
    ``sampler`` reads a live machine's counters (``None``: no live counters); the handler, not
    the worker, makes it the app's.
    """

    capture: Capture
    source: ReportSource
    fallback: bool = False
    sampler: CounterSampler | None = None


@record
class ThisMachineCollected(Message):
    """This machine was collected live but has no usable GPU; ``reason`` says why."""

    capture: Capture
    reason: str


@record
class ReportUpdated(Message):
    """The doctor produced a (new) report for the machine on display."""

    report: Report


@record
class CountersSampled(Message):
    """A new sample of the live PCIe/NVLink counters.

    A newer sample replaces one still waiting in the queue, so a slow UI drops stale samples
    instead of falling behind.
    """

    sample: CounterSample
    sampler: object | None = None
    """The sampler that read it: a sample still queued when another machine was opened (its
    sampler replaced) is dropped, not shown as the new machine's or turned into rates against
    the new machine's counters."""

    def can_replace(self, message: Message) -> bool:
        """A newer sample supersedes an older, unprocessed one."""
        return isinstance(message, CountersSampled)


@record
class ProbesPlanned(Message):
    """The probe run is planned: these probes will run, in this order."""

    mode: str
    probes: list[tuple[str, str]]
    """``(name, label)`` per probe."""
    errors: list[ProbeError] = field(default_factory=list)
    """Probes that will not run, with the reason (no CUDA, refused, ...)."""
    notes: list[str] = field(default_factory=list)


@record
class ProbeProgressed(Message):
    """A running probe reported progress. Replaces an older progress of the same probe."""

    probe: str
    fraction: float
    message: str

    def can_replace(self, message: Message) -> bool:
        """A newer progress report of the same probe supersedes an unprocessed older one."""
        return isinstance(message, ProbeProgressed) and message.probe == self.probe


@record
class ProbeFinished(Message):
    """One probe ended: with measurements, or with errors (timeout, crash, cancelled...)."""

    probe: str
    label: str
    results: int
    errors: list[ProbeError] = field(default_factory=list)
    wall_s: float = 0.0


@record
class ProbesEnded(Message):
    """The whole probe run is over (completed, failed or cancelled)."""

    cancelled: bool = False


@record
class ReportExported(Message):
    """The report was written to these files."""

    paths: list[str]


@record
class ExportFailed(Message):
    """Writing the report failed; ``reason`` is one line for the user, ``base`` the path that
    was typed (the next dialog proposes it again, to be corrected rather than retyped)."""

    reason: str
    base: str = ""
    kind: str = "report"
    """``report`` (a node's export) or ``fleet`` (the fleet report's)."""

"""Values of the app's reactive state that travel together.

Each is set in one assignment by a message handler on the UI thread, so a pane bound to it
never sees a capture with another machine's source, or a sample without its rates. They
compare by identity (``eq=False``): every new value reaches the panes, and a value is never
re-rendered because an equal one was set.
"""

from __future__ import annotations

from collections.abc import Mapping

from pcidoc._record import record
from pcidoc.model.capture import Capture
from pcidoc.model.counters import CounterSample, GpuRates
from pcidoc.model.report import ReportSource


@record(frozen=True, eq=False)
class Displayed:
    """The machine on display, as loaded (its facts before any probe ran).

    The probes' measurements arrive in the report (``report.machine``), not here: the panes
    that show facts do not redraw while probes report.
    """

    capture: Capture | None
    """The facts; ``None`` while this machine is being collected."""
    source: ReportSource
    fallback: bool = False
    """A demo on display because this machine has no usable GPU."""
    moving_counters: bool = False
    """Counter samples will arrive (a live sampler, or a replayed trace on a demo)."""
    replay: str | None = None
    """What the replayed counters are (``SYNTHETIC...``), ``None`` for real ones."""
    interval: float | None = None
    """Seconds between counter samples."""


@record(frozen=True, eq=False)
class Counters:
    """The latest counter sample and the rates since the previous one (``None`` for the
    first sample of a machine)."""

    sample: CounterSample
    rates: Mapping[int, GpuRates] | None = None
    link_changes: Mapping[int, tuple[int, int]] | None = None
    """Live machines: per GPU index, how many times its negotiated PCIe ``(generation,
    width)`` changed between samples since it was opened (``None``: not counted, e.g. a
    replayed demo trace)."""
    since: float | None = None
    """Sample time (monotonic seconds) the link changes are counted from."""


__all__ = ["Counters", "Displayed"]

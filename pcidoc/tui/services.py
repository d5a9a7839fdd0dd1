"""What the TUI reaches outside the process through, and how a session is set up.

:class:`TuiServices` holds every collaborator with an effect outside the app (live collection,
the counter sampler, the bundled samples, the doctor, the probe runner, the sampler's ticker,
the wall clock, the busy-GPU check); :class:`TuiOptions` holds the session's settings.
:func:`pcidoc.tui.app.make_app` builds the app from one of each: production code takes the
defaults (built from :mod:`pcidoc.tui.live`), tests pass fakes, so the whole app runs without
a GPU, sleeps or a real clock.

Importing this module costs nothing: the defaults import their heavy modules when called.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcidoc._record import field, record
from pcidoc.tui import live

if TYPE_CHECKING:
    from pcidoc.collect.counters import CounterSampler
    from pcidoc.model.capture import Capture, SampleInfo
    from pcidoc.model.report import Report, ReportSource
    from pcidoc.probes.runner import ProbeRunner

Collector = Callable[[], "Capture"]
"""Collects this machine's facts (never raises; gaps carry their reasons)."""
DemoLoader = Callable[[str | None], "tuple[Capture, ReportSource]"]
"""Loads a bundled sample by name (``None``: the default demo) and its report source."""
DemoLister = Callable[[], "list[SampleInfo]"]
"""Lists the bundled samples for the picker."""
Diagnose = Callable[["Capture", "ReportSource", bool, str], "Report"]
"""The doctor: ``(capture, source, probes_requested, generated_at) -> Report``."""
SamplerFactory = Callable[["Capture"], "CounterSampler | None"]
"""Makes the counter sampler of a live machine (``None``: no live counters)."""
Ticker = Callable[[float, threading.Event], bool]
"""Waits ``interval`` seconds between counter samples; True when asked to stop."""
BusyCheck = Callable[["Capture", list[int]], list[Any]]
"""Lists other processes on the GPUs before probing (live machines only)."""
Clock = Callable[[], datetime]
"""Wall clock for report time stamps and export file names."""


def utc_now() -> datetime:
    """The real wall clock, in UTC."""
    return datetime.now(timezone.utc)


def _nothing() -> None:
    """Nothing to release."""


@record(frozen=True)
class TuiServices:
    """Every collaborator of the TUI with an effect outside the process.

    The app calls them from its workers (collection, the doctor, probes, the sampler) or its
    handlers (the sample list, the clock) and never reaches outside through anything else.
    """

    collect: Collector | None = None
    """Collects this machine (``None``: this session shows a capture or a sample and cannot
    collect; a session started without one needs it)."""
    sampler_factory: SamplerFactory | None = None
    """Makes the counter sampler after a live collection (``None``: no live counters)."""
    load_demo: DemoLoader = live.load_demo
    list_demos: DemoLister = live.list_demos
    diagnose: Diagnose = live.diagnose
    probe_runner: ProbeRunner | None = None
    """Runs one probe (``None``: the real runner, child processes)."""
    busy_check: BusyCheck = live.busy_processes
    ticker: Ticker = live.wait_tick
    now: Clock = utc_now
    close: Callable[[], None] = _nothing
    """Releases what the services hold open (the live NVML session); called once on exit."""

    def run_doctor(
        self, capture: Capture, source: ReportSource, probes_requested: bool = False
    ) -> Report:
        """Run :attr:`diagnose` over ``capture``, stamped with :attr:`now` (UTC, seconds)."""
        stamp = self.now().astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return self.diagnose(capture, source, probes_requested, stamp)

    @classmethod
    def this_machine(
        cls, backend_factory: Callable[[], Any] | None = None, **changes: Any
    ) -> TuiServices:
        """The defaults plus live collection and live counters of this machine, through one
        NVML session (:class:`pcidoc.tui.live.LiveMachine`, closed by :attr:`close`).

        Args:
            backend_factory: Makes the NVML backend (default: the real one).
            **changes: Other fields to set (a fake doctor, runner...).
        """
        machine = live.LiveMachine(backend_factory)
        fields: dict[str, Any] = {
            "collect": machine.collect,
            "sampler_factory": machine.sampler,
            "close": machine.close,
        }
        fields.update(changes)
        return cls(**fields)


def default_export_dir() -> Path:
    """Where the TUI's exports go unless a path says otherwise: ``$PCIDOC_EXPORT_DIR``, else
    ``~/pcidoc-reports`` (made, private, at the first export). Not the working folder: in a
    checkout, reports there became untracked files of someone's repository."""
    explicit = os.environ.get("PCIDOC_EXPORT_DIR")
    return Path(explicit) if explicit else Path.home() / "pcidoc-reports"


@record(frozen=True)
class TuiOptions:
    """How a TUI session behaves (no collaborators: see :class:`TuiServices`)."""

    interval: float | None = 1.0
    """Seconds between counter samples; ``None`` runs no background sampler (tests call
    :meth:`pcidoc.tui.app.PcidocApp.take_sample`)."""
    allow_probes: bool | None = None
    """``True`` lets probes run on any machine (tests, demos with a fake runner); ``False``
    never; ``None`` only on a live machine with GPUs."""
    export_dir: Path = field(default_factory=lambda: default_export_dir())
    """Folder export paths are relative to (default: :func:`default_export_dir`)."""
    demo_fallback: bool = True
    """Open the default demo when this machine has no usable GPU."""
    replay_demos: bool = False
    """Replay a SYNTHETIC counter trace on demo machines so the Links pane and its chart move
    (labelled as such; never used by the doctor or reports); ``pcidoc --demo`` turns it on."""

    def __post_init__(self) -> None:
        # A str or any os.PathLike is accepted; the field is always a Path after.
        if not isinstance(self.export_dir, Path):
            object.__setattr__(self, "export_dir", Path(os.fspath(self.export_dir)))


__all__ = [
    "BusyCheck",
    "Clock",
    "Collector",
    "DemoLister",
    "DemoLoader",
    "Diagnose",
    "SamplerFactory",
    "Ticker",
    "TuiOptions",
    "TuiServices",
    "default_export_dir",
    "utc_now",
]

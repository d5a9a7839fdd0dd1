"""The pcidoc TUI application.

The app only renders: a :class:`~pcidoc.model.report.Report`, the facts of one machine and
counter samples. Collection, the doctor, probes, sampling and export run in thread workers with
an explicit group (``load``, ``counters``, ``probes``, ``export``) and report back with the
past-tense messages of :mod:`pcidoc.tui.messages`; no worker touches a widget.

The state on display is a handful of reactive attributes (``displayed``, ``report``,
``counters``, ``this_machine``, ``no_gpu_reason``, ``status``, ``probes_running``) that only
the message handlers and actions set, on the UI thread; the main screen binds each pane to the
attributes it renders (:mod:`pcidoc.tui.screens.main`).

Everything that reaches outside the process is a :class:`~pcidoc.tui.services.TuiServices`
(collector, demo loader, doctor, probe runner, counter sampler factory, the sampler's ticker,
a wall clock, the busy-GPU check) and the session's settings a
:class:`~pcidoc.tui.services.TuiOptions`; :func:`make_app` builds the app from them, so tests
drive the whole app with fakes, no sleeps and no real clock.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from datetime import timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on, work
from textual.binding import Binding, BindingType
from textual.reactive import var
from textual.worker import Worker, WorkerState, get_current_worker

from pcidoc.model.capture import Capture
from pcidoc.model.counters import CounterSample, GpuRates, changed_links, rates
from pcidoc.model.report import Report, ReportSource
from pcidoc.tui._textual_private import CrashHookedApp
from pcidoc.tui.keyqueue import KeyQueue
from pcidoc.tui.messages import (
    CountersSampled,
    ExportFailed,
    FactsCollected,
    ProbeFinished,
    ProbeProgressed,
    ProbesEnded,
    ProbesPlanned,
    ReportExported,
    ReportUpdated,
    ThisMachineCollected,
)
from pcidoc.tui.offline_svg import offline_svg
from pcidoc.tui.panes import PANE_BY_ID, PANES
from pcidoc.tui.replay import TraceReplaySampler, synthetic_trace
from pcidoc.tui.screens.main import MainScreen
from pcidoc.tui.services import TuiOptions, TuiServices, utc_now
from pcidoc.tui.state import Counters, Displayed

if TYPE_CHECKING:
    from pcidoc.collect.counters import CounterSampler
    from pcidoc.model.fleet import FleetReport
    from pcidoc.tui.widgets.doctor_pane import CheckList
    from pcidoc.tui.widgets.probe_panel import ProbePanel

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def crash_log_dir() -> Path:
    """Where crash logs go: ``$PCIDOC_LOG_DIR``, else ``$XDG_STATE_HOME/pcidoc``, else
    ``~/.local/state/pcidoc``."""
    explicit = os.environ.get("PCIDOC_LOG_DIR")
    if explicit:
        return Path(explicit)
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(state) / "pcidoc"


def write_crash_log(error: BaseException) -> Path | None:
    """Write ``error``'s traceback (and versions) to a new log file; its path, or ``None``.

    The file is made by pcidoc's one writer (:func:`pcidoc.fileio.write_new_file`): a new
    private file (mode 0600, a name nobody can guess) in :func:`crash_log_dir` (made 0700 when
    missing), reached without following another user's links; else the same in the temporary
    folder."""
    import platform
    import tempfile
    import traceback

    from pcidoc import __version__
    from pcidoc.errors import PcidocError
    from pcidoc.fileio import write_new_file

    stamp = utc_now().strftime("%Y%m%dT%H%M%SZ")
    text = (
        f"pcidoc {__version__} TUI internal error at {stamp}\n"
        f"python {platform.python_version()} on {platform.platform()}\n\n"
        + "".join(traceback.format_exception(type(error), error, error.__traceback__))
    )
    for folder in (crash_log_dir(), Path(tempfile.gettempdir())):
        try:
            return Path(write_new_file(str(folder), f"tui-crash-{stamp}-", ".log", text))
        except (PcidocError, OSError):
            continue
    return None


class PcidocApp(CrashHookedApp):
    """The TUI: header, Topology / Links / Doctor / Host panes, probes and export.

    Build it with :func:`make_app`.

    Args:
        capture: The machine to show (a capture file or a sample, loaded before the app
            starts). ``None`` collects this machine live in a worker (``services.collect``).
        source: Where ``capture`` came from (``demo``, ``capture``...); ``live`` when collecting.
        services: Everything the app reaches outside the process through.
        options: The session's settings (sampling interval, probes, export folder...).
        fleet: A :class:`~pcidoc.model.fleet.FleetReport` for ``pcidoc --fleet DIR`` (escape
            goes back to its node list), else ``None``.
        report: The doctor's report of ``capture``, when it ran before the app started
            (:func:`pcidoc.tui.run_tui`); the first screen then shows facts and verdicts in one
            paint, without a worker. ``None`` diagnoses ``capture`` in a worker.
    """

    displayed: var[Displayed | None] = var(None, init=False)
    """The machine on display, as loaded, with its source (``capture`` ``None`` while this
    machine is being collected)."""
    report: var[Report | None] = var(None, init=False, always_update=True)
    """The doctor's latest report of the machine on display (``None`` while diagnosing). Set
    even when equal to the previous one: a re-diagnosed machine is shown again."""
    counters: var[Counters | None] = var(None, init=False)
    """The latest counter sample of the machine on display and the rates since the one
    before."""
    this_machine: var[Capture | None] = var(None, init=False, always_update=True)
    """This machine, collected live (also when it has no GPU and a demo is on display)."""
    no_gpu_reason: var[str | None] = var(None, init=False)
    """Why this machine has no usable GPU (``None`` while it has one or is not collected)."""
    status: var[str | None] = var(None, init=False)
    """What the header says instead of the verdict (why loading failed), else ``None``."""
    probes_running: var[bool] = var(False, init=False)
    """A probe run is under way (the key bar then offers ``x``)."""

    TITLE = "pcidoc"
    CSS_PATH = Path(__file__).parent / "pcidoc.tcss"
    ENABLE_COMMAND_PALETTE = False

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark,f1", "help", "Help", key_display="?"),
        *(Binding(pane.number, f"pane('{pane.id}')", pane.title, show=False) for pane in PANES),
        Binding("w", "worst", "Worst"),
        Binding("p", "probes('quick')", "Probes"),
        Binding("P", "probes('full')", "Full probes", show=False),
        Binding("x", "cancel_probes", "Cancel"),
        Binding("e", "export", "Export"),
        Binding("s", "samples", "Samples"),
        Binding("b", "toggle_banner", "Banner", show=False),
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("escape", "fleet", "Fleet", show=False),
    ]

    def __init__(
        self,
        capture: Capture | None = None,
        source: ReportSource | None = None,
        *,
        services: TuiServices,
        options: TuiOptions | None = None,
        fleet: FleetReport | None = None,
        report: Report | None = None,
    ) -> None:
        super().__init__()
        self.services = services
        self.options = options if options is not None else TuiOptions()
        self._initial = capture
        self._initial_source = source
        self._initial_report = report if capture is not None else None
        self.fleet = fleet
        """The fleet report of ``pcidoc --fleet DIR``, else ``None``."""

        self.sampler: CounterSampler | TraceReplaySampler | None = None
        self.notices: list[tuple[str, str]] = []
        """Every notification as ``(severity, message)`` (tests and the log read it)."""
        self.show_toasts = True
        """Pop notifications up on screen; snapshot tests turn it off (toasts expire on a
        timer, which a screenshot must not depend on)."""
        self.freeze_gc = False
        """Move everything alive after the first complete screen out of the cyclic garbage
        collector's sight (``gc.freeze``): its full collections then take milliseconds
        instead of ~60 ms pauses of the UI. Set by :func:`pcidoc.tui.run_tui`, the process
        owner; tests leave it off."""
        self._probe_notices: set[str] = set()
        self.first_screen_at: float | None = None
        """``time.monotonic()`` when the first report was on screen."""
        self.crash: BaseException | None = None
        """The first internal error nothing handled (the app then ends)."""
        self.crash_log: Path | None = None
        self.export_retry: dict[str, str] = {}
        """The path of an export that failed, by kind (``report``, ``fleet``): the next
        export dialog proposes it again, to be corrected rather than retyped."""
        """The log file holding :attr:`crash`'s traceback (``None`` if it could not be
        written)."""
        self.debug_errors = False
        """Print Textual's full traceback on an internal error (``pcidoc --debug``)."""
        self.keys = KeyQueue(self)
        """Every key from the terminal, handled one at a time to its end (a pane switch is
        complete before the next key of the same burst reaches the pane it opened)."""

    # ------------------------------------------------------------------ state, read-only views

    @property
    def capture(self) -> Capture | None:
        """The machine on display, with any measurements the probes added (the report's)."""
        report = self.report
        if report is not None:
            return report.machine
        displayed = self.displayed
        return displayed.capture if displayed is not None else None

    @property
    def source(self) -> ReportSource | None:
        """Where the machine on display comes from."""
        displayed = self.displayed
        return displayed.source if displayed is not None else None

    @property
    def fallback(self) -> bool:
        """True when a demo is on display because this machine has no usable GPU."""
        displayed = self.displayed
        return displayed is not None and displayed.fallback

    @property
    def last_sample(self) -> CounterSample | None:
        """The latest counter sample of the machine on display."""
        counters = self.counters
        return counters.sample if counters is not None else None

    @property
    def rates(self) -> dict[int, GpuRates]:
        """Rates between the last two counter samples, by GPU index (empty before two)."""
        counters = self.counters
        return dict(counters.rates) if counters is not None and counters.rates else {}

    # ------------------------------------------------------------------ lifecycle

    def get_default_screen(self) -> MainScreen:
        """The main screen."""
        return MainScreen()

    @property
    def main(self) -> MainScreen:
        """The main screen (also while a dialog is on top)."""
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    def on_mount(self) -> None:
        """Start once the main screen has its widgets, without waiting for its first paint:
        a paint of empty panes is work thrown away, and the doctor would start that late."""
        self.main.call_later(self._start)

    def _start(self) -> None:
        """Show what is known at once and start loading the rest."""
        if self.fleet is not None and self._initial is None:
            self.action_fleet()
            return
        if self._initial is None:
            self.displayed = Displayed(None, ReportSource(kind="live"))
            self.load_machine(None, None, live=True)
        else:
            source = self._initial_source or ReportSource(kind="capture")
            self.post_message(FactsCollected(self._initial, source))
            if self._initial_report is not None:
                # Diagnosed before the app started: both messages are handled before the next
                # paint, so no screen of facts without verdicts is drawn and then replaced.
                self.post_message(ReportUpdated(self._initial_report))
            else:
                self.load_machine(self._initial, source, live=False)
        self.main.focus_pane("topology")

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Show a notification (never parsed as markup) and remember it in :attr:`notices`."""
        self.notices.append((str(severity), message))
        if self.show_toasts:
            super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    async def on_event(self, event: events.Event) -> None:
        """Keys from the terminal go through :attr:`keys` (one queue, in order); the key it
        hands back, and every other event, are handled as Textual does."""
        if isinstance(event, events.Key) and not event.is_forwarded and not self.keys.owns(event):
            self.keys.take(event)
            return
        await super().on_event(event)

    # ------------------------------------------------------------------ internal errors

    def internal_error(self, error: Exception) -> None:
        """An error nothing handled: keep its traceback in a log file, then Textual ends the
        app (which restores the terminal). :func:`pcidoc.tui.run_tui` then prints one line
        with the log's path and exits 3 instead of a screenful of traceback and exit 0."""
        if self.crash is None:
            self.crash = error
            self.crash_log = write_crash_log(error)

    def print_traceback(self) -> bool:
        """Textual prints the traceback after restoring the terminal; pcidoc prints one line
        instead when the traceback is in the log (``--debug`` keeps Textual's printout)."""
        return self.crash_log is None or self.debug_errors

    # ------------------------------------------------------------------ workers

    @work(
        thread=True,
        group="load",
        exclusive=True,
        exit_on_error=False,
        name="load_machine",
        description="collect facts and run the doctor",
    )
    def load_machine(
        self,
        capture: Capture | None,
        source: ReportSource | None,
        live: bool = False,
        demo: str | None = None,
    ) -> None:
        """Collect (or load) a machine, post its facts, run the doctor once, post the report.

        A newer load (another sample picked meanwhile) cancels this one: nothing is posted after.
        """
        worker = get_current_worker()
        fallback = False
        sampler = None
        if live:
            collect = self.services.collect
            if collect is None:
                raise RuntimeError("this session has no collector for this machine")
            capture = collect()
            source = ReportSource(kind="live")
            # Only a machine with no GPU at all falls back to the demo: GPUs that NVML lost
            # (Xid 79...) are this machine's problem to show, not to hide behind a demo.
            if not capture.gpus:
                reason = capture.unavailable.get("gpus") or "NVML reports no usable NVIDIA GPU"
                self.post_message(ThisMachineCollected(capture, reason))
                if self.options.demo_fallback:
                    try:
                        capture, source = self.services.load_demo(None)
                        fallback = True
                    except Exception as exc:  # a damaged install: keep showing this machine
                        self.notify(f"Could not open the demo machine: {exc}", severity="error")
            elif self.services.sampler_factory is not None:
                sampler = self.services.sampler_factory(capture)
            if worker.is_cancelled:
                return
            self.post_message(FactsCollected(capture, source, fallback, sampler))
        elif demo is not None:
            capture, source = self.services.load_demo(demo)
            if worker.is_cancelled:
                return
            self.post_message(FactsCollected(capture, source))
        assert capture is not None and source is not None
        report = self.diagnose(capture, source, False)
        if not worker.is_cancelled:
            self.post_message(ReportUpdated(report))

    def diagnose(self, capture: Capture, source: ReportSource, probes_requested: bool) -> Report:
        """Run the doctor (``services.diagnose``) stamped with the services' clock; called on
        worker threads."""
        return self.services.run_doctor(capture, source, probes_requested)

    def take_sample(self) -> CounterSample | None:
        """Read the counters once and post them (the sampler thread's step; tests call it)."""
        sampler = self.sampler
        if sampler is None:
            return None
        sample = sampler.sample()
        self.post_message(CountersSampled(sample, sampler))
        return sample

    @work(
        thread=True,
        group="counters",
        exclusive=True,
        exit_on_error=False,
        name="sample_counters",
        description="live counter sampler",
    )
    def sample_counters(self) -> None:
        """The one sampler thread: a sample every ``interval`` seconds until cancelled."""
        worker = get_current_worker()
        interval = self.options.interval or 1.0
        ticker = self.services.ticker
        while not worker.is_cancelled:
            self.take_sample()
            if ticker(interval, worker.cancelled_event):
                break

    @work(
        thread=True,
        group="probes",
        exclusive=True,
        exit_on_error=False,
        name="run_probes",
        description="probe run",
    )
    def run_probes(self, mode: str, base: Capture, source: ReportSource, live: bool) -> None:
        """Run the probes through the shared orchestrator (:class:`ProbeSession`, the same the
        CLI uses); its events become messages, and after each probe the doctor re-runs."""
        from pcidoc.probes.session import ProbeSession
        from pcidoc.tui.probe_events import ProbeMessenger

        worker = get_current_worker()
        cancel = worker.cancelled_event
        listener = ProbeMessenger(self, mode, base, source)
        session = ProbeSession(
            base,
            mode,
            listener,
            runner=self.services.probe_runner,
            busy_check=self.services.busy_check if live else None,
            cancel=cancel,
        )
        session.run()

    @work(
        thread=True,
        group="export",
        exclusive=True,
        exit_on_error=False,
        name="write_export",
        description="write report files",
    )
    def write_export(self, report: Report, base: str, svg: str, default_name: str) -> None:
        """Write ``base``.md/.html/.json/.svg (``default_name`` inside ``base`` when it is a
        folder); post what was written or why it failed."""
        from pcidoc.present import render_report_file

        def contents(path: Path) -> str:
            return svg if path.suffix == ".svg" else render_report_file(report, path)

        self._write_files(
            base, default_name, (".md", ".html", ".json", ".svg"), contents, kind="report"
        )

    @work(
        thread=True,
        group="export",
        exclusive=True,
        exit_on_error=False,
        name="write_fleet_export",
        description="write fleet report files",
    )
    def write_fleet_export(self, fleet: FleetReport, base: str, default_name: str) -> None:
        """Write the fleet report as ``base``.md/.html/.json."""
        from pcidoc.fleet.render import fleet_html, fleet_json, fleet_markdown

        renderers = {".md": fleet_markdown, ".html": fleet_html, ".json": fleet_json}
        self._write_files(
            base,
            default_name,
            tuple(renderers),
            lambda path: renderers[path.suffix](fleet),
            kind="fleet",
        )

    def _write_files(
        self,
        base: str,
        default_name: str,
        suffixes: tuple[str, ...],
        contents: Callable[[Path], str],
        kind: str,
    ) -> None:
        """Write one file per suffix through the project's one safe writer
        (:func:`pcidoc.fileio.write_output`: no device, FIFO or planted link is written
        through, a full disk leaves the old file or none, never an empty one); stop at the
        first refusal and post it, else post what was written."""
        from pcidoc.errors import PcidocError
        from pcidoc.fileio import write_output
        from pcidoc.tui.screens.export import export_target

        target = export_target(base, self.options.export_dir, default_name)
        folder = target.parent
        again = "press e to correct the path"
        if not folder.is_dir() and folder == self.options.export_dir:
            from pcidoc.fileio import make_private_folder

            try:  # the default folder (~/pcidoc-reports) is made at the first export
                make_private_folder(str(folder))
            except PcidocError as exc:
                self.post_message(ExportFailed(f"{exc.message}: {again}", base, kind))
                return
        if not folder.is_dir():
            self.post_message(ExportFailed(f"folder {folder} does not exist: {again}", base, kind))
            return
        written: list[str] = []
        try:
            for suffix in suffixes:
                path = target.with_name(target.name + suffix)
                write_output(path, contents(path), compress=False)
                written.append(str(path))
        except PcidocError as exc:
            done = f" (written before it: {', '.join(written)})" if written else ""
            self.post_message(
                ExportFailed(f"could not write {exc.message}{done}: {again}", base, kind)
            )
            return
        except OSError as exc:
            reason = exc.strerror or str(exc)
            where = exc.filename or folder
            self.post_message(
                ExportFailed(f"could not write {where}: {reason}: {again}", base, kind)
            )
            return
        self.post_message(ReportExported(written))

    # ------------------------------------------------------------------ messages

    @on(ThisMachineCollected)
    def _this_machine(self, message: ThisMachineCollected) -> None:
        self.no_gpu_reason = message.reason
        self.this_machine = message.capture

    @on(FactsCollected)
    def _facts_collected(self, message: FactsCollected) -> None:
        source = message.source
        live = source.kind == "live"
        if live:
            self.sampler = message.sampler
        else:
            self._stop_counters()
            if self.options.replay_demos and source.kind == "demo" and message.capture.gpus:
                capture = message.capture
                # Built on the sampler's thread at its first sample, not before the first screen.
                self.sampler = TraceReplaySampler(lambda: synthetic_trace(capture))
        replay = self.replay_label
        # The old machine's report and counters go first: the panes bound to ``displayed``
        # then draw the new machine once, with nothing of the old one.
        self.status = None
        self.counters = None
        if self.report is not None:  # always_update: setting None again would redraw for nothing
            self.report = None
        if live:
            self.this_machine = message.capture
        self.displayed = Displayed(
            message.capture,
            source,
            fallback=message.fallback,
            moving_counters=(live or replay is not None) and self.sampler is not None,
            replay=replay,
            interval=self.options.interval,
        )

    async def open_pane(self, name: str) -> None:
        """Show a pane (mounting it the first time, bound to the current state) and focus it."""
        main = self.main
        await main.ensure_pane(name)
        main.activate(name)
        main.show_keys()

    @on(ReportUpdated)
    def _report_updated(self, message: ReportUpdated) -> None:
        first = self.report is None
        self.report = message.report
        if first:
            self.call_after_refresh(self._first_screen_done)
        live = self.source is not None and self.source.kind == "live"
        moving = live or self.replay_label is not None
        if first and moving and self.sampler is not None and self.options.interval is not None:
            self.sample_counters()

    @property
    def replay_label(self) -> str | None:
        """What the counters are when a trace is replayed (SYNTHETIC...), else ``None``."""
        sampler = self.sampler
        return sampler.label if isinstance(sampler, TraceReplaySampler) else None

    def _probe_panel(self) -> ProbePanel:
        from pcidoc.tui.widgets.doctor_pane import DoctorPane

        doctor = self.main.pane("doctor")
        assert isinstance(doctor, DoctorPane), "the Doctor pane opens before probes start"
        return doctor.probes

    def _first_screen_done(self) -> None:
        import time

        self.first_screen_at = time.monotonic()
        if self.freeze_gc:
            import gc

            gc.collect()
            gc.freeze()
            gc.enable()  # run_tui kept it off until now

    @on(CountersSampled)
    def _counters_sampled(self, message: CountersSampled) -> None:
        if message.sampler is not None and message.sampler is not self.sampler:
            return  # read from the machine on display before (another one was opened since)
        previous = self.last_sample
        sample = message.sample
        between = None
        if previous is not None:
            between = {r.index: r for r in rates(previous, sample)}
        counted, since = None, None
        if self.source is not None and self.source.kind == "live":
            # A real machine's link changes since it was opened (not a replayed demo trace's).
            old = self.counters
            counted = dict(old.link_changes or {}) if old is not None else {}
            since = old.since if old is not None and old.since is not None else sample.t
            if previous is not None:
                for index, (gen, width) in changed_links(previous, sample).items():
                    seen = counted.get(index, (0, 0))
                    counted[index] = (seen[0] + gen, seen[1] + width)
        self.counters = Counters(sample, between, counted, since)

    @on(ProbesPlanned)
    async def _probes_planned(self, message: ProbesPlanned) -> None:
        await self._probe_panel().plan(message.probes, message.errors, message.notes)
        grouped: dict[tuple[str, str], list[str]] = {}
        for error in message.errors:
            grouped.setdefault((error.kind, error.message), []).append(error.probe)
        for (kind, text), probes in grouped.items():
            severity = "warning" if kind in ("refused", "unavailable") else "error"
            self._probe_notice(f"probe {', '.join(probes)}: {kind}: {text}", text, severity)

    def _probe_notice(self, line: str, key: str, severity: str) -> None:
        """Notify once per distinct reason within a probe run."""
        if key in self._probe_notices:
            return
        self._probe_notices.add(key)
        self.notify(line, severity=severity, timeout=8)

    @on(ProbeProgressed)
    async def _probe_progressed(self, message: ProbeProgressed) -> None:
        await self._probe_panel().progress(message.probe, message.fraction, message.message)

    @on(ProbeFinished)
    async def _probe_finished(self, message: ProbeFinished) -> None:
        await self._probe_panel().finish(
            message.probe, message.results, message.errors, message.wall_s
        )
        for error in message.errors:
            severity = "warning" if error.kind == "interrupted" else "error"
            self._probe_notice(
                f"probe {message.label}: {error.kind}: {error.message}", error.message, severity
            )

    @on(ProbesEnded)
    def _probes_ended(self, message: ProbesEnded) -> None:
        self.probes_running = False
        self._probe_panel().end(message.cancelled)
        if message.cancelled:
            self.notify("Probes cancelled; their processes were stopped.", severity="warning")
        else:
            self.notify("Probes finished: the checks now include the measurements.")

    @on(ReportExported)
    def _report_exported(self, message: ReportExported) -> None:
        folder = os.path.dirname(message.paths[0]) if message.paths else ""
        stems = {os.path.splitext(os.path.basename(p))[0] for p in message.paths}
        if len(stems) == 1:
            # One name and its suffixes: short enough not to break file names, and gone
            # before it covers the next dialog for long.
            suffixes = ",".join(os.path.splitext(p)[1].lstrip(".") for p in message.paths)
            names = f"{stems.pop()}.{{{suffixes}}}"
        else:
            names = ", ".join(os.path.basename(p) for p in message.paths)
        self.notify(f"Wrote {names} in {folder}", title="Report exported", timeout=5)

    @on(ExportFailed)
    def _export_failed(self, message: ExportFailed) -> None:
        if message.base:
            self.export_retry[message.kind] = message.base
        self.notify(message.reason, title="Not written", severity="error", timeout=10)

    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state != WorkerState.ERROR:
            return
        error = worker.error
        what = worker.description or worker.name
        self.notify(f"{what} failed: {type(error).__name__}: {error}", severity="error", timeout=10)
        if worker.group == "probes":
            self.probes_running = False
            self._probe_panel().end(cancelled=False)
        if worker.group == "load" and self.report is None:
            self.status = f"could not load: {error}"

    async def on_check_list_jump_requested(self, message: CheckList.JumpRequested) -> None:
        """Enter on a finding: its GPU pair (or GPU) under the Topology pane's cursor (a
        handler by name: the Doctor pane's module loads when the pane first opens)."""
        from pcidoc.tui.panes.doctor import jump

        await jump(self, message.check)

    def action_pane_key(self, key: str) -> None:
        """A pane's key clicked in the key bar: act on the pane on display, as the key does."""
        main = self.main
        pane = main.active_pane
        hint = PANE_BY_ID[pane].key(key)
        widget = main.pane(pane)
        if hint is not None and widget is not None:
            getattr(widget, f"action_{hint.action}")()

    # ------------------------------------------------------------------ actions

    def action_help(self) -> None:
        """Show every key."""
        from pcidoc.tui.screens.fleet import FleetScreen
        from pcidoc.tui.screens.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss(None)
            return
        context = "fleet" if isinstance(self.screen, FleetScreen) else "main"
        self.push_screen(HelpScreen(context, fleet=self.fleet is not None))

    def action_fleet(self) -> None:
        """Back to the fleet's node list (``pcidoc --fleet DIR`` only)."""
        if self.fleet is not None:
            from pcidoc.tui.screens.fleet import show_fleet

            show_fleet(self)

    async def action_pane(self, pane: str) -> None:
        """Switch pane."""
        if pane in PANE_BY_ID:
            await self.open_pane(pane)

    def action_toggle_banner(self) -> None:
        """Hide or show the no-GPU banner (it takes rows a small terminal needs)."""
        banner = self.main.banner
        if not banner.has_reason:
            displayed = self.displayed
            what = (
                "this machine's GPUs are on display"
                if displayed is not None and displayed.source.kind == "live"
                else f"{displayed.source.describe()} is on display by choice"
                if displayed is not None
                else "nothing is on display yet"
            )
            self.notify(
                f"There is no banner to hide: it shows only when this machine has no GPU and "
                f"a demo stands in ({what}).",
                timeout=4,
            )
            return
        banner.toggle()

    async def action_worst(self) -> None:
        """Open the Doctor pane on the worst finding."""
        await self.open_pane("doctor")
        self.main.doctor.select_worst()

    def probes_blocked(self) -> str | None:
        """Why probes cannot run now, or ``None`` when they can."""
        if self.probes_running:
            return "Probes are already running (x cancels them)."
        if self.capture is None or self.source is None or self.report is None:
            return "Still loading the machine; try again in a moment."
        if self.options.allow_probes is True:
            return None
        if self.options.allow_probes is False:
            return "Probes are disabled in this session."
        kind = self.source.kind
        if self.fallback:
            return (
                f"This machine has no usable GPU ({self.no_gpu_reason}); the panes show a DEMO "
                "machine, which cannot be measured from here. Run pcidoc on a GPU machine."
            )
        if kind == "demo":
            return (
                f"The panes show the DEMO machine {self.source.name}, not this one: probes "
                "measure the GPUs of the machine pcidoc runs on. Run pcidoc (no --demo) there."
            )
        if kind != "live":
            return (
                "The panes show a capture file: probes measure the machine pcidoc runs on. Run "
                "pcidoc (no --from) on that machine, or `pcidoc capture --probes quick` there."
            )
        if not [g for g in self.capture.gpus if g.nvml_error is None]:
            return "This machine has no usable GPU to measure."
        return None

    async def action_probes(self, mode: str) -> None:
        """Run the quick or full probes (on a live GPU machine)."""
        reason = self.probes_blocked()
        if reason is not None:
            self.notify(reason, title="Probes not started", severity="warning", timeout=8)
            return
        displayed = self.displayed
        assert displayed is not None and displayed.capture is not None
        self.probes_running = True
        self._probe_notices.clear()
        await self.open_pane("doctor")
        await self._probe_panel().start(mode)
        live = displayed.source.kind == "live"
        # Each probe run starts from the facts as loaded, not from an earlier run's results.
        self.run_probes(mode, displayed.capture.model_copy(deep=True), displayed.source, live)

    def action_cancel_probes(self) -> None:
        """Cancel the running probes: the runner ends their process groups."""
        if not self.probes_running:
            blocked = self.probes_blocked()
            # "p starts them" only where p does: on a demo or a capture it refuses, and why.
            hint = "p starts them." if blocked is None else blocked
            self.notify(f"No probes are running: nothing to cancel. {hint}", timeout=6)
            return
        self.workers.cancel_group(self, "probes")
        self._probe_panel().cancelling()

    def default_export_base(self) -> str:
        """``pcidoc-report-<host>-<UTC time>``."""
        capture, source = self.capture, self.source
        name = capture.host.hostname if capture is not None and capture.host.hostname else None
        if not name and source is not None:
            name = source.name or (
                os.path.splitext(os.path.basename(source.path))[0] if source.path else None
            )
        name = _UNSAFE.sub("-", name or "machine").strip("-") or "machine"
        stamp = self.services.now().astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        return f"pcidoc-report-{name}-{stamp}"

    def action_export(self) -> None:
        """Ask for a path, then write the report and a screenshot."""
        from pcidoc.tui.screens.export import ExportScreen

        if self.report is None:
            self.notify(
                "Nothing to export yet: the report is still being computed.", severity="warning"
            )
            return
        proposed = self.export_retry.pop("report", "") or self.default_export_base()
        self.push_screen(ExportScreen(proposed, str(self.options.export_dir)), self._export_chosen)

    def _export_chosen(self, base: str | None) -> None:
        if not base or self.report is None:
            return
        report = self.report
        default_name = self.default_export_base()
        # The dialog is gone after this refresh: the screenshot shows the panes, not the dialog.
        self.call_after_refresh(
            lambda: self.write_export(
                report,
                base,
                offline_svg(self.export_screenshot(title=f"pcidoc — {base}")),
                default_name,
            )
        )

    def action_samples(self) -> None:
        """Open another bundled sample machine."""
        from pcidoc.tui.screens.samples import THIS_MACHINE, SamplePicker

        if self.probes_running:
            self.notify(
                "Probes are running on this machine: cancel them first (x).", severity="warning"
            )
            return

        try:
            samples = self.services.list_demos()
        except Exception as exc:
            self.notify(f"No samples: {exc}", severity="error")
            return
        offer_live = (
            self.this_machine is not None
            and bool(self.this_machine.gpus)
            and (self.source is None or self.source.kind != "live")
        )
        current = self.source.name if self.source is not None else None

        def chosen(name: str | None) -> None:
            if name is None:
                return
            if name == THIS_MACHINE and self.this_machine is not None:
                self.load_machine(None, None, live=True)
                return
            self._stop_counters()
            self.load_machine(None, None, demo=name)

        self.push_screen(SamplePicker(samples, current, offer_live), chosen)

    def _stop_counters(self) -> None:
        self.workers.cancel_group(self, "counters")
        self.sampler = None

    async def action_quit(self) -> None:
        """Stop the sampler, cancel running probes (their processes end), exit."""
        self.workers.cancel_group(self, "counters")
        self.workers.cancel_group(self, "probes")
        self.exit(0)

    def on_unmount(self) -> None:
        """Stop the workers, then release what the services hold (the live NVML session)."""
        self.keys.close()
        self.workers.cancel_group(self, "counters")
        self.workers.cancel_group(self, "probes")
        self.services.close()


def make_app(
    capture: Capture | None = None,
    source: ReportSource | None = None,
    *,
    services: TuiServices | None = None,
    options: TuiOptions | None = None,
    fleet: FleetReport | None = None,
    app_class: type[PcidocApp] | None = None,
    report: Report | None = None,
) -> PcidocApp:
    """Build the TUI app: the one way production code and tests make one.

    Args:
        capture: The machine to show, loaded before the app starts; ``None`` collects this
            machine live (or, with ``fleet``, opens the fleet's node list).
        source: Where ``capture`` came from.
        services: The collaborators (default: :class:`TuiServices` defaults, plus live
            collection of this machine through one NVML session when ``capture`` is ``None``).
        options: The session's settings (default: :class:`TuiOptions`).
        fleet: The fleet report of ``pcidoc --fleet DIR``.
        app_class: A subclass of :class:`PcidocApp` to build (tests and benchmarks).
        report: The doctor's report of ``capture`` if it already ran (see :class:`PcidocApp`).
    """
    if services is None:
        services = TuiServices.this_machine() if capture is None else TuiServices()
    cls = app_class if app_class is not None else PcidocApp
    return cls(
        capture,
        source,
        services=services,
        options=options or TuiOptions(),
        fleet=fleet,
        report=report,
    )


__all__ = ["PcidocApp", "make_app"]

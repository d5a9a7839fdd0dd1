"""The pcidoc TUI (the only package that imports textual / textual_plotext).

:func:`run_tui` is what bare ``pcidoc`` runs. It loads a ``--from`` file or a ``--demo`` sample
*before* the app starts, so a bad file ends with the one-line error and exit code 3 of every
other command, never inside a half-drawn screen.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pcidoc.errors import PcidocError

if TYPE_CHECKING:
    from pcidoc.tui.app import PcidocApp


class TuiCrashed(PcidocError):
    """The app ended on an internal error; the message names the log with the traceback."""


def run_tui(
    from_file: str | None = None,
    demo: str | None = None,
    interval: float = 1.0,
    debug: bool = False,
) -> int:
    """Run the TUI on a capture file, a bundled sample, or this machine.

    Args:
        from_file: A capture (or report) file; probes are disabled for it.
        demo: A sample name, ``""`` for the default demo, ``None`` for this machine.
        interval: Seconds between live counter samples.
        debug: On an internal error also print Textual's full traceback.

    Returns:
        The exit code (0 after a normal quit).

    Raises:
        PcidocError: the file or sample could not be loaded, or the app ended on an internal
            error (the message names the log file with the traceback); the CLI prints one line
            and exits 3.
    """
    import gc

    # No cyclic garbage collection until the first screen: start-up allocates a lot and frees
    # little, so its collections (~45 ms of CPU) find nothing. The app turns it back on after
    # its first complete screen, with everything alive frozen (PcidocApp.freeze_gc).
    gc.disable()
    try:
        return _run_tui(from_file, demo, interval, debug)
    finally:
        gc.enable()


def _run_tui(from_file: str | None, demo: str | None, interval: float, debug: bool) -> int:
    return run_app(build_app(from_file, demo, interval), debug)


def build_app(
    from_file: str | None = None,
    demo: str | None = None,
    interval: float = 1.0,
    app_class: type[PcidocApp] | None = None,
) -> PcidocApp:
    """The app :func:`run_tui` runs (the start-up benchmark builds it the same way).

    Raises:
        PcidocError: the file or sample could not be loaded.
    """
    from pcidoc.model.report import ReportSource

    capture = None
    source = None
    if from_file:
        from pcidoc.collect.load import load_machine

        # A capture, or pasted output (a dmesg excerpt, an error line) imported on the way.
        capture = load_machine(os.fspath(from_file)).capture
        source = ReportSource.for_file(os.fspath(from_file), capture.origin.kind)
    elif demo is not None:
        from pcidoc.tui.live import load_demo

        capture, source = load_demo(demo or None)
    from pcidoc.tui.services import TuiOptions, TuiServices

    services = TuiServices.this_machine() if capture is None else TuiServices()
    report = None
    if capture is not None and source is not None:
        # The doctor runs now, before Textual loads, rather than on a worker beside the first
        # paints: the first screen then has the verdicts at once (docs/performance.md).
        report = services.run_doctor(capture, source)
    from pcidoc.tui.app import make_app

    return make_app(
        capture,
        source,
        services=services,
        options=TuiOptions(interval=interval, replay_demos=True),
        app_class=app_class,
        report=report,
    )


def run_app(app: PcidocApp, debug: bool = False) -> int:
    """Run a built app as the process's TUI; its exit code.

    Raises:
        TuiCrashed: the app ended on an internal error: one line naming the log that holds
            the traceback (the CLI exits 3), never exit code 0 after a crash.
    """
    app.freeze_gc = True
    app.debug_errors = debug
    code = app.run()
    crash = app.crash
    if crash is not None:
        where = (
            f"traceback in {app.crash_log}" if app.crash_log else "the traceback could not be saved"
        )
        raise TuiCrashed(
            f"internal error in the TUI: {type(crash).__name__}: {crash} ({where}; please "
            "report it)"
        )
    return int(code or 0)


__all__ = ["TuiCrashed", "build_app", "run_app", "run_tui"]

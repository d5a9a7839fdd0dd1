"""Bare ``pcidoc``: the TUI on this machine, a sample (``--demo``), a capture (``--from``), a
fleet (``--fleet DIR``) or a failed job's explanation (``--explain PATH``). Its options are the
top-level parser's (:func:`pcidoc.cli.options.add_top_options`).

This module launches the TUI's entry points (:mod:`pcidoc.tui`); what they show is computed
first, here, by the layers below (the fleet analysis, the explanation), so that no layer below
the TUI reaches up into it.
"""

from __future__ import annotations

import argparse
import os
import sys

from pcidoc.cli import output
from pcidoc.cli.machine import from_file_hint
from pcidoc.errors import PcidocError


def run(args: argparse.Namespace) -> int:
    """Bare ``pcidoc``: the TUI."""
    if not args.interval >= 0.2:  # also rejects nan
        raise PcidocError("--interval must be at least 0.2 seconds")
    fleet = getattr(args, "fleet", None)
    if fleet and not os.path.isdir(fleet):
        raise PcidocError(f"--fleet {fleet}: not a folder")
    if getattr(args, "from_file", None) == "-":
        raise PcidocError(
            "--from -: the TUI reads its keys from the terminal, so it cannot read the capture "
            "from standard input; save it to a file and use --from FILE, or use "
            "`pcidoc check --from -` / `pcidoc topo --from -`"
        )
    refusal = no_terminal_reason()
    if refusal is not None:
        raise PcidocError(refusal)
    if fleet:
        return run_fleet_tui(fleet, interval=args.interval)
    if getattr(args, "explain", None):
        return run_explain_tui(args.explain)
    from pcidoc.tui import TuiCrashed, run_tui

    from_file = getattr(args, "from_file", None)
    try:
        return run_tui(
            from_file=from_file,
            demo=getattr(args, "demo", None),
            interval=args.interval,
            debug=bool(getattr(args, "debug", False)),
        )
    except TuiCrashed:
        raise
    except PcidocError as exc:
        if from_file:  # loading the file failed, before the app started
            raise from_file_hint(from_file, exc) from None
        raise


def no_terminal_reason() -> str | None:
    """Why the TUI cannot start here (stdin or stdout is not a terminal), or ``None``.

    Without a terminal the TUI would write escape codes into a file or pipe and wait forever
    for keys (``pcidoc --demo > out.txt``, ``ssh host pcidoc`` without ``-t``, cron, CI).
    """
    missing = [
        name
        for name, stream in (("stdin", sys.stdin), ("stdout", sys.stdout))
        if stream is None or not output.isatty(stream)
    ]
    if not missing:
        return None
    return (
        f"the TUI needs a terminal but {' and '.join(missing)} "
        f"{'is' if len(missing) == 1 else 'are'} not one; for text output use "
        "`pcidoc check` (diagnosis) or `pcidoc topo` (topology), add --demo/--from as before; "
        "over ssh use `ssh -t`"
    )


def run_fleet_tui(folder: str, interval: float) -> int:
    """``pcidoc --fleet DIR``: analyse, then open the TUI's fleet screen."""
    from pcidoc.fleet.analyze import analyse

    if not os.path.isdir(folder):
        raise PcidocError(f"--fleet {folder}: not a folder")
    sys.stderr.write(f"pcidoc: diagnosing the captures in {folder}...\n")
    report = analyse([folder])
    from pcidoc.tui.screens.fleet import run_fleet_tui as run_screen

    return run_screen(report, interval=interval)


def run_explain_tui(path: str) -> int:
    """``pcidoc --explain PATH``: explain first, then open the explanation screen."""
    from pcidoc.explain import explain_paths

    sys.stderr.write(f"pcidoc: reading the job in {path}...\n")
    try:
        result = explain_paths([path])
    except PcidocError as exc:
        raise PcidocError(f"--explain {exc.message}") from None
    from pcidoc.tui.screens.explain import run_explain_app

    return run_explain_app(result, source=path)

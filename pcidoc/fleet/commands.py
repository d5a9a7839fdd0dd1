"""The ``pcidoc fleet``, ``pcidoc diff`` and ``pcidoc watch`` subcommands (parsers and handlers).

Kept out of :mod:`pcidoc.cli` so the CLI only dispatches here; everything heavy is imported in
the handlers.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from pcidoc.errors import ExitCode, PcidocError

FLEET_SUFFIXES = (".json", ".md", ".html", ".htm", ".prom")


def add_fleet_commands(sub: Any, hidden_debug: dict[str, object]) -> None:
    """Add ``fleet``, ``diff`` and ``watch`` to the CLI's subparsers."""
    fleet = sub.add_parser(
        "fleet",
        help="diagnose many machines' captures: outliers, fleet-wide findings, exclude list",
        description="Run the doctor on every capture/report (files or folders of them), group "
        "nodes by hardware signature and find the odd ones. Exit code: worst node verdict "
        "(0/1/2); 3 when an input was unreadable (it is named and skipped).",
    )
    fleet.add_argument("paths", nargs="+", metavar="PATH", help="capture/report files or folders")
    fleet.add_argument("--json", action="store_true", help="print the pcidoc.fleet/1 JSON")
    fleet.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="also write the fleet report to FILE (.json, .md, .html or .prom)",
    )
    fleet.add_argument(
        "-j",
        "--jobs",
        type=int,
        metavar="N",
        help="worker processes (default: the usable CPU cores)",
    )
    fleet.add_argument(
        "--names",
        choices=("host", "file"),
        default="host",
        help="name nodes by the capture's hostname (default) or by file name (Kubernetes pods "
        "report their pod name as hostname)",
    )
    fleet.add_argument("-v", "--verbose", action="store_true", help="list every node")
    fleet.add_argument("--debug", **hidden_debug)

    diff = sub.add_parser(
        "diff",
        help="what changed between two captures (or reports)",
        description="Compare two captures of one machine (before/after a driver or BIOS change) "
        "or two nodes: facts, measurements beyond their noise, verdicts. Exit code: 0 no change, "
        "1 changes, 2 something got worse, 3 bad input.",
    )
    diff.add_argument("a", metavar="A", help="the first (before) capture or report")
    diff.add_argument("b", metavar="B", help="the second (after) capture or report")
    diff.add_argument("--json", action="store_true", help="print the pcidoc.diff/1 JSON")
    diff.add_argument("--debug", **hidden_debug)

    watch = sub.add_parser(
        "watch",
        help="headless loop over live counters and checks; Prometheus file and JSON lines",
        description="Collect this machine once, then sample the live counters every --interval "
        "seconds, re-run the live checks, rewrite --prom atomically and print (or append to "
        "--jsonl) one JSON line per change: a link that downtrains, replays that grow, an NVLink "
        "that goes down, a check that changes severity. Ctrl-C exits 130.",
    )
    watch.add_argument(
        "--interval", type=float, default=10.0, metavar="S", help="seconds between samples (10)"
    )
    watch.add_argument("--prom", metavar="FILE", help="node_exporter textfile to rewrite")
    watch.add_argument("--jsonl", metavar="FILE", help="append change events here (default stdout)")
    watch.add_argument(
        "--count", type=int, metavar="N", help="stop after N samples (default: run until Ctrl-C)"
    )
    watch.add_argument(
        "--ras-user",
        action="append",
        metavar="USER",
        help="also believe the NCCL RAS service of jobs run by USER (name or uid; repeatable). "
        "By default only a RAS listener of root's or your own is read: any local user can "
        "listen on its port first",
    )
    watch.add_argument("--debug", **hidden_debug)


def run_command(args: argparse.Namespace, progress: Callable[[str], None]) -> int:
    """Dispatch ``fleet``/``diff``/``watch``."""
    if args.command == "fleet":
        return cmd_fleet(args, progress)
    if args.command == "diff":
        return cmd_diff(args)
    from pcidoc.fleet.watch import watch_command

    return watch_command(args, progress)


def _check_output(output: str) -> None:
    suffix = os.path.splitext(output)[1].lower()
    if suffix not in FLEET_SUFFIXES:
        raise PcidocError(f"-o {output}: unknown format; use .json, .md, .html or .prom")
    from pcidoc.fileio import check_output

    check_output(output, f"-o {output}")


def write_fleet_file(report: Any, output: str) -> str:
    """Write a fleet report by extension with the safe writer; returns what was done
    (``wrote FILE``, ``replaced FILE``)."""
    suffix = os.path.splitext(output)[1].lower()
    if suffix == ".prom":
        from pcidoc.fleet.prom import fleet_registry, write_prom

        return write_prom(fleet_registry(report), output).describe()
    from pcidoc.fileio import write_output
    from pcidoc.fleet import render

    text = {
        ".json": render.fleet_json,
        ".md": render.fleet_markdown,
        ".html": render.fleet_html,
        ".htm": render.fleet_html,
    }[suffix](report)
    return write_output(output, text).describe()


def cmd_fleet(args: argparse.Namespace, progress: Callable[[str], None]) -> int:
    """``pcidoc fleet PATH...``."""
    from pcidoc.fleet.analyze import analyse, exit_code_for_fleet
    from pcidoc.fleet.render import fleet_json, fleet_text

    if args.output:
        _check_output(args.output)
    if args.jobs is not None and args.jobs < 1:
        raise PcidocError("--jobs must be at least 1")
    report = analyse(args.paths, workers=args.jobs, progress=progress, names=args.names)
    for bad in report.unreadable:
        progress(f"pcidoc: skipped {bad.text()}")
    if args.output:
        progress(f"pcidoc: {write_fleet_file(report, args.output)}")
    sys.stdout.write(fleet_json(report) if args.json else fleet_text(report, args.verbose))
    return exit_code_for_fleet(report)


def cmd_diff(args: argparse.Namespace) -> int:
    """``pcidoc diff A B``."""
    import json

    from pcidoc.fleet.diff import diff_files, diff_text, exit_code_for_diff

    result = diff_files(args.a, args.b)
    if args.json:
        sys.stdout.write(json.dumps(result.as_dict(), indent=2) + "\n")
    else:
        sys.stdout.write(diff_text(result))
    return exit_code_for_diff(result)


def run_fleet_tui(args: argparse.Namespace) -> int:
    """``pcidoc --fleet DIR``: analyse, then open the TUI's fleet screen."""
    from pcidoc.fleet.analyze import analyse

    folder = args.fleet
    if not os.path.isdir(folder):
        raise PcidocError(f"--fleet {folder}: not a folder")
    sys.stderr.write(f"pcidoc: diagnosing the captures in {folder}...\n")
    report = analyse([folder])
    from pcidoc.tui.screens.fleet import run_fleet_tui as run

    return run(report, interval=args.interval)


_ = ExitCode

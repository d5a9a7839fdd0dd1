"""``pcidoc fleet PATH...``: the doctor on many machines' captures, their outliers and what the
fleet shares (the analysis lives in :mod:`pcidoc.fleet`)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from pcidoc.cli.output import stderr
from pcidoc.errors import PcidocError

if TYPE_CHECKING:
    from pcidoc.model.fleet import FleetReport

FLEET_SUFFIXES = (".json", ".md", ".html", ".htm", ".prom")


def add_arguments(fleet: argparse.ArgumentParser) -> None:
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


def _check_output(output: str) -> None:
    suffix = os.path.splitext(output)[1].lower()
    if suffix not in FLEET_SUFFIXES:
        raise PcidocError(f"-o {output}: unknown format; use .json, .md, .html or .prom")
    from pcidoc.fileio import check_output

    check_output(output, f"-o {output}")


def write_fleet_file(report: FleetReport, output: str) -> str:
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


def run(args: argparse.Namespace) -> int:
    """``pcidoc fleet PATH...``."""
    from pcidoc.fleet.analyze import analyse, exit_code_for_fleet
    from pcidoc.fleet.render import fleet_json, fleet_text

    if args.output:
        _check_output(args.output)
    if args.jobs is not None and args.jobs < 1:
        raise PcidocError("--jobs must be at least 1")
    report = analyse(args.paths, workers=args.jobs, progress=stderr, names=args.names)
    for bad in report.unreadable:
        stderr(f"pcidoc: skipped {bad.text()}")
    if args.output:
        stderr(f"pcidoc: {write_fleet_file(report, args.output)}")
    sys.stdout.write(fleet_json(report) if args.json else fleet_text(report, args.verbose))
    return exit_code_for_fleet(report)

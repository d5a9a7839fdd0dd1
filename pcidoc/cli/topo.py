"""``pcidoc topo``: the topology matrix, NUMA/CPU affinity and notable facts."""

from __future__ import annotations

import argparse

from pcidoc.cli.machine import resolve_machine
from pcidoc.cli.options import add_source_options
from pcidoc.cli.output import emit
from pcidoc.errors import ExitCode


def add_arguments(topo: argparse.ArgumentParser) -> None:
    topo.add_argument("--json", action="store_true", help="print the topology part as JSON")
    add_source_options(topo)


def run(args: argparse.Namespace) -> int:
    """``pcidoc topo``."""
    if args.json:
        from pcidoc.present.json import topology_json

        emit(topology_json(resolve_machine(args)[0]))
        return ExitCode.OK
    capture, source = resolve_machine(args)
    from pcidoc.doctor.topology_notes import topology_notes
    from pcidoc.present.text import make_console, render_topology

    notes = topology_notes(capture)
    emit(lambda: render_topology(capture, make_console(), source=source, notes=notes))
    return ExitCode.OK

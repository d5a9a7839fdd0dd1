"""``pcidoc nccl-topo``: an NCCL topology file (``NCCL_TOPO_FILE``) from a machine."""

from __future__ import annotations

import argparse

from pcidoc.cli.machine import resolve_machine
from pcidoc.cli.options import add_source_options
from pcidoc.cli.output import emit, stderr, wrote
from pcidoc.errors import ExitCode


def add_arguments(nccl_topo: argparse.ArgumentParser) -> None:
    add_source_options(nccl_topo)
    nccl_topo.add_argument(
        "-o", "--output", required=True, metavar="FILE", help="the XML file to write ('-': stdout)"
    )
    nccl_topo.add_argument("--arch", help="CPU architecture when the capture lacks it (x86_64)")
    nccl_topo.add_argument(
        "--cpu-vendor", help="CPU vendor string when the capture lacks it (GenuineIntel...)"
    )
    nccl_topo.add_argument("--cpu-family", help="CPU family id (/proc/cpuinfo 'cpu family')")
    nccl_topo.add_argument("--cpu-model", help="CPU model id (/proc/cpuinfo 'model')")


def run(args: argparse.Namespace) -> int:
    """``pcidoc nccl-topo``."""
    from pcidoc.collect.nccl_topo import local_cpu_ids, write_topology

    capture, _ = resolve_machine(args)
    ids: dict[str, str] = {}
    if capture.origin.kind == "live":
        ids = local_cpu_ids()
    if not (args.cpu_family and args.cpu_model):
        for topo in capture.evidence.nccl_topologies if capture.evidence else []:
            for cpu in topo.cpus:
                if cpu.familyid is not None and cpu.modelid is not None:
                    ids.setdefault("familyid", str(cpu.familyid))
                    ids.setdefault("modelid", str(cpu.modelid))
    text, notes = write_topology(
        capture,
        arch=args.arch or ids.get("arch"),
        vendor=args.cpu_vendor or ids.get("vendor"),
        familyid=args.cpu_family or ids.get("familyid"),
        modelid=args.cpu_model or ids.get("modelid"),
    )
    for note in notes:
        stderr(f"pcidoc: note: {note}")
    if args.output == "-":
        emit(text)
        return ExitCode.OK
    from pcidoc.fileio import write_output

    wrote("topology file", write_output(args.output, text), f"{len(capture.gpus)} GPU(s)")
    return ExitCode.OK

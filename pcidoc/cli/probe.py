"""``pcidoc probe NAME``: one measurement probe in a child process (the probes themselves live
in :mod:`pcidoc.probes`)."""

from __future__ import annotations

import argparse

from pcidoc.cli.options import add_python_option
from pcidoc.cli.output import emit, stderr
from pcidoc.errors import ExitCode

PROBE_NAMES = ("transfer", "p2p", "allreduce", "scaling", "fabric")
PROBE_SUMMARIES = {
    "transfer": "host<->GPU copy bandwidth of each GPU (pinned, pageable, NUMA placement)",
    "p2p": "GPU<->GPU copy bandwidth matrix and byte-verified peer copies",
    "allreduce": "all_reduce bus bandwidth per rank count (NCCL on GPUs, or --backend gloo)",
    "scaling": "data-parallel training step throughput and efficiency per rank count",
    "fabric": "multi-node all_reduce and node-pair bandwidth (run under torchrun/srun)",
}


def add_arguments(probe: argparse.ArgumentParser) -> None:
    probe.add_argument("name", nargs="?", choices=PROBE_NAMES, help="which probe (none: list them)")
    probe.add_argument("--gpus", metavar="LIST", help="GPU indices, e.g. 0,1,2,3 (default: all)")
    probe.add_argument(
        "--backend", choices=("nccl", "gloo"), help="collective backend (default: nccl on GPUs)"
    )
    probe.add_argument(
        "--ranks", metavar="LIST", help="rank counts for allreduce/scaling, e.g. 1,2,4,8"
    )
    probe.add_argument(
        "--mode", choices=("quick", "full"), default="quick", help="probe depth (default quick)"
    )
    probe.add_argument("--json", action="store_true", help="print only the measurement JSON")
    probe.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="override the probe's deadline"
    )
    probe.add_argument(
        "--force", action="store_true", help="run even when other processes use the GPUs"
    )
    probe.add_argument(
        "-o", "--output", metavar="FILE", help="fabric: rank 0 also writes its JSON to FILE"
    )
    add_python_option(probe)


def run(args: argparse.Namespace) -> int:
    """``pcidoc probe NAME``; without a name, the list of probes (on stdout, exit 0: listing
    is what ``pcidoc probe`` alone asks for, as ``pcidoc samples`` lists the samples)."""
    if args.name is None:
        width = max(map(len, PROBE_NAMES))
        lines = [f"  {name:<{width}}  {PROBE_SUMMARIES[name]}" for name in PROBE_NAMES]
        emit("The probes (run one: pcidoc probe NAME [options]):\n" + "\n".join(lines) + "\n")
        return ExitCode.OK
    if args.name == "fabric":
        from pcidoc.probes.fabric import fabric_command

        return fabric_command(args, progress=stderr)
    from pcidoc.probes.session import probe_command

    return probe_command(args, progress=stderr)

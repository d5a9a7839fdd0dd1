"""``pcidoc samples``: the bundled sample machines for ``--demo``."""

from __future__ import annotations

import argparse
import sys

from pcidoc.cli.output import emit
from pcidoc.errors import ExitCode


def add_arguments(samples: argparse.ArgumentParser) -> None:
    samples.add_argument("--json", action="store_true", help="print the list as JSON")


def run(args: argparse.Namespace) -> int:
    """``pcidoc samples``."""
    from pcidoc.samples import default_demo, list_samples

    samples = list_samples()
    if args.json:
        import json

        emit(json.dumps([s.model_dump() for s in samples], indent=2) + "\n")
        return ExitCode.OK
    default = default_demo()
    width = max(len(s.name) for s in samples)
    for sample in samples:
        mark = "*" if sample.name == default else " "
        sys.stdout.write(f"{mark} {sample.name:<{width}}  {sample.title}\n")
    sys.stdout.write("\n* = default for `pcidoc --demo`. Open one with `pcidoc --demo NAME`.\n")
    return ExitCode.OK

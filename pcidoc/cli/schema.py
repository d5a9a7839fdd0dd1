"""``pcidoc schema capture|report|fleet``: the JSON Schema generated from the models."""

from __future__ import annotations

import argparse

from pcidoc.cli.output import emit
from pcidoc.errors import ExitCode


def add_arguments(schema: argparse.ArgumentParser) -> None:
    schema.add_argument("kind", choices=("capture", "report", "fleet"), help="which format")


def run(args: argparse.Namespace) -> int:
    """``pcidoc schema capture|report|fleet``."""
    import json

    from pcidoc.model.capture import Capture
    from pcidoc.model.report import Report

    model = Capture if args.kind == "capture" else Report
    if args.kind == "fleet":
        from pcidoc.model.fleet import FleetReport

        model = FleetReport  # type: ignore[assignment]
    emit(json.dumps(model.model_json_schema(by_alias=True), indent=2) + "\n")
    return ExitCode.OK

"""The ``pcidoc explain`` subcommand (parser and handler) and ``pcidoc --explain PATH`` (the
TUI screen); :mod:`pcidoc.cli` only registers and dispatches here."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from pcidoc.errors import PcidocError


def add_explain_command(sub: Any, hidden_debug: dict[str, object]) -> None:
    """Add ``explain`` to the CLI's subparsers."""
    explain = sub.add_parser(
        "explain",
        help="explain a failed distributed job: the rank, host, GPU and cause",
        description="Read a job's files as they lie (launcher console logs, per-rank logs, NCCL "
        "logs, RAS, flight-recorder dumps, kernel logs and pcidoc captures of each node; "
        "folders are walked) and say which rank stopped, died, slowed or mismatched first, on "
        "which host and GPU, and why. Exit code: 0 nothing found, 1 a warning (a straggler, or "
        "a failure no rank explains), 2 a culprit with a fault, 3 nothing readable.",
        epilog="Causes: hang, died, slow, mismatch, link, xid, iommu, transport, unknown. "
        "docs/explain.md says how it reasons and how often it is right.",
    )
    explain.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="the job's folder(s) or files (one folder per node)",
    )
    explain.add_argument("--json", action="store_true", help="print the pcidoc.explain/1 JSON")
    explain.add_argument(
        "-v", "--verbose", action="store_true", help="the whole timeline and every rank's chain"
    )
    explain.add_argument("--debug", **hidden_debug)


def cmd_explain(args: argparse.Namespace, emit: Callable[[str], None]) -> int:
    """``pcidoc explain PATH...``: the explanation on stdout; its verdict as the exit code."""
    import json

    from pcidoc.explain import explain_paths
    from pcidoc.explain.render import explanation_text

    result = explain_paths(args.paths)
    if args.json:
        emit(json.dumps(result.as_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        emit(explanation_text(result, verbose=args.verbose))
    return result.exit_code


def run_explain_tui(path: str, interval: float = 1.0) -> int:
    """``pcidoc --explain PATH``: explain first, then open the explanation screen."""
    from pcidoc.explain import explain_paths

    sys.stderr.write(f"pcidoc: reading the job in {path}...\n")
    try:
        result = explain_paths([path])
    except PcidocError as exc:
        raise PcidocError(f"--explain {exc.message}") from None
    from pcidoc.tui.screens.explain import run_explain_app

    return run_explain_app(result, source=path)

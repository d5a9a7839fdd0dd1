"""``pcidoc diff A B``: what changed between two captures or reports."""

from __future__ import annotations

import argparse
import sys


def add_arguments(diff: argparse.ArgumentParser) -> None:
    diff.add_argument("a", metavar="A", help="the first (before) capture or report")
    diff.add_argument("b", metavar="B", help="the second (after) capture or report")
    diff.add_argument("--json", action="store_true", help="print the pcidoc.diff/1 JSON")


def run(args: argparse.Namespace) -> int:
    """``pcidoc diff A B``."""
    import json

    from pcidoc.fleet.diff import diff_files, diff_text, exit_code_for_diff

    result = diff_files(args.a, args.b)
    if args.json:
        sys.stdout.write(json.dumps(result.as_dict(), indent=2) + "\n")
    else:
        sys.stdout.write(diff_text(result))
    return exit_code_for_diff(result)

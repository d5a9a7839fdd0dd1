"""``pcidoc explain PATH...``: which rank of a failed job stopped, died, slowed or mismatched
first, on which host and GPU, and why (the reasoning lives in :mod:`pcidoc.explain`)."""

from __future__ import annotations

import argparse

from pcidoc.cli.output import emit


def add_arguments(explain: argparse.ArgumentParser) -> None:
    explain.epilog = (
        "Causes: hang, died, slow, mismatch, link, xid, iommu, transport, unknown. "
        "docs/explain.md says how it reasons and how often it is right."
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


def run(args: argparse.Namespace) -> int:
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

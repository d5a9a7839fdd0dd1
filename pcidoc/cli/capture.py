"""``pcidoc capture``: record this machine into a ``pcidoc.capture/1`` file."""

from __future__ import annotations

import argparse

from pcidoc.cli.options import add_probe_options
from pcidoc.cli.output import emit, stderr, wrote
from pcidoc.errors import ExitCode


def add_arguments(capture: argparse.ArgumentParser) -> None:
    capture.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="where to write (default: pcidoc-<host>-<time>.json; '-' for stdout)",
    )
    capture.add_argument(
        "--redact",
        action="store_true",
        help="replace hostnames, serials, UUIDs, MAC/IP addresses, user names, home paths and "
        "process names with stable placeholders (docs/collection.md lists what is kept)",
    )
    add_probe_options(capture, "none")


def default_capture_name(hostname: str | None, created_at: str, *, redact: bool) -> str:
    """``pcidoc-HOST-STAMP.json`` in the current folder. A hostname is outside text: anything
    but letters, digits, ``-`` and ``_`` becomes ``_`` ("a/b" or "../x" must not pick another
    folder)."""
    import re

    host = re.sub(r"[^A-Za-z0-9_-]+", "_", (hostname or "").split(".")[0]).strip("_") or "host"
    if redact:
        host = "redacted"
    stamp = re.sub(r"[^0-9TZ]", "", created_at)
    return f"pcidoc-{host}-{stamp}.json"


def run(args: argparse.Namespace) -> int:
    """``pcidoc capture``."""
    from pcidoc.collect.capture import capture_text, utc_now
    from pcidoc.collect.live import collect_live
    from pcidoc.fileio import write_output

    stderr("pcidoc: collecting facts of this machine...")
    capture = collect_live()
    if args.probes != "none":
        from pcidoc.probes.session import measure

        measure(capture, mode=args.probes, force=args.force, progress=stderr, python=args.python)
    if args.redact:
        from pcidoc.collect.capture import redact_capture

        capture = redact_capture(capture)
    if capture.origin.created_at is None:
        capture.origin.created_at = utc_now()
    output = args.output
    if not output:
        output = default_capture_name(
            capture.host.hostname, capture.origin.created_at, redact=args.redact
        )
    text = capture_text(capture)
    if output == "-":
        emit(text)
        return ExitCode.OK
    result = write_output(output, text)
    gpus = len(capture.gpus)
    reason = capture.unavailable.get("gpus")
    detail = f" (no GPUs: {reason})" if not gpus and reason else ""
    wrote("capture", result, f"{gpus} GPU(s), {len(capture.nics)} NIC(s){detail}")
    return ExitCode.OK

"""``pcidoc import``: a capture of one machine from the text outputs people paste
(``import`` is a Python keyword, hence the module's name)."""

from __future__ import annotations

import argparse
import sys

from pcidoc.cli import output
from pcidoc.cli.machine import report_import
from pcidoc.cli.output import emit, wrote
from pcidoc.errors import ExitCode


def add_arguments(imp: argparse.ArgumentParser) -> None:
    from pcidoc.collect.import_formats import SUPPORTED_FORMATS

    formats = "\n".join(f"  {fmt:<24}{what}" for fmt, what in SUPPORTED_FORMATS.items())
    imp.epilog = f"formats read (docs/import.md):\n{formats}"
    imp.formatter_class = argparse.RawDescriptionHelpFormatter
    imp.add_argument("files", nargs="+", metavar="FILE", help="text files ('-' for stdin)")
    imp.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the capture to FILE; '-' prints it (default: stdout when piped; on a "
        "terminal a one-line summary instead)",
    )
    imp.add_argument(
        "--redact",
        action="store_true",
        help="redact identifying strings (as `pcidoc capture --redact`; docs/collection.md)",
    )


def run(args: argparse.Namespace) -> int:
    """``pcidoc import``."""
    from pcidoc.collect.capture import capture_text
    from pcidoc.collect.importers import import_paths
    from pcidoc.fileio import write_output

    result = import_paths(args.files)
    capture = result.capture
    report_import(capture)
    if args.redact:
        from pcidoc.collect.capture import redact_capture

        capture = redact_capture(capture)
    text = capture_text(capture)
    what = f"{len(capture.gpus)} GPU(s), {len(capture.nics)} NIC(s)"
    if args.output and args.output != "-":
        written = write_output(args.output, text)
        wrote("capture", written, what)
    elif args.output is None and output.isatty(sys.stdout):
        # Hundreds of lines of JSON on a terminal help nobody: say what was built and how to
        # keep it. A pipe or `-o -` gets the JSON.
        from pcidoc.model.units import plurals

        lines = text.count("\n")
        sys.stdout.write(
            plurals(
                f"pcidoc: imported a capture of {what} ({lines} line(s) of JSON, not printed to "
                "a terminal); save it with `-o capture.json`, print it with `-o -`, or pipe it: "
                "`pcidoc import FILE... | pcidoc check --from -`\n"
            )
        )
    else:
        emit(text)
    return ExitCode.OK

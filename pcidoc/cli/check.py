"""``pcidoc check``: run the doctor on a machine; the verdict is the exit code."""

from __future__ import annotations

import argparse
import os

from pcidoc.cli.machine import resolve_machine
from pcidoc.cli.options import add_probe_options, add_source_options
from pcidoc.cli.output import emit, stderr, wrote
from pcidoc.errors import PcidocError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from pcidoc.fileio import WriteResult
    from pcidoc.model.report import Report

REPORT_SUFFIXES = (".json", ".md", ".html", ".htm", ".prom")


def add_arguments(check: argparse.ArgumentParser) -> None:
    check.add_argument("--json", action="store_true", help="print the pcidoc.report/1 JSON")
    add_source_options(check)
    add_probe_options(check, "none")
    check.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="IDS",
        help="comma-separated check ids or topics to run (e.g. p2p,numa.cross-socket)",
    )
    check.add_argument(
        "--skip", action="append", default=[], metavar="IDS", help="check ids or topics to skip"
    )
    check.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="also write the report to FILE (.json, .md, .html, or .prom for the "
        "node_exporter textfile collector, by extension)",
    )
    check.add_argument(
        "--redact",
        action="store_true",
        help="redact the -o report and the --json output (hostnames, serials, UUIDs, addresses, "
        "user names, paths; see docs/collection.md); findings are computed before redaction",
    )
    check.add_argument(
        "-v", "--verbose", action="store_true", help="show evidence and remediation of every check"
    )


def _read_ids(values: list[str]) -> list[str]:
    return [v for v in values if v]


def run(args: argparse.Namespace) -> int:
    """``pcidoc check``."""
    from pcidoc import doctor

    # Validate --only/--skip before any slow collection or probing.
    doctor.select_checks(_read_ids(args.only), _read_ids(args.skip))
    output = args.output
    if args.redact and not output and not args.json:
        raise PcidocError("--redact applies to a written report: add -o FILE or --json")
    if output:
        _validate_report_path(output)
    capture, source = resolve_machine(args)
    probes = args.probes != "none"
    if probes:
        if source.kind != "live":
            raise PcidocError(
                "--probes measures this machine; it cannot be combined with --from/--demo"
            )
        from pcidoc.probes.session import measure

        measure(capture, mode=args.probes, force=args.force, progress=stderr, python=args.python)
    from pcidoc.collect.capture import utc_now

    report = doctor.run(
        capture,
        source,
        _read_ids(args.only),
        _read_ids(args.skip),
        probes_requested=probes,
        generated_at=utc_now(),
    )
    if output:
        wrote("report", _write_report(report, output, redact=args.redact))
        from pcidoc.fileio import is_stdout

        if is_stdout(output):
            # The report file is standard output: print nothing else there.
            return doctor.exit_code_for(report)
    # The verdict is the exit code, also when the reader of a pipe stops early (`| head -3`).
    if args.json:
        from pcidoc.present.json import report_json_bytes

        shown = report
        if args.redact:
            from pcidoc.collect.capture import redact_report

            shown = redact_report(report)
        emit(report_json_bytes(shown))
    else:
        from pcidoc.present.text import make_console, render_report

        emit(lambda: render_report(report, make_console(), verbose=args.verbose))
    return doctor.exit_code_for(report)


def _validate_report_path(output: str) -> None:
    suffix = os.path.splitext(output)[1].lower()
    if output == "-":
        raise PcidocError(
            "-o -: a report file needs a name whose extension gives the format (.json, .md, "
            ".html or .prom); for the report on standard output use --json (JSON) or no option "
            "(text)"
        )
    from pcidoc.fileio import check_output, is_stream

    if is_stream(output) and suffix not in REPORT_SUFFIXES:
        return  # /dev/stdout, /dev/stderr, /dev/fd/N: the JSON report (see _write_report)
    if suffix not in REPORT_SUFFIXES:
        raise PcidocError(f"-o {output}: unknown report format; use .json, .md, .html or .prom")
    target = check_output(output, f"-o {output}")
    folder = os.path.dirname(target)
    if not is_stream(target) and not os.access(folder, os.W_OK):
        raise PcidocError(f"-o {output}: folder {folder} is not writable")


def _write_report(report: Report, output: str, redact: bool = False) -> WriteResult:
    from pcidoc.fileio import write_output
    from pcidoc.present import render_report_file

    if redact:
        from pcidoc.collect.capture import redact_report

        report = redact_report(report)
    if output.lower().endswith(".prom"):
        # node_exporter textfile format, built (and escaped) by prometheus_client.
        from pcidoc.fleet.prom import render, report_registry

        return write_output(output, render(report_registry(report)))
    if os.path.splitext(output)[1].lower() not in REPORT_SUFFIXES:
        # A stream (/dev/stdout, /dev/fd/3) has no extension: the report goes there as JSON.
        from pcidoc.present.json import report_json

        return write_output(output, report_json(report))
    return write_output(output, render_report_file(report, output))

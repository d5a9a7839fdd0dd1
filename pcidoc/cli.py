"""The ``pcidoc`` command line (DESIGN.md §4).

Imports are deferred to the command that needs them so that headless commands stay fast and
never load Textual or torch. stdout carries data only when ``--json`` is given; messages and
progress go to stderr. Errors are one line and exit 3 (``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from pcidoc import __version__
from pcidoc.errors import ExitCode, PcidocError

if TYPE_CHECKING:
    from pcidoc.fileio import WriteResult
    from pcidoc.model.capture import Capture
    from pcidoc.model.report import Report, ReportSource

PROBE_NAMES = ("transfer", "p2p", "allreduce", "scaling", "fabric")
PROBE_SUMMARIES = {
    "transfer": "host<->GPU copy bandwidth of each GPU (pinned, pageable, NUMA placement)",
    "p2p": "GPU<->GPU copy bandwidth matrix and byte-verified peer copies",
    "allreduce": "all_reduce bus bandwidth per rank count (NCCL on GPUs, or --backend gloo)",
    "scaling": "data-parallel training step throughput and efficiency per rank count",
    "fabric": "multi-node all_reduce and node-pair bandwidth (run under torchrun/srun)",
}

# `--debug` is accepted after the subcommand too; SUPPRESS keeps the top-level value.
_HIDDEN_DEBUG: dict[str, Any] = {
    "action": "store_true",
    "default": argparse.SUPPRESS,
    "help": argparse.SUPPRESS,
}


def _terminal_columns() -> int:
    """What ``shutil.get_terminal_size().columns`` says (``$COLUMNS``, else the terminal on
    stdout, else 80), without importing shutil and its compression modules at every start."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout at the terminal's width."""

    def __init__(self, prog: str, **kwargs: Any) -> None:
        kwargs.setdefault("width", _terminal_columns() - 2)
        super().__init__(prog, **kwargs)


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors exit 3, as every other bad input does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """One line, like every other bad input, with where to look for help."""
        sys.stderr.write(f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")
        raise SystemExit(ExitCode.BAD_INPUT)


def finite_seconds(text: str) -> float:
    """argparse type: a finite number of seconds (``nan``, ``inf`` and non-numbers refused)."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number of seconds")
    return value


def _add_source_options(parser: argparse.ArgumentParser, top: bool = False) -> None:
    # Subcommand defaults must not overwrite what the top-level parser already set.
    default = None if top else argparse.SUPPRESS
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--from",
        dest="from_file",
        metavar="FILE",
        default=default,
        help="read the machine from a capture (or report) file instead of this machine "
        "(-: standard input, not for the TUI)",
    )
    group.add_argument(
        "--demo",
        nargs="?",
        const="",
        default=default,
        metavar="NAME",
        help="use a bundled sample machine (`pcidoc samples` lists them and marks the "
        "default with *)",
    )


def _add_probe_options(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--probes",
        choices=("none", "quick", "full"),
        default=default,
        help=f"measure with the torch probes on this machine's GPUs (default: {default})",
    )
    _add_python_option(parser)
    parser.add_argument(
        "--force",
        action="store_true",
        help="run probes even when other processes are using the GPUs",
    )


def _add_python_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--python",
        metavar="PATH",
        help="Python (with torch) that runs the probes (default: $PCIDOC_PYTHON, pcidoc's own "
        "if it has torch, else the active conda/virtual env's or python3 on PATH with torch)",
    )


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of ``pcidoc`` and all its subcommands.

    Args:
        command: Build only this subcommand's parser (``main`` passes the command named first
            on the line: what follows it is that parser's to read, so the result is the same,
            and a dozen parsers are not built for nothing). ``None``: all of them.
    """
    parser = _Parser(
        prog="pcidoc",
        description="A doctor for GPU interconnects. Without a command, opens the TUI on this "
        "machine (or on --demo / --from).",
        epilog="Exit codes: 0 ok, 1 warnings, 2 failures, 3 bad input or internal error, "
        "130 interrupted. Docs: docs/usage.md",
    )
    parser.add_argument("--version", action="version", version=f"pcidoc {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    _add_source_options(parser, top=True)
    parser.add_argument(
        "--interval",
        type=finite_seconds,
        default=1.0,
        metavar="SECONDS",
        help="live counter sampling interval of the TUI (default 1.0, minimum 0.2)",
    )
    parser.add_argument(
        "--fleet",
        metavar="DIR",
        default=None,
        help="open the TUI on a fleet: a folder of captures/reports, nodes worst first",
    )
    parser.add_argument(
        "--explain",
        metavar="PATH",
        default=None,
        help="open the TUI on the explanation of a failed job (its folder; see pcidoc explain)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for names, add in _SUBCOMMANDS:
        if command is None or command in names:
            add(sub)
    return parser


def _add_check(sub: Any) -> None:
    check = sub.add_parser(
        "check",
        help="diagnose the machine and exit with 0/1/2 (ok/warn/fail)",
        description="Run the doctor's checks and print the findings, worst first.",
    )
    check.add_argument("--json", action="store_true", help="print the pcidoc.report/1 JSON")
    _add_source_options(check)
    _add_probe_options(check, "none")
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
    check.add_argument("--debug", **_HIDDEN_DEBUG)


def _add_nccl_topo(sub: Any) -> None:
    nccl_topo = sub.add_parser(
        "nccl-topo",
        help="write an NCCL topology file (NCCL_TOPO_FILE) from a capture",
        description="Write an NCCL topology XML from this machine or a capture of it, so that "
        "a VM of the same machine can set NCCL_TOPO_FILE. See docs/import.md.",
    )
    _add_source_options(nccl_topo)
    nccl_topo.add_argument(
        "-o", "--output", required=True, metavar="FILE", help="the XML file to write ('-': stdout)"
    )
    nccl_topo.add_argument("--arch", help="CPU architecture when the capture lacks it (x86_64)")
    nccl_topo.add_argument(
        "--cpu-vendor", help="CPU vendor string when the capture lacks it (GenuineIntel...)"
    )
    nccl_topo.add_argument("--cpu-family", help="CPU family id (/proc/cpuinfo 'cpu family')")
    nccl_topo.add_argument("--cpu-model", help="CPU model id (/proc/cpuinfo 'model')")
    nccl_topo.add_argument("--debug", **_HIDDEN_DEBUG)


def _add_topo(sub: Any) -> None:
    topo = sub.add_parser(
        "topo",
        help="show the topology matrix with legend and notable facts",
        description="Show the GPU/NIC topology matrix, NUMA/CPU affinity and notable facts.",
    )
    topo.add_argument("--json", action="store_true", help="print the topology part as JSON")
    _add_source_options(topo)
    topo.add_argument("--debug", **_HIDDEN_DEBUG)


def _add_capture(sub: Any) -> None:
    capture = sub.add_parser(
        "capture",
        help="record this machine into a capture file",
        description="Record this machine's facts (and optionally measurements) into a "
        "pcidoc.capture/1 file that pcidoc can read anywhere with --from.",
    )
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
    _add_probe_options(capture, "none")
    capture.add_argument("--debug", **_HIDDEN_DEBUG)


def _add_import(sub: Any) -> None:
    from pcidoc.collect.import_formats import SUPPORTED_FORMATS

    formats = "\n".join(f"  {fmt:<24}{what}" for fmt, what in SUPPORTED_FORMATS.items())
    imp = sub.add_parser(
        "import",
        help="build a capture from pasted nvidia-smi / benchmark outputs",
        description="Build a capture of ONE machine from text outputs people paste into issues. "
        "Several files merge into one capture.",
        epilog=f"formats read (docs/import.md):\n{formats}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
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
    imp.add_argument("--debug", **_HIDDEN_DEBUG)


def _add_probe(sub: Any) -> None:
    probe = sub.add_parser(
        "probe",
        help="run one measurement probe and print its JSON",
        description="Run one probe in a child process and print the measurement JSON "
        "(progress on stderr).",
    )
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
    _add_python_option(probe)
    probe.add_argument("--debug", **_HIDDEN_DEBUG)


def _add_samples(sub: Any) -> None:
    samples = sub.add_parser(
        "samples",
        help="list the bundled sample machines for --demo",
        description="List the bundled sample machines (captures built from real public outputs).",
    )
    samples.add_argument("--json", action="store_true", help="print the list as JSON")


def _add_schema(sub: Any) -> None:
    schema = sub.add_parser(
        "schema",
        help="print the JSON Schema of the capture, report or fleet format",
        description="Print the JSON Schema generated from pcidoc's models.",
    )
    schema.add_argument("kind", choices=("capture", "report", "fleet"), help="which format")


def _add_fleet(sub: Any) -> None:
    from pcidoc.fleet.commands import add_fleet_commands

    add_fleet_commands(sub, _HIDDEN_DEBUG)


def _add_explain(sub: Any) -> None:
    from pcidoc.explain.command import add_explain_command

    add_explain_command(sub, _HIDDEN_DEBUG)


_SUBCOMMANDS: tuple[tuple[tuple[str, ...], Callable[[Any], None]], ...] = (
    (("check",), _add_check),
    (("nccl-topo",), _add_nccl_topo),
    (("topo",), _add_topo),
    (("capture",), _add_capture),
    (("import",), _add_import),
    (("probe",), _add_probe),
    (("fleet", "diff", "watch"), _add_fleet),
    (("explain",), _add_explain),
    (("samples",), _add_samples),
    (("schema",), _add_schema),
)
"""Each subcommand's builder, in ``--help`` order, with the command names it adds."""
SUBCOMMAND_NAMES = frozenset(name for names, _ in _SUBCOMMANDS for name in names)


# ----------------------------------------------------------------------------- helpers


def _stderr(message: str) -> None:
    from pcidoc.sanitize import clean_text

    # Messages quote file names and pasted values: no control sequence reaches the terminal.
    sys.stderr.write(clean_text(message) + "\n")
    sys.stderr.flush()


def _stdout_is_utf8() -> bool:
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("_", "-")
    return encoding in ("utf-8", "utf8")


def _readable_when_not_utf8() -> None:
    """On a stdout that is not UTF-8, print what it cannot encode as readable ASCII (``8 x
    NVIDIA H800``, ``host<->device``) or ``?``, instead of dying with UnicodeEncodeError."""
    from pcidoc.present.ascii_fallback import register

    with contextlib.suppress(ValueError, OSError, AttributeError):
        sys.stdout.reconfigure(errors=register())  # type: ignore[union-attr]


def _emit(data: str | bytes | Callable[[], object]) -> None:
    """Write data to stdout: a text, UTF-8 bytes (written as they are where stdout is UTF-8),
    or a callable that renders to stdout (Rich).

    JSON is ASCII where it must be: non-ASCII characters only ever occur inside JSON strings,
    so where stdout cannot encode UTF-8 (``LC_ALL=C``, ``PYTHONIOENCODING=latin-1``) they are
    written as ``\\uXXXX`` escapes, which every JSON reader decodes to the same text. A reader
    that went away (``| head``) is not an error of ours: the caller still exits with its own
    code (the verdict of ``check``), and stdout is pointed at ``/dev/null`` so the
    interpreter's last flush cannot fail either. A full disk behind a redirection is reported.
    """
    try:
        if isinstance(data, bytes):
            binary = getattr(sys.stdout, "buffer", None)
            if binary is not None and _stdout_is_utf8():
                sys.stdout.flush()  # what the text layer holds goes first
                binary.write(data)
                binary.flush()
                return
            data = data.decode("utf-8")
        if isinstance(data, str):
            text = data
            if not _stdout_is_utf8() and not text.isascii():
                text = ascii_json(text)
            sys.stdout.write(text)
        else:
            data()
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
    except OSError as exc:
        raise _StdoutFailed(exc.strerror or str(exc)) from None


def ascii_json(text: str) -> str:
    """Serialized JSON with every non-ASCII character written as a ``\\uXXXX`` escape."""
    import re

    def escape(match: re.Match[str]) -> str:
        code = ord(match.group(0))
        if code > 0xFFFF:
            code -= 0x10000
            return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
        return f"\\u{code:04x}"

    return re.sub(r"[^\x00-\x7f]", escape, text)


def _wrote(what: str, result: WriteResult, detail: str = "") -> None:
    """``pcidoc: wrote FILE: detail``; says when an existing file was replaced."""
    if result.stream:
        return
    verb = "replaced the existing file" if result.replaced else "wrote"
    if "(s)" in detail:
        from pcidoc.model.units import plurals

        detail = plurals(detail)
    _stderr(f"pcidoc: {verb} {result.path}{': ' + detail if detail else ''}")


def resolve_machine(args: argparse.Namespace) -> tuple[Capture, ReportSource]:
    """Load the machine named by ``--from``/``--demo``, else collect this machine live."""
    from pcidoc.model.report import ReportSource

    if getattr(args, "from_file", None):
        capture = load_from(args.from_file)
        path = args.from_file
        if path == "-":
            from pcidoc.collect.capture import STDIN_LABEL

            path = STDIN_LABEL
        elif capture.origin.redacted:
            # The folder may name a user or a host that the redacted capture no longer shows.
            path = os.path.basename(path) or path
        _start_up_done()
        return capture, ReportSource.for_file(path, capture.origin.kind)
    if getattr(args, "demo", None) is not None:
        from pcidoc.samples import default_demo, load_sample

        name = args.demo or default_demo()
        capture = load_sample(name)
        _start_up_done()
        return capture, ReportSource(kind="demo", name=name)
    from pcidoc.collect.live import collect_live

    machine = collect_live()
    _start_up_done()
    return machine, ReportSource(kind="live")


def from_file_hint(path: str, error: PcidocError) -> PcidocError:
    """The error of a ``--from FILE`` that could not be loaded, with the next step added.

    ``--from NAME`` where NAME is a bundled sample and no such file exists points to
    ``--demo NAME``. Any other error is returned unchanged (pasted text is imported on the way;
    its error already says what pcidoc reads).
    """
    if path == "-" or os.path.exists(path):
        return error
    from pcidoc.samples import sample_names

    try:
        names = sample_names()
    except PcidocError:
        return error
    if path in names:
        return PcidocError(
            f"--from {path}: no such file; {path} is a bundled sample: use `--demo {path}`"
        )
    return error


def stdin_hint(path: str) -> None:
    """``--from -`` with a terminal on standard input: say what pcidoc is waiting for."""
    if path == "-" and sys.stdin is not None and sys.stdin.isatty():
        _stderr("pcidoc: reading a capture from standard input (paste it, then Ctrl-D)")


def load_from(path: str) -> Capture:
    """Load the machine of ``--from FILE`` (``-``: standard input): a capture or report, or
    pasted output read through the importers on the way (what was read is said on stderr);
    errors say what to do next."""
    from pcidoc.collect.load import load_machine

    stdin_hint(path)
    try:
        loaded = load_machine(path)
    except PcidocError as exc:
        raise from_file_hint(path, exc) from None
    if loaded.imported:
        _report_import(loaded.capture)
    return loaded.capture


def _report_import(capture: Capture) -> None:
    """What an import read and warned, on stderr (``pcidoc import`` and ``--from TEXT``)."""
    per_file = set()
    for source in capture.origin.sources:
        what = "; ".join(source.read) or "nothing usable"
        _stderr(f"pcidoc: {source.path}: {what}")
        for warning in source.warnings:
            per_file.add(warning)
            _stderr(f"pcidoc: {source.path}: warning: {warning}")
    for warning in capture.origin.warnings:
        # origin.warnings repeats the per-file ones with the file name in front.
        if not any(warning.endswith(w) for w in per_file):
            _stderr(f"pcidoc: warning: {warning}")


def _silence_stdout() -> None:
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _read_ids(values: list[str]) -> list[str]:
    return [v for v in values if v]


# ---------------------------------------------------------------------------- commands


def cmd_topo(args: argparse.Namespace) -> int:
    """``pcidoc topo``."""
    if args.json:
        from pcidoc.present.json import topology_json

        _emit(topology_json(resolve_machine(args)[0]))
        return ExitCode.OK
    capture, source = resolve_machine(args)
    from pcidoc.doctor.topology_notes import topology_notes
    from pcidoc.present.text import make_console, render_topology

    notes = topology_notes(capture)
    _emit(lambda: render_topology(capture, make_console(), source=source, notes=notes))
    return ExitCode.OK


def cmd_nccl_topo(args: argparse.Namespace) -> int:
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
        _stderr(f"pcidoc: note: {note}")
    if args.output == "-":
        _emit(text)
        return ExitCode.OK
    from pcidoc.fileio import write_output

    _wrote("topology file", write_output(args.output, text), f"{len(capture.gpus)} GPU(s)")
    return ExitCode.OK


def cmd_check(args: argparse.Namespace) -> int:
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

        measure(capture, mode=args.probes, force=args.force, progress=_stderr, python=args.python)
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
        _wrote("report", _write_report(report, output, redact=args.redact))
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
        _emit(report_json_bytes(shown))
    else:
        from pcidoc.present.text import make_console, render_report

        _emit(lambda: render_report(report, make_console(), verbose=args.verbose))
    return doctor.exit_code_for(report)


_REPORT_SUFFIXES = (".json", ".md", ".html", ".htm", ".prom")


def _validate_report_path(output: str) -> None:
    suffix = os.path.splitext(output)[1].lower()
    if output == "-":
        raise PcidocError(
            "-o -: a report file needs a name whose extension gives the format (.json, .md, "
            ".html or .prom); for the report on standard output use --json (JSON) or no option "
            "(text)"
        )
    from pcidoc.fileio import check_output, is_stream

    if is_stream(output) and suffix not in _REPORT_SUFFIXES:
        return  # /dev/stdout, /dev/stderr, /dev/fd/N: the JSON report (see _write_report)
    if suffix not in _REPORT_SUFFIXES:
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
    if os.path.splitext(output)[1].lower() not in _REPORT_SUFFIXES:
        # A stream (/dev/stdout, /dev/fd/3) has no extension: the report goes there as JSON.
        from pcidoc.present.json import report_json

        return write_output(output, report_json(report))
    return write_output(output, render_report_file(report, output))


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


def cmd_capture(args: argparse.Namespace) -> int:
    """``pcidoc capture``."""
    from pcidoc.collect.capture import capture_text, utc_now
    from pcidoc.collect.live import collect_live
    from pcidoc.fileio import write_output

    _stderr("pcidoc: collecting facts of this machine...")
    capture = collect_live()
    if args.probes != "none":
        from pcidoc.probes.session import measure

        measure(capture, mode=args.probes, force=args.force, progress=_stderr, python=args.python)
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
        _emit(text)
        return ExitCode.OK
    result = write_output(output, text)
    gpus = len(capture.gpus)
    reason = capture.unavailable.get("gpus")
    detail = f" (no GPUs: {reason})" if not gpus and reason else ""
    _wrote("capture", result, f"{gpus} GPU(s), {len(capture.nics)} NIC(s){detail}")
    return ExitCode.OK


def cmd_import(args: argparse.Namespace) -> int:
    """``pcidoc import``."""
    from pcidoc.collect.capture import capture_text
    from pcidoc.collect.importers import import_paths
    from pcidoc.fileio import write_output

    result = import_paths(args.files)
    capture = result.capture
    _report_import(capture)
    if args.redact:
        from pcidoc.collect.capture import redact_capture

        capture = redact_capture(capture)
    text = capture_text(capture)
    what = f"{len(capture.gpus)} GPU(s), {len(capture.nics)} NIC(s)"
    if args.output and args.output != "-":
        written = write_output(args.output, text)
        _wrote("capture", written, what)
    elif args.output is None and _isatty(sys.stdout):
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
        _emit(text)
    return ExitCode.OK


def cmd_probe(args: argparse.Namespace) -> int:
    """``pcidoc probe NAME``; without a name, the list of probes (on stdout, exit 0: listing
    is what ``pcidoc probe`` alone asks for, as ``pcidoc samples`` lists the samples)."""
    if args.name is None:
        width = max(map(len, PROBE_NAMES))
        lines = [f"  {name:<{width}}  {PROBE_SUMMARIES[name]}" for name in PROBE_NAMES]
        _emit("The probes (run one: pcidoc probe NAME [options]):\n" + "\n".join(lines) + "\n")
        return ExitCode.OK
    if args.name == "fabric":
        from pcidoc.probes.fabric import fabric_command

        return fabric_command(args, progress=_stderr)
    from pcidoc.probes.session import probe_command

    return probe_command(args, progress=_stderr)


def cmd_samples(args: argparse.Namespace) -> int:
    """``pcidoc samples``."""
    from pcidoc.samples import default_demo, list_samples

    samples = list_samples()
    if args.json:
        import json

        _emit(json.dumps([s.model_dump() for s in samples], indent=2) + "\n")
        return ExitCode.OK
    default = default_demo()
    width = max(len(s.name) for s in samples)
    for sample in samples:
        mark = "*" if sample.name == default else " "
        sys.stdout.write(f"{mark} {sample.name:<{width}}  {sample.title}\n")
    sys.stdout.write("\n* = default for `pcidoc --demo`. Open one with `pcidoc --demo NAME`.\n")
    return ExitCode.OK


def cmd_schema(args: argparse.Namespace) -> int:
    """``pcidoc schema capture|report|fleet``."""
    import json

    from pcidoc.model.capture import Capture
    from pcidoc.model.report import Report

    model = Capture if args.kind == "capture" else Report
    if args.kind == "fleet":
        from pcidoc.model.fleet import FleetReport

        model = FleetReport  # type: ignore[assignment]
    _emit(json.dumps(model.model_json_schema(by_alias=True), indent=2) + "\n")
    return ExitCode.OK


def cmd_tui(args: argparse.Namespace) -> int:
    """Bare ``pcidoc``: the TUI."""
    if not args.interval >= 0.2:  # also rejects nan
        raise PcidocError("--interval must be at least 0.2 seconds")
    fleet = getattr(args, "fleet", None)
    if fleet and not os.path.isdir(fleet):
        raise PcidocError(f"--fleet {fleet}: not a folder")
    if getattr(args, "from_file", None) == "-":
        raise PcidocError(
            "--from -: the TUI reads its keys from the terminal, so it cannot read the capture "
            "from standard input; save it to a file and use --from FILE, or use "
            "`pcidoc check --from -` / `pcidoc topo --from -`"
        )
    refusal = no_terminal_reason()
    if refusal is not None:
        raise PcidocError(refusal)
    if fleet:
        from pcidoc.fleet.commands import run_fleet_tui

        return run_fleet_tui(args)
    if getattr(args, "explain", None):
        from pcidoc.explain.command import run_explain_tui

        return run_explain_tui(args.explain)
    from pcidoc.tui import TuiCrashed, run_tui

    from_file = getattr(args, "from_file", None)
    try:
        return run_tui(
            from_file=from_file,
            demo=getattr(args, "demo", None),
            interval=args.interval,
            debug=bool(getattr(args, "debug", False)),
        )
    except TuiCrashed:
        raise
    except PcidocError as exc:
        if from_file:  # loading the file failed, before the app started
            raise from_file_hint(from_file, exc) from None
        raise


def no_terminal_reason() -> str | None:
    """Why the TUI cannot start here (stdin or stdout is not a terminal), or ``None``.

    Without a terminal the TUI would write escape codes into a file or pipe and wait forever
    for keys (``pcidoc --demo > out.txt``, ``ssh host pcidoc`` without ``-t``, cron, CI).
    """
    missing = [
        name
        for name, stream in (("stdin", sys.stdin), ("stdout", sys.stdout))
        if stream is None or not _isatty(stream)
    ]
    if not missing:
        return None
    return (
        f"the TUI needs a terminal but {' and '.join(missing)} "
        f"{'is' if len(missing) == 1 else 'are'} not one; for text output use "
        "`pcidoc check` (diagnosis) or `pcidoc topo` (topology), add --demo/--from as before; "
        "over ssh use `ssh -t`"
    )


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):
        return False


_WRITE_ERRORS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EIO, errno.EDQUOT})
"""ENOSPC, EFBIG, EIO, EDQUOT: the output could not be written (a full disk behind a
redirection); reported as such rather than as an internal error."""


class _StdoutFailed(Exception):
    """stdout could not take the data (disk full behind a redirection, I/O error)."""


def _flush_stdout() -> None:
    """Flush now, so that a failed write is reported with exit 3 instead of at exit."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise _StdoutFailed(exc.strerror or str(exc)) from None


def _explain_command(args: argparse.Namespace) -> int:
    """``pcidoc explain`` lives in :mod:`pcidoc.explain.command`."""
    from pcidoc.explain.command import cmd_explain

    return cmd_explain(args, _emit)


def _fleet_command(args: argparse.Namespace) -> int:
    """``pcidoc fleet|diff|watch`` live in :mod:`pcidoc.fleet.commands`."""
    from pcidoc.fleet.commands import run_command

    return run_command(args, progress=_stderr)


COMMANDS = {
    "check": cmd_check,
    "topo": cmd_topo,
    "capture": cmd_capture,
    "import": cmd_import,
    "probe": cmd_probe,
    "nccl-topo": cmd_nccl_topo,
    "samples": cmd_samples,
    "schema": cmd_schema,
    "fleet": _fleet_command,
    "diff": _fleet_command,
    "watch": _fleet_command,
    "explain": _explain_command,
}


_collection_deferred = False
_LOADS_A_MACHINE_FIRST = frozenset({"check", "topo", "nccl-topo"})
"""Commands whose start-up ends when the machine is loaded (:func:`resolve_machine`)."""


def _start_up_done() -> None:
    """The end of start-up in the ``pcidoc`` command: modules, parser and the machine are
    loaded. What is alive now lives until exit, so the garbage collector stops looking at it
    (``gc.freeze``) and runs as usual from here on. A no-op unless :func:`run` deferred it."""
    global _collection_deferred
    if _collection_deferred:
        _collection_deferred = False
        import gc

        gc.freeze()
        gc.enable()


def run() -> NoReturn:
    """The ``pcidoc`` command (console script, ``python -m pcidoc``): :func:`main`, then exit.

    Two things only a process of pcidoc's own may do, so they are here and never in
    :func:`main`, which tests and other programs call in their own long-lived processes:

    * the garbage collector waits until start-up is done (:func:`_start_up_done`: after the
      machine is loaded for ``check``, ``topo`` and ``nccl-topo``, before any other command
      starts): start-up allocates modules, classes and the capture, all alive until exit, and
      the collections it triggered walked them again and again (~4 ms of ``check --json`` on
      72 GPUs) to find nothing to free;
    * before the interpreter's teardown the collector is told to leave every object alone
      (``gc.freeze``): its final collection at exit would walk the whole capture and report,
      about 7 ms on a 72-GPU machine, to free what the end of the process frees anyway.
      atexit handlers, flushing and module teardown are untouched.
    """
    global _collection_deferred
    import gc

    gc.disable()
    _collection_deferred = True
    try:
        code = main()
    finally:
        _start_up_done()  # whatever happened, never exit with the collector switched off
    import gc

    gc.freeze()
    raise SystemExit(code)


def main(argv: list[str] | None = None) -> int:
    """Run pcidoc; returns the exit code."""
    # pcidoc's models need no pydantic plugin, and looking for plugins reads the entry points
    # of every installed distribution (7-11 ms in an environment with torch) the first time a
    # validator is built. An explicit setting of the user's is kept.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(argv[0] if argv and argv[0] in SUBCOMMAND_NAMES else None)
    args = parser.parse_args(argv)
    debug = bool(getattr(args, "debug", False)) or os.environ.get("PCIDOC_DEBUG") == "1"
    handler = COMMANDS.get(args.command or "", cmd_tui)
    if args.command not in _LOADS_A_MACHINE_FIRST:
        _start_up_done()
    if not _stdout_is_utf8() and hasattr(sys.stdout, "reconfigure"):
        # JSON is escaped to ASCII by _emit, so no data is lost there.
        _readable_when_not_utf8()
    try:
        code = int(handler(args))
        _flush_stdout()
        return code
    except PcidocError as exc:
        if debug:
            raise
        _stderr(f"pcidoc: {exc.message}")
        return int(exc.exit_code)
    except KeyboardInterrupt as exc:
        # SIGTERM/SIGHUP during a probe arrive as ProbeSignalled: exit 143 / 129.
        name = getattr(exc, "signal_name", None)
        _stderr(f"pcidoc: interrupted by {name}" if name else "pcidoc: interrupted")
        return int(getattr(exc, "exit_code", ExitCode.INTERRUPTED))
    except BrokenPipeError:
        # The reader of stdout went away; not an error of ours.
        _silence_stdout()
        return int(ExitCode.OK)
    except OSError as exc:
        if exc.errno not in _WRITE_ERRORS or debug:
            return _internal_error(exc, debug)
        _silence_stdout()
        _stderr(f"pcidoc: cannot write the output ({exc.strerror or exc})")
        return int(ExitCode.BAD_INPUT)
    except _StdoutFailed as exc:
        _silence_stdout()
        _stderr(f"pcidoc: cannot write to standard output ({exc})")
        return int(ExitCode.BAD_INPUT)
    except Exception as exc:
        return _internal_error(exc, debug)


def _internal_error(exc: BaseException, debug: bool) -> int:
    """One line for a bug of ours (the traceback with ``--debug``); exit 3."""
    if debug:
        raise exc
    _stderr(
        f"pcidoc: internal error: {exc.__class__.__name__}: {exc} "
        "(run with --debug for the traceback; please report it)"
    )
    return int(ExitCode.BAD_INPUT)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

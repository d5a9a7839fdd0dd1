"""The ``pcidoc`` command line (DESIGN.md §4).

Every subcommand is one row of :data:`COMMANDS` and one module of this package,
``pcidoc.cli.<module>``, with ``add_arguments(parser)`` and ``run(args) -> exit code``. The
parsers, the subcommand list of ``--help`` and the dispatch are derived from the table; tests
check the table against the parser and the docs (docs/extending.md: adding a command). Bare
``pcidoc`` (the TUI) is :mod:`pcidoc.cli.tui`, its options the top-level parser's.

Imports are deferred to the command that needs them so that headless commands stay fast and
never load Textual or torch: ``main`` imports the module of the command named on the line only.
stdout carries data only when ``--json`` is given; messages and progress go to stderr. Errors
are one line and exit 3 (``--debug`` shows the traceback).
"""

from __future__ import annotations

import os
import sys

from pcidoc import __version__
from pcidoc._record import record
from pcidoc.errors import ExitCode, PcidocError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from types import ModuleType
    from typing import NoReturn


@record(frozen=True)
class Command:
    """One subcommand: what ``--help`` says of it and the module that implements it."""

    name: str
    """What follows ``pcidoc`` on the line."""
    module: str
    """``pcidoc.cli.<module>``: ``add_arguments(parser)`` and ``run(args) -> int``."""
    help: str
    """Its line in ``pcidoc --help``."""
    description: str
    """The first paragraph of ``pcidoc NAME --help``."""
    debug: bool = True
    """Accepts ``--debug`` after the command too."""
    loads_machine: bool = False
    """Start-up ends when the machine is loaded (:func:`start_up_done`), not before the
    command starts."""


COMMANDS: tuple[Command, ...] = (
    Command(
        "check",
        "check",
        "diagnose the machine and exit with 0/1/2 (ok/warn/fail)",
        "Run the doctor's checks and print the findings, worst first.",
        loads_machine=True,
    ),
    Command(
        "nccl-topo",
        "nccl_topo",
        "write an NCCL topology file (NCCL_TOPO_FILE) from a capture",
        "Write an NCCL topology XML from this machine or a capture of it, so that a VM of the "
        "same machine can set NCCL_TOPO_FILE. See docs/import.md.",
        loads_machine=True,
    ),
    Command(
        "topo",
        "topo",
        "show the topology matrix with legend and notable facts",
        "Show the GPU/NIC topology matrix, NUMA/CPU affinity and notable facts.",
        loads_machine=True,
    ),
    Command(
        "capture",
        "capture",
        "record this machine into a capture file",
        "Record this machine's facts (and optionally measurements) into a pcidoc.capture/1 file "
        "that pcidoc can read anywhere with --from.",
    ),
    Command(
        "import",
        "import_",
        "build a capture from pasted nvidia-smi / benchmark outputs",
        "Build a capture of ONE machine from text outputs people paste into issues. Several "
        "files merge into one capture.",
    ),
    Command(
        "probe",
        "probe",
        "run one measurement probe and print its JSON",
        "Run one probe in a child process and print the measurement JSON (progress on stderr).",
    ),
    Command(
        "fleet",
        "fleet",
        "diagnose many machines' captures: outliers, fleet-wide findings, exclude list",
        "Run the doctor on every capture/report (files or folders of them), group nodes by "
        "hardware signature and find the odd ones. Exit code: worst node verdict (0/1/2); 3 "
        "when an input was unreadable (it is named and skipped).",
    ),
    Command(
        "diff",
        "diff",
        "what changed between two captures (or reports)",
        "Compare two captures of one machine (before/after a driver or BIOS change) or two "
        "nodes: facts, measurements beyond their noise, verdicts. Exit code: 0 no change, 1 "
        "changes, 2 something got worse, 3 bad input.",
    ),
    Command(
        "watch",
        "watch",
        "headless loop over live counters and checks; Prometheus file and JSON lines",
        "Collect this machine once, then sample the live counters every --interval seconds, "
        "re-run the live checks, rewrite --prom atomically and print (or append to --jsonl) one "
        "JSON line per change: a link that downtrains, replays that grow, an NVLink that goes "
        "down, a check that changes severity. Ctrl-C exits 130.",
    ),
    Command(
        "explain",
        "explain",
        "explain a failed distributed job: the rank, host, GPU and cause",
        "Read a job's files as they lie (launcher console logs, per-rank logs, NCCL logs, RAS, "
        "flight-recorder dumps, kernel logs and pcidoc captures of each node; folders are "
        "walked) and say which rank stopped, died, slowed or mismatched first, on which host and "
        "GPU, and why. Exit code: 0 nothing found, 1 a warning (a straggler, or a failure no "
        "rank explains), 2 a culprit with a fault, 3 nothing readable.",
    ),
    Command(
        "samples",
        "samples",
        "list the bundled sample machines for --demo",
        "List the bundled sample machines (captures built from real public outputs).",
        debug=False,
    ),
    Command(
        "schema",
        "schema",
        "print the JSON Schema of the capture, report or fleet format",
        "Print the JSON Schema generated from pcidoc's models.",
        debug=False,
    ),
)
"""The subcommands, in ``pcidoc --help`` order: the one table everything else derives from."""

BY_NAME = {command.name: command for command in COMMANDS}
SUBCOMMAND_NAMES = frozenset(BY_NAME)

TUI_MODULE = "tui"
"""The module of bare ``pcidoc`` (no command): the TUI."""


def command_module(module: str) -> ModuleType:
    """``pcidoc.cli.<module>``, imported on first use (``main`` imports one command's only)."""
    name = f"{__name__}.{module}"
    __import__(name)
    return sys.modules[name]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of ``pcidoc`` and all its subcommands.

    Args:
        command: Build only this subcommand's parser (``main`` passes the command named first
            on the line: what follows it is that parser's to read, so the result is the same,
            and a dozen parsers are not built for nothing). ``None``: all of them.
    """
    from pcidoc.cli.options import HIDDEN_DEBUG, Parser, add_top_options

    parser = Parser(
        prog="pcidoc",
        description="A doctor for GPU interconnects. Without a command, opens the TUI on this "
        "machine (or on --demo / --from).",
        epilog="Exit codes: 0 ok, 1 warnings, 2 failures, 3 bad input or internal error, "
        "130 interrupted. Docs: docs/usage.md",
    )
    parser.add_argument("--version", action="version", version=f"pcidoc {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    add_top_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for row in COMMANDS:
        if command is None or command == row.name:
            one = sub.add_parser(row.name, help=row.help, description=row.description)
            command_module(row.module).add_arguments(one)
            if row.debug:
                one.add_argument("--debug", **HIDDEN_DEBUG)
    return parser


_collection_deferred = False


def start_up_done() -> None:
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

    Three things only a process of pcidoc's own may do, so they are here and never in
    :func:`main`, which tests and other programs call in their own long-lived processes:

    * the garbage collector waits until start-up is done (:func:`start_up_done`: after the
      machine is loaded for ``check``, ``topo`` and ``nccl-topo``, before any other command
      starts): start-up allocates modules, classes and the capture, all alive until exit, and
      the collections it triggered walked them again and again (~4 ms of ``check --json`` on
      72 GPUs) to find nothing to free;
    * before the interpreter's teardown the collector is told to leave every object alone
      (``gc.freeze``): its final collection at exit would walk the whole capture and report,
      about 7 ms on a 72-GPU machine, to free what the end of the process frees anyway;
    * the process ends without the interpreter's teardown (:func:`_end_without_teardown`):
      clearing ~200 modules, their classes, validators and caches cost ~4.7 ms of CPU of
      every command (``check --json`` on 72 GPUs, 21 paired runs) and frees only memory.
      Every atexit handler still runs, and standard output and error are flushed first.
    """
    global _collection_deferred, _exit_status
    import atexit
    import gc

    handlers = getattr(atexit, "_ncallbacks", None)  # CPython's count of atexit handlers
    if handlers is not None and handlers() == 0:
        atexit.register(_end_without_teardown)
    gc.disable()
    _collection_deferred = True
    try:
        code = main()
    finally:
        start_up_done()  # whatever happened, never exit with the collector switched off
    import gc

    gc.freeze()
    _exit_status = code
    raise SystemExit(code)


_exit_status: int | None = None
"""The code :func:`run` exits with, once :func:`main` returned it."""


def _end_without_teardown() -> None:
    """The last atexit handler: flush standard output and error, then end the process with
    :func:`run`'s exit code, skipping the interpreter's module teardown.

    atexit runs its handlers last registered first, and :func:`run` registers this one first
    (only when no handler was registered before it, such as a coverage tool's started with
    the interpreter, which would otherwise be skipped): every handler a library or pcidoc
    registers while the command runs has run when this one ends the process, after the
    interpreter joined the non-daemon threads. Without a code (:func:`main` raised) or when a
    flush fails, it returns and the interpreter ends as usual, reporting what went wrong.
    """
    if _exit_status is None:
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: the descriptor was closed when Python started
                stream.flush()
    except (OSError, ValueError):
        return
    os._exit(_exit_status)


def main(argv: list[str] | None = None) -> int:
    """Run pcidoc; returns the exit code."""
    # pcidoc's models need no pydantic plugin, and looking for plugins reads the entry points
    # of every installed distribution (7-11 ms in an environment with torch) the first time a
    # validator is built. An explicit setting of the user's is kept.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if sys.stdin is None or sys.stdout is None or sys.stderr is None:
        from pcidoc.cli.output import closed_standard_streams

        closed_standard_streams()
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(argv[0] if argv and argv[0] in SUBCOMMAND_NAMES else None)
    args = _parse(parser, argv)
    debug = bool(getattr(args, "debug", False)) or os.environ.get("PCIDOC_DEBUG") == "1"
    row = BY_NAME.get(args.command or "")
    handler: Callable[[argparse.Namespace], int] = command_module(
        row.module if row else TUI_MODULE
    ).run
    if row is None or not row.loads_machine:
        start_up_done()
    from pcidoc.cli import output

    if not output.stdout_is_utf8() and hasattr(sys.stdout, "reconfigure"):
        # JSON is escaped to ASCII by output.emit, so no data is lost there.
        output.readable_when_not_utf8()
    return _handle(handler, args, debug)


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """The parsed line; ``--help`` or ``--version`` on a closed standard output ends with the
    one line and the exit code any command gives there."""
    from pcidoc.cli.output import StdoutFailed, stdout_failed

    try:
        return parser.parse_args(argv)
    except StdoutFailed as exc:
        raise SystemExit(stdout_failed(exc)) from None


def _handle(
    handler: Callable[[argparse.Namespace], int], args: argparse.Namespace, debug: bool
) -> int:
    """Run a command's handler: its exit code, or one line on stderr and the code of what
    went wrong."""
    from pcidoc.cli.output import (
        WRITE_ERRORS,
        StdoutFailed,
        flush_stdout,
        silence_stdout,
        stderr,
        stdout_failed,
    )

    try:
        code = int(handler(args))
        flush_stdout()
        return code
    except PcidocError as exc:
        if debug:
            raise
        stderr(f"pcidoc: {exc.message}")
        return int(exc.exit_code)
    except KeyboardInterrupt as exc:
        # SIGTERM/SIGHUP during a probe arrive as ProbeSignalled: exit 143 / 129.
        name = getattr(exc, "signal_name", None)
        stderr(f"pcidoc: interrupted by {name}" if name else "pcidoc: interrupted")
        return int(getattr(exc, "exit_code", ExitCode.INTERRUPTED))
    except BrokenPipeError:
        # The reader of stdout went away; not an error of ours.
        silence_stdout()
        return int(ExitCode.OK)
    except OSError as exc:
        if exc.errno not in WRITE_ERRORS or debug:
            return _internal_error(exc, debug)
        silence_stdout()
        stderr(f"pcidoc: cannot write the output ({exc.strerror or exc})")
        return int(ExitCode.BAD_INPUT)
    except StdoutFailed as exc:
        return stdout_failed(exc)
    except Exception as exc:
        return _internal_error(exc, debug)


def _internal_error(exc: BaseException, debug: bool) -> int:
    """One line for a bug of ours (the traceback with ``--debug``); exit 3."""
    if debug:
        raise exc
    from pcidoc.cli.output import stderr

    stderr(
        f"pcidoc: internal error: {exc.__class__.__name__}: {exc} "
        "(run with --debug for the traceback; please report it)"
    )
    return int(ExitCode.BAD_INPUT)

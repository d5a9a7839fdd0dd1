"""The argument parser's pieces that several commands share: the parser class (usage errors
exit 3), its help layout, and the options more than one command takes (``--from``/``--demo``,
``--probes``, ``--python``, the hidden ``--debug``)."""

from __future__ import annotations

import argparse
import os
import sys

from pcidoc.errors import ExitCode

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Any, NoReturn

# `--debug` is accepted after the subcommand too; SUPPRESS keeps the top-level value.
HIDDEN_DEBUG: dict[str, Any] = {
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


class Formatter(argparse.HelpFormatter):
    """argparse's help layout at the terminal's width."""

    def __init__(self, prog: str, **kwargs: Any) -> None:
        kwargs.setdefault("width", _terminal_columns() - 2)
        super().__init__(prog, **kwargs)


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors exit 3, as every other bad input does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", Formatter)
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


def add_top_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``pcidoc`` itself (bare ``pcidoc`` opens the TUI: :mod:`pcidoc.cli.tui`)."""
    add_source_options(parser, top=True)
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


def add_source_options(parser: argparse.ArgumentParser, top: bool = False) -> None:
    """``--from FILE`` | ``--demo [NAME]``: which machine a command reads
    (:func:`pcidoc.cli.machine.resolve_machine`)."""
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


def add_probe_options(parser: argparse.ArgumentParser, default: str) -> None:
    """``--probes``, ``--python`` and ``--force`` of the commands that may measure."""
    parser.add_argument(
        "--probes",
        choices=("none", "quick", "full"),
        default=default,
        help=f"measure with the torch probes on this machine's GPUs (default: {default})",
    )
    add_python_option(parser)
    parser.add_argument(
        "--force",
        action="store_true",
        help="run probes even when other processes are using the GPUs",
    )


def add_python_option(parser: argparse.ArgumentParser) -> None:
    """``--python PATH``: the interpreter that runs the probes."""
    parser.add_argument(
        "--python",
        metavar="PATH",
        help="Python (with torch) that runs the probes (default: $PCIDOC_PYTHON, pcidoc's own "
        "if it has torch, else the active conda/virtual env's or python3 on PATH with torch)",
    )

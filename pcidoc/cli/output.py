"""What the commands write: data on stdout (:func:`emit`), messages on stderr (:func:`stderr`,
:func:`wrote`), and what happens when either cannot take it."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Callable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from pcidoc.fileio import WriteResult

WRITE_ERRORS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EIO, errno.EDQUOT})
"""ENOSPC, EFBIG, EIO, EDQUOT: the output could not be written (a full disk behind a
redirection); reported as such rather than as an internal error."""


class StdoutFailed(Exception):
    """stdout could not take the data (disk full behind a redirection, I/O error)."""


def closed_standard_streams() -> None:
    """Stand in for a standard stream whose descriptor was closed when the process started
    (``pcidoc check 1>&-``: Python sets ``sys.stdout`` to None).

    ``/dev/null`` is put on the free descriptor, so that no file pcidoc opens later takes its
    number (a child process would write into it as its own stdout). Standard input then reads
    as empty and messages on a closed standard error go nowhere; data written to a closed
    standard output fails, so a command that prints reports ``cannot write to standard
    output`` with exit 3, as ``cat`` or ``ls`` do, and one that prints nothing runs as usual.
    """
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None or not _descriptor_free(fd):
            continue
        devnull = os.open(os.devnull, os.O_RDWR)
        if devnull != fd:
            os.dup2(devnull, fd)
            os.close(devnull)
        if fd == 1:
            sys.stdout = _ClosedStdout()
        else:
            stream = open(fd, "r" if fd == 0 else "w", encoding="utf-8", closefd=False)  # noqa: SIM115
            setattr(sys, name, stream)


def _descriptor_free(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


class _ClosedStdout:
    """``sys.stdout`` for a descriptor 1 closed at start: every write fails (reported by the
    command's handler as ``cannot write to standard output``)."""

    encoding = "utf-8"
    errors = "strict"

    def write(self, text: str) -> int:
        raise StdoutFailed("standard output is closed")

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return 1


def stderr(message: str) -> None:
    """One message line on stderr."""
    from pcidoc.sanitize import clean_text

    # Messages quote file names and pasted values: no control sequence reaches the terminal.
    sys.stderr.write(clean_text(message) + "\n")
    sys.stderr.flush()


def stdout_is_utf8() -> bool:
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("_", "-")
    return encoding in ("utf-8", "utf8")


def readable_when_not_utf8() -> None:
    """On a stdout that is not UTF-8, print what it cannot encode as readable ASCII (``8 x
    NVIDIA H800``, ``host<->device``) or ``?``, instead of dying with UnicodeEncodeError."""
    from pcidoc.present.ascii_fallback import register

    with contextlib.suppress(ValueError, OSError, AttributeError):
        sys.stdout.reconfigure(errors=register())  # type: ignore[union-attr]


def emit(data: str | bytes | Callable[[], object]) -> None:
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
            if binary is not None and stdout_is_utf8():
                sys.stdout.flush()  # what the text layer holds goes first
                binary.write(data)
                binary.flush()
                return
            data = data.decode("utf-8")
        if isinstance(data, str):
            text = data
            if not stdout_is_utf8() and not text.isascii():
                text = ascii_json(text)
            sys.stdout.write(text)
        else:
            data()
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
    except OSError as exc:
        raise StdoutFailed(exc.strerror or str(exc)) from None


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


def wrote(what: str, result: WriteResult, detail: str = "") -> None:
    """``pcidoc: wrote FILE: detail``; says when an existing file was replaced."""
    if result.stream:
        return
    verb = "replaced the existing file" if result.replaced else "wrote"
    if "(s)" in detail:
        from pcidoc.model.units import plurals

        detail = plurals(detail)
    stderr(f"pcidoc: {verb} {result.path}{': ' + detail if detail else ''}")


def silence_stdout() -> None:
    """Point stdout at ``/dev/null`` (its reader went away, or it cannot take more)."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def stdout_failed(exc: StdoutFailed) -> int:
    """Say that standard output could not take the data; the exit code for it (3)."""
    from pcidoc.errors import ExitCode

    silence_stdout()
    stderr(f"pcidoc: cannot write to standard output ({exc})")
    return int(ExitCode.BAD_INPUT)


def flush_stdout() -> None:
    """Flush now, so that a failed write is reported with exit 3 instead of at exit."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise StdoutFailed(exc.strerror or str(exc)) from None


def isatty(stream: object) -> bool:
    """Whether a stream is a terminal (a closed or odd stream is not). Callers reach it as
    ``output.isatty`` so that tests can stand in a terminal here, once."""
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):
        return False

"""Exit codes and the user-facing error type of pcidoc (DESIGN.md §4)."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes; a contract for scripts and CI."""

    OK = 0
    """Nothing worse than info."""
    WARN = 1
    """At least one warning, no failure."""
    FAIL = 2
    """At least one failure."""
    BAD_INPUT = 3
    """Bad input, usage error or internal error (message on stderr)."""
    INTERRUPTED = 130
    """Interrupted by Ctrl-C."""


class PcidocError(Exception):
    """An error the user can act on; printed as one line, never as a traceback.

    Args:
        message: One line naming the file/option and the problem.
        exit_code: Exit code the CLI uses for it (3 by default).
    """

    def __init__(self, message: str, exit_code: ExitCode = ExitCode.BAD_INPUT) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code

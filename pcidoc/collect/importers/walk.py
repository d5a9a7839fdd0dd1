"""The one line walker of the importers: a format is a table of line handlers, this walks them.

A format's parser is split in two. *Recognising* lines is a tuple of handlers, tried in order on
each line; *interpreting* values is what a handler does with the line it recognised, into the
parser's own state. The walker owns everything else, once for every format: where a section
ends (a shell command, a run of blank lines, a line no handler claims), blank lines inside a
section, and lines whose values cannot be read (a number of 5,000 digits): such a line is
skipped and counted, the rest of the section is read.

A handler is ``handler(state, line, index) -> bool | None``:

* ``True``: the line was read (the walk goes on),
* ``False``: not this handler's line (the next handler is asked),
* ``None``: the line ends the section (it is not read),
* :data:`LAST`: the line was read and is the section's last.

When no handler claims a line, the section ends before it (``others="end"``, the section
formats) or the line is passed over (``others="skip"``, the whole-text readers, whose lines are
interleaved with anything).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pcidoc.collect.importers.text import Doc

LAST: Any = "last"
"""A handler's answer: the line was read and ends the section."""

Handler = Callable[[Any, str, int], Any]
"""``handler(state, line, index)``: True, False, None or :data:`LAST` (see the module)."""

BAD_VALUES = (ValueError, OverflowError)
"""What reading a value out of range raises (``int`` of 5,000 digits, ``float`` overflow)."""


class Walker:
    """How one format's lines are walked.

    Args:
        blank_lines: How many blank lines in a row a section may hold (0: a blank line ends
            it; None: any number), or ``"read"``: blank lines are offered to the handlers like
            any other line (a format that counts them with other separators).
        resume: After blank lines, whether the section goes on at the next non-blank line
            (``resume(state, index, blank lines before it)``); None: it goes on when
            ``blank_lines`` allows.
        others: What a line no handler claims does: end the section, or be passed over.
        commands: Whether a shell command line ends the section (the section formats) or is
            offered to the handlers like any line.
    """

    __slots__ = ("bad_count", "bad_lines", "blank_lines", "commands", "others", "resume")

    def __init__(
        self,
        *,
        blank_lines: int | Literal["read"] | None = 0,
        resume: Callable[[Any, int, int], bool] | None = None,
        others: Literal["end", "skip"] = "end",
        commands: Literal["end", "read"] = "end",
    ) -> None:
        self.blank_lines = blank_lines
        self.resume = resume
        self.others = others
        self.commands = commands
        self.bad_lines: list[int] = []
        """The first lines skipped because a value in them could not be read (0-based)."""
        self.bad_count = 0
        """How many lines were skipped so."""

    def walk(
        self,
        doc: Doc,
        start: int,
        state: Any,
        handlers: Sequence[Handler],
        stop: int | None = None,
    ) -> int:
        """Offer the lines from ``start`` to the handlers; the index of the first line not read.

        ``stop`` is an index the walk does not reach (default: the end of the text).
        """
        lines, commands = doc.lines, doc.commands
        end = len(lines) if stop is None else min(stop, len(lines))
        blanks_read = self.blank_lines == "read"
        commands_end = self.commands == "end"
        others_end = self.others == "end"
        offer = self._offer
        index = start
        while index < end:
            line = lines[index]
            if not blanks_read and not line.strip():
                after = self._after_blanks(doc, index, end, state)
                if after is None:
                    return index
                index = after
                continue
            if commands_end and commands[index] is not None:
                return index
            outcome = offer(state, handlers, line, index)
            if outcome is not True:
                if outcome is LAST:
                    return index + 1
                if outcome is None or (others_end and not outcome):
                    return index
            index += 1
        return index

    def _after_blanks(self, doc: Doc, index: int, end: int, state: Any) -> int | None:
        """The next non-blank line when the section goes on past the blanks at ``index``."""
        lines = doc.lines
        after = index
        while after < end and not lines[after].strip():
            after += 1
        if isinstance(self.blank_lines, int) and after - index > self.blank_lines:
            return None
        if after >= end:
            return after
        if self.resume is not None and not self.resume(state, after, after - index):
            return None
        return after

    def _offer(self, state: Any, handlers: Sequence[Handler], line: str, index: int) -> Any:
        try:
            for handler in handlers:
                outcome = handler(state, line, index)
                if outcome is not False:
                    return outcome
        except BAD_VALUES:
            self.bad_count += 1
            if len(self.bad_lines) < 5:
                self.bad_lines.append(index)
            return True
        return False

    def bad_values_note(self, what: str) -> str | None:
        """A warning naming the lines skipped for values out of range, or None."""
        if not self.bad_count:
            return None
        shown = ", ".join(str(i + 1) for i in self.bad_lines)
        more = f" and {self.bad_count - len(self.bad_lines)} more" if self.bad_count > 5 else ""
        return (
            f"{what}: {self.bad_count} line(s) with a value out of range skipped "
            f"(line {shown}{more}); the rest was read"
        )


def each_line(
    doc: Doc, state: Any, *handlers: Handler, start: int = 0, stop: int | None = None
) -> Walker:
    """Offer every non-blank line from ``start`` (to ``stop``) to the handlers, commands
    included and whatever lies between (a whole-text reader's walk); the walker, whose
    :meth:`Walker.bad_values_note` names the lines skipped.

    The same rules as :meth:`Walker.walk` with ``others="skip"``, in a loop of its own: a
    whole-text reader sees every line of a paste, and one call less per line is a tenth of
    its time.
    """
    walker = Walker(blank_lines=None, others="skip", commands="read")
    lines = doc.lines
    end = len(lines) if stop is None else min(stop, len(lines))
    for index in range(start, end):
        line = lines[index]
        if not line.strip():
            continue
        try:
            for handler in handlers:
                if handler(state, line, index) is not False:
                    break
        except BAD_VALUES:
            walker.bad_count += 1
            if len(walker.bad_lines) < 5:
                walker.bad_lines.append(index)
    return walker


def first_line(doc: Doc, found: Callable[[str], object], limit: int | None = None) -> int | None:
    """The index of the first line (of the first ``limit``) for which ``found`` is true.

    Whole-text readers read a bounded number of lines from where their output starts, not
    from the top of the paste: prose, a header or a log before it never hides it.
    """
    lines = doc.lines if limit is None else doc.lines[:limit]
    return next((i for i, line in enumerate(lines) if found(line)), None)

"""Hanging indent for the TUI's fact texts: a wrapped line continues under its value, not at col 0.

Rich wraps a :class:`~rich.text.Text` back to the left edge. The Host pane's ``key   value``
lines, the PCIe path's ``   ↑ port · …`` lines, bullets and findings read as a column only if
their continuation lines start where the value (or the hop, or the text) starts, so each line is
wrapped on its own, after its indent.
"""

from __future__ import annotations

import re

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text

_INDENT = re.compile(r"^(\S[^\n]*?\s{2,}(?=\S)|\s*(?:[↑•·*!✗●-]\s+)?)")
"""A ``key   value`` line hangs under its value; ``   ↑ hop``, ``  • item`` or a finding's
``! check.id summary`` under its text."""

MAX_INDENT = 24


def hang_width(line: str, width: int) -> int:
    """Columns the continuation lines of ``line`` are indented by at ``width`` columns."""
    match = _INDENT.match(line)
    indent = len(match.group(1)) if match else 0
    if indent > MAX_INDENT or indent > width // 2:
        # A long key: a plain leading-space indent, capped.
        indent = min(len(line) - len(line.lstrip(" ")), width // 2)
    return indent


class Hanging:
    """``text`` rendered line by line, each wrapped line continuing under its own indent."""

    def __init__(self, text: Text) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        for line in self.text.split("\n", allow_blank=True):
            indent = hang_width(line.plain, width)
            body = line[indent:]
            wrapped = body.wrap(console, max(1, width - indent), no_wrap=False, overflow="fold")
            if not wrapped:
                yield Segment.line()
            for pos, piece in enumerate(wrapped):
                piece.rstrip()
                head = line[:indent] if pos == 0 else Text(" " * indent)
                yield from (head + piece).render(console)
                yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.text)

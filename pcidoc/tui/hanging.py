"""Hanging indent for the TUI's fact texts: a wrapped line continues under its value, not at col 0.

Rich wraps a :class:`~rich.text.Text` back to the left edge. The Host pane's ``key   value``
lines, the PCIe path's ``   ↑ port · …`` lines, bullets and findings read as a column only if
their continuation lines start where the value (or the hop, or the text) starts, so each line is
wrapped on its own, after its indent.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

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
        self._segments: dict[int, list[Segment]] = {}
        """Rendered segments by width: a pane's text is measured and drawn several times at
        one width (layout, then each paint), and wrapping it is the costly part."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        cached = self._segments.get(width)
        if cached is None:
            cached = self._segments[width] = list(self._render(console, width))
        yield from cached

    def _render(self, console: Console, width: int) -> Iterator[Segment]:
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


class Phrases:
    """Phrases laid out greedily on lines, broken only between phrases (a phrase wider than
    the line still wraps): a note or a legend then never breaks mid-phrase, as in
    ``NODE between host bridges, same`` / ``NUMA node``."""

    def __init__(self, phrases: list[Text], separator: str = " ") -> None:
        self.phrases = [phrase for phrase in phrases if phrase.plain]
        self.separator = separator

    def _lines(self, console: Console, width: int) -> list[Text]:
        lines: list[Text] = []
        line: Text | None = None
        for phrase in self.phrases:
            if line is not None and line.cell_len + len(self.separator) + phrase.cell_len > width:
                lines.append(line)
                line = None
            if line is None:
                line = phrase.copy()
            else:
                line.append(self.separator)
                line.append_text(phrase)
            if line.cell_len > width:
                # A phrase wider than the line wraps; the next one may still fit after its last
                # row (not on a line of its own under a short remainder).
                rows = list(line.wrap(console, width, overflow="fold"))
                for row in rows[:-1]:
                    row.rstrip()
                    lines.append(row)
                line = rows[-1]
                line.rstrip()
        if line is not None:
            lines.append(line)
        return lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self._lines(console, options.max_width):
            yield from line.wrap(console, options.max_width, overflow="fold")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = max((phrase.cell_len for phrase in self.phrases), default=0)
        total = sum(phrase.cell_len for phrase in self.phrases) + len(self.separator) * max(
            0, len(self.phrases) - 1
        )
        return Measurement(min(widest, options.max_width), min(total, options.max_width))

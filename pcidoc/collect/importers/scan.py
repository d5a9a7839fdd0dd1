"""Split one cleaned text into sections and hand each to its format's parser.

The scanner walks the lines once. Shell command lines and ``#`` comments are remembered as the
context of the next section; at every other line each format's detector is asked, in a fixed
order, whether its output starts there. The first that answers parses as many lines as belong
to it and the scan resumes after them. Lines nobody claims (prose, legends, unsupported output)
are skipped.
"""

from __future__ import annotations

from collections.abc import Callable

from pcidoc._record import field, record
from pcidoc.collect.import_formats import SECTION, readers
from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.text import Doc

Detector = Callable[[Doc, int, Context], bool]
Parser = Callable[[Doc, int, Context], "tuple[Fragment, int]"]

PARSERS: tuple[tuple[str, Detector, Parser], ...] = tuple(
    (fmt, *reader.functions())  # type: ignore[misc]
    for fmt, reader in readers(SECTION)
)
"""``(format id, detector, parser)`` of every section format, in the order of the table
(:data:`pcidoc.collect.import_formats.FORMATS`)."""

RAISE_PARSER_ERRORS = False
"""Tests set this to see parser bugs as exceptions instead of warnings."""


@record
class ScanResult:
    """The fragments of one text and what could not be read."""

    fragments: list[Fragment] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unclaimed_lines: int = 0


def scan(doc: Doc, file_name: str) -> ScanResult:
    """Find and parse every supported section of ``doc``.

    Args:
        doc: The cleaned text.
        file_name: Name used in measurement sources.

    Returns:
        The fragments in text order, plus warnings about sections that failed to parse.
    """
    result = ScanResult()
    ctx = Context(file=file_name)
    index = 0
    total = len(doc.lines)
    while index < total:
        line = doc.lines[index]
        if not line.strip():
            index += 1
            continue
        command = doc.commands[index]
        if command is not None:
            ctx.command = command
            ctx.notes = []
            index += 1
            continue
        for fmt, detect, parse in PARSERS:
            try:
                if not detect(doc, index, ctx):
                    continue
                fragment, after = parse(doc, index, ctx)
            except Exception as exc:  # a parser bug must not lose the rest of the import
                if RAISE_PARSER_ERRORS:
                    raise
                result.warnings.append(
                    f"{fmt}: could not read the section at line {index + 1} "
                    f"({exc.__class__.__name__}); skipped it"
                )
                index += 1
                break
            result.fragments.append(fragment)
            if fragment.topology is not None:
                ctx.last_topology = fragment
            ctx.command = None
            ctx.notes = []
            index = max(after, index + 1)
            break
        else:
            if line.lstrip().startswith("#"):
                ctx.notes = [*ctx.notes[-4:], line.strip()]
            result.unclaimed_lines += 1
            index += 1
    return result

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
from pcidoc.collect.importers import (
    amd_topo,
    bandwidth_test,
    lspci,
    nccl_tests,
    nccl_topo_xml,
    nvbandwidth,
    nvlink,
    p2p_status,
    p2p_test,
    query,
    smi_table,
    topo,
)
from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.text import Doc

Detector = Callable[[Doc, int, Context], bool]
Parser = Callable[[Doc, int, Context], "tuple[Fragment, int]"]

PARSERS: tuple[tuple[str, Detector, Parser], ...] = (
    (nccl_topo_xml.FORMAT, nccl_topo_xml.detect, nccl_topo_xml.parse),
    (amd_topo.FORMAT, amd_topo.detect, amd_topo.parse),
    (lspci.FORMAT, lspci.detect, lspci.parse),
    (nccl_tests.FORMAT, nccl_tests.detect, nccl_tests.parse),
    (p2p_test.FORMAT, p2p_test.detect, p2p_test.parse),
    (bandwidth_test.FORMAT, bandwidth_test.detect, bandwidth_test.parse),
    (nvbandwidth.FORMAT, nvbandwidth.detect, nvbandwidth.parse),
    (smi_table.FORMAT, smi_table.detect, smi_table.parse),
    (query.FORMAT, query.detect, query.parse),
    (nvlink.FORMAT, nvlink.detect, nvlink.parse),
    (topo.FORMAT, topo.detect_legend, topo.parse_legend),
    (topo.FORMAT, topo.detect, topo.parse),
    (p2p_status.FORMAT, p2p_status.detect, p2p_status.parse),
)

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

"""Report content shared by the Markdown and HTML presenters, built once and format-neutral.

The builders here decide *what* a report says (which facts, rows, lines and in which order);
:mod:`pcidoc.present.markdown` and :mod:`pcidoc.present.html` decide only *how* it is written.
Every string in these structures is plain, unescaped text: each renderer escapes all of it in
its own syntax, so text from a capture can never inject markup. :attr:`Table.header` holds
column labels written by pcidoc itself (never capture text); Markdown escapes only entities and
pipes in them, so that ``src \\ dst`` keeps its single backslash.
"""

from __future__ import annotations

import re

from pcidoc._record import record
from pcidoc.model.capture import Capture
from pcidoc.model.measurements import Measurements, P2PMatrixMeasurement, WorkloadEvidence
from pcidoc.model.report import Report
from pcidoc.model.units import format_bytes, format_gbps
from pcidoc.present._common import (
    gpu_models,
    numa_text,
    plural,
    source_text,
    split_code,
    versions,
)

_NUMBER = re.compile(r"^[-+]?\d[\d.,]*( ?(%|[kMGT]?i?B(/s)?|GB/s|ms|us|µs))?$")

P2P_MATRIX_MAX_GPUS = 16
"""Measured P2P matrices up to this size are shown in full, bigger ones as min/median/max."""


@record(frozen=True)
class Code:
    """A piece of text shown as code (a file path, a command)."""

    text: str


Span = str | Code
"""Plain text or code, inside a :data:`Text`."""

Text = str | tuple[Span, ...]
"""Plain text, or a run of plain and code spans."""


@record(frozen=True)
class Heading:
    """A section (level 2) or subsection (level 3) title."""

    text: str
    level: int = 3


@record(frozen=True)
class Paragraph:
    """One paragraph; ``muted`` ones are secondary (a measurement's source)."""

    text: Text
    muted: bool = False


@record(frozen=True)
class Item:
    """A list item with optional sub-items (one level deep)."""

    text: Text
    children: tuple[Item, ...] = ()


@record(frozen=True)
class Bullets:
    """A bulleted list, with an optional lead-in line before it (``Probes that ...:``)."""

    items: tuple[Item, ...]
    intro: str | None = None


@record(frozen=True)
class Table:
    """A table; with ``row_labels`` the first cell of each row names the row (shown bold).

    ``numeric`` holds the positions of columns of numbers (right-aligned by the renderers);
    when empty, every column whose cells all start with a digit (or are ``—``) counts.
    """

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    row_labels: bool = False
    numeric: tuple[int, ...] = ()

    def numeric_columns(self) -> set[int]:
        """Positions of the columns to right-align."""
        if self.numeric:
            return set(self.numeric)
        out = set()
        for pos in range(len(self.header)):
            cells = [row[pos] for row in self.rows if pos < len(row)]
            shown = [c for c in cells if c not in ("—", "")]
            if shown and all(_NUMBER.match(c) for c in shown):
                out.add(pos)
        return out


@record(frozen=True)
class Facts:
    """Labelled facts, ``(label, text)`` pairs: the report header's Machine, Source..."""

    items: tuple[tuple[str, str], ...]


Block = Heading | Paragraph | Bullets | Table | Facts
"""Anything a section is made of."""


def _coded(text: str) -> tuple[Span, ...]:
    """``text`` with its `backtick` spans as :class:`Code` (inert in every format)."""
    return tuple(Code(piece) if is_code else piece for piece, is_code in split_code(text))


def num(value: float | None, digits: int = 1) -> str:
    """A measured number with ``digits`` decimals, or ``—`` when there is none."""
    return "—" if value is None else f"{value:.{digits}f}"


# ------------------------------------------------------------------------------ header


def header_facts(report: Report) -> Facts:
    """The report header's facts: machine, source, pcidoc, versions and host.

    Args:
        report: The report.

    Returns:
        The facts in display order; Versions and Host only when something is known.
    """
    capture = report.machine
    items = [
        (
            "Machine",
            gpu_models(capture) + (f", {plural(len(capture.nics), 'NIC')}" if capture.nics else ""),
        ),
        ("Source", source_text(report.source, capture)),
        ("pcidoc", f"{report.pcidoc_version}, report generated {report.generated_at}"),
    ]
    known = versions(capture)
    if known:
        items.append(("Versions", ", ".join(f"{name} {value}" for name, value in known)))
    host = capture.host
    bits = [
        b
        for b in (
            host.cpu_model,
            f"{host.sockets} sockets" if host.sockets else None,
            numa_text(capture),
            f"kernel {host.kernel}" if host.kernel else None,
        )
        if b
    ]
    if bits:
        items.append(("Host", ", ".join(bits)))
    return Facts(tuple(items))


# ------------------------------------------------------------------------------ measurements


def _transfers(m: Measurements) -> list[Block]:
    rows = tuple(
        (
            f"GPU{t.gpu}",
            t.direction.upper() + (" bidir" if t.bidirectional else ""),
            t.memory,
            t.placement or "—",
            format_bytes(t.size_bytes) if t.size_bytes else "—",
            format_gbps(t.bandwidth_gbps),
            t.method or t.source or "—",
        )
        for t in m.transfers
    )
    header = ("GPU", "Direction", "Memory", "Placement", "Size", "Bandwidth", "Method")
    return [Heading("Host ↔ device transfers"), Table(header, rows)]


def _pairs_line(matrix: P2PMatrixMeasurement, digits: int) -> Paragraph | None:
    """Which pairs stand out: the slowest (or slowest to answer) and fastest, and the median.

    Plain order statistics of the measured numbers, named by their pair; judging them is the
    doctor's job (``p2p.fallback``).
    """
    pairs = [
        (v, src, dst)
        for i, (src, row) in enumerate(zip(matrix.gpus, matrix.values, strict=False))
        for j, (dst, v) in enumerate(zip(matrix.gpus, row, strict=False))
        if i != j and v is not None
    ]
    if len(pairs) < 2:
        return None
    pairs.sort()
    median = pairs[len(pairs) // 2][0]
    unit = matrix.unit
    arrow = "↔" if matrix.bidirectional else "→"

    def name(entry: tuple[float, int, int]) -> str:
        return f"GPU{entry[1]}{arrow}GPU{entry[2]} {num(entry[0], digits)} {unit}"

    low, high = pairs[0], pairs[-1]
    if num(low[0], digits) == num(high[0], digits):
        return Paragraph(f"All {len(pairs)} pairs measured {num(low[0], digits)} {unit}.")
    if matrix.kind == "latency":
        worst, best = high, low
        words = ("Slowest to answer", "quickest")
    else:
        worst, best = low, high
        words = ("Slowest pair", "fastest")
    return Paragraph(
        f"{words[0]}: {name(worst)}; {words[1]}: {name(best)}; "
        f"median of the {len(pairs)} pairs {num(median, digits)} {unit}."
    )


def _p2p_matrix(matrix: P2PMatrixMeasurement) -> list[Block]:
    title = (
        f"GPU ↔ GPU {matrix.kind} ({matrix.unit}), P2P {matrix.p2p}"
        + (", bidirectional" if matrix.bidirectional else "")
        + (f", {matrix.access}s" if matrix.access else "")
        + (f", {matrix.method.upper()}" if matrix.method else "")
        + (f", {matrix.latency_side.upper()}-side" if matrix.latency_side else "")
    )
    out: list[Block] = [Heading(title)]
    digits = 1 if matrix.kind == "bandwidth" else 2
    if len(matrix.gpus) <= P2P_MATRIX_MAX_GPUS:
        header = ("src \\ dst", *(f"GPU{g}" for g in matrix.gpus))
        rows = tuple(
            (f"GPU{src}", *(num(v, digits) for v in row))
            for src, row in zip(matrix.gpus, matrix.values, strict=False)
        )
        out.append(Table(header, rows, row_labels=True, numeric=tuple(range(1, len(header)))))
    line = _pairs_line(matrix, digits)
    if line is not None:
        out.append(line)
    return out


def _sources(m: Measurements) -> Paragraph | None:
    """Where the measured matrices came from, each source named once."""
    seen: list[str] = []
    for matrix in m.p2p:
        if matrix.source and matrix.source not in seen:
            seen.append(matrix.source)
    if not seen:
        return None
    noun = "Source" if len(seen) == 1 else "Sources"
    return Paragraph(f"{noun} of the GPU ↔ GPU matrices: {', '.join(seen)}", muted=True)


def _collectives(m: Measurements) -> list[Block]:
    rows = []
    for c in m.collectives:
        peak = c.peak_busbw()
        rows.append(
            (
                c.op,
                c.backend or "—",
                str(c.ranks) if c.ranks else "—",
                format_gbps(peak.busbw_gbps) if peak else "—",
                format_bytes(peak.size_bytes) if peak else "—",
                format_gbps(c.avg_busbw_gbps),
                {True: "yes", False: "NO", None: "—"}[c.correct],
                c.tool or c.source or "—",
            )
        )
    header = ("Op", "Backend", "Ranks", "Peak bus bw", "at size", "Avg bus bw", "Correct", "Tool")
    return [Heading("Collectives"), Table(header, tuple(rows))]


def _workload(w: WorkloadEvidence) -> Item:
    bits = [
        f"{w.steps} steps" if w.steps is not None else None,
        f"step {w.step_time_ms:.1f} ms" if w.step_time_ms is not None else None,
        f"NCCL {w.nccl_time_share * 100:.0f} % of step" if w.nccl_time_share is not None else None,
        f"exposed NCCL {w.nccl_exposed_share * 100:.0f} %"
        if w.nccl_exposed_share is not None
        else None,
    ]
    text = ", ".join(b for b in bits if b) or "no summary"
    copies = tuple(
        Item(f"{c.kind}: {c.count} copies, {format_bytes(c.bytes)}, {c.time_us / 1000:.1f} ms")
        for c in w.memcpy
    )
    return Item(f"Profiler trace {w.source or ''}: {text}", copies)


def measurement_blocks(m: Measurements) -> list[Block]:
    """The Measurements section: transfers, P2P matrices, collectives, scaling, traces, errors.

    Args:
        m: The capture's measurements.

    Returns:
        The section's blocks, starting with its heading; empty when there is nothing to show.
    """
    if m.is_empty() and not m.probe_errors:
        return []
    out: list[Block] = [Heading("Measurements", level=2)]
    if m.transfers:
        out += _transfers(m)
    for matrix in m.p2p:
        out += _p2p_matrix(matrix)
    sources = _sources(m)
    if sources is not None:
        out.append(sources)
    if m.p2p_verification:
        bad = [v for v in m.p2p_verification if not v.ok]
        listed = ", ".join(f"GPU{v.src}→GPU{v.dst}" for v in bad)
        out.append(
            Paragraph(
                f"P2P copies verified: {len(m.p2p_verification) - len(bad)} ok, {len(bad)} wrong"
                + (f": {listed}" if bad else "")
            )
        )
    if m.collectives:
        out += _collectives(m)
    for s in m.scaling:
        rows = tuple(
            (
                str(p.ranks),
                f"{p.throughput_samples_per_s:.1f}",
                "—" if p.efficiency is None else f"{p.efficiency * 100:.0f} %",
                num(p.step_time_ms, 2),
            )
            for p in s.points
        )
        out += [
            Heading("Scaling" + (f" ({s.backend})" if s.backend else "")),
            Table(("Ranks", "Samples/s", "Efficiency", "Step ms"), rows),
        ]
        if s.slowest_edge:
            out.append(Paragraph(f"Slowest link class in use: {s.slowest_edge}"))
    if m.workloads:
        out.append(Bullets(tuple(_workload(w) for w in m.workloads)))
    if m.probe_errors:
        errors = tuple(Item(f"{e.probe} ({e.kind}): {e.message}") for e in m.probe_errors)
        out.append(Bullets(errors, intro="Probes that produced nothing:"))
    return out


# ------------------------------------------------------------------------------ origin


def origin_blocks(capture: Capture) -> list[Block]:
    """The Origin section: how the capture was made, what was imported, what is missing.

    Args:
        capture: The machine.

    Returns:
        The section's heading and its list.
    """
    origin = capture.origin
    items = [Item(f"Kind: {origin.kind}" + (" (redacted)" if origin.redacted else ""))]
    if origin.created_at:
        items.append(Item(f"Captured: {origin.created_at}"))
    if origin.pcidoc_version:
        items.append(Item(f"Captured with pcidoc {origin.pcidoc_version}"))
    if origin.sample:
        items.append(Item(f"Sample: {origin.sample.name}: {origin.sample.title}"))
    items += [Item(f"{name}: {value}") for name, value in origin.tool_versions.items()]
    if origin.note:
        items.append(Item(("Note: ", *_coded(origin.note))))
    for source in origin.sources:
        sub = [Item(f"read: {read}") for read in source.read]
        sub += [Item(f"warning: {warning}") for warning in source.warnings]
        if source.citation:
            sub.append(Item(f"from: {source.citation}"))
        formats = f" ({', '.join(source.formats)})" if source.formats else ""
        items.append(Item(("Imported ", Code(source.path), formats), tuple(sub)))
    items += [Item(f"Warning: {warning}") for warning in origin.warnings]
    items += [
        Item(f"Not collected: {key}: {reason}") for key, reason in capture.unavailable.items()
    ]
    return [Heading("Origin", level=2), Bullets(tuple(items))]


def next_input_blocks(report: Report) -> list[Block]:
    """ "Paste next": the outputs that would let the skipped checks judge (empty when the
    doctor made no suggestion)."""
    if not report.next_inputs:
        return []
    items = tuple(
        Item(
            (
                Code(item.command),
                f": {item.why}; lets {len(item.checks)} more check(s) judge "
                f"({', '.join(item.checks[:6])}{', …' if len(item.checks) > 6 else ''})",
            )
        )
        for item in report.next_inputs
    )
    return [
        Heading("Paste next", level=2),
        Paragraph(
            "Most checks had no input. These outputs would let them judge, most useful first:"
        ),
        Bullets(items),
    ]

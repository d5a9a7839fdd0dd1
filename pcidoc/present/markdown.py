"""Markdown report, for pasting into a GitHub issue or a forum post.

Layout: a title with host and verdict, where the machine came from, versions, a findings table
worst first, one collapsible ``<details>`` block per check (evidence, numbered remediation,
confidence), the topology matrix (compact for big machines), a measurements summary and the
origin of imported data. The output is deterministic: the only time in it is the report's
``generated_at`` (and the capture's own ``created_at`` in the origin section).

Every string that comes from a capture or a check is escaped: ``<``/``>``/``&`` become entities
(so a pasted ``<script>`` stays text), Markdown punctuation is backslash-escaped, and ``|`` is
escaped inside tables. Text in backticks stays code.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

from pcidoc.doctor.topology_notes import topology_notes
from pcidoc.model.capture import Capture
from pcidoc.model.measurements import Measurements
from pcidoc.model.report import CheckResult, Report
from pcidoc.model.units import format_bytes, format_gbps
from pcidoc.present._common import (
    EXIT_MEANINGS,
    MARKS,
    VERDICTS,
    exit_code,
    gpu_models,
    machine_title,
    numa_text,
    source_text,
    split_code,
    summary_line,
    versions,
)
from pcidoc.present._matrix import MatrixView, gpu_set

FULL_MATRIX_MAX_LABELS = 20
"""Beyond this many devices the matrix is shown in its compact one-character form."""

P2P_MATRIX_MAX_GPUS = 16
"""Measured P2P matrices up to this size are shown in full, bigger ones as min/median/max."""

_WHITESPACE = re.compile(r"\s+")
_MD_SPECIAL = re.compile(r"([\\`*\[\]#~|]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")


# ------------------------------------------------------------------------------ escaping


def escape_text(text: str, table: bool = False) -> str:
    """Escape plain text for Markdown: HTML entities and Markdown punctuation.

    Args:
        text: Text from a capture or a check.
        table: Also flatten newlines (table cells must be one line).
    """
    out = html.escape(text, quote=False)
    out = _MD_SPECIAL.sub(r"\\\1", out)
    if table:
        out = _WHITESPACE.sub(" ", out)
    return out


def _code_span(code: str, table: bool) -> str:
    # A code span shows its content literally; only the pipe needs care inside tables, and a
    # backtick inside would end the span.
    code = code.replace("`", "'")
    if table:
        code = _WHITESPACE.sub(" ", code.replace("|", "\\|"))
    return f"`{code}`"


def inline(text: str, table: bool = False) -> str:
    """Escape text, keeping `backtick` spans as code."""
    return "".join(
        _code_span(piece, table) if is_code else escape_text(piece, table)
        for piece, is_code in split_code(text)
    )


def _html_inline(text: str) -> str:
    """Text for inside an HTML element (``<summary>``): entities, backtick spans as <code>."""
    return "".join(
        f"<code>{html.escape(piece)}</code>" if is_code else html.escape(piece)
        for piece, is_code in split_code(text)
    )


def _table(header: list[str], rows: Iterable[list[str]], align: list[str] | None = None) -> str:
    """A GitHub table; cells must already be escaped."""
    align = align or ["---"] * len(header)
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# ------------------------------------------------------------------------------ sections


def _header(report: Report) -> list[str]:
    capture = report.machine
    verdict = VERDICTS.get(report.worst, report.worst.upper())
    lines = [
        f"# pcidoc report: {escape_text(machine_title(capture))} — {verdict}",
        "",
        f"**{escape_text(summary_line(report))}**; exit code {exit_code(report)} "
        f"({EXIT_MEANINGS.get(exit_code(report), '?')}).",
        "",
        f"- **Machine:** {escape_text(gpu_models(capture))}"
        + (f", {len(capture.nics)} NICs" if capture.nics else ""),
        f"- **Source:** {escape_text(source_text(report.source, capture))}",
        f"- **pcidoc:** {escape_text(report.pcidoc_version)}, report generated "
        f"{escape_text(report.generated_at)}",
    ]
    known = versions(capture)
    if known:
        lines.append(
            "- **Versions:** " + ", ".join(f"{name} {escape_text(value)}" for name, value in known)
        )
    host = capture.host
    host_bits = [
        b
        for b in (
            host.cpu_model,
            f"{host.sockets} sockets" if host.sockets else None,
            numa_text(capture),
            f"kernel {host.kernel}" if host.kernel else None,
        )
        if b
    ]
    if host_bits:
        lines.append(f"- **Host:** {escape_text(', '.join(host_bits))}")
    return lines


def _findings(report: Report) -> list[str]:
    if not report.checks:
        return ["## Findings", "", "No checks ran."]
    rows = [
        [
            MARKS[c.severity],
            c.severity,
            f"`{c.id}`",
            inline(c.summary, table=True),
        ]
        for c in report.sorted_checks()
    ]
    return ["## Findings", "", _table(["", "Severity", "Check", "Summary"], rows)]


def _evidence_line(item_text: str) -> str:
    return f"- {escape_text(item_text)}"


def _details(check: CheckResult) -> list[str]:
    opened = " open" if check.severity in ("fail", "error", "warn") else ""
    summary = (
        f"{MARKS[check.severity]} <b>{html.escape(check.id)}</b> ({check.severity}): "
        f"{_html_inline(check.summary)}"
    )
    lines = [f"<details{opened}><summary>{summary}</summary>", ""]
    lines.append(f"**{escape_text(check.title)}**. Confidence: {check.confidence}.")
    if check.evidence:
        lines += ["", "Evidence:", ""]
        lines += [_evidence_line(item.text()) for item in check.evidence]
    if check.remediation:
        lines += ["", "What to do:", ""]
        lines += [f"{n}. {inline(step)}" for n, step in enumerate(check.remediation, 1)]
    if check.needs:
        lines += ["", f"Needs: {inline(check.needs)}"]
    if check.subjects:
        lines += ["", f"Subjects: {escape_text(', '.join(check.subjects))}"]
    if check.docs_url:
        lines += ["", f"Docs: {escape_text(check.docs_url)}"]
    lines += ["", "</details>"]
    return lines


def _topology(capture: Capture) -> list[str]:
    view = MatrixView(capture)
    lines = ["## Topology", ""]
    if not view.labels:
        reason = capture.unavailable.get("topology")
        lines.append(
            "No topology matrix in this capture" + (f": {escape_text(reason)}." if reason else ".")
        )
        return lines
    compact = len(view.labels) > FULL_MATRIX_MAX_LABELS
    if not compact:
        header = ["", *(escape_text(label, True) for label in view.labels)]
        if view.has_affinity:
            header += ["CPU Affinity", "NUMA"]
        rows = []
        for row in view.rows:
            cells = [f"**{escape_text(row.label, True)}**"]
            cells += [escape_text(view.text(c), True) for c in row.cells]
            if view.has_affinity:
                cells += [
                    escape_text(row.cpu_affinity or "", True),
                    escape_text(row.numa or "", True),
                ]
            rows.append(cells)
        lines.append(_table(header, rows))
    else:
        label_width = max(len(label) for label in view.labels)
        lines.append(f"{len(view.labels)} devices: one character per pair (key below).")
        lines += ["", "```text"]
        for number, block in enumerate(view.compact_blocks(120, label_width)):
            if number:
                lines.append("")
            lines += [" " * (label_width + 1) + h for h in view.compact_header(block)]
            for row in view.rows:
                chars = "".join(
                    " " if c is None else view.code(row.cells[c]) for c in block.columns
                )
                lines.append(f"{row.label.ljust(label_width)} {chars}".rstrip())
        lines.append("```")
        groups = view.affinity_groups()
        if view.has_affinity and groups:
            lines += [
                "",
                _table(
                    ["GPUs", "NUMA", "CPU Affinity"],
                    [
                        [gpu_set(m), escape_text(numa, True), escape_text(cpus, True)]
                        for m, numa, cpus in groups
                    ],
                ),
            ]
    lines += ["", "Legend:", ""]
    for entry in view.legend():
        code = f"`{entry.code}` " if compact else ""
        lines.append(f"- {code}**{escape_text(entry.cls)}**: {escape_text(entry.meaning)}")
    if view.nic_names:
        lines += [
            "",
            "NICs: "
            + ", ".join(
                f"{escape_text(label)} = {escape_text(name)}" for label, name in view.nic_names
            ),
        ]
    notes = topology_notes(capture)
    if notes:
        lines += ["", "Notable:", ""]
        lines += [f"- {escape_text(note)}" for note in notes]
    return lines


def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _measurements(measurements: Measurements) -> list[str]:
    if measurements.is_empty() and not measurements.probe_errors:
        return []
    lines = ["## Measurements", ""]
    if measurements.transfers:
        rows = []
        for t in measurements.transfers:
            kind = f"{t.direction.upper()}{' bidir' if t.bidirectional else ''}"
            rows.append(
                [
                    f"GPU{t.gpu}",
                    kind,
                    t.memory,
                    escape_text(t.placement or "—", True),
                    format_bytes(t.size_bytes) if t.size_bytes else "—",
                    format_gbps(t.bandwidth_gbps),
                    escape_text(t.method or t.source or "—", True),
                ]
            )
        lines += [
            "### Host ↔ device transfers",
            "",
            _table(
                ["GPU", "Direction", "Memory", "Placement", "Size", "Bandwidth", "Method"], rows
            ),
            "",
        ]
    for matrix in measurements.p2p:
        title = (
            f"### GPU ↔ GPU {matrix.kind} ({matrix.unit}), P2P {matrix.p2p}"
            + (", bidirectional" if matrix.bidirectional else "")
            + (f", {matrix.access}s" if matrix.access else "")
            + (f", {matrix.method.upper()}" if matrix.method else "")
            + (f", {matrix.latency_side.upper()}-side" if matrix.latency_side else "")
        )
        lines += [title, ""]
        digits = 1 if matrix.kind == "bandwidth" else 2
        if len(matrix.gpus) <= P2P_MATRIX_MAX_GPUS:
            header = ["src \\ dst", *(f"GPU{g}" for g in matrix.gpus)]
            rows = [
                [f"**GPU{src}**", *(_num(v, digits) for v in row)]
                for src, row in zip(matrix.gpus, matrix.values, strict=False)
            ]
            lines += [_table(header, rows), ""]
        else:
            off = sorted(
                v
                for i, row in enumerate(matrix.values)
                for j, v in enumerate(row)
                if i != j and v is not None
            )
            if off:
                mid = off[len(off) // 2]
                lines += [
                    f"{len(matrix.gpus)} GPUs; between different GPUs: min {_num(off[0], digits)}, "
                    f"median {_num(mid, digits)}, max {_num(off[-1], digits)} {matrix.unit}.",
                    "",
                ]
        if matrix.source:
            lines += [f"Source: {escape_text(matrix.source)}", ""]
    if measurements.p2p_verification:
        bad = [v for v in measurements.p2p_verification if not v.ok]
        lines += [
            f"P2P copies verified: {len(measurements.p2p_verification) - len(bad)} ok, "
            f"{len(bad)} wrong"
            + (": " + ", ".join(f"GPU{v.src}→GPU{v.dst}" for v in bad) if bad else ""),
            "",
        ]
    if measurements.collectives:
        rows = []
        for c in measurements.collectives:
            peak = c.peak_busbw()
            rows.append(
                [
                    escape_text(c.op, True),
                    escape_text(c.backend or "—", True),
                    str(c.ranks) if c.ranks else "—",
                    format_gbps(peak.busbw_gbps) if peak else "—",
                    format_bytes(peak.size_bytes) if peak else "—",
                    format_gbps(c.avg_busbw_gbps),
                    {True: "yes", False: "NO", None: "—"}[c.correct],
                    escape_text(c.tool or c.source or "—", True),
                ]
            )
        lines += [
            "### Collectives",
            "",
            _table(
                [
                    "Op",
                    "Backend",
                    "Ranks",
                    "Peak bus bw",
                    "at size",
                    "Avg bus bw",
                    "Correct",
                    "Tool",
                ],
                rows,
            ),
            "",
        ]
    for s in measurements.scaling:
        rows = [
            [
                str(p.ranks),
                f"{p.throughput_samples_per_s:.1f}",
                "—" if p.efficiency is None else f"{p.efficiency * 100:.0f} %",
                _num(p.step_time_ms, 2),
            ]
            for p in s.points
        ]
        lines += [
            "### Scaling" + (f" ({escape_text(s.backend)})" if s.backend else ""),
            "",
            _table(["Ranks", "Samples/s", "Efficiency", "Step ms"], rows),
            "",
        ]
        if s.slowest_edge:
            lines += [f"Slowest link class in use: {escape_text(s.slowest_edge)}", ""]
    for w in measurements.workloads:
        bits = [
            f"{w.steps} steps" if w.steps is not None else None,
            f"step {w.step_time_ms:.1f} ms" if w.step_time_ms is not None else None,
            f"NCCL {w.nccl_time_share * 100:.0f} % of step"
            if w.nccl_time_share is not None
            else None,
            f"exposed NCCL {w.nccl_exposed_share * 100:.0f} %"
            if w.nccl_exposed_share is not None
            else None,
        ]
        text = ", ".join(b for b in bits if b) or "no summary"
        lines += [f"- Profiler trace {escape_text(w.source or '')}: {escape_text(text)}"]
        for m in w.memcpy:
            lines.append(
                f"  - {escape_text(m.kind)}: {m.count} copies, {format_bytes(m.bytes)}, "
                f"{m.time_us / 1000:.1f} ms"
            )
    if measurements.workloads:
        lines.append("")
    if measurements.probe_errors:
        lines += ["Probes that produced nothing:", ""]
        lines += [
            f"- {escape_text(e.probe)} ({e.kind}): {escape_text(e.message)}"
            for e in measurements.probe_errors
        ]
        lines.append("")
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def _origin(capture: Capture) -> list[str]:
    origin = capture.origin
    lines = ["## Origin", "", f"- Kind: {origin.kind}" + (" (redacted)" if origin.redacted else "")]
    if origin.created_at:
        lines.append(f"- Captured: {escape_text(origin.created_at)}")
    if origin.pcidoc_version:
        lines.append(f"- Captured with pcidoc {escape_text(origin.pcidoc_version)}")
    if origin.sample:
        lines.append(
            f"- Sample: {escape_text(origin.sample.name)}: {escape_text(origin.sample.title)}"
        )
    for name, value in origin.tool_versions.items():
        lines.append(f"- {escape_text(name)}: {escape_text(value)}")
    if origin.note:
        lines.append(f"- Note: {escape_text(origin.note)}")
    for source in origin.sources:
        formats = f" ({escape_text(', '.join(source.formats))})" if source.formats else ""
        lines.append(f"- Imported `{source.path.replace('`', chr(39))}`{formats}")
        for read in source.read:
            lines.append(f"  - read: {escape_text(read)}")
        for warning in source.warnings:
            lines.append(f"  - warning: {escape_text(warning)}")
        if source.citation:
            lines.append(f"  - from: {escape_text(source.citation)}")
    for warning in origin.warnings:
        lines.append(f"- Warning: {escape_text(warning)}")
    for key, reason in capture.unavailable.items():
        lines.append(f"- Not collected: {escape_text(key)}: {escape_text(reason)}")
    return lines


def render_markdown(report: Report) -> str:
    """Render a report as GitHub-flavoured Markdown.

    Args:
        report: The report.

    Returns:
        The Markdown text, ending with a newline.
    """
    sections: list[list[str]] = [
        _header(report),
        _findings(report),
    ]
    details: list[str] = ["## Details", ""]
    for check in report.sorted_checks():
        details += [*_details(check), ""]
    if report.checks:
        sections.append(details[:-1])
    sections.append(_topology(report.machine))
    measurements = _measurements(report.machine.measurements)
    if measurements:
        sections.append(measurements)
    sections.append(_origin(report.machine))
    sections.append(
        [
            "---",
            "",
            f"Generated by pcidoc {escape_text(report.pcidoc_version)}. To share a machine "
            "without its host name and serials: `pcidoc capture --redact`.",
        ]
    )
    return "\n\n".join("\n".join(section) for section in sections) + "\n"

"""Markdown report, for pasting into a GitHub issue or a forum post.

Layout: a title with host and verdict, where the machine came from, versions, a findings table
worst first, one collapsible ``<details>`` block per check (evidence, numbered remediation,
confidence), the topology matrix (compact for big machines), a measurements summary and the
origin of imported data. The header facts, measurements and origin are built once in
:mod:`pcidoc.present._sections` (shared with the HTML report); this module only writes them as
Markdown. The output is deterministic: the only time in it is the report's ``generated_at`` (and
the capture's own ``created_at`` in the origin section).

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
from pcidoc.model.report import CheckResult, Report
from pcidoc.present._common import (
    EXIT_MEANINGS,
    MARKS,
    VERDICTS,
    exit_code,
    machine_title,
    split_code,
    summary_line,
)
from pcidoc.present._matrix import MatrixView, gpu_set
from pcidoc.present._sections import (
    Block,
    Code,
    Facts,
    Heading,
    Item,
    Paragraph,
    Table,
    Text,
    header_facts,
    measurement_blocks,
    origin_blocks,
)

FULL_MATRIX_MAX_LABELS = 20
"""Beyond this many devices the matrix is shown in its compact one-character form."""

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


def _label(label: str) -> str:
    """A column label written by pcidoc: entities and pipes only (``src \\ dst`` stays)."""
    return html.escape(label, quote=False).replace("|", "\\|")


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
    return [
        f"# pcidoc report: {escape_text(machine_title(capture))} — {verdict}",
        "",
        f"**{escape_text(summary_line(report))}**; exit code {exit_code(report)} "
        f"({EXIT_MEANINGS.get(exit_code(report), '?')}).",
        "",
        _block(header_facts(report)),
    ]


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


def _text(text: Text, table: bool = False) -> str:
    """Escape plain spans, write code spans as code."""
    if isinstance(text, str):
        return escape_text(text, table)
    return "".join(
        _code_span(span.text, table) if isinstance(span, Code) else escape_text(span, table)
        for span in text
    )


def _item(item: Item, indent: str = "") -> list[str]:
    lines = [f"{indent}- {_text(item.text)}"]
    for child in item.children:
        lines += _item(child, indent + "  ")
    return lines


def _block(block: Block) -> str:
    """One shared content block in Markdown."""
    if isinstance(block, Heading):
        return "#" * block.level + " " + escape_text(block.text)
    if isinstance(block, Paragraph):
        return _text(block.text)
    if isinstance(block, Table):
        rows = (
            [
                f"**{escape_text(cell, True)}**"
                if n == 0 and block.row_labels
                else escape_text(cell, True)
                for n, cell in enumerate(row)
            ]
            for row in block.rows
        )
        return _table([_label(h) for h in block.header], rows)
    if isinstance(block, Facts):
        return "\n".join(f"- **{escape_text(k)}:** {escape_text(v)}" for k, v in block.items)
    lines = [line for item in block.items for line in _item(item)]
    if block.intro:
        lines = [escape_text(block.intro), "", *lines]
    return "\n".join(lines)


def _blocks(blocks: list[Block]) -> str:
    """Blocks as one section, a blank line between two blocks."""
    return "\n\n".join(_block(b) for b in blocks)


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
    for blocks in (measurement_blocks(report.machine.measurements), origin_blocks(report.machine)):
        if blocks:
            sections.append([_blocks(blocks)])
    sections.append(
        [
            "---",
            "",
            f"Generated by pcidoc {escape_text(report.pcidoc_version)}. To share a machine "
            "without its host name and serials: `pcidoc capture --redact`.",
        ]
    )
    return "\n\n".join("\n".join(section) for section in sections) + "\n"

"""Markdown report, for pasting into a GitHub issue or a forum post.

Layout, in the order a reader who did not run pcidoc needs it: a title with host and verdict,
**What to do first** (every failing, erroring and warning finding with its first step), the
machine, a findings table (passed and skipped checks folded into one ``<details>`` line with
their count), one collapsible ``<details>`` block per check (evidence, numbered remediation,
confidence, a link to the published docs), the topology matrix (compact for big machines, with
the devices and pairs named by a finding marked), a measurements summary and the origin of
imported data. The header facts, measurements and origin are built once in
:mod:`pcidoc.present._sections` (shared with the HTML report); this module only writes them as
Markdown. The output is deterministic: the only time in it is the report's ``generated_at`` (and
the capture's own ``created_at`` in the origin section).

Every string that comes from a capture or a check is inert: ``<``/``>``/``&`` become entities
(so a pasted ``<script>`` or ``<img>`` stays text), Markdown punctuation is backslash-escaped
(no link, image or emphasis can be formed), line breaks are flattened (no new block can start),
``scheme://`` and ``www.`` are defanged (GitHub would autolink them), ``|`` is escaped inside
tables, and text inside a fenced block has its control characters written as escapes and sits
in a fence longer than any backtick run it contains. Text in backticks stays code.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

from pcidoc.model.report import CheckResult, Report
from pcidoc.present._common import (
    EXIT_MEANINGS,
    MARKS,
    MAX_FIRST,
    VERDICTS,
    attention,
    docs_link,
    evidence_text,
    exit_code,
    findings_of,
    machine_title,
    plural,
    split_code,
    summary_line,
)
from pcidoc.present._matrix import FindingMarks, MatrixView, finding_marks, gpu_set, printable
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
    next_input_blocks,
    origin_blocks,
)

FULL_MATRIX_MAX_LABELS = 20
"""Beyond this many devices the matrix is shown in its compact one-character form."""


_WHITESPACE = re.compile(r"\s+")
_MD_SPECIAL = re.compile(r"([\\`*\[\]#~|@]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
_AUTOLINK = re.compile(r"(?<=[A-Za-z0-9])(:)(?=//)|(?<![A-Za-z0-9])(www)(\.)", re.IGNORECASE)
_BACKTICK_RUN = re.compile(r"`+")


def _defang(text: str) -> str:
    """Break what GitHub would turn into a link on its own: ``http://``, ``www.``."""
    return _AUTOLINK.sub(
        lambda m: "&#58;" if m.group(1) else m.group(2) + "&#46;",
        text,
    )


def escape_text(text: str, table: bool = False) -> str:
    """Escape plain text for Markdown: entities, punctuation, line breaks and autolinks.

    Args:
        text: Text from a capture or a check.
        table: Also escape ``|`` for a table cell (line breaks are always flattened: a text
            from a capture never starts a new block).
    """
    out = html.escape(printable(_WHITESPACE.sub(" ", text)), quote=False)
    out = _MD_SPECIAL.sub(r"\\\1", out)
    return _defang(out)


def _code_span(code: str, table: bool) -> str:
    # A code span shows its content literally; a backtick inside would end the span, a line
    # break could start a new block (a fence) before the span is even parsed.
    code = printable(_WHITESPACE.sub(" ", code.replace("`", "'")))
    if table:
        code = code.replace("|", "\\|")
    if code.startswith(" ") or code.endswith(" "):
        code = code.strip() or "'"
    return f"`{code}`"


def inline(text: str, table: bool = False) -> str:
    """Escape text, keeping `backtick` spans as code."""
    return "".join(
        _code_span(piece, table) if is_code else escape_text(piece, table)
        for piece, is_code in split_code(text)
    )


def fence(lines: list[str], info: str = "text") -> list[str]:
    """``lines`` in a fenced code block that nothing inside can close.

    Control characters are written as escapes by the caller (:func:`printable`); here the fence
    is made longer than the longest backtick run in the content.
    """
    longest = max((len(run) for line in lines for run in _BACKTICK_RUN.findall(line)), default=0)
    marker = "`" * max(3, longest + 1)
    return [marker + info, *lines, marker]


def _html_inline(text: str) -> str:
    """Text for inside an HTML element (``<summary>``): entities, backtick spans as <code>."""
    return "".join(
        f"<code>{html.escape(piece)}</code>" if is_code else html.escape(piece)
        for piece, is_code in split_code(printable(_WHITESPACE.sub(" ", text)))
    )


def _label(label: str) -> str:
    """A column label written by pcidoc: entities and pipes only (``src \\ dst`` stays)."""
    return html.escape(label, quote=False).replace("|", "\\|")


def _table(header: list[str], rows: Iterable[list[str]], numeric: set[int] | None = None) -> str:
    """A GitHub table; cells must already be escaped; ``numeric`` columns right-aligned."""
    align = ["---:" if n in (numeric or set()) else "---" for n in range(len(header))]
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
    ]


def anchor(check_id: str) -> str:
    """The anchor name of a check's details block."""
    return f"check-{check_id}"


def _check_link(check_id: str) -> str:
    return f"[`{check_id}`](#{anchor(check_id)})"


def _sev(severity: str) -> str:
    return f"{MARKS[severity]} {severity}"


def _first(report: Report) -> list[str]:
    """What to do first: every failing, erroring and warning finding with its first step."""
    lines = ["## What to do first", ""]
    todo = attention(report)
    if not todo:
        infos = sum(1 for c in report.checks if c.severity == "info")
        text = "Nothing to fix: no check failed, erred or warned."
        if infos:
            text += f" {plural(infos, 'note')} for information below."
        return [*lines, text]
    for number, check in enumerate(todo[:MAX_FIRST], 1):
        lines.append(
            f"{number}. **{_sev(check.severity)}** {_check_link(check.id)}: {inline(check.summary)}"
        )
        if check.remediation:
            lines.append(f"   <br>**First step:** {inline(check.remediation[0])}")
    if len(todo) > MAX_FIRST:
        lines += ["", f"… and {plural(len(todo) - MAX_FIRST, 'more finding')} below."]
    return lines


def _finding_rows(checks: list[CheckResult]) -> list[list[str]]:
    return [[_sev(c.severity), _check_link(c.id), inline(c.summary, table=True)] for c in checks]


def _folded_line(checks: list[CheckResult]) -> str:
    passed = sum(1 for c in checks if c.severity == "pass")
    skipped = sum(1 for c in checks if c.severity == "skip")
    parts = []
    if passed:
        parts.append(f"{MARKS['pass']} {passed} passed")
    if skipped:
        parts.append(f"{MARKS['skip']} {skipped} skipped")
    return " · ".join(parts)


_FINDINGS_HEADER = ["Severity", "Check", "Summary"]


def _findings(report: Report) -> list[str]:
    if not report.checks:
        return ["## Findings", "", "No checks ran."]
    checks = report.sorted_checks()
    shown = [c for c in checks if c.severity not in ("pass", "skip")]
    folded = [c for c in checks if c.severity in ("pass", "skip")]
    lines = ["## Findings", ""]
    if shown:
        lines += [_table(_FINDINGS_HEADER, _finding_rows(shown)), ""]
    if folded:
        lines += [
            f"<details><summary>{_folded_line(folded)} (click to show)</summary>",
            "",
            _table(_FINDINGS_HEADER, _finding_rows(folded)),
            "",
            "</details>",
        ]
    return lines[:-1] if lines[-1] == "" else lines


def _details(check: CheckResult) -> list[str]:
    opened = " open" if check.severity in ("fail", "error", "warn") else ""
    summary = (
        f'<a name="{html.escape(anchor(check.id))}"></a>{MARKS[check.severity]} '
        f"<b>{html.escape(check.id)}</b> ({check.severity}): {_html_inline(check.summary)}"
    )
    lines = [f"<details{opened}><summary>{summary}</summary>", ""]
    lines.append(f"**{escape_text(check.title)}**. Confidence: {check.confidence}.")
    findings = findings_of(check)
    if findings:
        lines += ["", f"Findings ({len(findings)}):", ""]
        lines += [f"- {sev}: {inline(text)}" for sev, text in findings]
    if check.evidence:
        lines += ["", "Evidence:", ""]
        lines += [f"- {escape_text(evidence_text(item))}" for item in check.evidence]
    if check.remediation:
        lines += ["", "What to do:", ""]
        lines += [f"{n}. {inline(step)}" for n, step in enumerate(check.remediation, 1)]
    if check.needs:
        lines += ["", f"Needs: {inline(check.needs)}"]
    if check.subjects:
        lines += ["", f"Subjects: {escape_text(', '.join(check.subjects))}"]
    url = docs_link(check.docs_url)
    if url:
        lines += ["", f"Docs: [what `{check.id}` checks and how to fix it]({url})"]
    lines += ["", "</details>"]
    return lines


def _all_details(report: Report) -> list[str]:
    checks = report.sorted_checks()
    lines = ["## Details", ""]
    for check in checks:
        if check.severity not in ("pass", "skip"):
            lines += [*_details(check), ""]
    folded = [c for c in checks if c.severity in ("pass", "skip")]
    if folded:
        lines += [f"<details><summary>Details of {_folded_line(folded)}</summary>", ""]
        for check in folded:
            lines += [*_details(check), ""]
        lines += ["</details>", ""]
    return lines[:-1]


def _marks_lines(marks: FindingMarks) -> list[str]:
    if not marks:
        return []
    lines = ["", "Marked (a mark after the label): named by a failing or warning check:", ""]
    for check_id, (severity, named) in marks.by_check.items():
        shown = ", ".join(escape_text(printable(n)) for n in named[:12])
        if len(named) > 12:
            shown += f" and {len(named) - 12} more"
        lines.append(f"- {MARKS[severity]} {_check_link(check_id)} ({severity}): {shown}")
    return lines


def _full_matrix(view: MatrixView, marks: FindingMarks) -> str:
    header = ["", *(escape_text(label, True) for label in view.labels)]
    if view.has_affinity:
        header += ["CPU Affinity", "NUMA"]
    rows = []
    for row in view.rows:
        severity = marks.device(row.label)
        mark = f" {MARKS[severity]}" if severity else ""
        cells = [f"**{escape_text(row.label, True)}**{mark}"]
        for label, cell in zip(view.labels, row.cells, strict=False):
            pair = marks.pair(row.label, label)
            cells.append(escape_text(view.text(cell), True) + (f" {MARKS[pair]}" if pair else ""))
        if view.has_affinity:
            cells += [
                escape_text(row.cpu_affinity or "", True),
                escape_text(row.numa or "", True),
            ]
        rows.append(cells)
    return _table(header, rows)


MAX_LABEL = 16
"""Longest row label in the compact grid; longer ones (never real) are cut with ``…``."""


def _short(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "…"


def _compact_matrix(view: MatrixView, marks: FindingMarks) -> list[str]:
    labels = [_short(printable(row.label)) for row in view.rows]
    label_width = max(len(label) for label in labels)
    has_marks = any(marks.device(row.label) for row in view.rows)
    pad = 2 if has_marks else 1
    body: list[str] = []
    for number, block in enumerate(view.compact_blocks(120, label_width + pad - 1)):
        if number:
            body.append("")
        body += [" " * (label_width + pad) + h for h in view.compact_header(block)]
        for row, label in zip(view.rows, labels, strict=False):
            chars = "".join(" " if c is None else view.code(row.cells[c]) for c in block.columns)
            severity = marks.device(row.label)
            mark = (MARKS[severity] if severity else " ") if has_marks else ""
            body.append(f"{label.ljust(label_width)}{mark} {chars}".rstrip())
    return [
        f"{len(view.labels)} devices: one character per pair (key below).",
        "",
        *fence(body),
    ]


def _topology(report: Report) -> list[str]:
    capture = report.machine
    view = MatrixView(capture)
    lines = ["## Topology", ""]
    if not view.labels:
        reason = capture.unavailable.get("topology")
        lines.append(
            "No topology matrix in this capture" + (f": {escape_text(reason)}." if reason else ".")
        )
        return lines
    marks = finding_marks(report, view.labels)
    compact = len(view.labels) > FULL_MATRIX_MAX_LABELS
    if compact:
        lines += _compact_matrix(view, marks)
    else:
        lines.append(_full_matrix(view, marks))
    lines += ["", "Legend (link classes, nearest first; not verdicts):", ""]
    for entry in view.legend():
        code = f"`{entry.code}` " if compact else ""
        lines.append(f"- {code}**{escape_text(entry.cls)}**: {escape_text(entry.meaning)}")
    lines += _marks_lines(marks)
    groups = view.affinity_groups()
    if compact and view.has_affinity and groups:
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
    if view.nic_names:
        lines += [
            "",
            "NICs: "
            + ", ".join(
                f"{escape_text(label)} = {escape_text(name)}" for label, name in view.nic_names
            ),
        ]
    notes = report.topology_notes
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
        return _table([_label(h) for h in block.header], rows, block.numeric_columns())
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
    sections: list[list[str]] = [_header(report)]
    if report.checks:
        sections.append(_first(report))
    sections.append(["## Machine", "", _block(header_facts(report))])
    sections.append(_findings(report))
    if report.next_inputs:
        sections.append([_blocks(next_input_blocks(report))])
    if report.checks:
        sections.append(_all_details(report))
    sections.append(_topology(report))
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

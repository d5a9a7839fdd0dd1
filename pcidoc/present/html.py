"""A self-contained HTML report: inline CSS, no external assets, readable on a phone and on paper.

Same content as the Markdown report (:mod:`pcidoc.present.markdown`), in the order a reader who
did not run pcidoc needs it: the verdict and **What to do first** (the failing and warning
findings with their first step), the machine, the findings table (passed and skipped checks
folded into one line that expands), a collapsible block per check, the topology matrix,
measurements and origin. The header facts, measurements and origin are built once in
:mod:`pcidoc.present._sections`; this module only writes them as HTML.

Colours mean one thing: red/orange/green (and purple, blue, grey) are verdicts; link classes in
the matrix use their own muted slate scale, darker for nearer paths. Matrices of more than
:data:`FULL_MATRIX_MAX_LABELS` devices are drawn as a compact grid of one-character cells with
sticky row and column labels; devices and pairs named by a failing or warning check are marked.
Print styles keep passing details closed, fit the matrix to the page and avoid breaking a
finding across pages. At phone width the findings table becomes one card per finding and long
tokens wrap.

Every string from the capture or a check is escaped with :func:`html.escape` (attributes
too), so pasted text such as ``<script>`` is shown, never run. The one inline script opens a
collapsed block when a link points into it; the page works without it.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

from pcidoc.model.capture import Capture
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
"""Beyond this many devices the matrix is drawn as the compact one-character grid."""


SEVERITY_COLOURS: dict[str, str] = {
    "fail": "#b3261e",
    "error": "#8e24aa",
    "warn": "#b35900",
    "info": "#0b6aa2",
    "pass": "#1a7f37",
    "skip": "#6e7781",
}
"""Verdict colours (text and badges). Nothing else in the page uses these hues."""

LINK_COLOURS: dict[str, tuple[str, str]] = {
    "nv-hi": ("#8d9dbf", "#0f1624"),
    "nv-mid": ("#a5b2cd", "#0f1624"),
    "nv-lo": ("#bcc6da", "#0f1624"),
    "pix": ("#c8ccd5", "#141922"),
    "pxb": ("#d5d8de", "#141922"),
    "phb": ("#dfe1e5", "#141922"),
    "node": ("#e8e9ec", "#141922"),
    "sys": ("#f3f3f5", "#3a414d"),
}
"""Link-class cell colours ``(background, text)``: one muted slate scale, darker = nearer."""


def _css() -> str:
    sev = "\n".join(
        f".sev-{name} {{ color: {colour}; }} "
        f".verdict.sev-{name} {{ background: {colour}; color: #fff; }}"
        for name, colour in SEVERITY_COLOURS.items()
    )
    marks = "\n".join(
        f".mk-{name} {{ box-shadow: inset 0 0 0 2px {SEVERITY_COLOURS[name]}; }} "
        f"th.mk-{name}, .mark.sev-{name} {{ color: {SEVERITY_COLOURS[name]}; }}"
        for name in ("fail", "error", "warn")
    )
    links = "\n".join(
        f".c-{name} {{ background: {bg}; color: {fg}; }}" for name, (bg, fg) in LINK_COLOURS.items()
    )
    return _CSS.replace("/*SEV*/", sev).replace("/*MARKS*/", marks).replace("/*LINKS*/", links)


def stylesheet() -> str:
    """The report's stylesheet (the fleet report uses it too, so the two pages look alike)."""
    return _css()


def severity_badge(severity: str) -> str:
    """A coloured ``✗ fail`` span, as in the findings table."""
    return _sev(severity)


_CSS = """
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1f24;
  margin: 1.5rem auto; max-width: 72rem; padding: 0 1rem; overflow-wrap: break-word; }
h1 { font-size: 1.5rem; margin: 0 0 .25rem; } h2 { font-size: 1.2rem; margin-top: 1.8rem;
  border-bottom: 1px solid #d0d7de; padding-bottom: .2rem; } h3 { font-size: 1rem; }
code, .mono, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: .9em; }
code { background: #f0f2f4; padding: 0 .25em; border-radius: 3px; overflow-wrap: anywhere; }
a { color: #0b57d0; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { border: 1px solid #d0d7de; padding: .2rem .45rem; text-align: left;
  vertical-align: top; }
th { background: #f6f8fa; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.tablewrap { overflow-x: auto; max-width: 100%; }
.verdict { display: inline-block; padding: .1rem .6rem; border-radius: 1rem; color: #fff;
  font-weight: 600; vertical-align: middle; }
.sev { white-space: nowrap; font-weight: 600; }
/*SEV*/
.verdict.sev-info, .verdict.sev-skip { background: #1a7f37; color: #fff; }
.cid { white-space: nowrap; }
details { border: 1px solid #d0d7de; border-radius: 6px; padding: .35rem .7rem; margin: .4rem 0; }
details > summary { cursor: pointer; }
details[open] > summary { margin-bottom: .4rem; }
details.group { border-style: dashed; } details[open] > summary .hint { display: none; }
.muted { color: #57606a; }
.first { border: 1px solid #d0d7de; border-left: 4px solid #57606a; border-radius: 6px;
  padding: .2rem 1rem .6rem; margin: 1rem 0; }
.first.first-fail { border-left-color: #b3261e; }
.first.first-error { border-left-color: #8e24aa; } .first.first-warn { border-left-color: #b35900; }
.first h2 { border: 0; margin-top: .6rem; color: #1b1f24; }
.first ol { padding-left: 1.3rem; margin: .3rem 0; } .first li { margin: .45rem 0; }
.step { margin-top: .15rem; }
table.findings { width: 100%; }
table.findings td:first-child { width: 5.5em; }
.matrix td, .matrix th { text-align: center; font-family: ui-monospace, SFMono-Regular, Menlo,
  Consolas, monospace; font-size: 12px; padding: .1rem .35rem; }
.matrix th.row { text-align: left; white-space: nowrap; position: sticky; left: 0; z-index: 1; }
.c-self { color: #8c959f; } .c-unknown { color: #6e7781; background: #fff;
  background-image: repeating-linear-gradient(45deg, #fff 0 3px, #eef0f3 3px 6px); }
/*LINKS*/
/*MARKS*/
.gridwrap { overflow: auto; max-height: 80vh; max-width: 100%; border: 1px solid #d0d7de;
  margin: .5rem 0; }
table.grid { border-collapse: separate; border-spacing: 0; margin: 0; }
.grid td, .grid th { border: 0; padding: 0; font: 11px/1.35 ui-monospace, SFMono-Regular, Menlo,
  Consolas, monospace; text-align: center; min-width: 1.05em; }
.grid td.g8, .grid th.g8 { border-left: 1px solid #fff; }
.grid td.gap, .grid th.gap { min-width: .6em; background: #fff; }
.grid thead th { position: sticky; background: #f6f8fa; z-index: 2; vertical-align: bottom; }
.grid thead tr.kind th { top: 0; height: 1.35em; text-align: left; font-weight: 600; }
.grid thead tr.num th { top: 1.35em; line-height: 1.05; padding-bottom: 2px; }
.grid th.row { position: sticky; left: 0; background: #f6f8fa; z-index: 1; text-align: left;
  padding: 0 .4em; white-space: nowrap; }
.grid thead th.corner { left: 0; z-index: 3; }
.legend td { vertical-align: middle; }
.legend td.mono { white-space: nowrap; }
ul.notes li, ul.evidence li { margin: .1rem 0; }
.print-only, .print-only-inline { display: none; }
@media (max-width: 640px) {
  body { margin: .8rem auto; padding: 0 .6rem; }
  table.findings, table.findings tbody, table.findings tr, table.findings td {
    display: block; width: auto; }
  table.findings thead { position: absolute; left: -9999px; }
  table.findings tr { border: 1px solid #d0d7de; border-radius: 6px; margin: .4rem 0;
    padding: .3rem .5rem; }
  table.findings td { border: 0; padding: .05rem 0; }
  table.findings td:first-child { width: auto; display: inline; }
  table.findings td:nth-child(2) { display: inline; margin-left: .5rem; }
  table.facts th, table.facts td { display: block; border: 0; padding: 0 .2rem; }
  table.facts th { background: none; margin-top: .3rem; }
  .matrix td, .matrix th { padding: .1rem .2rem; font-size: 11px; }
}
@media print {
  body { margin: 0; max-width: none; font-size: 10.5px; }
  h2 { break-after: avoid; }
  details.finding, .first li, tr { break-inside: avoid; }
  .tablewrap { overflow: visible; }
  .gridwrap { overflow: visible; max-height: none; border: 0; }
  .grid thead th, .grid th.row, .matrix th.row { position: static; }
  .grid td, .grid th { font-size: min(9px, calc(540px / var(--cols, 60)));
    min-width: 0; width: calc(560px / var(--cols, 60)); }
  .matrix.full td, .matrix.full th { font-size: min(10px, calc(600px / var(--cols, 10)));
    padding: 0 .15em; white-space: nowrap; }
  .print-only { display: block; } .print-only-inline { display: inline; }
  .hint, details.group { display: none; }
  a { color: inherit; text-decoration: none; }
  a.docs::after { content: " (" attr(href) ")"; color: #57606a; font-size: 9px; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""

_SCRIPT = (
    "function pcidocOpen(){var t=location.hash&&document.getElementById("
    "decodeURIComponent(location.hash.slice(1)));"
    "for(var e=t;e;e=e.parentElement){if(e.tagName==='DETAILS')e.open=true;}}"
    "window.addEventListener('hashchange',pcidocOpen);"
    "window.addEventListener('DOMContentLoaded',pcidocOpen);"
)
"""Opens the collapsed blocks around a linked check (folded passes and skips)."""


def esc(text: object) -> str:
    """Escape any value for HTML text or attribute content; control characters become visible
    escapes (``\\x1b``), so that the file stays inert even when printed to a terminal."""
    return html.escape(printable("" if text is None else str(text), keep="\n\t"), quote=True)


def _inline(text: str) -> str:
    """Escaped text with `backtick` spans as ``<code>``."""
    return "".join(
        f"<code>{esc(piece)}</code>" if is_code else esc(piece)
        for piece, is_code in split_code(text)
    )


def _table(
    header: list[str],
    rows: Iterable[list[str]],
    numeric: set[int] | None = None,
    css: str = "",
) -> str:
    """An HTML table; the header is escaped here, cells must already be escaped HTML."""
    numeric = numeric or set()

    def cls(pos: int) -> str:
        return ' class="num"' if pos in numeric else ""

    head = "".join(f"<th{cls(n)}>{esc(h)}</th>" for n, h in enumerate(header))
    body = "".join(
        "<tr>" + "".join(f"<td{cls(n)}>{c}</td>" for n, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    attr = f' class="{css}"' if css else ""
    return (
        f'<div class="tablewrap"><table{attr}><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def _sev(severity: str) -> str:
    return f'<span class="sev sev-{esc(severity)}">{MARKS[severity]} {esc(severity)}</span>'


def anchor(check_id: str) -> str:
    """The HTML id of a check's details block."""
    return f"check-{check_id}"


def _check_link(check: CheckResult) -> str:
    return f'<a href="#{esc(anchor(check.id))}"><code class="cid">{esc(check.id)}</code></a>'


# ------------------------------------------------------------------------------ sections


def _header(report: Report) -> list[str]:
    capture = report.machine
    code = exit_code(report)
    verdict = VERDICTS.get(report.worst, report.worst.upper())
    return [
        f"<h1>pcidoc report: {esc(machine_title(capture))} "
        f'<span class="verdict sev-{esc(report.worst)}">{esc(verdict)}</span></h1>',
        f"<p><b>{esc(summary_line(report))}</b>; exit code {code} "
        f"({esc(EXIT_MEANINGS.get(code, '?'))}).</p>",
    ]


def _first(report: Report) -> list[str]:
    """What to do first: every failing, erroring and warning finding with its first step."""
    todo = attention(report)
    worst = todo[0].severity if todo else "pass"
    out = [f'<section class="first first-{esc(worst)}" id="first">', "<h2>What to do first</h2>"]
    if not todo:
        infos = sum(1 for c in report.checks if c.severity == "info")
        text = "Nothing to fix: no check failed, erred or warned."
        if infos:
            text += f" {plural(infos, 'note')} for information below."
        return [*out, f"<p>{esc(text)}</p>", "</section>"]
    items = []
    for check in todo[:MAX_FIRST]:
        step = ""
        if check.remediation:
            step = f'<div class="step"><b>First step:</b> {_inline(check.remediation[0])}</div>'
        items.append(
            f"<li>{_sev(check.severity)} {_check_link(check)}: {_inline(check.summary)}{step}</li>"
        )
    out.append(f"<ol>{''.join(items)}</ol>")
    if len(todo) > MAX_FIRST:
        rest = len(todo) - MAX_FIRST
        out.append(f'<p class="muted">… and {plural(rest, "more finding")} below.</p>')
    out.append("</section>")
    return out


def _finding_rows(checks: list[CheckResult]) -> list[list[str]]:
    return [[_sev(c.severity), _check_link(c), _inline(c.summary)] for c in checks]


def _folded_line(checks: list[CheckResult]) -> str:
    """``✓ 3 passed · - 9 skipped`` for the line that folds passes and skips."""
    passed = sum(1 for c in checks if c.severity == "pass")
    skipped = sum(1 for c in checks if c.severity == "skip")
    parts = []
    if passed:
        parts.append(f'<span class="sev-pass">{MARKS["pass"]} {passed} passed</span>')
    if skipped:
        parts.append(f'<span class="sev-skip">{MARKS["skip"]} {skipped} skipped</span>')
    return " · ".join(parts)


def _findings(report: Report) -> list[str]:
    out = ["<h2>Findings</h2>"]
    if not report.checks:
        return [*out, "<p>No checks ran.</p>"]
    checks = report.sorted_checks()
    shown = [c for c in checks if c.severity not in ("pass", "skip")]
    folded = [c for c in checks if c.severity in ("pass", "skip")]
    header = ["Severity", "Check", "Summary"]
    if shown:
        out.append(_table(header, _finding_rows(shown), css="findings"))
    if folded:
        rows = _table(header, _finding_rows(folded), css="findings")
        out.append(
            f'<details class="group" id="passed"><summary>{_folded_line(folded)} '
            f'<span class="muted hint">(show)</span></summary>{rows}</details>'
        )
        # Paper cannot open a fold: the passed and skipped checks print as a plain table.
        out.append(f'<div class="print-only"><p>{_folded_line(folded)}</p>{rows}</div>')
    return out


def _details(check: CheckResult) -> str:
    opened = " open" if check.severity in ("fail", "error", "warn") else ""
    parts = [
        f'<details{opened} class="finding" id="{esc(anchor(check.id))}">'
        f'<summary>{_sev(check.severity)} <b class="cid">{esc(check.id)}</b>: '
        f"{_inline(check.summary)}</summary>",
        f'<p><b>{esc(check.title)}</b> <span class="muted">confidence '
        f"{esc(check.confidence)}</span></p>",
    ]
    findings = findings_of(check)
    if findings:
        items = "".join(f"<li>{_sev(sev)} {_inline(text)}</li>" for sev, text in findings)
        parts.append(f'<p>Findings ({len(findings)}):</p><ul class="evidence">{items}</ul>')
    if check.evidence:
        items = "".join(f"<li>{esc(evidence_text(e))}</li>" for e in check.evidence)
        parts.append(f'<p>Evidence:</p><ul class="evidence">{items}</ul>')
    if check.remediation:
        steps = "".join(f"<li>{_inline(step)}</li>" for step in check.remediation)
        parts.append(f"<p>What to do:</p><ol>{steps}</ol>")
    if check.needs:
        parts.append(f"<p>Needs: {_inline(check.needs)}</p>")
    if check.subjects:
        parts.append(f'<p class="muted">Subjects: {esc(", ".join(check.subjects))}</p>')
    url = docs_link(check.docs_url)
    if url:
        parts.append(
            f'<p class="muted">Docs: <a class="docs" href="{esc(url)}">what '
            f"<code>{esc(check.id)}</code> checks and how to fix it</a></p>"
        )
    parts.append("</details>")
    return "\n".join(parts)


def _all_details(report: Report) -> list[str]:
    checks = report.sorted_checks()
    out = ["<h2>Details</h2>"]
    out += [_details(c) for c in checks if c.severity not in ("pass", "skip")]
    folded = [c for c in checks if c.severity in ("pass", "skip")]
    if folded:
        out.append(
            f'<details class="group"><summary>Details of {_folded_line(folded)} '
            '<span class="muted hint">(show)</span></summary>'
        )
        out += [_details(c) for c in folded]
        out.append("</details>")
    return out


# ------------------------------------------------------------------------------ topology


def _label_th(label: str, marks: FindingMarks) -> str:
    severity = marks.device(label)
    if not severity:
        return f'<th class="row">{esc(label)}</th>'
    title = f"{label}: named by {', '.join(marks.checks_naming(label))}"
    return (
        f'<th class="row mk-{severity}" title="{esc(title)}">{esc(label)} '
        f'<span class="mark sev-{severity}">{MARKS[severity]}</span></th>'
    )


def _cell(
    view: MatrixView,
    marks: FindingMarks,
    pair: tuple[str, str],
    cell: str | None,
    shown: str,
    extra: str = "",
) -> str:
    severity = marks.pair(*pair)
    title = f"{pair[0]}–{pair[1]}: {view.text(cell)}"
    if severity:
        title += f" ({severity}: {', '.join(marks.checks_naming(*pair))})"
    css = f"c-{view.style(cell)}{extra}" + (f" mk mk-{severity}" if severity else "")
    return f'<td class="{css}" title="{esc(title)}">{esc(shown)}</td>'


def _full_matrix(view: MatrixView, marks: FindingMarks) -> str:
    affinity = view.has_affinity
    header = "<th></th>" + "".join(f"<th>{esc(label)}</th>" for label in view.labels)
    if affinity:
        header += "<th>CPU Affinity</th><th>NUMA</th>"
    body = []
    for row in view.rows:
        cells = [
            _cell(view, marks, (row.label, label), cell, view.text(cell))
            for label, cell in zip(view.labels, row.cells, strict=False)
        ]
        extra = ""
        if affinity:
            extra = f"<td>{esc(row.cpu_affinity or '')}</td><td>{esc(row.numa or '')}</td>"
        body.append(f"<tr>{_label_th(row.label, marks)}{''.join(cells)}{extra}</tr>")
    cols = len(view.labels) + (3 if affinity else 0) + 1
    return (
        f'<div class="tablewrap"><table class="matrix full" style="--cols: {cols}">'
        f"<thead><tr>{header}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _compact_matrix(view: MatrixView, marks: FindingMarks) -> str:
    """One character per pair, sticky labels, groups of eight, a gap between GPUs and NICs."""
    columns: list[int | None] = []
    starts: set[int] = set()
    previous: str | None = None
    run = 0
    for j, kind in enumerate(view.kinds):
        if previous is not None and kind != previous:
            columns.append(None)
            run = 0
        elif run and run % 8 == 0:
            starts.add(j)
        columns.append(j)
        run += 1
        previous = kind
    kind_row = ['<th class="row corner"></th>']
    span_kind: str | None = None
    span = 0
    for col in [*columns, "end"]:
        kind = None if col is None or col == "end" else view.kinds[col]  # type: ignore[index]
        if col is None or col == "end":
            if span:
                kind_row.append(f'<th colspan="{span}">{esc((span_kind or "").upper())}</th>')
                span = 0
            if col is None:
                kind_row.append('<th class="gap"></th>')
            continue
        span_kind = kind
        span += 1
    num_row = ['<th class="row corner"></th>']
    for col in columns:
        if col is None:
            num_row.append('<th class="gap"></th>')
            continue
        label = view.labels[col]
        digits = "<br>".join(esc(d) for d in str(view.number(col)))
        severity = marks.device(label)
        css = ("g8" if col in starts else "") + (f" mk-{severity}" if severity else "")
        num_row.append(f'<th class="{css.strip()}" title="{esc(label)}">{digits}</th>')
    body = []
    for row in view.rows:
        cells = [_label_th(row.label, marks)]
        for col in columns:
            if col is None:
                cells.append('<td class="gap"></td>')
                continue
            cell = row.cells[col]
            extra = " g8" if col in starts else ""
            cells.append(
                _cell(view, marks, (row.label, view.labels[col]), cell, view.code(cell), extra)
            )
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (
        f'<div class="gridwrap"><table class="grid" style="--cols: {len(columns) + 4}">'
        f'<thead><tr class="kind">{"".join(kind_row)}</tr><tr class="num">{"".join(num_row)}'
        f"</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _marks_note(marks: FindingMarks) -> str:
    if not marks:
        return ""
    parts = []
    for check_id, (severity, named) in marks.by_check.items():
        shown = ", ".join(esc(n.replace("-", "–")) for n in named[:12])
        if len(named) > 12:
            shown += f" and {len(named) - 12} more"
        parts.append(
            f'<span class="mark sev-{severity}">{MARKS[severity]}</span> {_id_link(check_id)} '
            f"({esc(severity)}): {shown}"
        )
    return (
        "<p>Marked in the matrix (outlined cells, labels with a mark): devices and pairs named "
        'by a failing or warning check.</p><ul class="notes">'
        + "".join(f"<li>{p}</li>" for p in parts)
        + "</ul>"
    )


def _id_link(check_id: str) -> str:
    return f'<a href="#{esc(anchor(check_id))}"><code class="cid">{esc(check_id)}</code></a>'


def _topology(report: Report) -> list[str]:
    capture: Capture = report.machine
    view = MatrixView(capture)
    out = ['<h2 id="topology">Topology</h2>']
    if not view.labels:
        reason = capture.unavailable.get("topology")
        return [
            *out,
            f"<p>No topology matrix in this capture{': ' + esc(reason) if reason else ''}.</p>",
        ]
    marks = finding_marks(report, view.labels)
    compact = len(view.labels) > FULL_MATRIX_MAX_LABELS
    if compact:
        out.append(
            f"<p>{len(view.labels)} devices: one character per pair (key below)"
            '<span class="hint">; labels stay in place while the grid scrolls. Hover a cell for '
            'its pair and class</span><span class="print-only-inline">: the row and column '
            "labels name each pair</span>.</p>"
        )
        out.append(_compact_matrix(view, marks))
    else:
        out.append(_full_matrix(view, marks))
    legend = []
    for entry in view.legend():
        code = f"{esc(entry.code)} = " if compact else ""
        legend.append(
            f'<tr><td class="c-{entry.style} mono">{code}{esc(entry.cls)}</td>'
            f"<td>{esc(entry.meaning)}</td></tr>"
        )
    out.append(
        '<table class="legend"><thead><tr><th>Class</th><th>Meaning</th></tr></thead>'
        f"<tbody>{''.join(legend)}</tbody></table>"
    )
    out.append(
        '<p class="muted">Link classes are shaded by distance (darker = nearer); they are not '
        "verdicts: red, orange and green mean fail, warn and pass only.</p>"
    )
    note = _marks_note(marks)
    if note:
        out.append(note)
    if compact and view.has_affinity:
        rows = [[esc(gpu_set(m)), esc(numa), esc(cpus)] for m, numa, cpus in view.affinity_groups()]
        out.append(_table(["GPUs", "NUMA", "CPU Affinity"], rows))
    if view.nic_names:
        names = ", ".join(f"{esc(label)} = {esc(name)}" for label, name in view.nic_names)
        out.append(f"<p>NICs: {names}</p>")
    notes = report.topology_notes
    if notes:
        items = "".join(f"<li>{esc(note)}</li>" for note in notes)
        out.append(f'<p>Notable:</p><ul class="notes">{items}</ul>')
    return out


# ------------------------------------------------------------------------------ blocks


def _text(text: Text) -> str:
    """Escape plain spans, write code spans as ``<code>``."""
    if isinstance(text, str):
        return esc(text)
    return "".join(
        f"<code>{esc(span.text)}</code>" if isinstance(span, Code) else esc(span) for span in text
    )


def _item(item: Item) -> str:
    sub = "".join(_item(child) for child in item.children)
    return f"<li>{_text(item.text)}" + (f"<ul>{sub}</ul>" if sub else "") + "</li>"


def _block(block: Block) -> str:
    """One shared content block as one line of HTML."""
    if isinstance(block, Heading):
        return f"<h{block.level}>{esc(block.text)}</h{block.level}>"
    if isinstance(block, Paragraph):
        muted = ' class="muted"' if block.muted else ""
        return f"<p{muted}>{_text(block.text)}</p>"
    if isinstance(block, Table):
        rows = (
            [
                f"<b>{esc(cell)}</b>" if n == 0 and block.row_labels else esc(cell)
                for n, cell in enumerate(row)
            ]
            for row in block.rows
        )
        return _table(list(block.header), rows, block.numeric_columns())
    if isinstance(block, Facts):
        rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in block.items)
        return f'<table class="facts">{rows}</table>'
    items = "".join(_item(item) for item in block.items)
    intro = f"<p>{esc(block.intro)}</p>" if block.intro else ""
    return f"{intro}<ul>{items}</ul>"


def render_html(report: Report) -> str:
    """Render a report as one self-contained HTML page.

    Args:
        report: The report.

    Returns:
        The HTML document, ending with a newline.
    """
    capture = report.machine
    verdict = VERDICTS.get(report.worst, report.worst.upper())
    title = f"pcidoc report: {machine_title(capture)} ({verdict})"
    body: list[str] = [*_header(report)]
    if report.checks:
        body += _first(report)
    body += ["<h2>Machine</h2>", _block(header_facts(report))]
    body += _findings(report)
    body += [_block(b) for b in next_input_blocks(report)]
    if report.checks:
        body += _all_details(report)
    body += _topology(report)
    body += [_block(b) for b in measurement_blocks(capture.measurements)]
    body += [_block(b) for b in origin_blocks(capture)]
    body.append(
        f'<p class="muted">Generated by pcidoc {esc(report.pcidoc_version)}. To share a machine '
        "without its host name and serials: <code>pcidoc capture --redact</code>.</p>"
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="pcidoc">\n'
        f"<title>{esc(title)}</title>\n<style>{_css()}</style>\n"
        f"<script>{_SCRIPT}</script>\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n"
    )

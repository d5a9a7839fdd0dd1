"""A self-contained HTML report: inline CSS, no external assets, readable when printed.

Same content as the Markdown report (:mod:`pcidoc.present.markdown`): header, findings worst
first, a collapsible block per check, the colour-coded topology matrix, measurements and origin.
The header facts, measurements and origin are built once in :mod:`pcidoc.present._sections`;
this module only writes them as HTML.
Every string from the capture or a check is escaped with :func:`html.escape`, so pasted text
such as ``<script>`` is shown, never run. The only script is a three-line ``beforeprint``
handler that opens every ``<details>`` block so that printouts show all findings.
"""

from __future__ import annotations

import html
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

FULL_MATRIX_MAX_LABELS = 24
"""Beyond this many devices the matrix cells show one-character codes (full class on hover)."""

_CSS = """
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1f24;
  margin: 2rem auto; max-width: 72rem; padding: 0 1rem; }
h1 { font-size: 1.5rem; margin-bottom: .25rem; } h2 { font-size: 1.2rem; margin-top: 2rem;
  border-bottom: 1px solid #d0d7de; padding-bottom: .2rem; } h3 { font-size: 1rem; }
code, .mono, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 12.5px; }
code { background: #f0f2f4; padding: 0 .25em; border-radius: 3px; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { border: 1px solid #d0d7de; padding: .2rem .45rem; text-align: left;
  vertical-align: top; }
th { background: #f6f8fa; }
.verdict { display: inline-block; padding: .1rem .6rem; border-radius: 1rem; color: #fff;
  font-weight: 600; }
.sev { white-space: nowrap; font-weight: 600; }
.sev-fail { color: #b3261e; } .sev-error { color: #8e24aa; } .sev-warn { color: #9a6700; }
.sev-info { color: #0b6aa2; } .sev-pass { color: #1a7f37; } .sev-skip { color: #6e7781; }
.verdict.sev-fail { background: #b3261e; color: #fff; }
.verdict.sev-error { background: #8e24aa; color: #fff; }
.verdict.sev-warn { background: #9a6700; color: #fff; }
.verdict.sev-info, .verdict.sev-pass, .verdict.sev-skip { background: #1a7f37; color: #fff; }
details { border: 1px solid #d0d7de; border-radius: 6px; padding: .35rem .7rem; margin: .4rem 0; }
details > summary { cursor: pointer; }
details[open] > summary { margin-bottom: .4rem; }
.muted { color: #57606a; }
.matrix td, .matrix th { text-align: center; font-family: ui-monospace, SFMono-Regular, Menlo,
  Consolas, monospace; font-size: 12px; padding: .1rem .35rem; }
.matrix th.row { text-align: left; }
.matrix.compact td { padding: 0 .12rem; min-width: .8em; }
.scroll { overflow-x: auto; }
.c-self { color: #8c959f; } .c-unknown { color: #8c959f; background: #f6f8fa; }
.c-nv-hi { background: #1a7f37; color: #fff; font-weight: 600; }
.c-nv-mid { background: #4ac26b; color: #0b2e13; }
.c-nv-lo { background: #aceebb; color: #0b2e13; }
.c-pix { background: #0a7ea4; color: #fff; } .c-pxb { background: #9fe1f5; color: #063b4c; }
.c-phb { background: #f5d90a; color: #3d3400; } .c-node { background: #fb8f44; color: #3b1500; }
.c-sys { background: #d1242f; color: #fff; }
ul.notes li, ul.evidence li { margin: .1rem 0; }
@media print {
  body { margin: 0; max-width: none; font-size: 11px; }
  details { break-inside: avoid; }
  .scroll { overflow: visible; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""

_PRINT_SCRIPT = (
    "window.addEventListener('beforeprint',function(){"
    "document.querySelectorAll('details').forEach(function(d){d.open=true;});});"
)


def esc(text: object) -> str:
    """Escape any value for HTML text or attribute content."""
    return html.escape("" if text is None else str(text), quote=True)


def _inline(text: str) -> str:
    """Escaped text with `backtick` spans as ``<code>``."""
    return "".join(
        f"<code>{esc(piece)}</code>" if is_code else esc(piece)
        for piece, is_code in split_code(text)
    )


def _table(header: list[str], rows: Iterable[list[str]]) -> str:
    """An HTML table; the header is escaped here, cells must already be escaped HTML."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _sev(severity: str) -> str:
    return f'<span class="sev sev-{severity}">{MARKS[severity]} {severity}</span>'


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
        _block(header_facts(report)),
    ]


def _findings(report: Report) -> list[str]:
    out = ["<h2>Findings</h2>"]
    if not report.checks:
        return [*out, "<p>No checks ran.</p>"]
    rows = [
        [_sev(c.severity), f"<code>{esc(c.id)}</code>", _inline(c.summary)]
        for c in report.sorted_checks()
    ]
    out.append(_table(["Severity", "Check", "Summary"], rows))
    return out


def _details(check: CheckResult) -> str:
    opened = " open" if check.severity in ("fail", "error", "warn") else ""
    parts = [
        f'<details{opened} id="check-{esc(check.id)}"><summary>{_sev(check.severity)} '
        f"<b>{esc(check.id)}</b>: {_inline(check.summary)}</summary>",
        f'<p><b>{esc(check.title)}</b> <span class="muted">confidence '
        f"{esc(check.confidence)}</span></p>",
    ]
    if check.evidence:
        items = "".join(f"<li>{esc(e.text())}</li>" for e in check.evidence)
        parts.append(f'<p>Evidence:</p><ul class="evidence">{items}</ul>')
    if check.remediation:
        steps = "".join(f"<li>{_inline(step)}</li>" for step in check.remediation)
        parts.append(f"<p>What to do:</p><ol>{steps}</ol>")
    if check.needs:
        parts.append(f"<p>Needs: {_inline(check.needs)}</p>")
    if check.subjects:
        parts.append(f'<p class="muted">Subjects: {esc(", ".join(check.subjects))}</p>')
    if check.docs_url:
        parts.append(f'<p class="muted">Docs: {esc(check.docs_url)}</p>')
    parts.append("</details>")
    return "\n".join(parts)


def _topology(capture: Capture) -> list[str]:
    view = MatrixView(capture)
    out = ["<h2>Topology</h2>"]
    if not view.labels:
        reason = capture.unavailable.get("topology")
        return [
            *out,
            f"<p>No topology matrix in this capture{': ' + esc(reason) if reason else ''}.</p>",
        ]
    compact = len(view.labels) > FULL_MATRIX_MAX_LABELS
    affinity = view.has_affinity and not compact
    header = "<th></th>" + "".join(f"<th>{esc(label)}</th>" for label in view.labels)
    if affinity:
        header += "<th>CPU Affinity</th><th>NUMA</th>"
    body = []
    for row in view.rows:
        cells = []
        for label, cell in zip(view.labels, row.cells, strict=False):
            shown = view.code(cell) if compact else view.text(cell)
            title = f"{row.label}–{label}: {view.text(cell)}"
            cells.append(f'<td class="c-{view.style(cell)}" title="{esc(title)}">{esc(shown)}</td>')
        extra = ""
        if affinity:
            extra = f"<td>{esc(row.cpu_affinity or '')}</td><td>{esc(row.numa or '')}</td>"
        body.append(f'<tr><th class="row">{esc(row.label)}</th>{"".join(cells)}{extra}</tr>')
    css = "matrix compact" if compact else "matrix"
    out.append(
        f'<div class="scroll"><table class="{css}"><thead><tr>{header}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )
    if compact and view.has_affinity:
        rows = [[esc(gpu_set(m)), esc(numa), esc(cpus)] for m, numa, cpus in view.affinity_groups()]
        out.append(_table(["GPUs", "NUMA", "CPU Affinity"], rows))
    legend = []
    for entry in view.legend():
        code = f"{esc(entry.code)} = " if compact else ""
        legend.append(
            f'<tr><td class="c-{entry.style} mono">{code}{esc(entry.cls)}</td>'
            f"<td>{esc(entry.meaning)}</td></tr>"
        )
    out.append(
        f"<table><thead><tr><th>Class</th><th>Meaning</th></tr></thead>"
        f"<tbody>{''.join(legend)}</tbody></table>"
    )
    if view.nic_names:
        names = ", ".join(f"{esc(label)} = {esc(name)}" for label, name in view.nic_names)
        out.append(f"<p>NICs: {names}</p>")
    notes = topology_notes(capture)
    if notes:
        items = "".join(f"<li>{esc(note)}</li>" for note in notes)
        out.append(f'<p>Notable:</p><ul class="notes">{items}</ul>')
    return out


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
        return _table(list(block.header), rows)
    if isinstance(block, Facts):
        rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in block.items)
        return f"<table>{rows}</table>"
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
    body: list[str] = [*_header(report), *_findings(report)]
    if report.checks:
        body.append("<h2>Details</h2>")
        body += [_details(check) for check in report.sorted_checks()]
    body += _topology(capture)
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
        f"<title>{esc(title)}</title>\n<style>{_CSS}</style>\n"
        f"<script>{_PRINT_SCRIPT}</script>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )

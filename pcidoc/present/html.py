"""A self-contained HTML report: inline CSS, no external assets, readable when printed.

Same content as the Markdown report (:mod:`pcidoc.present.markdown`): header, findings worst
first, a collapsible block per check, the colour-coded topology matrix, measurements and origin.
Every string from the capture or a check is escaped with :func:`html.escape`, so pasted text
such as ``<script>`` is shown, never run. The only script is a three-line ``beforeprint``
handler that opens every ``<details>`` block so that printouts show all findings.
"""

from __future__ import annotations

import html
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

FULL_MATRIX_MAX_LABELS = 24
"""Beyond this many devices the matrix cells show one-character codes (full class on hover)."""

P2P_MATRIX_MAX_GPUS = 16
"""Measured P2P matrices up to this size are shown in full."""

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


def _table(
    header: list[str], rows: Iterable[list[str]], css: str = "", escape_header: bool = True
) -> str:
    """An HTML table; cells must already be escaped HTML."""
    head = "".join(f"<th>{esc(h) if escape_header else h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    cls = f' class="{css}"' if css else ""
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _sev(severity: str) -> str:
    return f'<span class="sev sev-{severity}">{MARKS[severity]} {severity}</span>'


# ------------------------------------------------------------------------------ sections


def _header(report: Report) -> list[str]:
    capture = report.machine
    code = exit_code(report)
    verdict = VERDICTS.get(report.worst, report.worst.upper())
    items = [
        (
            "Machine",
            esc(gpu_models(capture)) + (f", {len(capture.nics)} NICs" if capture.nics else ""),
        ),
        ("Source", esc(source_text(report.source, capture))),
        ("pcidoc", f"{esc(report.pcidoc_version)}, report generated {esc(report.generated_at)}"),
    ]
    known = versions(capture)
    if known:
        items.append(("Versions", ", ".join(f"{esc(n)} {esc(v)}" for n, v in known)))
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
        items.append(("Host", esc(", ".join(bits))))
    rows = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in items)
    return [
        f"<h1>pcidoc report: {esc(machine_title(capture))} "
        f'<span class="verdict sev-{esc(report.worst)}">{esc(verdict)}</span></h1>',
        f"<p><b>{esc(summary_line(report))}</b>; exit code {code} "
        f"({esc(EXIT_MEANINGS.get(code, '?'))}).</p>",
        f"<table>{rows}</table>",
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


def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _measurements(m: Measurements) -> list[str]:
    if m.is_empty() and not m.probe_errors:
        return []
    out = ["<h2>Measurements</h2>"]
    if m.transfers:
        rows = [
            [
                f"GPU{t.gpu}",
                esc(t.direction.upper() + (" bidir" if t.bidirectional else "")),
                esc(t.memory),
                esc(t.placement or "—"),
                esc(format_bytes(t.size_bytes) if t.size_bytes else "—"),
                esc(format_gbps(t.bandwidth_gbps)),
                esc(t.method or t.source or "—"),
            ]
            for t in m.transfers
        ]
        out += [
            "<h3>Host ↔ device transfers</h3>",
            _table(
                ["GPU", "Direction", "Memory", "Placement", "Size", "Bandwidth", "Method"], rows
            ),
        ]
    for matrix in m.p2p:
        title = (
            f"GPU ↔ GPU {matrix.kind} ({matrix.unit}), P2P {matrix.p2p}"
            + (", bidirectional" if matrix.bidirectional else "")
            + (f", {matrix.access}s" if matrix.access else "")
            + (f", {matrix.method.upper()}" if matrix.method else "")
            + (f", {matrix.latency_side.upper()}-side" if matrix.latency_side else "")
        )
        out.append(f"<h3>{esc(title)}</h3>")
        digits = 1 if matrix.kind == "bandwidth" else 2
        if len(matrix.gpus) <= P2P_MATRIX_MAX_GPUS:
            rows = [
                [f"<b>GPU{src}</b>", *(_num(v, digits) for v in row)]
                for src, row in zip(matrix.gpus, matrix.values, strict=False)
            ]
            out.append(_table(["src \\ dst", *(f"GPU{g}" for g in matrix.gpus)], rows))
        else:
            off = sorted(
                v
                for i, r in enumerate(matrix.values)
                for j, v in enumerate(r)
                if i != j and v is not None
            )
            if off:
                out.append(
                    f"<p>{len(matrix.gpus)} GPUs; between different GPUs: min "
                    f"{_num(off[0], digits)}, median {_num(off[len(off) // 2], digits)}, max "
                    f"{_num(off[-1], digits)} {esc(matrix.unit)}.</p>"
                )
        if matrix.source:
            out.append(f'<p class="muted">Source: {esc(matrix.source)}</p>')
    if m.p2p_verification:
        bad = [v for v in m.p2p_verification if not v.ok]
        listed = ", ".join(f"GPU{v.src}→GPU{v.dst}" for v in bad)
        out.append(
            f"<p>P2P copies verified: {len(m.p2p_verification) - len(bad)} ok, {len(bad)} wrong"
            + (f": {esc(listed)}" if bad else "")
            + "</p>"
        )
    if m.collectives:
        rows = []
        for c in m.collectives:
            peak = c.peak_busbw()
            rows.append(
                [
                    esc(c.op),
                    esc(c.backend or "—"),
                    esc(c.ranks or "—"),
                    esc(format_gbps(peak.busbw_gbps) if peak else "—"),
                    esc(format_bytes(peak.size_bytes) if peak else "—"),
                    esc(format_gbps(c.avg_busbw_gbps)),
                    {True: "yes", False: "NO", None: "—"}[c.correct],
                    esc(c.tool or c.source or "—"),
                ]
            )
        out += [
            "<h3>Collectives</h3>",
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
        ]
    for s in m.scaling:
        rows = [
            [
                str(p.ranks),
                f"{p.throughput_samples_per_s:.1f}",
                "—" if p.efficiency is None else f"{p.efficiency * 100:.0f} %",
                _num(p.step_time_ms, 2),
            ]
            for p in s.points
        ]
        out += [
            f"<h3>Scaling{' (' + esc(s.backend) + ')' if s.backend else ''}</h3>",
            _table(["Ranks", "Samples/s", "Efficiency", "Step ms"], rows),
        ]
        if s.slowest_edge:
            out.append(f"<p>Slowest link class in use: {esc(s.slowest_edge)}</p>")
    if m.workloads:
        items = []
        for w in m.workloads:
            bits = [
                f"{w.steps} steps" if w.steps is not None else None,
                f"step {w.step_time_ms:.1f} ms" if w.step_time_ms is not None else None,
                f"NCCL {w.nccl_time_share * 100:.0f} % of step"
                if w.nccl_time_share is not None
                else None,
            ]
            copies = "".join(
                f"<li>{esc(c.kind)}: {c.count} copies, {esc(format_bytes(c.bytes))}, "
                f"{c.time_us / 1000:.1f} ms</li>"
                for c in w.memcpy
            )
            items.append(
                f"<li>Profiler trace {esc(w.source or '')}: "
                f"{esc(', '.join(b for b in bits if b) or 'no summary')}"
                + (f"<ul>{copies}</ul>" if copies else "")
                + "</li>"
            )
        out.append(f"<ul>{''.join(items)}</ul>")
    if m.probe_errors:
        items = "".join(
            f"<li>{esc(e.probe)} ({esc(e.kind)}): {esc(e.message)}</li>" for e in m.probe_errors
        )
        out.append(f"<p>Probes that produced nothing:</p><ul>{items}</ul>")
    return out


def _origin(capture: Capture) -> list[str]:
    origin = capture.origin
    items = [f"<li>Kind: {esc(origin.kind)}{' (redacted)' if origin.redacted else ''}</li>"]
    if origin.created_at:
        items.append(f"<li>Captured: {esc(origin.created_at)}</li>")
    if origin.pcidoc_version:
        items.append(f"<li>Captured with pcidoc {esc(origin.pcidoc_version)}</li>")
    if origin.sample:
        items.append(f"<li>Sample: {esc(origin.sample.name)}: {esc(origin.sample.title)}</li>")
    for name, value in origin.tool_versions.items():
        items.append(f"<li>{esc(name)}: {esc(value)}</li>")
    if origin.note:
        items.append(f"<li>Note: {esc(origin.note)}</li>")
    for source in origin.sources:
        sub = [f"<li>read: {esc(r)}</li>" for r in source.read]
        sub += [f"<li>warning: {esc(w)}</li>" for w in source.warnings]
        if source.citation:
            sub.append(f"<li>from: {esc(source.citation)}</li>")
        formats = f" ({esc(', '.join(source.formats))})" if source.formats else ""
        items.append(
            f"<li>Imported <code>{esc(source.path)}</code>{formats}<ul>{''.join(sub)}</ul></li>"
        )
    for warning in origin.warnings:
        items.append(f"<li>Warning: {esc(warning)}</li>")
    for key, reason in capture.unavailable.items():
        items.append(f"<li>Not collected: {esc(key)}: {esc(reason)}</li>")
    return ["<h2>Origin</h2>", f"<ul>{''.join(items)}</ul>"]


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
    body += _measurements(capture.measurements)
    body += _origin(capture)
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

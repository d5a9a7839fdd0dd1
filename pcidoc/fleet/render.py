"""Presenters of a fleet report: text for the terminal, Markdown, HTML and JSON."""

from __future__ import annotations

import html

from pcidoc.fleet.model import FleetReport
from pcidoc.model.units import plurals

_MARK = {
    "fail": "FAIL",
    "error": "ERR ",
    "warn": "WARN",
    "info": "info",
    "pass": "ok  ",
    "skip": "skip",
}


def fleet_json(report: FleetReport) -> str:
    """The ``pcidoc.fleet/1`` document."""
    return report.model_dump_json(by_alias=True, indent=2) + "\n"


def _headline(report: FleetReport) -> str:
    s = report.summary
    return plurals(
        f"{s.get('nodes', 0)} node(s) in {s.get('groups', 0)} hardware group(s): "
        f"{s.get('fail', 0)} fail, {s.get('warn', 0)} warn, {s.get('outliers', 0)} outlier(s), "
        f"{s.get('excluded', 0)} to exclude"
        + (f", {s['unreadable']} unreadable file(s)" if s.get("unreadable") else "")
    )


def fleet_text(report: FleetReport, verbose: bool = False, limit: int = 40) -> str:
    """Terminal text: headline, exclude list, outliers with what differs, fleet findings, the
    remaining nodes worst first (``limit`` lines unless ``verbose``)."""
    lines = [f"pcidoc fleet: {_headline(report)}", ""]
    if report.exclude:
        lines.append("Exclude (drain):")
        lines += [f"  {e.name}: {e.reason}" for e in report.exclude]
        lines.append("")
    outliers = [n for n in report.nodes if n.outlier]
    if outliers:
        lines.append("Outliers (differ from their peer group):")
        for node in outliers:
            lines.append(f"  {_MARK[node.worst]} {node.name} [{node.group}]")
            lines += [f"       - {d.text}" for d in node.differs]
        lines.append("")
    if report.fleet_findings:
        lines.append("Fleet-wide findings (shared by every node of a group):")
        for f in report.fleet_findings:
            nodes = plurals(f"{f.nodes} node(s)")
            lines.append(f"  {_MARK[f.severity]} [{f.group}, {nodes}] {f.id}: {f.summary}")
        lines.append("")
    lines.append("Groups:")
    for g in report.groups:
        note = "" if g.peers_comparable else " (too few nodes to compare)"
        lines.append(f"  {g.id}: {plurals(f'{len(g.nodes)} node(s)')}: {g.signature}{note}")
    lines.append("")
    lines.append("Nodes, worst first:")
    shown = report.nodes if verbose else report.nodes[:limit]
    for node in shown:
        mark = "*" if node.outlier else " "
        top = next((f for f in node.findings if f.severity == node.worst), None)
        detail = f"  {top.id}: {top.summary}" if top else ""
        lines.append(f"  {_MARK[node.worst]}{mark} {node.name}{detail}"[:160])
    if len(shown) < len(report.nodes):
        lines.append(f"  ... {len(report.nodes) - len(shown)} more (use --verbose or --json)")
    if report.unreadable:
        lines.append("")
        lines.append("Unreadable (skipped):")
        lines += [f"  {u.error}" for u in report.unreadable]
    return "\n".join(lines) + "\n"


def _md(text: object) -> str:
    """Outside text (host and GPU names, file names, reasons) for a Markdown table cell or list
    item: the check report's one Markdown escaper (HTML, links, emphasis, ``|``, mentions)."""
    from pcidoc.present.markdown import escape_text

    return escape_text(str(text), table=True)


def fleet_markdown(report: FleetReport) -> str:
    """A Markdown page of the fleet report."""
    out = ["# pcidoc fleet report", "", _headline(report), ""]
    if report.exclude:
        out += ["## Exclude (drain)", "", "| node | reason |", "|---|---|"]
        out += [f"| {_md(e.name)} | {_md(e.reason)} |" for e in report.exclude]
        out.append("")
    outliers = [n for n in report.nodes if n.outlier]
    if outliers:
        out += ["## Outliers", ""]
        for node in outliers:
            out.append(f"- **{_md(node.name)}** ({node.worst}, group {_md(node.group)})")
            out += [f"  - {_md(d.text)}" for d in node.differs]
        out.append("")
    if report.fleet_findings:
        out += ["## Fleet-wide findings", "", "| group | check | severity | nodes | summary |"]
        out.append("|---|---|---|---|---|")
        out += [
            f"| {_md(f.group)} | {_md(f.id)} | {f.severity} | {f.nodes} | {_md(f.summary)} |"
            for f in report.fleet_findings
        ]
        out.append("")
    out += ["## Groups", ""]
    out += [
        f"- {_md(g.id)}: {plurals(f'{len(g.nodes)} node(s)')}: {_md(g.signature)}"
        for g in report.groups
    ]
    out += [
        "",
        "## Nodes, worst first",
        "",
        "| node | worst | outlier | group |",
        "|---|---|---|---|",
    ]
    out += [
        f"| {_md(n.name)} | {n.worst} | {'yes' if n.outlier else ''} | {_md(n.group)} |"
        for n in report.nodes
    ]
    if report.unreadable:
        out += ["", "## Unreadable files (skipped)", ""]
        out += [f"- {_md(u.error)}" for u in report.unreadable]
    return "\n".join(out) + "\n"


def fleet_html(report: FleetReport) -> str:
    """A self-contained HTML page of the fleet report (every string escaped)."""
    e = html.escape
    rows = "".join(
        f"<tr><td>{e(n.name)}</td><td class='{n.worst}'>{n.worst}</td>"
        f"<td>{'yes' if n.outlier else ''}</td><td>{e(n.group)}</td>"
        f"<td>{'<br>'.join(e(d.text) for d in n.differs)}</td></tr>"
        for n in report.nodes
    )
    excl = "".join(f"<li><b>{e(x.name)}</b>: {e(x.reason)}</li>" for x in report.exclude)
    shared = "".join(
        f"<li>[{e(f.group)}, {plurals(f'{f.nodes} node(s)')}] <b>{e(f.id)}</b> {f.severity}: "
        f"{e(f.summary)}</li>"
        for f in report.fleet_findings
    )
    groups = "".join(
        f"<li>{e(g.id)}: {plurals(f'{len(g.nodes)} node(s)')}: {e(g.signature)}</li>"
        for g in report.groups
    )
    bad = "".join(f"<li>{e(u.error)}</li>" for u in report.unreadable)
    style = (
        "body{font-family:sans-serif;margin:2em}td,th{padding:2px 8px;text-align:left}"
        ".fail,.error{color:#b00}.warn{color:#a60}"
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>pcidoc fleet report</title>"
        f"<style>{style}</style></head><body><h1>pcidoc fleet report</h1>"
        f"<p>{e(_headline(report))}</p>"
        + (f"<h2>Exclude (drain)</h2><ul>{excl}</ul>" if excl else "")
        + (f"<h2>Fleet-wide findings</h2><ul>{shared}</ul>" if shared else "")
        + f"<h2>Groups</h2><ul>{groups}</ul>"
        + "<h2>Nodes, worst first</h2><table><tr><th>node</th><th>worst</th><th>outlier</th>"
        + f"<th>group</th><th>differs</th></tr>{rows}</table>"
        + (f"<h2>Unreadable files (skipped)</h2><ul>{bad}</ul>" if bad else "")
        + "</body></html>\n"
    )

"""Presenters of a fleet report: text for the terminal, Markdown, HTML and JSON."""

from __future__ import annotations

import html

from pcidoc.model.fleet import FleetNode, FleetReport
from pcidoc.model.units import plurals

_MARK = {
    "fail": "FAIL",
    "error": "ERR ",
    "warn": "WARN",
    "info": "info",
    "pass": "ok  ",
    "skip": "skip",
}


def peer_status(report: FleetReport, node: FleetNode) -> str:
    """What the comparison with its peers says of a node that differs in nothing: it matches
    its group only when the group was large enough to compare and the node has GPUs."""
    if node.differs:
        more = f" (+{len(node.differs) - 1} more)" if len(node.differs) > 1 else ""
        return node.differs[0].text + more
    if node.gpus == 0:
        return "no GPUs: nothing to compare with its peers"
    group = next((g for g in report.groups if g.id == node.group), None)
    if group is not None and not group.peers_comparable:
        from pcidoc.fleet.analyze import MIN_PEERS

        return plurals(
            f"too few nodes to compare ({len(group.nodes)} node(s) in its group; "
            f"{MIN_PEERS} needed)"
        )
    return "matches its peer group"


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
        detail = f"  {top.id}: {top.summary}" if top else f"  ({peer_status(report, node)})"
        # Never cut: a terminal wraps a long line, a cut one loses the words that matter.
        lines.append(f"  {_MARK[node.worst]}{mark} {node.name}{detail}")
    if len(shown) < len(report.nodes):
        lines.append(f"  ... {len(report.nodes) - len(shown)} more (use --verbose or --json)")
    if report.unreadable:
        lines.append("")
        lines.append("Unreadable (skipped):")
        lines += [f"  {u.text()}" for u in report.unreadable]
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
        + ("" if g.peers_comparable else " (too few nodes to compare)")
        for g in report.groups
    ]
    out += [
        "",
        "## Nodes, worst first",
        "",
        "| node | worst | outlier | group | compared with its peers |",
        "|---|---|---|---|---|",
    ]
    out += [
        f"| {_md(n.name)} | {n.worst} | {'yes' if n.outlier else ''} | {_md(n.group)} "
        f"| {_md(peer_status(report, n))} |"
        for n in report.nodes
    ]
    if report.unreadable:
        out += ["", "## Unreadable files (skipped)", ""]
        out += [f"- {_md(u.text())}" for u in report.unreadable]
    return "\n".join(out) + "\n"


def fleet_html(report: FleetReport) -> str:
    """A self-contained HTML page of the fleet report (every string escaped), styled with the
    check report's stylesheet."""
    from pcidoc.present._common import VERDICTS
    from pcidoc.present.html import severity_badge, stylesheet

    e = html.escape

    def differs(node: FleetNode) -> str:
        if node.differs:
            return "<br>".join(e(d.text) for d in node.differs)
        return f'<span class="muted">{e(peer_status(report, node))}</span>'

    rows = "".join(
        f"<tr><td>{e(n.name)}</td><td>{severity_badge(n.worst)}</td>"
        f"<td>{'yes' if n.outlier else ''}</td><td>{e(n.group)}</td><td>{differs(n)}</td></tr>"
        for n in report.nodes
    )
    excl = "".join(f"<li><b>{e(x.name)}</b>: {e(x.reason)}</li>" for x in report.exclude)
    shared = "".join(
        f"<li>{severity_badge(f.severity)} [{e(f.group)}, {plurals(f'{f.nodes} node(s)')}] "
        f'<code class="cid">{e(f.id)}</code>: {e(f.summary)}</li>'
        for f in report.fleet_findings
    )
    groups = "".join(
        f"<li>{e(g.id)}: {plurals(f'{len(g.nodes)} node(s)')}: {e(g.signature)}"
        + ("" if g.peers_comparable else ' <span class="muted">(too few nodes to compare)</span>')
        + "</li>"
        for g in report.groups
    )
    bad = "".join(f"<li>{e(u.text())}</li>" for u in report.unreadable)
    worst = report.worst
    badge = f'<span class="verdict sev-{e(worst)}">{e(VERDICTS.get(worst, worst.upper()))}</span>'
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="pcidoc">\n'
        f"<title>pcidoc fleet report</title>\n<style>{stylesheet()}</style>\n</head>\n<body>\n"
        f"<h1>pcidoc fleet report {badge}</h1>\n<p>{e(_headline(report))}</p>\n"
        + (f"<h2>Exclude (drain)</h2><ul>{excl}</ul>\n" if excl else "")
        + (f"<h2>Fleet-wide findings</h2><ul>{shared}</ul>\n" if shared else "")
        + f"<h2>Groups</h2><ul>{groups}</ul>\n"
        + '<h2>Nodes, worst first</h2><div class="tablewrap"><table class="findings"><thead><tr>'
        + "<th>node</th><th>worst</th><th>outlier</th><th>group</th>"
        + f"<th>compared with its peers</th></tr></thead><tbody>{rows}</tbody></table></div>\n"
        + (f"<h2>Unreadable files (skipped)</h2><ul>{bad}</ul>\n" if bad else "")
        + "</body>\n</html>\n"
    )

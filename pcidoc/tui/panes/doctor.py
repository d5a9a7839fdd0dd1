"""The Doctor pane's text (a line per check, everything about the one selected), its binding
and the jump from a finding to its GPU pair in the Topology pane."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from pcidoc.model.report import CheckResult
from pcidoc.present._common import MARKS, docs_link, evidence_text
from pcidoc.present.text import SEVERITY_STYLES
from pcidoc.tui.panes.common import inline

if TYPE_CHECKING:
    from pcidoc.model.report import FindingNote
    from pcidoc.tui.app import PcidocApp
    from pcidoc.tui.screens.main import MainScreen
    from pcidoc.tui.widgets.doctor_pane import DoctorPane


def check_line(check: CheckResult) -> Text:
    """One row of the check list: mark, severity, id and the summary (cut to one line)."""
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append(
        f"{MARKS[check.severity]} {check.severity:<5} ", style=SEVERITY_STYLES[check.severity]
    )
    out.append(f"{check.id:<22} ", style="bold")
    out.append_text(inline(check.summary, "dim" if check.severity in ("pass", "skip") else ""))
    return out


def _hanging(rows: list[tuple[Text, Text]]) -> Table:
    """Two columns so that wrapped lines stay indented under their text, not under the mark."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, justify="right")
    grid.add_column(ratio=1, overflow="fold")
    for mark, text in rows:
        grid.add_row(mark, text)
    return grid


def _findings_part(findings: Sequence[FindingNote]) -> Table:
    rows = []
    for finding in findings:
        mark = Text(f" {MARKS[finding.severity]}", style=SEVERITY_STYLES[finding.severity])
        line = inline(finding.summary)
        if finding.subjects:
            line.append(f"  ({', '.join(finding.subjects[:4])}", style="dim")
            more = len(finding.subjects) - 4
            line.append(f", +{more})" if more > 0 else ")", style="dim")
        rows.append((mark, line))
    return _hanging(rows)


def check_detail(check: CheckResult) -> Group:
    """Everything about one check: summary, every finding when it has several (its summary
    shows only the worst, "+N more"), evidence with units, numbered remediation."""
    head = Text()
    head.append(
        f"{MARKS[check.severity]} {check.severity.upper()}", style=SEVERITY_STYLES[check.severity]
    )
    head.append("  ")
    head.append(check.id, style="bold")
    head.append(f" — {check.title}\n")
    head.append(f"confidence {check.confidence}", style="dim")
    if check.subjects:
        head.append(f" · about {', '.join(check.subjects[:8])}", style="dim")
        if len(check.subjects) > 8:
            head.append(f" +{len(check.subjects) - 8} more", style="dim")
    head.append("\n")
    parts: list[RenderableType] = [head, inline(check.summary)]
    notable = [f for f in check.findings if f.severity not in ("pass", "skip")]
    if len(notable) > 1:
        parts.append(Text(f"\nFindings ({len(notable)})", style="bold"))
        parts.append(_findings_part(notable))
    if check.needs:
        needs = Text("\nNeeds  ", style="bold")
        needs.append_text(inline(check.needs))
        parts.append(needs)
    if check.evidence:
        parts.append(Text("\nEvidence", style="bold"))
        parts.append(
            _hanging([(Text(" •"), inline(evidence_text(item))) for item in check.evidence])
        )
    if check.remediation:
        parts.append(Text("\nWhat to do", style="bold"))
        parts.append(
            _hanging(
                [
                    (Text(f" {n}.", style="bold"), inline(step))
                    for n, step in enumerate(check.remediation, 1)
                ]
            )
        )
    if check.docs_url:
        docs = Text("\nDocs  ", style="bold")
        docs.append(docs_link(check.docs_url) or "", style="underline")
        parts.append(docs)
    return Group(*parts)


# ------------------------------------------------------------------ the pane and the app's state


def bind(screen: MainScreen, doctor: DoctorPane) -> None:
    """Show each report of the machine on display."""
    doctor.watch(screen.state, "report", doctor.show_report)


def shown(screen: MainScreen, doctor: DoctorPane) -> None:
    """Nothing to catch up: the pane follows the state while hidden."""


async def jump(app: PcidocApp, check: CheckResult) -> None:
    """Enter on a finding: its GPU pair (or GPU) under the Topology pane's cursor."""
    from pcidoc.tui.widgets.doctor_pane import jump_target

    target = jump_target(check)
    if target is None:
        app.notify(f"{check.id} names no GPU or GPU pair to show in the matrix.", timeout=4)
        return
    await app.open_pane("topology")
    matrix = app.main.topology.matrix
    row, col = target
    if matrix.grid is not None and row.startswith("NIC") and row not in matrix.grid.labels:
        app.main.topology.action_toggle_nics()
        matrix = app.main.topology.matrix
    matrix.select(row, col)
    matrix.focus()

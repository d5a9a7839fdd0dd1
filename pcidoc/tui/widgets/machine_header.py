"""The header: where the machine comes from, what it is, and how bad it looks."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from pcidoc.model.capture import Capture
from pcidoc.model.report import Report, ReportSource
from pcidoc.tui.describe import header_text, worst_line


class MachineHeader(Vertical):
    """Two lines: source badge · host · GPUs · versions · worst severity; the worst finding."""

    def compose(self) -> ComposeResult:
        yield Static(header_text(None, None, None), id="header-machine")
        yield Static("", id="header-worst")

    def show(
        self,
        capture: Capture | None,
        source: ReportSource | None,
        report: Report | None,
        status: str | None = None,
    ) -> None:
        """Show a machine (``None`` while collecting) and its report (``None`` while diagnosing)."""
        self.query_one("#header-machine", Static).update(
            header_text(capture, source, report, status)
        )
        self.query_one("#header-worst", Static).update(worst_line(report))

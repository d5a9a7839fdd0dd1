"""The header: where the machine comes from, what it is, and how bad it looks."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from pcidoc.model.capture import Capture
from pcidoc.model.report import Report, ReportSource
from pcidoc.tui.describe import header_text, worst_line

HEADER_LINES = 2
"""Lines of the machine line (``#header-machine``'s ``max-height`` in pcidoc.tcss)."""


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
        self._shown = (capture, source, report, status)
        self._draw()
        self.query_one("#header-worst", Static).update(worst_line(report))

    _shown: tuple[Capture | None, ReportSource | None, Report | None, str | None] = (
        None,
        None,
        None,
        None,
    )

    def _draw(self) -> None:
        line = self.query_one("#header-machine", Static)
        # Lines break between phrases, never inside one (the Static has 1 cell of padding).
        width = max(20, self.size.width - 1) if self.size.width else None
        line.update(header_text(*self._shown, width=width, max_lines=HEADER_LINES))

    def on_resize(self) -> None:
        """Pack the header's phrases again for the new width."""
        self._draw()

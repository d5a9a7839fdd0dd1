"""The Topology pane: the matrix, its legend, the selected cell's detail and notable facts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rich.console import Group
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Vertical, VerticalScroll
from textual.widgets import Static

from pcidoc.model.capture import Capture
from pcidoc.model.counters import GpuRates
from pcidoc.model.report import Report
from pcidoc.present._matrix import MatrixView, finding_marks
from pcidoc.tui.describe import attention_text, bullet_lines, describe_cell
from pcidoc.tui.hanging import Hanging
from pcidoc.tui.matrix_grid import COLOUR_MODES, MODE_TITLES, MatrixGrid, build_grid
from pcidoc.tui.widgets.topology_matrix import TopologyMatrix

WIDE_MIN_COLUMNS = 120
"""From this width on, the detail sits beside the matrix instead of below it."""


class TopologyPane(Container):
    """Matrix with a cell cursor, colour modes (``c``), NIC toggle (``n``) and pair detail."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "cycle_colour", "Colour"),
        Binding("n", "toggle_nics", "NICs"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.capture: Capture | None = None
        self.mode: str = "class"
        self.show_nics: bool = True
        self.rates: Mapping[int, GpuRates] | None = None
        self.grid: MatrixGrid | None = None
        self._view: MatrixView | None = None
        self._notes: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="topo-left"):
            yield TopologyMatrix(id="matrix")
            yield Static("", id="topo-legend")
            yield Static("", id="topo-findings")
        with VerticalScroll(id="topo-detail"):
            yield Static("", id="pair-detail")
            yield Static("", id="topo-notes")

    @property
    def matrix(self) -> TopologyMatrix:
        """The matrix widget."""
        return self.query_one(TopologyMatrix)

    # --------------------------------------------------------------------------- data

    def show_capture(self, capture: Capture | None, notes: list[str] | None = None) -> None:
        """Show a machine (``None``: collecting)."""
        self.capture = capture
        self._view = None if capture is None else MatrixView(capture)
        if notes is not None:
            self._notes = notes
        if capture is None:
            self.matrix.set_placeholder("collecting this machine's facts…")
            return
        if not capture.topology.labels:
            self.grid = None
            self.matrix.grid = None
            self.matrix.set_placeholder(
                "No topology matrix: "
                + (
                    capture.unavailable.get("topology")
                    or capture.unavailable.get("gpus")
                    or "no GPUs"
                )
            )
            self._show_legend()
            self._show_detail(None)
            return
        self._rebuild()

    def show_report(self, report: Report | None) -> None:
        """What is wrong, beside the matrix (wide layout only); marks in the matrix."""
        self.query_one("#topo-findings", Static).update(attention_text(report))
        labels = list(self.capture.topology.labels) if self.capture else []
        self.matrix.set_marks(finding_marks(report, labels))

    def show_rates(self, rates: Mapping[int, GpuRates] | None) -> None:
        """New live rates (only redrawn in traffic mode)."""
        self.rates = rates
        if self.mode == "traffic" and self.capture is not None:
            self._rebuild()

    def _rebuild(self) -> None:
        if self.capture is None or not self.capture.topology.labels:
            return
        self.grid = build_grid(self.capture, self.mode, self.show_nics, self.rates, self._view)
        self.matrix.set_grid(self.grid)
        self._show_legend()
        self._fit()
        self._show_detail(self.matrix.selected)

    def _show_legend(self) -> None:
        text = Text()
        text.append("c", style="bold reverse")
        text.append(" colour: ", style="dim")
        text.append(MODE_TITLES[self.mode], style="bold")
        nics = bool(self.capture and self.capture.nics)
        if nics:
            text.append("  ")
            text.append("n", style="bold reverse")
            text.append(" NICs: ", style="dim")
            text.append("shown" if self.show_nics else "hidden", style="bold")
        if self.matrix.layout_name == "compact":
            text.append("  · one character per cell", style="dim")
        grid = self.grid
        if grid is not None:
            text.append("\n")
            compact = self.matrix.layout_name == "compact"
            for pos, (cls, code, style, words) in enumerate(grid.legend):
                if pos:
                    text.append("  ")
                shown = cls
                if compact and code != cls:
                    shown = f"{code}={cls}" if grid.mode == "class" else f"{code} {cls}"
                text.append(shown, style=style)
                if words:
                    text.append(f" {words}")
            if grid.note:
                text.append("\n")
                text.append(grid.note, style="dim")
        self.query_one("#topo-legend", Static).update(text)

    def _show_detail(self, selected: tuple[str, str] | None) -> None:
        detail = self.query_one("#pair-detail", Static)
        if self.capture is None or selected is None:
            detail.update(Text("No cell selected.", style="dim") if self.capture else "")
        else:
            detail.update(Hanging(describe_cell(self.capture, *selected)))
        notes = self.query_one("#topo-notes", Static)
        if self._notes:
            notes.update(Group(Text("\nNotable", style="bold"), bullet_lines(self._notes)))
        else:
            notes.update("")

    @on(TopologyMatrix.CursorMoved)
    def _cursor_moved(self, event: TopologyMatrix.CursorMoved) -> None:
        self._show_detail((event.row, event.col))

    # ------------------------------------------------------------------------- layout

    def on_resize(self) -> None:
        """Side by side from 120 columns, stacked below."""
        self._fit()

    def _fit(self) -> None:
        width = self.size.width
        if width <= 0:
            return
        wide = width >= WIDE_MIN_COLUMNS
        self.set_class(wide, "-wide")
        left = self.query_one("#topo-left")
        matrix = self.matrix
        if wide:
            budget = int(width * 0.62)
            matrix.budget = budget
            natural = matrix.natural_width
            floor = int(width * 0.4)
            left.styles.width = max(floor, min(budget, natural + 2)) if natural else budget
        else:
            matrix.budget = None
            left.styles.width = "100%"

    # ------------------------------------------------------------------------ actions

    def action_cycle_colour(self) -> None:
        """Link class → measured P2P bandwidth → live traffic."""
        position = COLOUR_MODES.index(self.mode)
        self.mode = COLOUR_MODES[(position + 1) % len(COLOUR_MODES)]
        self._rebuild()
        self._show_legend()

    def action_toggle_nics(self) -> None:
        """Show or hide the NIC rows and columns."""
        if self.capture is None or not self.capture.nics:
            self.app.notify("This machine has no NICs in its topology.", timeout=3)
            return
        self.show_nics = not self.show_nics
        self._rebuild()

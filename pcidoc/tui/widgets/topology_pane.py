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
from textual.geometry import Size
from textual.widgets import Static

from pcidoc.model.capture import Capture
from pcidoc.model.counters import GpuRates
from pcidoc.model.report import Report
from pcidoc.present._matrix import MatrixView, finding_marks
from pcidoc.tui.hanging import Hanging, Phrases
from pcidoc.tui.matrix_grid import COLOUR_MODES, MODE_TITLES, MatrixGrid, build_grid
from pcidoc.tui.panes.topology import attention_text, bullet_lines, describe_cell
from pcidoc.tui.widgets.topology_matrix import TopologyMatrix

WIDE_MIN_COLUMNS = 120
"""From this width on, the detail sits beside the matrix instead of below it."""

DETAIL_MIN_COLUMNS = 56
"""Side by side, the matrix may take all but this many columns (at least 62 % of the width),
so that a wide terminal shows a big matrix whole, CPU affinity included."""

MATRIX_MIN_ROWS = 8
"""Side by side, the matrix keeps at least this many rows (or all of its own) when the legend
and the findings under it are long."""


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
        self.replay: str | None = None
        """The trace the Links pane replays on this machine (SYNTHETIC...), which the traffic
        colours never show; ``None`` for a live machine or a capture."""
        self.grid: MatrixGrid | None = None
        self.stale = False
        """The matrix lags behind the state (a report or rates arrived while another pane was
        on display): it is redrawn when the pane is opened (:func:`pcidoc.tui.panes.topology.
        shown`), not on every report a probe run produces (a hidden 72-GPU matrix is not worth
        a UI pause)."""
        self._view: MatrixView | None = None
        self._notes: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="topo-left"):
            yield TopologyMatrix(id="matrix")
            yield Static("", id="topo-legend")
            yield Static("", id="topo-findings")
            yield Static("", id="topo-notes-left")
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
            self._show_notes()
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
        self.query_one("#topo-findings", Static).update(Hanging(attention_text(report)))
        labels = list(self.capture.topology.labels) if self.capture else []
        self.matrix.set_marks(finding_marks(report, labels))
        self._fit()

    def show_rates(self, rates: Mapping[int, GpuRates] | None) -> None:
        """New live rates (only redrawn in traffic mode)."""
        self.rates = rates
        if self.mode == "traffic" and self.capture is not None:
            self._rebuild()

    def _rebuild(self) -> None:
        if self.capture is None or not self.capture.topology.labels:
            return
        self.grid = build_grid(self.capture, self.mode, self.show_nics, self.rates, self._view)
        if self.mode == "traffic" and self.rates is None and self.replay:
            # The Links pane of this demo moves (a SYNTHETIC trace): say so, and why the
            # matrix shows only what the capture read, not "live counters need a GPU".
            self.grid.note = (
                "static: PCIe utilisation at collection time (diagonal) — the Links pane (2) "
                "replays a SYNTHETIC counter trace; the matrix colours only counters read from GPUs"
            )
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
        parts: list[Text | Phrases] = [text]
        grid = self.grid
        if grid is not None:
            # One phrase per entry: a narrow screen breaks between entries, never inside one.
            compact = self.matrix.layout_name == "compact"
            entries: list[Text] = []
            for cls, code, style, words in grid.legend:
                shown = cls
                if compact and code != cls:
                    shown = f"{code}={cls}" if grid.mode == "class" else f"{code} {cls}"
                entry = Text(shown, style=style)
                if words:
                    entry.append(f" {words}")
                entries.append(entry)
            parts.append(Phrases(entries, separator="  "))
            if grid.note:
                parts.append(Text(grid.note, style="dim"))
        self.query_one("#topo-legend", Static).update(Group(*parts))

    def _show_detail(self, selected: tuple[str, str] | None) -> None:
        detail = self.query_one("#pair-detail", Static)
        if self.capture is None or selected is None:
            detail.update(Text("No cell selected.", style="dim") if self.capture else "")
        else:
            detail.update(Hanging(describe_cell(self.capture, *selected)))

    def _show_notes(self) -> None:
        """Notable facts: under the findings when they fit there, else under the detail."""
        notes = (
            Group(Text("\nNotable", style="bold"), Hanging(bullet_lines(self._notes)))
            if self._notes
            else ""
        )
        self.query_one("#topo-notes", Static).update(notes)
        self.query_one("#topo-notes-left", Static).update(notes)

    @on(TopologyMatrix.LayoutChanged)
    def _layout_changed(self) -> None:
        # The legend spells out the one-character codes of the compact layout only.
        self._show_legend()
        self._fit()

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
            budget = max(int(width * 0.62), width - DETAIL_MIN_COLUMNS)
            matrix.budget = budget
            natural = matrix.natural_width
            floor = int(width * 0.4)
            left_w = max(floor, min(budget, natural + 2)) if natural else budget
            left.styles.width = left_w
            rows, notes_left = self._left_column(left_w)
            matrix.styles.max_height = rows
        else:
            matrix.budget = None
            left.styles.width = "100%"
            matrix.styles.max_height = None  # the stylesheet's share of the screen
            notes_left = False
        self.query_one("#topo-notes-left").display = notes_left
        self.query_one("#topo-notes").display = not notes_left

    def _left_column(self, left_w: int) -> tuple[int, bool]:
        """Side by side: the matrix's rows, and whether the notable facts go under the findings.

        The matrix gets every row of the left column that its legend and the findings under it
        do not need (a 72-GPU matrix fills a tall terminal instead of a fixed share of it, with
        the findings right under it). When the whole matrix, legend and findings leave room for
        the notable facts too, those move under the findings, out of the selected cell's
        detail, so that neither column ends in a screenful of blank rows.
        """
        height = self.size.height
        used = self._rows_of("#topo-legend", left_w) + self._rows_of("#topo-findings", left_w)
        matrix = self.matrix
        own = matrix.virtual_size.height + 1 if matrix.grid is not None else MATRIX_MIN_ROWS
        notes = self._rows_of("#topo-notes-left", left_w) if self._notes else 0
        notes_left = bool(self._notes) and own + used + notes <= height
        if notes_left:
            used += notes
        return max(min(own, MATRIX_MIN_ROWS), height - used), notes_left

    def _rows_of(self, selector: str, width: int) -> int:
        """Rows a widget of the left column needs at ``width`` columns (padding included)."""
        widget = self.query_one(selector)
        gutter = widget.styles.gutter
        inner = max(1, width - gutter.width)
        content = widget.get_content_height(Size(inner, self.size.height), self.app.size, inner)
        return content + gutter.height

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

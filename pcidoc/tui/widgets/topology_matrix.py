"""The topology matrix: one line-API widget that draws every row itself (no child per cell).

Row labels and column headers stay in place while the cells scroll, so a 72-GPU matrix stays
readable at 80×24. Devices named by a failing or warning check carry the severity's mark after
their label and their header in its colour; cells of a pair named by one are underlined in it.
The layout adapts to the width: full labels (``GPU0``/``NV18``), narrow (``G0`` headers) or
compact (one character per cell, column numbers written vertically). The first layout that shows
everything, the CPU affinity and NUMA columns included, wins; when none does, the first whose
cells fit, and the affinity columns scroll. Columns of one layout are all one width, and a column
the viewport would cut is left blank, with ``…`` in the header saying that more columns are to
that side: no header or cell is ever shown cut.
"""

from __future__ import annotations

from functools import lru_cache
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from pcidoc._record import record
from pcidoc.present._matrix import FindingMarks
from pcidoc.tui.matrix_grid import MatrixGrid

LAYOUTS: tuple[str, ...] = ("full", "narrow", "compact")


def _blank_looks_base(style: Style, base: Style) -> bool:
    """A space in ``style`` looks like one in ``base`` (the same background, no reverse or
    underline of its own)."""
    return (
        style.bgcolor == base.bgcolor
        and style.reverse == base.reverse
        and style.underline == base.underline
    )


@lru_cache(maxsize=256)
def _style(spec: str) -> Style:
    return Style.parse(spec) if spec else Style()


_CURSOR = Style(reverse=True, bold=True)
_AXIS = Style(bold=True)
_AXIS_CURSOR = Style(bold=True, reverse=True)
_DIM = Style(dim=True)

MARK_STYLES: dict[str, str] = {"fail": "bold red", "error": "bold magenta", "warn": "bold yellow"}
"""Style of a device label or pair named by a finding (the verdict colours of the severity)."""

MARK_CHARS: dict[str, str] = {"fail": "✗", "error": "●", "warn": "!"}


@record
class _Layout:
    name: str
    label_w: int
    col_x: list[int]
    """Start of each column, relative to the first data column."""
    col_w: list[int]
    data_w: int
    header: list[list[tuple[int, str]]]
    """Header rows: ``(column, text)`` per column (text fits the column)."""
    affinity_x: int | None
    cpu_w: int
    numa_w: int

    @property
    def total_w(self) -> int:
        extra = 0 if self.affinity_x is None else 2 + self.cpu_w + 2 + self.numa_w
        return self.label_w + self.data_w + extra

    @property
    def boundaries(self) -> list[int]:
        """Where each column (cells, then CPU affinity and NUMA) ends, in data coordinates."""
        ends = [x + w for x, w in zip(self.col_x, self.col_w, strict=True)]
        if self.affinity_x is not None:
            ends += [self.data_w + 2 + self.cpu_w, self.total_w - self.label_w]
        return ends

    @property
    def starts(self) -> list[int]:
        """Where each column starts, in data coordinates (the order of :attr:`boundaries`)."""
        starts = list(self.col_x)
        if self.affinity_x is not None:
            starts += [self.data_w, self.data_w + 2 + self.cpu_w]
        return starts


class TopologyMatrix(ScrollView, can_focus=True):
    """Draws a :class:`MatrixGrid` with a cell cursor (arrows, hjkl, mouse)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "move(0,-1)", "Up", show=False),
        Binding("down,j", "move(0,1)", "Down", show=False),
        Binding("left,h", "move(-1,0)", "Left", show=False),
        Binding("right,l", "move(1,0)", "Right", show=False),
        Binding("home", "jump('home')", "First", show=False),
        Binding("end", "jump('end')", "Last", show=False),
        Binding("pageup", "move(0,-8)", "Page up", show=False),
        Binding("pagedown", "move(0,8)", "Page down", show=False),
    ]

    class CursorMoved(Message):
        """The selected cell changed."""

        def __init__(self, matrix: TopologyMatrix, row: str, col: str) -> None:
            super().__init__()
            self.matrix = matrix
            self.row = row
            self.col = col

        @property
        def control(self) -> TopologyMatrix:
            """The matrix that sent it."""
            return self.matrix

    class LayoutChanged(Message):
        """The matrix switched between full, narrow and compact (the legend says which)."""

        def __init__(self, matrix: TopologyMatrix) -> None:
            super().__init__()
            self.matrix = matrix

        @property
        def control(self) -> TopologyMatrix:
            """The matrix that sent it."""
            return self.matrix

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.grid: MatrixGrid | None = None
        self.cursor: tuple[int, int] = (0, 0)
        """``(row, column)`` of the selected cell."""
        self.layout_name: str = "full"
        self._layout: _Layout | None = None
        self._cache: dict[int, Strip] = {}
        self._styles_base: Style | None = None
        self._base_style: Style | None = None
        self._styles: dict[str, tuple[Style, bool]] = {}
        self._placeholder = "collecting…"
        self._budget: int | None = None
        self.marks: FindingMarks = FindingMarks()

    @property
    def budget(self) -> int | None:
        """Width the layout must fit (set by the pane); the widget's own width when ``None``."""
        return self._budget

    @budget.setter
    def budget(self, value: int | None) -> None:
        if value != self._budget:
            self._budget = value
            if self.grid is not None:
                self._relayout()

    @property
    def natural_width(self) -> int:
        """Columns the whole matrix needs (labels, cells, affinity, a scrollbar)."""
        if self._layout is None:
            return 0
        return self._layout.total_w + 1

    # ------------------------------------------------------------------------- data

    def set_marks(self, marks: FindingMarks) -> None:
        """Mark the devices and pairs named by failing or warning checks."""
        self.marks = marks
        self._cache.clear()
        self.refresh()

    def _device_mark(self, index: int) -> str | None:
        assert self.grid is not None
        return self.marks.device(self.grid.labels[index])

    def set_placeholder(self, text: str) -> None:
        """Text shown while there is no grid."""
        self._placeholder = text
        self.refresh()

    def set_grid(self, grid: MatrixGrid, keep: tuple[str, str] | None = None) -> None:
        """Show ``grid``; keep the cursor on the ``(row, col)`` labels when still present."""
        old = self.grid
        self.grid = grid
        row, col = self.cursor
        if keep is None and old is not None and old.labels:
            keep = (
                old.labels[min(row, len(old.labels) - 1)],
                old.labels[min(col, len(old.labels) - 1)],
            )
        if keep is not None and keep[0] in grid.labels and keep[1] in grid.labels:
            self.cursor = (grid.labels.index(keep[0]), grid.labels.index(keep[1]))
        elif old is None:
            # First matrix: start on the first pair, which says more than a diagonal cell.
            self.cursor = (0, 1) if len(grid.labels) > 1 else (0, 0)
        else:
            n = len(grid.labels)
            self.cursor = (min(row, max(0, n - 1)), min(col, max(0, n - 1)))
        self._relayout()
        self._announce()

    @property
    def selected(self) -> tuple[str, str] | None:
        """Labels of the selected ``(row, column)``."""
        if self.grid is None or not self.grid.labels:
            return None
        row, col = self.cursor
        return self.grid.labels[row], self.grid.labels[col]

    # ----------------------------------------------------------------------- layout

    def _available_width(self) -> int:
        if self._budget is not None:
            return self._budget
        width = self.scrollable_content_region.width or self.size.width
        return width if width > 0 else 80

    def _make_layout(self, name: str) -> _Layout:
        grid = self.grid
        assert grid is not None
        n = len(grid.labels)
        # Label, the finding mark, and (where cells are not centred with a margin) one blank.
        label_w = max((len(label) for label in grid.labels), default=3) + (
            1 if name == "full" else 2
        )
        col_x: list[int] = []
        col_w: list[int] = []
        header: list[list[tuple[int, str]]] = []
        x = 0
        if name == "compact":
            digits = max((len(grid.number(j)) for j in range(n)), default=1)
            tag_row: list[tuple[int, str]] = []
            rows: list[list[tuple[int, str]]] = [[] for _ in range(digits)]
            previous_kind: str | None = None
            run = 0
            for j in range(n):
                kind = grid.kinds[j]
                if j:
                    if kind != previous_kind:
                        x += 2
                        run = 0
                    elif run and run % 8 == 0:
                        x += 1
                if kind != previous_kind:
                    tag_row.append((j, kind.upper()))
                col_x.append(x)
                col_w.append(2)
                number = grid.number(j).rjust(digits)
                for d in range(digits):
                    rows[d].append((j, number[d]))
                x += 2
                run += 1
                previous_kind = kind
            header = [tag_row, *rows]
        else:
            # One width for every column, so that the headers are evenly spaced.
            widest = max(
                (len(grid.labels[j] if name == "full" else grid.short_label(j)) for j in range(n)),
                default=1,
            )
            widest = max(widest, grid.widest_text)
            width = widest + (2 if name == "full" else 1)
            for _ in range(n):
                col_x.append(x)
                col_w.append(width)
                x += width
            header = [
                [(j, grid.labels[j] if name == "full" else grid.short_label(j)) for j in range(n)]
            ]
        data_w = x
        has_affinity = any(cpu or numa for cpu, numa in grid.affinity)
        cpu_w = (
            max([len("CPU Affinity"), *(len(cpu) for cpu, _ in grid.affinity)])
            if has_affinity
            else 0
        )
        numa_w = max([4, *(len(numa) for _, numa in grid.affinity)]) if has_affinity else 0
        return _Layout(
            name,
            label_w,
            col_x,
            col_w,
            data_w,
            header,
            data_w if has_affinity else None,
            cpu_w,
            numa_w,
        )

    def _relayout(self) -> None:
        self._cache.clear()
        if self.grid is None or not self.grid.labels:
            self._layout = None
            self.virtual_size = Size(0, 0)
            self.refresh()
            return
        chosen = self._choose_layout(self._available_width())
        self._layout = chosen
        if chosen.name != self.layout_name:
            self.layout_name = chosen.name
            self.post_message(self.LayoutChanged(self))
        self.virtual_size = Size(chosen.total_w, len(chosen.header) + len(self.grid.labels))
        self.refresh()
        self.call_after_refresh(self._scroll_to_cursor)

    def _choose_layout(self, width: int) -> _Layout:
        """Full labels, then ``G0`` headers, with everything visible if one fits ``width``
        (one column kept for the vertical scrollbar); else the first whose cells fit; else
        one character per cell."""
        layouts = [self._make_layout(name) for name in LAYOUTS]
        readable = layouts[:-1]
        for layout in readable:
            if layout.total_w + 1 <= width:
                return layout
        for layout in readable:
            if layout.label_w + layout.data_w + 1 <= width:
                return layout
        return layouts[-1]

    def on_resize(self, event: events.Resize) -> None:
        """Pick the layout again for the new width."""
        if self.grid is not None:
            self._relayout()

    @property
    def header_height(self) -> int:
        """Rows of column headers."""
        return len(self._layout.header) if self._layout else 0

    # ---------------------------------------------------------------------- drawing

    def _base(self) -> Style:
        """The widget's own style, computed once until its styles change (Textual computes
        it anew at each call, walking the ancestors: once per line of a 90-row matrix)."""
        if self._base_style is None:
            self._base_style = self.rich_style
        return self._base_style

    def notify_style_update(self) -> None:
        """Styles changed (theme, focus): the base style and the drawn lines are stale."""
        super().notify_style_update()
        self._base_style = None
        self._cache.clear()

    def _cell_styles(self, base: Style) -> dict[str, tuple[Style, bool]]:
        """``base + style`` of each cell style and whether its spaces look like the base's,
        built once per base style (the widget's own, which changes with the theme) rather than
        once per cell."""
        if self._styles_base != base:
            self._styles_base = base
            self._styles = {}
        return self._styles

    def _row_strip(self, r: int) -> Strip:
        cached = self._cache.get(r)
        if cached is not None:
            return cached
        grid, layout = self.grid, self._layout
        assert grid is not None and layout is not None
        base = self._base()
        crow, ccol = self.cursor
        segments: list[Segment] = []
        label_style = base + (_AXIS_CURSOR if r == crow else _AXIS)
        severity = self._device_mark(r)
        if severity:
            label_style = label_style + _style(MARK_STYLES[severity])
        label = grid.labels[r]
        segments.append(Segment(label, label_style))
        if severity:
            segments.append(Segment(MARK_CHARS[severity], base + _style(MARK_STYLES[severity])))
        else:
            segments.append(Segment(" ", base))
        segments.append(Segment(" " * (layout.label_w - len(label) - 1), label_style))
        x = 0
        compact = layout.name == "compact"
        styles = self._cell_styles(base)
        labels = grid.labels
        marks = self.marks
        row_label = labels[r]
        col_x, col_w = layout.col_x, layout.col_w
        run: list[str] = []
        run_style: Style | None = None
        for j, cell in enumerate(grid.cells[r]):
            start = col_x[j]
            gap = " " * (start - x) if start > x else ""
            width = col_w[j]
            text = cell.code if compact else cell.text
            known = styles.get(cell.style)
            if known is None:
                combined = base + _style(cell.style)
                known = styles[cell.style] = (combined, _blank_looks_base(combined, base))
            style, mergeable = known
            pair = marks.pair(row_label, labels[j]) if marks.pairs and r != j else None
            cursor = r == crow and j == ccol
            pad = width - len(text)
            left = 0 if compact else pad // 2
            x = start + width
            if mergeable and not pair and not cursor:
                # Spaces in a foreground-only style look like the base: runs of cells of one
                # style become one segment (a 90 x 90 matrix is mostly a few classes).
                if style is not run_style:
                    if run:
                        segments.append(Segment("".join(run), run_style))
                        run.clear()
                    run_style = style
                run.append(gap + " " * left + text + " " * (pad - left))
                continue
            if run:
                segments.append(Segment("".join(run), run_style))
                run.clear()
                run_style = None
            if pair:
                style = style + _style(MARK_STYLES[pair] + " underline")
            if cursor:
                style = style + _CURSOR
            if gap or left:
                segments.append(Segment(gap + " " * left, base))
            segments.append(Segment(text, style))
            segments.append(Segment(" " * (pad - left), base))
        if run:
            segments.append(Segment("".join(run), run_style))
        length = layout.label_w + x  # every cell text and mark is one cell per character
        if layout.affinity_x is not None:
            cpu, numa = grid.affinity[r]
            tail = "  " + cpu.ljust(layout.cpu_w) + "  " + numa.center(layout.numa_w)
            segments.append(Segment(tail, base))
            length += len(tail)
        strip = Strip(segments, length).adjust_cell_length(layout.total_w, base)
        self._cache[r] = strip
        return strip

    def _header_strip(self, h: int) -> Strip:
        key = -1 - h
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        grid, layout = self.grid, self._layout
        assert grid is not None and layout is not None
        base = self._base()
        ccol = self.cursor[1]
        segments = [Segment(" " * layout.label_w, base)]
        x = 0
        compact = layout.name == "compact"
        entries = layout.header[h]
        tag_row = compact and h == 0 and len(layout.header) > 1
        for j, text in entries:
            start = layout.col_x[j]
            if start < x:
                continue  # a tag that would overlap the previous one
            if start > x:
                segments.append(Segment(" " * (start - x), base))
            width = len(text) if tag_row else layout.col_w[j]
            if tag_row:
                segments.append(Segment(text, base + _DIM))
                x = start + len(text)
                continue
            style = base + (_AXIS_CURSOR if j == ccol else _AXIS)
            severity = self._device_mark(j)
            if severity:
                style = style + _style(MARK_STYLES[severity])
            if compact:
                segments.append(Segment(text, style))
                segments.append(Segment(" " * (width - len(text)), base))
            else:
                pad = width - len(text)
                left = pad // 2
                segments.append(Segment(" " * left, base))
                segments.append(Segment(text, style))
                segments.append(Segment(" " * (pad - left), base))
            x = start + width
        if layout.affinity_x is not None and h == len(layout.header) - 1:
            if layout.data_w > x:
                segments.append(Segment(" " * (layout.data_w - x), base))
            segments.append(
                Segment(
                    "  " + "CPU Affinity".ljust(layout.cpu_w) + "  " + "NUMA".center(layout.numa_w),
                    base + _AXIS,
                )
            )
        strip = Strip(segments).adjust_cell_length(layout.total_w, base)
        self._cache[key] = strip
        return strip

    def render_line(self, y: int) -> Strip:
        """One line of the viewport: fixed header rows and label column, scrolled cells."""
        width = self.scrollable_content_region.width or self.size.width
        base = self._base()
        if self.grid is None or self._layout is None:
            if y == 0:
                return Strip([Segment(self._placeholder, base + _DIM)]).adjust_cell_length(
                    width, base
                )
            return Strip.blank(width, base)
        layout = self._layout
        scroll_x, scroll_y = self.scroll_offset
        header_h = len(layout.header)
        if y < header_h:
            full = self._header_strip(y)
        else:
            r = y - header_h + scroll_y
            if r >= len(self.grid.labels):
                return Strip.blank(width, base)
            full = self._row_strip(r)
        label = full.crop(0, layout.label_w)
        view_w = max(0, width - layout.label_w)
        first, end, more_left, more_right = self._visible_span(scroll_x, view_w)
        parts = [label]
        if more_left and y == header_h - 1:
            parts = [Strip([Segment(" " * (layout.label_w - 1) + "…", base + _DIM)])]
        parts.append(Strip.blank(first - scroll_x, base))
        parts.append(full.crop(layout.label_w + first, layout.label_w + end))
        line = Strip.join(parts).adjust_cell_length(width, base)
        if more_right and y == header_h - 1:
            line = Strip.join(
                [line.crop(0, width - 1), Strip([Segment("…", base + _DIM)])]
            ).adjust_cell_length(width, base)
        return line

    def _visible_span(self, scroll_x: int, view_w: int) -> tuple[int, int, bool, bool]:
        """The whole columns that fit the viewport: ``(start, end, more left, more right)``
        in data coordinates. A column the viewport would cut is left out (blank), and two
        cells are kept at the right edge for a blank and the ``…`` that says more follow."""
        layout = self._layout
        assert layout is not None
        right = scroll_x + view_w
        data_end = layout.total_w - layout.label_w
        more_right = data_end > right
        limit = right - 2 if more_right else right  # a blank, then the ``…``
        first = min((s for s in layout.starts if s >= scroll_x), default=scroll_x)
        ends = [e for e in layout.boundaries if first < e <= limit]
        end = max(ends) if ends else first
        return first, end, first > 0, more_right

    def render_all(self) -> list[Strip]:
        """Every line of the whole matrix (not just the viewport); used by the benchmark."""
        if self.grid is None or self._layout is None:
            return []
        return [self._header_strip(h) for h in range(self.header_height)] + [
            self._row_strip(r) for r in range(len(self.grid.labels))
        ]

    # ----------------------------------------------------------------------- cursor

    def _announce(self) -> None:
        selected = self.selected
        if selected is not None:
            self.post_message(self.CursorMoved(self, *selected))

    def move_cursor(self, row: int, col: int) -> None:
        """Select cell ``(row, col)`` (clamped) and scroll it into view."""
        if self.grid is None or not self.grid.labels:
            return
        n = len(self.grid.labels)
        new = (max(0, min(n - 1, row)), max(0, min(n - 1, col)))
        if new == self.cursor:
            return
        self.cursor = new
        self._cache.clear()
        self.refresh()
        self._scroll_to_cursor()
        self._announce()

    def select(self, row_label: str, col_label: str) -> None:
        """Select the cell of two labels (no-op when one is not shown)."""
        if self.grid is None:
            return
        if row_label in self.grid.labels and col_label in self.grid.labels:
            self.move_cursor(self.grid.labels.index(row_label), self.grid.labels.index(col_label))

    def action_move(self, dx: int, dy: int) -> None:
        """Move the cursor by ``dx`` columns and ``dy`` rows."""
        row, col = self.cursor
        self.move_cursor(row + dy, col + dx)

    def action_jump(self, where: str) -> None:
        """Jump to the first or last cell of the row."""
        row, _ = self.cursor
        if self.grid is None:
            return
        self.move_cursor(row, 0 if where == "home" else len(self.grid.labels) - 1)

    def _scroll_to_cursor(self) -> None:
        layout = self._layout
        if layout is None or self.grid is None:
            return
        row, col = self.cursor
        region = self.scrollable_content_region
        view_w = max(1, region.width - layout.label_w)
        view_h = max(1, region.height - len(layout.header))
        scroll_x, scroll_y = self.scroll_offset
        x0 = layout.col_x[col]
        x1 = x0 + layout.col_w[col]
        if x1 < layout.total_w - layout.label_w:
            view_w = max(1, view_w - 2)  # columns follow: the edge keeps a blank and the ``…``
        new_x, new_y = scroll_x, scroll_y
        if x0 < scroll_x:
            new_x = x0
        elif x1 > scroll_x + view_w:
            new_x = x1 - view_w
        if row < scroll_y:
            new_y = row
        elif row >= scroll_y + view_h:
            new_y = row - view_h + 1
        if (new_x, new_y) != (scroll_x, scroll_y):
            self.scroll_to(new_x, new_y, animate=False, immediate=True)

    def cell_at(self, x: int, y: int) -> tuple[int | None, int | None]:
        """``(row, column)`` under viewport offset ``(x, y)``; ``None`` for an axis."""
        layout = self._layout
        if layout is None or self.grid is None:
            return None, None
        scroll_x, scroll_y = self.scroll_offset
        header_h = len(layout.header)
        row = None
        if y >= header_h:
            r = y - header_h + scroll_y
            row = r if r < len(self.grid.labels) else None
        col = None
        if x >= layout.label_w:
            data_x = x - layout.label_w + scroll_x
            for j, start in enumerate(layout.col_x):
                if start <= data_x < start + layout.col_w[j]:
                    col = j
                    break
        return row, col

    def on_click(self, event: events.Click) -> None:
        """Select the clicked cell (a header selects its column, a label its row)."""
        offset = event.get_content_offset(self)
        if offset is None:
            return
        row, col = self.cell_at(offset.x, offset.y)
        current_row, current_col = self.cursor
        if row is None and col is None:
            return
        self.focus()
        self.move_cursor(current_row if row is None else row, current_col if col is None else col)

"""Screen space and cut text on the bundled samples at the terminal sizes users run.

Pilot tests that measure widget regions and read the lines the matrix draws: the 72-GPU matrix
fills a tall terminal, no matrix header or cell is shown cut, the columns of one layout are one
width, and wrapped findings and notes continue under their own text.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import DataTable, Static

from pcidoc.samples import default_demo, list_samples
from pcidoc.tui.widgets.topology_matrix import MARK_CHARS, TopologyMatrix
from tests.tui.conftest import demo_app, export_as, make_app, plain, settle, wait_until
from tests.tui.machines import no_gpu_machine

SIZES = [(80, 24), (100, 30), (120, 40), (130, 40), (160, 48), (220, 60)]
SAMPLE_NAMES = [sample.name for sample in list_samples()]


def _allowed_words(matrix: TopologyMatrix) -> set[str]:
    """Every whole word the matrix may show: labels (with a finding mark), headers, cells."""
    grid = matrix.grid
    assert grid is not None
    words = {"…", "GPU", "NIC", "CPU", "Affinity", "NUMA"}
    for index, label in enumerate(grid.labels):
        words.add(label)
        words.update(label + mark for mark in MARK_CHARS.values())
        words.add(grid.short_label(index))
        words.update(grid.number(index))  # compact headers: one digit per row
    for row in grid.cells:
        for cell in row:
            words.update((cell.text, cell.code))
    for cpu, numa in grid.affinity:
        words.update((cpu, numa))
    return words


@pytest.mark.parametrize("sample", SAMPLE_NAMES)
async def test_matrix_never_shows_a_cut_header_label_or_cell(sample: str) -> None:
    app = demo_app(sample)
    async with app.run_test(size=SIZES[0]) as pilot:
        await settle(pilot)
        matrix = app.main.query_one(TopologyMatrix)
        allowed = _allowed_words(matrix)
        for width, height in SIZES:
            await pilot.resize_terminal(width, height)
            await settle(pilot)
            shown = [matrix.render_line(y).text for y in range(matrix.size.height)]
            for line in shown:
                cut = [word for word in line.split() if word not in allowed]
                assert not cut, f"{sample} at {width}x{height}: {cut} in {line!r}"
            layout = matrix._layout
            assert layout is not None
            if layout.name != "compact":
                # Evenly spaced headers: every column of a layout has the same width.
                assert len(set(layout.col_w)) == 1, (sample, width, layout.col_w)


async def test_a_wide_terminal_shows_the_whole_16_gpu_matrix_with_its_cpu_affinity() -> None:
    # 16 GPUs + 8 NICs: 62 % of 220 columns fitted the cells but not the CPU affinity and NUMA
    # columns, which the viewport then cut ("CPU Affi"); the detail needs far less than 38 %.
    app = demo_app("synthetic-16gpu")
    async with app.run_test(size=(220, 60)) as pilot:
        await settle(pilot)
        matrix = app.main.query_one(TopologyMatrix)
        header = matrix.render_line(matrix.header_height - 1).text
        assert "CPU Affinity" in header and "NUMA" in header
        assert "G15" in header and "…" not in header
        assert "0-47" in matrix.render_line(matrix.header_height).text
        assert app.main.query_one("#topo-detail").region.width >= 56


@pytest.mark.parametrize("size", [(220, 60), (160, 48)])
async def test_72_gpu_matrix_fills_the_left_column_down_to_the_findings(
    size: tuple[int, int],
) -> None:
    app = demo_app("synthetic-72gpu")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        pane = app.main.topology
        left = pane.query_one("#topo-left")
        matrix = pane.matrix
        legend = pane.query_one("#topo-legend", Static)
        findings = pane.query_one("#topo-findings", Static)
        assert findings.display
        # Matrix, legend and findings stack without a gap and reach the bottom of the column.
        assert legend.region.y == matrix.region.bottom
        assert findings.region.y == legend.region.bottom
        assert left.region.bottom - findings.region.bottom <= 1
        # The matrix got those rows: more of its 90 rows are on screen than the old 75 %.
        assert matrix.region.height > int(left.region.height * 0.75)
        # And the findings are whole (the matrix did not push them off the column).
        assert findings.region.bottom <= left.region.bottom


async def test_a_small_matrix_keeps_its_legend_right_under_it() -> None:
    app = demo_app("autodl-2080ti-2gpu")
    async with app.run_test(size=(220, 60)) as pilot:
        await settle(pilot)
        pane = app.main.topology
        matrix = pane.matrix
        legend = pane.query_one("#topo-legend", Static)
        assert matrix.region.height <= matrix.virtual_size.height + 1
        assert legend.region.y == matrix.region.bottom


async def test_wrapped_findings_and_notes_continue_under_their_own_text() -> None:
    app = demo_app("synthetic-72gpu")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        pane = app.main.topology
        for selector in ("#topo-findings", "#topo-notes"):
            widget = pane.query_one(selector, Static)
            region = widget.region.reset_offset
            lines = [strip.text.rstrip() for strip in widget.render_lines(region)]
            lines = [line for line in lines if line.strip()]
            wrapped = 0
            indent = None
            for line in lines:
                body = line.lstrip()
                if body[:1] in ("!", "✗", "●", "•"):
                    # The text after the mark starts here; its wrapped lines start there too.
                    indent = len(line) - len(body) + 2
                elif indent is not None:
                    wrapped += 1
                    assert line[:indent].strip() == "" and line[indent] != " ", (selector, line)
            assert wrapped, f"{selector}: nothing wrapped at this width"


@pytest.mark.parametrize(
    ("sample", "size", "left"),
    [
        ("a100-sxm4-8gpu-nvswitch", (160, 48), True),  # room under the findings
        ("synthetic-72gpu", (160, 48), False),  # the matrix needs every row
        ("a100-sxm4-8gpu-nvswitch", (80, 24), False),  # stacked: notes under the detail
    ],
)
async def test_notable_facts_go_under_the_findings_when_the_left_column_has_room(
    sample: str, size: tuple[int, int], left: bool
) -> None:
    app = demo_app(sample)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        pane = app.main.topology
        under_findings = pane.query_one("#topo-notes-left", Static)
        in_detail = pane.query_one("#topo-notes", Static)
        assert under_findings.display is left and in_detail.display is not left
        shown = under_findings if left else in_detail
        assert "Notable" in shown.render_lines(shown.region.reset_offset)[1].text
        if left:
            findings = pane.query_one("#topo-findings", Static)
            column = pane.query_one("#topo-left")
            assert under_findings.region.y == findings.region.bottom
            assert under_findings.region.bottom <= column.region.bottom


async def test_no_gpu_host_pane_puts_both_machines_side_by_side_on_a_wide_terminal() -> None:
    # This machine (no GPU) and the demo on display: one column each from 120 columns, so
    # the demo's facts are not pushed below the screen while half of it stays blank.
    app = make_app(collect=no_gpu_machine)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        pane = app.main.host
        this = pane.query_one("#host-facts", Static)
        shown = pane.query_one("#host-displayed", Static)
        assert "This machine (live)" in plain(this) and "dev-laptop" in plain(this)
        assert "Host of the machine on display" in plain(shown)
        assert shown.display and shown.region.y == this.region.y
        assert shown.region.x >= this.region.right
        assert shown.region.right <= pane.region.right
        await pilot.resize_terminal(100, 40)
        await settle(pilot)
        assert shown.region.x == this.region.x and shown.region.y > this.region.bottom


async def test_a_single_machine_uses_the_host_pane_alone() -> None:
    app = demo_app("autodl-2080ti-2gpu")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        pane = app.main.host
        assert not pane.query_one("#host-displayed").display
        assert "autodl-2080ti-2gpu" in plain(pane.query_one("#host-facts", Static))


@pytest.mark.parametrize("collect", [True, False], ids=["no-gpu", "default-demo"])
async def test_host_pane_shows_its_scrollbar_on_first_display_at_80x24(collect: bool) -> None:
    """Issue 12 said the Host pane's scrollbar was hidden at first; it could not be reproduced
    (Pilot, snapshots, tmux). This keeps it so: the content overflows and the bar is drawn."""
    app = make_app(collect=no_gpu_machine) if collect else demo_app(default_demo())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await pilot.pause()
        pane = app.main.host
        assert pane.max_scroll_y > 0
        assert pane.show_vertical_scrollbar
        bar = pane.vertical_scrollbar.region
        assert bar.width >= 1 and bar.height > 0
        assert app.screen.region.contains_region(bar)
        assert pane.region.right - 1 <= bar.right <= pane.region.right  # at the right edge


async def _export_with_toasts(pilot, app) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot)
    await export_as(pilot)
    await wait_until(pilot, lambda: bool(app.screen.query("Toast")))


async def test_export_notification_keeps_the_file_name_on_one_line_at_80_columns(
    tmp_path,  # type: ignore[no-untyped-def]
) -> None:
    app = demo_app("autodl-2080ti-2gpu", export_dir=tmp_path)
    app.show_toasts = True
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await _export_with_toasts(pilot, app)
        toast = app.screen.query_one("Toast")
        lines = [strip.text.strip() for strip in toast.render_lines(toast.region.reset_offset)]
        name = next(p.name for p in tmp_path.iterdir() if p.suffix == ".md")[: -len(".md")]
        assert any(f"{name}.{{md,html,json,svg}}" in line for line in lines), lines
        assert toast.region.right <= 80


async def test_a_dialog_opened_after_an_export_is_not_covered_by_its_notification(
    tmp_path,  # type: ignore[no-untyped-def]
) -> None:
    app = demo_app("autodl-2080ti-2gpu", export_dir=tmp_path)
    app.show_toasts = True
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await _export_with_toasts(pilot, app)
        await pilot.press("e")
        await pilot.pause()
        await pilot.pause()
        assert type(app.screen).__name__ == "ExportScreen"
        drawn = [
            toast
            for screen in app.screen_stack
            for rack in screen.query("ToastRack")
            if rack.display
            for toast in rack.query("Toast")
        ]
        assert not drawn
        assert len(app.notices) == 1  # still remembered


@pytest.mark.parametrize("width", [80, 100, 160])
async def test_links_note_and_legend_wrap_between_phrases(width: int) -> None:
    app = demo_app("synthetic-16gpu")
    async with app.run_test(size=(width, 40)) as pilot:
        await settle(pilot)
        widget = app.main.topology.query_one("#topo-legend", Static)
        legend = [s.text.strip() for s in widget.render_lines(widget.region.reset_offset)]
        assert any("between host bridges, same NUMA node" in line for line in legend), legend
        await pilot.press("2")
        await settle(pilot)
        note = app.main.query_one("#links-note", Static)
        lines = [s.text.strip() for s in note.render_lines(note.region.reset_offset)]
        phrases = [
            "static values from the capture — live counters need a live GPU machine.",
            "TX, RX in GB/s; NVL: NVLinks up of those wired.",
            "Util: busier direction ÷ raw ceiling of the current PCIe link.",
            "Errors: totals since boot.",
        ]
        for line in filter(None, lines):
            rest = line
            for phrase in phrases:
                rest = rest.replace(phrase, "")
            assert not rest.strip(), f"a phrase broken at {width} columns: {line!r}"


async def test_the_legend_follows_the_matrix_layout_when_the_terminal_is_resized() -> None:
    # Compact (one character per cell) at 160 columns, G0 headers at 220: the legend spells
    # out the one-character codes exactly while they are on screen.
    app = demo_app("synthetic-16gpu")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        matrix = app.main.topology.matrix
        legend = app.main.topology.query_one("#topo-legend", Static)
        assert matrix.layout_name == "compact"
        assert "N=NV12" in plain(legend) and "one character per cell" in plain(legend)
        await pilot.resize_terminal(220, 60)
        await settle(pilot)
        assert matrix.layout_name != "compact"
        assert "N=NV12" not in plain(legend) and "one character per cell" not in plain(legend)
        await pilot.resize_terminal(160, 48)
        await settle(pilot)
        assert matrix.layout_name == "compact" and "N=NV12" in plain(legend)


@pytest.mark.parametrize("keys", [("end",), ("l",) * 40, ("end", "home")])
async def test_the_cursor_cell_stays_on_screen_beside_the_ellipsis(keys: tuple[str, ...]) -> None:
    # 72 GPUs + 18 NICs at 80 columns: the last two columns of the viewport hold a blank and
    # the "…" that says more columns follow; scrolling to the cursor must leave them out.
    app = demo_app("synthetic-72gpu")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        matrix = app.main.query_one(TopologyMatrix)
        await pilot.press(*keys)
        await pilot.pause()
        row, _ = matrix.cursor
        layout = matrix._layout
        assert layout is not None
        y = matrix.header_height + row - matrix.scroll_offset.y
        x = 0
        cursor_drawn = False
        for segment in matrix.render_line(y):
            style = segment.style
            if x >= layout.label_w and segment.text.strip() and style and style.reverse:
                cursor_drawn = True
            x += len(segment.text)
        assert cursor_drawn, f"cursor {matrix.selected} not drawn after {keys}"


def _fits(table: DataTable[Any]) -> bool:
    """Every column of ``table`` is on screen, none cut at the right edge."""
    need = sum(column.get_render_width(table) for column in table.columns.values())
    return need <= table.scrollable_content_region.width


@pytest.mark.parametrize(
    "sample", ["synthetic-16gpu", "synthetic-72gpu", "a100-sxm4-8gpu-nvswitch"]
)
async def test_the_links_tables_are_not_cut(sample: str) -> None:
    # "NVL TX G" at 80 columns; the NVLink table's Remote column "Re"/"swi" at 120.
    app = demo_app(sample, replay_demos=True)
    for size in ((80, 24), (120, 40)):
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await pilot.press("2")
            await settle(pilot)
            app.take_sample()
            await pilot.pause(0.05)
            app.take_sample()
            await pilot.pause()
            assert _fits(app.main.query_one("#gpu-table", DataTable)), size
            if size[0] >= 120:
                nvlinks = app.main.query_one("#nvlink-table", DataTable)
                assert not nvlinks.display or _fits(nvlinks), size
        app = demo_app(sample, replay_demos=True)


@pytest.mark.parametrize(("width", "wide"), [(119, False), (120, True)])
async def test_the_host_pane_goes_side_by_side_from_120_columns(width: int, wide: bool) -> None:
    app = demo_app("autodl-2080ti-2gpu")
    async with app.run_test(size=(width, 40)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        assert app.main.host.has_class("-wide") is wide

"""The live throughput chart: a fixed time window from the first sample, round ticks, units."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pcidoc.tui.chart_scale import (
    WINDOW_S,
    in_window,
    nice_step,
    thin_ticks,
    time_axis,
    value_axis,
)
from tests.tui.conftest import make_app, settle
from tests.tui.machines import hgx_live


@pytest.mark.parametrize(
    ("peak", "top", "labels"),
    [
        (None, 1.0, ["0", "0.25", "0.5", "0.75", "1"]),
        (0.93, 1.0, ["0", "0.25", "0.5", "0.75", "1"]),
        (1.34, 1.5, ["0", "0.5", "1", "1.5"]),
        (12.2, 15.0, ["0", "5", "10", "15"]),
        (24.0, 30.0, ["0", "10", "20", "30"]),
        (175.1, 200.0, ["0", "50", "100", "150", "200"]),
    ],
)
def test_value_axis_starts_at_zero_with_round_ticks(
    peak: float | None, top: float, labels: list[str]
) -> None:
    got_top, positions, got_labels = value_axis(peak)
    assert got_top == pytest.approx(top)
    assert positions[0] == 0 and positions[-1] == pytest.approx(top)
    assert got_labels == labels
    assert got_top >= (peak or 0)


def test_nice_steps_are_1_2_2_5_5_times_a_power_of_ten() -> None:
    for span in (0.37, 1.0, 3.3, 17.0, 420.0, 9999.0):
        step = nice_step(span)
        mantissa = step / 10 ** int(f"{step:e}".split("e")[1])
        assert mantissa in (1.0, 2.0, 2.5, 5.0), (span, step)


def test_time_axis_is_fixed_and_ends_now() -> None:
    positions, labels = time_axis(60)
    assert positions == [-60, -45, -30, -15, 0]
    assert labels == ["-60s", "-45s", "-30s", "-15s", "now"]
    assert in_window([-90.0, -59.0, -1.0, 0.0], [1, 2, 3, 4]) == ([-59.0, -1.0, 0.0], [2, 3, 4])


async def _links_after_two_samples(app: Any, pilot: Any, box: Any) -> None:
    """The Links pane open with two counter samples one second apart (rates for its chart)."""
    await settle(pilot)
    await pilot.press("2")
    app.take_sample()
    await pilot.pause()
    box.advance(1.0)
    app.take_sample()
    await pilot.pause()


async def test_chart_keeps_its_axes_from_the_first_samples() -> None:
    box = hgx_live()
    app = make_app(collect=lambda: box.capture, sampler_factory=box.sampler)
    async with app.run_test(size=(160, 48)) as pilot:
        await _links_after_two_samples(app, pilot, box)
        chart = app.main.query_one("#link-chart")
        plt = chart.plt  # type: ignore[attr-defined]
        plt.plotsize(100, 20)
        canvas = re.sub(r"\x1b\[[0-9;]*m", "", plt.build())
        # the whole window is on the axis after two samples, not -1..1 around them
        for label in ("-60s", "-45s", "-30s", "-15s", "now"):
            assert label in canvas, canvas
        assert "0.51" not in canvas and "0.93" not in canvas
        assert "GB/s" in canvas and "seconds before now" in canvas
        assert WINDOW_S == 60


def test_ticks_thin_out_on_a_short_axis() -> None:
    _, positions, labels = value_axis(3.0)
    assert labels == ["0", "1", "2", "3"]
    # three rows cannot hold four ticks: a plot would round two onto one row
    assert thin_ticks(positions, labels, 3)[1] == ["0", "3"]
    assert thin_ticks(positions, labels, 6)[1] == ["0", "1", "2", "3"]
    _, positions, labels = value_axis(175.1)
    assert thin_ticks(positions, labels, 4)[1] == ["0", "100", "200"]


async def test_a_chart_without_room_says_so_instead_of_an_upside_down_axis() -> None:
    # At 80x24 with the sort line shown, the chart had 5 rows: "0" above "15" and no line.
    from rich.text import Text

    from pcidoc.tui.widgets.link_chart import MIN_PLOT_ROWS, PLOT_CHROME_ROWS

    box = hgx_live()
    app = make_app(collect=lambda: box.capture, sampler_factory=box.sampler)
    async with app.run_test(size=(80, 20)) as pilot:
        await _links_after_two_samples(app, pilot, box)
        chart = app.main.query_one("#link-chart")
        height = chart.size.height
        assert 0 < height < PLOT_CHROME_ROWS + MIN_PLOT_ROWS, height
        drawn = chart.render()
        assert isinstance(drawn, Text) and "taller terminal" in drawn.plain
        await pilot.resize_terminal(120, 48)
        await pilot.pause()
        assert chart.size.height >= PLOT_CHROME_ROWS + MIN_PLOT_ROWS
        assert "taller terminal" not in chart.render().plain  # type: ignore[union-attr]

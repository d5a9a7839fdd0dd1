"""History chart of a GPU's PCIe TX/RX and one NVLink's TX/RX (textual-plotext).

Imported only when live counters arrive, so a ``--demo`` start never loads plotext.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import RenderResult
from textual_plotext import PlotextPlot

from pcidoc.tui.chart_scale import WINDOW_S, in_window, thin_ticks, time_axis, value_axis

PLOT_CHROME_ROWS = 5
"""Rows of the chart that are not the plot area: title, frame top, x axis, tick labels, label."""

MIN_PLOT_ROWS = 3
"""Fewer rows of plot area than this draw an upside-down axis (``0`` above ``15``) and no
line: the chart then says it needs a taller terminal instead."""

SERIES_COLOURS: dict[str, str] = {
    "PCIe TX": "cyan",
    "PCIe RX": "blue+",
    "NVLink TX": "green",
    "NVLink RX": "yellow",
}


class LinkChart(PlotextPlot):
    """Throughput over the last :data:`WINDOW_S` seconds, in GB/s.

    The axes are fixed from the first sample on: time from ``-60s`` to ``now`` with round ticks,
    throughput from 0 to a round top with round ticks, so a few samples sit at the right edge
    instead of stretching over an axis from -1 to 1.
    """

    def plot(self, title: str, series: dict[str, tuple[Sequence[float], Sequence[float]]]) -> None:
        """Replace the plot with ``series``: name -> (seconds before now, GB/s)."""
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.xlabel("seconds before now")
        plt.ylabel("GB/s")
        kept = {name: in_window(list(xs), list(ys)) for name, (xs, ys) in series.items()}
        self._peak = max((max(ys) for _, ys in kept.values() if ys), default=None)
        x_ticks, x_labels = time_axis(WINDOW_S)
        plt.xlim(-WINDOW_S, 0)
        plt.xticks(x_ticks, x_labels)
        self._set_value_axis()
        most = 0
        for name, (xs, ys) in kept.items():
            if not xs:
                continue
            most = max(most, len(xs))
            plt.plot(
                xs,
                ys,
                label=f"{name} GB/s",
                color=SERIES_COLOURS.get(name, "white"),
                marker="braille",
            )
        if most < 2:
            title += " (one reading so far: a line needs two)"
        plt.title(title)
        self.refresh()

    _peak: float | None = None

    def _set_value_axis(self) -> None:
        """Round ticks from 0 to a round top, thinned to the rows the plot has now."""
        top, ticks, labels = value_axis(self._peak)
        rows = self.size.height - PLOT_CHROME_ROWS if self.size.height else len(ticks) * 2
        ticks, labels = thin_ticks(ticks, labels, rows)
        self.plt.ylim(0, top)
        self.plt.yticks(ticks, labels)

    def render(self) -> RenderResult:
        """Fit the value axis's ticks to the current height, then draw (or say why not)."""
        height = self.size.height
        if height and height - PLOT_CHROME_ROWS < MIN_PLOT_ROWS:
            return Text(
                f"chart hidden: it needs {PLOT_CHROME_ROWS + MIN_PLOT_ROWS} rows and has "
                f"{height} here; a taller terminal shows it",
                style="dim",
            )
        self._set_value_axis()
        return super().render()

"""History chart of a GPU's PCIe TX/RX and one NVLink's TX/RX (textual-plotext).

Imported only when live counters arrive, so a ``--demo`` start never loads plotext.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual_plotext import PlotextPlot

SERIES_COLOURS: dict[str, str] = {
    "PCIe TX": "cyan",
    "PCIe RX": "magenta",
    "NVLink TX": "green",
    "NVLink RX": "yellow",
}


class LinkChart(PlotextPlot):
    """Throughput over the last samples, GB/s against seconds before now."""

    def plot(self, title: str, series: dict[str, tuple[Sequence[float], Sequence[float]]]) -> None:
        """Replace the plot with ``series``: name -> (seconds before now, GB/s)."""
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(title)
        plt.xlabel("seconds ago")
        plt.ylabel("GB/s")
        drawn = False
        for name, (xs, ys) in series.items():
            if len(xs) >= 1:
                plt.plot(
                    list(xs),
                    list(ys),
                    label=name,
                    color=SERIES_COLOURS.get(name, "white"),
                    marker="braille",
                )
                drawn = True
        if not drawn:
            plt.title(title + " (waiting for a second sample)")
        self.refresh()

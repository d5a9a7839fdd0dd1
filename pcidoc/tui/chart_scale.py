"""Axes of the live throughput chart: a fixed time window and round ticks with units.

Kept free of plotext so that it is cheap to import and to test. The chart shows the same window
from its first sample on (the newest sample at "now", the window's start at the left edge), so a
few samples do not stretch into an axis from -1 to 1, and the value axis starts at zero with a
round top and round ticks (0, 5, 10, 15 GB/s), not 0.51/0.93/1.34.
"""

from __future__ import annotations

import math

WINDOW_S = 60.0
"""Seconds of history the chart shows, from its first sample on."""

MIN_TOP_GBPS = 1.0
"""Smallest top of the value axis (an idle link still gets a readable 0-1 GB/s axis)."""

_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)


def nice_step(span: float, ticks: int = 4) -> float:
    """A round step (1, 2, 2.5 or 5 × 10^k) that cuts ``span`` into about ``ticks`` parts."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max(1, ticks)
    scale = 10.0 ** math.floor(math.log10(raw))
    for step in _STEPS:
        if raw <= step * scale + 1e-12:
            return step * scale
    return 10.0 * scale


def value_axis(peak: float | None, ticks: int = 4) -> tuple[float, list[float], list[str]]:
    """Top of the value axis, its tick positions and their labels, from the peak value.

    The axis always starts at 0; its top is the first round tick at or above ``peak`` (at
    least :data:`MIN_TOP_GBPS`).
    """
    peak = max(MIN_TOP_GBPS, peak or 0.0)
    step = nice_step(peak, ticks)
    top = step * math.ceil(peak / step - 1e-9)
    count = round(top / step)
    positions = [step * n for n in range(count + 1)]
    return top, positions, [_tick_label(p, step) for p in positions]


def _tick_label(value: float, step: float) -> str:
    """``0``, ``2.5``, ``0.25``: as many decimals as the step needs, no trailing zeros."""
    decimals = 0 if step >= 1 else 3
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


_TIME_STEPS = (1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0)


def time_axis(window: float = WINDOW_S) -> tuple[list[float], list[str]]:
    """Tick positions (seconds before now, negative) and labels for the time axis."""
    step = next((s for s in _TIME_STEPS if s >= window / 4), _TIME_STEPS[-1])
    count = math.floor(window / step + 1e-9)
    positions = [-step * n if n else 0.0 for n in range(count, -1, -1)]
    labels = ["now" if n == 0 else f"-{step * n:g}s" for n in range(count, -1, -1)]
    return positions, labels


def in_window(
    xs: list[float], ys: list[float], window: float = WINDOW_S
) -> tuple[list[float], list[float]]:
    """The points no older than the window (``xs`` are seconds before now, ≤ 0)."""
    kept = [(x, y) for x, y in zip(xs, ys, strict=False) if -window <= x <= 0]
    return [x for x, _ in kept], [y for _, y in kept]


def thin_ticks(
    positions: list[float], labels: list[str], rows: int
) -> tuple[list[float], list[str]]:
    """Every k-th tick so that two ticks are at least two rows apart on a ``rows``-high axis.

    Keeps 0 and the top; a tick per row or closer would make the plot round two ticks onto one
    row and show either one.
    """
    intervals = len(positions) - 1
    allowed = max(1, rows // 2)
    for k in range(1, intervals + 1):
        if intervals % k == 0 and intervals // k <= allowed:
            return positions[::k], labels[::k]
    return [positions[0], positions[-1]], [labels[0], labels[-1]]

"""Counter traces replayed on demo machines, so the Links pane and its chart move without a GPU.

A demo machine is a capture: one moment, no counters that move. To show what the Links pane does
on a live machine, ``pcidoc --demo`` replays a *counter trace*: per-second PCIe and NVLink rates
of every GPU, looped. The sampler below turns the trace back into cumulative counters, exactly
what the live sampler reads from NVML, so the pane computes rates the same way.

No trace recorded on a real GPU ships with pcidoc yet (none was available), so the trace is
**synthetic**: :func:`synthetic_trace` draws a data-parallel training loop on the demo's own
links (a host→GPU batch load, compute, then the gradient all-reduce over NVLink or PCIe), at
shares of each link's ceiling. It is labelled SYNTHETIC everywhere it is shown; it is never a
measurement and never reaches the doctor, a report or an export.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pcidoc.model.capture import Capture
from pcidoc.model.counters import CounterSample, GpuCounters, NvLinkCounter

SYNTHETIC_LABEL = "SYNTHETIC counter trace (replayed, not measured)"


@dataclass(frozen=True)
class Frame:
    """One second of a trace for one GPU: rates in bytes per second."""

    pcie_tx: float
    pcie_rx: float
    nvlink_tx: dict[int, float] = field(default_factory=dict)
    nvlink_rx: dict[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class CounterTrace:
    """Per-second frames of every GPU, replayed in a loop.

    Attributes:
        label: What the trace is, shown on screen (SYNTHETIC for generated traces).
        synthetic: True for a generated trace.
        frames: GPU index → one frame per second (all GPUs have the same length).
        link: GPU index → (PCIe generation, width) reported with every sample.
        nvlink_up: GPU index → NVLink number → up (the capture's states, kept as they are).
    """

    label: str
    synthetic: bool
    frames: dict[int, list[Frame]]
    link: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)
    nvlink_up: dict[int, dict[int, bool]] = field(default_factory=dict)

    @property
    def seconds(self) -> int:
        """Length of one loop."""
        return min((len(f) for f in self.frames.values()), default=0)


# Shares of each link's ceiling in the phases of one 8-second training step.
_STEP: tuple[tuple[str, float], ...] = (
    ("load", 0.45),
    ("load", 0.30),
    ("compute", 0.02),
    ("compute", 0.01),
    ("compute", 0.02),
    ("compute", 0.01),
    ("allreduce", 0.55),
    ("allreduce", 0.35),
)

_FALLBACK_PCIE_GBPS = 15.75
"""Gen3 x16 raw per direction, when the capture does not have the negotiated link."""

_FALLBACK_NVLINK_GBPS = 25.0


def synthetic_trace(capture: Capture, steps: int = 4) -> CounterTrace:
    """A generated trace of a data-parallel training loop on ``capture``'s GPUs and links.

    Each GPU is offset by its position so the chart and the table are not in lock-step. Rates
    stay below each link's ceiling as the doctor computes it (:mod:`pcidoc.model.linkmodel`:
    the PCIe link's raw rate, the NVLink per-link rate).
    """
    from pcidoc.model.linkmodel import nvlink_per_link
    from pcidoc.tui.describe import gpu_pcie_ceiling

    frames: dict[int, list[Frame]] = {}
    link: dict[int, tuple[int | None, int | None]] = {}
    nvlink_up: dict[int, dict[int, bool]] = {}
    length = len(_STEP) * steps
    for position, gpu in enumerate(capture.gpus):
        pcie_gbps, _ = gpu_pcie_ceiling(gpu)
        pcie = (pcie_gbps or _FALLBACK_PCIE_GBPS) * 1e9
        up = [nv for nv in gpu.nvlinks if nv.state != "down"]
        per_link, *_ = nvlink_per_link(gpu)  # the doctor's per-link rate (link model)
        nvlink = (per_link or _FALLBACK_NVLINK_GBPS) * 1e9
        series: list[Frame] = []
        for second in range(length):
            phase, share = _STEP[(second + position) % len(_STEP)]
            wobble = 1.0 + 0.08 * (((second * 7 + position * 3) % 5) - 2) / 2
            if phase == "load":
                series.append(Frame(pcie_tx=0.02 * pcie, pcie_rx=share * wobble * pcie))
            elif phase == "allreduce" and up:
                tx = {nv.link: share * wobble * nvlink for nv in up}
                series.append(
                    Frame(pcie_tx=0.01 * pcie, pcie_rx=0.01 * pcie, nvlink_tx=tx, nvlink_rx=tx)
                )
            elif phase == "allreduce":
                value = share * wobble * pcie
                series.append(Frame(pcie_tx=value, pcie_rx=value))
            else:
                series.append(Frame(pcie_tx=share * pcie, pcie_rx=share * pcie))
        frames[gpu.index] = series
        link[gpu.index] = (gpu.pcie.current_gen, gpu.pcie.current_width)
        nvlink_up[gpu.index] = {nv.link: nv.state != "down" for nv in gpu.nvlinks}
    return CounterTrace(SYNTHETIC_LABEL, True, frames, link, nvlink_up)


def _cumulative(values: list[float], elapsed: float) -> float:
    """Bytes moved after ``elapsed`` seconds of a looped per-second rate list."""
    if not values:
        return 0.0
    period = len(values)
    whole, rest = divmod(elapsed, period)
    full = int(rest)
    done = whole * sum(values) + sum(values[:full])
    return done + (rest - full) * values[full % period]


class TraceReplaySampler:
    """Reads a :class:`CounterTrace` as if it were NVML: cumulative counters at each call.

    Replays and AER counters stay at zero and NVLinks keep the capture's states: a generated
    trace must not invent errors or repair links. Same interface as
    :class:`pcidoc.collect.counters.CounterSampler`.

    Args:
        trace: The trace to replay (looped).
        clock: Monotonic clock in seconds (tests pass a manual one).
    """

    def __init__(self, trace: CounterTrace, clock: Callable[[], float] | None = None) -> None:
        self.trace = trace
        self._clock = clock or time.monotonic
        self._start = self._clock()

    @property
    def label(self) -> str:
        """What is replayed (shown by the Links pane)."""
        return self.trace.label

    def sample(self) -> CounterSample:
        """Cumulative counters of every GPU now."""
        now = self._clock()
        elapsed = max(0.0, now - self._start)
        gpus = []
        for index, frames in self.trace.frames.items():
            states = self.trace.nvlink_up.get(index, {})
            nvlinks = tuple(
                NvLinkCounter(
                    link=k,
                    tx_bytes=int(_cumulative([f.nvlink_tx.get(k, 0.0) for f in frames], elapsed)),
                    rx_bytes=int(_cumulative([f.nvlink_rx.get(k, 0.0) for f in frames], elapsed)),
                    up=up,
                    errors=0,
                )
                for k, up in sorted(states.items())
            )
            gen, width = self.trace.link.get(index, (None, None))
            gpus.append(
                GpuCounters(
                    index=index,
                    pcie_tx_bytes=int(_cumulative([f.pcie_tx for f in frames], elapsed)),
                    pcie_rx_bytes=int(_cumulative([f.pcie_rx for f in frames], elapsed)),
                    replay_count=0,
                    aer_correctable=0,
                    link_gen=gen,
                    link_width=width,
                    nvlinks=nvlinks,
                )
            )
        return CounterSample(t=now, gpus=tuple(gpus))


__all__ = ["SYNTHETIC_LABEL", "CounterTrace", "Frame", "TraceReplaySampler", "synthetic_trace"]

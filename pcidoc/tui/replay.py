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

from pcidoc._record import field, record
from pcidoc.model.capture import Capture
from pcidoc.model.counters import CounterSample, GpuCounters, NvLinkCounter

SYNTHETIC_LABEL = "SYNTHETIC counter trace (replayed, not measured)"


@record(frozen=True)
class Frame:
    """One second of a trace for one GPU: rates in bytes per second."""

    pcie_tx: float
    pcie_rx: float
    nvlink_tx: dict[int, float] = field(default_factory=dict)
    nvlink_rx: dict[int, float] = field(default_factory=dict)


@record(frozen=True)
class CounterTrace:
    """Per-second frames of every GPU, replayed in a loop.

    Attributes:
        label: What the trace is, shown on screen (SYNTHETIC for generated traces).
        synthetic: True for a generated trace.
        frames: GPU index → one frame per second (all GPUs have the same length).
        link: GPU index → (PCIe generation, width) reported with every sample.
        nvlink_up: GPU index → NVLink number → up (the capture's states, kept as they are).
        errors: GPU index → (PCIe replays, AER correctable) totals, the capture's own: a trace
            replays a machine's faults, it neither invents nor hides them.
        nvlink_errors: GPU index → NVLink number → error total (the capture's).
    """

    label: str
    synthetic: bool
    frames: dict[int, list[Frame]]
    link: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)
    nvlink_up: dict[int, dict[int, bool]] = field(default_factory=dict)
    errors: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)
    nvlink_errors: dict[int, dict[int, int | None]] = field(default_factory=dict)

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
    the PCIe link's raw rate, the NVLink per-link rate). Everything else comes from the
    capture, faults included: the negotiated PCIe generation and width (a link trained down
    stays down), NVLink states (a link down carries nothing), and the replay, AER and NVLink
    error totals, so the Links pane agrees with the doctor on the same screen.
    """
    from pcidoc.model.linkmodel import gpu_pcie_ceiling, nvlink_per_link

    frames: dict[int, list[Frame]] = {}
    link: dict[int, tuple[int | None, int | None]] = {}
    nvlink_up: dict[int, dict[int, bool]] = {}
    errors: dict[int, tuple[int | None, int | None]] = {}
    nvlink_errors: dict[int, dict[int, int | None]] = {}
    length = len(_STEP) * steps
    for position, gpu in enumerate(capture.gpus):
        pcie_gbps = gpu_pcie_ceiling(gpu).gbps
        pcie = (pcie_gbps or _FALLBACK_PCIE_GBPS) * 1e9
        up = [nv for nv in gpu.nvlinks if nv.state != "down"]
        # An imported `nvidia-smi topo -m` says NV# without per-link facts: the all-reduce
        # still goes over NVLink there (no link rows to draw it on), not over PCIe.
        nvlinked = bool(up) or any(
            (capture.topology.link(gpu.label, peer.label) or "").startswith("NV")
            for peer in capture.gpus
            if peer.index != gpu.index
        )
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
            elif phase == "allreduce" and nvlinked:
                series.append(Frame(pcie_tx=0.01 * pcie, pcie_rx=0.01 * pcie))
            elif phase == "allreduce":
                value = share * wobble * pcie
                series.append(Frame(pcie_tx=value, pcie_rx=value))
            else:
                series.append(Frame(pcie_tx=share * pcie, pcie_rx=share * pcie))
        frames[gpu.index] = series
        link[gpu.index] = (gpu.pcie.current_gen, gpu.pcie.current_width)
        nvlink_up[gpu.index] = {nv.link: nv.state != "down" for nv in gpu.nvlinks}
        errors[gpu.index] = (gpu.replay_count, gpu.aer_correctable)
        nvlink_errors[gpu.index] = {
            nv.link: sum(nv.errors.values()) if nv.errors else None for nv in gpu.nvlinks
        }
    return CounterTrace(SYNTHETIC_LABEL, True, frames, link, nvlink_up, errors, nvlink_errors)


class _Series:
    """A looped per-second rate list with its prefix sums: bytes moved after any time in O(1)."""

    def __init__(self, values: list[float]) -> None:
        self.values = values
        self.prefix = [0.0]
        for value in values:
            self.prefix.append(self.prefix[-1] + value)

    def cumulative(self, elapsed: float) -> float:
        """Bytes moved after ``elapsed`` seconds."""
        period = len(self.values)
        if not period:
            return 0.0
        whole, rest = divmod(elapsed, period)
        full = int(rest)
        return whole * self.prefix[-1] + self.prefix[full] + (rest - full) * self.values[full]


class TraceReplaySampler:
    """Reads a :class:`CounterTrace` as if it were NVML: cumulative counters at each call.

    Replay, AER and NVLink error counters stay at the trace's totals (the capture's) and
    NVLinks keep the capture's states: a generated trace neither invents errors nor repairs
    links. Same interface as
    :class:`pcidoc.collect.counters.CounterSampler`.

    Args:
        trace: The trace to replay (looped).
        clock: Monotonic clock in seconds (tests pass a manual one).
    """

    def __init__(
        self,
        trace: CounterTrace | Callable[[], CounterTrace],
        clock: Callable[[], float] | None = None,
        label: str = SYNTHETIC_LABEL,
    ) -> None:
        self._make = trace if callable(trace) else None
        self._trace = None if callable(trace) else trace
        self._label = label if callable(trace) else trace.label
        self._clock = clock or time.monotonic
        self._start = self._clock()
        self._series: dict[int, tuple[_Series, _Series, list[tuple[int, bool, _Series, _Series]]]]
        self._series = {}
        if self._trace is not None:
            self._prepare(self._trace)

    @property
    def trace(self) -> CounterTrace:
        """The trace (built on first use when a factory was given: on the sampler's thread,
        not the UI's)."""
        if self._trace is None:
            assert self._make is not None
            self._trace = self._make()
            self._prepare(self._trace)
        return self._trace

    def _prepare(self, trace: CounterTrace) -> None:
        # Prefix sums once: a sample of 72 GPUs x 18 NVLinks stays a few thousand operations
        # on the sampler thread, which shares the interpreter with the UI.
        for index, frames in trace.frames.items():
            states = trace.nvlink_up.get(index, {})
            links = [
                (
                    k,
                    up,
                    _Series([f.nvlink_tx.get(k, 0.0) for f in frames]),
                    _Series([f.nvlink_rx.get(k, 0.0) for f in frames]),
                )
                for k, up in sorted(states.items())
            ]
            self._series[index] = (
                _Series([f.pcie_tx for f in frames]),
                _Series([f.pcie_rx for f in frames]),
                links,
            )

    @property
    def label(self) -> str:
        """What is replayed (shown by the Links pane)."""
        return self._label

    def sample(self) -> CounterSample:
        """Cumulative counters of every GPU now."""
        trace = self.trace
        now = self._clock()
        elapsed = max(0.0, now - self._start)
        gpus = []
        for index, (tx, rx, links) in self._series.items():
            nvlinks = tuple(
                NvLinkCounter(
                    link=k,
                    tx_bytes=int(ltx.cumulative(elapsed)),
                    rx_bytes=int(lrx.cumulative(elapsed)),
                    up=up,
                    errors=trace.nvlink_errors.get(index, {}).get(k),
                )
                for k, up, ltx, lrx in links
            )
            gen, width = trace.link.get(index, (None, None))
            replays, aer = trace.errors.get(index, (None, None))
            gpus.append(
                GpuCounters(
                    index=index,
                    pcie_tx_bytes=int(tx.cumulative(elapsed)),
                    pcie_rx_bytes=int(rx.cumulative(elapsed)),
                    replay_count=replays,
                    aer_correctable=aer,
                    link_gen=gen,
                    link_width=width,
                    nvlinks=nvlinks,
                )
            )
        return CounterSample(t=now, gpus=tuple(gpus))


__all__ = ["SYNTHETIC_LABEL", "CounterTrace", "Frame", "TraceReplaySampler", "synthetic_trace"]

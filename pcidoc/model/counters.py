"""Live counter samples: cumulative PCIe/NVLink byte and error counters read at one instant.

The sampler reads cumulative counters; rates are the difference of two samples divided by the
time between them (:func:`rates`). Only on drivers without cumulative PCIe byte counters (before
R555) does a sample carry a directly read PCIe rate (NVML's 20 ms ``GetPcieThroughput``).
"""

from __future__ import annotations

from pcidoc._record import field, record


@record(frozen=True)
class NvLinkCounter:
    """Cumulative counters of one NVLink."""

    link: int
    tx_bytes: int | None = None
    rx_bytes: int | None = None
    up: bool | None = None
    """True only for an active link (a sleeping link is not up)."""
    errors: int | None = None
    """Sum of replay + recovery + CRC counters (on Blackwell: recovery events + effective
    errors); ``None`` when the GPU and driver offer no NVLink error counter."""
    state: str | None = None
    """``up``, ``down`` or ``sleep`` (NVML field 165); derived from ``up`` when not given."""

    def __post_init__(self) -> None:
        if self.state is None and self.up is not None:
            object.__setattr__(self, "state", "up" if self.up else "down")


@record(frozen=True)
class GpuCounters:
    """Cumulative counters of one GPU at one instant."""

    index: int
    pcie_tx_bytes: int | None = None
    pcie_rx_bytes: int | None = None
    replay_count: int | None = None
    aer_correctable: int | None = None
    link_gen: int | None = None
    link_width: int | None = None
    pstate: int | None = None
    nvlinks: tuple[NvLinkCounter, ...] = ()
    pcie_tx_bytes_per_s: float | None = None
    """PCIe TX rate read directly (``nvmlDeviceGetPcieThroughput``) where the cumulative byte
    counters do not exist (driver branches before R555); used only when they are missing."""
    pcie_rx_bytes_per_s: float | None = None


@record(frozen=True)
class CounterSample:
    """All GPUs' counters at monotonic time ``t`` (seconds)."""

    t: float
    gpus: tuple[GpuCounters, ...] = ()
    errors: tuple[str, ...] = field(default=())
    """Reasons counters could not be read (e.g. ``GPU1: NOT_SUPPORTED``)."""


@record(frozen=True)
class GpuRates:
    """Rates of one GPU between two samples."""

    index: int
    pcie_tx_gbps: float | None
    pcie_rx_gbps: float | None
    replays_delta: int | None
    aer_delta: int | None
    link_gen: int | None
    link_width: int | None
    nvlink_tx_gbps: dict[int, float]
    nvlink_rx_gbps: dict[int, float]
    nvlink_errors_delta: dict[int, int]


_WRAP_64 = 2**64


def _delta(new: int | None, old: int | None, wrap: int = _WRAP_64) -> int | None:
    """Counter difference, handling a single wrap-around of an unsigned counter."""
    if new is None or old is None:
        return None
    diff = new - old
    if diff < 0:
        diff += wrap
        if diff < 0 or diff > wrap // 2:
            return None  # a reset, not a wrap
    return diff


def _direct(bytes_per_s: float | None) -> float | None:
    return None if bytes_per_s is None else bytes_per_s / 1e9


def changed_links(old: CounterSample, new: CounterSample) -> dict[int, tuple[int, int]]:
    """Per GPU index, whether its negotiated PCIe link changed between two samples:
    ``(generation changed, width changed)`` as 0/1 (GPUs with a change only; a reading
    missing on either side is no change)."""
    before = {g.index: g for g in old.gpus}
    changed: dict[int, tuple[int, int]] = {}
    for gpu in new.gpus:
        prev = before.get(gpu.index)
        if prev is None:
            continue
        gen = int(None not in (gpu.link_gen, prev.link_gen) and gpu.link_gen != prev.link_gen)
        width = int(
            None not in (gpu.link_width, prev.link_width) and gpu.link_width != prev.link_width
        )
        if gen or width:
            changed[gpu.index] = (gen, width)
    return changed


def rates(old: CounterSample, new: CounterSample) -> list[GpuRates]:
    """Per-GPU rates (GB/s = 1e9 B/s) between two samples of the same GPUs."""
    dt = new.t - old.t
    if dt <= 0:
        return []
    before = {g.index: g for g in old.gpus}
    result: list[GpuRates] = []
    for gpu in new.gpus:
        prev = before.get(gpu.index)
        if prev is None:
            continue
        tx = _delta(gpu.pcie_tx_bytes, prev.pcie_tx_bytes)
        rx = _delta(gpu.pcie_rx_bytes, prev.pcie_rx_bytes)
        links_before = {link.link: link for link in prev.nvlinks}
        nv_tx: dict[int, float] = {}
        nv_rx: dict[int, float] = {}
        nv_err: dict[int, int] = {}
        for link in gpu.nvlinks:
            old_link = links_before.get(link.link)
            if old_link is None:
                continue
            d_tx = _delta(link.tx_bytes, old_link.tx_bytes)
            d_rx = _delta(link.rx_bytes, old_link.rx_bytes)
            d_err = _delta(link.errors, old_link.errors)
            if d_tx is not None:
                nv_tx[link.link] = d_tx / dt / 1e9
            if d_rx is not None:
                nv_rx[link.link] = d_rx / dt / 1e9
            if d_err is not None:
                nv_err[link.link] = d_err
        tx_gbps = tx / dt / 1e9 if tx is not None else _direct(gpu.pcie_tx_bytes_per_s)
        rx_gbps = rx / dt / 1e9 if rx is not None else _direct(gpu.pcie_rx_bytes_per_s)
        result.append(
            GpuRates(
                index=gpu.index,
                pcie_tx_gbps=tx_gbps,
                pcie_rx_gbps=rx_gbps,
                replays_delta=_delta(gpu.replay_count, prev.replay_count),
                aer_delta=_delta(gpu.aer_correctable, prev.aer_correctable),
                link_gen=gpu.link_gen,
                link_width=gpu.link_width,
                nvlink_tx_gbps=nv_tx,
                nvlink_rx_gbps=nv_rx,
                nvlink_errors_delta=nv_err,
            )
        )
    return result

"""The live counter sampler: cumulative PCIe/NVLink counters for the TUI's links pane.

One :meth:`CounterSampler.sample` reads, per GPU, **one** ``nvmlDeviceGetFieldValues`` call
holding every cumulative counter (PCIe TX/RX bytes 197/198, the replay counter 94, and per
NVLink the data TX/RX KiB 138/139, the link state 165, the DL error counters 161-163 and
their Blackwell successors 215/219, with ``scopeId`` = link), plus three cheap scalar reads
(current link generation and width, P-state). Rates come from
:func:`pcidoc.model.counters.rates` over two samples.

Driver branches before R555 (R535, R550) have no fields 197/198: there, and only there, the
sampler falls back to ``nvmlDeviceGetPcieThroughput`` (KB/s over a 20 ms window per call, two
calls per GPU; research/probes.md §5), whose rate is used as is. That call blocks for its
window, so it is made for at most :data:`THROUGHPUT_GPUS_PER_SAMPLE` GPUs per sample, the ones
read longest ago first; the others show their last reading.

Cost budget: at most 1 % of one core at 1 Hz on 8 GPUs, i.e. 10 ms of CPU per sample.
:func:`measure_overhead` reports the CPU time one sample takes; with the fake backend it measures
pcidoc's own Python cost, on a GPU machine it includes the real NVML calls.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pcidoc.collect.nvml import (
    FI_NVLINK_COUNT_EFFECTIVE_ERRORS,
    FI_NVLINK_COUNT_LINK_RECOVERY_EVENTS,
    FI_NVLINK_ERROR_DL_CRC,
    FI_NVLINK_ERROR_DL_RECOVERY,
    FI_NVLINK_ERROR_DL_REPLAY,
    FI_NVLINK_GET_STATE,
    FI_NVLINK_THROUGHPUT_DATA_RX,
    FI_NVLINK_THROUGHPUT_DATA_TX,
    FI_PCIE_COUNT_RX_BYTES,
    FI_PCIE_COUNT_TX_BYTES,
    FI_PCIE_REPLAY_COUNTER,
    NVLINK_STATES,
    NVML_NVLINK_MAX_LINKS,
    PCIE_THROUGHPUT_KB,
    PCIE_UTIL_RX_BYTES,
    PCIE_UTIL_TX_BYTES,
    FieldRequest,
    FieldResult,
    NvmlBackend,
    Unavailable,
)
from pcidoc.collect.sysfs import parse_aer_total
from pcidoc.model.counters import CounterSample, GpuCounters, NvLinkCounter

_PER_LINK_FIELDS: tuple[int, ...] = (
    FI_NVLINK_THROUGHPUT_DATA_TX,
    FI_NVLINK_THROUGHPUT_DATA_RX,
    FI_NVLINK_GET_STATE,
    FI_NVLINK_ERROR_DL_REPLAY,
    FI_NVLINK_ERROR_DL_RECOVERY,
    FI_NVLINK_ERROR_DL_CRC,
    FI_NVLINK_COUNT_LINK_RECOVERY_EVENTS,
    FI_NVLINK_COUNT_EFFECTIVE_ERRORS,
)
_NEVER = 1 << 30
THROUGHPUT_GPUS_PER_SAMPLE = 2
"""``nvmlDeviceGetPcieThroughput`` blocks ~20 ms per call (two per GPU) on R535/R550: reading
every GPU each sample would cost 0.3 s on 8 GPUs. Two GPUs per sample bound that to ~80 ms; at
1 Hz each of 8 GPUs is refreshed every 4 s and shows its last reading in between."""

_DL_ERRORS = slice(3, 6)
_COUNT_ERRORS = slice(6, 8)
_GPU_FIELDS: tuple[int, ...] = (
    FI_PCIE_COUNT_TX_BYTES,
    FI_PCIE_COUNT_RX_BYTES,
    FI_PCIE_REPLAY_COUNTER,
)


def _value(result: FieldResult) -> int | None:
    return None if isinstance(result, Unavailable) else int(result)


def _error_sum(chunk: Sequence[FieldResult]) -> int | None:
    """Sum of the DL error counters, else of their Blackwell successors, else ``None``."""
    for part in (_DL_ERRORS, _COUNT_ERRORS):
        known = [int(v) for v in chunk[part] if not isinstance(v, Unavailable)]
        if known:
            return sum(known)
    return None


def _link_counter(link: int, chunk: Sequence[FieldResult]) -> NvLinkCounter:
    link_tx, link_rx, state = (_value(v) for v in chunk[:3])
    name = None if state is None else NVLINK_STATES.get(state)
    return NvLinkCounter(
        link=link,
        tx_bytes=None if link_tx is None else link_tx * 1024,
        rx_bytes=None if link_rx is None else link_rx * 1024,
        up=None if name is None else name == "up",
        errors=_error_sum(chunk),
        state=name,
    )


def discover_links(backend: NvmlBackend, index: int) -> list[int]:
    """NVLink ids that exist on GPU ``index`` (up or down); empty for PCIe-only GPUs."""
    links: list[int] = []
    for link in range(NVML_NVLINK_MAX_LINKS):
        state = backend.nvlink_state(index, link)
        if isinstance(state, Unavailable):
            if link == 0 and state.error in ("NOT_SUPPORTED", "GPU_IS_LOST"):
                break
            continue
        links.append(link)
    return links


class CounterSampler:
    """Reads cumulative counters of some GPUs; cheap enough for a 1 Hz background thread.

    The backend must be initialised by the caller (``backend.init()``) for the sampler's
    lifetime; the sampler never initialises or shuts NVML down itself.

    Args:
        backend: An initialised NVML backend.
        gpu_indices: GPUs to sample; all GPUs NVML reports when ``None``.
        links: GPU index -> NVLink ids to read; discovered once here when ``None``.
        aer_paths: GPU index -> path of its sysfs ``aer_dev_correctable`` (optional, read each
            sample for ``aer_correctable``).
        clock: Monotonic clock (seconds), replaceable in tests.
    """

    def __init__(
        self,
        backend: NvmlBackend,
        gpu_indices: Iterable[int] | None = None,
        *,
        links: Mapping[int, Sequence[int]] | None = None,
        aer_paths: Mapping[int, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backend = backend
        if gpu_indices is None:
            count = backend.device_count()
            gpu_indices = range(0 if isinstance(count, Unavailable) else count)
        self.gpu_indices: tuple[int, ...] = tuple(gpu_indices)
        self.links: dict[int, tuple[int, ...]] = {}
        for index in self.gpu_indices:
            ids = links.get(index) if links is not None else None
            self.links[index] = tuple(ids if ids is not None else discover_links(backend, index))
        self.aer_paths = dict(aer_paths or {})
        self.clock = clock
        self.throughput_gpus_per_sample = THROUGHPUT_GPUS_PER_SAMPLE
        """GPUs whose ``nvmlDeviceGetPcieThroughput`` is read per sample (R535/R550 only)."""
        self._throughput: dict[int, tuple[float | None, float | None, str | None]] = {}
        self._throughput_age: dict[int, int] = {}
        self._requests: dict[int, list[FieldRequest]] = {
            index: [(fid, 0) for fid in _GPU_FIELDS]
            + [(fid, link) for link in self.links[index] for fid in _PER_LINK_FIELDS]
            for index in self.gpu_indices
        }

    @classmethod
    def for_capture(
        cls, backend: NvmlBackend, capture: object, sys_root: str = "/sys"
    ) -> CounterSampler:
        """A sampler for the usable GPUs of a live capture, reusing its NVLink ids and AER
        paths (no rediscovery)."""
        gpus = [g for g in getattr(capture, "gpus", []) if g.nvml_error is None]
        aer = {
            g.index: os.path.join(
                sys_root, "bus", "pci", "devices", g.bus_id, "aer_dev_correctable"
            )
            for g in gpus
            if g.bus_id
        }
        links = {g.index: [link.link for link in g.nvlinks] for g in gpus}
        return cls(backend, [g.index for g in gpus], links=links, aer_paths=aer)

    def _read_aer(self, index: int) -> int | None:
        path = self.aer_paths.get(index)
        if path is None:
            return None
        try:
            with open(path, encoding="utf-8") as handle:
                return parse_aer_total(handle.read())
        except OSError:
            return None

    def _pcie_throughput(
        self, index: int, field_error: Unavailable
    ) -> tuple[float | None, float | None, str | None]:
        """PCIe TX/RX bytes per second from ``nvmlDeviceGetPcieThroughput`` (drivers without
        fields 197/198), or the reason it failed too."""
        rates: list[float | None] = []
        for counter in (PCIE_UTIL_TX_BYTES, PCIE_UTIL_RX_BYTES):
            kb = self.backend.pcie_throughput(index, counter)
            if isinstance(kb, Unavailable):
                return (
                    None,
                    None,
                    f"GPU{index}: PCIe byte counters: {field_error.reason}; "
                    f"PCIe throughput: {kb.reason}",
                )
            rates.append(float(kb) * PCIE_THROUGHPUT_KB)
        return rates[0], rates[1], None

    def _throughput_rates(
        self, need: dict[int, Unavailable], errors: list[str]
    ) -> dict[int, tuple[float | None, float | None]]:
        """The ``nvmlDeviceGetPcieThroughput`` rates of the GPUs in ``need`` (GPU -> why the
        byte fields failed). Each call blocks ~20 ms in the driver, so at most
        :attr:`throughput_gpus_per_sample` GPUs are read per sample, those read longest ago
        first; the others keep their last reading."""
        order = list(need)
        due = sorted(order, key=lambda i: (-self._throughput_age.get(i, _NEVER), order.index(i)))
        due = due[: max(1, self.throughput_gpus_per_sample)]
        for index in order:
            if index in due:
                self._throughput[index] = self._pcie_throughput(index, need[index])
                self._throughput_age[index] = 0
            else:
                self._throughput_age[index] = self._throughput_age.get(index, _NEVER) + 1
        out: dict[int, tuple[float | None, float | None]] = {}
        for index in order:
            tx, rx, error = self._throughput.get(index, (None, None, None))
            if error:
                errors.append(error)
            out[index] = (tx, rx)
        return out

    def sample(self) -> CounterSample:
        """Read every GPU's counters once; errors become ``CounterSample.errors`` lines."""
        errors: list[str] = []
        t = self.clock()
        read = [(index, self._read_gpu(index, errors)) for index in self.gpu_indices]
        need = {index: r[1] for index, r in read if r is not None and r[1] is not None}
        rates = self._throughput_rates(need, errors) if need else {}
        gpus = []
        for index, r in read:
            if r is None:
                gpus.append(GpuCounters(index=index))
                continue
            tx_rate, rx_rate = rates.get(index, (None, None))
            gpus.append(
                GpuCounters(**r[0], pcie_tx_bytes_per_s=tx_rate, pcie_rx_bytes_per_s=rx_rate)
            )
        return CounterSample(t=t, gpus=tuple(gpus), errors=tuple(errors))

    def _read_gpu(
        self, index: int, errors: list[str]
    ) -> tuple[dict[str, Any], Unavailable | None] | None:
        """One GPU's counters (``GpuCounters`` fields) and, when its byte fields failed, their
        error (the throughput call is then needed); ``None`` after a fatal error."""
        backend = self.backend
        values = backend.field_values(index, self._requests[index])
        call_failed = isinstance(values, Unavailable)
        if isinstance(values, Unavailable):
            errors.append(f"GPU{index}: {values.reason}")
            if values.fatal:
                return None
            values = [values] * len(self._requests[index])
        tx, rx, replay = (_value(v) for v in values[:3])
        fallback = None
        if isinstance(values[0], Unavailable) and isinstance(values[1], Unavailable):
            fallback = values[0]
        elif isinstance(values[0], Unavailable):
            errors.append(f"GPU{index}: PCIe byte counters: {values[0].reason}")
        step = len(_PER_LINK_FIELDS)
        nvlinks = [
            _link_counter(link, values[3 + n * step : 3 + (n + 1) * step])
            for n, link in enumerate(self.links[index])
        ]
        if nvlinks and not call_failed and all(link.errors is None for link in nvlinks):
            errors.append(
                f"GPU{index}: NVLink error counters not available on this GPU and driver "
                "(fields 161-163 end with Blackwell; 215/219 need driver R570 or later)"
            )
        gen = backend.pcie_current_gen(index)
        width = backend.pcie_current_width(index)
        pstate = backend.performance_state(index)
        fields = {
            "index": index,
            "pcie_tx_bytes": tx,
            "pcie_rx_bytes": rx,
            "replay_count": replay,
            "aer_correctable": self._read_aer(index),
            "link_gen": None if isinstance(gen, Unavailable) else gen,
            "link_width": None if isinstance(width, Unavailable) else width,
            "pstate": None if isinstance(pstate, Unavailable) else pstate,
            "nvlinks": tuple(nvlinks),
        }
        return fields, fallback


@dataclass(frozen=True)
class Overhead:
    """CPU cost of :meth:`CounterSampler.sample`."""

    samples: int
    gpus: int
    cpu_s_per_sample: float
    """Median CPU seconds (this thread) per sample."""
    cpu_s_per_gpu_sample: float
    """Median CPU seconds per GPU per sample."""
    wall_s_per_sample: float
    """Median wall seconds per sample."""

    def core_percent(self, hz: float = 1.0) -> float:
        """Share of one CPU core used when sampling at ``hz`` samples per second."""
        return self.cpu_s_per_sample * hz * 100.0


def measure_overhead(
    sampler: CounterSampler, samples: int = 200, between: Callable[[], None] | None = None
) -> Overhead:
    """Measure the CPU (``time.thread_time``) and wall time of ``samples`` samples.

    Args:
        sampler: The sampler to measure (its backend must be initialised).
        samples: How many samples to take; the median is reported.
        between: Called between samples (e.g. ``fake.advance``), outside the measurement.

    Returns:
        Median per-sample costs. On a GPU machine run it with a :class:`PynvmlBackend` to include
        NVML's own cost; the budget is 10 ms of CPU per sample for 8 GPUs at 1 Hz.
    """
    cpu: list[float] = []
    wall: list[float] = []
    for _ in range(max(1, samples)):
        if between is not None:
            between()
        c0, w0 = time.thread_time(), time.perf_counter()
        sampler.sample()
        cpu.append(time.thread_time() - c0)
        wall.append(time.perf_counter() - w0)
    cpu.sort()
    wall.sort()
    median_cpu = cpu[len(cpu) // 2]
    gpus = max(1, len(sampler.gpu_indices))
    return Overhead(
        samples=len(cpu),
        gpus=len(sampler.gpu_indices),
        cpu_s_per_sample=median_cpu,
        cpu_s_per_gpu_sample=median_cpu / gpus,
        wall_s_per_sample=wall[len(wall) // 2],
    )

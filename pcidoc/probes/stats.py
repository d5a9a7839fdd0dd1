"""Statistics and ceilings for the probes: pure functions, no torch, no I/O.

Definitions follow ``research/probes.md``: the primary number of a repeated measurement is the
**median** of the per-trial values (as nvbandwidth), reported with min, max and the coefficient
of variation (CoV = sample standard deviation / mean); the saturation size S95 is the smallest
transfer size reaching 95 % of the plateau; collective bus bandwidth uses the nccl-tests
factors (``doc/PERFORMANCE.md``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pcidoc.model.units import pcie_raw_gbps

GB = 1e9
"""pcidoc's GB: 10^9 bytes (GB/s as nvbandwidth, bandwidthTest and nccl-tests)."""

NOISY_COV = 0.03
"""A plateau whose trials vary by more than 3 % (CoV) is marked noisy (research/probes.md
§2.3 step 7)."""


@dataclass(frozen=True)
class TrialStats:
    """Summary of repeated trials.

    Attributes:
        median: The primary value.
        min: Smallest trial.
        max: Largest trial.
        cov: Coefficient of variation (sample stdev / mean); 0.0 for a single trial.
        n: Number of trials summarised (after discarding).
    """

    median: float
    min: float
    max: float
    cov: float
    n: int

    @property
    def noisy(self) -> bool:
        """True when the CoV exceeds :data:`NOISY_COV`."""
        return self.cov > NOISY_COV


def coefficient_of_variation(values: Sequence[float]) -> float:
    """Sample standard deviation over mean; 0.0 for fewer than two values or a zero mean."""
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    if mean == 0:
        return 0.0
    return statistics.stdev(values) / mean


def summarize(values: Sequence[float], discard_first: int = 0) -> TrialStats:
    """Median, min, max and CoV of trial values.

    Args:
        values: Per-trial values (e.g. GB/s of each trial).
        discard_first: Leading trials to drop (warm-up effects).

    Raises:
        ValueError: nothing is left to summarise.
    """
    kept = [float(v) for v in values[discard_first:]]
    if not kept:
        raise ValueError("no trials to summarise")
    return TrialStats(
        median=statistics.median(kept),
        min=min(kept),
        max=max(kept),
        cov=coefficient_of_variation(kept),
        n=len(kept),
    )


def bandwidth_gbps(size_bytes: float, seconds: float) -> float:
    """Bytes over seconds in GB/s (10^9 B/s); ``inf`` is never returned (0 s -> ValueError)."""
    if seconds <= 0:
        raise ValueError("non-positive duration")
    return size_bytes / seconds / GB


def saturation_size(
    points: Sequence[tuple[int, float]], plateau_gbps: float | None = None, fraction: float = 0.95
) -> int | None:
    """S95: the smallest size whose bandwidth reaches ``fraction`` of the plateau.

    Args:
        points: ``(size_bytes, bandwidth_gbps)`` of a size sweep, any order.
        plateau_gbps: The plateau; default: the best bandwidth of the sweep.
        fraction: 0.95 for S95.

    Returns:
        The size, or ``None`` when the sweep is empty or never reaches the plateau.
    """
    if not points:
        return None
    plateau = plateau_gbps if plateau_gbps is not None else max(bw for _s, bw in points)
    if plateau <= 0:
        return None
    for size, bw in sorted(points):
        if bw >= fraction * plateau:
            return int(size)
    return None


def half_bandwidth_size(latency_s: float, bandwidth_gbps_value: float) -> float:
    """S½ = t0 × B of the model t(S) = t0 + S/B, in bytes (S95 ≈ 19 × S½)."""
    return latency_s * bandwidth_gbps_value * GB


def percent_of(value: float | None, ceiling: float | None) -> float | None:
    """``value`` as a percentage of ``ceiling`` (one decimal), or ``None``."""
    if value is None or ceiling is None or ceiling <= 0:
        return None
    return round(100.0 * value / ceiling, 1)


def pcie_ceiling_gbps(gen: int | None, width: int | None) -> float | None:
    """Raw per-direction ceiling of the negotiated PCIe link (Gen4 x16 -> 31.5 GB/s)."""
    return pcie_raw_gbps(gen, width)


def pcie_nccl_model(gen: int | None, width: int | None) -> float | None:
    """NCCL's per-direction model of the link (Gen4 x16 -> 24 GB/s), from the doctor config."""
    from pcidoc.doctor.config import pcie_nccl_model_gbps

    return pcie_nccl_model_gbps(gen, width)


# ------------------------------------------------------------------------------ collectives


def busbw_factor(op: str, ranks: int) -> float | None:
    """nccl-tests' bus bandwidth factor for ``op`` on ``ranks`` ranks.

    all_reduce ``2(n-1)/n``; reduce_scatter, all_gather, alltoall ``(n-1)/n``; broadcast,
    reduce, sendrecv ``1``. ``None`` when the factor is zero (one rank: no bus traffic, so bus
    bandwidth does not apply) or the op is unknown.
    """
    if ranks < 1:
        return None
    name = op.lower().replace("-", "_")
    if name in ("all_reduce", "allreduce"):
        factor = 2.0 * (ranks - 1) / ranks
    elif name in ("reduce_scatter", "all_gather", "allgather", "alltoall", "all_to_all"):
        factor = (ranks - 1) / ranks
    elif name in ("broadcast", "reduce", "sendrecv", "send_recv"):
        factor = 1.0
    else:
        return None
    return factor if factor > 0 else None


def algbw_gbps(size_bytes: float, seconds: float) -> float:
    """Algorithm bandwidth S/t in GB/s."""
    return bandwidth_gbps(size_bytes, seconds)


def busbw_gbps(op: str, size_bytes: float, seconds: float, ranks: int) -> float | None:
    """Bus bandwidth = algbw × factor; ``None`` where the factor does not apply (n = 1)."""
    factor = busbw_factor(op, ranks)
    if factor is None:
        return None
    return algbw_gbps(size_bytes, seconds) * factor


def allreduce_expected_sum(ranks: int) -> float:
    """Value every element holds after all-reducing rank r's fill of r+1: n(n+1)/2."""
    return ranks * (ranks + 1) / 2.0


def adaptive_iterations(
    seconds_per_iteration: float, target_s: float, minimum: int, maximum: int
) -> int:
    """Iterations to run so the timed loop lasts about ``target_s`` (clamped)."""
    if seconds_per_iteration <= 0 or math.isnan(seconds_per_iteration):
        return maximum
    wanted = math.ceil(target_s / seconds_per_iteration)
    return max(minimum, min(maximum, wanted))


def mean_or_none(values: Sequence[float | None]) -> float | None:
    """Mean of the non-``None`` values, or ``None``."""
    kept = [v for v in values if v is not None]
    return statistics.fmean(kept) if kept else None


# --------------------------------------------------------------------------------- scaling


def scaling_efficiency(throughputs: Mapping[int, float]) -> dict[int, float | None]:
    """Weak-scaling efficiency E(N) = throughput(N) / (N × throughput(1)).

    Args:
        throughputs: Samples/s per rank count.

    Returns:
        E per rank count; ``None`` everywhere when the 1-rank throughput is missing or zero.
    """
    base = throughputs.get(1)
    result: dict[int, float | None] = {}
    for ranks, value in sorted(throughputs.items()):
        if not base or ranks < 1:
            result[ranks] = None
        else:
            result[ranks] = round(value / (ranks * base), 4)
    return result


def round_sig(value: float | None, digits: int = 6) -> float | None:
    """Round to ``digits`` significant digits (bandwidths span 10^-3 to 10^3 GB/s)."""
    if value is None or value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation between order statistics."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q / 100.0
    low = math.floor(pos)
    high = math.ceil(pos)
    if low == high:
        return ordered[low]
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)

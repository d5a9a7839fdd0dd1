"""The α–β model of data-parallel gradient all-reduce, as pure functions.

A ring all-reduce of ``S`` bytes over ``n`` ranks takes ``t = α + (2(n−1)/n) · S / busbw``
(nccl-tests ``doc/PERFORMANCE.md``: busbw = algbw × 2(n−1)/n, so ``S / algbw`` is the β term).
``α`` is NCCL's ring latency, ``base + 2(n−1) × hop`` (NCCL ``tuning.cc``; constants in
:mod:`pcidoc.doctor.config`). A data-parallel step pays one all-reduce per gradient bucket, so
``α`` is paid once per bucket while the β term depends only on the gradient bytes.

Step efficiency with no overlap between compute and communication (a pessimistic bound, which
is what ``scaling.efficiency`` compares against) is ``t_compute / (t_compute + t_comm)``.

Worked example (research/checks.md §6): G = 2 GB of bf16 gradients, N = 8. At busbw 480 GB/s
(H100 NVLS) ``t_comm ≈ 7.3 ms``; at busbw 20 GB/s (PCIe Gen4 across sockets) ``≈ 175 ms``.

Units: bytes, seconds, GB/s = 10^9 B/s, microseconds only where a name says ``_us``.
"""

from __future__ import annotations

import math

from pcidoc._record import record
from pcidoc.doctor import config


def allreduce_bus_factor(ranks: int) -> float:
    """nccl-tests' all-reduce bus factor ``2(n−1)/n`` (0 for a single rank)."""
    if ranks <= 1:
        return 0.0
    return 2.0 * (ranks - 1) / ranks


def ring_allreduce_alpha_us(ranks: int, transport: str = "nvlink") -> float:
    """NCCL's ring all-reduce latency (Simple protocol) in microseconds.

    Args:
        ranks: Number of ranks in the ring.
        transport: ``"nvlink"`` or ``"pcie"`` (anything else is treated as PCIe).

    Returns:
        ``base + 2(n−1) × hop``; 0 for a single rank. 8 ranks over NVLink ≈ 56 µs.
    """
    if ranks <= 1:
        return 0.0
    hop = config.NCCL_HW_LATENCY_US.get(transport, config.NCCL_HW_LATENCY_US["pcie"])
    return config.NCCL_BASE_LATENCY_US + 2 * (ranks - 1) * hop


def allreduce_time_s(
    size_bytes: float, ranks: int, busbw_gbps: float, alpha_us: float = 0.0
) -> float:
    """Time of one all-reduce of ``size_bytes`` at bus bandwidth ``busbw_gbps``.

    Raises:
        ValueError: a non-positive bus bandwidth with more than one rank.
    """
    if ranks <= 1:
        return 0.0
    if busbw_gbps <= 0:
        raise ValueError(f"bus bandwidth must be positive, got {busbw_gbps}")
    return alpha_us * 1e-6 + allreduce_bus_factor(ranks) * size_bytes / (busbw_gbps * 1e9)


def bucket_count(gradient_bytes: float, bucket_bytes: float | None) -> int:
    """All-reduce calls per step when gradients go out in buckets of ``bucket_bytes``."""
    if not bucket_bytes or bucket_bytes <= 0 or gradient_bytes <= 0:
        return 1
    return max(1, math.ceil(gradient_bytes / bucket_bytes))


def gradient_comm_time_s(
    gradient_bytes: float,
    ranks: int,
    busbw_gbps: float,
    alpha_us: float,
    bucket_bytes: float | None = None,
) -> float:
    """Communication time per step: one α per bucket plus the β term of all the gradients."""
    if ranks <= 1:
        return 0.0
    calls = bucket_count(gradient_bytes, bucket_bytes)
    return calls * alpha_us * 1e-6 + allreduce_time_s(gradient_bytes, ranks, busbw_gbps)


def efficiency(t_compute_s: float, t_comm_s: float, overlap_s: float = 0.0) -> float:
    """Predicted scaling efficiency ``t_compute / (t_compute + exposed communication)``."""
    exposed = max(0.0, t_comm_s - overlap_s)
    total = t_compute_s + exposed
    return 1.0 if total <= 0 else t_compute_s / total


def accumulation_steps_for(
    target_efficiency: float,
    t_compute_s: float,
    t_comm_s: float,
    max_steps: int = config.GRAD_ACCUM_MAX_STEPS,
) -> int | None:
    """Fewest gradient-accumulation micro-steps ``k`` with ``efficiency`` ≥ the target.

    With accumulation the all-reduce runs once per ``k`` micro-steps:
    ``E_k = k·t_c / (k·t_c + t_comm)``. Returns 1 when no accumulation is needed and ``None``
    when even ``max_steps`` is not enough (or the inputs cannot reach the target).
    """
    if t_comm_s <= 0 or efficiency(t_compute_s, t_comm_s) >= target_efficiency:
        return 1
    if t_compute_s <= 0 or not 0 < target_efficiency < 1:
        return None
    steps = math.ceil(target_efficiency / (1 - target_efficiency) * t_comm_s / t_compute_s)
    return steps if steps <= max_steps else None


@record(frozen=True)
class WhatIf:
    """One remedy and what the model predicts for it."""

    label: str
    t_comm_s: float
    """Communication time per (micro-)step."""
    efficiency: float

    @property
    def comm_share(self) -> float:
        """Share of the step spent communicating (1 − efficiency, no overlap)."""
        return 1.0 - self.efficiency


@record(frozen=True)
class CommModel:
    """The α–β model of one data-parallel configuration.

    Attributes:
        ranks: Data-parallel ranks.
        gradient_bytes: Gradient bytes all-reduced per step.
        busbw_gbps: Measured all-reduce bus bandwidth (W).
        alpha_us: Latency of one all-reduce call (α).
        t_compute_s: Compute time of one step (the 1-rank step time).
        bucket_bytes: DDP bucket size (α is paid once per bucket); ``None`` = one call.
    """

    ranks: int
    gradient_bytes: float
    busbw_gbps: float
    alpha_us: float
    t_compute_s: float
    bucket_bytes: float | None = config.DDP_DEFAULT_BUCKET_BYTES

    @property
    def buckets(self) -> int:
        """All-reduce calls per step."""
        return bucket_count(self.gradient_bytes, self.bucket_bytes)

    @property
    def t_comm_s(self) -> float:
        """Communication time per step."""
        return gradient_comm_time_s(
            self.gradient_bytes, self.ranks, self.busbw_gbps, self.alpha_us, self.bucket_bytes
        )

    @property
    def t_alpha_s(self) -> float:
        """The latency part of :attr:`t_comm_s` (α × buckets)."""
        return 0.0 if self.ranks <= 1 else self.buckets * self.alpha_us * 1e-6

    @property
    def efficiency(self) -> float:
        """Predicted efficiency with no compute/communication overlap."""
        return efficiency(self.t_compute_s, self.t_comm_s)

    @property
    def comm_share(self) -> float:
        """Predicted share of the step spent communicating."""
        return 1.0 - self.efficiency

    def with_accumulation(self, steps: int) -> WhatIf:
        """Gradient accumulation: one all-reduce every ``steps`` micro-steps."""
        steps = max(1, steps)
        t_comm = self.t_comm_s / steps
        return WhatIf(
            f"gradient accumulation over {steps} steps",
            t_comm,
            efficiency(self.t_compute_s, t_comm),
        )

    def with_buckets(self, bucket_bytes: float) -> WhatIf:
        """Larger (or smaller) DDP buckets: fewer α terms per step."""
        t_comm = gradient_comm_time_s(
            self.gradient_bytes, self.ranks, self.busbw_gbps, self.alpha_us, bucket_bytes
        )
        mib = bucket_bytes / 1024**2
        return WhatIf(f"DDP buckets of {mib:.0f} MiB", t_comm, efficiency(self.t_compute_s, t_comm))

    def with_gradient_bytes(self, gradient_bytes: float, label: str) -> WhatIf:
        """Different gradient volume (bf16 instead of fp32 halves it)."""
        t_comm = gradient_comm_time_s(
            gradient_bytes, self.ranks, self.busbw_gbps, self.alpha_us, self.bucket_bytes
        )
        return WhatIf(label, t_comm, efficiency(self.t_compute_s, t_comm))

    def with_busbw(self, busbw_gbps: float, label: str) -> WhatIf:
        """A different bus bandwidth (another GPU placement or a repaired link)."""
        t_comm = gradient_comm_time_s(
            self.gradient_bytes, self.ranks, busbw_gbps, self.alpha_us, self.bucket_bytes
        )
        return WhatIf(label, t_comm, efficiency(self.t_compute_s, t_comm))


def comm_model(
    ranks: int,
    gradient_bytes: float,
    busbw_gbps: float,
    t_compute_s: float,
    transport: str = "nvlink",
) -> CommModel:
    """The α–β model of a data-parallel step on ``ranks`` ranks whose all-reduce runs at
    ``busbw_gbps`` (measured, or what the links should give: the doctor's link model), with
    NCCL's ring latency for ``transport`` (``nvlink`` or ``pcie``) and DDP's default buckets.

    Raises:
        ValueError: a non-positive bus bandwidth.
    """
    if busbw_gbps <= 0:
        raise ValueError(f"bus bandwidth must be positive, got {busbw_gbps}")
    return CommModel(
        ranks=ranks,
        gradient_bytes=gradient_bytes,
        busbw_gbps=busbw_gbps,
        alpha_us=ring_allreduce_alpha_us(ranks, transport),
        t_compute_s=t_compute_s,
    )

"""Probe parameters per mode, and the time estimates the deadlines are built from (pure).

Values follow the table of ``research/probes.md`` §7, trimmed in quick mode so the whole quick
set fits in about a minute on an 8-GPU machine (see ``docs/probes.md`` for the derivation).
Both the parent (estimates, deadlines) and the child (what to run) read this module.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

MODES = ("quick", "full")

# Conservative bandwidths the estimates assume (GB/s): a Gen4 x16 host link, a PCIe peer path
# and a host-staged copy; pageable copies on a typical server. Faster hardware only finishes
# earlier; the deadline is twice the estimate plus the start-up allowance.
ASSUMED_PINNED_GBPS = 22.0
ASSUMED_PAGEABLE_GBPS = 6.0
ASSUMED_P2P_GBPS = 18.0
ASSUMED_STAGED_GBPS = 12.0
ASSUMED_BUSBW_GBPS = 15.0
ASSUMED_GLOO_BUSBW_GBPS = 0.5


@dataclass(frozen=True)
class TransferParams:
    """Host<->device probe settings of one mode (sizes in bytes)."""

    plateau_bytes: int
    plateau_copies: int
    plateau_trials: int
    """Trials including the first, which is discarded."""
    warmup_copies: int
    sweep_sizes: tuple[int, ...]
    sweep_trials: int
    sweep_target_s: float
    """Each sweep trial lasts about this long (copies per trial adapt to the size)."""
    sweep_max_copies: int
    bidir_copies: int
    """Copies of ``plateau_bytes`` on the measured stream; the interferer moves twice that."""
    bidir_trials: int
    pageable_bytes: int
    pageable_copies: int
    pageable_trials: int
    numa_copies: int
    numa_trials: int
    numa_directions: tuple[str, ...]
    numa_every_gpu: bool
    """Full mode measures local vs remote for every GPU; quick for one GPU per NUMA node."""
    verify_bytes: int


@dataclass(frozen=True)
class P2PParams:
    """GPU<->GPU probe settings of one mode."""

    size_bytes: int
    copies: int
    trials: int
    bidir_copies: int
    bidir_trials: int
    staged_bytes: int
    staged_chunk_bytes: int
    staged_trials: int
    latency_bytes: int
    latency_copies: int
    latency_trials: int
    verify_bytes: int
    trial_target_s: float = 0.05
    """Copies per trial are sized from each pair's warm-up copy so a trial lasts about this
    long (at most ``copies``): a pair that crawls (translating IOMMU) cannot eat the deadline."""
    verify_sizes: tuple[int, ...] = (64 * KiB, 1 * MiB)
    """Copy sizes byte-verified per ordered pair besides ``verify_bytes`` (several sizes: a
    broken path may corrupt only small or only large copies)."""
    verify_far_offset_bytes: int = 1024 * MiB
    """One more verified copy at this offset into a buffer when GPU memory allows: a mapping
    that is right in the first GiB and wrong past it is a known IOMMU/BAR failure."""
    verify_timeout_s: float = 10.0
    """A verified copy not completed after this long is reported as hanging (its pair named)."""


@dataclass(frozen=True)
class CollectiveParams:
    """All-reduce settings of one backend and mode."""

    sizes: tuple[int, ...]
    warmup: int
    min_iters: int
    max_iters: int
    target_s: float


@dataclass(frozen=True)
class ScalingParams:
    """Synthetic data-parallel step settings of one backend and mode."""

    width: int
    depth: int
    batch: int
    warmup_steps: int
    steps: int
    busbw_iters: int

    @property
    def model_params(self) -> int:
        """Parameters of the MLP: depth × (width² + width)."""
        return self.depth * (self.width * self.width + self.width)


TRANSFER: dict[str, TransferParams] = {
    "quick": TransferParams(
        plateau_bytes=256 * MiB,
        plateau_copies=8,
        plateau_trials=6,
        warmup_copies=3,
        sweep_sizes=(64 * KiB, 1 * MiB, 16 * MiB, 256 * MiB),
        sweep_trials=3,
        sweep_target_s=0.01,
        sweep_max_copies=256,
        bidir_copies=2,
        bidir_trials=4,
        pageable_bytes=64 * MiB,
        pageable_copies=2,
        pageable_trials=3,
        numa_copies=4,
        numa_trials=4,
        numa_directions=("h2d",),
        numa_every_gpu=False,
        verify_bytes=16 * MiB,
    ),
    "full": TransferParams(
        plateau_bytes=512 * MiB,
        plateau_copies=16,
        plateau_trials=4,
        warmup_copies=4,
        sweep_sizes=tuple(4 * KiB * 4**i for i in range(10)),  # 4 KiB .. 1 GiB
        sweep_trials=3,
        sweep_target_s=0.02,
        sweep_max_copies=256,
        bidir_copies=4,
        bidir_trials=6,
        pageable_bytes=256 * MiB,
        pageable_copies=4,
        pageable_trials=3,
        numa_copies=8,
        numa_trials=4,
        numa_directions=("h2d", "d2h"),
        numa_every_gpu=True,
        verify_bytes=64 * MiB,
    ),
}

P2P: dict[str, P2PParams] = {
    "quick": P2PParams(
        # 32 MiB is past S95 even on NVLink 4 (~15-25 MB, research/probes.md §2.3 (a)).
        size_bytes=32 * MiB,
        copies=4,
        trials=4,
        bidir_copies=4,
        bidir_trials=4,
        # The same chunk in both modes; the steady state is timed with events, so the number
        # of chunks (pipeline fill and drain) no longer changes the result (issue 9).
        staged_bytes=32 * MiB,
        staged_chunk_bytes=8 * MiB,
        staged_trials=3,
        latency_bytes=16,
        latency_copies=100,
        latency_trials=1,
        verify_bytes=8 * MiB,
        trial_target_s=0.02,
    ),
    "full": P2PParams(
        size_bytes=256 * MiB,
        copies=8,
        trials=6,
        bidir_copies=8,
        bidir_trials=6,
        staged_bytes=256 * MiB,
        staged_chunk_bytes=8 * MiB,
        staged_trials=4,
        latency_bytes=16,
        latency_copies=100,
        latency_trials=3,
        verify_bytes=64 * MiB,
        trial_target_s=0.1,
    ),
}

COLLECTIVE: dict[tuple[str, str], CollectiveParams] = {
    ("nccl", "quick"): CollectiveParams((1 * MiB, 16 * MiB, 256 * MiB), 5, 20, 200, 0.05),
    # 8 B .. 2 GiB in x4 steps (nccl-tests' usual sweep is -b 8 -e 8G -f 2).
    ("nccl", "full"): CollectiveParams(tuple(2**p for p in range(3, 32, 2)), 5, 20, 1000, 0.1),
    ("gloo", "quick"): CollectiveParams((64 * KiB, 1 * MiB, 4 * MiB), 2, 5, 50, 0.05),
    ("gloo", "full"): CollectiveParams(tuple(4 * KiB * 4**i for i in range(8)), 3, 10, 200, 0.1),
}

SCALING: dict[tuple[str, str], ScalingParams] = {
    # ~50 M parameters (200 MB of fp32 gradients): gradient sync is visible on any link.
    ("nccl", "quick"): ScalingParams(2048, 12, 512, 5, 10, 5),
    ("nccl", "full"): ScalingParams(2048, 12, 512, 5, 30, 20),
    # ~0.26 M parameters (1 MB of gradients): runs in seconds on a CI runner.
    ("gloo", "quick"): ScalingParams(256, 4, 64, 3, 10, 5),
    ("gloo", "full"): ScalingParams(256, 4, 64, 5, 30, 10),
}


def as_dict(params: Any) -> dict[str, Any]:
    """A parameter set as a JSON-ready dict (tuples become lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(params).items()}


def _check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"unknown probe mode {mode!r}; use quick or full")
    return mode


# ------------------------------------------------------------------------------ estimates


def estimate_transfer_s(n_gpus: int, numa_nodes: int, mode: str) -> float:
    """Seconds the transfer probe needs after start-up, at :data:`ASSUMED_PINNED_GBPS`.

    Per GPU: buffer allocation and pinning (0.3 s), plateau (both directions), size sweep,
    bidirectional pairs (measured + 2× interferer), pageable copies, one verification; plus
    local-vs-remote NUMA trials where the host has two or more nodes.
    """
    p = TRANSFER[_check_mode(mode)]
    gb = 1e9
    plateau = 2 * p.plateau_trials * (p.plateau_copies * p.plateau_bytes) / gb
    plateau += 2 * p.warmup_copies * p.plateau_bytes / gb
    sweep = 2 * len(p.sweep_sizes) * p.sweep_trials * p.sweep_target_s * ASSUMED_PINNED_GBPS
    bidir = 2 * p.bidir_trials * 3 * p.bidir_copies * p.plateau_bytes / gb / 1.5
    per_gpu_bytes_s = (plateau + sweep + bidir) / ASSUMED_PINNED_GBPS
    pageable = 2 * (p.pageable_trials + 1) * p.pageable_copies * p.pageable_bytes / gb
    per_gpu = 0.3 + per_gpu_bytes_s + pageable / ASSUMED_PAGEABLE_GBPS + 0.05
    total = n_gpus * per_gpu
    if numa_nodes >= 2:
        numa_gpus = n_gpus if p.numa_every_gpu else min(n_gpus, numa_nodes)
        numa = (
            numa_gpus
            * 2
            * len(p.numa_directions)
            * p.numa_trials
            * p.numa_copies
            * p.plateau_bytes
            / gb
            / ASSUMED_PINNED_GBPS
        )
        total += numa + numa_gpus * 0.4
    return round(total, 1)


def _p2p_pass_s(p: P2PParams, rate_gbps: float) -> float:
    """One ordered pair's warm-up copy plus its trials, at ``rate_gbps``: copies per trial are
    sized from the warm-up (about ``trial_target_s``, at most ``copies``)."""
    per_copy = p.size_bytes / (rate_gbps * 1e9)
    trial = min(p.copies * per_copy, p.trial_target_s + per_copy)
    return per_copy + p.trials * trial


def estimate_p2p_s(n_gpus: int, mode: str) -> float:
    """Seconds the P2P probe needs after start-up for ``n_gpus`` (all ordered pairs): peer
    copies with peer access on, then off (driver-staged), bidirectional, host-staged, latency
    both ways and verification."""
    p = P2P[_check_mode(mode)]
    if n_gpus < 2:
        return 0.0
    gb = 1e9
    ordered = n_gpus * (n_gpus - 1)
    unordered = ordered // 2
    uni = ordered * (_p2p_pass_s(p, ASSUMED_P2P_GBPS) + _p2p_pass_s(p, ASSUMED_STAGED_GBPS))
    bidir = unordered * 2 * p.bidir_trials * 3 * p.bidir_copies * p.size_bytes / gb
    bidir /= 1.6 * ASSUMED_P2P_GBPS
    staged = ordered * (p.staged_trials + 1) * p.staged_bytes / gb / ASSUMED_STAGED_GBPS
    fixed = ordered * 0.03 + n_gpus * 0.3  # peer access on/off, latency, verify; contexts
    return round(uni + bidir + staged + fixed, 1)


def estimate_allreduce_s(rank_counts: list[int], backend: str, mode: str) -> float:
    """Seconds the all-reduce probe needs after start-up (worst case: max iterations at the
    assumed bus bandwidth, floored by the per-size target time)."""
    p = COLLECTIVE[(backend, _check_mode(mode))]
    busbw = ASSUMED_BUSBW_GBPS if backend == "nccl" else ASSUMED_GLOO_BUSBW_GBPS
    total = 0.0
    for n in rank_counts:
        factor = 2 * (n - 1) / n if n > 1 else 1.0
        for size in p.sizes:
            t_iter = size * factor / (busbw * 1e9) + 50e-6
            iters = max(p.min_iters, min(p.max_iters, math.ceil(p.target_s / t_iter)))
            total += (iters + p.warmup + 2) * t_iter
        total += 0.5  # barriers, correctness pass, sub-group set-up
    return round(total, 1)


def estimate_scaling_s(rank_counts: list[int], backend: str, mode: str) -> float:
    """Seconds the scaling probe needs after start-up (model build, DDP set-up, steps)."""
    p = SCALING[(backend, _check_mode(mode))]
    grad_bytes = 4 * p.model_params
    flops = 6 * p.model_params * p.batch
    compute_s = flops / (20e12 if backend == "nccl" else 5e9)
    busbw = ASSUMED_BUSBW_GBPS if backend == "nccl" else ASSUMED_GLOO_BUSBW_GBPS
    total = 0.0
    for n in rank_counts:
        comm_s = grad_bytes * 2 * (n - 1) / max(n, 1) / (busbw * 1e9)
        total += (p.warmup_steps + p.steps) * (compute_s + comm_s) + 1.0
    for n in rank_counts:  # the all-reduce at the gradient size, on every count above one
        if n > 1:
            total += (p.busbw_iters + 2) * grad_bytes * 2 * (n - 1) / n / (busbw * 1e9)
    return round(total, 1)


STARTUP_S = {
    "env": 20.0,
    "transfer": 30.0,
    "p2p": 40.0,
    "allreduce": 60.0,
    "scaling": 60.0,
    "collectives": 60.0,
}
"""Start-up allowance per probe: torch import, CUDA contexts, NCCL communicators (seconds).
Generous on purpose: it only bounds a hang."""

TYPICAL_STARTUP_S = {
    "env": 3.0,
    "transfer": 3.0,
    "p2p": 5.0,
    "allreduce": 8.0,
    "scaling": 8.0,
    "collectives": 8.0,
}
"""What start-up usually costs on a GPU server, for the time estimate shown to the user."""

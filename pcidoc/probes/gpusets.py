"""Which GPUs a collective or scaling probe uses at each rank count (pure functions).

A 2- or 4-rank run on an 8-GPU machine should use the best-connected GPUs (NVLink, then the
same PCIe switch, then the same NUMA node), as a user placing a small job would, so that the
ladder 1 → 2 → 4 → 8 shows where scaling breaks. Sets are nested where that costs nothing, so
the 1-rank baseline runs on a GPU that is also in the larger sets.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Iterable, Sequence

from pcidoc.model.capture import Capture
from pcidoc.model.links import is_nvlink, nvlink_count, rank

UNKNOWN_RANK = 7
"""Distance rank given to a pair whose link class is unknown (worse than ``SYS``)."""

MAX_SUBSETS = 20000
"""Above this many candidate sets the search becomes greedy."""

DEFAULT_GPU_RANKS: tuple[int, ...] = (1, 2, 4, 8)


def gpu_link(capture: Capture, a: int, b: int) -> str | None:
    """Link class between GPU ``a`` and GPU ``b`` from the capture's topology matrix."""
    return capture.topology.link(f"GPU{a}", f"GPU{b}")


def _pair_rank(capture: Capture, a: int, b: int) -> int:
    value = rank(gpu_link(capture, a, b))
    return UNKNOWN_RANK if value is None else value


def _numa_span(capture: Capture, gpus: Iterable[int]) -> int:
    nodes = set()
    for index in gpus:
        gpu = capture.gpu(index)
        nodes.add(None if gpu is None else gpu.numa_node)
    return len(nodes)


def _score(capture: Capture, subset: Sequence[int], previous: frozenset[int]) -> tuple:
    pairs = list(itertools.combinations(subset, 2))
    ranks = [_pair_rank(capture, a, b) for a, b in pairs]
    worst = max(ranks) if ranks else 0
    nv_min = 0
    if ranks and worst == 1:
        nv_min = min(nvlink_count(gpu_link(capture, a, b)) for a, b in pairs)
    contains_previous = 0 if previous <= frozenset(subset) else 1
    return (
        worst,
        -nv_min,
        _numa_span(capture, subset),
        sum(ranks),
        contains_previous,
        tuple(subset),
    )


def _best_subset(
    capture: Capture, available: Sequence[int], k: int, previous: frozenset[int]
) -> list[int]:
    if k >= len(available):
        return list(available)
    if math.comb(len(available), k) <= MAX_SUBSETS:
        best = min(
            itertools.combinations(available, k),
            key=lambda subset: _score(capture, subset, previous),
        )
        return list(best)
    # Greedy: grow from the previous set (or the best pair) by the GPU that scores best.
    chosen = sorted(previous) if previous and len(previous) < k else []
    if not chosen:
        # Seed with the best pair (pairs are always few enough to enumerate).
        chosen = list(
            min(
                itertools.combinations(available, 2),
                key=lambda pair: _score(capture, pair, frozenset()),
            )
        )
    while len(chosen) < k:
        candidates = [g for g in available if g not in chosen]
        nxt = min(candidates, key=lambda g: _score(capture, sorted([*chosen, g]), frozenset()))
        chosen = sorted([*chosen, nxt])
    return chosen


def choose_gpu_sets(
    capture: Capture, ranks: Sequence[int], gpus: Sequence[int] | None = None
) -> dict[int, list[int]]:
    """The GPUs to use at each rank count, best-connected first.

    A set is scored by, in order: its worst pairwise link class (NVLink < PIX < PXB < PHB <
    NODE < SYS < unknown), the fewest bonded NVLinks among its pairs (more is better), the
    number of NUMA nodes it spans, the sum of its pairwise link ranks, whether it contains the
    set chosen for the next smaller rank count, and finally the GPU indices (lowest first).

    Args:
        capture: The machine (topology matrix and GPUs' NUMA nodes).
        ranks: Rank counts wanted; counts above the number of GPUs are dropped.
        gpus: GPUs that may be used (default: every GPU of the capture).

    Returns:
        Rank count -> sorted GPU indices, in increasing rank-count order.
    """
    available = sorted(gpus if gpus is not None else (g.index for g in capture.gpus))
    wanted = sorted({k for k in ranks if 1 <= k <= len(available)})
    sets: dict[int, list[int]] = {}
    previous: frozenset[int] = frozenset()
    for k in wanted:
        if k == 1:
            continue
        chosen = _best_subset(capture, available, k, previous)
        sets[k] = chosen
        previous = frozenset(chosen)
    if 1 in wanted:
        larger = [sets[k] for k in sorted(sets)]
        sets[1] = [larger[0][0]] if larger else [available[0]]
    return {k: sets[k] for k in sorted(sets)}


def slowest_edge(capture: Capture, gpus: Sequence[int]) -> str | None:
    """The weakest link class among the GPUs (``SYS``, ``PHB``, ``NV4``...), or ``None``.

    Among NVLink pairs the one with the fewest bonded links is the weakest. ``None`` for fewer
    than two GPUs or when any pair's class is unknown.
    """
    worst: tuple[int, int] | None = None
    worst_link: str | None = None
    for a, b in itertools.combinations(sorted(gpus), 2):
        link = gpu_link(capture, a, b)
        value = rank(link)
        if value is None:
            return None
        key = (value, -nvlink_count(link) if is_nvlink(link) else 0)
        if worst is None or key > worst:
            worst, worst_link = key, link
    return worst_link


def world_order(sets: dict[int, list[int]]) -> list[int]:
    """GPUs of one launch that covers every set, in rank order (the union, sorted)."""
    return sorted({g for chosen in sets.values() for g in chosen})


def default_gpu_ranks(n_gpus: int) -> list[int]:
    """Rank counts for GPU probes: 1, 2, 4, 8 capped by the GPUs present (plus all of them)."""
    counts = [k for k in DEFAULT_GPU_RANKS if k <= n_gpus]
    if n_gpus > 1 and counts and n_gpus > counts[-1]:
        counts.append(n_gpus)
    return counts


def cpu_rank_cap(cpu_count: int | None = None) -> int:
    """Most gloo ranks to start on a CPU-only run: half the CPUs, between 2 and 8."""
    cpus = cpu_count if cpu_count is not None else (os.cpu_count() or 2)
    return max(2, min(8, cpus // 2))


def default_cpu_ranks(cpu_count: int | None = None) -> list[int]:
    """Rank counts for gloo on CPU: 1, 2, 4, 8 up to :func:`cpu_rank_cap`."""
    cap = cpu_rank_cap(cpu_count)
    return [k for k in DEFAULT_GPU_RANKS if k <= cap]

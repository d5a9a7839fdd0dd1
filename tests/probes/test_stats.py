"""Statistics and ceilings of the probes, on published sample numbers (sources in comments)."""

from __future__ import annotations

import math

import pytest

from pcidoc.probes import stats


def test_summary_of_trials_discards_the_first() -> None:
    # nvbandwidth v0.10 public log, 8x H100: H2D CE samples 55.33-55.37 GB/s (research §1.1);
    # a cold first trial in front of them.
    trials = [31.2, 55.35, 55.33, 55.37, 55.36, 55.34]
    st = stats.summarize(trials, discard_first=1)
    assert st.n == 5
    assert st.median == pytest.approx(55.35)
    assert st.min == pytest.approx(55.33)
    assert st.max == pytest.approx(55.37)
    assert st.cov == pytest.approx(0.000286, rel=0.01)
    assert not st.noisy
    assert stats.summarize(trials).noisy  # with the cold trial the spread is > 3 %


def test_cov_edge_cases() -> None:
    assert stats.coefficient_of_variation([5.0]) == 0.0
    assert stats.coefficient_of_variation([0.0, 0.0]) == 0.0
    with pytest.raises(ValueError):
        stats.summarize([1.0], discard_first=1)


def test_bandwidth_units() -> None:
    # 8 copies of 256 MiB in 40 ms = 53.7 GB/s (10^9 bytes/s).
    assert stats.bandwidth_gbps(8 * 256 * 2**20, 0.040) == pytest.approx(53.687, rel=1e-4)
    with pytest.raises(ValueError):
        stats.bandwidth_gbps(1, 0)


def _model_sweep(t0: float, bw_gbps: float) -> list[tuple[int, float]]:
    sizes = [4096 * 4**i for i in range(10)]
    return [(s, s / (t0 + s / (bw_gbps * 1e9)) / 1e9) for s in sizes]


def test_s95_on_the_latency_bandwidth_model() -> None:
    # t(S) = t0 + S/B with t0 = 3 us (p2p sample small-copy latency) and Gen4 ~26 GB/s:
    # S_half = t0 * B = 78 kB, S95 = 19 * S_half = 1.48 MB -> first sweep size above: 4 MiB.
    points = _model_sweep(3e-6, 26.0)
    assert stats.half_bandwidth_size(3e-6, 26.0) == pytest.approx(78_000)
    s95 = stats.saturation_size(points, plateau_gbps=26.0)
    assert s95 == 4 * 2**20
    # Against the best point of the sweep instead of the model plateau: same answer.
    assert stats.saturation_size(points) == 4 * 2**20
    # A plateau the sweep never reaches (the sweep is slower everywhere): no S95.
    assert stats.saturation_size(points, plateau_gbps=40.0) is None
    assert stats.saturation_size([]) is None


def test_percent_of_ceiling_on_published_numbers() -> None:
    gen5 = stats.pcie_ceiling_gbps(5, 16)
    gen4 = stats.pcie_ceiling_gbps(4, 16)
    assert gen5 == pytest.approx(63.015, rel=1e-3)
    # 55.35 GB/s H2D on Gen5 x16 (8x H100 log) = 87.8 % of raw.
    assert stats.percent_of(55.35, gen5) == pytest.approx(87.8, abs=0.05)
    # 26.0 GB/s on Gen4 x16 (nvbandwidth README) = 82.5 % of raw, 108 % of NCCL's 24 GB/s.
    assert stats.percent_of(26.0, gen4) == pytest.approx(82.5, abs=0.05)
    assert stats.pcie_nccl_model(4, 16) == 24.0
    assert stats.percent_of(26.0, stats.pcie_nccl_model(4, 16)) == pytest.approx(108.3, abs=0.05)
    assert stats.percent_of(1.0, None) is None
    assert stats.percent_of(None, 10.0) is None


@pytest.mark.parametrize(
    ("op", "ranks", "factor"),
    [
        ("all_reduce", 8, 14 / 8),
        ("all_reduce", 2, 1.0),
        ("allreduce", 4, 1.5),
        ("all_gather", 8, 7 / 8),
        ("reduce_scatter", 4, 0.75),
        ("alltoall", 2, 0.5),
        ("broadcast", 8, 1.0),
        ("sendrecv", 2, 1.0),
    ],
)
def test_busbw_factors(op: str, ranks: int, factor: float) -> None:
    assert stats.busbw_factor(op, ranks) == pytest.approx(factor)


def test_busbw_not_applicable_with_one_rank() -> None:
    assert stats.busbw_factor("all_reduce", 1) is None
    assert stats.busbw_gbps("all_reduce", 2**20, 1e-3, 1) is None
    assert stats.busbw_factor("all_gather", 1) is None
    assert stats.busbw_factor("mystery", 4) is None


def test_busbw_matches_nccl_tests_anchor() -> None:
    # nccl-tests#212 (sjeaugey): 8x H100 with NVLS, algbw ~275 GB/s <-> busbw ~480 GB/s.
    size = 8 * 2**30
    seconds = size / 275e9
    assert stats.algbw_gbps(size, seconds) == pytest.approx(275.0)
    assert stats.busbw_gbps("all_reduce", size, seconds, 8) == pytest.approx(481.25)


def test_allreduce_expected_sum() -> None:
    assert stats.allreduce_expected_sum(1) == 1
    assert stats.allreduce_expected_sum(4) == 10
    assert stats.allreduce_expected_sum(8) == 36


def test_scaling_efficiency_anchor() -> None:
    # PyTorch DDP benchmark README (V100 DGX, ResNet-50 bs32): 329 ex/s on 1 GPU,
    # 307 ex/s per GPU at 8 GPUs -> E(8) = 0.933.
    eff = stats.scaling_efficiency({1: 329.0, 8: 8 * 307.0})
    assert eff[1] == 1.0
    assert eff[8] == pytest.approx(0.9331, abs=1e-4)
    assert stats.scaling_efficiency({2: 100.0, 4: 150.0}) == {2: None, 4: None}


def test_adaptive_iterations() -> None:
    assert stats.adaptive_iterations(1e-3, 0.1, 20, 1000) == 100
    assert stats.adaptive_iterations(1.0, 0.1, 20, 1000) == 20
    assert stats.adaptive_iterations(1e-7, 0.1, 20, 1000) == 1000
    assert stats.adaptive_iterations(0.0, 0.1, 20, 1000) == 1000
    assert stats.adaptive_iterations(math.nan, 0.1, 5, 50) == 50


def test_percentile_and_mean() -> None:
    assert stats.percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert stats.percentile([5.0], 90) == 5.0
    assert stats.percentile(
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], 90
    ) == pytest.approx(9.1)
    assert stats.mean_or_none([None, 2.0, 4.0]) == 3.0
    assert stats.mean_or_none([None]) is None

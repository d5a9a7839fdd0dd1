"""The α–β communication model: arithmetic checked against hand-computed numbers."""

from __future__ import annotations

import math

import pytest

from pcidoc.doctor import alpha_beta, config

GB = 1e9


@pytest.mark.parametrize(
    ("ranks", "factor"),
    [(1, 0.0), (2, 1.0), (4, 1.5), (8, 1.75), (16, 1.875)],
)
def test_bus_factor_is_nccl_tests_definition(ranks: int, factor: float) -> None:
    assert alpha_beta.allreduce_bus_factor(ranks) == pytest.approx(factor)


def test_ring_alpha_uses_nccl_constants() -> None:
    # 8 ranks over NVLink, Simple protocol: 8.4 + 2*7*3.4 = 56 us (research/checks.md §6).
    assert alpha_beta.ring_allreduce_alpha_us(8, "nvlink") == pytest.approx(56.0)
    # PCIe: 8.4 + 14*5.7 = 88.2 us.
    assert alpha_beta.ring_allreduce_alpha_us(8, "pcie") == pytest.approx(88.2)
    assert alpha_beta.ring_allreduce_alpha_us(1) == 0.0
    # An unknown transport is priced like PCIe, not like NVLink.
    assert alpha_beta.ring_allreduce_alpha_us(8, "sys") == pytest.approx(88.2)


@pytest.mark.parametrize(
    ("busbw", "expected_ms"),
    [
        (480.0, 7.29),  # research §6 worked example: H100 NVLS busbw 480 -> ~7.3 ms
        (20.0, 175.0),  # PCIe Gen4 busbw 20 -> ~175 ms
    ],
)
def test_worked_example_two_gigabytes_eight_ranks(busbw: float, expected_ms: float) -> None:
    t = alpha_beta.allreduce_time_s(2 * GB, 8, busbw)
    assert t * 1000 == pytest.approx(expected_ms, rel=0.01)


def test_alpha_is_added_once_per_call() -> None:
    beta = alpha_beta.allreduce_time_s(2 * GB, 8, 480.0)
    with_alpha = alpha_beta.allreduce_time_s(2 * GB, 8, 480.0, alpha_us=56.0)
    assert with_alpha - beta == pytest.approx(56e-6)


def test_single_rank_costs_nothing_and_bad_bandwidth_raises() -> None:
    assert alpha_beta.allreduce_time_s(2 * GB, 1, 0.0) == 0.0
    with pytest.raises(ValueError):
        alpha_beta.allreduce_time_s(2 * GB, 8, 0.0)


@pytest.mark.parametrize(
    ("grad", "bucket", "calls"),
    [(100, None, 1), (100, 25, 4), (101, 25, 5), (10, 25, 1), (0, 25, 1)],
)
def test_bucket_count(grad: int, bucket: int | None, calls: int) -> None:
    assert alpha_beta.bucket_count(grad, bucket) == calls


def test_gradient_comm_time_pays_alpha_per_bucket() -> None:
    one = alpha_beta.gradient_comm_time_s(100e6, 8, 100.0, alpha_us=50.0, bucket_bytes=None)
    four = alpha_beta.gradient_comm_time_s(100e6, 8, 100.0, alpha_us=50.0, bucket_bytes=25e6)
    assert four - one == pytest.approx(3 * 50e-6)


def test_efficiency_with_and_without_overlap() -> None:
    assert alpha_beta.efficiency(0.1, 0.1) == pytest.approx(0.5)
    assert alpha_beta.efficiency(0.1, 0.1, overlap_s=0.05) == pytest.approx(0.1 / 0.15)
    assert alpha_beta.efficiency(0.1, 0.05, overlap_s=0.2) == 1.0


def test_accumulation_steps_reach_target() -> None:
    # t_c = 10 ms, t_comm = 20 ms: E_k = 10k / (10k + 20) >= 0.85 -> k >= 11.33 -> 12.
    k = alpha_beta.accumulation_steps_for(0.85, 0.010, 0.020)
    assert k == 12
    assert 12 * 0.010 / (12 * 0.010 + 0.020) >= 0.85
    assert 11 * 0.010 / (11 * 0.010 + 0.020) < 0.85
    assert alpha_beta.accumulation_steps_for(0.85, 0.010, 0.001) == 1
    assert alpha_beta.accumulation_steps_for(0.85, 0.001, 10.0) is None  # beyond the cap


def test_comm_model_what_ifs() -> None:
    model = alpha_beta.CommModel(
        ranks=8,
        gradient_bytes=2 * GB,
        busbw_gbps=20.0,
        alpha_us=alpha_beta.ring_allreduce_alpha_us(8, "pcie"),
        t_compute_s=0.2,
    )
    assert model.buckets == math.ceil(2 * GB / config.DDP_DEFAULT_BUCKET_BYTES)
    beta = 1.75 * 2 * GB / 20e9
    assert model.t_comm_s == pytest.approx(beta + model.buckets * 88.2e-6)
    assert model.efficiency == pytest.approx(0.2 / (0.2 + model.t_comm_s))
    assert model.comm_share == pytest.approx(1 - model.efficiency)

    accum = model.with_accumulation(4)
    assert accum.t_comm_s == pytest.approx(model.t_comm_s / 4)
    assert accum.efficiency > model.efficiency

    bigger = model.with_buckets(config.DDP_LARGE_BUCKET_BYTES)
    assert bigger.t_comm_s < model.t_comm_s
    assert model.t_comm_s - bigger.t_comm_s == pytest.approx(
        (model.buckets - alpha_beta.bucket_count(2 * GB, config.DDP_LARGE_BUCKET_BYTES)) * 88.2e-6
    )

    half = model.with_gradient_bytes(GB, "bf16")
    assert half.t_comm_s == pytest.approx(
        beta / 2 + alpha_beta.bucket_count(GB, config.DDP_DEFAULT_BUCKET_BYTES) * 88.2e-6
    )

    faster = model.with_busbw(40.0, "better placement")
    assert faster.t_comm_s < model.t_comm_s
    assert faster.comm_share == pytest.approx(1 - faster.efficiency)

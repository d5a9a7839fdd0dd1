"""The all-reduce and scaling probes FOR REAL with gloo on CPU, at 1, 2 and 4 ranks.

Small sizes and a small model keep it to a few seconds per launch on a 2-core runner. The
launch goes through the real subprocess runner, the real child, the spawn launcher and
``torch.distributed``; only sizes are shrunk.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("torch")

from pcidoc.model.capture import Capture
from pcidoc.probes import session
from pcidoc.probes.runner import ProbeOutcome, SubprocessProbeRunner
from tests.fakes.planted import plant, ran

SIZES = [4096, 65536, 262144]
RANKS = [1, 2, 4]


@pytest.fixture(scope="module")
def collectives_run(tmp_path_factory) -> tuple[ProbeOutcome, int]:
    """One launch of 4 gloo workers running the all-reduce ladder, then the scaling ladder
    (the ``collectives`` child that ``measure`` uses), started from a folder another user has
    planted modules in (``tests/fakes/planted.py``): neither the child nor its spawned workers
    may import them."""
    spec = session.collective_spec(
        "collectives", Capture.empty("live"), "gloo", "quick", ranks=RANKS
    )
    spec.params.update(
        {
            "sizes": SIZES,
            "warmup": 1,
            "min_iters": 3,
            "max_iters": 10,
            "target_s": 0.005,
            "width": 64,
            "depth": 3,
            "batch": 16,
            "warmup_steps": 2,
            "steps": 5,
            "busbw_iters": 3,
        }
    )
    spec.deadline_s = 120
    runner = SubprocessProbeRunner()
    progress = []
    folder = tmp_path_factory.mktemp("planted")
    markers = plant(folder)
    started_in = os.getcwd()
    os.chdir(folder)
    try:
        outcome = runner.run(spec, on_progress=progress.append)
    finally:
        os.chdir(started_in)
    assert ran(markers) == []
    assert runner.last_pgid is not None
    fractions = [p.fraction for p in progress]
    assert fractions == sorted(fractions)
    assert fractions[-1] == 1.0
    return outcome, runner.last_pgid


@pytest.fixture(scope="module")
def allreduce_run(collectives_run: tuple[ProbeOutcome, int]) -> tuple[ProbeOutcome, int]:
    outcome, pgid = collectives_run
    picked = ProbeOutcome(
        probe="allreduce",
        errors=outcome.errors,
        results=[r for r in outcome.results if r.kind == "collective"],
        stderr_tail=outcome.stderr_tail,
    )
    return picked, pgid


@pytest.fixture(scope="module")
def scaling_run(collectives_run: tuple[ProbeOutcome, int]) -> tuple[ProbeOutcome, int]:
    outcome, pgid = collectives_run
    picked = ProbeOutcome(
        probe="scaling",
        errors=outcome.errors,
        results=[r for r in outcome.results if r.kind == "scaling"],
        stderr_tail=outcome.stderr_tail,
    )
    return picked, pgid


def _group_gone(pgid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


def test_allreduce_gloo_1_2_4_ranks(allreduce_run: tuple[ProbeOutcome, int]) -> None:
    outcome, pgid = allreduce_run
    assert outcome.ok, (outcome.errors, outcome.stderr_tail)
    _group_gone(pgid)
    results = [r.measurement for r in outcome.results]
    assert [m.ranks for m in results] == RANKS
    for m in results:
        assert m.op == "all_reduce"
        assert m.backend == "gloo"
        assert m.tool == "pcidoc"
        assert m.correct is True
        assert [row.size_bytes for row in m.rows] == SIZES
        for row in m.rows:
            assert row.wrong == 0
            assert row.time_us
            assert row.time_us > 0
            if m.ranks == 1:
                # One rank moves nothing: neither algbw nor busbw is a bandwidth.
                assert row.algbw_gbps is None and row.busbw_gbps is None
            else:
                # algbw = S / t
                assert row.algbw_gbps == pytest.approx(
                    row.size_bytes / (row.time_us * 1e-6) / 1e9, rel=1e-4
                )
                factor = 2 * (m.ranks - 1) / m.ranks
                assert row.busbw_gbps == pytest.approx(row.algbw_gbps * factor, rel=1e-4)
        if m.ranks == 1:
            assert m.avg_busbw_gbps is None
        else:
            mean = sum(r.busbw_gbps for r in m.rows) / len(m.rows)
            assert m.avg_busbw_gbps == pytest.approx(mean, rel=1e-3)
            assert m.peak_busbw() is not None


def test_allreduce_extra_keeps_the_slowest_rank(allreduce_run: tuple[ProbeOutcome, int]) -> None:
    outcome, _pgid = allreduce_run
    for result in outcome.results:
        rows, extra_rows = result.measurement.rows, result.extra["rows"]
        for row, extra in zip(rows, extra_rows, strict=True):
            assert extra["time_max_us"] >= row.time_us * 0.999
            assert extra["iterations"] >= 3


def test_scaling_gloo_1_2_4_ranks(scaling_run: tuple[ProbeOutcome, int]) -> None:
    outcome, pgid = scaling_run
    assert outcome.ok, (outcome.errors, outcome.stderr_tail)
    _group_gone(pgid)
    [result] = outcome.results
    m = result.measurement
    assert m.backend == "gloo"
    assert m.model_params == 3 * (64 * 64 + 64)
    assert m.gradient_bytes == 4 * m.model_params
    assert m.per_rank_batch == 16
    assert [p.ranks for p in m.points] == RANKS
    base = m.points[0].throughput_samples_per_s
    assert m.points[0].efficiency == 1.0
    for point in m.points:
        assert point.throughput_samples_per_s > 0
        assert point.step_time_ms
        assert point.step_time_p90_ms
        assert point.step_time_p90_ms >= point.step_time_ms * 0.999
        assert point.throughput_samples_per_s == pytest.approx(
            point.ranks * 16 / (point.step_time_ms / 1e3), rel=1e-2
        )
        assert point.efficiency == pytest.approx(
            point.throughput_samples_per_s / (point.ranks * base), abs=1e-3
        )
    assert m.allreduce_busbw_gbps is not None
    assert m.allreduce_busbw_gbps > 0
    assert m.slowest_edge is None  # CPU ranks: no GPU topology
    assert result.extra["efficiency"]["1"] == 1.0


def test_gloo_specs_hide_the_gpus_and_cap_threads() -> None:
    spec = session.collective_spec(
        "scaling", Capture.empty("live"), "gloo", "quick", ranks=[1, 2, 4], cpu_count=2
    )
    assert spec.env["CUDA_VISIBLE_DEVICES"] == ""
    assert spec.params["threads_per_rank"] == 1
    assert spec.params["members"] == {"1": [0], "2": [0, 1], "4": [0, 1, 2, 3]}
    default = session.collective_spec(
        "scaling", Capture.empty("live"), "gloo", "quick", cpu_count=2
    )
    assert default.params["members"] == {"1": [0], "2": [0, 1]}

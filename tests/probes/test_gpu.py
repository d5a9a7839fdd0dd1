"""The CUDA probes on a real GPU (``gpu`` marker; skipped where torch sees no CUDA device)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pcidoc.model.capture import Capture
from pcidoc.probes import session
from pcidoc.probes.runner import SubprocessProbeRunner


def _cuda_count() -> int:
    code = "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    try:
        return int(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return 0


CUDA_COUNT = _cuda_count()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(CUDA_COUNT == 0, reason="needs a CUDA device visible to torch"),
]


def _capture() -> Capture:
    """This machine's facts. On a machine with a CUDA device a failing collection is a failure
    of the test, not an empty capture that lets the probes run on guessed GPU numbers."""
    from pcidoc.collect.live import collect_live

    capture = collect_live()
    assert capture.gpus, f"NVML saw no GPU: {capture.unavailable.get('gpus')}"
    return capture


def _env(capture: Capture) -> dict:
    outcome = SubprocessProbeRunner().run(session.env_spec(capture))
    assert outcome.ok, outcome.errors
    return outcome.info


def test_transfer_plateau_sanity() -> None:
    capture = _capture()
    spec = session.transfer_spec(capture, [0], "quick", _env(capture))
    runner = SubprocessProbeRunner()
    outcome = runner.run(spec)
    assert outcome.ok, (outcome.errors, outcome.stderr_tail)
    pinned = [
        r.measurement
        for r in outcome.results
        if r.measurement.memory == "pinned"
        and not r.measurement.bidirectional
        and r.measurement.method == "cuda-events"
        and r.measurement.sweep
    ]
    assert {t.direction for t in pinned} == {"h2d", "d2h"}
    for t in pinned:
        assert t.bandwidth_gbps > 0
        assert t.cov is not None
        assert t.cov < 0.2
        assert t.saturation_size_bytes is not None
    assert outcome.info.get("verified_gpu0")
    assert runner.last_pgid is not None
    with pytest.raises(ProcessLookupError):
        os.killpg(runner.last_pgid, 0)


@pytest.mark.skipif(CUDA_COUNT < 2, reason="needs 2 GPUs")
def test_p2p_pair() -> None:
    capture = _capture()
    spec = session.p2p_spec(capture, [0, 1], "quick", _env(capture))
    outcome = SubprocessProbeRunner().run(spec)
    assert outcome.ok, (outcome.errors, outcome.stderr_tail)
    verifications = [r.measurement for r in outcome.results if r.kind == "p2p_verification"]
    assert len(verifications) == 2
    assert all(v.ok for v in verifications)
    staged = [
        r.measurement for r in outcome.results if r.kind == "p2p" and r.measurement.p2p == "staged"
    ]
    assert staged
    assert staged[0].value(0, 1) > 0


@pytest.mark.skipif(CUDA_COUNT < 2, reason="needs 2 GPUs")
def test_nccl_allreduce_two_ranks() -> None:
    capture = _capture()
    spec = session.collective_spec(
        "allreduce", capture, "nccl", "quick", ranks=[1, 2], indices=[0, 1]
    )
    outcome = SubprocessProbeRunner().run(spec)
    assert outcome.ok, (outcome.errors, outcome.stderr_tail)
    by_ranks = {r.measurement.ranks: r.measurement for r in outcome.results}
    assert by_ranks[2].correct is True
    assert by_ranks[1].rows[0].busbw_gbps is None
    assert all(row.busbw_gbps and row.busbw_gbps > 0 for row in by_ranks[2].rows)


@pytest.mark.skipif(CUDA_COUNT < 2, reason="needs 2 GPUs")
def test_p2p_raw_peer_copies_and_peer_access_off() -> None:
    """On a GPU box: peer copies go through cudaMemcpyPeerAsync, and a capable pair is also
    timed with peer access off (the driver's staging)."""
    capture = _capture()
    spec = session.p2p_spec(capture, [0, 1], "quick", _env(capture))
    outcome = SubprocessProbeRunner().run(spec)
    assert outcome.ok, (outcome.errors, outcome.stderr_tail)
    uni = [
        r.measurement
        for r in outcome.results
        if r.kind == "p2p" and r.measurement.kind == "bandwidth" and not r.measurement.bidirectional
    ]
    assert all(
        "cudaMemcpyPeerAsync" in m.conditions["copy_method"] for m in uni if m.p2p != "staged"
    )
    if outcome.info["can_access_peer"][0][1]:
        assert any(m.p2p == "disabled" and m.value(0, 1) for m in uni)

"""Run the transfer and P2P probes' code on a CPU stand-in for torch.cuda (no GPU).

The numbers are meaningless (CPU copies timed by the host clock); these tests catch mistakes
in the probes' choreography and records before a GPU machine ever sees them. The real
measurements are covered by the ``gpu``-marked tests.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("torch")

from pcidoc.probes import cudautil, p2p, transfer
from pcidoc.probes.child import Emitter
from pcidoc.probes.runner import OutcomeBuilder, ProbeOutcome, ProbeSpec
from tests.probes.fake_cuda import FakeLibcudart, FakeTorch

KiB = 1024
MiB = 1024 * KiB


def _run(
    module, params: dict, fake: FakeTorch, tmp_path, monkeypatch, cudart: object = "fake"
) -> ProbeOutcome:
    monkeypatch.setattr(module, "import_torch", lambda: fake)
    # The CUDA runtime the P2P probe loads with ctypes: a stand-in (or none: the copy_ path).
    lib = FakeLibcudart() if cudart == "fake" else cudart
    fake.cudart_lib = lib
    monkeypatch.setattr(
        cudautil, "find_cudart", lambda torch: (lib, "fake" if lib else "libcudart not found")
    )
    path = tmp_path / "stream.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    affinity = os.sched_getaffinity(0)
    try:
        module.run(params, Emitter(fd, module.__name__.rsplit(".", 1)[1]))
    finally:
        os.close(fd)
        os.sched_setaffinity(0, affinity)
    builder = OutcomeBuilder(ProbeSpec(name="fake"))
    for line in path.read_bytes().splitlines():
        builder.feed(line)
    outcome = builder.finish()
    assert outcome.garbage_lines == 0
    return outcome


TRANSFER_OVERRIDES = {
    "plateau_bytes": 1 * MiB,
    "plateau_copies": 2,
    "plateau_trials": 3,
    "warmup_copies": 1,
    "sweep_sizes": [64 * KiB, 256 * KiB, 1 * MiB],
    "sweep_trials": 2,
    "sweep_target_s": 0.001,
    "sweep_max_copies": 8,
    "bidir_copies": 2,
    "bidir_trials": 3,
    "pageable_bytes": 512 * KiB,
    "pageable_copies": 2,
    "pageable_trials": 2,
    "numa_copies": 2,
    "numa_trials": 2,
    "numa_directions": ["h2d", "d2h"],
    "verify_bytes": 256 * KiB,
}


def test_transfer_probe_records(tmp_path, monkeypatch) -> None:
    cpus = f"0-{(os.cpu_count() or 1) - 1}"
    params = {
        "mode": "quick",
        "overrides": TRANSFER_OVERRIDES,
        "gpus": [
            {"index": 0, "ordinal": 0, "bus_id": None, "cpus": cpus, "numa_node": 0},
            {"index": 3, "ordinal": 1, "bus_id": None, "cpus": None, "numa_node": None},
        ],
        # Node 1's CPUs do not exist here: binding fails and is reported, nothing crashes.
        "numa_nodes": [
            {"id": 0, "cpus": cpus, "distances": [10, 21]},
            {"id": 1, "cpus": "4096-4097", "distances": [21, 10]},
        ],
        "numa_gpus": [0],
    }
    outcome = _run(transfer, params, FakeTorch(2), tmp_path, monkeypatch)
    assert outcome.ok, outcome.errors
    records = [r.measurement for r in outcome.results]
    pinned = [
        t
        for t in records
        if t.memory == "pinned"
        and not t.bidirectional
        and t.placement != "remote"
        and t.context
        and "cudaHostRegister" not in t.context
    ]
    assert {(t.gpu, t.direction) for t in pinned} == {
        (0, "h2d"),
        (0, "d2h"),
        (3, "h2d"),
        (3, "d2h"),
    }
    for t in pinned:
        assert t.method == "cuda-events"
        assert t.bandwidth_gbps > 0
        assert t.trials == 2
        assert [p.size_bytes for p in t.sweep] == [64 * KiB, 256 * KiB, 1 * MiB]
        assert t.min_gbps <= t.bandwidth_gbps <= t.max_gbps
    gpu0 = next(t for t in pinned if t.gpu == 0)
    assert gpu0.placement == "local"
    assert "GPU-local" in (gpu0.context or "")
    gpu3 = next(t for t in pinned if t.gpu == 3)
    assert gpu3.placement is None
    assert "affinity not set" in (gpu3.context or "")
    bidir = [t for t in records if t.bidirectional]
    assert len(bidir) == 4
    assert {
        r.extra.get("interferer_bytes_factor")
        for r in outcome.results
        if r.measurement.bidirectional
    } == {2}
    pageable = [t for t in records if t.memory == "pageable"]
    assert len(pageable) == 4
    assert all(t.method == "host-timer" for t in pageable)
    numa = [t for t in records if t.context and "cudaHostRegister" in t.context]
    assert {t.placement for t in numa} == {"local", "remote"}
    assert {t.host_numa_node for t in numa} == {0, 1}
    assert outcome.info.get("verified_gpu0") == 256 * KiB
    assert outcome.info.get("verified_gpu3") == 256 * KiB


P2P_OVERRIDES = {
    "size_bytes": 1 * MiB,
    "copies": 2,
    "trials": 3,
    "bidir_copies": 2,
    "bidir_trials": 3,
    "staged_bytes": 1 * MiB,
    "staged_chunk_bytes": 256 * KiB,
    "staged_trials": 2,
    "latency_copies": 5,
    "latency_trials": 1,
    "verify_bytes": 256 * KiB,
    "verify_far_offset_bytes": 2 * MiB,
}


@pytest.mark.parametrize("peer", [True, False])
def test_p2p_probe_records(tmp_path, monkeypatch, peer: bool) -> None:
    params = {
        "mode": "quick",
        "overrides": P2P_OVERRIDES,
        "gpus": [
            {"index": 1, "ordinal": 0},
            {"index": 5, "ordinal": 1},
            {"index": 6, "ordinal": 2},
        ],
    }
    fake = FakeTorch(3, peer=peer)
    outcome = _run(p2p, params, fake, tmp_path, monkeypatch)
    assert outcome.ok, outcome.errors
    mode = "enabled" if peer else "disabled"
    matrices = {
        (m.measurement.kind, m.measurement.p2p, m.measurement.bidirectional)
        for m in outcome.results
        if m.kind == "p2p"
    }
    expected = {
        ("bandwidth", mode, False),
        ("bandwidth", mode, True),
        ("bandwidth", "staged", False),
        ("latency", mode, False),
    }
    if peer:  # capable pairs are also timed with peer access off (p2pBandwidthLatencyTest)
        expected |= {("bandwidth", "disabled", False), ("latency", "disabled", False)}
    assert matrices == expected
    lib = fake.cudart_lib
    assert lib.peer_copies > 0  # raw cudaMemcpyPeerAsync, not copy_
    if peer:
        assert lib.disabled_calls > 0
        assert lib.peer_access == set()  # switched off after each pair (p2pBandwidthLatencyTest)
        assert lib.most_peers == 1  # one peer at a time: the 8-peer limit is never ours
    conditions = next(m.measurement.conditions for m in outcome.results if m.kind == "p2p")
    assert "cudaMemcpyPeerAsync" in conditions["copy_method"]
    assert len(conditions["copies_by_pair"]) == 6
    uni = next(
        m.measurement
        for m in outcome.results
        if m.kind == "p2p"
        and m.measurement.p2p == mode
        and not m.measurement.bidirectional
        and m.measurement.kind == "bandwidth"
    )
    assert uni.gpus == [1, 5, 6]
    assert uni.value(1, 1) is None
    assert uni.value(1, 6) > 0
    verifications = [r.measurement for r in outcome.results if r.kind == "p2p_verification"]
    assert len(verifications) == 6
    assert all(v.ok for v in verifications)
    assert outcome.info["can_access_peer"][0][1] is peer


def _cells(outcome, mode: str, kind: str = "bandwidth", bidirectional: bool = False):
    """(src, dst) -> value of the merged matrix of ``mode``; and its conditions."""
    for result in outcome.results:
        m = result.measurement
        found = (result.kind, getattr(m, "kind", None), getattr(m, "p2p", None))
        if found == ("p2p", kind, mode) and m.bidirectional == bidirectional:
            cells = {
                (a, b): m.values[i][j]
                for i, a in enumerate(m.gpus)
                for j, b in enumerate(m.gpus)
                if m.values[i][j] is not None
            }
            return cells, m.conditions
    return {}, {}


def test_a_refused_peer_enable_is_measured_as_what_it_is(tmp_path, monkeypatch) -> None:
    """10 GPUs without NVSwitch, device 0 already holding 8 peers (another part of the
    process enabled them): cudaDeviceEnablePeerAccess answers 711 for GPU0->GPU9. That pair
    is measured as the driver's copy without peer access, never labelled enabled; the 8
    already enabled ones are peer-to-peer, but cannot be switched off by the probe."""
    n = 10
    lib = FakeLibcudart()
    lib.peer_access = {(0, k) for k in range(1, 9)}
    params = {
        "mode": "quick",
        "overrides": {
            **P2P_OVERRIDES,
            "size_bytes": 64 * KiB,
            "staged_bytes": 64 * KiB,
            "staged_chunk_bytes": 64 * KiB,
            "staged_trials": 1,
            "trials": 2,
            "bidir_trials": 2,
            "latency_copies": 2,
            "verify_sizes": (),
            "verify_bytes": 64 * KiB,
            "verify_far_offset_bytes": 0,
        },
        "gpus": [{"index": i, "ordinal": i} for i in range(n)],
    }
    outcome = _run(p2p, params, FakeTorch(n), tmp_path, monkeypatch, cudart=lib)
    assert outcome.ok, outcome.errors
    enabled, _ = _cells(outcome, "enabled")
    disabled, conditions = _cells(outcome, "disabled")
    assert (0, 9) not in enabled and (0, 9) in disabled
    assert conditions["peer_access"]["0->9"] == "refused: cudaErrorTooManyPeers (711)"
    assert len(enabled) == n * (n - 1) - 1
    bidir, _ = _cells(outcome, "enabled", bidirectional=True)
    assert (0, 9) not in bidir and (9, 0) not in bidir  # both directions run together
    lat_enabled, _ = _cells(outcome, "enabled", kind="latency")
    assert (0, 9) not in lat_enabled
    # Copies labelled peer-to-peer really had peer access; the refused direction never did.
    on = {(a, b) for a, b, peer in lib.copy_log if peer}
    assert set(enabled) <= on
    assert (0, 9) not in on
    # Pairs the probe did not enable itself are not "switched off" (they never were).
    assert not [k for k in range(1, 9) if (0, k) in disabled]
    assert lib.peer_access == {(0, k) for k in range(1, 9)}  # left as the process had them
    verification = next(
        r.measurement
        for r in outcome.results
        if r.kind == "p2p_verification" and (r.measurement.src, r.measurement.dst) == (0, 9)
    )
    assert "no peer access (refused: cudaErrorTooManyPeers (711))" in (verification.detail or "")
    assert any("GPU0->GPU9" in m and "711" in m for _level, m in outcome.logs)


@pytest.mark.parametrize(
    ("conf", "words"),
    [
        ("expandable_segments:True", "expandable segments"),
        ("backend:cudaMallocAsync", "cudaMallocAsync allocator"),
    ],
)
def test_an_allocator_peer_access_does_not_reach_is_not_copied_raw(
    tmp_path, monkeypatch, conf: str, words: str
) -> None:
    """With expandable segments (cuMemMap) or cudaMallocAsync pools, peer access enabled
    through the runtime does not apply to torch's buffers: no raw peer copy is made, torch's
    copy_ (which grants its allocator's mappings) measures, and the conditions say so."""
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", conf)
    lib = FakeLibcudart()
    params = {
        "mode": "quick",
        "overrides": P2P_OVERRIDES,
        "gpus": [{"index": 0, "ordinal": 0}, {"index": 1, "ordinal": 1}],
    }
    outcome = _run(p2p, params, FakeTorch(2), tmp_path, monkeypatch, cudart=lib)
    assert outcome.ok, outcome.errors
    assert lib.peer_copies == 0 and lib.peer_access == set()
    _, conditions = _cells(outcome, "enabled")
    assert words in conditions["allocator"]
    assert conditions["copy_method"].startswith("torch copy_")
    assert "raw peer copies bypass" in conditions["copy_method"]
    assert outcome.info["allocator"] == conditions["allocator"]


def test_the_p2p_child_gets_no_allocator_settings_and_says_so(tmp_path, monkeypatch) -> None:
    from pcidoc.probes import session
    from pcidoc.probes.runner import child_environment
    from tests.builders import machine

    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    spec = session.p2p_spec(machine(2, link="PIX"), [0, 1], "quick")
    child = child_environment(spec.env, spec.unset_env)
    assert "PYTORCH_CUDA_ALLOC_CONF" not in child and "PYTORCH_ALLOC_CONF" not in child
    set_aside = spec.params["allocator_conf_set_aside"]
    assert set_aside == {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF")  # as in the child
    params = {
        "mode": "quick",
        "overrides": P2P_OVERRIDES,
        "gpus": [{"index": 0, "ordinal": 0}, {"index": 1, "ordinal": 1}],
        "allocator_conf_set_aside": set_aside,
    }
    outcome = _run(p2p, params, FakeTorch(2), tmp_path, monkeypatch)
    _, conditions = _cells(outcome, "enabled")
    assert conditions["allocator"] == (
        "torch caching allocator, cudaMalloc segments "
        "(PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True' set aside for this probe)"
    )
    assert "cudaMemcpyPeerAsync" in conditions["copy_method"]


def test_p2p_needs_two_gpus(tmp_path, monkeypatch) -> None:
    from pcidoc.probes.child import ProbeUnavailable

    monkeypatch.setattr(p2p, "import_torch", lambda: FakeTorch(1))
    with pytest.raises(ProbeUnavailable):
        p2p.run({"mode": "quick", "gpus": [{"index": 0, "ordinal": 0}]}, Emitter(2, "p2p"))


def test_wrong_bytes_are_reported(tmp_path, monkeypatch) -> None:
    """A copy that returns wrong data is an error (transfer) / a failed verification (p2p)."""
    from pcidoc.probes import cudautil

    monkeypatch.setattr(cudautil, "count_mismatches", lambda torch, buffer, seed: 7)
    params = {
        "mode": "quick",
        "overrides": TRANSFER_OVERRIDES,
        "gpus": [{"index": 0, "ordinal": 0, "bus_id": None, "cpus": None, "numa_node": None}],
    }
    outcome = _run(transfer, params, FakeTorch(1), tmp_path, monkeypatch)
    messages = [e.message for e in outcome.errors]
    assert any("H2D copy" in m and "wrong data (7 bytes differ)" in m for m in messages)
    assert all("bytes verified" not in (r.measurement.context or "") for r in outcome.results)
    params = {
        "mode": "quick",
        "overrides": P2P_OVERRIDES,
        "gpus": [{"index": 0, "ordinal": 0}, {"index": 1, "ordinal": 1}],
    }
    outcome = _run(p2p, params, FakeTorch(2), tmp_path, monkeypatch)
    verifications = [r.measurement for r in outcome.results if r.kind == "p2p_verification"]
    assert verifications
    assert not any(v.ok for v in verifications)
    assert "7 of 65536 bytes differ" in (verifications[0].detail or "")


def test_p2p_without_libcudart_falls_back_to_copy_and_says_so(tmp_path, monkeypatch) -> None:
    params = {
        "mode": "quick",
        "overrides": P2P_OVERRIDES,
        "gpus": [{"index": 0, "ordinal": 0}, {"index": 1, "ordinal": 1}],
    }
    outcome = _run(p2p, params, FakeTorch(2), tmp_path, monkeypatch, cudart=None)
    assert outcome.ok, outcome.errors
    uni = [
        r.measurement
        for r in outcome.results
        if r.kind == "p2p" and r.measurement.kind == "bandwidth" and not r.measurement.bidirectional
    ]
    assert {m.p2p for m in uni} == {"enabled", "staged"}  # peer access cannot be switched off
    method = uni[0].conditions["copy_method"]
    assert method.startswith("torch copy_") and "libcudart not found" in method
    assert any("libcudart not found" in message for _level, message in outcome.logs)


def test_copies_per_trial_follow_the_warm_up() -> None:
    assert p2p.copies_for(0.5, 0.05, 8) == 1  # a crawling pair: one copy per trial
    assert p2p.copies_for(0.001, 0.05, 8) == 8  # a fast one: the mode's cap
    assert p2p.copies_for(0.01, 0.05, 8) == 5


def test_p2p_verification_covers_sizes_offsets_and_both_directions() -> None:
    plan = p2p.verify_plan(p2p.p2p_params({"mode": "quick", "overrides": P2P_OVERRIDES}), 1 * MiB)
    assert {size for size, _ in plan} == {64 * KiB, 256 * KiB, 1 * MiB}
    assert {offset for _, offset in plan} == {0, 4097, 1 * MiB - 256 * KiB}


def test_peer_copy_that_returns_zeros_fails_p2p_integrity(tmp_path, monkeypatch) -> None:
    """The fake peer copy writes zeros: every direction fails verification, the host-staged
    control is right, and the doctor says P2P is enabled but the data is wrong."""
    from pcidoc.doctor import run
    from pcidoc.model.report import ReportSource
    from tests.builders import machine

    params = {
        "mode": "quick",
        "overrides": P2P_OVERRIDES,
        "gpus": [{"index": 0, "ordinal": 0}, {"index": 1, "ordinal": 1}],
    }
    outcome = _run(p2p, params, FakeTorch(2), tmp_path, monkeypatch, cudart=FakeLibcudart("zeros"))
    verifications = [r.measurement for r in outcome.results if r.kind == "p2p_verification"]
    assert {(v.src, v.dst) for v in verifications} == {(0, 1), (1, 0)}
    assert not any(v.ok for v in verifications)
    assert all(
        "staged through host memory arrived intact" in (v.detail or "") for v in verifications
    )
    # 3 sizes at offset 0, 2 more offsets, 1 copy past the (shrunk) far offset
    assert all((v.detail or "").startswith("6 copies") for v in verifications)
    capture = machine(2, link="PHB")
    capture.measurements.p2p_verification = verifications
    report = run(capture, ReportSource(kind="live"), generated_at="2026-01-01T00:00:00Z")
    result = report.check("p2p.integrity")
    assert result is not None and result.severity == "fail"
    assert "data is wrong" in result.summary
    assert any("NCCL_P2P_DISABLE=1" in step for step in result.remediation)
    assert any("iommu=pt" in step for step in result.remediation)


def test_peer_copy_that_never_completes_names_the_pair_as_hanging(tmp_path, monkeypatch) -> None:
    from tests.probes.fake_cuda import FakeEvent

    class StuckEvent(FakeEvent):
        def query(self) -> bool:
            return False

    fake = FakeTorch(2)
    fake.cuda.Event = StuckEvent  # type: ignore[misc]
    params = {
        "mode": "quick",
        "overrides": {**P2P_OVERRIDES, "verify_timeout_s": 0.01},
        "gpus": [{"index": 0, "ordinal": 0}, {"index": 3, "ordinal": 1}],
    }
    # The child raises (its parent reports the error); what it emitted first is in the stream.
    with pytest.raises(RuntimeError, match=r"GPU0->GPU3: .*hanging"):
        _run(p2p, params, fake, tmp_path, monkeypatch)
    builder = OutcomeBuilder(ProbeSpec(name="fake"))
    for line in (tmp_path / "stream.jsonl").read_bytes().splitlines():
        builder.feed(line)
    outcome = builder.finish()
    verifications = [r.measurement for r in outcome.results if r.kind == "p2p_verification"]
    assert [(v.src, v.dst, v.ok) for v in verifications] == [(0, 3, False)]
    assert "hanging" in (verifications[0].detail or "")
    assert not [r for r in outcome.results if r.kind == "p2p"]  # nothing timed after a hang

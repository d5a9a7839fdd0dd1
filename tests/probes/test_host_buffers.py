"""The transfer probe's pinned host buffers on a torch that cannot empty its pinned cache.

torch <= 2.4 has no ``torch._C._host_emptyCache``: a pinned buffer freed after GPU0 stays in
torch's cache and becomes GPU1's buffer, on GPU0's NUMA node. The probe must then pin fresh,
first-touched memory per GPU itself (``cudaHostRegister``), unpin it after that GPU, and never
call a placement "local" that it cannot know.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("torch")

from pcidoc.probes import transfer
from tests.probes.fake_cuda import FakeCudart, FakeTorch, OldTorch
from tests.probes.test_cuda_code_paths import TRANSFER_OVERRIDES, _run

CPUS = f"0-{(os.cpu_count() or 1) - 1}"


def _params(numa_node: int | None) -> dict:
    return {
        "mode": "quick",
        "overrides": TRANSFER_OVERRIDES,
        "gpus": [
            {"index": 0, "ordinal": 0, "bus_id": None, "cpus": CPUS, "numa_node": numa_node},
            {"index": 1, "ordinal": 1, "bus_id": None, "cpus": CPUS, "numa_node": numa_node},
        ],
    }


def test_old_torch_gets_fresh_registered_buffers_per_gpu(tmp_path, monkeypatch) -> None:
    fake = OldTorch(count=2)
    assert not transfer.can_empty_host_cache(fake)
    outcome = _run(transfer, _params(0), fake, tmp_path, monkeypatch)
    assert outcome.ok, outcome.errors
    cudart = fake.cuda.cudart()
    assert fake.pinned_allocations == 0, "torch's caching pinned allocator was used"
    # Per GPU: the main buffer and the bidirectional step's second buffer, each pinned here.
    assert cudart.register_calls >= 4
    assert cudart.registered == set(), "buffers left pinned after their GPU"
    gpus = {t.measurement.gpu for t in outcome.results if t.kind == "transfer"}
    assert gpus == {0, 1}


def test_new_torch_keeps_the_caching_allocator(tmp_path, monkeypatch) -> None:
    fake = FakeTorch(count=2)
    assert transfer.can_empty_host_cache(fake)
    outcome = _run(transfer, _params(0), fake, tmp_path, monkeypatch)
    assert outcome.ok, outcome.errors
    assert fake.pinned_allocations >= 4
    assert fake.cuda.cudart().register_calls == 0
    assert fake._C.host_cache_releases == 2  # emptied after each GPU


def test_placement_is_unknown_when_the_buffer_may_be_another_gpus(tmp_path, monkeypatch) -> None:
    """Pinning fails, torch's cache is used and page placement cannot be sampled (no NUMA
    node known): "local" would rest on the thread binding alone."""
    fake = OldTorch(count=2)
    fake.cuda._cudart = FakeCudart(register_error=1)
    outcome = _run(transfer, _params(None), fake, tmp_path, monkeypatch)
    assert outcome.ok, outcome.errors
    pinned = [
        r.measurement
        for r in outcome.results
        if r.kind == "transfer" and r.measurement.memory == "pinned"
    ]
    assert pinned
    assert all(m.placement is None for m in pinned)
    assert all("placement unknown" in (m.context or "") for m in pinned)

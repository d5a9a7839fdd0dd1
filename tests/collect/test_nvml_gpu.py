"""The real NVML collection on a real GPU (``gpu`` marker; skipped without an NVIDIA driver).

Everything else about collection is tested against the fake backend; this runs the same code
over the real ``pynvml`` bindings, so the field ids, units and error codes the fake assumes are
checked against a driver where one is available.
"""

from __future__ import annotations

import pytest


def _driver_gpu_count() -> int:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return 0
    try:
        return int(pynvml.nvmlDeviceGetCount())
    finally:
        pynvml.nvmlShutdown()


GPU_COUNT = _driver_gpu_count()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(GPU_COUNT == 0, reason="needs an NVIDIA driver with at least one GPU"),
]


def test_live_collection_reads_every_gpu_through_real_nvml() -> None:
    from pcidoc.collect.live import collect_live

    capture = collect_live()
    assert capture.origin.kind == "live"
    assert len(capture.gpus) == GPU_COUNT, capture.unavailable
    for gpu in capture.gpus:
        assert gpu.nvml_error is None, (gpu.index, gpu.nvml_error)
        assert gpu.name and gpu.bus_id and gpu.uuid
    if GPU_COUNT >= 2:
        assert capture.topology is not None and capture.topology.links


def test_the_counter_sampler_reads_real_counters_twice() -> None:
    from pcidoc.tui.live import LiveMachine  # the TUI's one NVML session, real backend

    session = LiveMachine()
    try:
        capture = session.collect()
        sampler = session.sampler(capture)
        assert sampler is not None
        first = sampler.sample()
        second = sampler.sample()
        assert second.t >= first.t
        assert {g.index for g in second.gpus} == {g.index for g in capture.gpus}
    finally:
        session.close()

"""PyTorch profiler trace import, on SYNTHETIC traces from tests/importers/kineto.py."""

from __future__ import annotations

import pytest

from pcidoc.errors import PcidocError
from pcidoc.model.measurements import WorkloadEvidence
from tests.importers.helpers import load, warnings_of
from tests.importers.kineto import TraceBuilder


def _two_steps() -> TraceBuilder:
    trace = TraceBuilder(world_size=8)
    trace.step(1, 0.0, 1000.0)
    trace.step(2, 1000.0, 1000.0)
    trace.kernel("ampere_sgemm_128x64_tn", 100.0, 300.0)  # compute 100-400
    trace.kernel("ampere_sgemm_128x64_tn", 1100.0, 400.0)  # compute 1100-1500
    trace.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)", 300.0, 400.0, stream=20)
    trace.kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 1400.0, 200.0, stream=20)
    trace.memcpy("Memcpy HtoD (Pageable -> Device)", 50.0, 100.0, size=1 << 20)
    trace.memcpy("Memcpy HtoD (Pageable -> Device)", 1050.0, 100.0, size=1 << 20)
    trace.memcpy("Memcpy DtoH (Device -> Pinned)", 1900.0, 50.0, bandwidth_gbps=10.0)
    return trace


def _evidence(text: str) -> WorkloadEvidence:
    cap = load(text, names=["rank0.pt.trace.json"])
    (evidence,) = cap.measurements.workloads
    return evidence


def test_steps_memcpy_and_nccl_shares() -> None:
    evidence = _evidence(_two_steps().text())
    assert evidence.steps == 2
    assert evidence.step_time_ms == pytest.approx(1.0)
    # NCCL runs 300-700 and 1400-1600: 600 us of 2000 us.
    assert evidence.nccl_time_share == pytest.approx(0.3)
    # Not hidden behind compute: 400-700 and 1500-1600: 400 us.
    assert evidence.nccl_exposed_share == pytest.approx(0.2)
    assert evidence.ranks == 8
    assert evidence.source == "import:rank0.pt.trace.json"
    kinds = {m.kind: m for m in evidence.memcpy}
    h2d = kinds["Memcpy HtoD (Pageable -> Device)"]
    assert (h2d.direction, h2d.memory, h2d.count, h2d.bytes, h2d.time_us) == (
        "h2d",
        "pageable",
        2,
        2 << 20,
        200.0,
    )
    d2h = kinds["Memcpy DtoH (Device -> Pinned)"]
    assert (d2h.direction, d2h.memory, d2h.count) == ("d2h", "pinned", 1)
    assert d2h.bytes == 500_000  # 10 GB/s x 50 us


def test_bare_event_list_without_gpu_step_mirrors() -> None:
    trace = TraceBuilder()
    trace.step(7, 0.0, 500.0, gpu=False)
    trace.kernel("nccl:all_gather", 0.0, 100.0)
    evidence = _evidence(trace.text(bare_list=True))
    assert evidence.steps == 1
    assert evidence.nccl_time_share == pytest.approx(0.2)
    assert evidence.nccl_exposed_share == pytest.approx(0.2)
    assert evidence.ranks is None


def test_no_steps_uses_the_span_of_the_kernels() -> None:
    trace = TraceBuilder()
    trace.kernel("elementwise_kernel", 0.0, 100.0)
    trace.kernel("ncclDevKernel_Broadcast_RING_LL", 50.0, 150.0, stream=3)
    cap = load(trace.text())
    (evidence,) = cap.measurements.workloads
    assert evidence.steps is None
    assert evidence.nccl_time_share == pytest.approx(0.75)
    assert evidence.nccl_exposed_share == pytest.approx(0.5)
    assert "no ProfilerStep#N annotations" in warnings_of(cap)


def test_trace_without_nccl() -> None:
    trace = TraceBuilder()
    trace.step(1, 0.0, 100.0)
    trace.kernel("vectorized_elementwise_kernel", 10.0, 20.0)
    evidence = _evidence(trace.text())
    assert evidence.nccl_time_share == 0.0
    assert evidence.nccl_exposed_share == 0.0


def test_json_that_is_not_a_trace_is_unrecognised() -> None:
    with pytest.raises(PcidocError, match="no supported output recognised"):
        load('{"schema": "something else", "items": [1, 2]}')


def test_damaged_trace_json_is_a_warning_next_to_other_files() -> None:
    damaged = _two_steps().text()[:-200]
    cap = load(damaged, "        GPU0    CPU Affinity\nGPU0     X      0-3\n")
    assert cap.measurements.workloads == []
    assert "JSON is incomplete or damaged" in warnings_of(cap)
    assert "nothing recognised in this file" in warnings_of(cap)

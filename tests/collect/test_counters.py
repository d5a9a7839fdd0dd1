"""The counter sampler: cumulative counters only, one FieldValues call per GPU, cheap."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pcidoc.collect.counters import CounterSampler, discover_links, measure_overhead
from pcidoc.collect.live import collect_live
from pcidoc.model.counters import rates
from tests.fakes.fake_nvml import FakeGpu, FakeNvLink, FakeNvmlBackend


def _clock(step: float = 1.0) -> Iterator[float]:
    t = 0.0
    while True:
        yield t
        t += step


def _loaded_hgx(n: int = 8) -> FakeNvmlBackend:
    fake = FakeNvmlBackend.hgx(n=n)
    for gpu in fake.gpus:
        gpu.pcie_tx_bytes_per_s = 2e9
        gpu.pcie_rx_bytes_per_s = 1e9
        for link in gpu.nvlinks or []:
            link.tx_kib_per_s = 1_000_000.0  # 1.024 GB/s per link
    assert fake.init() is None
    return fake


def test_sample_reads_one_field_values_call_per_gpu_and_no_throughput_call() -> None:
    fake = _loaded_hgx()
    sampler = CounterSampler(fake)
    fake.calls.clear()
    sample = sampler.sample()
    assert len(sample.gpus) == 8
    assert fake.calls["field_values"] == 8
    assert set(fake.calls) == {
        "field_values",
        "pcie_current_gen",
        "pcie_current_width",
        "performance_state",
    }
    gpu = sample.gpus[0]
    assert len(gpu.nvlinks) == 18
    assert gpu.nvlinks[0].up is True
    assert gpu.nvlinks[0].errors == 0
    assert (gpu.link_gen, gpu.link_width, gpu.pstate) == (5, 16, 0)
    assert sample.errors == ()


def test_rates_from_two_samples_match_the_fake_rates() -> None:
    fake = _loaded_hgx(n=2)
    ticks = _clock(2.0)
    sampler = CounterSampler(fake, clock=lambda: next(ticks))
    first = sampler.sample()
    fake.advance(2.0)
    second = sampler.sample()
    (r0, r1) = rates(first, second)
    assert r0.pcie_tx_gbps == pytest.approx(2.0)
    assert r0.pcie_rx_gbps == pytest.approx(1.0)
    assert r1.nvlink_tx_gbps[3] == pytest.approx(1.024)
    assert r0.replays_delta == 0


def test_errors_and_lost_gpu_are_reported_not_raised() -> None:
    gpus = [
        FakeGpu(bus_id="0000:01:00.0", field_errors={197: "NOT_SUPPORTED"}),
        FakeGpu(bus_id="0000:02:00.0"),
    ]
    fake = FakeNvmlBackend(gpus)
    fake.init()
    sampler = CounterSampler(fake, [0, 1])
    fake.gpus[1].lost = True
    fake.calls.clear()
    sample = sampler.sample()
    assert fake.calls["pcie_current_gen"] == 1  # the lost GPU is not queried further
    assert sample.gpus[0].pcie_tx_bytes is None
    assert sample.gpus[0].pcie_rx_bytes == 0
    assert sample.gpus[1].pcie_tx_bytes is None
    assert any(e == "GPU1: NVML: GPU_IS_LOST" for e in sample.errors)
    assert any(e.startswith("GPU0: PCIe byte counters") for e in sample.errors)


def test_link_discovery_and_pcie_only_gpus() -> None:
    fake = FakeNvmlBackend(
        [
            FakeGpu(bus_id="0000:01:00.0", nvlinks=[FakeNvLink(link=0), FakeNvLink(link=2)]),
            FakeGpu(bus_id="0000:02:00.0", nvlinks=None),
        ]
    )
    fake.init()
    assert discover_links(fake, 0) == [0, 2]
    assert discover_links(fake, 1) == []
    sampler = CounterSampler(fake)
    assert sampler.links == {0: (0, 2), 1: ()}
    assert [link.link for link in sampler.sample().gpus[0].nvlinks] == [0, 2]


def test_for_capture_reuses_links_and_reads_aer(tmp_path: Path) -> None:
    from tests.collect.fakefs import GPU_3D, NVIDIA, FakeSysfs

    sysfs = FakeSysfs(tmp_path / "sys")
    sysfs.add_device(
        ["pci0000:00", "0000:18:00.0"], vendor=NVIDIA, cls=GPU_3D, aer={"correctable": 5}
    )
    fake = _loaded_hgx(n=2)
    capture = collect_live(
        sys_root=str(sysfs.root),
        proc_root=str(tmp_path),
        etc_root=str(tmp_path),
        backend=fake,
        environ={},
    )
    fake.calls.clear()
    sampler = CounterSampler.for_capture(fake, capture, sys_root=str(sysfs.root))
    assert "nvlink_state" not in fake.calls  # links came from the capture
    sample = sampler.sample()
    assert sample.gpus[0].aer_correctable == 5
    assert sample.gpus[1].aer_correctable is None  # not in the fake sysfs


def test_overhead_within_budget_for_8_gpus() -> None:
    fake = _loaded_hgx(n=8)
    sampler = CounterSampler(fake)
    overhead = measure_overhead(sampler, samples=50, between=lambda: fake.advance(1.0))
    assert overhead.gpus == 8
    # Budget: 1 % of one core at 1 Hz = 10 ms of CPU per sample (research/probes.md §5).
    assert overhead.cpu_s_per_sample < 0.010
    assert overhead.core_percent(1.0) < 1.0
    assert overhead.cpu_s_per_gpu_sample == pytest.approx(overhead.cpu_s_per_sample / 8)


@pytest.mark.parametrize("branch", ["R535", "R550"])
def test_pcie_throughput_falls_back_where_fields_197_198_are_missing(branch: str) -> None:
    gpu = FakeGpu(bus_id="0000:01:00.0", pcie_tx_bytes_per_s=4.096e9, pcie_rx_bytes_per_s=1.024e9)
    fake = FakeNvmlBackend([gpu], driver_branch=branch)
    assert fake.init() is None
    ticks = _clock(1.0)
    sampler = CounterSampler(fake, clock=lambda: next(ticks))
    first = sampler.sample()
    fake.advance(1.0)
    second = sampler.sample()
    assert second.gpus[0].pcie_tx_bytes is None  # no cumulative counter on this branch
    (r0,) = rates(first, second)
    assert r0.pcie_tx_gbps == pytest.approx(4.096)
    assert r0.pcie_rx_gbps == pytest.approx(1.024)
    assert not [e for e in second.errors if "PCIe" in e]


def test_pcie_throughput_failing_too_is_reported_with_both_reasons() -> None:
    gpu = FakeGpu(bus_id="0000:01:00.0", errors={"pcie_throughput": "NO_PERMISSION"})
    fake = FakeNvmlBackend([gpu], driver_branch="R550")
    fake.init()
    sample = CounterSampler(fake).sample()
    assert sample.gpus[0].pcie_tx_bytes_per_s is None
    assert sample.errors == (
        "GPU0: PCIe byte counters: NVML: NOT_SUPPORTED; PCIe throughput: NVML: NO_PERMISSION",
    )


def _blackwell(branch: str) -> FakeNvmlBackend:
    links = [
        FakeNvLink(link=k, errors={"recovery_events": 1, "effective_errors": 2, "replay": 9})
        for k in range(2)
    ]
    gpu = FakeGpu(bus_id="0000:01:00.0", architecture="blackwell", nvlinks=links)
    fake = FakeNvmlBackend([gpu], driver_branch=branch)
    fake.init()
    return fake


def test_blackwell_link_errors_come_from_the_r570_fields() -> None:
    fake = _blackwell("R580")
    ticks = _clock(1.0)
    sampler = CounterSampler(fake, clock=lambda: next(ticks))
    first = sampler.sample()
    assert [link.errors for link in first.gpus[0].nvlinks] == [3, 3]  # not the DL replay 9
    fake.gpus[0].nvlinks[1].errors["effective_errors"] += 5  # type: ignore[index]
    second = sampler.sample()
    (r0,) = rates(first, second)
    assert r0.nvlink_errors_delta == {0: 0, 1: 5}
    assert second.errors == ()


def test_no_nvlink_error_counter_at_all_says_not_available_not_zero() -> None:
    fake = _blackwell("R550")  # synthetic: a driver without the R570 fields
    ticks = _clock(1.0)
    sampler = CounterSampler(fake, clock=lambda: next(ticks))
    first, second = sampler.sample(), sampler.sample()
    assert [link.errors for link in second.gpus[0].nvlinks] == [None, None]
    (r0,) = rates(first, second)
    assert r0.nvlink_errors_delta == {}
    assert any("NVLink error counters not available" in e for e in second.errors)


def test_a_sleeping_link_is_not_up() -> None:
    gpu = FakeGpu(
        bus_id="0000:01:00.0", nvlinks=[FakeNvLink(link=0), FakeNvLink(link=1, sleep=True)]
    )
    fake = FakeNvmlBackend([gpu])
    fake.init()
    links = CounterSampler(fake).sample().gpus[0].nvlinks
    assert [(link.state, link.up) for link in links] == [("up", True), ("sleep", False)]


def test_a_link_with_traffic_disabled_is_not_up() -> None:
    """NVML 13's ACTIVE_TRAFFIC_DISABLED (field 165 = 3): trained, but it moves no data."""
    gpu = FakeGpu(
        bus_id="0000:01:00.0",
        nvlinks=[FakeNvLink(link=0), FakeNvLink(link=1, traffic_disabled=True)],
    )
    fake = FakeNvmlBackend([gpu])
    fake.init()
    links = CounterSampler(fake).sample().gpus[0].nvlinks
    assert [(link.state, link.up) for link in links] == [("up", True), ("down", False)]


def test_a_failed_field_call_is_one_reason_not_a_blackwell_explanation() -> None:
    gpu = FakeGpu(
        bus_id="0000:01:00.0",
        nvlinks=[FakeNvLink(link=0)],
        errors={"field_values": "NO_PERMISSION"},
    )
    fake = FakeNvmlBackend([gpu])
    fake.init()
    sampler = CounterSampler(fake, links={0: [0]})
    errors = sampler.sample().errors
    assert errors[0] == "GPU0: NVML: NO_PERMISSION"
    assert not [e for e in errors if "NVLink error counters" in e]

"""One fake machine, every fake driver branch: the command line (``collect_live`` opening and
closing its own NVML session) and the TUI (:class:`pcidoc.tui.live.LiveMachine`, which holds a
session for its counter sampler) must report the same topology and link facts, and the TUI's
counters must carry PCIe throughput on every branch (fields 197/198 on R555 and later,
``nvmlDeviceGetPcieThroughput`` before). All values are synthetic."""

from __future__ import annotations

import pytest

from pcidoc.collect.live import collect_live
from pcidoc.model.capture import Capture
from pcidoc.model.counters import rates
from pcidoc.tui.live import LiveMachine
from tests.fakes.fake_nvml import DRIVER_BRANCHES, FakeGpu, FakeNvLink, FakeNvmlBackend

# Synthetic addresses no sysfs of a test machine holds: what the matrix knows about PCIe pairs
# can only come from NVML.
BUSES = ("0000:e1:00.0", "0000:e2:00.0", "0000:e3:00.0", "0000:e4:00.0")


def _machine(branch: str) -> FakeNvmlBackend:
    """Four GPUs: 0 and 1 bridged by two NVLinks (one asleep), 2 and 3 PCIe only."""
    gpus = [
        FakeGpu(
            bus_id=bus,
            architecture="ampere",
            cpu_affinity="0-7",
            pcie_tx_bytes_per_s=3.0e9 + index * 1e8,
            pcie_rx_bytes_per_s=1.0e9,
        )
        for index, bus in enumerate(BUSES)
    ]
    for me, peer in ((0, 1), (1, 0)):
        gpus[me].nvlinks = [
            FakeNvLink(
                link=k,
                version=4,
                remote_bus_id=BUSES[peer],
                remote_type="gpu",
                speed_mbps=25_000,
                sleep=k == 1,
                errors={"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0},
            )
            for k in range(2)
        ]
    topology = {(0, 1): 10, (0, 2): 30, (1, 2): 30, (0, 3): 50, (1, 3): 50, (2, 3): 40}
    return FakeNvmlBackend(gpus, topology=topology, default_p2p="OK", driver_branch=branch)


def _link_facts(capture: Capture) -> list[list[dict]]:
    return [[link.model_dump(by_alias=True) for link in gpu.nvlinks] for gpu in capture.gpus]


@pytest.mark.parametrize("branch", sorted(DRIVER_BRANCHES))
def test_cli_and_tui_report_the_same_machine_on_every_branch(branch: str) -> None:
    cli = collect_live(backend=_machine(branch), environ={})

    tui_backend = _machine(branch)
    session = LiveMachine(lambda: tui_backend)
    try:
        tui = session.collect()
        assert tui_backend.refs == 1  # the TUI keeps its session for the sampler
        sampler = session.sampler(tui)
        assert sampler is not None
        ticks = iter((100.0, 101.0))
        sampler.clock = lambda: next(ticks)  # one synthetic second between the samples
        first = sampler.sample()
        tui_backend.advance(1.0)
        second = sampler.sample()
    finally:
        session.close()
    assert tui_backend.refs == 0

    assert cli.topology.labels == tui.topology.labels == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert cli.topology.links == tui.topology.links
    assert cli.topology.source == tui.topology.source == "nvml"
    assert cli.topology.link("GPU0", "GPU1") == "NV2"  # the sleeping link still joins them
    assert cli.topology.link("GPU0", "GPU2") == "PHB"
    assert cli.topology.link("GPU2", "GPU3") == "NODE"
    assert cli.topology.link("GPU1", "GPU3") == "SYS"
    assert "topology" not in cli.unavailable
    assert _link_facts(cli) == _link_facts(tui)
    assert [link.state for link in cli.gpus[0].nvlinks] == ["up", "sleep"]
    assert cli.p2p.matrices == tui.p2p.matrices

    by_gpu = {r.index: r for r in rates(first, second)}
    for index in range(4):
        tx, rx = by_gpu[index].pcie_tx_gbps, by_gpu[index].pcie_rx_gbps
        assert tx == pytest.approx(3.0 + index * 0.1, rel=0.01), (branch, index)
        assert rx == pytest.approx(1.0, rel=0.01), (branch, index)
    assert not [e for e in second.errors if "PCIe" in e]
    sleeping = second.gpus[0].nvlinks[1]
    assert (sleeping.state, sleeping.up) == ("sleep", False)


@pytest.mark.parametrize(("branch", "throughput_calls"), [("R535", 4), ("R550", 4), ("R570", 0)])
def test_the_throughput_call_is_made_only_where_the_byte_fields_are_missing(
    branch: str, throughput_calls: int
) -> None:
    fake = _machine(branch)
    assert fake.init() is None
    capture = collect_live(backend=fake, environ={})
    from pcidoc.collect.counters import CounterSampler

    sampler = CounterSampler.for_capture(fake, capture)
    fake.calls.clear()
    sampler.sample()
    assert fake.calls["pcie_throughput"] == throughput_calls  # TX and RX of 2 of the 4 GPUs
    assert fake.calls["field_values"] == 4
    fake.shutdown()


def test_the_blocking_throughput_call_is_spread_over_samples() -> None:
    """R550, 8 GPUs: at most 2 GPUs' throughput calls (~20 ms each) per sample, oldest first,
    so every GPU has a rate after 4 samples and none is read twice before all were read."""
    gpus = [
        FakeGpu(bus_id=f"0000:{0x10 + i:02x}:00.0", pcie_tx_bytes_per_s=(i + 1) * 1e9)
        for i in range(8)
    ]
    fake = FakeNvmlBackend(gpus, driver_branch="R550")
    assert fake.init() is None
    from pcidoc.collect.counters import CounterSampler

    sampler = CounterSampler(fake, links={i: [] for i in range(8)})
    read_order = []
    for _ in range(5):
        fake.calls.clear()
        before = {g.index for g in sampler.sample().gpus if g.pcie_tx_bytes_per_s is not None}
        assert fake.calls["pcie_throughput"] <= 4
        read_order.append(before)
    last = sampler.sample().gpus
    fake.shutdown()
    assert [len(s) for s in read_order] == [2, 4, 6, 8, 8]
    expected = [(i + 1) * 1e9 for i in range(8)]
    assert [g.pcie_tx_bytes_per_s for g in last] == pytest.approx(expected, rel=1e-3)


@pytest.mark.parametrize("branch", sorted(DRIVER_BRANCHES))
def test_watch_reports_pcie_utilisation_and_no_event_for_a_dozing_link(branch: str) -> None:
    from pcidoc.collect.counters import CounterSampler
    from pcidoc.watch.watcher import Watcher

    fake = _machine(branch)
    assert fake.init() is None
    try:
        capture = collect_live(backend=fake, environ={})
        sampler = CounterSampler.for_capture(fake, capture)
        ticks = iter((10.0, 11.0))
        sampler.clock = lambda: next(ticks)
        watcher = Watcher(capture, sampler, lambda: "synthetic-time")
        watcher.start()
        fake.advance(1.0)
        fake.gpus[0].nvlinks[0].sleep = True  # type: ignore[index]
        events = watcher.step()
    finally:
        fake.shutdown()
    assert watcher.utilisation[("GPU0", "tx")] > 0
    assert watcher.utilisation[("GPU3", "rx")] > 0
    assert not [e for e in events if e["event"].startswith("nvlink_")]
    assert [link.state for link in watcher.capture.gpus[0].nvlinks] == ["sleep", "sleep"]

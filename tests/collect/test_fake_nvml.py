"""The fake NVML backend: factories, error injection, reference counting, counters."""

from __future__ import annotations

from pcidoc.collect.nvml import NvmlBackend, Unavailable
from tests.fakes.fake_nvml import FakeFabric, FakeGpu, FakeNvLink, FakeNvmlBackend


def test_is_a_backend_and_labelled_synthetic() -> None:
    fake = FakeNvmlBackend.hgx()
    assert isinstance(fake, NvmlBackend)
    assert fake.synthetic is True
    assert all("synthetic" in (g.name or "") for g in fake.gpus)


def test_calls_need_init_and_init_is_reference_counted() -> None:
    fake = FakeNvmlBackend.pcie_pair()
    assert fake.device_count() == Unavailable.from_name("UNINITIALIZED")
    assert fake.init() is None
    assert fake.init() is None
    fake.shutdown()
    assert fake.device_count() == 2  # one session still open
    fake.shutdown()
    assert fake.name(0) == Unavailable.from_name("UNINITIALIZED")


def test_init_error() -> None:
    fake = FakeNvmlBackend(init_error="LIB_RM_VERSION_MISMATCH")
    error = fake.init()
    assert error == Unavailable.from_name("LIB_RM_VERSION_MISMATCH")
    assert fake.refs == 0


def test_hgx_factory_shape() -> None:
    fake = FakeNvmlBackend.hgx(n=8)
    fake.init()
    assert fake.device_count() == 8
    assert fake.field_values(0, [(91, 0)]) == [18]
    assert fake.nvlink_remote_type(0, 17) == "switch"
    assert fake.nvlink_version(0, 0) == 6
    assert fake.topology_common_ancestor(0, 1) == 40
    assert fake.topology_common_ancestor(0, 7) == 50
    assert fake.p2p_status(0, 7, 0) == "OK"
    fabric = fake.fabric_info(3)
    assert not isinstance(fabric, Unavailable)
    assert fabric.state == 3


def test_pcie_pair_has_no_nvlink() -> None:
    fake = FakeNvmlBackend.pcie_pair(p2p="CNS")
    fake.init()
    assert fake.nvlink_state(0, 0) == Unavailable.from_name("NOT_SUPPORTED")
    assert fake.topology_common_ancestor(0, 1) == 10
    assert fake.p2p_status(1, 0, 2) == "CNS"
    assert fake.fabric_info(0) == Unavailable.from_name("NOT_SUPPORTED")


def test_error_injection_per_call_per_field_and_lost_gpu() -> None:
    gpus = [
        FakeGpu(
            bus_id="0000:01:00.0",
            errors={"pcie_replay_counter": "NO_PERMISSION"},
            field_errors={198: "NOT_SUPPORTED", (138, 1): "NO_DATA"},
            nvlinks=[FakeNvLink(link=0), FakeNvLink(link=1)],
        ),
        FakeGpu(bus_id="0000:02:00.0", lost=True),
    ]
    fake = FakeNvmlBackend(gpus, system_errors={"driver_version": "NO_PERMISSION"})
    fake.init()
    assert fake.driver_version() == Unavailable.from_name("NO_PERMISSION")
    assert fake.pcie_replay_counter(0) == Unavailable.from_name("NO_PERMISSION")
    values = fake.field_values(0, [(197, 0), (198, 0), (138, 0), (138, 1)])
    assert values == [
        0,
        Unavailable.from_name("NOT_SUPPORTED"),
        0,
        Unavailable.from_name("NO_DATA"),
    ]
    lost = fake.name(1)
    assert isinstance(lost, Unavailable)
    assert lost.fatal
    assert fake.device_open(1) == lost
    assert fake.name(2) == Unavailable.from_name("INVALID_ARGUMENT")


def test_counters_advance_with_rates() -> None:
    gpu = FakeGpu(
        bus_id="0000:01:00.0",
        pcie_tx_bytes_per_s=2e9,
        replays_per_s=0.5,
        nvlinks=[FakeNvLink(link=0, tx_kib_per_s=1000.0)],
    )
    fake = FakeNvmlBackend([gpu])
    fake.init()
    fake.advance(4.0)
    assert fake.field_values(0, [(197, 0), (94, 0), (138, 0)]) == [8_000_000_000, 2, 4000]
    assert fake.calls["field_values"] == 1


def test_nvlink_bridge_pair_points_links_at_the_peer() -> None:
    fake = FakeNvmlBackend.nvlink_bridge_pair(links=4)
    fake.init()
    assert [fake.nvlink_remote_bus_id(0, k) for k in range(4)] == ["0000:61:00.0"] * 4
    assert fake.nvlink_remote_type(1, 3) == "gpu"
    assert fake.nvlink_state(0, 4) == Unavailable.from_name("INVALID_ARGUMENT")


def test_driver_branches_decide_which_fields_answer() -> None:
    not_supported = Unavailable.from_name("NOT_SUPPORTED")
    for branch, pcie_bytes in (("R535", False), ("R550", False), ("R570", True), ("R580", True)):
        gpu = FakeGpu(
            bus_id="0000:01:00.0",
            pcie_tx_bytes=5,
            pcie_counters={173: 1},
            nvlinks=[FakeNvLink(link=0, errors={"effective_errors": 2})],
        )
        fake = FakeNvmlBackend([gpu], driver_branch=branch)
        fake.init()
        tx, correctable, effective = fake.field_values(0, [(197, 0), (173, 0), (219, 0)])
        assert tx == (5 if pcie_bytes else not_supported), branch
        assert correctable == 1
        assert effective == (2 if pcie_bytes else not_supported), branch
        assert fake.pcie_throughput(0, 0) == 0  # the throughput call exists everywhere


def test_blackwell_answers_not_supported_for_the_dl_error_counters() -> None:
    link = FakeNvLink(link=0, errors={"replay": 1, "recovery_events": 3})
    fake = FakeNvmlBackend(
        [FakeGpu(bus_id="0000:01:00.0", architecture="blackwell", nvlinks=[link])]
    )
    fake.init()
    assert fake.nvlink_error_counter(0, 0, 0) == Unavailable.from_name("NOT_SUPPORTED")
    assert fake.field_values(0, [(161, 0), (215, 0)]) == [Unavailable.from_name("NOT_SUPPORTED"), 3]


def test_sleeping_link_is_enabled_but_field_165_says_sleep() -> None:
    fake = FakeNvmlBackend(
        [FakeGpu(bus_id="0000:01:00.0", nvlinks=[FakeNvLink(link=0, sleep=True)])]
    )
    fake.init()
    assert fake.nvlink_state(0, 0) is True
    assert fake.field_values(0, [(165, 0)]) == [2]


def test_r535_fabric_has_no_health_mask_and_pcie_throughput_is_kb_per_s() -> None:
    gpu = FakeGpu(
        bus_id="0000:01:00.0", fabric=FakeFabric(health_mask=1), pcie_rx_bytes_per_s=2048e3
    )
    old = FakeNvmlBackend([gpu], driver_branch="R535")
    old.init()
    fabric = old.fabric_info(0)
    assert not isinstance(fabric, Unavailable)
    assert fabric.health_mask is None
    assert old.pcie_throughput(0, 1) == 2000
    assert old.pcie_throughput(0, 2) == Unavailable.from_name("INVALID_ARGUMENT")

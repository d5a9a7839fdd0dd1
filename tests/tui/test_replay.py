"""Demo machines replay a SYNTHETIC counter trace (pcidoc/tui/replay.py) in the Links pane."""

from __future__ import annotations

from textual.widgets import DataTable

from pcidoc.model.counters import rates
from pcidoc.model.linkmodel import gpu_pcie_ceiling
from pcidoc.samples import load_sample
from pcidoc.tui.replay import SYNTHETIC_LABEL, TraceReplaySampler, synthetic_trace
from tests.tui.conftest import demo_app, plain, settle
from tests.tui.machines import ManualClock


def test_the_trace_replays_as_counters_whose_rates_are_its_frames() -> None:
    capture = load_sample("synthetic-16gpu")
    trace = synthetic_trace(capture)
    assert trace.synthetic and trace.label == SYNTHETIC_LABEL and "SYNTHETIC" in trace.label
    clock = ManualClock()
    sampler = TraceReplaySampler(trace, clock=clock)
    seen = []
    previous = sampler.sample()
    for second in range(trace.seconds + 2):  # past the end: the trace loops
        clock.t += 1.0
        sample = sampler.sample()
        by_gpu = {r.index: r for r in rates(previous, sample)}
        frame = trace.frames[0][second % trace.seconds]
        assert abs(by_gpu[0].pcie_rx_gbps - frame.pcie_rx / 1e9) < 1e-6
        seen.append(by_gpu[0].pcie_rx_gbps)
        for gpu in capture.gpus:
            rate = by_gpu[gpu.index]
            ceiling = gpu_pcie_ceiling(gpu).gbps
            assert ceiling is not None
            assert 0 < rate.pcie_tx_gbps <= ceiling and 0 < rate.pcie_rx_gbps <= ceiling
            # Never invented errors: the capture's totals, unchanged (None where unknown).
            assert rate.replays_delta in (0, None) and rate.aer_delta in (0, None)
        previous = sample
    assert len(set(round(v, 3) for v in seen)) > 3  # it moves
    # The capture's NVLink states are kept: GPU12 has a link down in this sample.
    states = {n.link: n.up for n in sampler.sample().gpus[12].nvlinks}
    expected = {nv.link: nv.state != "down" for nv in capture.gpu(12).nvlinks}
    assert states == expected and not all(states.values())


def test_the_trace_carries_the_captures_faults() -> None:
    # The 72-GPU demo's doctor says GPU41 has 4200 PCIe replays: so does its replayed trace.
    capture = load_sample("synthetic-72gpu")
    sampler = TraceReplaySampler(synthetic_trace(capture), clock=ManualClock())
    counters = {g.index: g for g in sampler.sample().gpus}
    for gpu in capture.gpus:
        got = counters[gpu.index]
        assert (got.replay_count, got.aer_correctable) == (gpu.replay_count, gpu.aer_correctable)
        assert (got.link_gen, got.link_width) == (gpu.pcie.current_gen, gpu.pcie.current_width)
    assert counters[41].replay_count == 4200


async def test_the_72gpu_demo_links_pane_shows_gpu41s_replays_and_sorts_it_first() -> None:
    app = demo_app("synthetic-72gpu", replay_demos=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        app.take_sample()
        await pilot.pause(0.05)
        app.take_sample()
        await pilot.pause()
        table = app.main.query_one("#gpu-table", DataTable)
        row = table.get_row("41")
        replays = row[[c.value for c in table.columns].index("replays")]
        assert str(replays).split()[0] == "4200"
        await pilot.press("o")
        await pilot.pause()
        assert app.main.links.sort == "replays"
        first = table.get_row_at(0)
        assert str(first[0]) == "GPU41"


async def test_a_demo_replays_the_trace_in_the_links_pane_and_says_synthetic() -> None:
    app = demo_app("synthetic-16gpu", replay_demos=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert isinstance(app.sampler, TraceReplaySampler)
        await pilot.press("2")
        await pilot.pause()
        note = plain(app.main.query_one("#links-note"))
        assert note.startswith(SYNTHETIC_LABEL)
        app.take_sample()
        await pilot.pause(0.05)
        app.take_sample()
        await pilot.pause()
        links = app.main.links
        assert links.rates and all(r.pcie_tx_gbps for r in links.rates.values())
        assert app.main.query("#link-chart")
        # The matrix's traffic colours never show the synthetic trace.
        await pilot.press("1")
        await pilot.pause()
        assert app.main.topology.rates is None
        # Nothing of the trace reaches the report.
        assert app.report is not None
        assert all(
            g.tx_bytes_per_s == c.tx_bytes_per_s
            for g, c in zip(
                app.report.machine.gpus, load_sample("synthetic-16gpu").gpus, strict=True
            )
        )


async def test_without_replay_a_demo_still_shows_static_values() -> None:
    app = demo_app("synthetic-16gpu")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.sampler is None
        await pilot.press("2")
        await pilot.pause()
        assert "static values" in plain(app.main.query_one("#links-note"))


def test_run_tui_turns_the_replay_on_for_demos(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import pcidoc.tui.app as app_module
    from pcidoc.tui import run_tui
    from tests.tui.test_entry import _Recorder

    monkeypatch.setattr(app_module, "PcidocApp", _Recorder)
    _Recorder.built.clear()
    assert run_tui(demo="synthetic-16gpu") == 0
    assert _Recorder.built[-1]["options"].replay_demos is True


def test_the_all_reduce_stays_off_pcie_where_the_matrix_shows_nvlink() -> None:
    # The A100 import has NV12 in its matrix but no per-link facts: the synthetic all-reduce
    # ran over PCIe at half its ceiling, as if this NVSwitch box had no NVLink.
    from pcidoc.tui.replay import _STEP

    for name, nvlink in (("a100-sxm4-8gpu-nvswitch", True), ("autodl-2080ti-2gpu", False)):
        capture = load_sample(name)
        assert not any(gpu.nvlinks for gpu in capture.gpus)
        trace = synthetic_trace(capture)
        gpu = capture.gpus[0]
        ceiling = gpu_pcie_ceiling(gpu).gbps
        assert ceiling is not None
        busiest = max(
            max(frame.pcie_tx, frame.pcie_rx)
            for second, frame in enumerate(trace.frames[gpu.index])
            if _STEP[second % len(_STEP)][0] == "allreduce"
        )
        assert (busiest <= 0.01 * ceiling * 1e9 + 1) is nvlink, name

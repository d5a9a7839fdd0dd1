"""The live counter sampler in the TUI, over the fake NVML backend and a manual clock."""

from __future__ import annotations

import threading

from textual.widgets import DataTable

from pcidoc.model.counters import CounterSample
from pcidoc.tui.messages import CountersSampled, ProbeProgressed
from tests.tui.conftest import demo_app, make_app, plain, settle, wait_until
from tests.tui.machines import hgx_live


def _cell(app, row: int, column: str) -> str:
    table = app.main.query_one("#gpu-table", DataTable)
    return str(table.get_cell(str(row), column))


async def test_samples_become_rates_in_the_links_table_and_the_chart() -> None:
    box = hgx_live()
    app = make_app(collect=lambda: box.capture, sampler_factory=box.sampler)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert app.sampler is not None
        await pilot.press("2")
        note = plain(app.main.query_one("#links-note"))
        assert note.startswith("LIVE") and "static" not in note
        app.take_sample()
        await pilot.pause()
        assert _cell(app, 0, "tx") == "—"  # one sample: no rate yet
        box.advance(1.0)
        app.take_sample()
        await pilot.pause()
        assert _cell(app, 0, "tx") == "3.00"
        assert _cell(app, 0, "rx") == "1.50"
        assert _cell(app, 7, "tx") == "24.0"  # three significant digits: the table fits 80 columns
        # Gen5 x16 is 63 GB/s raw per direction: 24 GB/s is 38 %.
        assert _cell(app, 7, "util") == "38%"
        # The total since boot (what the doctor judges) and, in yellow, how much it grew.
        assert _cell(app, 5, "replays") == "4 +4"
        assert _cell(app, 0, "replays") == "0"
        assert _cell(app, 0, "nvl") == "18/18"
        # 18 links at (k + 1) x 1e6 KiB/s = 171 x 1.024 GB/s.
        assert _cell(app, 0, "nvtx") == "175"
        links = app.main.query_one("#nvlink-table", DataTable)
        assert links.row_count == 18
        assert str(links.get_cell("0", "tx")) == "1.02"
        assert app.main.query("#link-chart")
        box.advance(1.0)
        app.take_sample()
        await pilot.pause()
        history = app.main.links.history[0]
        assert [round(t - history[-1][0]) for t, *_ in history] == [-2, -1, 0]


async def test_traffic_colour_mode_uses_live_rates() -> None:
    box = hgx_live()
    app = make_app(collect=lambda: box.capture, sampler_factory=box.sampler)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        app.take_sample()
        await pilot.pause()  # a second sample queued behind the first would replace it
        box.advance(1.0)
        app.take_sample()
        await pilot.pause()
        await pilot.press("c", "c")
        await pilot.pause()
        grid = app.main.topology.grid
        assert grid is not None and grid.mode == "traffic"
        assert grid.cells[7][7].text == "38%"
        assert grid.cells[0][0].text == "5%"
        assert "NVLinks" in grid.note and "static" not in grid.note


async def test_the_sampler_thread_samples_on_each_tick_and_stops_on_quit() -> None:
    class ManualTicker:
        """Lets the sampler take one more sample per :meth:`tick`."""

        def __init__(self) -> None:
            self.allowed = threading.Semaphore(0)
            self.stopped = threading.Event()

        def __call__(self, interval: float, stop: threading.Event) -> bool:
            while not stop.is_set():
                if self.allowed.acquire(timeout=0.01):
                    return False
            self.stopped.set()
            return True

        def tick(self) -> None:
            self.allowed.release()

    box = hgx_live()
    ticker = ManualTicker()
    samples: list[CounterSample] = []

    def hook(message: object) -> None:
        if isinstance(message, CountersSampled):
            samples.append(message.sample)

    app = make_app(
        collect=lambda: box.capture, sampler_factory=box.sampler, interval=1.0, ticker=ticker
    )
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: len(samples) >= 1)
        for expected in (2, 3):
            box.advance(1.0)
            ticker.tick()
            await wait_until(pilot, lambda n=expected: len(samples) >= n)
        assert [s.t for s in samples[:3]] == [1000.0, 1001.0, 1002.0]
        await pilot.pause()
        assert app.rates[0].pcie_tx_gbps == 3.0
        workers = [w for w in app.workers if w.group == "counters"]
        assert len(workers) == 1
        await pilot.press("q")
    assert ticker.stopped.wait(5)


async def test_a_demo_shows_static_values_and_says_so() -> None:
    app = demo_app("h100-pcie-nvlink-bridge")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await pilot.pause()
        note = plain(app.main.query_one("#links-note"))
        assert "static values from the capture — live counters need a live GPU machine" in note
        assert app.sampler is None
        assert not [w for w in app.workers if w.group == "counters"]
        assert _cell(app, 0, "nvl") == "12/12"  # 6 unwired lanes are not counted
        assert not app.main.query("#link-chart")


def test_newer_counter_samples_replace_queued_ones() -> None:
    old = CountersSampled(CounterSample(t=1.0))
    new = CountersSampled(CounterSample(t=2.0))
    assert new.can_replace(old)
    progress_a = ProbeProgressed("transfer", 0.1, "a")
    progress_b = ProbeProgressed("transfer", 0.2, "b")
    other = ProbeProgressed("p2p", 0.3, "c")
    assert progress_b.can_replace(progress_a)
    assert not other.can_replace(progress_a)
    assert not new.can_replace(progress_a)


def test_live_machine_shares_one_nvml_session_between_collection_and_sampler() -> None:
    from pcidoc.tui.live import LiveMachine
    from tests.fakes.fake_nvml import FakeNvmlBackend

    fake = FakeNvmlBackend.hgx(2)
    live = LiveMachine(backend_factory=lambda: fake)
    capture = live.collect()
    assert [g.index for g in capture.gpus] == [0, 1]
    assert fake.refs == 1  # collect_live's own init/shutdown pair left ours open
    sampler = live.sampler(capture)
    assert sampler is not None
    sample = sampler.sample()
    assert [g.index for g in sample.gpus] == [0, 1] and not sample.errors
    live.close()
    assert fake.refs == 0


def test_live_machine_without_nvml_gives_no_sampler() -> None:
    from pcidoc.tui.live import LiveMachine
    from tests.fakes.fake_nvml import FakeNvmlBackend

    live = LiveMachine(backend_factory=lambda: FakeNvmlBackend(init_error="LIBRARY_NOT_FOUND"))
    capture = live.collect()
    assert capture.gpus == [] and "gpus" in capture.unavailable
    assert live.sampler(capture) is None
    live.close()

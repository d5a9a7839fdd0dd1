"""The TUI's shape: one services object and one options object build the app (``make_app``),
and every pane is bound to the app's reactive state, including a pane opened after the state
was set. These tests set the state directly, as the message handlers do, and read the panes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Static

from pcidoc.model.capture import Capture
from pcidoc.model.counters import rates
from pcidoc.model.report import Report, ReportSource
from pcidoc.samples import load_sample
from pcidoc.tui import live
from pcidoc.tui.app import PcidocApp, make_app
from pcidoc.tui.services import TuiOptions, TuiServices
from pcidoc.tui.state import Counters, Displayed
from pcidoc.tui.widgets.doctor_pane import DoctorPane
from tests.tui.conftest import demo_app, plain, settle
from tests.tui.conftest import make_app as make_test_app
from tests.tui.machines import FIXED_NOW, acs_machine, acs_source, hgx_live

OTHER = "autodl-2080ti-2gpu"


def _other_machine() -> tuple[Capture, ReportSource, Report]:
    capture = load_sample(OTHER)
    source = ReportSource(kind="demo", name=OTHER)
    return capture, source, live.diagnose(capture, source, False, "2026-01-01T12:00:00Z")


# ----------------------------------------------------------------------------- services


async def test_a_fake_services_object_drives_the_whole_app() -> None:
    """The constructor takes the capture, a services object and options: collection, the
    doctor, the clock, the sampler and the release at exit all go through the fakes."""
    box = hgx_live()
    calls: list[Any] = []
    closed: list[bool] = []

    def collect() -> Capture:
        calls.append("collect")
        return box.capture

    def diagnose(capture: Capture, source: ReportSource, probes: bool, at: str) -> Report:
        calls.append(("diagnose", source.kind, probes, at))
        return live.diagnose(capture, source, probes, at)

    services = TuiServices(
        collect=collect,
        sampler_factory=box.sampler,
        diagnose=diagnose,
        now=lambda: FIXED_NOW,
        close=lambda: closed.append(True),
    )
    app = PcidocApp(None, None, services=services, options=TuiOptions(interval=None))
    app.animation_level = "none"
    app.show_toasts = False
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert calls == ["collect", ("diagnose", "live", False, "2026-01-01T12:00:00Z")]
        assert app.report is not None and app.report.generated_at == "2026-01-01T12:00:00Z"
        assert "hgx-live" in plain(app.main.query_one("#header-machine"))
        app.take_sample()
        await pilot.pause()  # a newer sample replaces one still queued
        box.advance(1.0)
        app.take_sample()
        await pilot.pause()
        assert app.rates[0].pcie_tx_gbps == 3.0  # the fake sampler's counters
        assert app.default_export_base().endswith("hgx-live-20260101T120000Z")
        assert closed == []
        await pilot.press("q")
    assert closed == [True]


def test_make_app_collects_this_machine_only_when_no_capture_is_given() -> None:
    shown = make_app(acs_machine(), acs_source())
    assert shown.services.collect is None and shown.services.sampler_factory is None
    assert shown.options == TuiOptions()  # exports go to ~/pcidoc-reports, not the cwd
    # No NVML is touched before the app collects: the live machine only opens on collect().
    live_app = make_app(None, None, options=TuiOptions(interval=None))
    assert live_app.services.collect is not None and live_app.services.sampler_factory
    live_app.services.close()  # nothing opened: nothing to shut down, no error


def test_options_take_any_path_like_export_folder(tmp_path: Path) -> None:
    assert TuiOptions(export_dir=str(tmp_path)).export_dir == tmp_path
    with pytest.raises(AttributeError):
        TuiOptions().interval = 2.0  # type: ignore[misc]


def test_services_for_this_machine_share_one_nvml_session() -> None:
    from tests.fakes.fake_nvml import FakeNvmlBackend

    fake = FakeNvmlBackend.hgx(2)
    services = TuiServices.this_machine(backend_factory=lambda: fake, now=lambda: FIXED_NOW)
    assert services.now() == FIXED_NOW
    assert services.collect is not None and services.sampler_factory is not None
    capture = services.collect()
    assert fake.refs == 1
    assert services.sampler_factory(capture) is not None
    services.close()
    assert fake.refs == 0


def test_the_fleet_tui_is_built_by_make_app(monkeypatch: pytest.MonkeyPatch) -> None:
    import pcidoc.tui.app as app_module
    from pcidoc.model.fleet import FleetReport
    from pcidoc.tui.screens.fleet import run_fleet_tui
    from tests.tui.test_entry import _Recorder

    monkeypatch.setattr(app_module, "PcidocApp", _Recorder)
    _Recorder.built.clear()
    report = FleetReport.model_construct()
    assert run_fleet_tui(report, interval=0.25) == 0
    (built,) = _Recorder.built
    assert built["capture"] is None and built["fleet"] is report
    options = built["options"]
    assert options.interval == 0.25 and options.demo_fallback is False
    assert built["services"].collect is None  # nodes are capture files: nothing to collect


# ----------------------------------------------------------------------------- bindings


async def test_every_pane_shows_the_state_set_on_the_app_even_when_opened_afterwards() -> None:
    app = demo_app("a100-sxm4-8gpu-nvswitch")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        main = app.main
        assert main.pane("links") is None and main.pane("doctor") is None
        capture, source, report = _other_machine()
        # As the handlers do: the old report goes, the new machine comes, then its report.
        app.report = None
        app.displayed = Displayed(capture, source)
        assert "diagnosing" in plain(main.query_one("#header-machine"))
        app.report = report
        await pilot.pause()
        header = plain(main.query_one("#header-machine"))
        assert f"DEMO {OTHER}" in header and "worst:" in header
        assert main.topology.capture is capture
        assert main.topology.matrix.grid is not None
        assert main.topology.matrix.grid.labels[:2] == ["GPU0", "GPU1"]
        assert len(main.topology.matrix.grid.labels) < 8
        # Panes mounted now show the state as it is, with nothing pushed to them.
        await pilot.press("2")
        table = main.query_one("#gpu-table", DataTable)
        assert table.row_count == len(capture.gpus) == 2
        await pilot.press("3")
        doctor = main.pane("doctor")
        assert isinstance(doctor, DoctorPane) and doctor.report is report
        assert [c.id for c in doctor.checks] == [c.id for c in report.sorted_checks()]
        await pilot.press("4")
        host = plain(main.query_one("#host-facts"))
        assert f"(demo: {OTHER})" in host
        # And they follow later changes too.
        app.report = None
        assert doctor.report is None


async def test_a_report_with_an_equal_value_is_shown_again() -> None:
    app = make_test_app(acs_machine(), acs_source())
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        doctor = app.main.doctor
        report = app.report
        assert report is not None
        twin = report.model_copy(deep=True)
        assert twin == report and twin is not report
        app.report = twin
        assert doctor.report is twin


async def test_counters_set_before_the_links_pane_opens_are_in_it() -> None:
    box = hgx_live()
    app = make_test_app(collect=lambda: box.capture, sampler_factory=box.sampler)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert app.main.pane("links") is None
        sampler = box.sampler()
        first = sampler.sample()
        box.advance(1.0)
        second = sampler.sample()
        app.counters = Counters(second, {r.index: r for r in rates(first, second)})
        await pilot.press("2")
        table = app.main.query_one("#gpu-table", DataTable)
        assert str(table.get_cell("0", "tx")) == "3.00"
        assert str(table.get_cell("7", "tx")) == "24.0"
        assert app.last_sample is second and app.rates[7].pcie_tx_gbps == 24.0


async def test_this_machine_set_on_the_app_reaches_the_host_pane() -> None:
    from tests.tui.machines import no_gpu_machine

    app = demo_app(OTHER)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        assert "This machine (live)" not in plain(app.main.query_one("#host-facts"))
        app.no_gpu_reason = "NVIDIA driver not loaded"
        app.this_machine = no_gpu_machine()
        host = plain(app.main.query_one("#host-facts"))
        assert "This machine (live)" in host and "NVIDIA driver not loaded" in host


async def test_a_hidden_matrix_is_redrawn_when_opened_not_on_every_report() -> None:
    """While probes report, a matrix that is not on display is left alone (a 72-GPU matrix
    is not worth a UI pause per report) and brought up to date when its pane opens."""
    app = make_test_app(acs_machine(), acs_source())
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        topology = app.main.topology
        assert app.report is not None and app.source is not None
        measured = app.diagnose(app.report.machine.model_copy(deep=True), app.source, True)
        # On display: redrawn at once with the new report's machine.
        app.report = measured
        assert topology.capture is measured.machine
        await pilot.press("3")
        grid = topology.grid
        later = app.diagnose(measured.machine.model_copy(deep=True), app.source, True)
        app.report = later
        app.report = app.diagnose(later.machine.model_copy(deep=True), app.source, True)
        assert topology.grid is grid and topology.capture is measured.machine
        await pilot.press("1")
        assert topology.capture is app.capture and topology.grid is not grid


async def test_the_status_line_reaches_the_header() -> None:
    app = make_test_app(acs_machine(), acs_source())
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        app.report = None
        app.status = "could not load: disk on fire"
        assert "could not load: disk on fire" in plain(app.main.query_one("#header-machine"))


async def test_the_banner_follows_the_fallback_and_the_reason() -> None:
    app = demo_app(OTHER)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        banner = app.main.banner
        assert not banner.display
        assert app.displayed is not None and app.displayed.capture is not None
        app.displayed = Displayed(app.displayed.capture, app.displayed.source, fallback=True)
        assert not banner.display  # a fallback, but no reason known yet
        app.no_gpu_reason = "NVIDIA driver not loaded"
        assert banner.display and "NVIDIA driver not loaded" in plain(banner)
        app.displayed = Displayed(app.displayed.capture, app.displayed.source)
        assert not banner.display


async def test_the_key_bar_offers_cancel_exactly_while_probes_run() -> None:
    from pcidoc.tui.widgets.key_bar import KeyBar

    app = make_test_app(acs_machine(), acs_source())
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        bar = app.main.query_one(KeyBar)
        assert "x" not in [key for key, _, _ in bar.hints]
        app.probes_running = True
        assert ("x", "Cancel probes", "app.cancel_probes") in bar.hints
        await pilot.press("3")
        assert ("x", "Cancel probes", "app.cancel_probes") in bar.hints  # on every pane
        app.probes_running = False
        assert "x" not in [key for key, _, _ in bar.hints]


async def test_a_live_machine_counts_its_link_changes_and_the_links_pane_says_so() -> None:
    # GPU3's link drops to x8 and comes back, GPU5 downclocks to Gen1: counted per GPU, width
    # and generation apart, since the machine was opened.
    box = hgx_live()
    app = make_test_app(collect=lambda: box.capture, sampler_factory=box.sampler)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        gpus = box.backend.gpus
        app.take_sample()
        await pilot.pause()  # a newer sample replaces one still queued: one at a time
        for width, gen in ((8, 5), (16, 1), (16, 5)):  # the fake HGX runs at Gen5 x16
            box.advance(1.0)
            gpus[3].pcie_current_width = width
            gpus[5].pcie_current_gen = gen
            app.take_sample()
            await pilot.pause()
        await settle(pilot)
        counters = app.counters
        assert counters is not None and counters.link_changes == {3: (0, 2), 5: (2, 0)}
        await pilot.press("2")
        await settle(pilot)
        note = plain(app.main.query_one("#links-note", Static))
        assert "Link changes since opened: GPU3 width 2×; GPU5 gen 2×" in " ".join(note.split())
        assert "pcidoc watch" in note


def test_link_changes_between_two_samples_ignore_readings_that_are_missing() -> None:
    from pcidoc.model.counters import CounterSample, GpuCounters, changed_links

    old = CounterSample(0.0, (GpuCounters(0, link_gen=4, link_width=16), GpuCounters(1)))
    new = CounterSample(
        1.0,
        (
            GpuCounters(0, link_gen=4, link_width=8),
            GpuCounters(1, link_gen=1, link_width=16),
            GpuCounters(2, link_gen=4, link_width=16),
        ),
    )
    assert changed_links(old, new) == {0: (0, 1)}

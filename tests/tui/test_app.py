"""Pilot tests of the TUI: keys, panes, the matrix cursor and detail, export, no-GPU start."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import DataTable, OptionList, Static

from pcidoc.model.report import ReportSource
from pcidoc.tui.keys import all_keys
from pcidoc.tui.messages import FactsCollected, ReportUpdated, ThisMachineCollected
from pcidoc.tui.screens.export import ExportScreen
from pcidoc.tui.screens.help import HelpScreen
from pcidoc.tui.screens.samples import SamplePicker
from pcidoc.tui.widgets.pane_tabs import PaneTabs
from pcidoc.tui.widgets.topology_matrix import TopologyMatrix
from tests.tui.conftest import demo_app, export_as, make_app, plain, settle
from tests.tui.machines import NO_DRIVER, acs_machine, acs_source, no_gpu_machine


def _plain(app, selector: str) -> str:
    return plain(app.screen_stack[0].query_one(selector, Static))


# ------------------------------------------------------------------------- start and panes


async def test_demo_start_shows_machine_report_and_worst_finding() -> None:
    messages: list[object] = []
    app = demo_app("a100-sxm4-8gpu-nvswitch")
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        await settle(pilot)
        assert any(isinstance(m, FactsCollected) for m in messages)
        assert any(isinstance(m, ReportUpdated) for m in messages)
        header = _plain(app, "#header-machine")
        assert "DEMO a100-sxm4-8gpu-nvswitch" in header
        assert "8 × NVIDIA A100-SXM4-80GB" in header
        assert "WARN" in header
        worst = _plain(app, "#header-worst")
        assert "numa.nic-affinity" in worst
        assert app.main.active_pane == "topology"
        assert isinstance(app.focused, TopologyMatrix)


async def test_number_keys_switch_panes_and_focus_their_main_widget() -> None:
    app = make_app(acs_machine(), acs_source())
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        expected = {
            "2": ("links", DataTable),
            "3": ("doctor", OptionList),
            "1": ("topology", TopologyMatrix),
        }
        for key, (pane, widget) in expected.items():
            await pilot.press(key)
            await pilot.pause()
            assert app.main.active_pane == pane
            assert isinstance(app.focused, widget)
        await pilot.press("4")
        await pilot.pause()
        assert app.main.active_pane == "host"
        assert "acs-box" in _plain(app, "#host-facts")


async def test_tabs_respond_to_the_mouse() -> None:
    app = make_app(acs_machine(), acs_source())
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        tabs = app.main.query_one(PaneTabs)
        start, _end, _ = next(span for span in tabs._spans if span[2] == "doctor")
        await pilot.click("#tabs", offset=(start + 1, 0))
        await pilot.pause()
        assert app.main.active_pane == "doctor"


async def test_w_opens_the_worst_finding() -> None:
    app = make_app(acs_machine(), acs_source())
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("w")
        await pilot.pause()
        assert app.main.active_pane == "doctor"
        doctor = app.main.doctor
        assert doctor.selected is not None
        assert doctor.selected.id == app.report.sorted_checks()[0].id
        assert doctor.selected.severity in ("fail", "error", "warn")
        detail = _plain(app, "#check-text")
        assert doctor.selected.id in detail
        assert "What to do" in detail


async def test_doctor_list_is_worst_first_and_selection_shows_evidence() -> None:
    app = make_app(acs_machine(), acs_source())
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await pilot.pause()
        from pcidoc.model.report import SEVERITY_ORDER

        ranks = [SEVERITY_ORDER[c.severity] for c in app.main.doctor.checks]
        assert ranks == sorted(ranks, reverse=True)
        await pilot.press("down", "down")
        await pilot.pause()
        third = app.main.doctor.checks[2]
        assert app.main.doctor.selected == third
        assert third.id in _plain(app, "#check-text")


async def test_skip_checks_say_what_they_need() -> None:
    app = make_app(acs_machine(), acs_source())
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        skipped = next(c for c in app.report.checks if c.severity == "skip" and c.needs)
        await pilot.press("3")
        await pilot.pause()
        app.main.doctor.select(skipped.id)
        await pilot.pause()
        detail = _plain(app, "#check-text")
        assert "Needs" in detail


# ---------------------------------------------------------------------------- topology


async def test_cursor_moves_with_arrows_and_hjkl_and_detail_follows() -> None:
    app = make_app(acs_machine(), acs_source())
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        matrix = app.main.query_one(TopologyMatrix)
        assert matrix.selected == ("GPU0", "GPU1")
        await pilot.press("right", "right")
        assert matrix.selected == ("GPU0", "GPU3")
        await pilot.press("j", "j", "h")
        assert matrix.selected == ("GPU2", "GPU2")
        await pilot.press("k", "l")
        await pilot.pause()
        assert matrix.selected == ("GPU1", "GPU3")
        detail = _plain(app, "#pair-detail")
        assert "GPU1 ↔ GPU3" in detail
        assert "CNS" in detail and "chipset not supported" in detail
        assert "ACS redirect (ReqRedir+ CmpltRedir+)" in detail
        assert "Gen3 x8 of Gen4 x16" in detail
        # CNS: the driver refuses P2P here, so the "P2P enabled" copy was staged through host
        # memory; it is said so, not given as a share of the P2P path's ceiling.
        assert "6.1 GB/s" in detail and "staged through host memory" in detail
        assert "of ceiling" not in detail
        assert "PCIe Gen3 x8" in detail
        matrix.select("GPU2", "GPU3")
        await pilot.pause()
        detail = _plain(app, "#pair-detail")
        assert "ACS redirect below it sends it up to the root complex" in detail


async def test_clicking_a_cell_selects_it() -> None:
    app = make_app(acs_machine(), acs_source())
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        matrix = app.main.query_one(TopologyMatrix)
        layout = matrix._layout
        assert layout is not None
        x = layout.label_w + layout.col_x[2] + 1
        y = matrix.header_height + 3
        await pilot.click(TopologyMatrix, offset=(x, y))
        await pilot.pause()
        assert matrix.selected == ("GPU3", "GPU2")
        assert "GPU3 ↔ GPU2" in _plain(app, "#pair-detail")


async def test_diagonal_cell_describes_the_gpu_and_nic_cells_the_nic() -> None:
    app = make_app(acs_machine(), acs_source())
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        matrix = app.main.query_one(TopologyMatrix)
        matrix.select("GPU3", "GPU3")
        await pilot.pause()
        detail = _plain(app, "#pair-detail")
        assert "NVIDIA L40S" in detail and "1200 replays" in detail and "below max" in detail
        matrix.select("NIC0", "NIC0")
        await pilot.pause()
        detail = _plain(app, "#pair-detail")
        assert "mlx5_0" in detail and "infiniband" in detail


async def test_n_toggles_the_nics() -> None:
    app = make_app(acs_machine(), acs_source())
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        matrix = app.main.query_one(TopologyMatrix)
        assert "NIC0" in matrix.grid.labels
        await pilot.press("n")
        await pilot.pause()
        assert "NIC0" not in matrix.grid.labels
        assert "hidden" in _plain(app, "#topo-legend")
        await pilot.press("n")
        await pilot.pause()
        assert "NIC0" in matrix.grid.labels


async def test_c_cycles_the_colour_modes() -> None:
    app = make_app(acs_machine(), acs_source())
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        pane = app.main.topology
        matrix = app.main.query_one(TopologyMatrix)
        assert pane.mode == "class"
        assert matrix.grid.cells[0][1].text == "PIX"
        await pilot.press("c")
        await pilot.pause()
        assert pane.mode == "bandwidth"
        # GPU0 -> GPU1: 25.1 GB/s over a Gen4 x16 path (31.5 GB/s raw) = 80 %.
        assert matrix.grid.cells[0][1].text == "80%"
        # GPU0 -> GPU2: the driver refuses P2P (CNS), so the "P2P enabled" copy was staged
        # through host memory: no share of a P2P path, said as such (not a red "31%").
        assert matrix.grid.cells[0][2].text == "staged"
        assert matrix.grid.cells[2][3].text == "38%"
        assert "ceiling" in matrix.grid.note and "staged" in matrix.grid.note
        await pilot.press("c")
        await pilot.pause()
        assert pane.mode == "traffic"
        assert "static" in matrix.grid.note
        await pilot.press("c")
        await pilot.pause()
        assert pane.mode == "class"


async def test_72_gpu_matrix_is_compact_and_keeps_labels_at_80_columns() -> None:
    app = demo_app("synthetic-72gpu")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        matrix = app.main.query_one(TopologyMatrix)
        assert matrix.layout_name == "compact"
        await pilot.press(*["l"] * 40, *["j"] * 30)
        await pilot.pause()
        assert matrix.selected == ("GPU30", "GPU41")
        assert matrix.scroll_offset.x > 0 and matrix.scroll_offset.y > 0
        lines = [matrix.render_line(y).text for y in range(matrix.size.height)]
        assert any(line.startswith("GPU30") for line in lines)


async def test_wide_8_gpu_matrix_uses_full_labels() -> None:
    app = demo_app("a100-sxm4-8gpu-nvswitch")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        matrix = app.main.query_one(TopologyMatrix)
        assert matrix.layout_name in ("full", "narrow")
        header = matrix.render_line(0).text
        assert "GPU7" in header or "G7" in header


# ------------------------------------------------------------------------------- help


async def test_help_opens_with_question_mark_and_f1_and_lists_every_binding() -> None:
    app = make_app(acs_machine(), acs_source())
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("f1")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


def test_help_names_every_key_bound_anywhere() -> None:
    from pcidoc.tui.app import PcidocApp
    from pcidoc.tui.widgets.topology_matrix import TopologyMatrix as Matrix
    from pcidoc.tui.widgets.topology_pane import TopologyPane

    documented = all_keys()
    from pcidoc.tui.widgets.doctor_pane import CheckList, DoctorPane

    aliases = {"question_mark": "?", "pageup": "pgup", "pagedown": "pgdn", "slash": "/"}
    missing = []
    owners = (PcidocApp, TopologyPane, Matrix, HelpScreen, ExportScreen, SamplePicker)
    from pcidoc.tui.widgets.links_pane import LinksPane

    for owner in (*owners, DoctorPane, CheckList, LinksPane):
        for binding in owner.BINDINGS:
            for key in binding.key.split(","):
                name = aliases.get(key.strip(), key.strip())
                if name not in documented and name.upper() not in documented:
                    missing.append(f"{owner.__name__}: {key}")
    assert missing == []


# ----------------------------------------------------------------------------- export


async def test_export_writes_markdown_html_json_and_svg(export_dir: Path) -> None:
    app = make_app(acs_machine(), acs_source(), export_dir=export_dir)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, ExportScreen)
        field = app.screen.query_one("#export-path")
        assert field.value == "pcidoc-report-acs-box-20260101T120000Z"
        await pilot.press("enter")
        await settle(pilot)
        base = export_dir / "pcidoc-report-acs-box-20260101T120000Z"
        for suffix in (".md", ".html", ".json", ".svg"):
            assert (base.parent / (base.name + suffix)).is_file(), suffix
        document = json.loads((base.parent / (base.name + ".json")).read_text())
        assert document["schema"] == "pcidoc.report/1"
        assert document["machine"]["host"]["hostname"] == "acs-box"
        assert (base.parent / (base.name + ".md")).read_text().startswith("#")
        assert "<html" in (base.parent / (base.name + ".html")).read_text().lower()
        svg = (base.parent / (base.name + ".svg")).read_text()
        assert svg.startswith("<svg") and "Topology" in svg and "Export the report" not in svg
        assert any("Wrote" in message for _, message in app.notices)


async def test_export_to_a_missing_folder_is_a_notification(export_dir: Path) -> None:
    app = make_app(acs_machine(), acs_source(), export_dir=export_dir)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await export_as(pilot, "no/such/folder/report")
        assert app.is_running
        errors = [m for severity, m in app.notices if severity == "error"]
        assert errors and "does not exist" in errors[0]
        assert not list(export_dir.rglob("report*"))


async def test_export_to_an_unwritable_folder_is_a_notification(export_dir: Path) -> None:
    locked = export_dir / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    app = make_app(acs_machine(), acs_source(), export_dir=locked)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            import os

            if os.access(locked, os.W_OK):  # running as root: permissions do not apply
                (locked / "report.md").mkdir()  # a directory where the file should go
            await export_as(pilot, "report")
            assert app.is_running
            errors = [m for severity, m in app.notices if severity == "error"]
            assert errors and "could not write" in errors[0]
    finally:
        locked.chmod(0o700)


async def test_escape_cancels_the_export(export_dir: Path) -> None:
    app = make_app(acs_machine(), acs_source(), export_dir=export_dir)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, ExportScreen)
        assert list(export_dir.iterdir()) == []


# ---------------------------------------------------------------------------- no GPU


async def test_no_gpu_machine_opens_the_demo_with_a_banner_and_keeps_host_facts() -> None:
    messages: list[object] = []
    app = make_app(collect=no_gpu_machine)
    async with app.run_test(size=(120, 36), message_hook=messages.append) as pilot:
        await settle(pilot)
        assert any(isinstance(m, ThisMachineCollected) for m in messages)
        assert app.fallback is True
        assert app.source is not None and app.source.kind == "demo"
        from pcidoc.samples import default_demo

        assert app.source.name == default_demo()
        assert "DEMO" in _plain(app, "#header-machine")
        banner = app.main.banner
        assert banner.display
        text = plain(banner)
        assert NO_DRIVER in text and "DEMO machine" in text and "not this one" in text
        await pilot.press("4")
        await pilot.pause()
        host = _plain(app, "#host-facts")
        for fact in (
            "This machine (live)",
            "dev-laptop",
            "6.10.3-arch1-1",
            "i7-1260P",
            "why no GPUs",
            NO_DRIVER,
        ):
            assert fact in host, fact


async def test_probes_on_a_demo_say_why_not() -> None:
    app = make_app(collect=no_gpu_machine)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await pilot.pause()
        assert not app.probes_running
        warnings = [m for severity, m in app.notices if severity == "warning"]
        assert warnings and "no usable GPU" in warnings[-1] and "DEMO" in warnings[-1]


async def test_probes_on_a_capture_say_why_not() -> None:
    app = make_app(acs_machine(), acs_source())
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await pilot.pause()
        assert not app.probes_running
        assert "capture file" in app.notices[-1][1]


async def test_sample_picker_opens_another_demo() -> None:
    app = make_app(collect=no_gpu_machine)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, SamplePicker)
        options = app.screen.query_one(OptionList)
        ids = [o.id for o in options.options]
        assert "h100-pcie-nvlink-bridge" in ids
        options.highlighted = ids.index("h100-pcie-nvlink-bridge")
        await pilot.press("enter")
        await settle(pilot)
        assert app.source == ReportSource(kind="demo", name="h100-pcie-nvlink-bridge")
        assert "h100-pcie-nvlink-bridge" in _plain(app, "#header-machine")
        assert app.report is not None and app.report.machine is app.capture


async def test_collecting_placeholder_shows_before_the_facts_arrive() -> None:
    import threading

    gate = threading.Event()

    def slow_collect():
        gate.wait(5)
        return acs_machine()

    app = make_app(collect=slow_collect)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert "collecting" in _plain(app, "#header-machine")
        gate.set()
        await settle(pilot)
        assert "acs-box" in _plain(app, "#header-machine")
        assert "LIVE" in _plain(app, "#header-machine")


async def test_q_quits_cleanly() -> None:
    app = make_app(acs_machine(), acs_source())
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_ctrl_c_quits_too() -> None:
    app = make_app(acs_machine(), acs_source())
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_code == 0


async def test_the_key_bar_is_clickable() -> None:
    from pcidoc.tui.widgets.key_bar import KeyBar

    app = make_app(acs_machine(), acs_source())
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        bar = app.main.query_one(KeyBar)
        text = plain(bar)
        assert "c Colour" in text and "q Quit" in text
        await pilot.click(KeyBar, offset=(text.index("w Worst") + 1, 0))
        await settle(pilot)
        assert app.main.active_pane == "doctor"
        assert "c Colour" not in plain(bar)  # topology keys only on the Topology pane


async def test_a_machine_whose_gpus_nvml_lost_is_shown_not_replaced_by_the_demo() -> None:
    def lost() -> object:
        capture = acs_machine()
        capture.origin.kind = "live"
        for gpu in capture.gpus:
            gpu.nvml_error = "GPU_IS_LOST"
        return capture

    app = make_app(collect=lost)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert app.source is not None and app.source.kind == "live"
        assert not app.fallback and not app.main.banner.display
        health = app.report.check("nvml.health")
        assert health is not None and health.severity in ("fail", "error")
        await pilot.press("p")
        await pilot.pause()
        assert "no usable GPU" in app.notices[-1][1]


async def test_one_gpu_and_a_capture_without_a_matrix_still_open() -> None:
    from tests.builders import machine

    single = machine(1)
    app = make_app(single, ReportSource(kind="capture", path="one.json"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        matrix = app.main.query_one(TopologyMatrix)
        assert matrix.selected == ("GPU0", "GPU0")
        assert "GPU0" in _plain(app, "#pair-detail")
        await pilot.press("right", "down", "c", "c", "c", "n", "2", "3", "4")
        await settle(pilot)
        assert app.is_running
    bare = machine(2)
    bare.topology.labels = []
    bare.topology.links = []
    bare.unavailable["topology"] = "no nvidia-smi topo -m output imported"
    app = make_app(bare, ReportSource(kind="import", path="q.txt"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        matrix = app.main.query_one(TopologyMatrix)
        assert matrix.grid is None
        assert "no nvidia-smi topo -m output imported" in matrix.render_line(0).text
        await pilot.press("c", "n", "right", "2")
        await settle(pilot)
        assert app.is_running


async def test_every_finding_of_a_check_is_in_the_doctor_detail() -> None:
    # "(+N more)" named only the worst finding; the others were nowhere in the TUI.
    app = demo_app("synthetic-72gpu")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        doctor = app.main.doctor
        several = [c for c in doctor.checks if len(c.findings) > 1]
        assert several, "the 72-GPU demo has a check with several findings"
        check = several[0]
        doctor.select(check.id)
        await pilot.pause()
        detail = _plain(app, "#check-text")
        assert f"Findings ({len(check.findings)})" in detail
        for finding in check.findings:
            assert finding.summary[:40] in " ".join(detail.split())

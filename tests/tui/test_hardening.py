"""The TUI under real use (issue 12): keys that arrive together, internal errors, searches,
filters, sorting and jumps."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from textual.binding import Binding, BindingType
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static

from pcidoc.tui.app import PcidocApp
from pcidoc.tui.screens.export import ExportScreen
from pcidoc.tui.screens.main import MainScreen
from pcidoc.tui.screens.samples import SamplePicker
from tests.tui.conftest import (
    burst,
    demo_app,
    export_as,
    make_app,
    open_pane,
    plain,
    refused_pix_pair_app,
    settle,
)
from tests.tui.machines import acs_machine, acs_source, hgx_live


async def test_two_enters_in_the_export_dialog_export_once(export_dir: Path) -> None:
    # Over a slow SSH link both Enter presses arrive in one read.
    app = make_app(acs_machine(), acs_source(), export_dir=export_dir)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, ExportScreen)
        await burst(pilot, "enter", "enter")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        assert len(app.screen_stack) == 1
        assert len([p for p in export_dir.iterdir() if p.suffix == ".json"]) == 1
    assert app.return_code in (None, 0)


async def test_two_enters_in_the_sample_picker_open_one_sample() -> None:
    from pcidoc.tui.live import load_demo

    loads: list[str | None] = []

    def load(name: str | None):  # type: ignore[no-untyped-def]
        loads.append(name)
        return load_demo(name)

    app = demo_app("autodl-2080ti-2gpu", load_demo=load)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, SamplePicker)
        await pilot.press("down")
        await burst(pilot, "enter", "enter")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen) and len(app.screen_stack) == 1
        assert len(loads) == 1
    assert app.return_code in (None, 0)


async def test_escape_then_enter_together_close_the_dialog_once(export_dir: Path) -> None:
    app = make_app(acs_machine(), acs_source(), export_dir=export_dir)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        await burst(pilot, "escape", "enter")
        await settle(pilot)
        assert len(app.screen_stack) == 1
        assert list(export_dir.iterdir()) == []


# ------------------------------------------------------------------------- internal errors


class _Broken(PcidocApp):
    """The app plus a key whose action has a bug."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("z", "broken", "Broken")]

    def action_broken(self) -> None:
        raise RuntimeError("a bug in a key handler")

    def run(self, *args: Any, **kwargs: Any) -> Any:  # as run_tui calls it, but headless
        self.animation_level = "none"

        async def press_z(pilot: Pilot[Any]) -> None:
            await settle(pilot)
            await pilot.press("z")

        return super().run(*args, headless=True, size=(100, 30), auto_pilot=press_z, **kwargs)


def test_an_internal_error_exits_3_in_one_line_with_a_log_of_the_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pcidoc.cli as cli
    import pcidoc.tui.app as app_module

    monkeypatch.setattr(app_module, "PcidocApp", _Broken)
    monkeypatch.setattr("pcidoc.cli.output.isatty", lambda _stream: True)
    monkeypatch.setenv("PCIDOC_LOG_DIR", str(tmp_path / "logs"))
    code = cli.main(["--demo", "autodl-2080ti-2gpu"])
    out, err = capsys.readouterr()
    assert code == 3
    assert "Traceback" not in err and "Traceback" not in out
    (line,) = err.strip().splitlines()
    assert "internal error" in line and "RuntimeError: a bug in a key handler" in line
    (log,) = (tmp_path / "logs").iterdir()
    assert str(log) in line
    text = log.read_text()
    assert "Traceback" in text and "action_broken" in text and "a bug in a key handler" in text


async def test_the_export_notification_names_the_files_once(export_dir: Path) -> None:
    app = make_app(acs_machine(), acs_source(), export_dir=export_dir)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await export_as(pilot)
    (wrote,) = [m for _, m in app.notices if m.startswith("Wrote")]
    assert "pcidoc-report-acs-box-20260101T120000Z.{md,html,json,svg}" in wrote
    assert wrote.endswith(f"in {export_dir}")


async def test_x_with_nothing_running_says_so() -> None:
    app = demo_app("autodl-2080ti-2gpu")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("x")
        await pilot.pause()
    said = [m for _, m in app.notices if "No probes are running" in m]
    assert said
    # On a demo p refuses: x must not send the user to it.
    assert "p starts them" not in said[0] and "DEMO machine" in said[0]


async def test_x_on_a_live_gpu_machine_points_to_p() -> None:
    box = hgx_live()
    app = make_app(collect=lambda: box.capture, allow_probes=None)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("x")
        await pilot.pause()
    assert any("nothing to cancel. p starts them." in m for _, m in app.notices)


async def test_q_closes_the_sample_picker() -> None:
    # A modal dialog keeps the app's keys from running: q did nothing at all in the picker.
    app = demo_app("autodl-2080ti-2gpu")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, SamplePicker)
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen) and app.source.name == "autodl-2080ti-2gpu"


async def test_settle_raises_when_the_app_never_settles() -> None:
    def broken_collector():  # type: ignore[no-untyped-def]
        raise OSError("NVML went away")

    app = make_app(collect=broken_collector)
    async with app.run_test(size=(100, 30)) as pilot:
        with pytest.raises(AssertionError, match="did not settle"):
            await settle(pilot, rounds=5)


# ------------------------------------------------------------------ doctor: filter, search, jump


async def test_f_hides_passed_and_skipped_checks_and_says_so() -> None:
    app = demo_app("autodl-2080ti-2gpu")
    async with app.run_test(size=(120, 36)) as pilot:
        await open_pane(pilot, "3")
        doctor = app.main.doctor
        everything = len(doctor.checks)
        assert {c.severity for c in doctor.checks} >= {"pass", "skip"}
        await pilot.press("f")
        await pilot.pause()
        assert doctor.checks and {c.severity for c in doctor.checks}.isdisjoint({"pass", "skip"})
        line = plain(app.main.query_one("#check-filter", Static))
        assert f"showing {len(doctor.checks)} of {everything}" in line
        await pilot.press("f")
        await pilot.pause()
        assert len(doctor.checks) == everything
        assert not app.main.query_one("#check-filter", Static).display


async def test_slash_searches_the_checks_and_escape_clears(export_dir: Path) -> None:
    app = demo_app("autodl-2080ti-2gpu", export_dir=export_dir)
    async with app.run_test(size=(120, 36)) as pilot:
        await open_pane(pilot, "3")
        doctor = app.main.doctor
        everything = len(doctor.checks)
        # "/" and the letters in one read; letters of app keys (p probes, e export) are text.
        await burst(pilot, "slash", *"pcie")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen) and not app.probes_running
        assert doctor.search == "pcie"
        assert doctor.checks and all(
            "pcie" in f"{c.id} {c.title} {c.summary}".lower() for c in doctor.checks
        )
        assert len(doctor.checks) < everything
        await pilot.press("enter")  # back to the list, search kept
        await pilot.pause()
        assert doctor.search == "pcie"
        await pilot.press("escape")
        await pilot.pause()
        assert doctor.search == "" and len(doctor.checks) == everything
    assert list(export_dir.iterdir()) == []


async def test_after_enter_in_the_search_letters_are_keys_again() -> None:
    # `/ p2p enter` keeps the search on display; q, f and 1 must then act, not be typed into
    # the search (q used to become "p2pq" and the user could not quit or switch panes).
    app = demo_app("autodl-2080ti-2gpu")
    async with app.run_test(size=(100, 30)) as pilot:
        await open_pane(pilot, "3")
        doctor = app.main.doctor
        await burst(pilot, "slash", *"p2p")
        await pilot.press("enter")
        await pilot.pause()
        assert doctor.search == "p2p"
        await pilot.press("f")
        await pilot.pause()
        assert doctor.search == "p2p" and doctor.hide_passed
        await pilot.press("1")
        await pilot.pause()
        assert app.main.active_pane == "topology"
        # "/" again: letters go to the search once more (replacing the selected old text).
        await pilot.press("3", "slash", "x")
        await pilot.pause()
        assert doctor.search == "x"
        await pilot.press("enter", "q")
        await pilot.pause()
    assert app.return_code == 0


async def test_a_search_with_no_match_names_the_key_that_undoes_it() -> None:
    app = demo_app("autodl-2080ti-2gpu")
    async with app.run_test(size=(100, 30)) as pilot:
        await open_pane(pilot, "3")
        doctor = app.main.doctor
        await burst(pilot, "slash", *"zzzz")
        await pilot.press("enter")
        await pilot.pause()
        assert doctor.checks == []
        said = plain(app.main.query_one("#check-text", Static))
        # Not "f / escape show them all": f does not undo a search.
        assert "escape clears the search" in said and "f " not in said
        await pilot.press("escape")
        await pilot.pause()
        assert doctor.search == "" and doctor.checks


async def test_enter_on_a_finding_jumps_to_its_pair_in_the_matrix() -> None:
    app = refused_pix_pair_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("w")
        await settle(pilot)
        doctor = app.main.doctor
        assert doctor.selected is not None and doctor.selected.id == "p2p.capability"
        assert "GPU0-GPU1" in doctor.selected.subjects
        await pilot.press("enter")
        await settle(pilot)
        assert app.main.active_pane == "topology"
        assert app.main.topology.matrix.selected in (("GPU0", "GPU1"),)


async def test_enter_on_a_gpu_finding_selects_that_gpu() -> None:
    app = demo_app("synthetic-16gpu")
    async with app.run_test(size=(160, 48)) as pilot:
        await open_pane(pilot, "3")
        app.main.doctor.select("pcie.link-speed")
        await pilot.pause()
        assert app.main.doctor.selected is not None
        gpu = next(s for s in app.main.doctor.selected.subjects if s.startswith("GPU"))
        await pilot.press("enter")
        await settle(pilot)
        assert app.main.active_pane == "topology"
        assert app.main.topology.matrix.selected == (gpu, gpu)


# ------------------------------------------------------------------------- links: sort


def _gpu_order(app: PcidocApp) -> list[str]:
    table = app.main.query_one("#gpu-table", DataTable)
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


async def test_o_sorts_the_links_pane_by_replays_then_utilisation() -> None:
    box = hgx_live()
    app = make_app(collect=lambda: box.capture, sampler_factory=box.sampler)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await pilot.pause()
        app.take_sample()
        await pilot.pause()  # a newer queued sample replaces an unhandled one
        box.advance(1.0)
        app.take_sample()
        await pilot.pause()
        assert _gpu_order(app) == [f"GPU{i}" for i in range(8)]
        await pilot.press("o")  # replays: GPU5 replays 4/s, the others none
        await pilot.pause()
        assert _gpu_order(app)[0] == "GPU5"
        assert "Sorted by replays" in plain(app.main.query_one("#links-note", Static))
        await pilot.press("o")  # utilisation: GPU i moves (i + 1) x 3 GB/s
        await pilot.pause()
        assert _gpu_order(app) == [f"GPU{i}" for i in range(7, -1, -1)]
        box.advance(1.0)
        app.take_sample()  # a new sample keeps the order
        await pilot.pause()
        assert _gpu_order(app) == [f"GPU{i}" for i in range(7, -1, -1)]
        await pilot.press("o")
        await pilot.pause()
        assert _gpu_order(app) == [f"GPU{i}" for i in range(8)]


async def test_b_hides_the_no_gpu_banner_and_gives_its_rows_back() -> None:
    from tests.tui.machines import no_gpu_machine

    app = make_app(collect=no_gpu_machine)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        banner = app.main.banner
        assert banner.display and "b hide this" in plain(banner)
        tabs_top = app.main.query_one("#tabs").region.y
        await pilot.press("b")
        await pilot.pause()
        assert not banner.display
        assert app.main.query_one("#tabs").region.y < tabs_top
        await pilot.press("b")
        await pilot.pause()
        assert banner.display


async def test_b_without_a_banner_does_not_claim_this_machines_gpus_are_shown() -> None:
    # `pcidoc --demo` shows a demo by choice: "this machine's GPUs are on display" was false.
    app = demo_app("autodl-2080ti-2gpu")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await pilot.pause()
    said = [m for _, m in app.notices if "no banner" in m]
    assert said and "this machine's GPUs" not in said[0]
    assert "demo: autodl-2080ti-2gpu" in said[0]


# ------------------------------------------------------------------ export: folders, existing files


async def test_export_to_a_folder_writes_inside_it(export_dir: Path) -> None:
    # Typing a folder wrote FOLDER.md, FOLDER.html... beside it instead of a report inside it.
    target = export_dir / "reports"
    target.mkdir()
    app = make_app(acs_machine(), acs_source(), export_dir=export_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await export_as(pilot, "reports")
    inside = sorted(p.name for p in target.iterdir())
    assert inside == [
        f"pcidoc-report-acs-box-20260101T120000Z{s}" for s in (".html", ".json", ".md", ".svg")
    ]
    assert sorted(p.name for p in export_dir.iterdir()) == ["reports"]


async def test_export_over_existing_files_asks_before_replacing_them(export_dir: Path) -> None:
    old = export_dir / "mine.md"
    old.write_text("my notes\n", encoding="utf-8")
    app = make_app(acs_machine(), acs_source(), export_dir=export_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await export_as(pilot, "mine")
        assert isinstance(app.screen, ExportScreen)  # still asking
        warning = plain(app.screen.query_one("#export-warning", Static))
        assert "mine.md already in" in warning and "y replaces it" in warning
        assert old.read_text(encoding="utf-8") == "my notes\n"
        await pilot.press("y")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
    assert old.read_text(encoding="utf-8") != "my notes\n"
    assert (export_dir / "mine.json").is_file()


@pytest.mark.parametrize("together", [False, True], ids=["press", "one-read"])
async def test_a_double_enter_over_existing_files_replaces_nothing(
    export_dir: Path, together: bool
) -> None:
    # Two Enters in one press call (or in one read over SSH): the first asks, the second
    # cannot be the answer, whatever the timing of the keys; the files stay as they were.
    old = export_dir / "mine.md"
    old.write_text("my notes\n", encoding="utf-8")
    app = make_app(acs_machine(), acs_source(), export_dir=export_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        field = app.screen.query_one("#export-path", Input)
        # Typing replaces the proposed name (selected when the dialog opens).
        await pilot.press(*"mine")
        await settle(pilot)
        assert field.value == "mine"
        if together:
            await burst(pilot, "enter", "enter")
        else:
            await pilot.press("enter", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ExportScreen)  # back to the name, nothing written
        assert sorted(p.name for p in export_dir.iterdir()) == ["mine.md"]
        await pilot.press("escape")
        await settle(pilot)
    assert old.read_text(encoding="utf-8") == "my notes\n"
    assert not [m for _, m in app.notices if "Wrote" in m]


async def test_a_failed_export_says_how_to_try_again(export_dir: Path) -> None:
    app = make_app(acs_machine(), acs_source(), export_dir=export_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await export_as(pilot, "no/such/folder/report")
    errors = [m for severity, m in app.notices if severity == "error"]
    assert errors and errors[0].endswith("press e to correct the path")


@pytest.mark.parametrize(
    ("sample", "says", "never"),
    [
        # nvidia-smi topo -m says NV12; the import has no per-link facts: not "PCIe only".
        ("a100-sxm4-8gpu-nvswitch", "topology matrix shows NV12 to 7 GPUs", "PCIe only"),
        ("autodl-2080ti-2gpu", "PCIe only", "topology matrix shows"),
    ],
)
async def test_the_nvlink_title_agrees_with_the_topology_matrix(
    sample: str, says: str, never: str
) -> None:
    app = demo_app(sample)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await pilot.pause()
        title = plain(app.main.query_one("#nvlink-title", Static))
    assert says in title and never not in title


# ------------------------------------------------------------------ key bar: every pane's keys


async def test_the_key_bar_shows_each_panes_keys_and_they_work_when_clicked() -> None:
    # The Doctor's f and / and the Links pane's o were in no key bar: a user reading the
    # footer never learnt them.
    from pcidoc.tui.widgets.key_bar import KeyBar

    app = demo_app("autodl-2080ti-2gpu")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        bar = app.main.query_one(KeyBar)
        await pilot.press("3")
        await settle(pilot)
        text = plain(bar)
        assert "f Filter" in text and "/ Search" in text and "q Quit" in text
        await pilot.click(KeyBar, offset=(text.index("f Filter") + 1, 0))
        await pilot.pause()
        assert app.main.doctor.hide_passed
        await pilot.click(KeyBar, offset=(text.index("/ Search") + 1, 0))
        await pilot.pause()
        await pilot.press("p", "2", "p")
        await pilot.pause()
        assert app.main.doctor.search == "p2p"
        await pilot.press("enter", "2")
        await settle(pilot)
        text = plain(bar)
        assert "o Sort" in text and "f Filter" not in text
        await pilot.click(KeyBar, offset=(text.index("o Sort") + 1, 0))
        await pilot.pause()
        assert app.main.links.sort != "gpu"


def _fleet_dir(tmp_path: Path) -> Path:
    from pcidoc.samples import sample_path

    folder = tmp_path / "fleet"
    folder.mkdir()
    for n in (1, 2):
        (folder / f"node{n}.json").write_text(
            sample_path("a100-sxm4-8gpu-nvswitch").read_text(encoding="utf-8"), encoding="utf-8"
        )
    (folder / "broken.json").write_text("{bad", encoding="utf-8")
    return folder


async def test_the_fleet_names_its_unreadable_files_and_the_key_back(tmp_path: Path) -> None:
    from pcidoc.fleet.analyze import analyse
    from pcidoc.tui.screens.fleet import FleetScreen
    from pcidoc.tui.widgets.key_bar import KeyBar
    from tests.tui.conftest import wait_until

    report = analyse([str(_fleet_dir(tmp_path))], workers=1, generated_at="t")
    app = make_app(None, None, collect=lambda: None, fleet=report, allow_probes=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen))
        await pilot.pause()
        # "1 unreadable file" said how many, never which or why.
        skipped = plain(app.screen.query_one("#fleet-unreadable", Static))
        assert "broken.json" in skipped and "not JSON" in skipped
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.report is not None)
        # In a node, the key bar says how to get back to the fleet.
        assert "esc Fleet" in plain(app.main.query_one(KeyBar))


async def test_a_narrow_key_bar_drops_whole_hints_and_keeps_quit() -> None:
    # 80 columns on the Doctor pane while probes run: "q Quit" was cut to "q" at the edge.
    from pcidoc.tui.widgets.key_bar import KeyBar

    app = demo_app("autodl-2080ti-2gpu")
    async with app.run_test(size=(80, 24)) as pilot:
        await open_pane(pilot, "3")
        bar = app.main.query_one(KeyBar)
        app.probes_running = True
        await pilot.pause()
        text = plain(bar).rstrip()
        assert len(text) <= 80
        assert "x Cancel probes" in text and "f Filter" in text
        assert text.endswith("q Quit") and "…" not in text
        assert "s Samples" not in text  # dropped whole, not cut
        await pilot.resize_terminal(160, 40)
        await pilot.pause()
        assert "s Samples" in plain(bar)
        app.probes_running = False


@pytest.mark.parametrize("sample", ["synthetic-72gpu", "h800-8gpu-hgx", "a100-sxm4-8gpu-nvswitch"])
async def test_the_header_keeps_the_verdict_at_80_columns(sample: str) -> None:
    # The 72-GPU demo's header packed into three lines at 80 columns and the header shows two:
    # "worst: ! WARN" was not on screen at all.
    from pcidoc.tui.widgets.machine_header import HEADER_LINES

    app = demo_app(sample)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        line = app.main.query_one("#header-machine", Static)
        shown = [
            "".join(segment.text for segment in strip)
            for strip in line.render_lines(line.region.reset_offset)
        ]
        assert len(shown) <= HEADER_LINES
        assert any("worst:" in row for row in shown), shown


async def test_a_sample_of_the_previous_machine_is_not_shown_after_switching() -> None:
    # The sampler thread may read the old demo's counters just as another sample is opened:
    # that message arrived after the switch and the Links pane showed the old machine's
    # rates (and the next sample made rates across two machines' counters).
    app = demo_app("autodl-2080ti-2gpu", replay_demos=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await pilot.pause()
        old = app.sampler
        assert old is not None
        app.take_sample()
        await pilot.pause()
        app.load_machine(None, None, demo="a100-sxm4-8gpu-nvswitch")
        await settle(pilot)
        new = app.sampler
        assert new is not None and new is not old and app.counters is None
        app.sampler = old  # the sampler thread still holds the old one...
        app.take_sample()
        app.sampler = new  # ...while the UI has switched
        await pilot.pause()
        await pilot.pause()
        assert app.counters is None


async def test_a_link_the_capture_lacks_shows_the_model_link_util_is_measured_against() -> None:
    # The imported 2080 Ti demo has no negotiated link: the link column said "—" while
    # Util % was computed against the model's Gen3 x16 ceiling, with nothing saying so.
    app = demo_app("autodl-2080ti-2gpu", replay_demos=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await pilot.pause()
        app.take_sample()  # the replayed trace has no link either: the cell keeps the model's
        await pilot.pause()
        table = app.main.query_one("#gpu-table", DataTable)
        assert str(table.get_cell("0", "link")) == "Gen3 x16?"
        note = plain(app.main.query_one("#links-note", Static))
        assert "Link? = the GPU model's own link" in note
    # A capture with the negotiated link shows it plainly, and no such note.
    app = make_app(acs_machine(), acs_source())
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await pilot.pause()
        table = app.main.query_one("#gpu-table", DataTable)
        assert "?" not in str(table.get_cell("0", "link"))
        assert "Link?" not in plain(app.main.query_one("#links-note", Static))

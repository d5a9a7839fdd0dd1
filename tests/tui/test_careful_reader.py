"""Issue 30, "what a careful reader notices": the TUI and the doctor say the same true thing.

An H100 PCIe pair shows 18 NVLinks, 12 wired through its bridges: the doctor said the other 6
are "not wired in this design" while the Links pane listed them as down (NVL 12/18), and the
pane rated each link 26.562 GB/s where the pair detail said 25. One rule
(:func:`pcidoc.model.linkmodel.unwired_nvlinks`) and one rate
(:func:`pcidoc.model.linkmodel.nvlink_link_rate_gbps`) now feed every view.
"""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from pcidoc.doctor import run
from pcidoc.model.capture import Capture
from pcidoc.model.facts import NvLink
from pcidoc.model.report import ReportSource
from pcidoc.samples import load_sample
from tests.builders import machine
from tests.tui.conftest import export_as, make_app, plain, settle


def _links(up: int, total: int, version: str = "4.0", speed: float = 26.562) -> list[NvLink]:
    return [
        NvLink(
            link=i,
            state="up" if i < up else "down",
            version=version if i < up else None,
            speed_gbps=speed if i < up else None,
            remote_type="gpu" if i < up else None,
        )
        for i in range(total)
    ]


def _pair(name: str, ups: tuple[int, ...], total: int, link: str | None = "NV12") -> Capture:
    cap = machine(len(ups), link=link or "SYS", gpu_fields={"name": name}, kind="import")
    if link is None:
        cap.topology.labels, cap.topology.links = [], []
    for gpu, up in zip(cap.gpus, ups, strict=True):
        gpu.nvlinks = _links(up, total)
    return cap


VARIANTS = {
    "h100-sample": lambda: load_sample("h100-pcie-nvlink-bridge"),
    "h100-nvl-pair": lambda: _pair("NVIDIA H100 NVL", (12, 12), 18),
    "one-h100-pcie-no-matrix": lambda: _pair("NVIDIA H100 PCIe", (12,), 18, link=None),
    "a-bridge-missing": lambda: _pair("NVIDIA H100 PCIe", (12, 8), 18),
    "sxm-link-down": lambda: _pair("NVIDIA H100 80GB HBM3", (18, 17), 18, link="NV18"),
}


def _doctor_unwired(cap: Capture) -> set[str]:
    """The GPUs whose inactive links the doctor calls unwired (and none that it calls down)."""
    report = run(cap, ReportSource(kind="demo", name="t"), generated_at="2026-01-01T00:00:00Z")
    check = report.check("nvlink.state")
    assert check is not None
    unwired: set[str] = set()
    for finding in check.findings or [check]:
        if "not wired in this design" in finding.summary or "unwired lanes" in finding.summary:
            unwired |= set(finding.subjects)
    return unwired


@pytest.mark.parametrize("variant", sorted(VARIANTS))
async def test_the_links_pane_and_the_doctor_agree_on_unwired_nvlinks(variant: str) -> None:
    cap = VARIANTS[variant]()
    unwired = _doctor_unwired(cap)
    app = make_app(cap, ReportSource(kind="demo", name=variant))
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        gpus = app.main.query_one("#gpu-table", DataTable)
        links = app.main.query_one("#nvlink-table", DataTable)
        for gpu in cap.gpus:
            up = sum(1 for link in gpu.nvlinks if link.state == "up")
            down = len(gpu.nvlinks) - up
            cell = str(gpus.get_cell(str(gpu.index), "nvl"))
            if gpu.label in unwired:
                assert cell == f"{up}/{up}", (gpu.label, cell)
            else:
                assert cell == f"{up}/{up + down}", (gpu.label, cell)
            app.main.links.selected_gpu = gpu.index
            app.main.links._show_links()
            await pilot.pause()
            states = {str(links.get_cell(str(k.link), "state")) for k in gpu.nvlinks}
            assert ("unwired" in states) == (gpu.label in unwired and down > 0), (gpu.label, states)
            assert ("down" in states) == (gpu.label not in unwired and down > 0), (
                gpu.label,
                states,
            )
    if variant == "a-bridge-missing":
        assert unwired == {"GPU0"}  # GPU1 misses links its peer has: down, not a design


async def test_every_view_rates_an_nvlink_at_the_link_models_nominal_rate() -> None:
    cap = load_sample("h100-pcie-nvlink-bridge")
    app = make_app(cap, ReportSource(kind="demo", name="h100-pcie-nvlink-bridge"))
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(pilot)
        detail = plain(app.main.query_one("#pair-detail"))
        assert "12 × NVLink at 25 GB/s nominal" in detail
        await pilot.press("2")
        await settle(pilot)
        links = app.main.query_one("#nvlink-table", DataTable)
        rated = {str(links.get_cell(str(k.link), "speed")) for k in cap.gpus[0].nvlinks}
        assert rated == {"25.0", "—"}
    from pcidoc.tui.panes.topology import describe_cell

    gpu_detail = describe_cell(cap, "GPU0", "GPU0").plain
    assert "12 of 12 up, 6 more not wired in this design" in gpu_detail
    assert "25 GB/s each" in gpu_detail and "26.562" not in gpu_detail


# --------------------------------------------------------------------------------- export


@pytest.mark.parametrize("typed", ["no/such/folder/report", "elsewhere/deep/x"])
async def test_the_export_dialog_keeps_the_typed_path_after_a_missing_folder(
    tmp_path, typed: str
) -> None:
    """ "folder does not exist: press e ..." then e proposed the default name again: the path
    typed (with its one wrong folder) had to be typed again."""
    from tests.tui.machines import acs_machine, acs_source

    app = make_app(acs_machine(), acs_source(), export_dir=tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await export_as(pilot, typed)
        assert any("does not exist" in m for s, m in app.notices if s == "error")
        await pilot.press("e")
        await pilot.pause()
        assert app.screen.query_one("#export-path").value == typed
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("e")  # once corrected (or abandoned), the default comes back
        await pilot.pause()
        assert app.screen.query_one("#export-path").value.startswith("pcidoc-report-")


def test_exports_default_to_a_reports_folder_not_the_working_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """In a checkout, exports into the working folder became untracked files."""
    from pcidoc.tui.services import TuiOptions

    monkeypatch.delenv("PCIDOC_EXPORT_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert TuiOptions().export_dir == tmp_path / "home" / "pcidoc-reports"
    monkeypatch.setenv("PCIDOC_EXPORT_DIR", str(tmp_path / "chosen"))
    assert TuiOptions().export_dir == tmp_path / "chosen"


async def test_the_default_reports_folder_is_made_private_at_the_first_export(tmp_path) -> None:
    import os
    import stat

    from tests.tui.machines import acs_machine, acs_source

    folder = tmp_path / "home" / "pcidoc-reports"
    app = make_app(acs_machine(), acs_source(), export_dir=folder)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await export_as(pilot)
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert sorted(p.suffix for p in folder.iterdir()) == [".html", ".json", ".md", ".svg"]


async def test_the_exported_svg_loads_no_font_from_the_network(tmp_path) -> None:
    """Rich's SVG fetched Fira Code from a CDN: offline machines drew it in another font (and
    a viewer told a third party that a report was opened)."""
    import re

    from tests.tui.machines import acs_machine, acs_source

    app = make_app(acs_machine(), acs_source(), export_dir=tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await export_as(pilot)
    (svg,) = tmp_path.glob("*.svg")
    text = svg.read_text(encoding="utf-8")
    assert "url(" not in text and "cdnjs" not in text
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg|www\.textualize\.io)", text)
    assert "ui-monospace" in text and 'local("FiraCode-Regular")' in text


@pytest.mark.parametrize("kind", ["live", "import"])
async def test_a_links_pane_without_gpus_says_why(kind: str) -> None:
    """An empty GPU table (with the usual note about TX, RX and Util) said nothing."""
    from pcidoc.model import Capture
    from tests.tui.machines import no_gpu_machine

    cap = no_gpu_machine() if kind == "live" else Capture.empty("import")
    source = ReportSource(kind="live") if kind == "live" else ReportSource(kind="import")
    app = make_app(cap, source, demo_fallback=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        note = plain(app.main.query_one("#links-note"))
        where = "this machine" if kind == "live" else "this capture"
        assert f"No GPUs in {where}" in note and "TX, RX" not in note
        if kind == "live":
            assert "NVIDIA driver is not installed" in note
        assert not app.main.query_one("#gpu-table", DataTable).display


def test_the_host_pane_says_how_many_more_source_files() -> None:
    """The list of an imported capture's source files stopped at 6 without a word."""
    from pcidoc.model.capture import OriginSource
    from pcidoc.tui.panes.host import host_detail

    cap = load_sample("h100-pcie-nvlink-bridge")
    cap.origin.sources = [OriginSource(path=f"/tmp/paste-{i}.txt") for i in range(9)]
    text = host_detail(cap, "Host").plain
    assert "paste-5.txt" in text and "paste-6.txt" not in text
    assert "and 3 more source files" in text

"""SVG snapshots of every pane, dialog and state, at 80×24 and 160×48 (and 220×60).

Baselines live in ``<repo>/snapshots/test_snapshots/`` (see ``conftest.py``). Data are the
bundled samples, the synthetic 72-GPU capture and the synthetic machines of ``machines.py``;
no clock, no live NVML, no animation. Review a change with the HTML report pytest-textual-snapshot
writes, then accept it with ``pytest tests/tui/test_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from textual.pilot import Pilot

from pcidoc.tui.app import PcidocApp
from pcidoc.tui.widgets.topology_matrix import TopologyMatrix
from tests.fakes.fake_probes import FakeProbeRunner
from tests.tui.conftest import demo_app, make_app, settle, wait_until
from tests.tui.machines import acs_machine, acs_source, hgx_live, no_gpu_machine

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]
SAMPLES = [
    "autodl-2080ti-2gpu",
    "rtx4090-8gpu-pcie",
    "a100-sxm4-8gpu-nvswitch",
    "h100-pcie-nvlink-bridge",
    "h800-8gpu-hgx",
    "synthetic-16gpu",
    "synthetic-72gpu",
]


def _keys(*keys: str):
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        await settle(pilot)

    return run_before


def _live_app() -> tuple[PcidocApp, Any]:
    box = hgx_live()
    return make_app(collect=lambda: box.capture, sampler_factory=box.sampler), box


def _sampled(box: Any, *keys: str):
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        for _ in range(4):
            pilot.app.take_sample()
            await pilot.pause()
            box.advance(1.0)
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        await settle(pilot)

    return run_before


# ------------------------------------------------------------------------------- topology


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("sample", SAMPLES)
def test_topology(snap_compare, sample: str, size: tuple[int, int]) -> None:
    assert snap_compare(demo_app(sample), terminal_size=size, run_before=_keys())


def test_topology_72_gpus_on_a_tall_terminal(snap_compare) -> None:
    """220×60: the matrix takes every row the legend and the findings leave."""
    assert snap_compare(demo_app("synthetic-72gpu"), terminal_size=(220, 60), run_before=_keys())


@pytest.mark.parametrize("size", SIZES)
def test_topology_pair_detail_with_acs_redirect(snap_compare, size: tuple[int, int]) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        pilot.app.main.query_one(TopologyMatrix).select("GPU2", "GPU3")
        await settle(pilot)

    assert snap_compare(
        make_app(acs_machine(), acs_source()), terminal_size=size, run_before=run_before
    )


@pytest.mark.parametrize("size", SIZES)
def test_topology_measured_bandwidth_mode(snap_compare, size: tuple[int, int]) -> None:
    assert snap_compare(
        demo_app("a100-sxm4-8gpu-nvswitch"), terminal_size=size, run_before=_keys("c")
    )


def test_topology_live_traffic_mode(snap_compare) -> None:
    app, box = _live_app()
    assert snap_compare(app, terminal_size=(160, 48), run_before=_sampled(box, "c", "c"))


# ---------------------------------------------------------------------------------- links


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(
    "sample", ["autodl-2080ti-2gpu", "h100-pcie-nvlink-bridge", "synthetic-72gpu"]
)
def test_links_static(snap_compare, sample: str, size: tuple[int, int]) -> None:
    assert snap_compare(demo_app(sample), terminal_size=size, run_before=_keys("2"))


@pytest.mark.parametrize("size", SIZES)
def test_links_live(snap_compare, size: tuple[int, int]) -> None:
    app, box = _live_app()
    assert snap_compare(app, terminal_size=size, run_before=_sampled(box, "2"))


# --------------------------------------------------------------------------------- doctor


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("sample", ["autodl-2080ti-2gpu", "rtx4090-8gpu-pcie", "synthetic-72gpu"])
def test_doctor(snap_compare, sample: str, size: tuple[int, int]) -> None:
    assert snap_compare(demo_app(sample), terminal_size=size, run_before=_keys("w"))


@pytest.mark.parametrize("size", SIZES)
def test_doctor_acs_machine(snap_compare, size: tuple[int, int]) -> None:
    app = make_app(acs_machine(), acs_source())
    assert snap_compare(app, terminal_size=size, run_before=_keys("w"))


# ------------------------------------------------------------------------- no GPU, host


@pytest.mark.parametrize("size", SIZES)
def test_no_gpu_banner_and_demo(snap_compare, size: tuple[int, int]) -> None:
    assert snap_compare(make_app(collect=no_gpu_machine), terminal_size=size, run_before=_keys())


@pytest.mark.parametrize("size", SIZES)
def test_no_gpu_host_pane(snap_compare, size: tuple[int, int]) -> None:
    assert snap_compare(make_app(collect=no_gpu_machine), terminal_size=size, run_before=_keys("4"))


# -------------------------------------------------------------------------------- dialogs


@pytest.mark.parametrize("size", SIZES)
def test_help_screen(snap_compare, size: tuple[int, int]) -> None:
    assert snap_compare(
        demo_app("autodl-2080ti-2gpu"), terminal_size=size, run_before=_keys("question_mark")
    )


@pytest.mark.parametrize("size", SIZES)
def test_export_dialog(snap_compare, size: tuple[int, int], tmp_path) -> None:
    app = demo_app("autodl-2080ti-2gpu", export_dir="/reports")
    assert snap_compare(app, terminal_size=size, run_before=_keys("e"))


def test_sample_picker(snap_compare) -> None:
    app = make_app(collect=no_gpu_machine)
    assert snap_compare(app, terminal_size=(160, 48), run_before=_keys("s"))


# --------------------------------------------------------------------------------- probes


@pytest.mark.parametrize("size", SIZES)
def test_probe_in_progress(snap_compare, size: tuple[int, int]) -> None:
    stalled = [
        (
            0.0,
            {
                "type": "progress",
                "probe": "transfer",
                "fraction": 0.25,
                "message": "GPU0 pinned plateau",
            },
        ),
        (
            0.0,
            {
                "type": "progress",
                "probe": "transfer",
                "fraction": 0.375,
                "message": "GPU1 pinned plateau",
            },
        ),
        (3600.0, {"type": "progress", "probe": "transfer", "fraction": 1.0, "message": "done"}),
    ]
    box = hgx_live()
    app = make_app(
        collect=lambda: box.capture,
        sampler_factory=lambda _c: None,
        probe_runner=FakeProbeRunner({"transfer": stalled}, gpu_count=8, speed=1.0),
        allow_probes=True,
        busy_check=lambda _c, _g: [],
    )

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("p")
        await wait_until(
            pilot,
            lambda: pilot.app.main.doctor.probes.status.get("transfer") == "GPU1 pinned plateau",
        )
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_probes_finished(snap_compare) -> None:
    box = hgx_live()
    app = make_app(
        collect=lambda: box.capture,
        sampler_factory=lambda _c: None,
        probe_runner=FakeProbeRunner(gpu_count=8, speed=math.inf),
        allow_probes=True,
        busy_check=lambda _c, _g: [],
    )
    assert snap_compare(app, terminal_size=(160, 48), run_before=_keys("p"))

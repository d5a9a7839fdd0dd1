"""Fixtures of the TUI tests: app factories over fixed data, a settle helper, and the redirect
of SVG snapshot baselines into the top-level ``snapshots/`` folder.

pytest-textual-snapshot's ``snap_compare`` asks the ``snapshot`` fixture for
``use_extension(SVGImageExtension)``, and syrupy would put the SVGs beside the test module
(``tests/tui/__snapshots__``). The ``snapshot`` fixture below returns an assertion whose
``use_extension`` swaps that extension for :class:`TopLevelSVGExtension`, whose ``dirname`` is
``<repo>/snapshots/<test module>``. ``test_snapshot_location.py`` fails if this stops working.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pytest_textual_snapshot import SVGImageExtension
from rich.console import Console
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.base import AbstractSyrupyExtension
from syrupy.location import PyTestLocation
from textual import events
from textual.pilot import Pilot
from textual.widgets import Input, Static

from pcidoc._record import field_names
from pcidoc.model.capture import Capture
from pcidoc.model.fleet import FleetReport
from pcidoc.model.report import ReportSource
from pcidoc.samples import load_sample
from pcidoc.tui.app import PcidocApp
from pcidoc.tui.app import make_app as build_app
from pcidoc.tui.services import TuiOptions, TuiServices
from tests.tui.machines import FIXED_NOW

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT_ROOT = ROOT / "snapshots"


class TopLevelSVGExtension(SVGImageExtension):
    """SVG snapshots stored under ``<repo>/snapshots/<test module>/``."""

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(SNAPSHOT_ROOT / test_location.basename)


class RedirectedSnapshot(SnapshotAssertion):
    """A snapshot assertion that stores SVG snapshots in the top-level folder."""

    def use_extension(
        self, extension_class: type[AbstractSyrupyExtension] | None = None
    ) -> SnapshotAssertion:
        if extension_class is not None and issubclass(extension_class, SVGImageExtension):
            extension_class = TopLevelSVGExtension
        return super().use_extension(extension_class)


@pytest.fixture
def snapshot(request: pytest.FixtureRequest) -> SnapshotAssertion:
    """syrupy's ``snapshot`` fixture, redirected to ``<repo>/snapshots`` for SVGs."""
    return RedirectedSnapshot(
        update_snapshots=request.config.option.update_snapshots,
        extension_class=TopLevelSVGExtension,
        test_location=PyTestLocation(request.node),
        session=request.session.config._syrupy,
    )


@pytest.fixture(autouse=True)
def _pinned_rendering(monkeypatch: pytest.MonkeyPatch) -> None:
    """Colour on and UTC: snapshots must not depend on the developer's terminal."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TZ", "UTC")


SERVICE_FIELDS = frozenset(field_names(TuiServices))
OPTION_FIELDS = frozenset(field_names(TuiOptions))


def make_app(
    capture: Capture | None = None,
    source: ReportSource | None = None,
    *,
    fleet: FleetReport | None = None,
    app_class: type[PcidocApp] | None = None,
    **kwargs: Any,
) -> PcidocApp:
    """A deterministic app: fixed wall clock, no background sampler, no live NVML.

    ``kwargs`` name fields of :class:`TuiServices` (``collect=``, ``probe_runner=``...) or of
    :class:`TuiOptions` (``allow_probes=``, ``export_dir=``...); the app is built the way
    production code builds it, by :func:`pcidoc.tui.app.make_app`.
    """
    unknown = set(kwargs) - SERVICE_FIELDS - OPTION_FIELDS
    if unknown:
        raise TypeError(f"neither a service nor an option: {', '.join(sorted(unknown))}")
    services: dict[str, Any] = {k: v for k, v in kwargs.items() if k in SERVICE_FIELDS}
    options: dict[str, Any] = {k: v for k, v in kwargs.items() if k in OPTION_FIELDS}
    options.setdefault("interval", None)
    services.setdefault("now", lambda: FIXED_NOW)
    if capture is None and "collect" not in services:
        raise ValueError("tests must inject the capture or a collector")
    if capture is None:
        services.setdefault("sampler_factory", lambda _capture: None)
    app = build_app(
        capture,
        source,
        services=TuiServices(**services),
        options=TuiOptions(**options),
        fleet=fleet,
        app_class=app_class,
    )
    app.animation_level = "none"
    app.show_toasts = False
    return app


def demo_app(name: str, **kwargs: Any) -> PcidocApp:
    """The app on a bundled sample, as ``pcidoc --demo NAME`` opens it."""
    return make_app(load_sample(name), ReportSource(kind="demo", name=name), **kwargs)


def refused_pix_pair_app() -> PcidocApp:
    """The 2080 Ti demo's PIX pair with P2P refused, on GPUs that are not consumer ones: a
    refusal with a cause to fix warns about the pair (on GeForce it is the driver's policy,
    info)."""
    name = "autodl-2080ti-2gpu"
    cap = load_sample(name)
    for gpu in cap.gpus:
        gpu.name = "NVIDIA A10"
    return make_app(cap, ReportSource(kind="demo", name=name))


def plain(widget: Static) -> str:
    """The text a :class:`Static` shows, without styles (wide enough not to wrap)."""
    content = widget.content
    if isinstance(content, str):
        return content
    console = Console(width=400, file=io.StringIO(), color_system=None, record=True)
    console.print(content)
    return console.export_text()


async def settle(pilot: Pilot[Any], rounds: int = 60) -> None:
    """Wait until loading, the doctor, probes and export are done and their messages handled.

    A key's action may start a worker only after it awaited something (mounting a pane), so
    "no worker running" alone is not enough: the app must also have a report and no probe run,
    and stay quiet for two pauses in a row.
    """
    app = pilot.app
    quiet = 0
    why = "never started"
    for _ in range(rounds):
        busy = [w for w in app.workers if w.group != "counters" and not w.is_finished]
        if busy:
            await app.workers.wait_for_complete(busy)
        await pilot.pause()
        if busy or app.probes_running or app.report is None:
            quiet = 0
            why = (
                f"workers still running: {', '.join(w.name for w in busy)}"
                if busy
                else "probes still running"
                if app.probes_running
                else "no report yet"
            )
            continue
        quiet += 1
        if quiet >= 2:
            return
    # A test that goes on from here would assert against a half-loaded app.
    raise AssertionError(f"the app did not settle in {rounds} rounds ({why})")


async def wait_until(pilot: Pilot[Any], predicate: Callable[[], bool], limit: int = 400) -> None:
    """Pause until ``predicate()`` is true (bounded; fails the test when it never is)."""
    for _ in range(limit):
        if predicate():
            return
        await pilot.pause(0.01)
    raise AssertionError("condition not reached")


@pytest.fixture
def export_dir(tmp_path: Path) -> Path:
    """A folder for export tests (also the app's working folder)."""
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


async def open_pane(pilot: Pilot[Any], key: str) -> None:
    """Wait for the first screen, press a pane key (``3`` = Doctor) and wait for the pane."""
    await settle(pilot)
    await pilot.press(key)
    await settle(pilot)


async def burst(pilot: Pilot[Any], *keys: str) -> None:
    """Keys that arrive in one read (a slow SSH link): all queued before any is handled."""
    characters = {"enter": "\r", "escape": "\x1b", "slash": "/", "question_mark": "?"}
    for key in keys:
        character = characters.get(key, key if len(key) == 1 else None)
        pilot.app.post_message(events.Key(key, character))
    await pilot.pause()


async def export_as(pilot: Pilot[Any], path: str | None = None) -> None:
    """Export with ``e``: ``path`` over the proposed name (``None`` keeps it), then enter, and
    wait until everything it caused is done."""
    await pilot.press("e")
    await pilot.pause()
    if path is not None:
        pilot.app.screen.query_one("#export-path", Input).value = path
    await pilot.press("enter")
    await settle(pilot)

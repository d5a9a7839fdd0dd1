#!/usr/bin/env python3
"""TUI measurements for ``tests/benchmarks/run.py``; each prints one JSON line and asserts nothing.

Usage:
  tui_probe.py first-screen PARENT_TIME   ``pcidoc --demo`` headless, from the parent's
                                          ``time.time()`` (taken just before it started this
                                          process) to the first complete screen: demo loaded,
                                          doctor run, first paint done. Prints
                                          ``{"first_screen_s", "rss_mb", "torch_loaded"}``.
  tui_probe.py textual-floor PARENT_TIME  the same for a minimal Textual app (a header, one line
                                          of text, a footer; no pcidoc): the least any Textual
                                          TUI costs on this machine. Prints ``{"first_screen_s"}``.
  tui_probe.py matrix-72                  time to build and draw every line of the 72-GPU
                                          matrix widget (90 x 90 cells with the NICs), cold
                                          and warm. Prints ``{"render_s", "render_warm_s", ...}``.
  tui_probe.py sampler                    CPU time of one counter sample per GPU over the fake
                                          NVML backend (8 GPUs x 18 NVLinks). Prints
                                          ``{"cpu_s_per_gpu_sample", ...}``.
  tui_probe.py progress-flood             a fake probe streams 1000 progress messages (1 ms
                                          apart) while a 20 ms heartbeat timer runs on the UI
                                          thread. Prints ``{"worst_lateness_s",
                                          "median_lateness_s", "beats", "shown"}``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def _rss_mb() -> float:
    try:
        with open("/proc/self/status", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def first_screen(parent_time: float) -> dict[str, object]:
    """What ``pcidoc --demo`` does (run_tui), headless, until the first complete screen."""
    import gc

    gc.disable()  # as run_tui does until the first screen
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")  # as pcidoc.cli.main does
    from pcidoc.tui import build_app
    from pcidoc.tui.app import PcidocApp

    class Probe(PcidocApp):
        reached: float | None = None

        def _first_screen_done(self) -> None:
            Probe.reached = time.time()  # painted; what follows (gc.freeze) is after it
            super()._first_screen_done()
            self.exit(0)

    app = build_app(demo="", app_class=Probe)  # run_tui's app for ``pcidoc --demo``
    app.freeze_gc = True
    app.run(headless=True, size=(160, 48))
    assert Probe.reached is not None, "the first screen was never complete"
    source = app.source
    return {
        "first_screen_s": round(Probe.reached - parent_time, 4),
        "rss_mb": round(_rss_mb(), 1),
        "torch_loaded": "torch" in sys.modules,
        "sample": source.name if source is not None else None,
    }


def textual_floor(parent_time: float) -> dict[str, object]:
    """A minimal Textual app, started as run_tui starts pcidoc's (no cyclic GC until the first
    screen), until its first paint: the floor under pcidoc's first-screen figure."""
    import gc

    gc.disable()
    from textual.app import App, ComposeResult
    from textual.widgets import Footer, Header, Static

    class Floor(App[None]):
        reached: float | None = None

        def compose(self) -> ComposeResult:
            yield Header()
            yield Static("pcidoc " * 40)
            yield Footer()

        def on_mount(self) -> None:
            self.call_after_refresh(self.done)

        def done(self) -> None:
            Floor.reached = time.time()
            self.exit()

    Floor().run(headless=True, size=(160, 48))
    assert Floor.reached is not None, "the first screen was never complete"
    return {"first_screen_s": round(Floor.reached - parent_time, 4)}


def matrix_72() -> dict[str, object]:
    """Build the 72-GPU grid and draw every line of the matrix widget, inside a running app."""
    from textual.app import App, ComposeResult

    from pcidoc.samples.synthetic import synthetic_72
    from pcidoc.tui.matrix_grid import build_grid
    from pcidoc.tui.widgets.topology_matrix import TopologyMatrix

    capture = synthetic_72()
    timings: list[float] = []
    lines: list[int] = []

    class Bench(App[None]):
        def compose(self) -> ComposeResult:
            yield TopologyMatrix(id="matrix")

        def on_mount(self) -> None:
            self.call_after_refresh(self.measure)

        def measure(self) -> None:
            matrix = self.query_one(TopologyMatrix)
            for _ in range(5):
                start = time.perf_counter()
                matrix.set_grid(build_grid(capture))
                strips = matrix.render_all()
                visible = [matrix.render_line(y) for y in range(matrix.size.height)]
                timings.append(time.perf_counter() - start)
                lines.append(len(strips) + len(visible))
                matrix.grid = None  # the next round starts from nothing again
            self.exit()

    Bench().run(headless=True, size=(160, 48))
    return {
        "render_s": round(timings[0], 4),
        "render_warm_s": round(sorted(timings[1:])[len(timings[1:]) // 2], 4),
        "cells": len(capture.topology.labels) ** 2,
        "lines": lines[0],
    }


def sampler() -> dict[str, object]:
    """CPU cost of the live sampler over the fake backend (pcidoc's own Python cost)."""
    from pcidoc.collect.counters import CounterSampler, measure_overhead
    from tests.fakes.fake_nvml import FakeNvmlBackend

    backend = FakeNvmlBackend.hgx(8)
    backend.init()
    counters = CounterSampler(backend)
    overhead = measure_overhead(counters, samples=300, between=lambda: backend.advance(1.0))
    return {
        "cpu_s_per_gpu_sample": overhead.cpu_s_per_gpu_sample,
        "cpu_s_per_sample": overhead.cpu_s_per_sample,
        "core_percent_at_1hz": round(overhead.core_percent(1.0), 4),
        "gpus": overhead.gpus,
    }


def progress_flood() -> dict[str, object]:
    """How late a 20 ms UI heartbeat gets while a probe streams 1000 progress messages."""
    import asyncio
    import statistics

    from pcidoc.tui.app import PcidocApp, make_app
    from pcidoc.tui.services import TuiOptions, TuiServices
    from tests.fakes.fake_probes import FakeProbeRunner
    from tests.tui.conftest import settle, wait_until
    from tests.tui.machines import hgx_live

    class Heartbeat(PcidocApp):
        def on_mount(self) -> None:
            super().on_mount()
            self.lateness: list[float] = []
            self.last_beat = time.monotonic()
            self.set_interval(0.02, self.beat)

        def beat(self) -> None:
            now = time.monotonic()
            self.lateness.append(max(0.0, now - self.last_beat - 0.02))
            self.last_beat = now

    flood: list[tuple[float, dict[str, object]]] = [
        (0.001, {"type": "progress", "probe": "transfer", "fraction": k / 1000, "message": f"s{k}"})
        for k in range(1000)
    ]
    flood.append(
        (3600.0, {"type": "progress", "probe": "transfer", "fraction": 1.0, "message": ""})
    )
    box = hgx_live()
    app = make_app(
        services=TuiServices(
            collect=lambda: box.capture,
            sampler_factory=lambda _c: None,
            probe_runner=FakeProbeRunner({"transfer": flood}, gpu_count=8, speed=1.0),
            busy_check=lambda _c, _g: [],
        ),
        options=TuiOptions(interval=None, allow_probes=True),
        app_class=Heartbeat,
    )
    app.freeze_gc = True
    result: dict[str, object] = {}

    async def run() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("3")
            await settle(pilot)
            app.lateness.clear()
            app.last_beat = time.monotonic()
            await pilot.press("p")
            panel = app.main.doctor.probes
            await wait_until(pilot, lambda: panel.status.get("transfer") == "s999", limit=4000)
            beats = list(app.lateness)
            await pilot.press("x")
            await settle(pilot)
        result.update(
            worst_lateness_s=max(beats),
            median_lateness_s=statistics.median(beats),
            beats=len(beats),
        )

    asyncio.run(run())
    return result


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    command = argv[0]
    if command == "first-screen":
        result = first_screen(float(argv[1]) if len(argv) > 1 else time.time())
    elif command == "textual-floor":
        result = textual_floor(float(argv[1]) if len(argv) > 1 else time.time())
    elif command == "matrix-72":
        result = matrix_72()
    elif command == "sampler":
        result = sampler()
    elif command == "progress-flood":
        result = progress_flood()
    else:
        print(f"unknown command {command!r}", file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

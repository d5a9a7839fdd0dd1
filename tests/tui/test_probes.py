"""Probe runs from the TUI with the fake runner: progress, results, cancel, timeout, crash,
and the UI's responsiveness while a probe floods it with progress messages."""

from __future__ import annotations

import math
import threading
import time
from typing import Any

from textual.widgets import ProgressBar

from pcidoc.tui.app import PcidocApp
from pcidoc.tui.messages import ProbeFinished, ProbeProgressed, ProbesEnded, ReportUpdated
from tests.fakes.fake_probes import HANG_STREAM, FakeProbeRunner
from tests.tui.conftest import make_app, settle, wait_until
from tests.tui.machines import hgx_live


def _probe_app(runner: FakeProbeRunner, **kwargs: Any) -> PcidocApp:
    box = hgx_live()
    return make_app(
        collect=lambda: box.capture,
        sampler_factory=lambda _c: None,
        probe_runner=runner,
        allow_probes=True,
        busy_check=lambda _capture, _gpus: [],
        **kwargs,
    )


def _slow_transfer(progress_lines: int = 3, hang_s: float = 3600.0) -> list[tuple[float, Any]]:
    lines: list[tuple[float, Any]] = [
        (
            0.0,
            {
                "type": "progress",
                "probe": "transfer",
                "fraction": (k + 1) / (progress_lines + 1),
                "message": f"GPU{k} pinned plateau",
            },
        )
        for k in range(progress_lines)
    ]
    lines.append(
        (hang_s, {"type": "progress", "probe": "transfer", "fraction": 1.0, "message": "done"})
    )
    return lines


async def test_quick_probes_advance_bars_and_turn_skips_into_verdicts() -> None:
    messages: list[object] = []
    runner = FakeProbeRunner(gpu_count=8, speed=math.inf)
    app = _probe_app(runner)
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await settle(pilot)
        before = {c.id: c.severity for c in app.report.checks}
        assert before["transfer.pinned"] == "skip"
        assert before["p2p.fallback"] == "skip"
        await pilot.press("p")
        await settle(pilot)
        assert not app.probes_running
        names = [spec.name for spec in runner.calls]
        assert names[0] == "env" and "transfer" in names and "p2p" in names
        progressed = [m for m in messages if isinstance(m, ProbeProgressed)]
        assert {m.probe for m in progressed} >= {"transfer", "p2p"}
        finished = [m for m in messages if isinstance(m, ProbeFinished) and m.probe != "env"]
        assert finished and all(not m.errors for m in finished)
        # One new report per probe that finished, each with more measurements than the last.
        reports = [m.report for m in messages if isinstance(m, ReportUpdated)]
        assert len(reports) >= 1 + len(finished)
        after = {c.id: c.severity for c in app.report.checks}
        assert after["transfer.pinned"] != "skip"
        assert after["p2p.fallback"] != "skip"
        assert app.report.machine.measurements.p2p
        bars = app.main.query(ProgressBar)
        assert bars and all(bar.progress == 100 for bar in bars)
        panel = app.main.doctor.probes
        assert panel.status["transfer"].startswith("done")
        # The matrix follows: the bandwidth colour mode now has measured cells.
        await pilot.press("1", "c")
        await pilot.pause()
        grid = app.main.topology.grid
        assert grid is not None and grid.mode == "bandwidth"
        assert any(cell.text.endswith("%") for row in grid.cells for cell in row)
        assert any(isinstance(m, ProbesEnded) and not m.cancelled for m in messages)


async def test_cancel_mid_run_stops_the_probe_and_skips_the_rest() -> None:
    runner = FakeProbeRunner({"transfer": _slow_transfer()}, gpu_count=8, speed=1.0)
    app = _probe_app(runner)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await wait_until(
            pilot, lambda: app.main.doctor.probes.status.get("transfer", "").startswith("GPU2")
        )
        bar = app.main.query_one("#probe-transfer ProgressBar", ProgressBar)
        assert 0 < bar.progress < 100
        start = time.monotonic()
        await pilot.press("x")
        await settle(pilot)
        assert time.monotonic() - start < 10
        assert not app.probes_running
        status = app.main.doctor.probes.status
        assert status["transfer"].startswith("interrupted")
        assert "cancelled before it started" in status["p2p"]
        pinned = app.report.check("transfer.pinned")
        assert pinned is not None and pinned.severity == "skip" and "cancelled" in pinned.summary
        assert any("cancelled" in message for _, message in app.notices)


async def test_a_hanging_probe_times_out_as_an_error_with_a_notification() -> None:
    runner = FakeProbeRunner({"transfer": HANG_STREAM}, gpu_count=8, speed=math.inf)
    app = _probe_app(runner)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        assert app.is_running and not app.probes_running
        pinned = app.report.check("transfer.pinned")
        assert pinned is not None and pinned.severity == "error"
        assert "timed out" in pinned.summary
        assert app.main.doctor.probes.status["transfer"].startswith("timeout")
        errors = [m for severity, m in app.notices if severity == "error"]
        assert any("timeout" in m and "transfer" in m for m in errors)
        # The other probes still ran.
        assert app.report.machine.measurements.p2p


async def test_a_crashing_probe_is_an_error_result() -> None:
    crash = [(0.0, {"type": "error", "kind": "crash", "message": "child exited with SIGSEGV"})]
    runner = FakeProbeRunner({"p2p": crash}, gpu_count=8, speed=math.inf)
    app = _probe_app(runner)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        fallback = app.report.check("p2p.fallback")
        assert fallback is not None and fallback.severity == "error"
        assert "crashed" in fallback.summary
        assert app.main.doctor.probes.status["p2p"].startswith("crash")
        assert any("SIGSEGV" in m for severity, m in app.notices if severity == "error")


async def test_garbage_only_stream_is_an_error_not_a_crash_of_the_app() -> None:
    garbage = [(0.0, "Segmentation fault (core dumped)"), (0.0, "{not json")]
    runner = FakeProbeRunner({"transfer": garbage}, gpu_count=8, speed=math.inf)
    app = _probe_app(runner)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        assert app.is_running
        pinned = app.report.check("transfer.pinned")
        assert pinned is not None and pinned.severity == "error"


async def test_no_torch_makes_every_probe_unavailable_with_the_install_hint() -> None:
    from tests.fakes.fake_probes import NO_TORCH_ENV_STREAM

    runner = FakeProbeRunner({"env": NO_TORCH_ENV_STREAM}, gpu_count=8, speed=math.inf)
    app = _probe_app(runner)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        pinned = app.report.check("transfer.pinned")
        assert pinned is not None and pinned.severity == "skip"
        assert "torch is not installed" in pinned.summary
        assert any("torch is not installed" in m for _, m in app.notices)


async def test_a_runner_that_raises_becomes_a_notification() -> None:
    class Broken:
        def run(self, spec: Any, on_progress: Any = None, cancel: Any = None) -> Any:
            raise RuntimeError("runner exploded")

    app = _probe_app(Broken())  # type: ignore[arg-type]
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        assert app.is_running and not app.probes_running
        assert any("runner exploded" in m for severity, m in app.notices if severity == "error")


async def test_second_p_while_running_is_refused() -> None:
    runner = FakeProbeRunner({"transfer": _slow_transfer()}, gpu_count=8, speed=1.0)
    app = _probe_app(runner)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await wait_until(pilot, lambda: "transfer" in app.main.doctor.probes.status)
        await pilot.press("P")
        await pilot.pause()
        assert "already running" in app.notices[-1][1]
        await pilot.press("x")
        await settle(pilot)


async def test_quit_during_a_probe_cancels_it() -> None:
    runner = FakeProbeRunner({"transfer": _slow_transfer()}, gpu_count=8, speed=1.0)
    app = _probe_app(runner)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await wait_until(
            pilot, lambda: app.main.doctor.probes.status.get("transfer", "").startswith("GPU")
        )
        workers = [w for w in app.workers if w.group == "probes"]
        await pilot.press("q")
        await pilot.pause()
    assert workers and all(w.cancelled_event.is_set() for w in workers)
    assert app.return_code == 0


class _Heartbeat(PcidocApp):
    """The app plus a 20 ms heartbeat timer on the UI thread."""

    def on_mount(self) -> None:
        super().on_mount()
        self.beats = 0
        self.set_interval(0.02, self._beat)

    def _beat(self) -> None:
        self.beats += 1


async def test_ui_stays_responsive_while_a_probe_streams_1000_progress_messages() -> None:
    """What does not depend on the machine's speed: the 1000 progress messages are coalesced
    (the panel redraws far fewer times), they are posted from the runner's thread, never the UI
    thread, and the UI's own timers keep firing while they stream. How late the heartbeat is
    gets measured by ``tests/benchmarks/tui_probe.py``, not asserted here."""
    flood = [
        (
            0.001,
            {"type": "progress", "probe": "transfer", "fraction": k / 1000, "message": f"step {k}"},
        )
        for k in range(1000)
    ]
    # Then silence until cancelled, so the window below ends exactly with the stream.
    flood.append(
        (3600.0, {"type": "progress", "probe": "transfer", "fraction": 1.0, "message": ""})
    )
    runner = FakeProbeRunner({"transfer": flood}, gpu_count=8, speed=1.0)
    box = hgx_live()
    app = make_app(
        collect=lambda: box.capture,
        sampler_factory=lambda _c: None,
        probe_runner=runner,
        allow_probes=True,
        busy_check=lambda _c, _g: [],
        app_class=_Heartbeat,
    )
    app.freeze_gc = True  # as run_tui sets it
    posted_from: set[str] = set()
    original_post = app.post_message

    def post(message: Any) -> bool:
        if isinstance(message, ProbeProgressed) and message.message.startswith("step"):
            posted_from.add(threading.current_thread().name)
        return original_post(message)

    app.post_message = post  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        # Open the Doctor pane first: its first layout is not what this test measures.
        await pilot.press("3")
        await settle(pilot)
        panel = app.main.doctor.probes
        shown: list[str] = []
        original_progress = panel.progress

        async def progress(probe: str, fraction: float, message: str) -> None:
            shown.append(message)
            await original_progress(probe, fraction, message)

        panel.progress = progress  # type: ignore[method-assign]
        beats_before = app.beats
        await pilot.press("p")

        def streamed() -> bool:
            return panel.status.get("transfer") == "step 999"

        await wait_until(pilot, streamed, limit=4000)
        beats = app.beats - beats_before
        await pilot.press("x")
        await settle(pilot)
    steps = [m for m in shown if m.startswith("step")]
    print(f"progress messages shown {len(steps)} of 1000; heartbeats during the stream {beats}")
    assert steps[-1] == "step 999"
    assert len(steps) < 1000, "progress messages were not coalesced"
    assert steps == sorted(steps, key=lambda m: int(m.split()[1]))  # never out of order
    assert posted_from and threading.main_thread().name not in posted_from
    assert beats > 0, "the UI's timers did not run while the probe streamed"


async def test_tui_runs_probes_through_the_shared_session(monkeypatch) -> None:
    """The TUI and the CLI share one orchestrator: the TUI's run goes through ProbeSession,
    and its env probe is restricted to the capture's GPUs like the probes (the TUI used to
    run it without the capture, losing CUDA_VISIBLE_DEVICES)."""
    from pcidoc.probes import session

    sessions: list[session.ProbeSession] = []
    original = session.ProbeSession.run

    def spy(self: session.ProbeSession) -> None:
        sessions.append(self)
        original(self)

    monkeypatch.setattr(session.ProbeSession, "run", spy)
    runner = FakeProbeRunner(gpu_count=8, speed=math.inf)
    app = _probe_app(runner)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
    assert len(sessions) == 1 and sessions[0].mode == "quick"
    env = next(spec for spec in runner.calls if spec.name == "env")
    transfer = next(spec for spec in runner.calls if spec.name == "transfer")
    assert env.env.get("CUDA_VISIBLE_DEVICES")
    assert env.env.get("CUDA_VISIBLE_DEVICES") == transfer.env.get("CUDA_VISIBLE_DEVICES")

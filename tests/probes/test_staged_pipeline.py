"""The host-staged P2P baseline on a virtual clock: the same steady-state bandwidth in quick
and full mode (issue 9: timing the whole pipeline by the host clock counted its fill and drain,
~80 % of the host rate with quick's 4 chunks and ~94 % with full's 16, and the P2P-vs-staged
verdict flipped with the mode).

The stand-in below models CUDA streams in virtual time: a copy starts when its stream is free
(and the host has enqueued it) and lasts ``bytes / rate``; events complete when the work before
them does; ``wait_event`` orders streams. Rates are inputs of the model, not measurements.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from pcidoc.probes import p2p
from pcidoc.probes.params import P2P

ENQUEUE_S = 5e-6


class Clock:
    def __init__(self, d2h_gbps: float, h2d_gbps: float) -> None:
        self.host = 0.0
        self.rates = {("device", "pinned"): d2h_gbps, ("pinned", "device"): h2d_gbps}
        self.current: VStream | None = None


class VStream:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.ready = 0.0

    def wait_event(self, event: VEvent) -> None:
        assert event.t is not None, "waiting on an event that was never recorded"
        self.clock.host += ENQUEUE_S
        self.ready = max(self.ready, event.t)

    def synchronize(self) -> None:
        self.clock.host = max(self.clock.host, self.ready)


class VEvent:
    clock: Clock

    def __init__(self, enable_timing: bool = False) -> None:
        self.enable_timing = enable_timing
        self.t: float | None = None

    def record(self, stream: VStream) -> None:
        self.clock.host += ENQUEUE_S
        self.t = max(stream.ready, self.clock.host)
        stream.ready = self.t

    def synchronize(self) -> None:
        assert self.t is not None
        self.clock.host = max(self.clock.host, self.t)

    def elapsed_time(self, end: VEvent) -> float:
        assert self.enable_timing and end.enable_timing
        assert self.t is not None and end.t is not None
        return (end.t - self.t) * 1e3


class VTensor:
    def __init__(self, clock: Clock, nbytes: int, kind: str) -> None:
        self.clock, self.nbytes, self.kind = clock, nbytes, kind

    def __getitem__(self, piece: slice) -> VTensor:
        start, stop, _ = piece.indices(self.nbytes)
        return VTensor(self.clock, stop - start, self.kind)

    def copy_(self, src: VTensor, non_blocking: bool = False) -> VTensor:
        stream = self.clock.current
        assert stream is not None and non_blocking, "staged copies run async on a stream"
        assert src.nbytes == self.nbytes
        self.clock.host += ENQUEUE_S
        rate = self.clock.rates[(src.kind, self.kind)]
        start = max(stream.ready, self.clock.host)
        stream.ready = start + self.nbytes / (rate * 1e9)
        return self


class VCuda:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        VEvent.clock = clock
        self.Event = VEvent

    @contextlib.contextmanager
    def stream(self, stream: VStream) -> Any:
        previous, self.clock.current = self.clock.current, stream
        try:
            yield
        finally:
            self.clock.current = previous


class VTorch:
    uint8 = "uint8"

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.cuda = VCuda(clock)

    def empty(self, nbytes: int, dtype: Any = None, pin_memory: bool = False, device: Any = None):
        return VTensor(self.clock, nbytes, "pinned" if pin_memory else "device")


class Recorder:
    def __init__(self) -> None:
        self.results: list[tuple[dict, dict]] = []

    def progress(self, fraction: float, message: str) -> None:
        pass

    def result(self, kind: str, record: dict, extra: dict | None = None) -> None:
        self.results.append((record, extra or {}))

    def log(self, level: str, message: str) -> None:
        pass

    def info(self, data: dict) -> None:
        pass


def staged_gbps(mode: str, d2h_gbps: float, h2d_gbps: float) -> float:
    """Run the probe's staged phase for GPU0 -> GPU1 on the virtual clock."""
    clock = Clock(d2h_gbps, h2d_gbps)
    torch = VTorch(clock)
    probe = p2p._P2PProbe.__new__(p2p._P2PProbe)
    params = P2P[mode]
    probe.torch, probe.p, probe.emit = torch, params, Recorder()
    probe.indices, probe.n, probe.pairs = [0, 1], 2, [(0, 1)]
    probe.phase, probe.phases = 2, 5
    probe.size = params.size_bytes
    probe.src = [VTensor(clock, probe.size, "device") for _ in range(2)]
    probe.dst = [VTensor(clock, probe.size, "device") for _ in range(2)]
    probe.stage_streams = [VStream(clock), VStream(clock)]
    probe._staged()
    [(record, extra)] = probe.emit.results
    assert record["p2p"] == "staged"
    assert extra["chunk_bytes"] == params.staged_chunk_bytes
    return float(record["values"][0][1])


@pytest.mark.parametrize(("d2h", "h2d"), [(25.0, 25.0), (20.0, 26.0), (53.0, 55.0)])
def test_staged_baseline_is_the_same_in_quick_and_full_mode(d2h: float, h2d: float) -> None:
    quick = staged_gbps("quick", d2h, h2d)
    full = staged_gbps("full", d2h, h2d)
    assert quick == pytest.approx(full, rel=0.01)
    # The steady state of a double-buffered pipeline runs at its slower stage.
    assert quick == pytest.approx(min(d2h, h2d), rel=0.02)


def test_steady_state_excludes_the_pipeline_fill() -> None:
    # Chunks of 1 GB arriving every 0.1 s after a 0.1 s fill: 10 GB/s, whatever the count.
    assert p2p.steady_state_gbps(10**9, [0.2, 0.3, 0.4]) == pytest.approx(10.0)
    assert p2p.steady_state_gbps(10**9, [0.2, 0.3, 0.4, 0.5, 0.6]) == pytest.approx(10.0)
    assert p2p.steady_state_gbps(10**9, [0.2]) is None

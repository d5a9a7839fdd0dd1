"""Child probe ``p2p``: GPU<->GPU copy bandwidth, latency and correctness for every pair.

``research/probes.md`` §2.3 (b):

* capability: ``torch.cuda.can_device_access_peer`` (capability only: ACS/IOMMU can make an
  "enabled" path slower than staging through the host, so everything is measured);
* unidirectional: ``dst.copy_(src, non_blocking=True)`` issued on a dedicated stream of the
  **source** device, events on that stream — nvbandwidth's ``device_to_device_memcpy_write_ce``
  (the source context pushes). Pairs without peer access are timed the same way: the driver
  then stages the copy itself (the ``disabled`` matrix);
* bidirectional: i→j on i's stream and j→i on j's stream, released together by one gate;
  per-direction bandwidth (the sum is twice the bytes, as p2pBandwidthLatencyTest counts it);
* host-staged baseline: an explicit GPU i → pinned chunk → GPU j pipeline, double buffered, two
  streams with event hand-off, timed by the host clock; what a P2P path must beat;
* latency: 16-byte copies queued behind a gate, time per copy (only where the gate kernel
  exists);
* verification: one pattern copy per ordered pair, compared byte for byte on the destination;
  a peer path that returns wrong data is a failure.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from typing import Any

from pcidoc.probes import cudautil, stats
from pcidoc.probes.child import Emitter, ProbeUnavailable, import_torch, require_cuda
from pcidoc.probes.params import P2P, P2PParams

ENQUEUE_S = 30e-6


def p2p_params(params: dict[str, Any]) -> P2PParams:
    """Mode defaults with overrides (tests shrink sizes)."""
    base = P2P[params.get("mode", "quick")]
    overrides = dict(params.get("overrides") or {})
    return P2PParams(**{**base.__dict__, **overrides}) if overrides else base


def _matrix(n: int) -> list[list[float | None]]:
    return [[None] * n for _ in range(n)]


class _P2PProbe:
    def __init__(self, torch: Any, emit: Emitter, gpus: list[dict[str, Any]], p: P2PParams):
        self.torch = torch
        self.emit = emit
        self.p = p
        self.indices = [int(g["index"]) for g in gpus]
        self.ordinals = [int(g["ordinal"]) for g in gpus]
        self.n = len(gpus)
        self.devices = [torch.device("cuda", o) for o in self.ordinals]
        self.pairs = [(a, b) for a in range(self.n) for b in range(self.n) if a != b]
        self.phases = 5
        self.phase = 0

    def report(self, done: float, message: str) -> None:
        self.emit.progress((self.phase + done) / self.phases, message)

    def label(self, a: int, b: int) -> str:
        return f"GPU{self.indices[a]}->GPU{self.indices[b]}"

    # --------------------------------------------------------------------------------- run

    def run(self) -> None:
        torch, p = self.torch, self.p
        can = [
            [
                None
                if a == b
                else bool(torch.cuda.can_device_access_peer(self.ordinals[a], self.ordinals[b]))
                for b in range(self.n)
            ]
            for a in range(self.n)
        ]
        self.can = can
        self.emit.info({"can_access_peer": can, "gpus": self.indices})
        free = min(torch.cuda.mem_get_info(d)[0] for d in self.devices)
        size = p.size_bytes
        if 2 * size > 0.4 * free:
            size = cudautil.round_down_pow2(int(0.2 * free))
            self.emit.log("warning", f"P2P buffers reduced to {size} bytes (free GPU memory)")
        self.size = size
        self.src = [torch.empty(size, dtype=torch.uint8, device=d) for d in self.devices]
        self.dst = [torch.empty(size, dtype=torch.uint8, device=d) for d in self.devices]
        for buffer in self.src:
            buffer.fill_(7)
        self.streams = [torch.cuda.Stream(device=d) for d in self.devices]
        self.stage_streams = [torch.cuda.Stream(device=d) for d in self.devices]
        self.gates = [cudautil.calibrate_gate(torch, s) for s in self.streams]
        try:
            self._unidirectional()
            self.phase = 1
            self._bidirectional()
            self.phase = 2
            self._staged()
            self.phase = 3
            self._latency()
            self.phase = 4
            self._verify()
        finally:
            del self.src, self.dst
            for device in self.devices:
                with contextlib.suppress(Exception):
                    torch.cuda.synchronize(device)
            torch.cuda.empty_cache()
        self.emit.progress(1.0, "done")

    def _emit_matrix(self, values: list[list[float | None]], mode: str, **fields: Any) -> None:
        if all(v is None for row in values for v in row):
            return
        record = {
            "kind": fields.pop("kind", "bandwidth"),
            "p2p": mode,
            "unit": fields.pop("unit", "GB/s"),
            "gpus": self.indices,
            "values": values,
            "source": "probe",
            **fields,
        }
        self.emit.result("p2p", record)

    def _copy(self, a: int, b: int, size: int | None = None) -> Any:
        src, dst = self.src[a], self.dst[b]
        if size is not None:
            src, dst = src[:size], dst[:size]
        return lambda: dst.copy_(src, non_blocking=True)

    # ------------------------------------------------------------------ unidirectional

    def _unidirectional(self) -> None:
        torch, p = self.torch, self.p
        enabled, disabled = _matrix(self.n), _matrix(self.n)
        for step, (a, b) in enumerate(self.pairs):
            self.report(step / len(self.pairs), f"{self.label(a, b)} copy bandwidth")
            copy = self._copy(a, b)
            stream = self.streams[a]
            with torch.cuda.stream(stream):
                copy()  # warm-up; enables peer access lazily
            stream.synchronize()
            values = [
                stats.bandwidth_gbps(
                    self.size * p.copies, cudautil.time_copies(torch, stream, copy, p.copies)
                )
                for _ in range(p.trials)
            ]
            median = round(stats.summarize(values, discard_first=1).median, 4)
            (enabled if self.can[a][b] else disabled)[a][b] = median
        common = {
            "bidirectional": False,
            "access": "write",
            "method": "ce",
            "size_bytes": self.size,
        }
        self._emit_matrix(enabled, "enabled", **common)
        self._emit_matrix(disabled, "disabled", **common)

    # ------------------------------------------------------------------- bidirectional

    def _bidirectional(self) -> None:
        torch, p = self.torch, self.p
        enabled, disabled = _matrix(self.n), _matrix(self.n)
        unordered = list(itertools.combinations(range(self.n), 2))
        for step, (a, b) in enumerate(unordered):
            self.report(step / len(unordered), f"GPU{self.indices[a]}<->GPU{self.indices[b]}")
            s_a, s_b = self.streams[a], self.streams[b]
            ab, ba = self._copy(a, b), self._copy(b, a)
            values_ab, values_ba = [], []
            for _ in range(p.bidir_trials):
                release = torch.cuda.Event()
                start_a, end_a, start_b, end_b = (
                    torch.cuda.Event(enable_timing=True) for _ in range(4)
                )
                with torch.cuda.stream(s_a):
                    if self.gates[a].available:
                        self.gates[a].hold(1.0 + 2 * p.bidir_copies * ENQUEUE_S * 1e3)
                    release.record(s_a)
                    start_a.record(s_a)
                s_b.wait_event(release)
                with torch.cuda.stream(s_b):
                    start_b.record(s_b)
                for _ in range(p.bidir_copies):
                    with torch.cuda.stream(s_a):
                        ab()
                    with torch.cuda.stream(s_b):
                        ba()
                with torch.cuda.stream(s_a):
                    end_a.record(s_a)
                with torch.cuda.stream(s_b):
                    end_b.record(s_b)
                end_a.synchronize()
                end_b.synchronize()
                total = self.size * p.bidir_copies
                values_ab.append(stats.bandwidth_gbps(total, start_a.elapsed_time(end_a) / 1e3))
                values_ba.append(stats.bandwidth_gbps(total, start_b.elapsed_time(end_b) / 1e3))
            both = bool(self.can[a][b] and self.can[b][a])
            target = enabled if both else disabled
            target[a][b] = round(stats.summarize(values_ab, discard_first=1).median, 4)
            target[b][a] = round(stats.summarize(values_ba, discard_first=1).median, 4)
        common = {"bidirectional": True, "access": "write", "method": "ce", "size_bytes": self.size}
        self._emit_matrix(enabled, "enabled", **common)
        self._emit_matrix(disabled, "disabled", **common)

    # -------------------------------------------------------------------------- staged

    def _staged(self) -> None:
        torch, p = self.torch, self.p
        chunk = min(p.staged_chunk_bytes, self.size)
        total = min(p.staged_bytes, self.size)
        chunks = max(1, total // chunk)
        total = chunks * chunk
        pinned = [torch.empty(chunk, dtype=torch.uint8, pin_memory=True) for _ in range(2)]
        values_matrix = _matrix(self.n)
        for step, (a, b) in enumerate(self.pairs):
            self.report(step / len(self.pairs), f"{self.label(a, b)} host-staged")
            s_out, s_in = self.stage_streams[a], self.stage_streams[b]
            src, dst = self.src[a], self.dst[b]

            def once(src: Any = src, dst: Any = dst, s_out: Any = s_out, s_in: Any = s_in) -> None:
                out_done = [torch.cuda.Event() for _ in range(2)]
                in_done = [torch.cuda.Event() for _ in range(2)]
                for c in range(chunks):
                    k = c % 2
                    piece = slice(c * chunk, (c + 1) * chunk)
                    if c >= 2:
                        s_out.wait_event(in_done[k])  # the pinned chunk is free again
                    with torch.cuda.stream(s_out):
                        pinned[k].copy_(src[piece], non_blocking=True)
                        out_done[k].record(s_out)
                    s_in.wait_event(out_done[k])
                    with torch.cuda.stream(s_in):
                        dst[piece].copy_(pinned[k], non_blocking=True)
                        in_done[k].record(s_in)

            def synchronize(a: int = a, b: int = b) -> None:
                torch.cuda.synchronize(self.devices[a])
                torch.cuda.synchronize(self.devices[b])

            once()
            synchronize()
            values = []
            for _ in range(p.staged_trials):
                synchronize()
                start = time.perf_counter()
                once()
                synchronize()
                values.append(stats.bandwidth_gbps(total, time.perf_counter() - start))
            values_matrix[a][b] = round(stats.summarize(values).median, 4)
        self._emit_matrix(values_matrix, "staged", bidirectional=False, size_bytes=total)

    # ------------------------------------------------------------------------- latency

    def _latency(self) -> None:
        torch, p = self.torch, self.p
        if not all(g.available for g in self.gates):
            self.emit.log("info", "P2P latency skipped: torch.cuda._sleep (gate) unavailable")
            return
        count = max(1, p.latency_bytes // 4)
        small_src = [torch.zeros(count, dtype=torch.int32, device=d) for d in self.devices]
        small_dst = [torch.zeros(count, dtype=torch.int32, device=d) for d in self.devices]
        enabled, disabled = _matrix(self.n), _matrix(self.n)
        for step, (a, b) in enumerate(self.pairs):
            self.report(step / len(self.pairs), f"{self.label(a, b)} latency")
            src, dst = small_src[a], small_dst[b]

            def copy(src: Any = src, dst: Any = dst) -> None:
                dst.copy_(src, non_blocking=True)

            stream = self.streams[a]
            with torch.cuda.stream(stream):
                copy()
            stream.synchronize()
            gate_ms = p.latency_copies * ENQUEUE_S * 1e3 + 0.5
            times = [
                cudautil.time_copies(torch, stream, copy, p.latency_copies, self.gates[a], gate_ms)
                for _ in range(p.latency_trials)
            ]
            value = round(stats.summarize(times).median / p.latency_copies * 1e6, 3)
            (enabled if self.can[a][b] else disabled)[a][b] = value
        common = {
            "kind": "latency",
            "unit": "us",
            "latency_side": "gpu",
            "method": "ce",
            "size_bytes": count * 4,
        }
        self._emit_matrix(enabled, "enabled", **common)
        self._emit_matrix(disabled, "disabled", **common)

    # -------------------------------------------------------------------------- verify

    def _verify(self) -> None:
        torch = self.torch
        size = min(self.p.verify_bytes, self.size)
        size -= size % cudautil.PATTERN_BLOCK
        if size <= 0:
            return
        for step, (a, b) in enumerate(self.pairs):
            self.report(step / len(self.pairs), f"{self.label(a, b)} verify")
            seed = 5000 + a * 131 + b
            src, dst = self.src[a][:size], self.dst[b][:size]
            cudautil.fill_pattern(torch, src, seed)
            dst.zero_()
            torch.cuda.synchronize(self.devices[a])
            torch.cuda.synchronize(self.devices[b])
            with torch.cuda.device(self.devices[a]):
                dst.copy_(src)
            torch.cuda.synchronize(self.devices[a])
            torch.cuda.synchronize(self.devices[b])
            wrong = cudautil.count_mismatches(torch, dst, seed)
            path = "peer access" if self.can[a][b] else "no peer access (driver-staged)"
            self.emit.result(
                "p2p_verification",
                {
                    "src": self.indices[a],
                    "dst": self.indices[b],
                    "ok": wrong == 0,
                    "detail": f"{size} bytes via {path}; "
                    + ("all bytes matched" if wrong == 0 else f"{wrong} bytes differ"),
                    "source": "probe",
                },
            )


def run(params: dict[str, Any], emit: Emitter) -> None:
    """Measure every ordered pair of ``params["gpus"]``."""
    torch = import_torch()
    count = require_cuda(torch)
    gpus: list[dict[str, Any]] = list(params.get("gpus") or [])
    if not gpus:
        gpus = [{"index": i, "ordinal": i} for i in range(count)]
    if len(gpus) < 2:
        raise ProbeUnavailable("the P2P probe needs at least 2 GPUs")
    _P2PProbe(torch, emit, gpus, p2p_params(params)).run()

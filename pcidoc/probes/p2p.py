"""Child probe ``p2p``: GPU<->GPU copy bandwidth, latency and correctness for every pair.

Methods and the reference tool each one matches (``research/probes.md`` §1.3, §2.3 (b)):

* capability: ``torch.cuda.can_device_access_peer`` (capability only: ACS/IOMMU can make an
  "enabled" path slower than staging through the host, so everything is measured);
* unidirectional, **enabled**: raw ``cudaMemcpyPeerAsync`` on a dedicated stream of the
  **source** GPU, queued behind a gate kernel, CUDA events on that stream — nvbandwidth's
  ``device_to_device_memcpy_write_ce``. Not ``copy_``: torch makes the two devices' streams
  wait on each other around every cross-device copy (:class:`cudautil.PeerCopier`). Copies per
  trial are sized from the pair's timed warm-up copy;
* peer access, as p2pBandwidthLatencyTest sets it: enabled for one pair at a time (both ways),
  every ``cudaDeviceEnablePeerAccess`` return code checked, switched off after. Only a
  direction whose enable succeeded (or was already on: 704) is labelled ``enabled``; a
  refused one (``cudaErrorTooManyPeers`` 711 past 8 peers without NVSwitch, or any other code)
  is measured as what it is, the driver's copy without peer access, labelled ``disabled``
  with ``conditions["peer_access"]["i->j"] = "refused: ..."``;
* allocator: raw peer copies need buffers that runtime peer access reaches, i.e. plain
  ``cudaMalloc`` segments. The parent removes ``PYTORCH_CUDA_ALLOC_CONF`` /
  ``PYTORCH_ALLOC_CONF`` from this child (noted in ``conditions["allocator"]``); if torch
  still uses expandable segments or ``cudaMallocAsync`` pools, torch's ``copy_`` (which grants
  its allocator's mappings) measures instead, and the conditions say so;
* unidirectional, **disabled**: the same copy with peer access switched off — the driver stages
  it through host memory (p2pBandwidthLatencyTest's "P2P=Disabled" matrix); for pairs that
  cannot access each other, or whose enable was refused, that is the only path;
* bidirectional: i→j measured on i's stream while j→i, with twice the copies, runs on j's
  stream (the interferer outlasts the measured direction, as nvbandwidth's bidirectional tests
  do); both released by one gate; per-direction bandwidth;
* host-staged baseline: GPU i → pinned chunk → GPU j, double buffered on two streams with
  event hand-off; the **steady state** is timed with events between the first and the last
  chunk's arrival, so fill and drain (which depend on the chunk count, i.e. the mode) stay out;
* latency: 16-byte copies behind a gate, time per copy, with peer access on and off
  (p2pBandwidthLatencyTest's latency matrices: the clearest sign of real P2P vs staging);
* verification (first, outside the timed loops): pattern copies of several sizes and offsets
  per ordered pair through the timed copy path, compared byte for byte; a copy that never
  completes names its pair as hanging.

Every pair's result is emitted as soon as it is measured (one matrix cell), so a probe killed
at its deadline leaves what it measured; the parent folds the cells (:mod:`merge`).
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Callable, Iterator
from typing import Any

from pcidoc.probes import cudautil, stats
from pcidoc.probes.child import (
    Emitter,
    ProbeHung,
    ProbeUnavailable,
    import_torch,
    require_cuda,
    torch_versions,
)
from pcidoc.probes.params import P2P, P2PParams

ENQUEUE_S = 30e-6

ENABLED = "enabled"
ALREADY_ENABLED = "enabled (already: cudaErrorPeerAccessAlreadyEnabled)"
BY_TORCH = "enabled by torch's copy_ (no runtime to ask)"
NOT_CAPABLE = "not capable (cudaDeviceCanAccessPeer: no)"
SWITCHED_OFF = "switched off (cudaDeviceDisablePeerAccess)"
"""Peer-access states of one direction, as the conditions' ``peer_access`` table shows them;
a refused enable reads ``refused: cudaErrorTooManyPeers (711)``."""


def p2p_params(params: dict[str, Any]) -> P2PParams:
    """Mode defaults with overrides (tests shrink sizes)."""
    base = P2P[params.get("mode", "quick")]
    overrides = dict(params.get("overrides") or {})
    return P2PParams(**{**base.__dict__, **overrides}) if overrides else base


def copies_for(per_copy_s: float, target_s: float, most: int) -> int:
    """Copies per trial so a trial lasts about ``target_s`` (1 .. ``most``)."""
    if per_copy_s <= 0 or not math.isfinite(per_copy_s):
        return most
    return max(1, min(most, math.ceil(target_s / per_copy_s)))


def steady_state_gbps(chunk_bytes: int, arrivals_s: list[float]) -> float | None:
    """Bandwidth of a pipeline from the times its chunks arrived: ``(k−1)`` chunks over the
    span from the first arrival to the last, so pipeline fill (before the first arrival) and
    the chunk count do not change the result. ``None`` with fewer than two arrivals."""
    if len(arrivals_s) < 2:
        return None
    span = arrivals_s[-1] - arrivals_s[0]
    if span <= 0:
        return None
    return stats.bandwidth_gbps(chunk_bytes * (len(arrivals_s) - 1), span)


def _matrix(n: int) -> list[list[float | None]]:
    return [[None] * n for _ in range(n)]


class _P2PProbe:
    def __init__(
        self,
        torch: Any,
        emit: Emitter,
        gpus: list[dict[str, Any]],
        p: P2PParams,
        set_aside: dict[str, str] | None = None,
    ) -> None:
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
        self.copier = cudautil.load_peer_copier(torch)
        self.allocator, raw_ok = cudautil.allocator_in_effect(torch)
        if set_aside:
            shown = ", ".join(f"{k}={v!r}" for k, v in sorted(set_aside.items()))
            self.allocator += f" ({shown} set aside for this probe)"
        if self.copier.available and not raw_ok:
            # Peer access enabled through the runtime does not reach this allocator's memory:
            # torch's copy_ (which grants its allocator's peer mappings) measures instead.
            self.copier = cudautil.PeerCopier(None, f"raw peer copies bypass {self.allocator}")
        self.access: dict[str, str] = {}
        """``"i->j"`` -> the peer-access state of the latest measurement of that direction."""
        self.ours: set[tuple[int, int]] = set()
        """Directions of the latest pair whose peer access this probe enabled (and so can
        switch off for the "peer access off" measurement)."""
        self.copies_by_pair: dict[str, int] = {}
        self.hung: str | None = None
        """The pair whose verified copy never completed (nothing more is done on the GPUs)."""

    def report(self, done: float, message: str) -> None:
        self.emit.progress((self.phase + done) / self.phases, message)

    def label(self, a: int, b: int) -> str:
        return f"GPU{self.indices[a]}->GPU{self.indices[b]}"

    def key(self, a: int, b: int) -> str:
        return f"{self.indices[a]}->{self.indices[b]}"

    # --------------------------------------------------------------------------------- run

    def run(self) -> None:
        torch, p = self.torch, self.p
        self.can = [
            [
                None
                if a == b
                else bool(torch.cuda.can_device_access_peer(self.ordinals[a], self.ordinals[b]))
                for b in range(self.n)
            ]
            for a in range(self.n)
        ]
        self.emit.info({"can_access_peer": self.can, "gpus": self.indices})
        self.emit.info(
            {"plan": {"pairs": [[self.indices[a], self.indices[b]] for a, b in self.pairs]}}
        )
        if not self.copier.available:
            self.emit.log("warning", f"P2P copies through torch copy_: {self.copier.reason}")
        self.emit.info({"allocator": self.allocator})
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
            # Bytes first (outside every timed loop): a pair that returns wrong data or hangs
            # is named before anything is timed on it.
            for phase, step in enumerate(
                (
                    self._verify,
                    self._unidirectional,
                    self._bidirectional,
                    self._staged,
                    self._latency,
                )
            ):
                self.phase = phase
                step()
        finally:
            if self.hung is None:  # a hung copy would block these: the parent cleans up
                del self.src, self.dst
                for device in self.devices:
                    with contextlib.suppress(Exception):
                        torch.cuda.synchronize(device)
                torch.cuda.empty_cache()
        self.emit.progress(1.0, "done")

    # ----------------------------------------------------------------------- peer access

    @contextlib.contextmanager
    def _peer(self, a: int, b: int) -> Iterator[None]:
        """Peer access between ``a`` and ``b``, both ways, while inside, as
        p2pBandwidthLatencyTest sets it: for this pair only (a device never holds more than
        one peer of ours, so the 8-peer limit of GPUs without NVSwitch is not reached by the
        probe itself), every return code checked, switched off again after. Each direction's
        state goes to :attr:`access`; a refused enable is measured as what it is."""
        enabled = []
        for x, y in ((a, b), (b, a)):
            self.access[self.key(x, y)] = state = self._enable(x, y)
            if state == ENABLED:
                enabled.append((x, y))
        self.ours = set(enabled)
        try:
            yield
        finally:
            current = int(self.torch.cuda.current_device())
            for x, y in enabled:
                code = self.copier.disable(self.ordinals[x], self.ordinals[y], current)
                if code not in (cudautil.CUDA_SUCCESS, cudautil.CUDA_ERROR_PEER_ACCESS_NOT_ENABLED):
                    self.emit.log(
                        "warning",
                        f"{self.label(x, y)}: disabling peer access failed: "
                        f"{cudautil.cuda_error_text(code)}",
                    )
                self.access[self.key(x, y)] = SWITCHED_OFF

    def _enable(self, a: int, b: int) -> str:
        """Ask for ``a``'s access to ``b``'s memory; the state, in words."""
        if not self.can[a][b]:
            return NOT_CAPABLE
        if not self.copier.available:
            return BY_TORCH
        current = int(self.torch.cuda.current_device())
        code = self.copier.enable(self.ordinals[a], self.ordinals[b], current)
        if code == cudautil.CUDA_SUCCESS:
            return ENABLED
        if code == cudautil.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED:
            return ALREADY_ENABLED
        state = f"refused: {cudautil.cuda_error_text(code)}"
        self.emit.log(
            "warning",
            f"{self.label(a, b)}: cudaDeviceEnablePeerAccess {state}; measured as the driver's "
            "copy without peer access",
        )
        return state

    def _on(self, a: int, b: int) -> bool:
        """True when the latest ``a -> b`` state carries peer-to-peer traffic."""
        return self.access.get(self.key(a, b)) in (ENABLED, ALREADY_ENABLED, BY_TORCH)

    def _mode(self, *directions: tuple[int, int]) -> str:
        return "enabled" if all(self._on(a, b) for a, b in directions) else "disabled"

    def _can_switch_off(self, a: int, b: int) -> bool:
        """Both directions were enabled by this probe (so switching them off is real)."""
        return {(a, b), (b, a)} <= self.ours

    # -------------------------------------------------------------------------- helpers

    def _conditions(self, *directions: tuple[int, int], **fields: Any) -> dict[str, Any]:
        return {
            "copy_method": self.copier.method,
            "allocator": self.allocator,
            "gated": all(g.available for g in self.gates),
            "peer_access": {self.key(a, b): self.access.get(self.key(a, b)) for a, b in directions},
            **fields,
        }

    def _emit_cell(
        self, a: int, b: int, value: float | None, mode: str, extra: dict[str, Any], **fields: Any
    ) -> None:
        if value is None:
            return
        values = _matrix(self.n)
        values[a][b] = value
        record = {
            "kind": fields.pop("kind", "bandwidth"),
            "p2p": mode,
            "unit": fields.pop("unit", "GB/s"),
            "gpus": self.indices,
            "values": values,
            "source": "probe",
            **fields,
        }
        self.emit.result("p2p", record, extra)

    def _copy(self, a: int, b: int, src: Any | None = None, dst: Any | None = None) -> Callable:
        """Enqueue one a -> b copy on the current stream (a's stream in every caller)."""
        src = self.src[a] if src is None else src
        dst = self.dst[b] if dst is None else dst
        if self.copier.available:
            stream = self.streams[a]
            return lambda: self.copier.copy(dst, self.ordinals[b], src, self.ordinals[a], stream)
        return lambda: dst.copy_(src, non_blocking=True)

    def _time_pair(self, a: int, b: int, copy: Callable, size: int) -> tuple[float, int]:
        """Median GB/s of ``trials`` gated trials, copies per trial sized from a warm-up."""
        torch, p = self.torch, self.p
        stream = self.streams[a]
        warm = cudautil.time_copies(torch, stream, copy, 1)  # also enables lazy state
        copies = copies_for(warm, p.trial_target_s, p.copies)
        gate_ms = copies * ENQUEUE_S * 1e3 + 0.5
        values = [
            stats.bandwidth_gbps(
                size * copies,
                cudautil.time_copies(torch, stream, copy, copies, self.gates[a], gate_ms),
            )
            for _ in range(p.trials)
        ]
        return round(stats.summarize(values, discard_first=1).median, 4), copies

    # ------------------------------------------------------------------ unidirectional

    def _unidirectional(self) -> None:
        common = {
            "bidirectional": False,
            "access": "write",
            "method": "ce",
            "size_bytes": self.size,
        }
        for step, (a, b) in enumerate(self.pairs):
            self.report(step / len(self.pairs), f"{self.label(a, b)} copy bandwidth")
            copy = self._copy(a, b)
            with self._peer(a, b):
                value, copies = self._time_pair(a, b, copy, self.size)
                self.copies_by_pair[self.key(a, b)] = copies
                extra = self._conditions(
                    (a, b), copies_by_pair={self.key(a, b): copies}, trials=self.p.trials
                )
                self._emit_cell(a, b, value, self._mode((a, b)), extra, **common)
            if self._can_switch_off(a, b):  # p2pBandwidthLatencyTest's "P2P=Disabled" cell
                staged, copies = self._time_pair(a, b, copy, self.size)
                extra = self._conditions(
                    (a, b),
                    copies_by_pair={self.key(a, b): copies},
                    disabled="peer access switched off (driver-staged copy)",
                )
                self._emit_cell(a, b, staged, "disabled", extra, **common)

    # ------------------------------------------------------------------- bidirectional

    def _bidir_trial(self, a: int, b: int, copies: int) -> float:
        """One trial: ``copies`` a->b measured, ``2 × copies`` b->a interfering."""
        torch = self.torch
        s_a, s_b = self.streams[a], self.streams[b]
        ab, ba = self._copy(a, b), self._copy(b, a)
        release = torch.cuda.Event()
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        with torch.cuda.stream(s_a):
            if self.gates[a].available:
                self.gates[a].hold(1.0 + 3 * copies * ENQUEUE_S * 1e3)
            release.record(s_a)
            start.record(s_a)
        s_b.wait_event(release)
        for k in range(2 * copies):
            if k < copies:
                with torch.cuda.stream(s_a):
                    ab()
            with torch.cuda.stream(s_b):
                ba()
        with torch.cuda.stream(s_a):
            end.record(s_a)
        end.synchronize()
        s_b.synchronize()
        return stats.bandwidth_gbps(self.size * copies, start.elapsed_time(end) / 1e3)

    def _bidirectional(self) -> None:
        p = self.p
        unordered = list(itertools.combinations(range(self.n), 2))
        common = {"bidirectional": True, "access": "write", "method": "ce", "size_bytes": self.size}
        for step, (x, y) in enumerate(unordered):
            self.report(step / len(unordered), f"GPU{self.indices[x]}<->GPU{self.indices[y]}")
            with self._peer(x, y):
                mode = self._mode((x, y), (y, x))
                for a, b in ((x, y), (y, x)):
                    copies = self.copies_by_pair.get(self.key(a, b), p.bidir_copies)
                    copies = min(copies, p.bidir_copies)
                    values = [self._bidir_trial(a, b, copies) for _ in range(p.bidir_trials)]
                    value = round(stats.summarize(values, discard_first=1).median, 4)
                    extra = self._conditions(
                        (a, b),
                        (b, a),
                        copies_by_pair={self.key(a, b): copies},
                        interferer="the other direction with twice the copies, same gate",
                    )
                    self._emit_cell(a, b, value, mode, extra, **common)

    # -------------------------------------------------------------------------- staged

    def _staged_pair(self, a: int, b: int, chunk: int, chunks: int) -> float | None:
        """GB/s of the host-staged pipeline a -> pinned -> b in its steady state (events)."""
        torch = self.torch
        s_out, s_in = self.stage_streams[a], self.stage_streams[b]
        src, dst, pinned = self.src[a], self.dst[b], self.pinned
        per_buffer = max(1, self.size // chunk)
        out_done = [torch.cuda.Event() for _ in range(2)]
        in_done = [torch.cuda.Event() for _ in range(2)]
        arrived = [torch.cuda.Event(enable_timing=True) for _ in range(chunks)]
        for c in range(chunks):
            k = c % 2
            offset = (c % per_buffer) * chunk
            piece = slice(offset, offset + chunk)
            if c >= 2:
                s_out.wait_event(in_done[k])  # the pinned chunk is free again
            with torch.cuda.stream(s_out):
                pinned[k].copy_(src[piece], non_blocking=True)
                out_done[k].record(s_out)
            s_in.wait_event(out_done[k])
            with torch.cuda.stream(s_in):
                dst[piece].copy_(pinned[k], non_blocking=True)
                in_done[k].record(s_in)
                arrived[c].record(s_in)
        arrived[-1].synchronize()
        first = arrived[0]
        times = [first.elapsed_time(e) / 1e3 for e in arrived]
        return steady_state_gbps(chunk, times)

    def _staged(self) -> None:
        torch, p = self.torch, self.p
        chunk = min(p.staged_chunk_bytes, self.size)
        chunks = max(3, p.staged_bytes // chunk)
        self.pinned = [torch.empty(chunk, dtype=torch.uint8, pin_memory=True) for _ in range(2)]
        try:
            for step, (a, b) in enumerate(self.pairs):
                self.report(step / len(self.pairs), f"{self.label(a, b)} host-staged")
                self._staged_pair(a, b, chunk, 2)  # warm-up
                values = [
                    v
                    for _ in range(p.staged_trials)
                    if (v := self._staged_pair(a, b, chunk, chunks)) is not None
                ]
                if not values:
                    continue
                extra = {
                    "chunk_bytes": chunk,
                    "chunks": chunks,
                    "trials": len(values),
                    "timer": "CUDA events at each chunk's arrival; steady state from the "
                    "first arrival to the last (fill and drain excluded)",
                }
                value = round(stats.summarize(values).median, 4)
                self._emit_cell(
                    a, b, value, "staged", extra, bidirectional=False, size_bytes=chunk * chunks
                )
        finally:
            del self.pinned

    # ------------------------------------------------------------------------- latency

    def _latency_pair(self, a: int, b: int, src: Any, dst: Any) -> float:
        torch, p = self.torch, self.p
        copy = self._copy(a, b, src, dst)
        stream = self.streams[a]
        cudautil.time_copies(torch, stream, copy, 1)
        gate_ms = p.latency_copies * ENQUEUE_S * 1e3 + 0.5
        times = [
            cudautil.time_copies(torch, stream, copy, p.latency_copies, self.gates[a], gate_ms)
            for _ in range(p.latency_trials)
        ]
        return round(stats.summarize(times).median / p.latency_copies * 1e6, 3)

    def _latency(self) -> None:
        torch, p = self.torch, self.p
        if not all(g.available for g in self.gates):
            self.emit.log("info", "P2P latency skipped: torch.cuda._sleep (gate) unavailable")
            return
        count = max(1, p.latency_bytes // 4)
        small_src = [torch.zeros(count, dtype=torch.int32, device=d) for d in self.devices]
        small_dst = [torch.zeros(count, dtype=torch.int32, device=d) for d in self.devices]
        common = {
            "kind": "latency",
            "unit": "us",
            "latency_side": "gpu",
            "method": "ce",
            "size_bytes": count * 4,
        }
        for step, (a, b) in enumerate(self.pairs):
            self.report(step / len(self.pairs), f"{self.label(a, b)} latency")
            src, dst = small_src[a], small_dst[b]
            with self._peer(a, b):
                value = self._latency_pair(a, b, src, dst)
                extra = self._conditions((a, b), copies=p.latency_copies, trials=p.latency_trials)
                self._emit_cell(a, b, value, self._mode((a, b)), extra, **common)
            if self._can_switch_off(a, b):
                value = self._latency_pair(a, b, src, dst)
                extra = self._conditions((a, b), copies=p.latency_copies, trials=p.latency_trials)
                self._emit_cell(a, b, value, "disabled", extra, **common)

    # -------------------------------------------------------------------------- verify

    def _verify(self) -> None:
        """Byte-verify peer copies of every ordered pair (both directions), before any timing:
        several sizes and offsets (unaligned, the buffer's end, past the first GiB when memory
        allows), through the same copy path the timed loops use. A copy that does not complete
        within ``verify_timeout_s`` is reported as hanging and ends the probe (the GPUs are
        not in a state to time anything)."""
        plan = verify_plan(self.p, self.size)
        if not plan:
            return
        far = self._far_buffers(max(size for size, _ in plan))
        for step, (a, b) in enumerate(self.pairs):
            self.report(step / len(self.pairs), f"{self.label(a, b)} verify")
            checker = _PairCheck(self, a, b)
            with self._peer(a, b):
                for size, offset in plan:
                    checker.copy(self.src[a], self.dst[b], size, offset)
                if far is not None:
                    offset = far[2]
                    checker.copy(far[0][a], far[1][b], plan[-1][0], offset)
                checker.emit()

    def _far_buffers(self, chunk: int) -> tuple[list[Any], list[Any], int] | None:
        """Source and destination buffers reaching past ``verify_far_offset_bytes`` on every
        GPU, when that fits comfortably in free memory (else None, said in the log)."""
        torch, offset = self.torch, self.p.verify_far_offset_bytes
        need = offset + chunk
        free = min(torch.cuda.mem_get_info(d)[0] for d in self.devices)
        if offset <= 0 or 2 * need > 0.5 * free:
            self.emit.log("info", f"P2P verification past {offset} bytes skipped (free memory)")
            return None
        src = [torch.empty(need, dtype=torch.uint8, device=d) for d in self.devices]
        dst = [torch.empty(need, dtype=torch.uint8, device=d) for d in self.devices]
        return src, dst, offset


def verify_plan(p: P2PParams, buffer_bytes: int) -> list[tuple[int, int]]:
    """``(size, offset)`` of each verified copy into the timing buffers: every size at offset
    0, ``verify_bytes`` also unaligned and at the buffer's end (sizes are whole pattern
    blocks)."""
    block = cudautil.PATTERN_BLOCK
    sizes = sorted({s - s % block for s in (*p.verify_sizes, p.verify_bytes) if s >= block})
    sizes = [s for s in sizes if s <= buffer_bytes]
    if not sizes:
        return []
    plan = [(size, 0) for size in sizes]
    main = p.verify_bytes - p.verify_bytes % block
    top = main if main in sizes else sizes[0]
    for offset in (4097, buffer_bytes - top):
        if offset > 0 and offset + top <= buffer_bytes and (top, offset) not in plan:
            plan.append((top, offset))
    return plan


class _PairCheck:
    """The verified copies of one ordered pair, folded into one result."""

    def __init__(self, probe: _P2PProbe, a: int, b: int) -> None:
        self.probe, self.a, self.b = probe, a, b
        self.copies = 0
        self.bytes = 0
        self.wrong = 0
        self.first_bad: str | None = None
        self.staged_ok: bool | None = None

    def copy(self, src_buf: Any, dst_buf: Any, size: int, offset: int) -> None:
        probe, torch = self.probe, self.probe.torch
        a, b = self.a, self.b
        seed = 5000 + a * 131 + b * 7 + size % 9973 + offset % 997
        src = src_buf[offset : offset + size]
        dst = dst_buf[offset : offset + size]
        cudautil.fill_pattern(torch, src, seed)
        dst.zero_()
        torch.cuda.synchronize(probe.devices[a])
        torch.cuda.synchronize(probe.devices[b])
        stream = probe.streams[a]
        with torch.cuda.stream(stream):
            probe._copy(a, b, src, dst)()
            done = torch.cuda.Event()
            done.record(stream)
        if not wait_event(done, probe.p.verify_timeout_s):
            self._hang(size, offset)
        torch.cuda.synchronize(probe.devices[b])
        wrong = cudautil.count_mismatches(torch, dst, seed)
        self.copies += 1
        self.bytes += size
        if wrong:
            self.wrong += wrong
            if self.first_bad is None:
                self.first_bad = f"{wrong} of {size} bytes differ at offset {offset}"
                self.staged_ok = self._staged_control(src, dst, seed)

    def _staged_control(self, src: Any, dst: Any, seed: int) -> bool | None:
        """The same bytes through host memory: right there means the peer path is at fault."""
        try:
            dst.zero_()
            dst.copy_(src.to("cpu").to(dst.device))
            self.probe.torch.cuda.synchronize(self.probe.devices[self.b])
            return cudautil.count_mismatches(self.probe.torch, dst, seed) == 0
        except Exception:  # a control that fails must not hide the finding
            return None

    def _hang(self, size: int, offset: int) -> None:
        probe = self.probe
        label = probe.label(self.a, self.b)
        detail = (
            f"a {size}-byte peer copy at offset {offset} did not complete within "
            f"{probe.p.verify_timeout_s:g} s (hanging)"
        )
        probe.emit.result("p2p_verification", self._record(False, detail))
        probe.hung = label
        raise ProbeHung(f"{label}: {detail}")

    def _record(self, ok: bool, detail: str) -> dict[str, Any]:
        return {
            "src": self.probe.indices[self.a],
            "dst": self.probe.indices[self.b],
            "ok": ok,
            "detail": detail,
            "source": "probe",
        }

    def emit(self) -> None:
        probe = self.probe
        state = probe.access.get(probe.key(self.a, self.b)) or NOT_CAPABLE
        path = "peer access" if probe._on(self.a, self.b) else f"no peer access ({state})"
        how = f"{self.copies} copies, {self.bytes} bytes via {path} ({probe.copier.method})"
        if not self.wrong:
            detail = f"{how}; all bytes matched"
        else:
            detail = f"{how}; {self.wrong} bytes differ (first: {self.first_bad})"
            if self.staged_ok:
                detail += "; the same bytes staged through host memory arrived intact"
        probe.emit.result("p2p_verification", self._record(not self.wrong, detail))


def wait_event(event: Any, timeout_s: float) -> bool:
    """True once ``event`` completed; False after ``timeout_s`` (polled, never blocking)."""
    import time

    deadline = time.monotonic() + timeout_s
    while not event.query():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def run(params: dict[str, Any], emit: Emitter) -> None:
    """Measure every ordered pair of ``params["gpus"]``."""
    torch = import_torch()
    count = require_cuda(torch)
    emit.info(torch_versions(torch))
    gpus: list[dict[str, Any]] = list(params.get("gpus") or [])
    if not gpus:
        gpus = [{"index": i, "ordinal": i} for i in range(count)]
    if len(gpus) < 2:
        raise ProbeUnavailable("the P2P probe needs at least 2 GPUs")
    set_aside = params.get("allocator_conf_set_aside") or {}
    _P2PProbe(torch, emit, gpus, p2p_params(params), dict(set_aside)).run()

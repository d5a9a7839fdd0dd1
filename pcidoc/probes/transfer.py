"""Child probe ``transfer``: host<->device copy bandwidth of each GPU.

Per GPU, in this order (``research/probes.md`` §2.3 (a), nvbandwidth's design):

1. bind every thread to the GPU's local CPUs (the capture's ``cpu_affinity``) **before**
   allocating, so pinned pages are first touched on the GPU's NUMA node (nvbandwidth calls
   ``nvmlDeviceSetCpuAffinity`` for the same reason);
2. allocate a pinned host buffer and a device buffer once; a dedicated stream; warm-up copies;
3. plateau, H2D then D2H: K trials of N back-to-back copies, CUDA events recorded on the issuing
   stream, first trial discarded; median/min/max/CoV; a noisy plateau (CoV > 3 %) is retried
   once with 2 N. The link's generation/width and P-state are sampled while this runs;
4. size sweep (N adapts so each trial lasts about the target time; small sizes are gated behind
   ``torch.cuda._sleep`` so enqueue cost stays outside the event window) and S95;
5. bidirectional: the measured direction on one stream, the other direction with twice the
   bytes on a second stream, both released by one gate (nvbandwidth semantics: the measured
   stream's bandwidth is reported);
6. pageable copies, timed by the host clock around the copies and a device synchronisation;
7. one verified copy each way (a pseudo-random pattern compared byte for byte);
8. with two or more NUMA nodes: pinned copies from memory placed on the GPU's own node and on a
   remote node, with the thread bound to that node's CPUs (``set_mempolicy(MPOL_BIND)`` plus
   first touch, then ``cudaHostRegister``), page placement checked with ``move_pages``.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

from pcidoc.model.cpulist import format_cpulist, parse_cpulist
from pcidoc.probes import cudautil, stats
from pcidoc.probes.child import Emitter, import_torch, require_cuda, torch_versions
from pcidoc.probes.linkstate import LinkReading, LinkSampler
from pcidoc.probes.params import TRANSFER, TransferParams

SMALL_COPY_S = 50e-6
"""Copies shorter than this are gated (the GPU would otherwise wait on the host's enqueue)."""
ENQUEUE_S = 20e-6
"""Generous host cost of enqueueing one copy, to size the gate."""


def _host_cache_release(torch: Any) -> Any:
    """torch's "empty the pinned host cache" call: ``torch.accelerator.empty_host_cache``
    (newer releases) or ``torch._C._host_emptyCache`` (private, torch 2.5 on); else ``None``."""
    public = getattr(getattr(torch, "accelerator", None), "empty_host_cache", None)
    if callable(public):
        return public
    private = getattr(getattr(torch, "_C", None), "_host_emptyCache", None)
    return private if callable(private) else None


def can_empty_host_cache(torch: Any) -> bool:
    """True when this torch can return its cached pinned host blocks (torch >= 2.5)."""
    return _host_cache_release(torch) is not None


def empty_host_cache(torch: Any) -> bool:
    """Return torch's cached pinned host blocks to the system (guarded)."""
    release = _host_cache_release(torch)
    if release is None:
        return False
    try:
        release()
    except Exception:
        return False
    return True


def transfer_params(params: dict[str, Any]) -> TransferParams:
    """Mode defaults with overrides from ``params`` (tests shrink sizes)."""
    base = TRANSFER[params.get("mode", "quick")]
    overrides = dict(params.get("overrides") or {})
    if not overrides:
        return base
    values = {**base.__dict__, **overrides}
    for key in ("sweep_sizes", "numa_directions"):
        values[key] = tuple(values[key])
    return TransferParams(**values)


class _GpuProbe:
    """State of the transfer probe on one GPU."""

    def __init__(
        self,
        torch: Any,
        emit: Emitter,
        gpu: dict[str, Any],
        p: TransferParams,
        numa_nodes: list[dict[str, Any]],
        do_numa: bool,
        report: Any,
    ) -> None:
        self.torch = torch
        self.emit = emit
        self.gpu = gpu
        self.p = p
        self.numa_nodes = numa_nodes
        self.do_numa = do_numa
        self.report = report
        self.index = int(gpu["index"])
        self.label = f"GPU{self.index}"
        self.device = torch.device("cuda", int(gpu["ordinal"]))
        self.numa_node = gpu.get("numa_node")
        self.link = LinkReading()
        self.context_parts: list[str] = []
        self.placement: str | None = None
        self.cpus: dict[str, str | None] = {}
        self.releases: list[Any] = []
        """Unpins the buffers this GPU registered itself (run in ``run``'s ``finally``)."""
        self.maybe_reused = False
        """A pinned buffer may be pages another GPU had (torch's cache, not emptiable)."""

    # ------------------------------------------------------------------------- helpers

    def _base(self, direction: str, memory: str, **fields: Any) -> dict[str, Any]:
        record: dict[str, Any] = {
            "gpu": self.index,
            "direction": direction,
            "memory": memory,
            "source": "probe",
        }
        record.update(fields)
        return record

    def _stats_fields(self, st: stats.TrialStats) -> dict[str, Any]:
        return {
            "bandwidth_gbps": round(st.median, 4),
            "min_gbps": round(st.min, 4),
            "max_gbps": round(st.max, 4),
            "cov": round(st.cov, 5),
            "trials": st.n,
        }

    def _link_fields(self) -> dict[str, Any]:
        return {
            "link_gen_under_load": self.link.gen,
            "link_width_under_load": self.link.width,
            "pstate_under_load": self.link.pstate,
        }

    def _trials(
        self,
        stream: Any,
        copy: Any,
        size: int,
        copies: int,
        trials: int,
        gate: cudautil.Gate | None = None,
        gate_ms: float = 0.0,
    ) -> list[float]:
        torch = self.torch
        return [
            stats.bandwidth_gbps(
                size * copies, cudautil.time_copies(torch, stream, copy, copies, gate, gate_ms)
            )
            for _ in range(trials)
        ]

    def _pinned(self, size: int) -> Any:
        """A pinned host buffer first touched by this GPU's (bound) thread.

        Torch's pinned allocator caches freed blocks and hands them out again; torch >= 2.5
        can empty that cache between GPUs (:func:`empty_host_cache`), older torch cannot, and
        the next GPU would get the previous GPU's pages, on that GPU's NUMA node. There the
        buffer is a plain tensor, filled here (first touch) and pinned with
        ``cudaHostRegister``; it is unpinned when this GPU is done.
        """
        torch = self.torch
        if can_empty_host_cache(torch):
            return torch.empty(size, dtype=torch.uint8, pin_memory=True)
        buffer = torch.empty(size, dtype=torch.uint8)
        buffer.fill_(0)  # first touch, from the CPUs this thread is bound to
        try:
            cudart = torch.cuda.cudart()
            code = int(cudart.cudaHostRegister(buffer.data_ptr(), size, 0))
        except Exception as exc:
            code = -1
            self.emit.log("warning", f"{self.label}: cudaHostRegister unavailable ({exc})")
        if code != 0:
            self.maybe_reused = True
            return torch.empty(size, dtype=torch.uint8, pin_memory=True)
        # The closure keeps the tensor alive until it is unpinned.
        self.releases.append(lambda b=buffer: cudart.cudaHostUnregister(b.data_ptr()))
        return buffer

    def _release(self) -> None:
        while self.releases:
            with contextlib.suppress(Exception):
                self.releases.pop()()

    # ------------------------------------------------------------------------------ run

    def run(self) -> None:
        """Measure this GPU; its buffers are released (and the caches emptied) afterwards."""
        try:
            self._measure()
        finally:
            with contextlib.suppress(Exception):
                self.torch.cuda.synchronize(self.device)
            self._release()
            with contextlib.suppress(Exception):
                self.torch.cuda.empty_cache()
            # Pinned blocks are cached by torch's host allocator; the next GPU may sit on
            # another NUMA node and must get freshly first-touched memory, not these pages.
            empty_host_cache(self.torch)
        self.report(1.0, "done")

    def _measure(self) -> None:
        torch, p = self.torch, self.p
        torch.cuda.set_device(self.device)
        cpus = self._bind_cpus()
        plateau, big, host, device_buffer = self._buffers()
        stream = torch.cuda.Stream(device=self.device)
        gate = cudautil.calibrate_gate(torch, stream)

        def h2d(size: int) -> Any:
            return lambda: device_buffer[:size].copy_(host[:size], non_blocking=True)

        def d2h(size: int) -> Any:
            return lambda: host[:size].copy_(device_buffer[:size], non_blocking=True)

        copies_by_dir = {"h2d": h2d, "d2h": d2h}
        # Warm-up: plateau size and the smallest size, each direction.
        with torch.cuda.stream(stream):
            for make in copies_by_dir.values():
                for _ in range(p.warmup_copies):
                    make(plateau)()
                make(min(p.sweep_sizes))()
        stream.synchronize()
        self.report(0.05, "pinned plateau")
        plateaus = self._plateaus(stream, copies_by_dir, plateau)
        self.report(0.35, "size sweep")
        sweeps = self._sweeps(stream, copies_by_dir, plateaus, plateau, big, gate)
        if not gate.available:
            self.context_parts.append("sweep not gated (torch.cuda._sleep unavailable)")
        self.report(0.45, "verify")
        verified = self._verify(host, device_buffer, big)
        if verified:
            self.context_parts.append(f"{verified} bytes verified each way")
        self.report(0.5, "bidirectional")
        context = "; ".join(self.context_parts)
        self._emit_pinned(plateaus, sweeps, plateau, context, gate)
        self._bidirectional(host, device_buffer, stream, gate, plateau, context)
        self.report(0.7, "pageable")
        self._pageable(device_buffer, context)
        if self.do_numa:
            self.report(0.85, "local vs remote NUMA node")
            self._numa(device_buffer, stream, plateau)
            if cpus:
                cudautil.set_process_affinity(cpus)

    def _bind_cpus(self) -> list[int] | None:
        """Threads onto the GPU's local CPUs (what the kernel allowed is recorded)."""
        cpus = parse_cpulist(self.gpu.get("cpus"))
        applied = cudautil.set_process_affinity(cpus) if cpus else None
        self.cpus = {
            "requested_cpus": format_cpulist(cpus) if cpus else None,
            "allowed_cpus": format_cpulist(applied) if applied else None,
        }
        if applied:
            self.placement = "local"
            narrowed = (
                f"; the container allowed only these of {format_cpulist(cpus)}"
                if cpus and set(applied) != set(cpus)
                else ""
            )
            self.context_parts.append(
                f"threads on CPUs {format_cpulist(applied)} (GPU-local{narrowed})"
            )
        else:
            self.context_parts.append("CPU affinity not set (GPU-local CPUs unknown)")
        return cpus

    def _buffers(self) -> tuple[int, int, Any, Any]:
        """``(plateau, big, host, device)``: sizes fitted to free memory, the pinned host
        buffer (where its pages landed is recorded) and the device buffer."""
        torch, p = self.torch, self.p
        free, _total = torch.cuda.mem_get_info(self.device)
        plateau = p.plateau_bytes
        big = max([plateau, *[s for s in p.sweep_sizes]])
        if big + plateau > 0.6 * free:
            big = cudautil.round_down_pow2(int(0.3 * free))
            plateau = min(plateau, big)
            self.emit.log("warning", f"{self.label}: buffers reduced to {big} bytes (free memory)")
        host = self._pinned(big)
        device_buffer = torch.empty(big, dtype=torch.uint8, device=self.device)
        nodes = cudautil.page_nodes(host.data_ptr(), big)
        share = None
        if self.numa_node is not None:
            share = cudautil.node_share(nodes, int(self.numa_node))
            if share is not None:
                self.context_parts.append(
                    f"pinned host memory {share:.0%} on node {self.numa_node} (sampled pages)"
                )
                if share < 0.5:
                    self.placement = None
        if self.maybe_reused and share is None:
            # Without page sampling, "local" would rest on the thread binding alone, and the
            # pages may be another GPU's from torch's cache.
            self.placement = None
            self.context_parts.append(
                "pinned buffer from torch's cache (this torch cannot empty it): placement unknown"
            )
        return plateau, big, host, device_buffer

    def _plateaus(
        self, stream: Any, copies_by_dir: dict[str, Any], plateau: int
    ) -> dict[str, stats.TrialStats]:
        """Each direction at the plateau size, with the link sampled while it runs."""
        p = self.p
        sampler = LinkSampler(self.gpu.get("bus_id"), self.index).start()
        plateaus: dict[str, stats.TrialStats] = {}
        try:
            for direction, make in copies_by_dir.items():
                values = self._trials(
                    stream, make(plateau), plateau, p.plateau_copies, p.plateau_trials
                )
                st = stats.summarize(values, discard_first=1)
                if st.noisy:
                    retry = stats.summarize(
                        self._trials(
                            stream, make(plateau), plateau, 2 * p.plateau_copies, p.plateau_trials
                        ),
                        discard_first=1,
                    )
                    self.emit.log(
                        "info",
                        f"{self.label} {direction}: CoV {st.cov:.1%}, retried with "
                        f"{2 * p.plateau_copies} copies per trial (CoV {retry.cov:.1%})",
                    )
                    if retry.cov < st.cov:
                        st = retry
                plateaus[direction] = st
        finally:
            self.link = sampler.stop()
        return plateaus

    def _sweeps(
        self,
        stream: Any,
        copies_by_dir: dict[str, Any],
        plateaus: dict[str, stats.TrialStats],
        plateau: int,
        big: int,
        gate: cudautil.Gate,
    ) -> dict[str, list[dict[str, Any]]]:
        """The size sweep of each direction (small copies gated)."""
        p = self.p
        sweeps: dict[str, list[dict[str, Any]]] = {"h2d": [], "d2h": []}
        for direction, make in copies_by_dir.items():
            estimate = plateaus[direction].median
            for size in sorted(s for s in p.sweep_sizes if s <= big):
                if size == plateau:
                    sweeps[direction].append(
                        {"size_bytes": size, "bandwidth_gbps": round(estimate, 4)}
                    )
                    continue
                per_copy = size / (estimate * 1e9) + 5e-6
                copies = max(3, min(p.sweep_max_copies, math.ceil(p.sweep_target_s / per_copy)))
                gated = gate.available and per_copy < SMALL_COPY_S
                gate_ms = (copies * ENQUEUE_S * 1e3 + 0.5) if gated else 0.0
                values = self._trials(
                    stream,
                    make(size),
                    size,
                    copies,
                    p.sweep_trials + 1,
                    gate if gated else None,
                    gate_ms,
                )
                st = stats.summarize(values, discard_first=1)
                sweeps[direction].append(
                    {"size_bytes": size, "bandwidth_gbps": round(st.median, 4)}
                )
        return sweeps

    def _emit_pinned(
        self,
        plateaus: dict[str, stats.TrialStats],
        sweeps: dict[str, list[dict[str, Any]]],
        plateau: int,
        context: str,
        gate: cudautil.Gate,
    ) -> None:
        """One pinned-memory result per direction (plateau, sweep, link under load)."""
        p = self.p
        for direction in ("h2d", "d2h"):
            points = [(pt["size_bytes"], pt["bandwidth_gbps"]) for pt in sweeps[direction]]
            s95 = stats.saturation_size(points, plateaus[direction].median)
            record = self._base(
                direction,
                "pinned",
                placement=self.placement,
                host_numa_node=self.numa_node if self.placement == "local" else None,
                size_bytes=plateau,
                method="cuda-events",
                sweep=sweeps[direction],
                saturation_size_bytes=s95,
                context=context,
                **self._stats_fields(plateaus[direction]),
                **self._link_fields(),
            )
            self.emit.result(
                "transfer",
                record,
                {
                    "step": "plateau",
                    "link_source": self.link.source,
                    **({"link_nvml": self.link.nvml_missing} if self.link.nvml_missing else {}),
                    "link_samples": self.link.samples,
                    "gated_sweep": gate.available,
                    "copies_per_trial": p.plateau_copies,
                    "trials_including_discarded": p.plateau_trials,
                    "warmup_copies": p.warmup_copies,
                    "sweep_target_s": p.sweep_target_s,
                    "timer": "CUDA events on the copy stream",
                    **self.cpus,
                },
            )

    # ------------------------------------------------------------------- bidirectional

    def _bidirectional(
        self,
        host: Any,
        device_buffer: Any,
        stream: Any,
        gate: cudautil.Gate,
        size: int,
        context: str,
    ) -> None:
        torch, p = self.torch, self.p
        other_host = self._pinned(size)
        other_device = torch.empty(size, dtype=torch.uint8, device=self.device)
        second = torch.cuda.Stream(device=self.device)
        measured_copy = {
            "h2d": lambda: device_buffer[:size].copy_(host[:size], non_blocking=True),
            "d2h": lambda: host[:size].copy_(device_buffer[:size], non_blocking=True),
        }
        interferer_copy = {  # the opposite direction, on its own buffers
            "h2d": lambda: other_host.copy_(other_device, non_blocking=True),
            "d2h": lambda: other_device.copy_(other_host, non_blocking=True),
        }
        results: dict[str, float] = {}
        for direction in ("h2d", "d2h"):
            values, others = [], []
            for _ in range(p.bidir_trials):
                release = torch.cuda.Event()
                start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                start2, end2 = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                with torch.cuda.stream(stream):
                    if gate.available:
                        gate.hold(1.0 + 3 * p.bidir_copies * ENQUEUE_S * 1e3)
                    release.record(stream)
                second.wait_event(release)
                with torch.cuda.stream(stream):
                    start.record(stream)
                with torch.cuda.stream(second):
                    start2.record(second)
                for k in range(2 * p.bidir_copies):
                    if k < p.bidir_copies:
                        with torch.cuda.stream(stream):
                            measured_copy[direction]()
                    with torch.cuda.stream(second):
                        interferer_copy[direction]()
                with torch.cuda.stream(stream):
                    end.record(stream)
                with torch.cuda.stream(second):
                    end2.record(second)
                end.synchronize()
                end2.synchronize()
                values.append(
                    stats.bandwidth_gbps(size * p.bidir_copies, start.elapsed_time(end) / 1e3)
                )
                others.append(
                    stats.bandwidth_gbps(2 * size * p.bidir_copies, start2.elapsed_time(end2) / 1e3)
                )
            st = stats.summarize(values, discard_first=1)
            results[direction] = st.median
            record = self._base(
                direction,
                "pinned",
                bidirectional=True,
                placement=self.placement,
                host_numa_node=self.numa_node if self.placement == "local" else None,
                size_bytes=size,
                method="cuda-events",
                context=context,
                **self._stats_fields(st),
                **self._link_fields(),
            )
            extra: dict[str, Any] = {
                "step": "bidirectional",
                "interferer_gbps": round(stats.summarize(others, discard_first=1).median, 4),
                "interferer_bytes_factor": 2,
                "copies_per_trial": p.bidir_copies,
                "trials_including_discarded": p.bidir_trials,
                "gated": gate.available,
                **self.cpus,
            }
            if direction == "d2h":
                extra["sum_of_directions_gbps"] = round(results["h2d"] + results["d2h"], 4)
            self.emit.result("transfer", record, extra)

    # ------------------------------------------------------------------------ pageable

    def _pageable(self, device_buffer: Any, context: str) -> None:
        torch, p = self.torch, self.p
        size = min(p.pageable_bytes, device_buffer.numel())
        pageable = torch.empty(size, dtype=torch.uint8)
        pageable.fill_(1)  # first touch (local node: the thread is bound)
        target = device_buffer[:size]
        copies = {
            "h2d": lambda: target.copy_(pageable),
            "d2h": lambda: pageable.copy_(target),
        }
        for direction, copy in copies.items():
            copy()
            values = [
                stats.bandwidth_gbps(
                    size * p.pageable_copies, cudautil.time_host(torch, copy, p.pageable_copies)
                )
                for _ in range(p.pageable_trials)
            ]
            st = stats.summarize(values)
            self.emit.result(
                "transfer",
                self._base(
                    direction,
                    "pageable",
                    placement=self.placement,
                    host_numa_node=self.numa_node if self.placement == "local" else None,
                    size_bytes=size,
                    method="host-timer",
                    context=context,
                    **self._stats_fields(st),
                ),
                {
                    "step": "pageable",
                    "copies_per_trial": p.pageable_copies,
                    "timer": "host perf_counter around the copies and a device sync",
                    **self.cpus,
                },
            )

    # -------------------------------------------------------------------------- verify

    def _verify(self, host: Any, device_buffer: Any, big: int) -> int:
        """Copy a pattern each way and compare; returns the bytes verified (0: not verified)."""
        torch = self.torch
        size = min(self.p.verify_bytes, big)
        size -= size % cudautil.PATTERN_BLOCK
        if size <= 0:
            return 0
        seed = 1000 + 2 * self.index
        cudautil.fill_pattern(torch, host[:size], seed)
        device_buffer[:size].zero_()
        torch.cuda.synchronize(self.device)
        device_buffer[:size].copy_(host[:size])
        torch.cuda.synchronize(self.device)
        wrong_h2d = cudautil.count_mismatches(torch, device_buffer[:size], seed)
        cudautil.fill_pattern(torch, device_buffer[:size], seed + 1)
        host[:size].zero_()
        torch.cuda.synchronize(self.device)
        host[:size].copy_(device_buffer[:size])
        torch.cuda.synchronize(self.device)
        wrong_d2h = cudautil.count_mismatches(torch, host[:size], seed + 1)
        for direction, wrong in (("H2D", wrong_h2d), ("D2H", wrong_d2h)):
            if wrong:
                self.emit.error(
                    "error",
                    f"{self.label}: a pinned {direction} copy of {size} bytes returned wrong data "
                    f"({wrong} bytes differ) — a hardware or driver fault",
                )
        if wrong_h2d or wrong_d2h:
            return 0
        self.emit.info({f"verified_gpu{self.index}": size})
        return size

    # ---------------------------------------------------------------------------- NUMA

    def _remote_node(self) -> dict[str, Any] | None:
        local = self.numa_node
        others = [n for n in self.numa_nodes if n.get("id") != local and n.get("cpus")]
        if local is None or not others:
            return None
        mine = next((n for n in self.numa_nodes if n.get("id") == local), None)
        distances = (mine or {}).get("distances") or []

        def distance(node: dict[str, Any]) -> int:
            nid = int(node["id"])
            return distances[nid] if nid < len(distances) else 0

        return max(others, key=lambda n: (distance(n), -int(n["id"])))

    def _numa(self, device_buffer: Any, stream: Any, size: int) -> None:
        torch, p = self.torch, self.p
        local = next((n for n in self.numa_nodes if n.get("id") == self.numa_node), None)
        remote = self._remote_node()
        if local is None or remote is None or not local.get("cpus"):
            self.emit.log("info", f"{self.label}: local vs remote NUMA skipped (node unknown)")
            return
        cudart = torch.cuda.cudart()
        for placement, node in (("local", local), ("remote", remote)):
            node_id = int(node["id"])
            cpus = parse_cpulist(node["cpus"])
            applied = cudautil.set_process_affinity(cpus) if cpus else None
            allowed = format_cpulist(applied) if applied else None
            bound = cudautil.set_memory_policy(node_id)
            buffer = torch.empty(size, dtype=torch.uint8)
            buffer.fill_(1)  # first touch: under the policy, from a CPU of the node
            cudautil.set_memory_policy(None)
            share = cudautil.node_share(cudautil.page_nodes(buffer.data_ptr(), size), node_id)
            code = int(cudart.cudaHostRegister(buffer.data_ptr(), size, 0))
            if code != 0:
                self.emit.log(
                    "warning",
                    f"{self.label}: cudaHostRegister failed ({code}); NUMA placement test skipped",
                )
                return
            try:
                target = device_buffer[:size]
                copies = {
                    "h2d": lambda t=target, b=buffer: t.copy_(b, non_blocking=True),
                    "d2h": lambda t=target, b=buffer: b.copy_(t, non_blocking=True),
                }
                for direction in p.numa_directions:
                    copy = copies[direction]
                    with torch.cuda.stream(stream):
                        copy()
                    stream.synchronize()
                    values = self._trials(stream, copy, size, p.numa_copies, p.numa_trials)
                    st = stats.summarize(values, discard_first=1)
                    parts = [
                        f"threads on node {node_id} CPUs {allowed}"
                        if applied
                        else "thread binding failed",
                        f"memory bound to node {node_id}" if bound else "first touch only",
                    ]
                    if share is not None:
                        parts.append(f"{share:.0%} of sampled pages on node {node_id}")
                    parts.append("pinned with cudaHostRegister")
                    self.emit.result(
                        "transfer",
                        self._base(
                            direction,
                            "pinned",
                            placement=placement,
                            host_numa_node=node_id,
                            size_bytes=size,
                            method="cuda-events",
                            context="; ".join(parts),
                            **self._stats_fields(st),
                        ),
                        {
                            # Local and remote of this step share allocator, registration and
                            # copy count: transfer.remote-numa compares these two only.
                            "step": "numa",
                            "gpu_numa_node": self.numa_node,
                            "page_share_on_node": share,
                            "copies_per_trial": p.numa_copies,
                            "trials_including_discarded": p.numa_trials,
                            "requested_cpus": node["cpus"],
                            "allowed_cpus": allowed,
                        },
                    )
            finally:
                with contextlib.suppress(Exception):
                    stream.synchronize()
                    cudart.cudaHostUnregister(buffer.data_ptr())


def run(params: dict[str, Any], emit: Emitter) -> None:
    """Measure every GPU in ``params["gpus"]`` in turn (one child for all of them)."""
    torch = import_torch()
    require_cuda(torch)
    emit.info(torch_versions(torch))
    torch.set_num_threads(1)  # fills run on the bound thread: first touch lands where intended
    p = transfer_params(params)
    gpus: list[dict[str, Any]] = list(params.get("gpus") or [])
    if not gpus:
        gpus = [{"index": i, "ordinal": i} for i in range(torch.cuda.device_count())]
    numa_nodes: list[dict[str, Any]] = list(params.get("numa_nodes") or [])
    numa_gpus = set(params.get("numa_gpus") or [])
    emit.info({"plan": {"gpus": [int(g["index"]) for g in gpus]}})
    for position, gpu in enumerate(gpus):

        def report(
            fraction: float,
            message: str,
            position: int = position,
            label: str = f"GPU{gpu['index']}",
        ) -> None:
            emit.progress((position + fraction) / len(gpus), f"{label} {message}")

        probe = _GpuProbe(
            torch,
            emit,
            gpu,
            p,
            numa_nodes,
            len(numa_nodes) >= 2 and int(gpu["index"]) in numa_gpus,
            report,
        )
        try:
            probe.run()
        except Exception as exc:
            emit.error("error", f"GPU{gpu['index']}: {type(exc).__name__}: {exc}")
            with contextlib.suppress(Exception):
                torch.cuda.empty_cache()

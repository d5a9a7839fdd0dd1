"""A probe runner that replays JSON-lines streams with controllable timing (tests, TUI, demos).

**Everything in this module is SYNTHETIC.** The streams below were written by hand (or are
generated from a formula) to exercise the probe protocol, the session and the presenters. Their
numbers are plausible for a PCIe Gen4 machine but were **not measured on any hardware**; every
measurement they carry has ``source = "synthetic:fake-runner"`` (``method = "synthetic"`` for
transfers) so that nothing downstream can mistake them for measurements.

:class:`FakeProbeRunner` feeds each line through the same parser the subprocess runner uses
(:class:`pcidoc.probes.runner.OutcomeBuilder`), honours the probe's deadline in *virtual* time
(a stream whose delays add up past the deadline times out without waiting for it), and honours
the ``cancel`` event while it waits between lines.
"""

from __future__ import annotations

import json
import math
import threading
import time
from argparse import Namespace
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pcidoc.probes import stats
from pcidoc.probes.runner import OutcomeBuilder, ProbeOutcome, ProbeSpec, ProgressCallback

SYNTHETIC_SOURCE = "synthetic:fake-runner"

Line = tuple[float, "str | dict[str, Any]"]
"""``(delay before the line in seconds, the line)``; a dict is encoded as JSON, a string is sent
as is (so garbage can be replayed). A delay of ``math.inf`` is a hang."""

Stream = Sequence[Line]

# ----------------------------------------------------------------- literal streams (synthetic)

GARBAGE_STREAM: list[Line] = [
    (0.0, "NCCL INFO Bootstrap : Using lo:127.0.0.1<0>"),
    (0.0, {"type": "progress", "probe": "transfer", "fraction": 0.5, "message": "GPU0"}),
    (0.0, "{half a json"),
    (
        0.0,
        {
            "type": "result",
            "kind": "transfer",
            "measurement": {
                "gpu": 0,
                "direction": "h2d",
                "memory": "pinned",
                "bandwidth_gbps": 24.0,
                "method": "synthetic",
                "source": SYNTHETIC_SOURCE,
            },
        },
    ),
]
"""A stream with library noise around one (synthetic) result."""

HANG_STREAM: list[Line] = [
    (0.0, {"type": "progress", "probe": "hang", "fraction": 0.1, "message": "initialising"}),
    (math.inf, ""),
]
"""A probe that never finishes (times out, or is cancelled)."""

NO_TORCH_ENV_STREAM: list[Line] = [
    (
        0.0,
        {
            "type": "error",
            "kind": "unavailable",
            "message": "torch is not installed: pip install 'pcidoc[probes]'",
        },
    ),
]
"""What the env probe says on a machine without torch."""

CPU_ONLY_ENV_STREAM: list[Line] = [
    (
        0.0,
        {
            "type": "info",
            "data": {
                "torch_version": "synthetic+cpu",
                "cuda_build": None,
                "cuda_available": False,
                "device_count": 0,
                "devices": [],
                "nccl_available": False,
                "gloo_available": True,
                "no_cuda_reason": "no CUDA device visible to torch (torch synthetic+cpu is a "
                "CPU-only build)",
            },
        },
    ),
]
"""What the env probe says with a CPU-only torch."""


# ------------------------------------------------------------- generated streams (synthetic)

_H2D_GBPS = 24.6
_D2H_GBPS = 25.2
_LATENCY_S = 3e-6


def _progress(probe: str, fraction: float, message: str) -> dict[str, Any]:
    return {"type": "progress", "probe": probe, "fraction": fraction, "message": message}


def _result(kind: str, measurement: dict[str, Any], extra: dict[str, Any] | None = None) -> dict:
    message: dict[str, Any] = {"type": "result", "kind": kind, "measurement": measurement}
    if extra:
        message["extra"] = {**extra, "synthetic": True}
    else:
        message["extra"] = {"synthetic": True}
    return message


def _sweep(bandwidth: float, sizes: Sequence[int]) -> list[dict[str, Any]]:
    # t(S) = t0 + S/B, the latency-bandwidth model of research/probes.md §2.3.
    return [
        {
            "size_bytes": s,
            "bandwidth_gbps": round(s / (_LATENCY_S + s / (bandwidth * 1e9)) / 1e9, 3),
        }
        for s in sizes
    ]


def synthetic_env(
    gpu_count: int = 8, devices: Sequence[Mapping[str, Any]] | None = None, **info: Any
) -> list[Line]:
    """An env stream with ``gpu_count`` synthetic CUDA devices (or ``devices``: ordinal, uuid,
    bus_id of each, in CUDA's order), plus ``info`` (``cuda_visible_devices``...)."""
    listed = [
        {
            "ordinal": i,
            "name": "Synthetic GPU",
            "bus_id": None,
            "uuid": None,
            "total_memory_bytes": 80 * 2**30,
        }
        for i in range(gpu_count)
    ]
    if devices is not None:
        listed = [{**listed[0], **d} if listed else dict(d) for d in devices]
        gpu_count = len(listed)
    return [
        (
            0.0,
            {
                "type": "info",
                "data": {
                    "python": "/synthetic/bin/python3",
                    "python_version": "3.11.0",
                    "torch_version": "synthetic",
                    "cuda_build": "synthetic",
                    "cuda_available": gpu_count > 0,
                    "device_count": gpu_count,
                    "devices": listed,
                    "nccl_available": True,
                    "gloo_available": True,
                    "cuda_sleep": True,
                    "synthetic": True,
                    **info,
                },
            },
        )
    ]


def _transfer_stream(spec: ProbeSpec, step_s: float) -> list[Line]:
    gpus = spec.params.get("gpus") or [{"index": 0}]
    sizes = [4096 * 4**i for i in range(10)]
    lines: list[Line] = []
    for pos, gpu in enumerate(gpus):
        index = int(gpu["index"])
        lines.append((step_s, _progress("transfer", pos / len(gpus), f"GPU{index} pinned plateau")))
        for direction, bw in (("h2d", _H2D_GBPS), ("d2h", _D2H_GBPS)):
            sweep = _sweep(bw, sizes)
            lines.append(
                (
                    step_s,
                    _result(
                        "transfer",
                        {
                            "gpu": index,
                            "direction": direction,
                            "memory": "pinned",
                            "placement": "local",
                            "host_numa_node": gpu.get("numa_node"),
                            "size_bytes": 256 * 2**20,
                            "bandwidth_gbps": bw,
                            "min_gbps": bw - 0.1,
                            "max_gbps": bw + 0.1,
                            "cov": 0.002,
                            "trials": 5,
                            "method": "synthetic",
                            # No link or P-state reading: a replayed stream has none to give,
                            # and inventing one would make pcie.link-speed judge a fiction.
                            "link_gen_under_load": None,
                            "link_width_under_load": None,
                            "pstate_under_load": None,
                            "sweep": sweep,
                            "saturation_size_bytes": stats.saturation_size(
                                [(p["size_bytes"], p["bandwidth_gbps"]) for p in sweep], bw
                            ),
                            "context": "synthetic",
                            "source": SYNTHETIC_SOURCE,
                        },
                    ),
                )
            )
        for direction, bw in (("h2d", 19.0), ("d2h", 19.4)):
            lines.append(
                (
                    step_s,
                    _result(
                        "transfer",
                        {
                            "gpu": index,
                            "direction": direction,
                            "memory": "pinned",
                            "bidirectional": True,
                            "placement": "local",
                            "size_bytes": 256 * 2**20,
                            "bandwidth_gbps": bw,
                            "trials": 3,
                            "method": "synthetic",
                            "source": SYNTHETIC_SOURCE,
                        },
                    ),
                )
            )
        for direction, bw in (("h2d", 9.8), ("d2h", 7.1)):
            lines.append(
                (
                    step_s,
                    _result(
                        "transfer",
                        {
                            "gpu": index,
                            "direction": direction,
                            "memory": "pageable",
                            "placement": "local",
                            "size_bytes": 64 * 2**20,
                            "bandwidth_gbps": bw,
                            "trials": 3,
                            "method": "synthetic",
                            "source": SYNTHETIC_SOURCE,
                        },
                    ),
                )
            )
        if index in set(spec.params.get("numa_gpus") or []):
            node = gpu.get("numa_node") or 0
            for placement, bw in (("local", _H2D_GBPS), ("remote", 17.5)):
                lines.append(
                    (
                        step_s,
                        _result(
                            "transfer",
                            {
                                "gpu": index,
                                "direction": "h2d",
                                "memory": "pinned",
                                "placement": placement,
                                "host_numa_node": node
                                if placement == "local"
                                else 1 - min(node, 1),
                                "size_bytes": 256 * 2**20,
                                "bandwidth_gbps": bw,
                                "trials": 3,
                                "method": "synthetic",
                                "source": SYNTHETIC_SOURCE,
                            },
                        ),
                    )
                )
    lines.append((step_s, _progress("transfer", 1.0, "done")))
    return lines


def _p2p_stream(spec: ProbeSpec, step_s: float) -> list[Line]:
    gpus = [int(g["index"]) for g in spec.params.get("gpus") or [{"index": 0}, {"index": 1}]]
    n = len(gpus)

    def matrix(value: float) -> list[list[float | None]]:
        return [[None if i == j else value for j in range(n)] for i in range(n)]

    common = {"gpus": gpus, "source": SYNTHETIC_SOURCE}
    lines: list[Line] = [
        (
            step_s,
            {
                "type": "info",
                "data": {
                    "gpus": gpus,
                    "can_access_peer": [
                        [None if i == j else True for j in range(n)] for i in range(n)
                    ],
                },
            },
        ),
        (step_s, _progress("p2p", 0.2, "copy bandwidth")),
        (
            step_s,
            _result(
                "p2p",
                {
                    "kind": "bandwidth",
                    "p2p": "enabled",
                    "access": "write",
                    "method": "ce",
                    "unit": "GB/s",
                    "values": matrix(21.0),
                    "size_bytes": 64 * 2**20,
                    **common,
                },
            ),
        ),
        (
            step_s,
            _result(
                "p2p",
                {
                    "kind": "bandwidth",
                    "p2p": "enabled",
                    "bidirectional": True,
                    "access": "write",
                    "method": "ce",
                    "unit": "GB/s",
                    "values": matrix(19.5),
                    "size_bytes": 64 * 2**20,
                    **common,
                },
            ),
        ),
        (step_s, _progress("p2p", 0.6, "host-staged")),
        (
            step_s,
            _result(
                "p2p",
                {
                    "kind": "bandwidth",
                    "p2p": "staged",
                    "unit": "GB/s",
                    "values": matrix(14.2),
                    "size_bytes": 64 * 2**20,
                    **common,
                },
            ),
        ),
        (
            step_s,
            _result(
                "p2p",
                {
                    "kind": "latency",
                    "p2p": "enabled",
                    "latency_side": "gpu",
                    "method": "ce",
                    "unit": "us",
                    "values": matrix(3.1),
                    "size_bytes": 16,
                    **common,
                },
            ),
        ),
    ]
    for a in gpus:
        for b in gpus:
            if a != b:
                lines.append(
                    (
                        0.0,
                        _result(
                            "p2p_verification",
                            {
                                "src": a,
                                "dst": b,
                                "ok": True,
                                "detail": "synthetic",
                                "source": SYNTHETIC_SOURCE,
                            },
                        ),
                    )
                )
    lines.append((step_s, _progress("p2p", 1.0, "done")))
    return lines


def _allreduce_stream(spec: ProbeSpec, step_s: float) -> list[Line]:
    backend = spec.params.get("backend", "nccl")
    members = spec.params.get("members") or {"1": [0], "2": [0, 1]}
    gpu_sets = spec.params.get("gpus_by_count") or {}
    busbw_model = 18.0 if backend == "nccl" else 0.5
    sizes = [2**20, 16 * 2**20, 256 * 2**20] if backend == "nccl" else [65536, 2**20, 4 * 2**20]
    lines: list[Line] = []
    counts = sorted(int(k) for k in members)
    for pos, n in enumerate(counts):
        lines.append((step_s, _progress("allreduce", pos / len(counts), f"{n} rank(s)")))
        factor = stats.busbw_factor("all_reduce", n)
        rows = []
        for size in sizes:
            algbw = busbw_model / factor if factor else 200.0
            seconds = size / (algbw * 1e9) + 20e-6
            rows.append(
                {
                    "size_bytes": size,
                    "time_us": round(seconds * 1e6, 3),
                    "algbw_gbps": round(stats.algbw_gbps(size, seconds), 4),
                    "busbw_gbps": None
                    if factor is None
                    else round(stats.busbw_gbps("all_reduce", size, seconds, n) or 0.0, 4),
                    "wrong": 0,
                    "in_place": True,
                }
            )
        lines.append(
            (
                step_s,
                _result(
                    "collective",
                    {
                        "op": "all_reduce",
                        "backend": backend,
                        "ranks": n,
                        "nodes": 1,
                        "gpus": gpu_sets.get(str(n), []),
                        "rows": rows,
                        "avg_busbw_gbps": stats.mean_or_none([r["busbw_gbps"] for r in rows]),
                        "correct": True,
                        "tool": "pcidoc",
                        "source": SYNTHETIC_SOURCE,
                    },
                ),
            )
        )
    lines.append((step_s, _progress("allreduce", 1.0, "done")))
    return lines


def _scaling_stream(spec: ProbeSpec, step_s: float) -> list[Line]:
    backend = spec.params.get("backend", "nccl")
    members = spec.params.get("members") or {"1": [0], "2": [0, 1]}
    gpu_sets = spec.params.get("gpus_by_count") or {}
    counts = sorted(int(k) for k in members)
    base = 1000.0
    throughputs = {n: base * n * 0.9 ** math.log2(n) for n in counts}
    efficiency = stats.scaling_efficiency(throughputs)
    points = [
        {
            "ranks": n,
            "gpus": gpu_sets.get(str(n), []),
            "throughput_samples_per_s": round(throughputs[n], 3),
            "step_time_ms": round(n * 512 / throughputs[n] * 1e3, 3),
            "efficiency": efficiency[n],
        }
        for n in counts
    ]
    return [
        (step_s, _progress("scaling", 0.5, "DDP steps")),
        (
            step_s,
            _result(
                "scaling",
                {
                    "backend": backend,
                    "model_params": 50_356_224,
                    "gradient_bytes": 201_424_896,
                    "per_rank_batch": 512,
                    "points": points,
                    "allreduce_busbw_gbps": 17.0 if max(counts) > 1 else None,
                    "source": SYNTHETIC_SOURCE,
                },
            ),
        ),
        (step_s, _progress("scaling", 1.0, "done")),
    ]


def synthetic_stream(spec: ProbeSpec, gpu_count: int = 8, step_s: float = 0.0) -> list[Line]:
    """A synthetic stream fitted to ``spec`` (its GPUs and rank counts)."""
    if spec.name == "env":
        return synthetic_env(gpu_count)
    builders: dict[str, Callable[[ProbeSpec, float], list[Line]]] = {
        "transfer": _transfer_stream,
        "p2p": _p2p_stream,
        "allreduce": _allreduce_stream,
        "scaling": _scaling_stream,
        "collectives": lambda s, step: _allreduce_stream(s, step) + _scaling_stream(s, step),
    }
    builder = builders.get(spec.name)
    if builder is None:
        return [(0.0, {"type": "error", "kind": "error", "message": f"unknown probe {spec.name}"})]
    return builder(spec, step_s)


# -------------------------------------------------------------------------------- runner


class FakeProbeRunner:
    """Replays streams instead of starting processes.

    Args:
        streams: Probe name -> stream; probes not listed get :func:`synthetic_stream`.
        gpu_count: CUDA devices the synthetic ``env`` stream reports (0: CPU-only torch).
        speed: Replay speed; delays are divided by it (``float('inf')``: no waiting at all).
        step_s: Delay between lines of generated streams.
        sleep: Function used to wait when no ``cancel`` event is given (tests inject one).
    """

    def __init__(
        self,
        streams: Mapping[str, Stream] | None = None,
        gpu_count: int = 8,
        speed: float = 1.0,
        step_s: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.streams = dict(streams or {})
        if gpu_count == 0 and "env" not in self.streams:
            self.streams["env"] = CPU_ONLY_ENV_STREAM
        self.gpu_count = gpu_count
        self.speed = speed
        self.step_s = step_s
        self.sleep = sleep
        self.calls: list[ProbeSpec] = []

    def run(
        self,
        spec: ProbeSpec,
        on_progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> ProbeOutcome:
        """Replay the stream for ``spec`` (see the class docstring)."""
        self.calls.append(spec)
        stream = self.streams.get(spec.name)
        if stream is None:
            stream = synthetic_stream(spec, self.gpu_count, self.step_s)
        builder = OutcomeBuilder(spec, on_progress)
        virtual = 0.0
        for delay, line in stream:
            if virtual + delay > spec.deadline:
                remaining = spec.deadline - virtual
                if self._wait(remaining, cancel):
                    builder.add_error("interrupted", "cancelled before it finished")
                else:
                    builder.add_error("timeout", f"timed out after {spec.deadline:.0f} s")
                return builder.finish()
            if self._wait(delay, cancel):
                builder.add_error("interrupted", "cancelled before it finished")
                return builder.finish()
            virtual += delay
            builder.feed(line if isinstance(line, str) else json.dumps(line))
        builder.outcome.returncode = 0
        return builder.finish()

    def _wait(self, seconds: float, cancel: threading.Event | None) -> bool:
        """Wait ``seconds`` of stream time; True when cancelled meanwhile."""
        real = seconds / self.speed if self.speed and math.isfinite(self.speed) else 0.0
        if cancel is not None:
            if cancel.is_set():
                return True
            return cancel.wait(real) if real > 0 else False
        if real > 0:
            self.sleep(real)
        return False


def probe_args(name: str, **kw: object) -> Namespace:
    """The parsed arguments of `pcidoc probe NAME --json` (quick mode), with overrides."""
    values = {
        "name": name,
        "gpus": None,
        "backend": None,
        "ranks": None,
        "mode": "quick",
        "json": True,
        "timeout": None,
        "force": False,
    }
    values.update(kw)
    return Namespace(**values)

"""PyTorch profiler traces (``torch.profiler`` ... ``export_chrome_trace``; Kineto's JSON).

Recognised by structure: a JSON object with a ``traceEvents`` list, or a bare list of events,
holding complete events (``"ph": "X"``, ``ts``/``dur`` in microseconds). Read:

* ``ProfilerStep#N`` annotations: the step count and the median step time;
* ``gpu_memcpy`` events grouped by their label (``Memcpy HtoD (Pageable -> Device)``...):
  count, bytes (``args.bytes``, or ``args["memory bandwidth (GB/s)"]`` x duration) and time;
* kernels (``cat == "kernel"``): NCCL kernels (name contains ``nccl``) against the others, per
  device: ``nccl_time_share`` = time with an NCCL kernel running / step time, and
  ``nccl_exposed_share`` = time with NCCL running and no other kernel of the same device
  running / step time. Without step annotations the window is the span of the device's kernels.
  With several devices in one trace the shares are averaged over the devices running NCCL.

One trace file is one rank; ``distributedInfo.world_size`` gives the number of ranks.
"""

from __future__ import annotations

import math
from typing import Any

from pcidoc._record import field, record
from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.text import json_float, lazy
from pcidoc.model.measurements import MemcpyKind, WorkloadEvidence

FORMAT = "pytorch-trace"
DESCRIPTION = "PyTorch profiler Chrome trace JSON (torch.profiler export_chrome_trace)"

_STEP_RE = lazy(r"^ProfilerStep#(\d+)$")
Interval = tuple[float, float]


def events_of(data: Any) -> list[dict[str, Any]] | None:
    """The trace events of a parsed JSON document, or ``None`` when it is not a trace."""
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list) or not events:
        return None
    sample = [e for e in events[:200] if isinstance(e, dict)]
    if not sample or not any("ph" in e and "name" in e for e in sample):
        return None
    return [e for e in events if isinstance(e, dict)]


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2.0


def _number(value: Any) -> float | None:
    return json_float(value)


def _union(intervals: list[Interval]) -> list[Interval]:
    merged: list[Interval] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _intersect(a: list[Interval], b: list[Interval]) -> list[Interval]:
    out: list[Interval] = []
    i = j = 0
    while i < len(a) and j < len(b):
        start = max(a[i][0], b[j][0])
        end = min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _subtract(a: list[Interval], b: list[Interval]) -> list[Interval]:
    out: list[Interval] = []
    j = 0
    for start, end in a:
        cursor = start
        while j < len(b) and b[j][1] <= cursor:
            j += 1
        k = j
        while k < len(b) and b[k][0] < end:
            if b[k][0] > cursor:
                out.append((cursor, b[k][0]))
            cursor = max(cursor, b[k][1])
            k += 1
        if cursor < end:
            out.append((cursor, end))
    return out


def _length(intervals: list[Interval]) -> float:
    return sum(end - start for start, end in intervals)


def _memcpy_class(name: str) -> tuple[str, str]:
    text = name.lower()
    if "htod" in text:
        direction = "h2d"
    elif "dtoh" in text:
        direction = "d2h"
    elif "dtod" in text or "ptop" in text:
        direction = "d2d"
    else:
        direction = "other"
    if "pageable" in text:
        memory = "pageable"
    elif "pinned" in text:
        memory = "pinned"
    elif direction == "d2d" or ("device" in text and "->" in text and "host" not in text):
        memory = "device"
    else:
        memory = "other"
    return direction, memory


def looks_like_trace(data: Any) -> bool:
    """A JSON document of trace events (``{"traceEvents": [...]}`` or a bare list)."""
    return events_of(data) is not None


@record
class _Events:
    """What the trace's complete events hold, gathered in one pass."""

    steps: dict[int, Interval] = field(default_factory=dict)
    gpu_steps: dict[int, Interval] = field(default_factory=dict)
    memcpy: dict[str, list[float]] = field(default_factory=dict)
    """Label -> [count, bytes, microseconds]."""
    kernels: dict[Any, tuple[list[Interval], list[Interval]]] = field(default_factory=dict)
    """Device -> (NCCL kernel intervals, other kernel intervals)."""
    missing_bytes: int = 0


def _memcpy_bytes(args: dict[str, Any], dur: float) -> float | None:
    size = _number(args.get("bytes"))
    if size is None:
        bandwidth = _number(args.get("memory bandwidth (GB/s)"))
        size = _number(bandwidth * dur * 1e3) if bandwidth is not None else None
    return size


def _event(found: _Events, event: dict[str, Any]) -> None:
    """Fold one complete event (``"ph": "X"``) into ``found``."""
    ts, dur = _number(event.get("ts")), _number(event.get("dur"))
    name = event.get("name")
    if ts is None or dur is None or dur < 0 or not isinstance(name, str):
        return
    cat = event.get("cat") if isinstance(event.get("cat"), str) else ""
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    step = _STEP_RE.match(name)
    if step:
        target = found.gpu_steps if cat == "gpu_user_annotation" else found.steps
        target.setdefault(int(step.group(1)), (ts, ts + dur))
    elif cat == "gpu_memcpy" or cat.lower() == "memcpy" or name.startswith("Memcpy "):
        size = _memcpy_bytes(args, dur)
        if size is None:
            found.missing_bytes += 1
            size = 0.0
        entry = found.memcpy.setdefault(name, [0.0, 0.0, 0.0])
        entry[0] += 1
        entry[1] += size
        entry[2] += dur
    elif cat.lower() == "kernel":
        device = args.get("device", event.get("pid"))
        nccl, other = found.kernels.setdefault(
            device if isinstance(device, (int, str)) else 0, ([], [])
        )
        (nccl if "nccl" in name.lower() else other).append((ts, ts + dur))


def _nccl_shares(evidence: WorkloadEvidence, found: _Events, windows: list[Interval]) -> None:
    """The share of step time with an NCCL kernel running, and with nothing else besides."""
    time_shares: list[float] = []
    exposed_shares: list[float] = []
    for nccl, other in found.kernels.values():
        if not nccl:
            continue
        nccl_u, other_u = _union(nccl), _union(other)
        window = windows or _union(
            [(min(s for s, _ in nccl_u + other_u), max(e for _, e in nccl_u + other_u))]
        )
        span = _length(window)
        if span <= 0:
            continue
        in_window = _intersect(nccl_u, window)
        time_shares.append(_length(in_window) / span)
        exposed_shares.append(_length(_subtract(in_window, other_u)) / span)
    if time_shares:
        evidence.nccl_time_share = min(1.0, sum(time_shares) / len(time_shares))
        evidence.nccl_exposed_share = min(1.0, sum(exposed_shares) / len(exposed_shares))
    elif found.kernels:
        evidence.nccl_time_share = 0.0
        evidence.nccl_exposed_share = 0.0


def _memcpy_kinds(evidence: WorkloadEvidence, found: _Events) -> None:
    for label, (count, size, time_us) in sorted(found.memcpy.items()):
        direction, memory = _memcpy_class(label)
        evidence.memcpy.append(
            MemcpyKind(
                kind=label,
                direction=direction,  # type: ignore[arg-type]
                memory=memory,  # type: ignore[arg-type]
                count=int(count),
                bytes=int(size) if math.isfinite(size) else 0,
                time_us=time_us,
            )
        )


def parse_trace(data: Any, ctx: Context) -> Fragment | None:
    """Workload evidence from a parsed trace, or ``None`` when ``data`` is not a trace."""
    events = events_of(data)
    if events is None:
        return None
    found = _Events()
    for event in events:
        if event.get("ph") == "X":
            _event(found, event)
    if not (found.steps or found.gpu_steps or found.memcpy or found.kernels):
        return None
    frag = Fragment(FORMAT)
    chosen = found.steps or found.gpu_steps
    evidence = WorkloadEvidence(source=f"import:{ctx.file}")
    if chosen:
        evidence.steps = len(chosen)
        durations = [end - start for start, end in chosen.values()]
        evidence.step_time_ms = _median(durations) / 1000.0
    _nccl_shares(evidence, found, _union(list(chosen.values())))
    _memcpy_kinds(evidence, found)
    info = data.get("distributedInfo") if isinstance(data, dict) else None
    if isinstance(info, dict):
        world = info.get("world_size")
        if isinstance(world, int) and not isinstance(world, bool) and world > 0:
            evidence.ranks = world
    if found.missing_bytes:
        frag.warn(
            f"profiler trace: {found.missing_bytes} memcpy events without a size; counted as 0 B"
        )
    if not chosen:
        frag.warn("profiler trace: no ProfilerStep#N annotations; shares use the kernels' span")
    frag.workloads.append(evidence)
    parts = []
    if evidence.steps:
        parts.append(f"{evidence.steps} steps of {evidence.step_time_ms:.1f} ms")
    parts.append(f"{len(evidence.memcpy)} memcpy kinds")
    if evidence.nccl_time_share is not None:
        parts.append(f"NCCL {evidence.nccl_time_share:.0%} of step time")
    frag.read.append("profiler trace: " + ", ".join(parts))
    return frag

"""SYNTHETIC PyTorch profiler traces for tests (no number here was measured).

The events have the shapes Kineto writes in ``export_chrome_trace``: complete events
(``"ph": "X"``) with ``ts``/``dur`` in microseconds, CPU events on the process id, GPU events with
``pid`` = device and ``tid`` = stream, ``cat`` one of ``user_annotation``,
``gpu_user_annotation``, ``cpu_op``, ``cuda_runtime``, ``kernel``, ``gpu_memcpy``, flow events
(``ac2g``) and process metadata (``"ph": "M"``).
"""

from __future__ import annotations

import json
from typing import Any

BASE_US = 1_700_000_000_000.0
CPU_PID = 4321


class TraceBuilder:
    """Builds one rank's trace event by event."""

    def __init__(self, world_size: int | None = None) -> None:
        self.events: list[dict[str, Any]] = [
            {
                "name": "process_name",
                "ph": "M",
                "ts": BASE_US,
                "pid": CPU_PID,
                "tid": 0,
                "args": {"name": "python"},
            },
            {
                "name": "process_name",
                "ph": "M",
                "ts": BASE_US,
                "pid": 0,
                "tid": 0,
                "args": {"name": "python"},
            },
        ]
        self.world_size = world_size
        self._correlation = 100
        self._external = 1

    def _ids(self) -> tuple[int, int]:
        self._correlation += 1
        self._external += 1
        return self._correlation, self._external

    def step(self, number: int, start: float, dur: float, gpu: bool = True) -> None:
        """A ``ProfilerStep#N`` annotation (CPU, and its GPU mirror unless ``gpu`` is False)."""
        _, external = self._ids()
        self.events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{number}",
                "pid": CPU_PID,
                "tid": CPU_PID,
                "ts": BASE_US + start,
                "dur": dur,
                "args": {"External id": external, "Record function id": 0, "Ev Idx": number},
            }
        )
        if gpu:
            self.events.append(
                {
                    "ph": "X",
                    "cat": "gpu_user_annotation",
                    "name": f"ProfilerStep#{number}",
                    "pid": 0,
                    "tid": 7,
                    "ts": BASE_US + start + 5.0,
                    "dur": dur - 5.0,
                    "args": {"External id": external},
                }
            )

    def kernel(self, name: str, start: float, dur: float, stream: int = 7, device: int = 0) -> None:
        """A GPU kernel plus the runtime call and flow events that launched it."""
        correlation, external = self._ids()
        launch = BASE_US + start - 8.0
        self.events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": CPU_PID,
                "tid": CPU_PID,
                "ts": launch,
                "dur": 4.0,
                "args": {"External id": external, "cbid": 211, "correlation": correlation},
            }
        )
        self.events.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": name,
                "pid": device,
                "tid": stream,
                "ts": BASE_US + start,
                "dur": dur,
                "args": {
                    "External id": external,
                    "queued": 0,
                    "device": device,
                    "context": 1,
                    "stream": stream,
                    "correlation": correlation,
                    "registers per thread": 64,
                    "shared memory": 0,
                    "blocks per SM": 0.5,
                    "warps per SM": 2.0,
                    "grid": [54, 1, 1],
                    "block": [128, 1, 1],
                    "est. achieved occupancy %": 12,
                },
            }
        )
        self.events.append(
            {
                "ph": "s",
                "id": correlation,
                "pid": CPU_PID,
                "tid": CPU_PID,
                "ts": launch,
                "cat": "ac2g",
                "name": "ac2g",
            }
        )
        self.events.append(
            {
                "ph": "f",
                "id": correlation,
                "pid": device,
                "tid": stream,
                "ts": BASE_US + start,
                "cat": "ac2g",
                "name": "ac2g",
                "bp": "e",
            }
        )

    def memcpy(
        self,
        label: str,
        start: float,
        dur: float,
        size: int | None = None,
        bandwidth_gbps: float | None = None,
        stream: int = 7,
    ) -> None:
        """A ``gpu_memcpy`` event such as ``Memcpy HtoD (Pageable -> Device)``."""
        correlation, external = self._ids()
        args: dict[str, Any] = {
            "External id": external,
            "device": 0,
            "context": 1,
            "stream": stream,
            "correlation": correlation,
        }
        if size is not None:
            args["bytes"] = size
        if bandwidth_gbps is not None:
            args["memory bandwidth (GB/s)"] = bandwidth_gbps
        self.events.append(
            {
                "ph": "X",
                "cat": "gpu_memcpy",
                "name": label,
                "pid": 0,
                "tid": stream,
                "ts": BASE_US + start,
                "dur": dur,
                "args": args,
            }
        )

    def document(self, bare_list: bool = False) -> Any:
        """The trace as Kineto writes it (an object with ``traceEvents``), or a bare list."""
        if bare_list:
            return list(self.events)
        doc: dict[str, Any] = {
            "schemaVersion": 1,
            "deviceProperties": [{"id": 0, "name": "Synthetic GPU", "totalGlobalMem": 1 << 34}],
            "traceEvents": self.events,
            "traceName": "synthetic.pt.trace.json",
            "displayTimeUnit": "ms",
        }
        if self.world_size is not None:
            doc["distributedInfo"] = {"backend": "nccl", "rank": 0, "world_size": self.world_size}
        return doc

    def text(self, bare_list: bool = False) -> str:
        """The trace serialised as JSON."""
        return json.dumps(self.document(bare_list))

"""Checks before the heavy probes: is anyone else using the GPUs we are about to saturate?

Other work on a target GPU contaminates bandwidth numbers (it shares the copy engines, the PCIe
link and the host memory bandwidth) and is itself slowed down by the probe. So, unless
``--force`` is given, pcidoc refuses to run GPU probes while other processes hold a GPU it would
use, and names them.

Processes come from the capture (``host.processes``, collected moments before) and, when NVML is
reachable, from a fresh NVML query through :mod:`pcidoc.collect.nvml` (imported only if present).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from pcidoc.model.capture import Capture


@dataclass
class BusyProcess:
    """A process using one or more of the target GPUs."""

    pid: int
    name: str | None = None
    gpus: list[int] = field(default_factory=list)

    def describe(self) -> str:
        """``pid 4242 (python) on GPU0, GPU1``."""
        name = f" ({self.name})" if self.name else ""
        where = ", ".join(f"GPU{g}" for g in sorted(self.gpus))
        return f"pid {self.pid}{name} on {where}"


def _own_pids() -> set[int]:
    pids = {os.getpid()}
    try:
        import psutil

        me = psutil.Process()
        pids.update(child.pid for child in me.children(recursive=True))
    except Exception:
        pass
    return pids


def _process_name(pid: int) -> str | None:
    try:
        import psutil

        return psutil.Process(pid).name()
    except Exception:
        return None


def live_gpu_processes(gpus: Iterable[int]) -> dict[int, list[int]] | None:
    """PIDs with a compute context on each GPU, read now through NVML.

    Returns:
        GPU index -> pids, or ``None`` when NVML (or pcidoc's NVML module) is not available.
    """
    try:
        from pcidoc.collect import nvml
    except ImportError:
        return None
    backend = nvml.PynvmlBackend()
    if backend.init() is not None:
        return None
    try:
        found: dict[int, list[int]] = {}
        for index in gpus:
            processes = backend.compute_processes(index)
            if nvml.is_unavailable(processes):
                continue
            found[index] = [p.pid for p in processes]  # type: ignore[union-attr]
        return found
    finally:
        backend.shutdown()


def busy_processes(
    capture: Capture,
    gpus: Iterable[int],
    live: dict[int, list[int]] | None = None,
    ignore: Iterable[int] = (),
) -> list[BusyProcess]:
    """Other processes on the target GPUs, from the capture and a live NVML reading.

    Args:
        capture: The machine (``host.processes``).
        gpus: GPU indices the probes will use.
        live: GPU index -> pids from :func:`live_gpu_processes` (optional).
        ignore: PIDs that are ours (this process and its children are always ignored).
    """
    targets = set(gpus)
    skip = _own_pids() | set(ignore)
    by_pid: dict[int, BusyProcess] = {}
    for proc in capture.host.processes:
        if proc.pid in skip:
            continue
        used = sorted(set(proc.gpus) & targets)
        if used:
            by_pid[proc.pid] = BusyProcess(proc.pid, proc.name, used)
    for index, pids in (live or {}).items():
        if index not in targets:
            continue
        for pid in pids:
            if pid in skip:
                continue
            entry = by_pid.get(pid)
            if entry is None:
                entry = by_pid[pid] = BusyProcess(pid, _process_name(pid), [])
            if index not in entry.gpus:
                entry.gpus.append(index)
    return sorted(by_pid.values(), key=lambda b: b.pid)


def refusal_message(busy: list[BusyProcess], limit: int = 5) -> str:
    """One line saying who uses the GPUs, why pcidoc will not measure, and how to override."""
    shown = "; ".join(b.describe() for b in busy[:limit])
    more = f" and {len(busy) - limit} more" if len(busy) > limit else ""
    return (
        f"other processes are using the GPUs: {shown}{more}. Probes would measure a shared "
        "link (wrong numbers) and slow that work down; stop them, choose other GPUs with "
        "--gpus, or pass --force"
    )

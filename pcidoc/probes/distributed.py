"""Launcher of the collective probes: N worker processes, as ``torchrun --standalone`` does.

The probe child (``python -m pcidoc.probes.child allreduce|scaling``) becomes a small launcher:

* it starts ``world`` worker processes with :mod:`multiprocessing`'s **spawn** context (a fresh
  interpreter each; never fork a process that may hold CUDA state). The workers stay in the
  launcher's process group, so the parent's process-group kill ends all of them;
* world rank 0 hosts the rendezvous store (a ``TCPStore`` on an ephemeral port of 127.0.0.1,
  like torchrun's standalone rendezvous; see :func:`loopback_store`) and hands the port to the
  others through shared memory — no port guessing, no races;
* every worker arms a parent-death signal, so a killed launcher cannot orphan it;
* every rank calls ``init_process_group(backend, timeout=60 s)`` (``device_id=`` for NCCL, so
  communicator errors show up at once), builds one sub-group per rank count (all ranks call
  ``new_group`` in the same order) and a gloo "meta" group for barriers and results;
* workers send protocol messages (progress, results, errors) through a spawn-context queue;
  the launcher forwards them to the parent. Only world rank 0 reports results.

One launch covers all rank counts: torch import, CUDA and NCCL initialisation are paid once.
Idle ranks wait on a barrier of the meta group while another rank count is measured.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import multiprocessing
import os
import queue as queue_module
import time
import traceback
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from pcidoc.probes import protocol
from pcidoc.probes.child import (
    Emitter,
    ProbeUnavailable,
    die_with_parent,
    import_torch,
    torch_versions,
)

DEFAULT_PG_TIMEOUT_S = 60.0
"""Process-group timeout: far below the 10/30 min defaults (research/probes.md §3.4)."""


@dataclass
class WorkerContext:
    """What a collective probe body gets in each worker process.

    Attributes:
        rank: World rank (NCCL: the rank uses CUDA device ``params["ordinals"][rank]``).
        world: World size.
        backend: ``nccl`` or ``gloo``.
        torch: The torch module.
        dist: ``torch.distributed``.
        device: ``torch.device`` the rank uses.
        params: The probe parameters.
        members: Rank count -> world ranks of its sub-group.
        groups: Rank count -> process group (``None`` for ranks outside it).
        meta: A gloo group of all ranks for barriers and result objects.
        send: Puts a protocol message on the queue to the launcher.
    """

    rank: int
    world: int
    backend: str
    torch: Any
    dist: Any
    device: Any
    params: dict[str, Any]
    members: dict[int, list[int]]
    groups: dict[int, Any]
    meta: Any
    send: Any
    timings: dict[str, float] = field(default_factory=dict)
    progress_offset: float = 0.0
    """Where this body's progress starts within the probe (several bodies share one launch)."""
    progress_span: float = 1.0

    @property
    def is_cuda(self) -> bool:
        """True for NCCL on GPUs."""
        return self.backend == "nccl"

    def sync(self) -> None:
        """Wait for the device (a no-op on CPU, where gloo calls are synchronous)."""
        if self.is_cuda:
            self.torch.cuda.synchronize(self.device)

    def barrier(self, group: Any = None) -> None:
        """Barrier of ``group`` (``None``: the default group).

        On NCCL groups the rank names its GPU (``device_ids``): torch 2.1/2.2 cannot bind the
        process group to a device (no ``device_id``), and an unnamed barrier there guesses the
        GPU from the rank, which is wrong in a sub-group. The gloo meta group takes no device.
        """
        if self.is_cuda and not (self.meta is not None and group is self.meta):
            self.dist.barrier(group=group, device_ids=[self.device.index])
        else:
            self.dist.barrier(group=group)

    def leader(self, count: int) -> int:
        """Lowest world rank of the sub-group for ``count`` ranks."""
        return self.members[count][0]

    def progress(self, fraction: float, message: str) -> None:
        """Progress from world rank 0 only."""
        if self.rank == 0:
            overall = self.progress_offset + self.progress_span * fraction
            self.send(protocol.progress(self.params.get("probe", "collective"), overall, message))

    def collect(self, count: int, value: Any) -> Any:
        """Hand a JSON-able ``value`` from the sub-group leader to every rank.

        Every rank calls this. JSON bytes in a CPU tensor over the gloo meta group (torch's
        object collectives need numpy, which a minimal torch install may lack).
        """
        torch = self.torch
        leader = self.leader(count)
        payload = json.dumps(value).encode() if self.rank == leader else b""
        length = torch.tensor([len(payload)], dtype=torch.int64)
        self.dist.broadcast(length, src=leader, group=self.meta)
        data = torch.zeros(int(length.item()), dtype=torch.uint8)
        if self.rank == leader:
            data = torch.tensor(list(payload), dtype=torch.uint8)
        self.dist.broadcast(data, src=leader, group=self.meta)
        return json.loads(bytes(data.tolist()).decode())


def loopback_store(dist: Any, world: int, timeout: timedelta) -> Any:
    """The rendezvous store of a single-node probe, listening on 127.0.0.1 when torch allows.

    ``TCPStore(..., is_master=True)`` listens on every interface whatever host it is given;
    handing it a socket we bound to loopback (``master_listen_fd``) keeps the store off the
    network. Where that is impossible the store is opened the default way (port chosen by the
    kernel, all interfaces): torch builds without the argument raise ``TypeError``, and the
    libuv store of torch 2.4-2.7 (the default there) raises ``NotImplementedError`` for a
    listen fd; ``use_libuv=False`` keeps the loopback-only socket on those.
    """
    import socket

    for extra in ({}, {"use_libuv": False}):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", 0))
            listener.listen(128)
            store = dist.TCPStore(
                "127.0.0.1",
                listener.getsockname()[1],
                world,
                True,
                timeout=timeout,
                wait_for_workers=False,
                master_listen_fd=listener.fileno(),
                **extra,
            )
        except (TypeError, NotImplementedError):
            # No master_listen_fd (or use_libuv) in this torch, or a store refusing a listen fd.
            listener.close()
            continue
        listener.detach()  # the store owns the socket now
        return store
    return dist.TCPStore("127.0.0.1", 0, world, True, timeout=timeout, wait_for_workers=False)


def accepts_keyword(function: Any, name: str) -> bool | None:
    """Whether ``function`` takes the keyword ``name`` (``None``: its signature is unknown)."""
    import inspect

    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return None
    return name in parameters


def init_process_group(dist: Any, device: Any, **kwargs: Any) -> bool:
    """``dist.init_process_group(**kwargs)``, bound to ``device`` where torch can do that.

    ``device_id`` (NCCL: communicator errors show at once, barriers know their GPU) appeared in
    torch 2.3; torch 2.1/2.2 raise ``TypeError`` for it, and then the group is initialised
    without it (:meth:`WorkerContext.barrier` names the GPU instead).

    Returns:
        True when the group was bound to ``device``.
    """
    if device is not None and accepts_keyword(dist.init_process_group, "device_id") is not False:
        try:
            dist.init_process_group(**kwargs, device_id=device)
            return True
        except TypeError as exc:
            if "device_id" not in str(exc):
                raise
    dist.init_process_group(**kwargs)
    return False


def _set_threads(torch: Any, threads: int) -> None:
    torch.set_num_threads(max(1, threads))


def _worker_entry(
    rank: int,
    world: int,
    body_module: str,
    params: dict[str, Any],
    port: Any,
    ready: Any,
    messages: Any,
    parent_pid: int | None = None,
) -> None:
    """Body of one worker process (module-level so the spawn context can import it)."""

    def send(message: dict[str, Any]) -> None:
        messages.put(message)

    die_with_parent(parent_pid)  # a killed launcher must not leave its workers running
    try:
        torch = import_torch()
        import torch.distributed as dist

        if rank == 0:
            send(protocol.info(torch_versions(torch)))

        backend = params["backend"]
        _set_threads(torch, int(params.get("threads_per_rank", 1)))
        timeout = timedelta(seconds=float(params.get("pg_timeout_s", DEFAULT_PG_TIMEOUT_S)))
        if backend == "nccl":
            ordinals = params.get("ordinals") or list(range(world))
            torch.cuda.set_device(int(ordinals[rank]))
            device = torch.device("cuda", int(ordinals[rank]))
        else:
            device = torch.device("cpu")
        if rank == 0:
            store = loopback_store(dist, world, timeout)
            port.value = store.port
            ready.set()
        else:
            if not ready.wait(timeout.total_seconds()):
                raise RuntimeError("rank 0 did not open the rendezvous store in time")
            store = dist.TCPStore("127.0.0.1", int(port.value), world, False, timeout=timeout)
        started = time.perf_counter()
        kwargs: dict[str, Any] = {
            "backend": backend,
            "store": store,
            "rank": rank,
            "world_size": world,
            "timeout": timeout,
        }
        bound = init_process_group(dist, device if backend == "nccl" else None, **kwargs)
        meta_timeout = timedelta(seconds=float(params.get("meta_timeout_s", 600.0)))
        # A gloo group with a long timeout: idle ranks wait on it while others measure.
        meta = dist.new_group(backend="gloo", timeout=meta_timeout)
        members = {int(k): [int(r) for r in v] for k, v in params["members"].items()}
        groups: dict[int, Any] = {}
        for count in sorted(members):
            group = dist.new_group(ranks=members[count], timeout=timeout)
            groups[count] = group if rank in members[count] else None
        ctx = WorkerContext(
            rank=rank,
            world=world,
            backend=backend,
            torch=torch,
            dist=dist,
            device=device,
            params=params,
            members=members,
            groups=groups,
            meta=meta,
            send=send,
        )
        ctx.timings["init_s"] = time.perf_counter() - started
        if rank == 0 and backend == "nccl" and not bound:
            send(
                protocol.log(
                    "info",
                    "this torch cannot bind the process group to a GPU "
                    "(no device_id); barriers name the GPU",
                )
            )
        try:
            importlib.import_module(body_module).worker(ctx)
            dist.barrier(group=meta)
        finally:
            dist.destroy_process_group()
    except ProbeUnavailable as exc:
        send(protocol.error("unavailable", str(exc)))
        raise SystemExit(1) from None
    except Exception as exc:
        traceback.print_exc()
        send(protocol.error("error", f"rank {rank}: {type(exc).__name__}: {exc}"))
        raise SystemExit(1) from None


def _forward(emit: Emitter, message: Any, state: dict[str, Any]) -> None:
    if not isinstance(message, dict):
        return
    if message.get("type") == "error":
        # The first error is the cause; the others are usually its echo on other ranks.
        if state.get("error"):
            emit.log("warning", str(message.get("message")))
            return
        state["error"] = True
    try:
        emit.send(message)
    except Exception as exc:  # a worker sent something unencodable
        emit.log("warning", f"dropped a worker message: {exc}")


def launch(params: dict[str, Any], emit: Emitter, body_module: str) -> None:
    """Start the workers, forward their messages, and fail fast when one of them dies.

    Args:
        params: Probe parameters; ``world``, ``backend``, ``members`` are required.
        emit: The protocol emitter of this (launcher) process.
        body_module: Module with ``worker(ctx: WorkerContext)``.

    Raises:
        ProbeUnavailable: the backend cannot run here.
    """
    backend = params["backend"]
    world = int(params["world"])
    if world < 1:
        raise ValueError("world size must be at least 1")
    if backend not in ("nccl", "gloo"):
        raise ProbeUnavailable(f"unknown backend {backend!r}")
    # The same one-line reason as the CUDA probes when torch is missing, before any worker
    # (without importing it here: the workers do, and pay for it once).
    if importlib.util.find_spec("torch") is None:
        raise ProbeUnavailable(f"torch is not installed: {protocol.INSTALL_HINT}")
    emit.info({"plan": {"rank_counts": sorted(int(k) for k in params.get("members", {}))}})
    # Single-host rendezvous on loopback unless the user chose an interface.
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    os.environ.setdefault("OMP_NUM_THREADS", str(params.get("threads_per_rank", 1)))
    ctx = multiprocessing.get_context("spawn")
    messages = ctx.Queue()
    port = ctx.Value("i", 0)
    ready = ctx.Event()
    workers = [
        ctx.Process(
            target=_worker_entry,
            args=(rank, world, body_module, params, port, ready, messages, os.getpid()),
            name=f"pcidoc-{params.get('probe', 'collective')}-rank{rank}",
            daemon=True,
        )
        for rank in range(world)
    ]
    state: dict[str, Any] = {}
    for worker in workers:
        worker.start()
    failed: tuple[int, int] | None = None
    try:
        failed = _supervise(workers, messages, emit, state)
    finally:
        if failed is not None or any(w.is_alive() for w in workers):
            _stop_workers(workers, messages, emit, state)
    while True:
        try:
            _forward(emit, messages.get_nowait(), state)
        except (queue_module.Empty, OSError, ValueError):
            break
    if failed is not None and not state.get("error"):
        rank, code = failed
        how = f"exit status {code}" if code > 0 else f"signal {-code}"
        emit.error("crash", f"worker rank {rank} ended with {how} (see stderr)")


def _supervise(
    workers: list[Any], messages: Any, emit: Emitter, state: dict[str, Any]
) -> tuple[int, int] | None:
    """Forward messages until every worker exited; the first ``(rank, exit code)`` that was
    not 0, as soon as one is seen."""
    while True:
        try:
            _forward(emit, messages.get(timeout=0.1), state)
            continue
        except queue_module.Empty:
            pass
        codes = [w.exitcode for w in workers]
        bad = [(rank, code) for rank, code in enumerate(codes) if code not in (None, 0)]
        if bad:
            return bad[0]
        if all(code == 0 for code in codes):
            return None


def _stop_workers(workers: list[Any], messages: Any, emit: Emitter, state: dict[str, Any]) -> None:
    """Give the failing rank's message a moment to arrive, then end the rest."""
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        try:
            _forward(emit, messages.get(timeout=0.1), state)
        except queue_module.Empty:
            break
    for worker in workers:
        if worker.is_alive():
            worker.terminate()
    for worker in workers:
        worker.join(2.0)
        if worker.is_alive():
            worker.kill()
            worker.join(1.0)

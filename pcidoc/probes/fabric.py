"""``pcidoc probe fabric``: cross-node measurement on an existing launcher (torchrun, srun).

Every rank of the job runs ``pcidoc probe fabric``; this process *is* the rank (torchrun or
``srun`` started it), so torch is imported here, in the measuring process, and nowhere else.

Phases, every rank in the same order (each bounded by the deadline):

1. **join**: every rank writes its host, node rank and local rank into the rendezvous store
   (torchrun's agent store, or a ``TCPStore`` that rank 0 hosts at ``MASTER_ADDR:MASTER_PORT``
   under Slurm). Rank 0 waits for all of them; a rank that never joins is named (with the node
   the launcher meant to put it on) and every joined rank is told to stop: nothing hangs;
2. ``init_process_group`` (``nccl`` on GPUs, ``gloo`` on CPU) with a short timeout;
3. **all-reduce across all ranks** at a few sizes (nccl-tests definitions: ``algbw = S/t``,
   ``busbw = algbw x 2(n-1)/n``, t averaged over ranks), reusing the single-node probe's timing
   loop (:func:`pcidoc.probes.allreduce.time_allreduce`);
4. **intra-node all-reduce** on each node with more than one rank;
5. **node-leader pairs in rounds**: the lowest rank of each node is its leader; a round-robin
   schedule pairs every two leaders once, disjoint pairs at the same time; each pair measures
   both directions (``k`` back-to-back sends, one acknowledgement);
6. **bisection** (4 nodes or more): the leaders of each half of the candidate nodes all-reduce at
   the same time; the slower half is kept until at most 3 candidates remain; the pair matrix
   picks the slowest among them.

Rank 0 writes one ``pcidoc.probe/1`` document (stdout, and ``-o FILE``) with the collective
measurements (``nodes`` and ``ranks`` set), the node-pair matrix, the bisection steps, and the
slowest node and pair named.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import signal
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from pcidoc.errors import ExitCode, PcidocError
from pcidoc.probes.child import torch_module
from pcidoc.probes.launch import LaunchEnv, launch_env
from pcidoc.probes.protocol import nccl_settings

KiB, MiB = 1024, 1024 * 1024
PROBE_SCHEMA = "pcidoc.probe/1"
DEFAULT_DEADLINE_S = {"quick": 300.0, "full": 1200.0}
SLOW_FACTOR = 0.8
"""A node is called out as slow (``significant``) when its median pair bandwidth is below
80 % of the median of the other nodes' medians: a heuristic of pcidoc's, far outside the
run-to-run spread of a healthy fabric, not a published threshold."""


@dataclass(frozen=True)
class FabricParams:
    """Sizes and repetitions of one mode."""

    sizes: tuple[int, ...]
    pair_bytes: int
    pair_iters: int
    bisect_bytes: int


PARAMS: dict[tuple[str, str], FabricParams] = {
    ("nccl", "quick"): FabricParams((1 * MiB, 64 * MiB), 64 * MiB, 5, 64 * MiB),
    ("nccl", "full"): FabricParams((1 * MiB, 16 * MiB, 256 * MiB), 256 * MiB, 10, 256 * MiB),
    ("gloo", "quick"): FabricParams((64 * KiB, 1 * MiB), 1 * MiB, 3, 1 * MiB),
    ("gloo", "full"): FabricParams((64 * KiB, 1 * MiB, 4 * MiB), 4 * MiB, 5, 4 * MiB),
}


def round_robin(count: int) -> list[list[tuple[int, int]]]:
    """Rounds of disjoint pairs covering every pair of ``count`` items once (circle method)."""
    items: list[int | None] = list(range(count))
    if count % 2:
        items.append(None)
    n = len(items)
    rounds: list[list[tuple[int, int]]] = []
    for _ in range(n - 1):
        pairs = []
        for i in range(n // 2):
            a, b = items[i], items[n - 1 - i]
            if a is not None and b is not None:
                pairs.append((min(a, b), max(a, b)))
        rounds.append(sorted(pairs))
        items = [items[0], items[-1], *items[1:-1]]
    return rounds


def slowest(
    names: list[str], matrix: list[list[float | None]], candidates: list[str] | None = None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The slowest node (lowest median bandwidth to the others) and the slowest pair."""
    medians: dict[str, float] = {}
    for i, name in enumerate(names):
        values = [v for j, v in enumerate(matrix[i]) if j != i and v is not None]
        values += [matrix[j][i] for j in range(len(names)) if j != i and matrix[j][i] is not None]  # type: ignore[misc]
        if values:
            medians[name] = statistics.median(values)
    node = None
    pool = [n for n in (candidates or names) if n in medians]
    # With two nodes both see the same pair: a slow link cannot be pinned on either of them.
    if len(medians) >= 3 and pool:
        worst = min(pool, key=lambda n: medians[n])
        others = [v for n, v in medians.items() if n != worst]
        reference = statistics.median(others)
        node = {
            "name": worst,
            "median_pair_gbps": round(medians[worst], 4),
            "others_median_gbps": round(reference, 4),
            "significant": medians[worst] < SLOW_FACTOR * reference,
        }
    pair = None
    best: tuple[float, int, int] | None = None
    for i in range(len(names)):
        for j in range(len(names)):
            v = matrix[i][j]
            if i != j and v is not None and (best is None or v < best[0]):
                best = (v, i, j)
    if best is not None:
        pair = {"from": names[best[1]], "to": names[best[2]], "gbps": round(best[0], 4)}
    return node, pair


# ----------------------------------------------------------------------------------- the run


@dataclass
class _State:
    env: LaunchEnv
    backend: str
    mode: str
    deadline_s: float
    started: float = field(default_factory=time.monotonic)
    phase: str = "start"
    errors: list[dict[str, str]] = field(default_factory=list)
    document: dict[str, Any] | None = None
    output_lock: threading.Lock = field(default_factory=threading.Lock)


def _base_document(state: _State) -> dict[str, Any]:
    env = state.env
    return {
        "schema": PROBE_SCHEMA,
        "probe": "fabric",
        "mode": state.mode,
        "params": {
            "backend": state.backend,
            "world": env.world,
            "launcher": env.launcher,
            "master": f"{env.master_addr}:{env.master_port}",
        },
        "deadline_s": state.deadline_s,
        "wall_s": None,
        "ok": False,
        "measurements": {"collectives": []},
        "fabric": {},
        "errors": [],
        "info": {},
    }


def _store_client(env: LaunchEnv, timeout_s: float, is_master: bool, **kwargs: Any) -> Any:
    import torch.distributed as dist

    return dist.TCPStore(
        env.master_addr,
        env.master_port,
        env.world,
        is_master,
        timeout=timedelta(seconds=timeout_s),
        wait_for_workers=False,
        **kwargs,
    )


GO_GRACE_S = 5.0
"""How much longer than its own join timeout a rank waits for rank 0's verdict (rank 0 may
have started a little later)."""


def _listening_socket(addr: str, port: int) -> socket.socket | None:
    """A socket listening on MASTER_ADDR only, when that is an IP address (or ``localhost``);
    ``None`` for a host name, which other nodes may resolve to another of this host's
    addresses than this one does (a ``127.0.1.1`` line in ``/etc/hosts``): then the store
    listens on every interface, as torchrun's does."""
    host = "127.0.0.1" if addr == "localhost" else addr
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        return None
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
    except OSError:
        sock.close()
        raise
    return sock


def _master_store(env: LaunchEnv, timeout_s: float) -> tuple[Any, str]:
    """The store rank 0 hosts, and where it listens."""
    try:
        sock = _listening_socket(env.master_addr, env.master_port)
    except OSError as exc:
        raise _Stop(
            "error",
            f"rank 0 could not listen on {env.master_addr}:{env.master_port} ({exc.strerror})",
        ) from None
    if sock is None:
        store = _store_client(env, timeout_s, True)
        return store, f"all interfaces, port {env.master_port} (MASTER_ADDR is a host name)"
    try:
        store = _store_client(env, timeout_s, True, master_listen_fd=sock.fileno())
    except TypeError:  # torch without master_listen_fd: it binds every interface itself
        sock.close()
        store = _store_client(env, timeout_s, True)
        return store, f"all interfaces, port {env.master_port} (this torch cannot be told)"
    sock.detach()  # the store owns the descriptor now
    return store, f"{env.master_addr}:{env.master_port} only"


def _wait_for_port(addr: str, port: int, deadline: float) -> bool:
    """True once ``addr:port`` accepts a TCP connection; False at ``deadline``. (The store's own
    connect retries once more after its timeout: it would wait twice the join timeout.)"""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            with socket.create_connection((addr, port), timeout=min(1.0, left)):
                return True
        except OSError:
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))


# ---------------------------------------------------------------------------- signals

_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, name)
)


def _watch_signals(state: _State, progress: Callable[[str], None]) -> Any:
    """SIGTERM, SIGHUP and SIGINT end this rank at once with one line and 143 / 129 / 130,
    even while the main thread waits inside torch (a store read, a collective): the signals
    are blocked in every thread and taken by one that does nothing else. A ``-o`` file being
    written is finished first (never left half-written, nor its temporary file). Returns what
    restores the signal mask."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)

    def wait() -> None:
        signum = signal.sigwait(_SIGNALS)
        with state.output_lock:
            name = signal.Signals(signum).name
            progress(
                f"pcidoc: fabric rank {state.env.rank}: interrupted by {name} during {state.phase}"
            )
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os._exit(128 + signum)

    threading.Thread(target=wait, name="pcidoc-fabric-signals", daemon=True).start()
    return lambda: signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def fabric_command(
    args: Any,
    progress: Callable[[str], None],
    environ: Mapping[str, str] | None = None,
    stdout: Any = None,
) -> int:
    """``pcidoc probe fabric`` on one rank; rank 0 prints the document. Returns the exit code."""
    out = stdout or sys.stdout
    env = launch_env(os.environ if environ is None else environ)
    mode = getattr(args, "mode", None) or "quick"
    deadline = float(getattr(args, "timeout", None) or DEFAULT_DEADLINE_S[mode])
    if deadline <= 0:
        raise PcidocError("--timeout must be positive")
    # Signals first: threads torch starts inherit the blocked mask, so none of them can take
    # a SIGTERM and let it kill the process without a word.
    state = _State(env=env, backend="", mode=mode, deadline_s=deadline, phase="start-up")
    restore_signals = _watch_signals(state, progress)
    try:
        try:
            torch = torch_module()
        except ImportError:
            raise PcidocError("probe fabric needs torch (`pip install torch`)") from None
        state.started = time.monotonic()  # the deadline counts from here, as before
        cuda = bool(torch.cuda.is_available())
        state.backend = getattr(args, "backend", None) or ("nccl" if cuda else "gloo")
        if state.backend == "nccl" and not cuda:
            raise PcidocError("--backend nccl needs CUDA GPUs; use --backend gloo on CPU")
        for option in ("gpus", "ranks"):
            if getattr(args, option, None) and env.rank == 0:
                progress(
                    f"pcidoc: note: --{option} does not apply to probe fabric (the launcher "
                    "decides the ranks; each uses GPU LOCAL_RANK)"
                )
        return _run_rank(state, torch, args, progress, out)
    finally:
        restore_signals()


def _run_rank(
    state: _State, torch: Any, args: Any, progress: Callable[[str], None], out: Any
) -> int:
    env = state.env
    say = progress if env.rank == 0 else (lambda _m: None)
    watchdog = threading.Thread(
        target=_watchdog, args=(state, args, progress, out), name="pcidoc-fabric-deadline"
    )
    watchdog.daemon = True
    watchdog.start()
    document = _base_document(state)
    state.document = document
    try:
        _FabricRun(state, torch, document, say).run()
    except _Stop as stop:
        document["errors"].append({"probe": "fabric", "kind": stop.kind, "message": stop.message})
        if env.rank != 0:
            progress(f"pcidoc: fabric rank {env.rank}: {stop.message}")
            return int(ExitCode.BAD_INPUT)
    except Exception as exc:  # a rank failing mid-collective: name it, no traceback
        message = f"rank {env.rank} ({socket.gethostname()}): {type(exc).__name__}: {exc}"
        document["errors"].append({"probe": "fabric", "kind": "error", "message": message[:500]})
        if env.rank != 0:
            progress(f"pcidoc: fabric: {message[:500]}")
            return int(ExitCode.BAD_INPUT)
    finally:
        state.phase = "done"
    if env.rank != 0:
        return int(ExitCode.OK)
    return _finish(state, document, args, progress, out)


def _finish(
    state: _State, document: dict[str, Any], args: Any, progress: Callable[[str], None], out: Any
) -> int:
    document["wall_s"] = round(time.monotonic() - state.started, 2)
    document["ok"] = not document["errors"]
    text = json.dumps(document, indent=2) + "\n"
    output = getattr(args, "output", None)
    with state.output_lock:  # a signal waits for the file, never leaves half of it
        if output:
            from pcidoc.collect.capture import write_atomic

            write_atomic(output, text)
            progress(f"pcidoc: wrote {output}")
        out.write(text)
        out.flush()
    if not getattr(args, "json", False):
        for line in render_lines(document):
            progress(line)
    for error in document["errors"]:
        progress(f"pcidoc: fabric: {error['message']}")
    return int(ExitCode.OK) if document["ok"] else int(ExitCode.BAD_INPUT)


class _Stop(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _watchdog(state: _State, args: Any, progress: Callable[[str], None], out: Any) -> None:
    """End this rank when the deadline passes; rank 0 first prints what it has, naming the
    ranks that had not reached its phase."""
    while state.phase != "done":
        left = state.deadline_s - (time.monotonic() - state.started)
        if left <= 0:
            break
        time.sleep(min(0.2, left))
    if state.phase == "done":
        return
    message = f"deadline of {state.deadline_s:g} s passed during {state.phase}"
    if state.env.rank == 0 and state.document is not None:
        lagging = _lagging_ranks(state)
        if lagging:
            message += f"; ranks not at this phase: {lagging}"
        state.document["errors"].append({"probe": "fabric", "kind": "timeout", "message": message})
        with contextlib.suppress(Exception):  # leaving is what matters now
            _finish(state, state.document, args, progress, out)
    else:
        progress(f"pcidoc: fabric rank {state.env.rank}: {message}")
    sys.stderr.flush()
    os._exit(int(ExitCode.BAD_INPUT))


def _lagging_ranks(state: _State) -> str:
    try:
        store = _store_client(state.env, 2.0, False)
        behind = []
        for rank in range(state.env.world):
            key = f"{state.env.run_id}/phase/{rank}"
            current = store.get(key).decode() if store.check([key]) else "not joined"
            if current != state.phase:
                behind.append(f"{rank} ({current})")
        return ", ".join(behind[:20])
    except Exception:
        return ""


class _FabricRun:
    """One rank's phases, in the order every rank runs them (the module docstring); rank 0
    fills the document."""

    def __init__(
        self, state: _State, torch: Any, document: dict[str, Any], say: Callable[[str], None]
    ) -> None:
        import torch.distributed as dist

        self.state, self.torch, self.dist = state, torch, dist
        self.document, self.say = document, say
        self.env = state.env
        self.prefix = f"{self.env.run_id}/"
        self.join_timeout = max(5.0, min(120.0, state.deadline_s / 2))
        self.pg_timeout = timedelta(seconds=max(10.0, min(300.0, state.deadline_s)))
        self.store: Any = None

    def run(self) -> None:
        self._join()
        self._nodes()
        self._init_group()
        try:
            self._measure()
        finally:
            self.dist.destroy_process_group()

    def phase(self, name: str) -> None:
        self.state.phase = name
        with contextlib.suppress(Exception):  # the deadline handles a store that went away
            self.store.set(f"{self.prefix}phase/{self.env.rank}", name)
        self.say(f"pcidoc: fabric: {name}")

    # 1. join --------------------------------------------------------------------------

    def _join(self) -> None:
        env, prefix = self.env, self.prefix
        self.state.phase = "join"
        deadline = time.monotonic() + self.join_timeout
        self.store = self._connect(deadline)
        identity = {
            "rank": env.rank,
            "hostname": socket.gethostname(),
            "node_rank": env.node_rank,
            "local_rank": env.local_rank,
        }
        self.store.set(f"{prefix}join/{env.rank}", json.dumps(identity))
        self.phase("join")
        if env.rank == 0:
            self._wait_for_joins(deadline)
        else:
            self._wait_for_go(deadline)
        self.members = [json.loads(self.store.get(f"{prefix}join/{r}")) for r in range(env.world)]
        self.store.set_timeout(self.pg_timeout)

    def _connect(self, deadline: float) -> Any:
        """The rendezvous store: rank 0 hosts it (unless torchrun's agent does), listening on
        MASTER_ADDR only; the others connect once it accepts, within the join timeout."""
        env = self.env
        if env.rank == 0 and not env.agent_store:
            store, where = _master_store(env, self.join_timeout)
            self.document["info"]["store_listens_on"] = where
            return store
        where = f"{env.master_addr}:{env.master_port}"
        if not _wait_for_port(env.master_addr, env.master_port, deadline):
            raise _Stop(
                "timeout",
                f"rank {env.rank} could not reach the rendezvous store at {where} within "
                f"{self.join_timeout:g} s",
            )
        try:
            return _store_client(env, max(1.0, deadline - time.monotonic()), False)
        except Exception as exc:
            raise _Stop(
                "error",
                f"rank {env.rank} could not reach the rendezvous store at {where} "
                f"({type(exc).__name__}: {str(exc)[:200]})",
            ) from None

    def _wait_for_joins(self, deadline: float) -> None:
        env, store, prefix = self.env, self.store, self.prefix
        missing = list(range(env.world))
        while missing:
            missing = [r for r in missing if not store.check([f"{prefix}join/{r}"])]
            if not missing or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        if not missing:
            store.set(f"{prefix}go", "go")
            return
        names = []
        for r in missing[:20]:
            where = env.expected_node(r)
            names.append(f"rank {r}" + (f" on {where}" if where else ""))
        more = f" and {len(missing) - 20} more" if len(missing) > 20 else ""
        message = (
            f"{len(missing)} of {env.world} ranks never joined within {self.join_timeout:g} s: "
            + ", ".join(names)
            + more
        )
        store.set(f"{prefix}go", "abort:" + message)
        self.document["fabric"]["missing_ranks"] = missing
        raise _Stop("timeout", message)

    def _wait_for_go(self, deadline: float) -> None:
        # Rank 0 decides at its own join deadline; a rank that started a little earlier waits
        # a little past its own.
        left = deadline - time.monotonic() + GO_GRACE_S
        self.store.set_timeout(timedelta(seconds=max(1.0, left)))
        try:
            verdict = self.store.get(f"{self.prefix}go").decode()
        except Exception:
            raise _Stop("timeout", "rank 0 never started the run") from None
        if verdict.startswith("abort:"):
            raise _Stop("timeout", verdict[len("abort:") :])

    # nodes ------------------------------------------------------------------------------

    def _nodes(self) -> None:
        members = self.members

        def node_key(m: dict[str, Any]) -> tuple[int, str]:
            return (m["node_rank"] if m["node_rank"] is not None else -1, m["hostname"])

        keys = sorted({node_key(m) for m in members})
        host_count: dict[str, int] = {}
        for _nr, host in keys:
            host_count[host] = host_count.get(host, 0) + 1
        self.keys = keys
        self.names = [host if host_count[host] == 1 else f"{host}#{nr}" for nr, host in keys]
        self.ranks_of = [sorted(m["rank"] for m in members if node_key(m) == key) for key in keys]
        self.my_node = next(i for i, ranks in enumerate(self.ranks_of) if self.env.rank in ranks)
        self.leaders = [ranks[0] for ranks in self.ranks_of]
        self.document["fabric"]["nodes"] = [
            {
                "name": self.names[i],
                "hostname": keys[i][1],
                "node_rank": None if keys[i][0] < 0 else keys[i][0],
                "ranks": self.ranks_of[i],
                "leader": self.leaders[i],
            }
            for i in range(len(keys))
        ]
        self.document["params"]["nodes"] = len(keys)

    # 2. process group -------------------------------------------------------------------

    def _init_group(self) -> None:
        from pcidoc.probes.distributed import WorkerContext, init_process_group
        from pcidoc.probes.params import COLLECTIVE, CollectiveParams

        torch, dist, state, env = self.torch, self.dist, self.state, self.env
        self.phase("init_process_group")
        if state.backend == "nccl":
            # With one GPU visible per task (srun --gpus-per-task=1) every rank uses device 0.
            ordinal = env.local_rank % max(1, torch.cuda.device_count())
            torch.cuda.set_device(ordinal)
            device = torch.device("cuda", ordinal)
        else:
            device = torch.device("cpu")
            torch.set_num_threads(1)
        init_process_group(
            dist,
            device if state.backend == "nccl" else None,
            backend=state.backend,
            store=dist.PrefixStore(f"{self.prefix}pg", self.store),
            rank=env.rank,
            world_size=env.world,
            timeout=self.pg_timeout,
        )
        self.base = COLLECTIVE[(state.backend, state.mode)]
        self.fp = PARAMS[(state.backend, state.mode)]
        base, fp = self.base, self.fp
        self.p = CollectiveParams(
            fp.sizes, base.warmup, base.min_iters, base.max_iters, base.target_s
        )
        self.ctx = WorkerContext(
            rank=env.rank,
            world=env.world,
            backend=state.backend,
            torch=torch,
            dist=dist,
            device=device,
            params={"probe": "fabric"},
            members={},
            groups={},
            meta=None,
            send=lambda _m: None,
        )

    # 3-6. measurements --------------------------------------------------------------------

    def _measure(self) -> None:
        self._all_ranks()
        self._intra_node()
        matrix = self._pairs()
        candidates = self._bisection()
        if self.env.rank == 0:
            self._conclude(matrix, candidates)
        self.phase("finish")
        self.ctx.barrier(None)

    def _collective(self, rows: list[dict[str, Any]], ranks: int, scope: str) -> dict[str, Any]:
        from pcidoc.probes.allreduce import measurement_from_rows

        measurement, extra = measurement_from_rows(rows, ranks, self.state.backend, [])
        measurement["source"] = "probe:fabric"
        measurement["nccl_env"] = nccl_settings(os.environ)
        extra["scope"] = scope
        return {**measurement, "extra": extra}

    def _all_ranks(self) -> None:
        from pcidoc.probes.allreduce import time_allreduce

        env = self.env
        self.phase("all_reduce across all ranks")
        rows = time_allreduce(self.ctx, None, env.world, env.rank, self.p, list(self.fp.sizes))
        if env.rank == 0:
            record = self._collective(rows, env.world, "all ranks")
            record["nodes"] = len(self.keys)
            self.document["measurements"]["collectives"].append(record)

    def _intra_node(self) -> None:
        from pcidoc.probes.allreduce import time_allreduce

        env, dist, store, prefix = self.env, self.dist, self.store, self.prefix
        self.phase("intra-node all_reduce")
        node_groups = [dist.new_group(ranks=r, timeout=self.pg_timeout) for r in self.ranks_of]
        mine = self.ranks_of[self.my_node]
        if len(mine) > 1:
            rows = time_allreduce(
                self.ctx,
                node_groups[self.my_node],
                len(mine),
                mine.index(env.rank),
                self.p,
                list(self.fp.sizes),
            )
            if env.rank == mine[0]:
                store.set(f"{prefix}intra/{self.my_node}", json.dumps(rows))
        self.ctx.barrier(None)
        if env.rank != 0:
            return
        skipped = []
        for i, ranks in enumerate(self.ranks_of):
            if len(ranks) < 2:
                skipped.append(self.names[i])
                continue
            record = self._collective(
                json.loads(store.get(f"{prefix}intra/{i}")), len(ranks), f"node {self.names[i]}"
            )
            record["extra"]["node"] = self.names[i]
            self.document["measurements"]["collectives"].append(record)
        if skipped:
            self.document["info"]["intra_node_not_measured"] = (
                f"one rank on {len(skipped)} node(s) ({', '.join(skipped[:10])}): "
                "intra-node bus bandwidth needs two ranks on a node"
            )

    def _pairs(self) -> list[list[float | None]]:
        env, store, prefix, leaders = self.env, self.store, self.prefix, self.leaders
        rounds = round_robin(len(self.keys))
        self.phase(f"node-pair bandwidth ({len(rounds)} round(s))")
        for number, pairs in enumerate(rounds):
            self.ctx.barrier(None)
            for a, b in pairs:
                if env.rank in (leaders[a], leaders[b]):
                    _pair(self.ctx, store, prefix, number, a, b, leaders, self.fp)
        self.ctx.barrier(None)
        matrix: list[list[float | None]] = [[None] * len(self.keys) for _ in self.keys]
        if env.rank != 0:
            return matrix
        names, records = self.names, []
        for number, pairs in enumerate(rounds):
            for a, b in pairs:
                ab = float(store.get(f"{prefix}pair/{a}/{b}").decode())
                ba = float(store.get(f"{prefix}pair/{b}/{a}").decode())
                matrix[a][b], matrix[b][a] = round(ab, 4), round(ba, 4)
                records.append(
                    {
                        "a": names[a],
                        "b": names[b],
                        "round": number,
                        "a_to_b_gbps": round(ab, 4),
                        "b_to_a_gbps": round(ba, 4),
                    }
                )
        fabric = self.document["fabric"]
        fabric["pair_matrix"] = {
            "nodes": names,
            "unit": "GB/s",
            "direction": "row -> column, node leader to node leader",
            "size_bytes": self.fp.pair_bytes,
            "values": matrix,
        }
        fabric["pairs"] = records
        fabric["rounds"] = len(rounds)
        return matrix

    def _bisection(self) -> list[int]:
        candidates = list(range(len(self.keys)))
        self.steps: list[dict[str, Any]] = []
        if len(self.keys) < 4:
            return candidates
        self.phase("bisection")
        step = 0
        while len(candidates) > 3:
            candidates = self._bisect_step(step, candidates)
            step += 1
        return candidates

    def _bisect_step(self, step: int, candidates: list[int]) -> list[int]:
        """The leaders of each half all-reduce at once; the slower half is kept."""
        from pcidoc.probes.allreduce import measurement_from_rows, time_allreduce
        from pcidoc.probes.params import CollectiveParams

        env, dist, store, prefix, fp, base = (
            self.env, self.dist, self.store, self.prefix, self.fp, self.base
        )  # fmt: skip
        single = CollectiveParams(
            (fp.bisect_bytes,), base.warmup, base.min_iters, base.max_iters, base.target_s
        )
        half = len(candidates) // 2
        halves = [candidates[:half], candidates[half:]]
        groups = [
            dist.new_group(ranks=[self.leaders[n] for n in h], timeout=self.pg_timeout)
            for h in halves
        ]
        self.ctx.barrier(None)
        for k, h in enumerate(halves):
            ranks = [self.leaders[n] for n in h]
            if env.rank in ranks:
                rows = time_allreduce(
                    self.ctx, groups[k], len(ranks), ranks.index(env.rank), single,
                    [fp.bisect_bytes],
                )  # fmt: skip
                if env.rank == ranks[0]:
                    store.set(f"{prefix}bisect/{step}/{k}", json.dumps(rows))
        self.ctx.barrier(None)
        key = f"{prefix}bisect/{step}/keep"
        if env.rank == 0:
            busbw = []
            for k, h in enumerate(halves):
                row = json.loads(store.get(f"{prefix}bisect/{step}/{k}"))[0]
                m, _e = measurement_from_rows([row], len(h), self.state.backend, [])
                busbw.append(m["rows"][0]["busbw_gbps"])
            keep = halves[0] if (busbw[0] or 0) <= (busbw[1] or 0) else halves[1]
            self.steps.append(
                {
                    "step": step,
                    "halves": [[self.names[n] for n in h] for h in halves],
                    "busbw_gbps": busbw,
                    "kept": [self.names[n] for n in keep],
                }
            )
            store.set(key, json.dumps(keep))
        return [int(n) for n in json.loads(store.get(key))]

    def _conclude(self, matrix: list[list[float | None]], candidates: list[int]) -> None:
        document, names, count = self.document, self.names, len(self.keys)
        document["fabric"]["bisection"] = self.steps
        if count < 4:
            document["info"]["bisection"] = "not needed below 4 nodes: the pair matrix decides"
        node, pair = slowest(names, matrix, [names[n] for n in candidates])
        document["fabric"]["slowest_node"] = node
        document["fabric"]["slowest_pair"] = pair
        if count < 2:
            document["info"]["pairs"] = "one node: no node-to-node bandwidth to measure"
        elif count == 2:
            document["info"]["slowest_node"] = (
                "two nodes share their one pair: a slow pair cannot be attributed to either "
                "node (run with a third node to tell them apart)"
            )


def _pair(
    ctx: Any,
    store: Any,
    prefix: str,
    number: int,
    a: int,
    b: int,
    leaders: list[int],
    fp: FabricParams,
) -> None:
    """Both directions between the leaders of nodes ``a`` and ``b``; each receiver... each
    sender stores its direction's GB/s."""
    torch, dist = ctx.torch, ctx.dist
    buffer = torch.ones(fp.pair_bytes // 4, dtype=torch.float32, device=ctx.device)
    ack = torch.zeros(1, dtype=torch.float32, device=ctx.device)
    me = ctx.rank

    def one_way(src: int, dst: int, iters: int) -> float | None:
        if me == src:
            ctx.sync()
            start = time.perf_counter()
            for _ in range(iters):
                dist.send(buffer, dst=dst)
            dist.recv(ack, src=dst)
            ctx.sync()
            return time.perf_counter() - start
        for _ in range(iters):
            dist.recv(buffer, src=src)
        ctx.sync()
        dist.send(ack, dst=src)
        return None

    for src, dst, node_from, node_to in (
        (leaders[a], leaders[b], a, b),
        (leaders[b], leaders[a], b, a),
    ):
        one_way(src, dst, 1)  # warm-up: connection set-up is not bandwidth
        elapsed = one_way(src, dst, fp.pair_iters)
        if elapsed is not None:
            gbps = fp.pair_bytes * fp.pair_iters / elapsed / 1e9
            store.set(f"{prefix}pair/{node_from}/{node_to}", str(gbps))


def render_lines(document: dict[str, Any]) -> list[str]:
    """Human summary of a fabric document (stderr)."""
    lines = []
    fabric = document.get("fabric", {})
    nodes = fabric.get("nodes", [])
    lines.append(
        f"fabric: {len(nodes)} node(s), {document['params']['world']} rank(s), "
        f"{document['params']['backend']}"
    )
    for c in document["measurements"].get("collectives", []):
        peak = max((r.get("busbw_gbps") or 0.0 for r in c.get("rows", [])), default=0.0)
        scope = c.get("extra", {}).get("scope", "")
        lines.append(f"  all_reduce {scope}: {c['ranks']} ranks, peak busbw {peak:.3f} GB/s")
    matrix = fabric.get("pair_matrix")
    if matrix and len(matrix["nodes"]) > 1:
        lines.append("  node-pair GB/s (row -> column):")
        for name, row in zip(matrix["nodes"], matrix["values"], strict=False):
            cells = " ".join("   -   " if v is None else f"{v:7.3f}" for v in row)
            lines.append(f"    {name[:20]:<20} {cells}")
    node = fabric.get("slowest_node")
    if node:
        flag = "SLOW" if node["significant"] else "within the spread"
        lines.append(
            f"  slowest node: {node['name']} {node['median_pair_gbps']} GB/s vs others "
            f"{node['others_median_gbps']} GB/s ({flag})"
        )
    pair = fabric.get("slowest_pair")
    if pair:
        lines.append(f"  slowest pair: {pair['from']} -> {pair['to']} {pair['gbps']} GB/s")
    return lines

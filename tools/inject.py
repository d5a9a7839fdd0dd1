#!/usr/bin/env python3
"""Make a real distributed job fail on purpose, for ``pcidoc explain`` to explain.

Runs a small data-parallel training loop with ``torch.distributed`` on CPU (gloo), one process
per rank, launched like ``torchrun`` (``--launcher torchrun``: the real torchrun, one agent per
node) or like ``srun -l`` / ``mpirun --tag-output`` / Ray Train (the harness's own launcher,
which writes those launchers' line prefixes and exit lines). One rank, the victim, misbehaves at
a chosen step:

* ``hang``: it stops before its collective (stuck in data loading, or a deadlock);
* ``die``: it is killed (SIGKILL as the OOM killer does, SIGSEGV) or raises an application error;
* ``slow``: it computes for longer at every step from then on (a straggler; the job finishes);
* ``mismatch``: it calls another collective than its peers (``op``), leaves the loop early
  (``count``: one batch fewer), or reduces a tensor of another size (``shape``, only on request:
  without ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` nothing says which rank it was);
* ``xid``, ``aer``, ``link``, ``iommu``: hardware-caused variants. The victim hangs (``link``:
  it slows down), and the victim node's kernel log gets a real excerpt from
  ``../shared/realdata-evidence/kernel-log`` (read at run time, never copied into the project),
  re-addressed to the victim's GPU bus id (and upstream port) and timed just before the victim
  stopped. Each node then also gets a ``pcidoc capture`` stand-in (a bundled synthetic sample
  with the node's hostname) that maps its CUDA devices to bus ids.

What the job leaves goes to ``--out DIR`` as a real job leaves it: the launcher's console log
(every line prefixed with the rank as that launcher prints it), per-rank log files for some
layouts, torch's own timeout and error messages as gloo prints them, the launcher's exit lines,
per-node folders for ``--nodes`` > 1 and, with ``--flight-recorder``, the flight-recorder
dumps the job wrote. torch 2.13 records gloo collectives in its flight recorder but writes a dump
only for NCCL on its own, so without ``--flight-recorder`` there is none (the option makes the
job call torch's dump itself when a collective fails). Nodes other than the first get their
clock set off by a few seconds (every timestamp of their files is shifted) unless
``--no-skew``. The ground truth goes ONLY to ``--truth FILE``, outside DIR.

    python tools/inject.py --ranks 4 --fault hang --victim 2 --out /tmp/job --truth /tmp/t.json
    python tools/inject.py --ranks 8 --nodes 2 --fault xid --victim 5 --seed 3 --out ... --truth ...
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import selectors
import shutil
import signal
import socket
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "realdata-evidence" / "kernel-log"
TRUTH_SCHEMA = "pcidoc.inject-truth/1"

FAULTS = ("none", "hang", "die", "slow", "mismatch", "xid", "aer", "link", "iommu")
LAUNCHERS = ("torchrun", "slurm", "mpi", "ray")
VARIANTS = {
    "none": ("none",),
    "hang": ("sleep", "deadlock"),
    "die": ("sigkill", "sigsegv", "exception"),
    "slow": ("sleep",),
    "mismatch": ("op", "count"),
    "xid": ("xid145", "fallen-off-bus"),
    "aer": ("aer-fatal",),
    "link": ("aer-correctable",),
    "iommu": ("amd-vi",),
}
EXTRA_VARIANTS = {"mismatch": ("shape",)}
"""Variants run only when asked for with ``--variant``."""
CAUSE = {
    "none": None,
    "hang": "hang",
    "die": "died",
    "slow": "slow",
    "mismatch": "mismatch",
    "xid": "xid",
    "aer": "link",
    "link": "link",
    "iommu": "iommu",
}
"""The cause ``pcidoc explain`` should name for each fault."""
KERNEL_EXCERPTS = {
    "xid145": "xid145-xid137-nvlink-rlw-link11-b200-redacted-pci-nccl-2241.txt",
    "fallen-off-bus": "fallen-off-bus-multiline-no-xid-b3-probe-failed-open-570-nvsentinel-155.txt",
    "aer-fatal": "aer-uncorrected-fatal-cmpltto-sdes-root-port-reset-gpu-03-hardware-"
    "returnn-1500.txt",
    "aer-correctable": "aer-correctable-dll-timeout-badtlp-amd-root-port-03.1-desktop-"
    "pop-os-3363.txt",
    "amd-vi": "amd-vi-io-page-fault-07-p2p-samples-crash-iommu-on-cuda-samples-48.txt",
}
BENIGN_EXCERPT = "rtx-pro-6000-x8-pex890xx-clean-boot-iommu-off-aer-firmware-first-rtx6kpro.txt"
NODE_PREFIXES = ("gpu", "node", "dgx", "hgx", "trn", "cn")
JOB_NAMES = ("train", "pretrain", "finetune", "ddp")


class HarnessError(Exception):
    """A usage error or a job that could not be run (one line, exit 3)."""


# ------------------------------------------------------------------------------------ plan


def _split(ranks: int, nodes: int) -> list[list[int]]:
    """Contiguous global ranks per node, as evenly as possible (as torchrun and srun place
    them)."""
    per, extra = divmod(ranks, nodes)
    out, start = [], 0
    for node in range(nodes):
        count = per + (1 if node < extra else 0)
        out.append(list(range(start, start + count)))
        start += count
    return out


def _node_names(rng: random.Random, nodes: int) -> list[str]:
    prefix = rng.choice(NODE_PREFIXES)
    first = rng.randrange(1, 90)
    letter = rng.choice("abcdefgh")
    return [f"{prefix}-{letter}{first + i:02d}" for i in range(nodes)]


def make_plan(args: argparse.Namespace) -> dict[str, Any]:
    """Everything the run decides up front, from the arguments and the seed."""
    rng = random.Random(args.seed)
    steps = args.steps
    at_step = args.at_step if args.at_step is not None else rng.randrange(2, max(3, steps - 2))
    if not 1 <= at_step <= steps:
        raise HarnessError(f"--at-step {at_step}: must be between 1 and --steps {steps}")
    variants = VARIANTS[args.fault] + EXTRA_VARIANTS.get(args.fault, ())
    variant = args.variant or rng.choice(VARIANTS[args.fault])
    if variant not in variants:
        raise HarnessError(f"--variant {variant}: {args.fault} has {', '.join(variants)}")
    names = _node_names(rng, args.nodes)
    placement = _split(args.ranks, args.nodes)
    launcher = args.launcher or rng.choice(LAUNCHERS)
    if launcher == "torchrun" and args.ranks % args.nodes:
        launcher = "slurm"  # torchrun starts the same number of ranks on every node
    skew = [0.0] + [round(rng.uniform(-20.0, 20.0), 3) for _ in range(args.nodes - 1)]
    if args.no_skew:
        skew = [0.0] * args.nodes
    hardware = args.fault in ("xid", "aer", "link", "iommu")
    return {
        "ranks": args.ranks,
        "nodes": names,
        "placement": placement,
        "fault": args.fault,
        "variant": variant,
        "victim": args.victim,
        "at_step": at_step,
        "steps": steps,
        "timeout_s": args.timeout,
        "base_ms": 40.0,
        "lag_ms": round(rng.uniform(160.0, 320.0), 1),
        "launcher": launcher,
        "layout": rng.choice(("console", "per-rank")),
        "job": rng.choice(JOB_NAMES),
        "jobid": rng.randrange(100000, 999999),
        "skew_s": skew,
        "kernel_logs": hardware or rng.random() < 0.5,
        "captures": hardware or rng.random() < 0.3,
        "flight_recorder": bool(args.flight_recorder),
        "debug_detail": bool(args.debug_detail),
        "seed": args.seed,
        "hw_lead_s": round(rng.uniform(0.3, 1.5), 3),
    }


def node_of(plan: dict[str, Any], rank: int) -> int:
    """Index of the node that runs ``rank``."""
    return next(i for i, ranks in enumerate(plan["placement"]) if rank in ranks)


# ---------------------------------------------------------------------------- the job itself


def _job_logger(rank: int) -> Any:
    import logging

    logger = logging.getLogger(f"train.rank{rank}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger


def _victim_acts(plan: dict[str, Any], rank: int, step: int) -> bool:
    return plan["fault"] != "none" and rank == plan["victim"] and step >= plan["at_step"]


def _record_fault_time(private: str) -> None:
    """The moment the victim misbehaved, for the kernel-log excerpt (outside the job's folder)."""
    path = Path(private) / "fault_time.json"
    if not path.exists():
        path.write_text(json.dumps({"time": time.time()}), encoding="utf-8")


def _wait_for_data(variant: str) -> None:
    """A hang: the rank never reaches its next collective."""
    if variant == "deadlock":
        import threading

        lock = threading.Lock()
        lock.acquire()
        lock.acquire()  # never returns
    while True:
        time.sleep(3600)


def _decode_batch(variant: str, step: int) -> None:
    if variant == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if variant == "sigsegv":
        os.kill(os.getpid(), signal.SIGSEGV)
    raise ValueError(f"corrupt record in shard {17 + step} (batch {step}): cannot decode sample")


def _next_batch(plan: dict[str, Any], rank: int, step: int, private: str) -> None:
    """What the victim does at the start of a step (hangs and deaths)."""
    if not _victim_acts(plan, rank, step):
        return
    fault, variant = plan["fault"], plan["variant"]
    if fault in ("hang", "xid", "aer", "iommu"):
        _record_fault_time(private)
        _wait_for_data(variant)
    if fault == "die":
        _record_fault_time(private)
        _decode_batch(variant, step)


def _reduce(plan: dict[str, Any], rank: int, step: int, flat: Any, private: str) -> None:
    import torch.distributed as dist  # noqa: TID251

    if _victim_acts(plan, rank, step) and plan["fault"] == "mismatch" and step == plan["at_step"]:
        _record_fault_time(private)
        if plan["variant"] == "op":
            dist.broadcast(flat, src=0)
            return
        if plan["variant"] == "shape":
            dist.all_reduce(flat[:-1].clone())
            return
    dist.all_reduce(flat)


def _dump_flight_recorder(plan: dict[str, Any], rank: int) -> None:
    """What a job that dumps torch's flight recorder on a failed collective writes (torch
    2.13 does it by itself only for NCCL). The dump is torch's own pickle."""
    import torch  # noqa: TID251

    folder = os.environ.get("INJECT_NODE_DIR", ".")
    with contextlib.suppress(Exception):
        data = getattr(torch._C._distributed_c10d, "_dump_fr_trace")()  # noqa: B009
        Path(folder, f"comm_lib_trace_rank_{rank}").write_bytes(data)


def _train_steps(plan: dict[str, Any], rank: int, log: Any, private: str) -> None:
    import torch  # noqa: TID251
    import torch.distributed as dist  # noqa: TID251

    torch.manual_seed(1234 + rank)
    model = torch.nn.Linear(32, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    # Warm-up: torch's first forward/backward initialises itself (long on a loaded machine),
    # then everyone waits for everyone on a group with a long timeout, so that a rank still
    # starting up is never mistaken for a hang.
    model(torch.randn(16, 32)).pow(2).mean().backward()
    opt.zero_grad()
    dist.barrier(group=dist.new_group(backend="gloo", timeout=timedelta(seconds=120)))
    world = int(os.environ["WORLD_SIZE"])
    last = plan["steps"]
    if plan["fault"] == "mismatch" and plan["variant"] == "count" and rank == plan["victim"]:
        last = plan["at_step"] - 1  # its shard is one batch short
    for step in range(1, last + 1):
        t0 = time.perf_counter()
        _next_batch(plan, rank, step, private)
        x = torch.randn(16, 32)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        extra = plan["lag_ms"] if plan["fault"] in ("slow", "link") else 0.0
        if extra and _victim_acts(plan, rank, step):
            _record_fault_time(private)
        time.sleep((plan["base_ms"] + (extra if _victim_acts(plan, rank, step) else 0.0)) / 1e3)
        t1 = time.perf_counter()
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        flat = torch.cat([g.flatten() for g in grads])
        _reduce(plan, rank, step, flat, private)
        t2 = time.perf_counter()
        offset = 0
        for grad in grads:
            grad.copy_(flat[offset : offset + grad.numel()].view_as(grad) / world)
            offset += grad.numel()
        opt.step()
        log.info(
            "step %d/%d loss %.4f compute_ms %.1f allreduce_ms %.1f",
            step,
            plan["steps"],
            float(loss.detach()),
            (t1 - t0) * 1e3,
            (t2 - t1) * 1e3,
        )
    if last < plan["steps"]:
        _record_fault_time(private)
        log.info("data loader exhausted after %d batches", last)


def worker_main() -> int:
    """One rank of the job (run by the launcher with RANK, WORLD_SIZE... set)."""
    import torch.distributed as dist  # noqa: TID251

    plan = json.loads(Path(os.environ["INJECT_PLAN"]).read_text(encoding="utf-8"))
    private = os.environ["INJECT_PRIVATE"]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ["LOCAL_RANK"])
    host = os.environ.get("INJECT_NODE") or socket.gethostname()
    log = _job_logger(rank)
    log.info(
        "rank %d/%d (local rank %d) on %s pid %d backend gloo",
        rank,
        world,
        local,
        host,
        os.getpid(),
    )
    dist.init_process_group("gloo", timeout=timedelta(seconds=plan["timeout_s"]))
    try:
        _train_steps(plan, rank, log, private)
        dist.barrier()
    except Exception:
        if plan["flight_recorder"]:
            _dump_flight_recorder(plan, rank)
        raise
    log.info("training finished")
    Path(private, f"finished_{rank}").touch()
    dist.destroy_process_group()
    return 0


# -------------------------------------------------------------------------------- launchers


def _prefix(plan: dict[str, Any], rank: int, local: int, stream: str, pid: int) -> str:
    width = len(str(plan["ranks"] - 1))
    launcher = plan["launcher"]
    if launcher == "slurm":
        return f"{rank:>{width}}: "
    if launcher == "mpi":
        return f"[{plan['jobid'] % 65536},{rank}]<{stream}>:"
    if launcher == "ray":
        ip = f"10.{20 + node_of(plan, rank)}.{plan['jobid'] % 200}.{11 + node_of(plan, rank)}"
        return f"(RayTrainWorker pid={pid}, ip={ip}) "
    return f"[default{local}]:"


class _Output:
    """Where the lines of one node go: the console log, and per-rank files for that layout."""

    def __init__(self, plan: dict[str, Any], folder: Path, node: int) -> None:
        self.plan, self.folder = plan, folder
        folder.mkdir(parents=True, exist_ok=True)
        name = {
            "slurm": f"slurm-{plan['jobid']}.out",
            "mpi": f"{plan['job']}.mpirun.log",
            "ray": f"{plan['job']}-ray-driver.log",
            "torchrun": f"{plan['job']}.log",
        }[plan["launcher"]]
        self.console = (folder / name).open("a", encoding="utf-8")
        self.rank_files: dict[int, Any] = {}
        if plan["layout"] == "per-rank":
            (folder / "logs").mkdir(exist_ok=True)
            for rank in plan["placement"][node]:
                path = folder / "logs" / f"rank_{rank}.log"
                self.rank_files[rank] = path.open("a", encoding="utf-8")

    def line(self, prefix: str, rank: int | None, text: str) -> None:
        self.console.write(prefix + text + "\n")
        if rank is not None and rank in self.rank_files:
            self.rank_files[rank].write(text + "\n")

    def close(self) -> None:
        self.console.close()
        for handle in self.rank_files.values():
            handle.close()


def _child(plan: dict[str, Any], rank: int, local: int, node: int, env: dict[str, str]) -> None:
    """In the forked process: become rank ``rank`` and run the job (never returns)."""
    code = 1
    try:
        os.environ.update(env)
        os.environ.update(
            RANK=str(rank),
            LOCAL_RANK=str(local),
            GROUP_RANK=str(node),
            LOCAL_WORLD_SIZE=str(len(plan["placement"][node])),
        )
        code = worker_main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


class _Rank:
    """A forked rank as the launcher sees it."""

    def __init__(self, rank: int, local: int, node: int, pid: int, fds: dict[int, str]) -> None:
        self.rank, self.local, self.node, self.pid, self.fds = rank, local, node, pid, fds
        self.status: int | None = None
        self.partial: dict[int, bytes] = {fd: b"" for fd in fds}

    @property
    def exit_code(self) -> int | None:
        """The exit code, negative for a signal (as torchrun prints it)."""
        if self.status is None:
            return None
        if os.WIFSIGNALED(self.status):
            return -os.WTERMSIG(self.status)
        return os.WEXITSTATUS(self.status)


def _fork_ranks(plan: dict[str, Any], env: dict[str, str]) -> list[_Rank]:
    ranks: list[_Rank] = []
    for node, members in enumerate(plan["placement"]):
        for local, rank in enumerate(members):
            out_r, out_w = os.pipe()
            err_r, err_w = os.pipe()
            node_env = dict(env, INJECT_NODE=plan["nodes"][node], INJECT_NODE_DIR=env[f"DIR{node}"])
            pid = os.fork()
            if pid == 0:
                os.setpgid(0, 0)
                os.dup2(out_w, 1)
                os.dup2(err_w, 2)
                for fd in (out_r, out_w, err_r, err_w):
                    os.close(fd)
                for other in ranks:
                    for fd in other.fds:
                        os.close(fd)
                _child(plan, rank, local, node, node_env)
            os.close(out_w)
            os.close(err_w)
            ranks.append(_Rank(rank, local, node, pid, {out_r: "stdout", err_r: "stderr"}))
    return ranks


def _stamp(plan: dict[str, Any]) -> str:
    return datetime.now().strftime("%Y-%m-%dT%H:%M:%S")


def _exit_lines(plan: dict[str, Any], rank: _Rank, first: bool) -> list[str]:
    """What the launcher prints about a rank that ended badly."""
    code = rank.exit_code
    host = plan["nodes"][rank.node]
    names = {-9: "Killed", -11: "Segmentation fault", -15: "Terminated", -6: "Aborted"}
    if plan["launcher"] == "slurm":
        what = names.get(code or 0, f"Exited with exit code {code}")
        lines = [f"srun: error: {host}: task {rank.rank}: {what}"]
        if first:
            lines.append("srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
        return lines
    if plan["launcher"] == "mpi":
        if code is not None and code < 0:
            sig = {-9: "9 (Killed)", -11: "11 (Segmentation fault)", -15: "15 (Terminated)"}
            return [
                f"mpirun noticed that process rank {rank.rank} with PID {rank.pid} on node "
                f"{host} exited on signal {sig.get(code, str(-code))}."
            ]
        if first:
            return [
                "-" * 74,
                "mpirun detected that one or more processes exited with non-zero status, thus "
                "causing",
                "the job to be terminated. The first process to do so was:",
                "",
                f"  Process name: [[{plan['jobid'] % 65536},1],{rank.rank}]",
                f"  Exit code:    {code}",
                "-" * 74,
            ]
    if plan["launcher"] == "ray" and code is not None and code < 0:
        # The driver's error for an actor whose process died (not one Ray stopped itself).
        ip = _prefix(plan, rank.rank, rank.local, "stdout", rank.pid).split("ip=")[1].rstrip(") ")
        return [
            "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.",
            "\tclass_name: RayTrainWorker",
            f"\tpid: {rank.pid}",
            f"\tip: {ip}",
            "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR",
        ]
    return []


TEARDOWN_GRACE_S = {"slurm": 3.0, "mpi": 1.0, "ray": 1.0, "torchrun": 0.1}
"""How long the launcher lets the other ranks end on their own after the first one failed,
before it terminates them: mpirun and Ray Train abort the job at once (within a second);
srun without --kill-on-bad-exit lets the step run until it is cancelled; torchrun checks
every 0.1 s."""


class _Forked:
    """The harness's own launcher: forks every rank of every node from this process (torch is
    imported once), prefixes their lines as the chosen launcher does, and tears the job down
    when a rank fails, as torchrun and srun do."""

    def __init__(self, plan: dict[str, Any], outputs: list[_Output], env: dict[str, str]) -> None:
        self.plan, self.outputs, self.env = plan, outputs, env
        self.ranks: list[_Rank] = []
        self.failed_at: float | None = None
        self.termed = False

    def run(self, deadline_s: float) -> dict[int, int | None]:
        import torch.distributed  # noqa: F401, TID251  (imported once, before the forks)

        self.ranks = _fork_ranks(self.plan, self.env)
        selector = selectors.DefaultSelector()
        by_fd = {}
        for rank in self.ranks:
            for fd in rank.fds:
                os.set_blocking(fd, False)
                selector.register(fd, selectors.EVENT_READ)
                by_fd[fd] = rank
        end = time.monotonic() + deadline_s
        try:
            while by_fd or any(r.status is None for r in self.ranks):
                for key, _ in selector.select(timeout=0.05):
                    self._read(key.fd, by_fd, selector)
                self._reap()
                self._teardown(time.monotonic() > end)
        finally:
            selector.close()
            self._kill_all()
        return {r.rank: r.exit_code for r in self.ranks}

    def _read(self, fd: int, by_fd: dict[int, _Rank], selector: Any) -> None:
        rank = by_fd[fd]
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        if not data:
            selector.unregister(fd)
            os.close(fd)
            del by_fd[fd]
            if rank.partial[fd]:
                self._emit(rank, fd, rank.partial[fd])
            return
        lines = (rank.partial[fd] + data).split(b"\n")
        rank.partial[fd] = lines.pop()
        for line in lines:
            self._emit(rank, fd, line)

    def _emit(self, rank: _Rank, fd: int, raw: bytes) -> None:
        text = raw.decode("utf-8", errors="replace")
        prefix = _prefix(self.plan, rank.rank, rank.local, rank.fds[fd], rank.pid)
        self.outputs[rank.node].line(prefix, rank.rank, text)

    def _reap(self) -> None:
        for rank in self.ranks:
            if rank.status is not None:
                continue
            pid, status = os.waitpid(rank.pid, os.WNOHANG)
            if pid == 0:
                continue
            rank.status = status
            if rank.exit_code:
                first = self.failed_at is None
                if first:
                    self.failed_at = time.monotonic()
                if not (self.termed and rank.exit_code == -signal.SIGTERM):
                    for line in _exit_lines(self.plan, rank, first):
                        self.outputs[rank.node].line("", None, line)

    def _teardown(self, overdue: bool) -> None:
        """SIGTERM the survivors a moment after the first failure; SIGKILL when overdue."""
        alive = [r for r in self.ranks if r.status is None]
        if not alive:
            return
        if overdue:
            self._kill_all()
            return
        if self.failed_at is not None and not self.termed:
            if time.monotonic() - self.failed_at < TEARDOWN_GRACE_S[self.plan["launcher"]]:
                return
            self.termed = True
            for rank in alive:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(rank.pid, signal.SIGTERM)
            if self.plan["launcher"] == "slurm":
                for node, output in enumerate(self.outputs):
                    output.line(
                        "",
                        None,
                        f"slurmstepd: error: *** STEP {self.plan['jobid']}.0 ON "
                        f"{self.plan['nodes'][node]} CANCELLED AT {_stamp(self.plan)} ***",
                    )
        if self.failed_at is not None and time.monotonic() - self.failed_at > 10:
            self._kill_all()

    def _kill_all(self) -> None:
        for rank in self.ranks:
            if rank.status is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(rank.pid, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    _, rank.status = os.waitpid(rank.pid, 0)


def _run_torchrun(
    plan: dict[str, Any], folders: list[Path], env: dict[str, str], port: int, deadline_s: float
) -> dict[int, int | None]:
    """One real torchrun agent per node, static rendezvous on this machine."""
    import subprocess

    procs = []
    per_node = len(plan["placement"][0])
    for node, folder in enumerate(folders):
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            f"--nnodes={len(folders)}",
            f"--node-rank={node}",
            f"--nproc-per-node={per_node}",
            "--master-addr=127.0.0.1",
            f"--master-port={port}",
            "--tee=3",
        ]
        if plan["layout"] == "per-rank":
            command.append(f"--log-dir={folder / 'torchrun-logs'}")
        command += [str(Path(__file__).resolve()), "--worker"]
        node_env = dict(env, INJECT_NODE=plan["nodes"][node], INJECT_NODE_DIR=str(folder))
        console = (folder / f"{plan['job']}.log").open("w", encoding="utf-8")
        procs.append(
            (
                subprocess.Popen(
                    command,
                    stdout=console,
                    stderr=subprocess.STDOUT,
                    env=node_env,
                    start_new_session=True,
                ),
                console,
            )
        )
    end = time.monotonic() + deadline_s
    try:
        for proc, _ in procs:
            proc.wait(timeout=max(1.0, end - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    finally:
        for proc, console in procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            console.close()
    return {}


# --------------------------------------------------------------------------- after the job


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _excerpt(name: str) -> list[str]:
    """The verbatim tool text of one corpus file (its three header lines dropped)."""
    path = CORPUS / name
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise HarnessError(
            f"{path}: the real kernel-log corpus is needed for this fault ({exc.strerror})"
        ) from None
    return [line for line in lines if not line.startswith("# ")]


_PACKAGING = re.compile(
    r"^(?:[A-Z][a-z]{2}\s+\d{1,2}\s+\d\d:\d\d:\d\d\s+\S+\s+kernel:\s?|kernel:\s?)?"
    r"(?:\[\s*(?:\+\s*)?(?P<stamp>\d+\.\d+)\]\s?)?"
)
_BUS = re.compile(r"\b(?:[0-9a-fA-F]{4}:)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])\b")


def _message_times(lines: list[str]) -> list[tuple[float | None, str]]:
    """(seconds since the excerpt's first line, message) per line; continuation lines of a
    multi-line message keep None (they are printed without a time)."""
    out: list[tuple[float | None, str]] = []
    first: float | None = None
    relative = any(re.match(r"^\[\s*\+", line) for line in lines)
    clock = 0.0
    for line in lines:
        if not line.strip():
            continue
        match = _PACKAGING.match(line)
        stamp = match["stamp"] if match else None
        message = line[match.end() :] if match else line
        if line.startswith(" ") and stamp is None:
            out.append((None, line.strip()))
            continue
        if stamp is not None:
            value = float(stamp)
            clock = clock + value if relative else value
            first = clock if first is None else first
            out.append((clock - first, message))
        else:
            out.append((0.0, message))
    return out


_DRIVER_BUS = re.compile(
    r"^(?P<driver>[\w.-]+)\s+(?P<bus>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]):"
)


def _readdress(message: str, gpu_bus: str, root_port: str | None, seen: dict[str, str]) -> str:
    """The excerpt's devices become the victim's: a function of its GPU stays that function of
    the victim's GPU, its PCIe port becomes the victim's root port. Other addresses (the host
    bridge an AER message names as its source) are kept."""
    head = _DRIVER_BUS.match(message)
    if head and head["bus"].lower() not in seen:
        original = head["bus"].lower()
        if head["driver"] == "pcieport":
            seen[original] = root_port or original
        else:
            seen[original] = gpu_bus[:-1] + original[-1]
    if not head and ("NVRM" in message or "NVIDIA" in message):
        for match in _BUS.finditer(message):
            seen.setdefault(match.group(0).lower(), gpu_bus[:-1] + match.group(3))
    for original, new in seen.items():
        message = re.sub(re.escape(original), new, message, flags=re.IGNORECASE)
    # Xid lines name the GPU without its function ("PCI:0000:3b:00"), or redacted ("PCI:...").
    return re.sub(r"PCI:(?:\.\.\.|[0-9a-fA-F:]+)(?=\))", "PCI:" + gpu_bus[:-2], message)


def _journal(when: float, skew: float, host: str, message: str) -> str:
    stamp = datetime.fromtimestamp(when + skew).strftime("%Y-%m-%dT%H:%M:%S.%f")
    return f"{stamp}{_utc_offset()} {host} kernel: {message}"


def _utc_offset() -> str:
    offset = datetime.now().astimezone().strftime("%z")
    return offset[:3] + ":" + offset[3:]


def _benign_lines(rng: random.Random) -> list[str]:
    lines = _excerpt(BENIGN_EXCERPT)
    quiet = [
        m
        for _, m in _message_times(lines)
        if not _BUS.search(m) and "Command line" not in m and m.strip()
    ]
    start = rng.randrange(0, max(1, len(quiet) - 8))
    return quiet[start : start + 6]


def write_kernel_logs(
    plan: dict[str, Any], folders: list[Path], started: float, fault_time: float | None
) -> dict[str, Any]:
    """A ``journalctl -k`` excerpt per node: quiet lines from a real boot log, and on the
    victim's node the real fault excerpt re-addressed to the victim's GPU."""
    rng = random.Random(plan["seed"] * 7 + 1)
    info: dict[str, Any] = {}
    victim_node = node_of(plan, plan["victim"])
    for node, folder in enumerate(folders):
        host, skew = plan["nodes"][node], plan["skew_s"][node]
        lines = [
            _journal(started - 600 + i * 7.3, skew, host, m)
            for i, m in enumerate(_benign_lines(rng))
        ]
        variant = plan["variant"]
        if node == victim_node and variant in KERNEL_EXCERPTS and fault_time is not None:
            lines += _fault_lines(plan, host, skew, fault_time)
            info = {"excerpt": KERNEL_EXCERPTS[variant]}
        (folder / f"journalctl-k-{host}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return info


def _fault_lines(plan: dict[str, Any], host: str, skew: float, fault_time: float) -> list[str]:
    gpu_bus, ports = victim_bus(plan)
    root_port = ports[-1] if ports else None
    seen: dict[str, str] = {}
    start = fault_time - plan["hw_lead_s"]
    out = []
    for offset, message in _message_times(_excerpt(KERNEL_EXCERPTS[plan["variant"]])):
        text = _readdress(message, gpu_bus, root_port, seen)
        if offset is None:
            out.append(" " * 15 + text)
        else:
            out.append(_journal(start + offset, skew, host, text))
    return out


def _stand_in_capture() -> Any:
    from pcidoc.samples import load_sample

    return load_sample("synthetic-16gpu")


def victim_bus(plan: dict[str, Any]) -> tuple[str, list[str]]:
    """The victim's GPU bus id and upstream ports (nearest first) in the node capture."""
    capture = _stand_in_capture()
    local = plan["placement"][node_of(plan, plan["victim"])].index(plan["victim"])
    gpu = sorted(capture.gpus, key=lambda g: g.index)[local]
    return str(gpu.bus_id), [hop.bus_id for hop in gpu.path]


def write_captures(plan: dict[str, Any], folders: list[Path]) -> None:
    """Each node's ``pcidoc capture``: a stand-in (the bundled synthetic 16-GPU sample, labelled
    synthetic) with the node's hostname, so CUDA devices map to bus ids."""
    from pcidoc.collect.capture import save_capture

    for node, folder in enumerate(folders):
        capture = _stand_in_capture()
        capture.host.hostname = plan["nodes"][node]
        capture.origin.note = (
            "inject.py stand-in for this node's `pcidoc capture` (bundled synthetic sample)"
        )
        save_capture(capture, folder / f"pcidoc-{plan['nodes'][node]}.json")


_SHIFTS = (
    (re.compile(r"\b(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)([,.]\d+)?"), "%Y-%m-%d %H:%M:%S"),
    (re.compile(r"\b(\d{4}-\d\d-\d\d_\d\d:\d\d:\d\d)()"), "%Y-%m-%d_%H:%M:%S"),
    (re.compile(r"(?<=[IWEF])(\d{4} \d\d:\d\d:\d\d)(\.\d+)?"), "%m%d %H:%M:%S"),
)


def shift_clock(folder: Path, seconds: float, year: int) -> None:
    """Shift every timestamp in the node's text files: its clock was ``seconds`` off."""
    if not seconds:
        return
    for path in folder.rglob("*"):
        if not path.is_file() or path.suffix == ".json" or path.name.startswith("comm_lib"):
            continue
        if path.name.startswith("journalctl-k-"):
            continue  # written on the node's clock already
        text = path.read_text(encoding="utf-8", errors="replace")
        for pattern, fmt in _SHIFTS:
            text = pattern.sub(_shifter(fmt, seconds, year), text)
        path.write_text(text, encoding="utf-8")


def _shifter(fmt: str, seconds: float, year: int) -> Any:
    def shift(match: re.Match[str]) -> str:
        return _shifted(match, fmt, seconds, year)

    return shift


def _shifted(match: re.Match[str], fmt: str, seconds: float, year: int) -> str:
    stamp, frac = match.group(1), match.group(2) or ""
    try:
        when = datetime.strptime(stamp.replace("T", " "), fmt)
    except ValueError:
        return match.group(0)
    if "%Y" not in fmt:
        when = when.replace(year=year)
    fraction = float("0." + frac[1:]) if frac else 0.0
    moved = when + timedelta(seconds=fraction + seconds)
    text = moved.strftime(fmt)
    if "T" in stamp:
        text = text.replace(" ", "T", 1)
    if frac:
        digits = len(frac) - 1
        text += frac[0] + f"{moved.microsecond:06d}"[:digits].ljust(digits, "0")
    return text


# ------------------------------------------------------------------------------------ main


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="tools/inject.py",
        description="Run a small real torch.distributed job (gloo, CPU) and make one rank fail.",
    )
    parser.add_argument("--ranks", type=int, required=True, help="world size (1-64)")
    parser.add_argument("--fault", choices=FAULTS, required=True)
    parser.add_argument("--victim", type=int, default=0, help="the rank that misbehaves")
    parser.add_argument("--at-step", type=int, help="the step it misbehaves at (default: seed)")
    parser.add_argument("--nodes", type=int, default=1, help="simulated nodes (per-node folders)")
    parser.add_argument("--seed", type=int, default=0, help="picks launcher, layout, variant...")
    parser.add_argument("--variant", help="the fault's variant (default: chosen by the seed)")
    parser.add_argument("--launcher", choices=LAUNCHERS, help="default: chosen by the seed")
    parser.add_argument("--steps", type=int, default=10, help="training steps (10)")
    parser.add_argument("--timeout", type=float, default=3.0, help="gloo timeout in s (3)")
    parser.add_argument("--flight-recorder", action="store_true", help="job dumps FR on error")
    parser.add_argument("--debug-detail", action="store_true", help="TORCH_DISTRIBUTED_DEBUG")
    parser.add_argument("--no-skew", action="store_true", help="every node's clock is right")
    parser.add_argument("--out", required=True, help="the job's folder (created, must be empty)")
    parser.add_argument("--truth", required=True, help="ground truth JSON (outside --out)")
    return parser.parse_args(argv)


def _check(args: argparse.Namespace) -> tuple[Path, Path]:
    if not 1 <= args.ranks <= 64:
        raise HarnessError("--ranks must be 1-64")
    if not 0 <= args.victim < args.ranks:
        raise HarnessError(f"--victim {args.victim}: not a rank of {args.ranks}")
    if not 1 <= args.nodes <= args.ranks:
        raise HarnessError("--nodes must be between 1 and --ranks")
    if args.steps < 3 or not 0.5 <= args.timeout <= 600:
        raise HarnessError("--steps must be at least 3 and --timeout 0.5-600 s")
    out, truth = Path(args.out).resolve(), Path(args.truth).resolve()
    if truth == out or out in truth.parents:
        raise HarnessError("--truth must be outside --out (the job's folder holds no answer)")
    if out.exists() and any(out.iterdir()):
        raise HarnessError(f"--out {out}: not empty")
    return out, truth


def _folders(out: Path, plan: dict[str, Any]) -> list[Path]:
    if len(plan["nodes"]) == 1:
        return [out]
    return [out / name for name in plan["nodes"]]


MAX_ATTEMPTS = 3
"""Runs of a job whose failure was not the injected one (an overloaded machine can time a
collective out before the fault): each retry doubles the collective timeout."""


def _job_env(plan: dict[str, Any], private: str, folders: list[Path]) -> dict[str, str]:
    env = {
        "INJECT_PLAN": str(Path(private) / "plan.json"),
        "INJECT_PRIVATE": private,
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(_free_port()),
        "WORLD_SIZE": str(plan["ranks"]),
        "OMP_NUM_THREADS": "1",
        "PYTHONUNBUFFERED": "1",
    }
    if plan["flight_recorder"]:
        env["TORCH_FR_BUFFER_SIZE"] = "2000"
    if plan["debug_detail"]:
        env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    env.update({f"DIR{i}": str(f) for i, f in enumerate(folders)})
    return env


def _valid(plan: dict[str, Any], private: str, fault_time: float | None) -> str | None:
    """Why this run does not show the injected fault (None: it does)."""
    finished = {p.name for p in Path(private).glob("finished_*")}
    everyone = len(finished) == plan["ranks"]
    if plan["fault"] == "none":
        return None if everyone else "a rank failed in a run without a fault"
    if fault_time is None:
        return "the job failed before the victim reached its fault"
    if plan["fault"] in ("slow", "link") and not everyone:
        return "a rank failed in a run that only slows down"
    return None


def _attempt(plan: dict[str, Any], folders: list[Path], private: str) -> dict[str, Any]:
    for stale in [*Path(private).glob("finished_*"), Path(private) / "fault_time.json"]:
        stale.unlink(missing_ok=True)
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        for child in folder.iterdir():  # what a failed attempt left
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    Path(private, "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    env = _job_env(plan, private, folders)
    deadline = 60.0 + plan["timeout_s"] * 4 + plan["steps"] * 2.0
    started = time.time()
    exits = _launch(plan, folders, env, int(env["MASTER_PORT"]), deadline)
    fault_file = Path(private) / "fault_time.json"
    fault_time = (
        json.loads(fault_file.read_text(encoding="utf-8"))["time"] if fault_file.exists() else None
    )
    return {"started": started, "exits": exits, "fault_time": fault_time,
            "invalid": _valid(plan, private, fault_time)}  # fmt: skip


def run(argv: list[str] | None = None) -> dict[str, Any]:
    """Run one job; returns the truth (also written to ``--truth``)."""
    args = _arguments(argv)
    out, truth_path = _check(args)
    plan = make_plan(args)
    folders = _folders(out, plan)
    private = tempfile.mkdtemp(prefix="inject-")
    problems = []
    try:
        for _ in range(MAX_ATTEMPTS):
            result = _attempt(plan, folders, private)
            if result["invalid"] is None:
                break
            problems.append(f"{result['invalid']} (timeout {plan['timeout_s']:g} s)")
            plan["timeout_s"] = plan["timeout_s"] * 2
        truth = _after(
            plan, folders, result["started"], result["fault_time"], result["exits"], args
        )
        truth["valid"] = result["invalid"] is None
        truth["retried"] = problems
    finally:
        shutil.rmtree(private, ignore_errors=True)
    truth_path.parent.mkdir(parents=True, exist_ok=True)
    truth_path.write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
    return truth


def _launch(
    plan: dict[str, Any], folders: list[Path], env: dict[str, str], port: int, deadline: float
) -> dict[int, int | None]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_", "NCCL_"))}
    if plan["launcher"] == "torchrun":
        return _run_torchrun(plan, folders, dict(clean, **env), port, deadline)
    outputs = [_Output(plan, folder, i) for i, folder in enumerate(folders)]
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(clean)
        return _Forked(plan, outputs, env).run(deadline)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        for output in outputs:
            output.close()


def _after(
    plan: dict[str, Any],
    folders: list[Path],
    started: float,
    fault_time: float | None,
    exits: dict[int, int | None],
    args: argparse.Namespace,
) -> dict[str, Any]:
    victim_node = node_of(plan, plan["victim"])
    kernel: dict[str, Any] = {}
    if plan["kernel_logs"]:
        kernel = write_kernel_logs(plan, folders, started, fault_time)
    if plan["captures"]:
        write_captures(plan, folders)
    year = datetime.now().year
    for node, folder in enumerate(folders):
        shift_clock(folder, plan["skew_s"][node], year)
    local = plan["placement"][victim_node].index(plan["victim"])
    return {
        "schema": TRUTH_SCHEMA,
        "fault": plan["fault"],
        "variant": plan["variant"],
        "cause": CAUSE[plan["fault"]],
        "victim": None
        if plan["fault"] == "none"
        else {
            "rank": plan["victim"],
            "host": plan["nodes"][victim_node],
            "local_rank": local,
            "bus_id": victim_bus(plan)[0] if plan["captures"] else None,
        },
        "ranks": plan["ranks"],
        "nodes": plan["nodes"],
        "at_step": plan["at_step"],
        "steps": plan["steps"],
        "seed": plan["seed"],
        "launcher": plan["launcher"],
        "layout": plan["layout"],
        "clock_skew_s": dict(zip(plan["nodes"], plan["skew_s"], strict=True)),
        "kernel_excerpt": kernel.get("excerpt"),
        "fault_time": fault_time,
        "exit_codes": {str(k): v for k, v in sorted(exits.items())},
        "flight_recorder": plan["flight_recorder"],
        "debug_detail": plan["debug_detail"],
        "argv": sys.argv[1:] if args is not None else [],
    }


def main(argv: list[str] | None = None) -> int:
    """The command line; exit 0 when the job ran (whatever it did), 3 on a usage error."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        return worker_main()
    try:
        truth = run(argv)
    except HarnessError as exc:
        sys.stderr.write(f"inject.py: {exc}\n")
        return 3
    if not truth["valid"]:
        sys.stderr.write(
            f"inject.py: no valid run in {MAX_ATTEMPTS} attempts: {truth['retried']}\n"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

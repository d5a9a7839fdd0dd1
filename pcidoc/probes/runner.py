"""Run one probe in a child process with a deadline, and read what it reports.

The parent side of the probe harness. It never imports torch: the child process
(``python -m pcidoc.probes.child``) does. Safety design (DESIGN.md §7):

* The child starts in a **new session** (``start_new_session=True``), so it is the leader of
  its own process group and a terminal's Ctrl-C does not reach it directly; the parent decides.
  It is started with ``subprocess.Popen`` (fork + exec of a fresh interpreter, i.e. spawn
  semantics: nothing that may hold CUDA state is ever forked).
* Every probe has a **deadline** (expected time × 2 + a start-up allowance for the torch import
  and CUDA/NCCL initialisation). On expiry, on Ctrl-C (``KeyboardInterrupt`` in the waiting
  thread) or when the caller's ``cancel`` event is set, the parent sends SIGTERM to the child's
  whole process group, waits briefly, then SIGKILL, and checks that no member is left (a
  ``/proc`` scan by process group). The GPU memory of a process is released by the driver when
  the process exits, so an empty group also means no GPU memory left behind.
* The runner makes its own process a *child subreaper* (Linux ``PR_SET_CHILD_SUBREAPER``) so
  that grandchildren orphaned by a killed child are re-parented to it and can be reaped; on
  hosts whose init process does not reap orphans (containers, micro-VMs) their zombies would
  otherwise keep the process group alive.
* Lines on the child's stdout that are not protocol messages are ignored with a logged warning;
  they are fatal only when no result arrives at all.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pcidoc.model.base import Model
from pcidoc.model.measurements import (
    CollectiveMeasurement,
    P2PMatrixMeasurement,
    P2PVerification,
    ProbeError,
    ScalingMeasurement,
    TransferMeasurement,
)
from pcidoc.probes import interpreter, merge, protocol

LOG = logging.getLogger("pcidoc.probes")

DEFAULT_STARTUP_S = 30.0
"""Start-up allowance added to every deadline: interpreter + torch import + CUDA/NCCL init."""

CHILD_MODULE = "pcidoc.probes.child"

RESULT_MODELS: dict[str, type[Model]] = {
    "transfer": TransferMeasurement,
    "p2p": P2PMatrixMeasurement,
    "p2p_verification": P2PVerification,
    "collective": CollectiveMeasurement,
    "scaling": ScalingMeasurement,
}
"""Result kind (:data:`RESULT_MODELS`) -> the model its ``measurement`` must validate
into; the parent checks every result, whichever interpreter produced it."""


INFO_TYPES: dict[str, type] = {
    "python": str,
    "python_version": str,
    "torch_version": str,
    "cuda_build": str,
    "nccl_version": str,
    "cuda_available": bool,
    "device_count": int,
    "devices": list,
    "nccl_env": dict,
    "plan": dict,
}
"""Types of the ``info`` facts the parent relies on; a child sending another type is ignored
for that fact (with a warning)."""

# ------------------------------------------------------------------------------ data types


@dataclass
class ProbeSpec:
    """What to run and how long it may take.

    Attributes:
        name: Probe name (``env``, ``transfer``, ``p2p``, ``allreduce``, ``scaling``); also the
            ``probe`` of the errors it produces.
        params: JSON-serialisable parameters for the child.
        expected_s: Estimated run time after start-up, in seconds.
        startup_s: Start-up allowance (torch import, CUDA init).
        deadline_s: Explicit deadline that replaces ``expected_s × 2 + startup_s``.
        env: Extra environment variables for the child.
        unset_env: Variables removed from the child's environment (the P2P probe's child
            gets no ``PYTORCH_CUDA_ALLOC_CONF``: peer access must reach its buffers).
        module: Module run with ``python -m`` (tests use ``tests.fakes.testing_children``).
        label: Short human label for progress lines (defaults to ``name``).
    """

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    expected_s: float = 10.0
    startup_s: float = DEFAULT_STARTUP_S
    deadline_s: float | None = None
    env: dict[str, str] = field(default_factory=dict)
    unset_env: tuple[str, ...] = ()
    module: str = CHILD_MODULE
    label: str | None = None

    @property
    def deadline(self) -> float:
        """Seconds the child may run before it is killed."""
        if self.deadline_s is not None:
            return float(self.deadline_s)
        return self.expected_s * 2.0 + self.startup_s


@dataclass(frozen=True)
class ProbeProgress:
    """One progress report of a running probe."""

    probe: str
    fraction: float
    message: str
    elapsed_s: float


@dataclass
class ProbeResult:
    """One measurement a probe produced.

    Attributes:
        kind: Which ``Measurements`` list it belongs to (:data:`protocol.RESULT_KINDS`).
        measurement: The validated model.
        extra: Derived numbers that are not part of the model (shown by ``pcidoc probe``).
    """

    kind: str
    measurement: Model
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class ProbeOutcome:
    """Everything one probe run produced."""

    probe: str
    results: list[ProbeResult] = field(default_factory=list)
    errors: list[ProbeError] = field(default_factory=list)
    logs: list[tuple[str, str]] = field(default_factory=list)
    """``(level, message)`` from the child and from the runner (garbage lines, leftovers)."""
    info: dict[str, Any] = field(default_factory=dict)
    returncode: int | None = None
    wall_s: float = 0.0
    stderr_tail: list[str] = field(default_factory=list)
    garbage_lines: int = 0

    @property
    def ok(self) -> bool:
        """True when the probe reported no error."""
        return not self.errors

    @property
    def error(self) -> ProbeError | None:
        """The first error, if any."""
        return self.errors[0] if self.errors else None


ProgressCallback = Callable[[ProbeProgress], None]


class ProbeRunner(Protocol):
    """Runs one probe and returns its outcome (subprocess, or a recorded stream)."""

    def run(
        self,
        spec: ProbeSpec,
        on_progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> ProbeOutcome:
        """Run ``spec``; call ``on_progress`` per progress message; stop early when ``cancel``
        is set. Raises ``KeyboardInterrupt`` (after cleanup) when interrupted by Ctrl-C."""
        ...


# --------------------------------------------------------------------------- the stream


class OutcomeBuilder:
    """Turns protocol lines into a :class:`ProbeOutcome`; shared by every runner.

    Args:
        spec: The probe being run.
        on_progress: Called (from the reading thread) for every progress message.
        clock: Monotonic clock, for the progress ``elapsed_s``.
    """

    def __init__(
        self,
        spec: ProbeSpec,
        on_progress: ProgressCallback | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.spec = spec
        self.outcome = ProbeOutcome(probe=spec.name)
        self._on_progress = on_progress
        self._clock = clock
        self._start = clock()
        self._lock = threading.Lock()
        self.last_progress: ProbeProgress | None = None
        self.ended_at: float | None = None
        """When the child's ``end`` message arrived (its clock), else ``None``."""

    def feed(self, line: bytes | str) -> None:
        """Handle one raw line from the child."""
        text = line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line
        if not text.strip():
            return
        try:
            message = protocol.decode(text)
        except protocol.ProtocolError as exc:
            self._garbage(text, str(exc))
            return
        kind = message["type"]
        if kind == "progress":
            event = ProbeProgress(
                probe=str(message.get("probe") or self.spec.name),
                fraction=float(message.get("fraction") or 0.0),
                message=str(message.get("message") or ""),
                elapsed_s=self._clock() - self._start,
            )
            self.last_progress = event
            if self._on_progress is not None:
                try:
                    self._on_progress(event)
                except Exception as exc:  # a broken display must not stop the probe
                    LOG.warning("progress callback failed: %s", exc)
        elif kind == "result":
            model = RESULT_MODELS[message["kind"]]
            try:
                measurement = model.model_validate(message["measurement"])
            except Exception as exc:
                self._garbage(text, f"invalid {message['kind']} measurement: {exc}")
                return
            extra = message.get("extra") if isinstance(message.get("extra"), dict) else {}
            with self._lock:
                self.outcome.results.append(ProbeResult(message["kind"], measurement, extra))
        elif kind == "error":
            error_kind = message.get("kind")
            if error_kind not in protocol.ERROR_KINDS:
                error_kind = "error"
            probe = str(message.get("probe") or self.spec.name)
            self.add_error(error_kind, message["message"], probe=probe)
        elif kind == "log":
            level = str(message.get("level") or "info")
            self.add_log(level, str(message.get("message") or ""))
        elif kind == "end":
            self.ended_at = self._clock()
        elif kind == "info":
            data = message.get("data")
            if isinstance(data, dict):
                data = self._checked_info(data)
                with self._lock:
                    self.outcome.info.update(data)

    def _checked_info(self, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` without the known facts whose type is wrong (the child may be any Python)."""
        kept = {}
        for key, value in data.items():
            expected = INFO_TYPES.get(key)
            if expected is not None and value is not None and not isinstance(value, expected):
                self.add_log("warning", f"ignored info {key!r}: not a {expected.__name__}")
                continue
            kept[key] = value
        return kept

    def seconds_since_end(self) -> float | None:
        """Seconds since the child's ``end`` message (``None`` before it came)."""
        return None if self.ended_at is None else self._clock() - self.ended_at

    def add_error(self, kind: str, message: str, probe: str | None = None) -> None:
        """Record an error of this probe."""
        with self._lock:
            self.outcome.errors.append(
                ProbeError(probe=probe or self.spec.name, message=message, kind=kind)  # type: ignore[arg-type]
            )

    def add_log(self, level: str, message: str) -> None:
        """Record a log line (and pass it to the ``pcidoc.probes`` logger)."""
        with self._lock:
            self.outcome.logs.append((level, message))
        LOG.debug("%s: %s: %s", self.spec.name, level, message)

    def _garbage(self, text: str, why: str) -> None:
        with self._lock:
            self.outcome.garbage_lines += 1
        shown = text.strip()
        if len(shown) > 120:
            shown = shown[:117] + "..."
        self.add_log("warning", f"ignored a line that is not a probe message ({why}): {shown!r}")

    def finish(self) -> ProbeOutcome:
        """Close the outcome: fold partial results (per-pair P2P cells, per-N scaling ladders)
        into whole records, stamp each with its conditions, say what a timeout cut off; a run
        without results and without errors becomes an error."""
        outcome = self.outcome
        outcome.wall_s = self._clock() - self._start
        with self._lock:
            shared = merge.run_conditions(self.spec.params.get("mode"), outcome.info)
            if isinstance(self.spec.params.get("allocation"), dict):
                shared["allocation"] = self.spec.params["allocation"]
            for result in outcome.results:
                if "conditions" not in type(result.measurement).model_fields:
                    continue
                conditions = merge.merge_dicts(shared, result.extra)
                result.measurement.conditions = merge.merge_dicts(  # type: ignore[attr-defined]
                    conditions,
                    result.measurement.conditions,  # type: ignore[attr-defined]
                )
                if isinstance(result.measurement, CollectiveMeasurement):
                    nccl_env = shared.get("nccl_env")
                    if isinstance(nccl_env, dict) and not result.measurement.nccl_env:
                        result.measurement.nccl_env = {str(k): str(v) for k, v in nccl_env.items()}
            keep = merge.merge_results([(r.kind, r.measurement) for r in outcome.results])
            outcome.results = [outcome.results[i] for i in keep]
            cut = merge.not_measured(
                outcome.info, [(r.kind, r.measurement) for r in outcome.results]
            )
            if cut:
                outcome.errors = [
                    e.model_copy(update={"message": f"{e.message}; {cut}"})
                    if e.kind in ("timeout", "interrupted")
                    else e
                    for e in outcome.errors
                ]
        if not outcome.results and not outcome.errors and not outcome.info:
            detail = (
                f" ({outcome.garbage_lines} unreadable line(s) on its output)"
                if outcome.garbage_lines
                else ""
            )
            self.add_error("error", f"the probe produced no result{detail}")
        return outcome


# ----------------------------------------------------------------------- process groups


def _read_stat(pid: int) -> tuple[str, int, int] | None:
    """``(state, ppid, pgrp)`` of a process from ``/proc/<pid>/stat``, or ``None``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    # The command name is in parentheses and may itself contain spaces or parentheses.
    tail = data[data.rfind(")") + 2 :].split()
    if len(tail) < 3:
        return None
    try:
        return tail[0], int(tail[1]), int(tail[2])
    except ValueError:
        return None


def group_members(pgid: int, include_zombies: bool = False) -> list[int]:
    """PIDs of the processes in process group ``pgid`` (zombies excluded unless asked).

    Args:
        pgid: The process group id (the probe child's pid).
        include_zombies: Also list exited-but-unreaped processes.
    """
    members: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:  # pragma: no cover - non-Linux
        return members
    for entry in entries:
        if not entry.isdecimal():
            continue
        stat = _read_stat(int(entry))
        if stat is None:
            continue
        state, _ppid, pgrp = stat
        if pgrp != pgid:
            continue
        if state in ("Z", "X") and not include_zombies:
            continue
        members.append(int(entry))
    return sorted(members)


def group_alive(pgid: int) -> bool:
    """True while process group ``pgid`` has a member that is not a zombie."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - someone else's group reusing the id
        return False
    return bool(group_members(pgid))


_SUBREAPER_LOCK = threading.Lock()
_SUBREAPER_SET = False


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux); orphans of our children come back to us.

    Returns:
        True when the process is (now) a subreaper.
    """
    global _SUBREAPER_SET
    with _SUBREAPER_LOCK:
        if _SUBREAPER_SET:
            return True
        if not sys.platform.startswith("linux"):
            return False
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            pr_set_child_subreaper = 36
            if libc.prctl(pr_set_child_subreaper, 1, 0, 0, 0) != 0:
                return False
        except Exception:
            return False
        _SUBREAPER_SET = True
        return True


def reap_group_zombies(pgid: int, skip: int | None = None) -> list[int]:
    """Reap zombie members of ``pgid`` that are our children (re-parented orphans).

    Args:
        pgid: The process group.
        skip: A pid not to reap here (the leader, which its ``Popen`` reaps).

    Returns:
        The pids reaped.
    """
    reaped: list[int] = []
    me = os.getpid()
    for pid in group_members(pgid, include_zombies=True):
        if pid == skip:
            continue
        stat = _read_stat(pid)
        if stat is None or stat[0] not in ("Z", "X") or stat[1] != me:
            continue
        try:
            os.waitpid(pid, os.WNOHANG)
            reaped.append(pid)
        except ChildProcessError:
            pass
    return reaped


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _wait_group_gone(pgid: int, timeout: float, leader: int | None, poll: float = 0.02) -> bool:
    """Wait until no non-zombie member of ``pgid`` is left; reap orphans meanwhile."""
    end = time.monotonic() + timeout
    while True:
        reap_group_zombies(pgid, skip=leader)
        if not group_members(pgid):
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(poll)


def terminate_group(
    pgid: int, term_grace_s: float = 2.0, kill_grace_s: float = 5.0, leader: int | None = None
) -> list[int]:
    """SIGTERM the process group, wait, then SIGKILL; return the pids that survived.

    Args:
        pgid: Process group to end (the probe child's pid).
        term_grace_s: How long to wait after SIGTERM before SIGKILL.
        kill_grace_s: How long to wait after SIGKILL (a process inside a driver call can take a
            moment to die).
        leader: The group leader's pid, reaped by its owner rather than here.
    """
    if not group_members(pgid):
        return []
    _signal_group(pgid, signal.SIGTERM)
    if _wait_group_gone(pgid, term_grace_s, leader):
        return []
    _signal_group(pgid, signal.SIGKILL)
    if _wait_group_gone(pgid, kill_grace_s, leader):
        return []
    return group_members(pgid)


# ----------------------------------------------------------------------------- signals


class ProbeSignalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived while a probe ran: handled like Ctrl-C (the probe's process
    group is ended first), but the process exits with ``128 + signum`` (143, 129)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = int(signum)

    @property
    def exit_code(self) -> int:
        """The conventional exit status for death by this signal."""
        return 128 + self.signum

    @property
    def signal_name(self) -> str:
        """``SIGTERM``, ``SIGHUP``..."""
        return _signal_name(-self.signum)


TERMINATING_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextlib.contextmanager
def signals_interrupt() -> Any:
    """While inside, SIGTERM/SIGHUP raise :class:`ProbeSignalled` in the main thread.

    Elsewhere than in the main thread (the TUI's worker) nothing changes: signal handlers can
    only be installed there, and the TUI has its own shutdown path.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: Any) -> None:
        raise ProbeSignalled(signum)

    previous = {}
    for signum in TERMINATING_SIGNALS:
        try:
            previous[signum] = signal.signal(signum, handler)
        except (ValueError, OSError):  # pragma: no cover - not the main interpreter
            continue
    try:
        yield
    finally:
        for signum, old in previous.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(signum, old)


# ----------------------------------------------------------------------------- runners


def child_environment(
    extra: dict[str, str] | None = None, unset: tuple[str, ...] = ()
) -> dict[str, str]:
    """The environment of a probe child: ours, without ``unset``, plus ``extra``.

    The child's module path is not given through ``PYTHONPATH``: it runs with ``-E`` (``-I``
    as root) and an explicit path (:func:`interpreter.module_argv`).

    Args:
        extra: Variables to set (``CUDA_VISIBLE_DEVICES``...).
    """
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    # The child arms a parent-death signal and checks it was not orphaned before that.
    env["PCIDOC_PARENT_PID"] = str(os.getpid())
    # CUDA_DEVICE_ORDER is not set here: each spec says which order its ordinals are in
    # (pcidoc.probes.cudaview); a default that the user's value silently overrode mislabelled.
    for name in unset:
        env.pop(name, None)
    if extra:
        env.update(extra)
    return env


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


class SubprocessProbeRunner:
    """Runs each probe in a fresh ``python -m pcidoc.probes.child`` process group.

    Args:
        python: Interpreter for the child (default: :func:`interpreter.choose`, which is this
            one when torch is installed here; ``PCIDOC_PYTHON`` or a discovered Python with
            torch otherwise).
        term_grace_s: Wait after SIGTERM before SIGKILL.
        kill_grace_s: Wait after SIGKILL before reporting survivors.
        poll_s: How often the waiting thread checks the deadline and ``cancel``.
        stderr_lines: How many trailing stderr lines a crash report keeps.
        reap_orphans: Become a child subreaper so orphaned grandchildren can be reaped.
        drain_s: After a normal exit, how long helpers may take to exit on their own before
            they count as left behind.
        exit_grace_s: After the child's last message (``end``), how long it may take to
            exit before its process group is ended (a teardown stuck behind a hung copy must
            not hold the parent until the deadline).
    """

    def __init__(
        self,
        python: str | interpreter.Interpreter | None = None,
        term_grace_s: float = 2.0,
        kill_grace_s: float = 5.0,
        poll_s: float = 0.05,
        stderr_lines: int = 20,
        reap_orphans: bool = True,
        drain_s: float = 0.5,
        exit_grace_s: float = 10.0,
    ) -> None:
        self.exit_grace_s = exit_grace_s
        if isinstance(python, str):
            python = interpreter.Interpreter(python, "--python")
        self._interpreter = python
        self.drain_s = drain_s
        self.term_grace_s = term_grace_s
        self.kill_grace_s = kill_grace_s
        self.poll_s = poll_s
        self.stderr_lines = stderr_lines
        self.reap_orphans = reap_orphans
        self.last_pgid: int | None = None
        """Process group of the latest child (tests check it is gone)."""

    @property
    def interpreter(self) -> interpreter.Interpreter:
        """The Python of the children (chosen at first use)."""
        if self._interpreter is None:
            self._interpreter = interpreter.choose()
        return self._interpreter

    @property
    def python(self) -> str:
        """The children's executable."""
        return self.interpreter.path

    def command(self, spec: ProbeSpec) -> list[str]:
        """The child's argv: ``python -m MODULE NAME --params JSON``, isolated from the
        current folder and ``PYTHON*`` variables (:func:`interpreter.module_argv`)."""
        return interpreter.module_argv(
            self.python,
            spec.module,
            [spec.name, "--params", json.dumps(spec.params, separators=(",", ":"))],
            interpreter.search_path(self.interpreter.foreign, child_environment(spec.env)),
        )

    def run(
        self,
        spec: ProbeSpec,
        on_progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> ProbeOutcome:
        """Run one probe to completion, deadline, cancellation or Ctrl-C.

        Args:
            spec: The probe.
            on_progress: Called from the reading thread for each progress message.
            cancel: When set, the child is stopped and the outcome has an ``interrupted`` error.

        Returns:
            The outcome; ``errors`` holds timeouts, crashes and errors the child reported.

        Raises:
            KeyboardInterrupt: Ctrl-C (or :class:`ProbeSignalled`: SIGTERM/SIGHUP) arrived
                while waiting; the child's process group has been ended before it propagates,
                and the exception's ``outcome`` holds what the probe had reported by then.
        """
        with signals_interrupt():
            return self._run(spec, on_progress, cancel)

    def _run(
        self,
        spec: ProbeSpec,
        on_progress: ProgressCallback | None,
        cancel: threading.Event | None,
    ) -> ProbeOutcome:
        if self.reap_orphans:
            become_subreaper()
        builder = OutcomeBuilder(spec, on_progress)
        tail: deque[str] = deque(maxlen=self.stderr_lines)
        try:
            proc = subprocess.Popen(
                self.command(spec),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=child_environment(spec.env, spec.unset_env),
                cwd=interpreter.private_folder(),
                close_fds=True,
            )
        except OSError as exc:
            builder.add_error("crash", f"could not start the probe process: {exc}")
            return builder.finish()
        self.last_pgid = proc.pid
        readers = [
            threading.Thread(
                target=reader,
                args=(proc, sink),
                name=f"probe-{spec.name}-{what}",
                daemon=True,
            )
            for reader, sink, what in (
                (self._read_stdout, builder, "out"),
                (self._read_stderr, tail, "err"),
            )
        ]
        for reader in readers:
            reader.start()
        try:
            stop = self._wait(proc, spec, builder, cancel)
        except KeyboardInterrupt as exc:
            hard = False
            while True:  # a second Ctrl-C (or signal) must not leave the group running
                try:
                    self._cleanup(proc, readers, builder, stopping=True, hard=hard)
                    break
                except KeyboardInterrupt:
                    hard = True
            how = exc.signal_name if isinstance(exc, ProbeSignalled) else "Ctrl-C"
            builder.add_error("interrupted", f"interrupted by {how}")
            exc.outcome = builder.finish()  # type: ignore[attr-defined]
            raise
        survivors = self._cleanup(proc, readers, builder, stopping=stop is not None)
        builder.outcome.returncode = proc.returncode
        builder.outcome.stderr_tail = list(tail)
        self._report(spec, proc, builder, stop, list(tail))
        if survivors:
            builder.add_error(
                "error",
                "could not end the probe's processes "
                + ", ".join(str(p) for p in survivors)
                + " (stuck in the driver?); check `nvidia-smi` for leftover GPU memory",
            )
        return builder.finish()

    def _wait(
        self,
        proc: subprocess.Popen[bytes],
        spec: ProbeSpec,
        builder: OutcomeBuilder,
        cancel: threading.Event | None,
    ) -> str | None:
        """Wait for the child to exit; why it had to be stopped (``timeout``,
        ``interrupted``, ``lingered`` after its last message), else ``None``."""
        deadline = time.monotonic() + spec.deadline
        while not self._exited(proc.pid):
            if cancel is not None and cancel.is_set():
                return "interrupted"
            if time.monotonic() >= deadline:
                return "timeout"
            since_end = builder.seconds_since_end()
            if since_end is not None and since_end >= self.exit_grace_s:
                return "lingered"
            if cancel is not None:
                cancel.wait(self.poll_s)
            else:
                time.sleep(self.poll_s)
        return None

    def _report(
        self,
        spec: ProbeSpec,
        proc: subprocess.Popen[bytes],
        builder: OutcomeBuilder,
        stop: str | None,
        tail: list[str],
    ) -> None:
        """The error (or log line) that says how the child ended."""
        outcome = builder.outcome
        if stop == "timeout":
            last = builder.last_progress
            where = f" (last step: {last.message})" if last and last.message else ""
            builder.add_error("timeout", f"timed out after {spec.deadline:.0f} s{where}")
        elif stop == "interrupted":
            builder.add_error("interrupted", "cancelled before it finished")
        elif stop == "lingered":
            builder.add_log(
                "warning",
                f"the probe process reported everything but had not exited {self.exit_grace_s:g} "
                "s later (its device teardown was stuck); ended it",
            )
        elif proc.returncode not in (0, None) and not outcome.errors:
            if proc.returncode < 0:
                how = f"was killed by {_signal_name(proc.returncode)}"
                if proc.returncode == -signal.SIGKILL:
                    how += " (out of memory?)"
            else:
                how = f"exited with status {proc.returncode}"
            stderr = " | ".join(line for line in tail[-5:] if line.strip())
            builder.add_error(
                "crash", f"the probe process {how}" + (f"; stderr: {stderr}" if stderr else "")
            )

    # -- internals ------------------------------------------------------------------------

    @staticmethod
    def _exited(pid: int) -> bool:
        """True once the child has exited; it is NOT reaped, so its pid (= the group id)
        cannot be reused while the group is being cleaned up."""
        try:
            return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def _cleanup(
        self,
        proc: subprocess.Popen[bytes],
        readers: list[threading.Thread],
        builder: OutcomeBuilder,
        stopping: bool,
        hard: bool = False,
    ) -> list[int]:
        pgid = proc.pid
        survivors: list[int] = []
        members = group_members(pgid)  # an exited, unreaped leader is a zombie: not listed
        if members and not stopping and _wait_group_gone(pgid, self.drain_s, pgid):
            members = []  # helpers that were already on their way out (resource trackers)
        if members and not stopping:
            builder.add_log(
                "warning",
                "the probe left processes behind ("
                + ", ".join(map(str, members))
                + "); ended them",
            )
        if members or stopping:
            survivors = terminate_group(
                pgid, 0.0 if hard else self.term_grace_s, self.kill_grace_s, leader=pgid
            )
        with contextlib.suppress(Exception):
            proc.wait(timeout=self.kill_grace_s)
        if proc.returncode is None:  # pragma: no cover - leader stuck even after SIGKILL
            survivors = sorted(set(survivors) | {pgid})
        reap_group_zombies(pgid)
        for reader in readers:
            reader.join(timeout=2.0)
        for stream in (proc.stdout, proc.stderr):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.close()
        return survivors

    @staticmethod
    def _read_stdout(proc: subprocess.Popen[bytes], builder: OutcomeBuilder) -> None:
        assert proc.stdout is not None
        with contextlib.suppress(ValueError, OSError):
            for line in iter(lambda: proc.stdout.readline(1 << 20), b""):  # type: ignore[union-attr]
                builder.feed(line)

    @staticmethod
    def _read_stderr(proc: subprocess.Popen[bytes], tail: deque[str]) -> None:
        assert proc.stderr is not None
        with contextlib.suppress(ValueError, OSError):
            for line in iter(lambda: proc.stderr.readline(1 << 16), b""):  # type: ignore[union-attr]
                text = line.decode("utf-8", errors="replace").rstrip()
                if text:
                    tail.append(text)

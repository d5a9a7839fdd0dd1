"""The CLI side of the probes: progress lines on stderr, ``measure`` for ``check``/``capture
--probes``, and ``pcidoc probe NAME`` with its human summary.

The orchestration itself is :class:`pcidoc.probes.session.ProbeSession`, shared with the TUI;
this module only renders its events for a terminal (no torch, no textual).
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from pcidoc.errors import ExitCode, PcidocError
from pcidoc.model.capture import Capture
from pcidoc.model.cpulist import format_cpulist
from pcidoc.model.measurements import ProbeError
from pcidoc.model.units import format_bytes
from pcidoc.probes import interpreter, params, preflight
from pcidoc.probes.allocation import Allocation
from pcidoc.probes.allocation import resolve as resolve_allocation
from pcidoc.probes.cudaview import cuda_view, gpu_ids
from pcidoc.probes.runner import (
    ProbeOutcome,
    ProbeProgress,
    ProbeRunner,
    ProbeSignalled,
    ProbeSpec,
    SubprocessProbeRunner,
    signals_interrupt,
)
from pcidoc.probes.session import (
    Plan,
    ProbeSession,
    SessionListener,
    allocation_of,
    capture_busy_check,
    collective_spec,
    live_busy_check,
    no_gpu_message,
    p2p_spec,
    probe_gpus,
    probe_json,
    run_env,
    transfer_spec,
)

Progress = Callable[[str], None]


# ----------------------------------------------------------------------------- progress


class ProgressDisplay:
    """Turns probe progress into rate-limited stderr lines (``pcidoc: p2p  40% GPU0->GPU3``).

    Args:
        write: Where lines go (the CLI passes a stderr writer).
        min_interval_s: At most one line per probe per interval (start and end always show).
        clock: Monotonic clock (tests).
    """

    def __init__(
        self,
        write: Progress,
        min_interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.write = write
        self.min_interval_s = min_interval_s
        self.clock = clock
        self._last: dict[str, float] = {}
        self._done: set[str] = set()
        self._lock = threading.Lock()

    def start(self, spec: ProbeSpec, estimate_s: float | None = None) -> None:
        """Announce a probe."""
        eta = f" (about {estimate_s:.0f} s)" if estimate_s else ""
        self.write(f"pcidoc: probe {spec.label or spec.name}: starting{eta}")
        with self._lock:
            self._last[spec.name] = self.clock()
            self._done.discard(spec.name)

    def callback(self, spec: ProbeSpec) -> Callable[[ProbeProgress], None]:
        """The ``on_progress`` callback for one probe (called from the reading thread)."""

        def on_progress(event: ProbeProgress) -> None:
            now = self.clock()
            with self._lock:
                last = self._last.get(spec.name, 0.0)
                done = event.fraction >= 1.0
                if done and spec.name in self._done:
                    return
                if now - last < self.min_interval_s and not done:
                    return
                self._last[spec.name] = now
                if done:
                    self._done.add(spec.name)
            self.write(
                f"pcidoc: probe {spec.label or spec.name}: {event.fraction * 100:3.0f}% "
                f"{event.message}".rstrip()
            )

        return on_progress

    def finish(self, spec: ProbeSpec, outcome: ProbeOutcome) -> None:
        """Summarise a finished probe (its warnings, then ok / the error)."""
        name = spec.label or spec.name
        for level, message in outcome.logs:
            if level == "warning":
                self.write(f"pcidoc: probe {name}: warning: {message}")
        if outcome.ok:
            self.write(
                f"pcidoc: probe {name}: done in {outcome.wall_s:.1f} s "
                f"({len(outcome.results)} measurement(s))"
            )
        else:
            for error in outcome.errors:
                self.write(f"pcidoc: probe {name}: {error.kind}: {error.message}")


def measured_with_line(info: dict[str, Any]) -> str | None:
    """``probes run by /usr/bin/python3 (Python 3.11.7), torch 2.4.1``, from a child's info."""
    python = info.get("python")
    torch = info.get("torch_version")
    if not python and not torch:
        return None
    version = f" (Python {info['python_version']})" if info.get("python_version") else ""
    return f"probes run by {python or 'an unknown Python'}{version}, torch {torch or '?'}"


class ConsoleListener(SessionListener):
    """Prints a :class:`ProbeSession`'s events as ``pcidoc: ...`` lines (stderr in the CLI)."""

    def __init__(self, mode: str, progress: Progress, display: ProgressDisplay | None = None):
        self.mode = mode
        self.write = progress
        self.display = display or ProgressDisplay(progress)

    def env_started(self) -> None:
        self.write(f"pcidoc: probes ({self.mode}): checking torch and CUDA...")

    def env_finished(self, outcome: ProbeOutcome, errors: list[ProbeError]) -> None:
        if errors:
            self.write(f"pcidoc: probes unavailable: {errors[0].message}")
            return
        line = measured_with_line(outcome.info)
        if line:
            self.write(f"pcidoc: {line}")

    def planned(self, plan: Plan) -> None:
        for note in plan.notes:
            self.write(f"pcidoc: {note}")
        for error in plan.errors:
            if error.kind == "refused":
                self.write(f"pcidoc: probe {error.probe}: refused: {error.message}")
        if plan.specs:
            names = ", ".join(spec.label or spec.name for spec in plan.specs)
            self.write(f"pcidoc: probes ({self.mode}): {names}; about {plan.estimate_s:.0f} s")

    def started(self, spec: ProbeSpec) -> None:
        self.display.start(spec, spec.expected_s + params.TYPICAL_STARTUP_S.get(spec.name, 3.0))

    def progress(self, spec: ProbeSpec, event: ProbeProgress) -> None:
        self.display.callback(spec)(event)

    def finished(self, spec: ProbeSpec, outcome: ProbeOutcome) -> None:
        self.display.finish(spec, outcome)


def measure(
    capture: Capture,
    mode: str,
    force: bool,
    progress: Progress,
    *,
    runner: ProbeRunner | None = None,
    cancel: threading.Event | None = None,
    gpus: Sequence[int] | None = None,
    live_processes: bool = True,
    python: str | None = None,
) -> None:
    """Run the probes that make sense for ``capture``; append to ``capture.measurements``.

    Transfer per GPU; P2P, all-reduce and scaling when there are two or more GPUs; on a machine
    without CUDA the scaling probe still runs with gloo on CPU, and the CUDA probes are recorded
    as ``unavailable`` with the reason (the doctor's checks then skip with it). A
    :class:`ProbeSession` with a :class:`ConsoleListener`.

    Args:
        capture: The machine; its ``measurements`` are extended in place.
        mode: ``quick`` or ``full``.
        force: Measure even when other processes use the GPUs.
        progress: Writes one line of progress (the CLI: stderr).
        runner: The probe runner (default: subprocesses; tests pass a fake).
        cancel: Stops the running probe and skips the rest when set.
        gpus: Restrict the GPU probes to these indices.
        live_processes: Also ask NVML, right now, which processes use the GPUs.
        python: The Python that runs the probe children (``--python``; default: see
            :func:`pcidoc.probes.interpreter.choose`).

    Raises:
        KeyboardInterrupt: Ctrl-C (or SIGTERM/SIGHUP: ``ProbeSignalled``); the running probe's
            processes have been ended.
        ValueError: unknown ``mode``.
    """
    if runner is None:
        runner = SubprocessProbeRunner(_interpreter(python, progress))
    session = ProbeSession(
        capture,
        mode,
        ConsoleListener(mode, progress),
        runner=runner,
        force=force,
        gpus=gpus,
        busy_check=live_busy_check if live_processes else capture_busy_check,
        cancel=cancel,
    )
    with signals_interrupt():
        session.run()


# -------------------------------------------------------------------------- pcidoc probe


def _parse_int_list(text: str | None, option: str) -> list[int] | None:
    if text is None:
        return None
    values: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdecimal():
            raise ValueError(f"{option}: {part!r} is not a non-negative integer")
        values.append(int(part))
    if not values:
        raise ValueError(f"{option}: empty list")
    return sorted(set(values))


def _collect(progress: Progress) -> Capture:
    try:
        from pcidoc.collect.live import collect_live

        return collect_live()
    except Exception as exc:
        progress(
            f"pcidoc: could not collect this machine's facts ({type(exc).__name__}: {exc}); "
            "measuring without them"
        )
        return Capture.empty("live")


def render_table(document: dict[str, Any]) -> list[str]:
    """A few human lines summarising a ``pcidoc.probe/1`` document."""
    lines: list[str] = []
    m = document.get("measurements", {})
    for t in m.get("transfers", []):
        kind = "bidir " if t.get("bidirectional") else ""
        where = f" {t['placement']}" if t.get("placement") in ("local", "remote") else ""
        pct = t.get("percent_of_ceiling")
        ceiling = f"  {pct:.0f}% of {t['ceiling_link']}" if pct is not None else ""
        cov = t.get("cov")
        noise = f"  CoV {cov * 100:.1f}%" if cov is not None else ""
        lines.append(
            f"GPU{t['gpu']} {t['direction']} {t['memory']}{where} {kind}".rstrip()
            + f": {t['bandwidth_gbps']:.2f} GB/s{ceiling}{noise}"
        )
    for matrix in m.get("p2p", []):
        title = (
            f"{matrix['kind']} {matrix['p2p']}"
            f"{' bidirectional' if matrix.get('bidirectional') else ''} ({matrix['unit']})"
        )
        lines.append(title)
        gpus = matrix["gpus"]
        lines.append("      " + "".join(f"{'GPU' + str(g):>9}" for g in gpus))
        for g, row in zip(gpus, matrix["values"], strict=False):
            cells = "".join(f"{'-' if v is None else f'{v:.2f}':>9}" for v in row)
            lines.append(f"GPU{g:<3}" + cells)
    bad = [v for v in m.get("p2p_verification", []) if not v.get("ok")]
    if m.get("p2p_verification"):
        lines.append(
            f"verified copies: {len(m['p2p_verification']) - len(bad)} ok, {len(bad)} wrong"
        )
    for c in m.get("collectives", []):
        gpus = ",".join(map(str, c.get("gpus") or [])) or "CPU"
        lines.append(
            f"all_reduce {c['backend']} ranks={c['ranks']} ({gpus}) correct={c.get('correct')}"
        )
        if (c.get("ranks") or 0) <= 1:
            lines.append("  one rank: nothing crosses a link, so no bandwidth applies")
        if c.get("nccl_env"):
            settings = " ".join(f"{k}={v}" for k, v in sorted(c["nccl_env"].items()))
            lines.append(f"  measured with {settings}")
        for row in c.get("rows", []):
            busbw = row.get("busbw_gbps")
            time_text = f"  {format_bytes(row['size_bytes']):>10}  {row['time_us']:>10.1f} us"
            if (c.get("ranks") or 0) <= 1 or busbw is None:
                lines.append(time_text)
                continue
            lines.append(
                time_text + f"  algbw {row['algbw_gbps']:.3f} GB/s  busbw {busbw:.3f} GB/s"
            )
    for s in m.get("scaling", []):
        edge = s.get("slowest_edge")
        where = (
            f"the slowest link between the GPUs used is {edge}"
            if edge
            else "on CPU (no GPU link)"
            if s.get("backend") == "gloo"
            else "the link between the GPUs used is not known"
        )
        lines.append(
            f"scaling {s['backend']}: model of {s.get('model_params')} parameters, batch "
            f"{s.get('per_rank_batch')} per rank; {where}"
        )
        for pt in s.get("points", []):
            eff = pt.get("efficiency")
            lines.append(
                f"  ranks {pt['ranks']:>2}: {pt['throughput_samples_per_s']:.1f} samples/s, "
                f"step {pt.get('step_time_ms')} ms, efficiency "
                + ("n/a" if eff is None else f"{eff:.2f}")
            )
        if s.get("allreduce_busbw_gbps") is not None:
            lines.append(
                f"  all_reduce busbw at gradient size: {s['allreduce_busbw_gbps']:.3f} GB/s"
            )
    return lines


def probe_command(
    args: Any,
    progress: Progress,
    *,
    runner: ProbeRunner | None = None,
    capture: Capture | None = None,
    stdout: Any = None,
) -> int:
    """``pcidoc probe NAME``: run one probe, print its ``pcidoc.probe/1`` JSON on stdout.

    Without ``--json`` a short human summary goes to stderr as well (stdout stays pure JSON, so
    scripts can parse it either way).

    Returns:
        0 on success, 3 on a probe error / unavailable / refused / bad option, 130 on Ctrl-C,
        143 / 129 on SIGTERM / SIGHUP. An interrupted run still prints one JSON document: what
        was measured before the interruption, and an ``interrupted`` error.
    """
    out = stdout or sys.stdout
    name: str = args.name
    mode: str = getattr(args, "mode", "quick") or "quick"
    try:
        gpus = _parse_int_list(getattr(args, "gpus", None), "--gpus")
        ranks = _parse_int_list(getattr(args, "ranks", None), "--ranks")
        _check_timeout(getattr(args, "timeout", None))
    except ValueError as exc:
        progress(f"pcidoc: {exc}")
        return int(ExitCode.BAD_INPUT)
    if ranks is not None and 0 in ranks:
        progress("pcidoc: --ranks: rank counts start at 1")
        return int(ExitCode.BAD_INPUT)
    if name in ("transfer", "p2p") and getattr(args, "backend", None):
        progress(f"pcidoc: note: --backend does not apply to the {name} probe")
    if name in ("transfer", "p2p") and ranks is not None:
        progress(f"pcidoc: note: --ranks does not apply to the {name} probe")
    if runner is None:
        try:
            runner = SubprocessProbeRunner(_interpreter(getattr(args, "python", None), progress))
        except PcidocError as exc:
            progress(f"pcidoc: {exc}")
            return int(ExitCode.BAD_INPUT)
    display = ProgressDisplay(progress)
    state: dict[str, Any] = {"machine": capture}
    try:
        with signals_interrupt():
            return _ProbeRun(
                args, name, mode, gpus, ranks, progress, runner, display, state, out
            ).run()
    except KeyboardInterrupt as exc:
        return _interrupted(exc, name, mode, state, progress, out)


def _interpreter(python: str | None, progress: Progress) -> interpreter.Interpreter:
    """The probe children's Python (``--python``, ``PCIDOC_PYTHON``, discovery); the
    environments discovery refused as root are noted, one line each."""
    try:
        chosen = interpreter.choose(python)
    except interpreter.InterpreterError as exc:
        source = "--python" if python else interpreter.ENV_VARIABLE
        raise PcidocError(f"{source}: {exc}") from None
    for reason in chosen.refused:
        progress(f"pcidoc: note: {reason}")
    return chosen


def _check_timeout(value: Any) -> None:
    """``--timeout`` must be a finite number of seconds above zero."""
    if value is None:
        return
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"--timeout: {value!r} is not a number of seconds") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"--timeout: must be a positive number of seconds, got {value!r}")


def _interrupted(
    exc: KeyboardInterrupt,
    name: str,
    mode: str,
    state: dict[str, Any],
    progress: Progress,
    out: Any,
) -> int:
    """One JSON document saying what was interrupted (and what was measured before)."""
    signalled = isinstance(exc, ProbeSignalled)
    how = exc.signal_name if isinstance(exc, ProbeSignalled) else "Ctrl-C"
    outcome = getattr(exc, "outcome", None)
    outcome = outcome if isinstance(outcome, ProbeOutcome) else None
    errors: list[ProbeError] = []
    if outcome is None:
        errors.append(ProbeError(probe=name, message=f"interrupted by {how}", kind="interrupted"))
    machine = state.get("machine") or Capture.empty("live")
    document = probe_json(name, mode, machine, state.get("spec"), outcome, errors)
    document["interrupted"] = how
    try:
        out.write(json.dumps(document, indent=2) + "\n")
        out.flush()
    except (OSError, ValueError):
        pass
    progress(f"pcidoc: interrupted by {how}; the probe's processes were stopped")
    return exc.exit_code if signalled else int(ExitCode.INTERRUPTED)  # type: ignore[union-attr]


class _Stop(Exception):
    """``pcidoc probe`` cannot run as asked: one line on stderr, exit 3, and (with ``kind``) a
    ``pcidoc.probe/1`` document carrying the error."""

    def __init__(self, line: str, kind: str | None = None, message: str | None = None) -> None:
        super().__init__(line)
        self.line = line
        self.kind = kind
        self.message = message or line


class _ProbeRun:
    """One ``pcidoc probe NAME`` after its options were checked: the machine, the job's GPUs,
    what torch sees, the spec, the run."""

    def __init__(
        self,
        args: Any,
        name: str,
        mode: str,
        gpus: list[int] | None,
        ranks: list[int] | None,
        progress: Progress,
        runner: ProbeRunner,
        display: ProgressDisplay,
        state: dict[str, Any],
        out: Any,
    ) -> None:
        self.args, self.name, self.mode = args, name, mode
        self.gpus, self.ranks = gpus, ranks
        self.progress, self.runner, self.display = progress, runner, display
        self.state, self.out = state, out
        self.backend: str | None = getattr(args, "backend", None)
        capture = state.get("machine")
        self.machine: Capture = capture if capture is not None else _collect(progress)
        state["machine"] = self.machine

    def run(self) -> int:
        try:
            allocation = self._allocation()
            env_info, allocation = self._environment(allocation)
            indices = self._indices(allocation, env_info)
            spec = self._spec(indices, env_info, allocation)
        except _Stop as stop:
            if stop.kind is None:
                self.progress(f"pcidoc: {stop.line}")
                return int(ExitCode.BAD_INPUT)
            error = ProbeError(probe=self.name, message=stop.message, kind=stop.kind)  # type: ignore[arg-type]
            document = probe_json(self.name, self.mode, self.machine, None, None, [error])
            return _fail(self.progress, stop.line, document, self.out)
        return self._measure(spec)

    def _allocation(self) -> Allocation:
        """The job's GPUs; ``--gpus`` must name GPUs of this machine inside them."""
        known = {g.index for g in self.machine.gpus}
        allocation = allocation_of(self.machine)
        gpus = self.gpus
        if gpus is not None and known and not set(gpus) <= known:
            missing = ", ".join(str(g) for g in sorted(set(gpus) - known))
            raise _Stop(
                f"--gpus: no GPU {missing} on this machine (GPUs: {format_cpulist(sorted(known))})"
            )
        outside = sorted(g for g in (gpus or []) if not allocation.allows(g))
        if outside and (self.name in ("transfer", "p2p") or self.backend != "gloo"):
            raise _Stop(
                f"--gpus: GPU {format_cpulist(outside)} is outside this job's GPUs "
                f"({allocation.describe()}); choose among "
                f"{format_cpulist(allocation.indices or [])}"
            )
        return allocation

    def _environment(self, allocation: Allocation) -> tuple[dict[str, Any], Allocation]:
        """What torch sees (the ``env`` probe), the backend, and the allocation in CUDA's
        order; nothing to ask for gloo."""
        if self.backend == "gloo":
            return {}, allocation
        env = run_env(self.runner, None, None, self.machine, allocation)
        if not env.info:
            error = env.error
            message = error.message if error else "the torch environment probe failed"
            kind = error.kind if error else "error"
            message = no_gpu_message(self.machine, error) or message
            raise _Stop(f"probe {self.name}: {kind}: {message}", kind, message)
        allocation = resolve_allocation(
            allocation, gpu_ids(self.machine), env.info.get("devices") or []
        )
        cuda = bool(env.info.get("cuda_available")) and int(env.info.get("device_count") or 0) > 0
        if not cuda:
            reason = env.info.get("no_cuda_reason") or "no CUDA device visible to torch"
            if self.name in ("transfer", "p2p") or self.backend == "nccl":
                raise _Stop(f"probe {self.name}: unavailable: {reason}", "unavailable", reason)
            self.backend = "gloo"
            self.progress(f"pcidoc: {reason}; running {self.name} with gloo on CPU")
        elif self.backend is None:
            self.backend = "nccl" if env.info.get("nccl_available", True) else "gloo"
        return env.info, allocation

    def _indices(self, allocation: Allocation, env_info: dict[str, Any]) -> list[int]:
        """The GPUs to measure: the job's, usable, placed in the child, not busy."""
        if self.name not in ("transfer", "p2p") and self.backend != "nccl":
            return []
        machine = self.machine
        indices, notes = probe_gpus(machine, self.gpus, allocation)
        if machine.gpus:
            view = cuda_view(machine, indices, env_info)
            notes += view.notes()
            indices = [i for i in indices if i in view.ordinals]
        else:
            count = int(env_info.get("device_count") or 0)
            indices = [i for i in range(count) if self.gpus is None or i in self.gpus]
        for note in notes:
            self.progress(f"pcidoc: {note}")
        if not indices:
            raise _Stop(f"probe {self.name}: no usable GPU", "unavailable", "no usable GPU")
        if self.name == "p2p" and len(indices) < 2:
            raise _Stop("probe p2p: needs at least 2 GPUs", "unavailable", "needs at least 2 GPUs")
        if self.ranks is not None and self.backend == "nccl" and max(self.ranks) > len(indices):
            self.progress(f"pcidoc: --ranks: only {len(indices)} GPU(s); larger counts dropped")
        if not getattr(self.args, "force", False):
            busy = preflight.busy_processes(machine, indices, preflight.live_gpu_processes(indices))
            if busy:
                message = preflight.refusal_message(busy)
                raise _Stop(f"probe {self.name}: refused: {message}", "refused", message)
        return indices

    def _spec(
        self, indices: list[int], env_info: dict[str, Any], allocation: Allocation
    ) -> ProbeSpec:
        machine, name, mode = self.machine, self.name, self.mode
        if name == "transfer":
            spec = transfer_spec(machine, indices, mode, env_info)
        elif name == "p2p":
            spec = p2p_spec(machine, indices, mode, env_info)
        else:
            assert self.backend is not None
            spec = collective_spec(
                name,
                machine,
                self.backend,
                mode,
                ranks=self.ranks,
                indices=indices if self.backend == "nccl" else None,
                env_info=env_info,
            )
            if not spec.params["members"]:
                raise _Stop(
                    f"probe {name}: no rank count fits", "unavailable", "no rank count fits"
                )
        timeout = getattr(self.args, "timeout", None)
        if timeout is not None:
            spec.deadline_s = float(timeout)
        spec.params["allocation"] = allocation.as_dict()
        self.state["spec"] = spec
        return spec

    def _measure(self, spec: ProbeSpec) -> int:
        display, progress = self.display, self.progress
        display.start(spec, spec.expected_s + params.TYPICAL_STARTUP_S.get(spec.name, 3.0))
        outcome = self.runner.run(spec, display.callback(spec))
        display.finish(spec, outcome)
        document = probe_json(self.name, self.mode, self.machine, spec, outcome)
        if not getattr(self.args, "json", False):
            for line in render_table(document):
                progress(line)
            line = measured_with_line(outcome.info)
            if line:
                progress(f"pcidoc: {line}")
        self.out.write(json.dumps(document, indent=2) + "\n")
        if outcome.errors:
            return int(ExitCode.BAD_INPUT)
        if not outcome.results:
            progress(f"pcidoc: probe {self.name}: no measurement")
            return int(ExitCode.BAD_INPUT)
        return int(ExitCode.OK)


def _fail(progress: Progress, message: str, document: dict[str, Any], out: Any) -> int:
    out.write(json.dumps(document, indent=2) + "\n")
    progress(f"pcidoc: {message}")
    return int(ExitCode.BAD_INPUT)

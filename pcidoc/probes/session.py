"""The parent-side probe API the CLI and the TUI share (no torch here).

* :class:`ProbeSession` is the one orchestrator: it checks torch, plans, runs each probe in a
  child process, appends the measurements (and the reasons for the ones that could not run) to
  ``capture.measurements`` and reports planned / started / progress / finished / ended events
  to a :class:`SessionListener`. The CLI listens with :mod:`pcidoc.probes.console` (stderr
  lines), the TUI with messages to its panes;
* :func:`plan_probes` is the pure planning step (which probes, which GPUs, parameters,
  deadlines), so it can be tested without running anything;
* :func:`probe_json` builds the ``pcidoc.probe/1`` document of ``pcidoc probe``.

:func:`measure` and :func:`probe_command` (the CLI entry points) live in
:mod:`pcidoc.probes.console`; the names here forward to them.

Every probe runs in a child process through a :class:`pcidoc.probes.runner.ProbeRunner`;
Ctrl-C ends the child's process group and then propagates as ``KeyboardInterrupt``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pcidoc.model.capture import Capture
from pcidoc.model.cpulist import format_cpulist
from pcidoc.model.measurements import (
    CollectiveMeasurement,
    P2PMatrixMeasurement,
    P2PVerification,
    ProbeError,
    ScalingMeasurement,
    TransferMeasurement,
)
from pcidoc.model.units import link_label
from pcidoc.probes import allocation as gpu_allocation
from pcidoc.probes import gpusets, params, preflight, stats
from pcidoc.probes.allocation import Allocation
from pcidoc.probes.cudautil import ALLOCATOR_VARIABLES
from pcidoc.probes.cudaview import cuda_view, gpu_ids
from pcidoc.probes.runner import (
    ProbeOutcome,
    ProbeProgress,
    ProbeRunner,
    ProbeSpec,
    SubprocessProbeRunner,
)

GPU_PROBES = ("transfer", "p2p", "allreduce", "scaling")
PROBE_SCHEMA = "pcidoc.probe/1"

Progress = Callable[[str], None]


# ---------------------------------------------------------------------------- planning


@dataclass
class Plan:
    """What :func:`measure` will run, and what it will not (with reasons)."""

    specs: list[ProbeSpec] = field(default_factory=list)
    errors: list[ProbeError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def estimate_s(self) -> float:
        """Typical total time: estimates plus typical start-up costs (the ``env`` probe too)."""
        return params.TYPICAL_STARTUP_S["env"] + sum(
            spec.expected_s + params.TYPICAL_STARTUP_S.get(spec.name, 3.0) for spec in self.specs
        )


def allocation_of(capture: Capture, environ: Any = None) -> Allocation:
    """The GPUs this job may use (``CUDA_VISIBLE_DEVICES``, Slurm, cgroup) among the capture's."""
    ids = [gpu_allocation.GpuId(g.index, g.uuid, g.bus_id) for g in capture.gpus]
    return gpu_allocation.current(ids, environ)


def probe_gpus(
    capture: Capture, gpus: Sequence[int] | None = None, allocation: Allocation | None = None
) -> tuple[list[int], list[str]]:
    """GPUs the probes may use: the capture's (or ``gpus``) inside the job's ``allocation``,
    minus MIG-enabled ones and GPUs NVML reported an error for (lost, reset required...),
    which are left out of every plan; the others keep their numbers.

    Returns:
        ``(indices, notes)``.
    """
    notes: list[str] = []
    known = sorted(g.index for g in capture.gpus)
    chosen = sorted(set(gpus)) if gpus is not None else known
    if allocation is not None and allocation.indices is not None:
        outside = [i for i in chosen if not allocation.allows(i)]
        if outside and gpus is not None:
            notes.append(
                f"{_gpu_list(outside)} skipped: outside this job's GPUs ({allocation.describe()})"
            )
        chosen = [i for i in chosen if allocation.allows(i)]
    usable = []
    for index in chosen:
        gpu = capture.gpu(index)
        if gpu is not None and gpu.nvml_error:
            notes.append(
                f"GPU{index} left out: NVML error {gpu.nvml_error} (the other GPUs keep their "
                "numbers)"
            )
            continue
        if gpu is not None and gpu.mig.enabled:
            notes.append(f"GPU{index} skipped: MIG is enabled (probes measure whole GPUs)")
            continue
        usable.append(index)
    return usable, notes


def gpu_entries(
    capture: Capture, indices: Sequence[int], env_info: dict[str, Any] | None = None
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Per-GPU parameters for the child and the environment that makes its ordinals right
    (:func:`pcidoc.probes.cudaview.cuda_view`: UUIDs, else the UUIDs or bus ids the ``env``
    probe reported). GPUs no CUDA device could be matched to are not in the entries.

    Returns:
        ``(entries, env)``; each entry has ``index``, ``ordinal``, ``bus_id``, ``cpus``,
        ``numa_node``.
    """
    view = cuda_view(capture, indices, env_info)
    entries: list[dict[str, Any]] = []
    for index in indices:
        if index not in view.ordinals:
            continue
        gpu = capture.gpu(index)
        entries.append(
            {
                "index": index,
                "ordinal": view.ordinals[index],
                "bus_id": gpu.bus_id if gpu is not None else None,
                "cpus": gpu.cpu_affinity if gpu is not None else None,
                "numa_node": gpu.numa_node if gpu is not None else None,
            }
        )
    return entries, view.env


def _numa_nodes(capture: Capture) -> list[dict[str, Any]]:
    return [{"id": n.id, "cpus": n.cpus, "distances": n.distances} for n in capture.host.numa_nodes]


def env_spec(capture: Capture | None = None, allocation: Allocation | None = None) -> ProbeSpec:
    """The ``env`` probe: what torch sees of the capture's usable GPUs (as the probes will:
    same ``CUDA_VISIBLE_DEVICES``). Without GPU facts, or when the user's
    ``CUDA_VISIBLE_DEVICES`` holds indices in CUDA's fastest-first order
    (:attr:`Allocation.resolve_in_child`), the child keeps the user's variables as they are and
    reports what they select."""
    env: dict[str, str] = {}
    resolve = allocation is not None and allocation.resolve_in_child
    if capture is not None and capture.gpus and not resolve:
        indices, _notes = probe_gpus(capture, None, allocation)
        if indices:  # nothing to name: leave the user's CUDA_VISIBLE_DEVICES as it is
            env = cuda_view(capture, indices).env
            if "CUDA_VISIBLE_DEVICES" not in env and allocation is not None and allocation.source:
                env = {}  # the user's list decides which GPUs the child sees, in its order
    return ProbeSpec(
        name="env",
        expected_s=2.0,
        startup_s=params.STARTUP_S["env"],
        env=env,
        label="torch environment",
    )


def transfer_spec(
    capture: Capture,
    indices: Sequence[int],
    mode: str,
    env_info: dict[str, Any] | None = None,
) -> ProbeSpec:
    """The transfer probe over ``indices`` (one child measures them in turn)."""
    entries, env = gpu_entries(capture, indices, env_info)
    numa = _numa_nodes(capture)
    numa_gpus: list[int] = []
    if len(numa) >= 2:
        if params.TRANSFER[mode].numa_every_gpu:
            numa_gpus = [e["index"] for e in entries]
        else:
            seen: set[Any] = set()
            for entry in entries:
                if entry["numa_node"] is not None and entry["numa_node"] not in seen:
                    seen.add(entry["numa_node"])
                    numa_gpus.append(entry["index"])
    expected = params.estimate_transfer_s(len(entries), len(numa), mode)
    return ProbeSpec(
        name="transfer",
        params={"mode": mode, "gpus": entries, "numa_nodes": numa, "numa_gpus": numa_gpus},
        expected_s=expected,
        startup_s=params.STARTUP_S["transfer"],
        env=env,
        label=f"transfer ({_gpu_list(indices)})",
    )


def p2p_spec(
    capture: Capture,
    indices: Sequence[int],
    mode: str,
    env_info: dict[str, Any] | None = None,
) -> ProbeSpec:
    """The P2P probe over every ordered pair of ``indices``."""
    entries, env = gpu_entries(capture, indices, env_info)
    set_aside = {k: os.environ[k] for k in ALLOCATOR_VARIABLES if os.environ.get(k)}
    return ProbeSpec(
        name="p2p",
        params={"mode": mode, "gpus": entries, "allocator_conf_set_aside": set_aside},
        expected_s=params.estimate_p2p_s(len(entries), mode),
        startup_s=params.STARTUP_S["p2p"],
        env=env,
        # Raw peer copies need buffers cudaDeviceEnablePeerAccess reaches: plain cudaMalloc
        # segments, not expandable segments nor cudaMallocAsync pools.
        unset_env=ALLOCATOR_VARIABLES,
        label=f"p2p ({_gpu_list(indices)})",
    )


def collective_spec(
    name: str,
    capture: Capture,
    backend: str,
    mode: str,
    ranks: Sequence[int] | None = None,
    indices: Sequence[int] | None = None,
    cpu_count: int | None = None,
    env_info: dict[str, Any] | None = None,
) -> ProbeSpec:
    """The ``allreduce``, ``scaling`` or ``collectives`` (both) probe: one launch covering
    every rank count.

    On GPUs (NCCL) the GPU set of each rank count comes from :func:`gpusets.choose_gpu_sets`;
    on CPU (gloo) rank counts are capped by the CPUs (:func:`gpusets.cpu_rank_cap`) unless
    given explicitly. Only GPUs a CUDA device is known for become ranks
    (:func:`pcidoc.probes.cudaview.cuda_view`), and rank r uses ``params["ordinals"][r]``.
    """
    cpus = cpu_count if cpu_count is not None else (os.cpu_count() or 2)
    env: dict[str, str] = {}
    ordinals: list[int] | None = None
    if backend == "nccl":
        available = list(indices if indices is not None else (g.index for g in capture.gpus))
        # Only GPUs a CUDA device is known for: a lost GPU must not become a rank.
        available = [i for i in available if i in cuda_view(capture, available, env_info).ordinals]
        counts = list(ranks) if ranks else gpusets.default_gpu_ranks(len(available))
        sets = gpusets.choose_gpu_sets(capture, counts, available)
        world_gpus = gpusets.world_order(sets)
        members = {str(k): [world_gpus.index(g) for g in v] for k, v in sets.items()}
        gpus_by_count = {str(k): v for k, v in sets.items()}
        view = cuda_view(capture, world_gpus, env_info)
        env = dict(view.env)
        ordinals = [view.ordinals[g] for g in world_gpus]
        world = len(world_gpus)
        threads = max(1, min(4, cpus // max(1, world)))
        label_gpus = f"nccl, {_gpu_list(world_gpus)}"
    else:
        counts = list(ranks) if ranks else gpusets.default_cpu_ranks(cpus)
        counts = sorted({k for k in counts if k >= 1})
        world = max(counts) if counts else 1
        members = {str(k): list(range(k)) for k in counts}
        gpus_by_count = {str(k): [] for k in counts}
        env["CUDA_VISIBLE_DEVICES"] = ""  # gloo on CPU tensors: keep the GPUs out of it
        threads = max(1, cpus // max(1, world))
        label_gpus = "gloo on CPU"
    rank_counts = sorted(int(k) for k in members)
    expected = 0.0
    if name in ("allreduce", "collectives"):
        expected += params.estimate_allreduce_s(rank_counts, backend, mode)
    if name in ("scaling", "collectives"):
        expected += params.estimate_scaling_s(rank_counts, backend, mode)
    env["OMP_NUM_THREADS"] = str(threads)
    spec_params: dict[str, Any] = {
        "mode": mode,
        "backend": backend,
        "world": world,
        "members": members,
        "gpus_by_count": gpus_by_count,
        "threads_per_rank": threads,
    }
    if ordinals is not None:
        spec_params["ordinals"] = ordinals  # rank r uses CUDA device ordinals[r]
    return ProbeSpec(
        name=name,
        params=spec_params,
        expected_s=expected,
        startup_s=params.STARTUP_S[name],
        env=env,
        label=f"{'allreduce+scaling' if name == 'collectives' else name} ({label_gpus}; "
        f"ranks {','.join(map(str, rank_counts))})",
    )


def _gpu_list(indices: Sequence[int]) -> str:
    if not indices:
        return "no GPUs"
    text = format_cpulist(list(indices)) or ""
    return "GPU" + text if len(indices) == 1 else "GPUs " + text


def unavailable_errors(
    names: Sequence[str], message: str, kind: str = "unavailable"
) -> list[ProbeError]:
    """One error per probe name with the same reason."""
    return [ProbeError(probe=name, message=message, kind=kind) for name in names]  # type: ignore[arg-type]


def plan_probes(
    capture: Capture,
    mode: str,
    force: bool,
    env_info: dict[str, Any],
    gpus: Sequence[int] | None = None,
    busy: list[preflight.BusyProcess] | None = None,
    cpu_count: int | None = None,
    allocation: Allocation | None = None,
) -> Plan:
    """Decide which probes run (pure given its inputs).

    Args:
        capture: The machine.
        mode: ``quick`` or ``full``.
        force: Run even when other processes use the GPUs.
        env_info: What the ``env`` probe reported (``cuda_available``, ``devices``...).
        gpus: Restrict to these GPU indices.
        busy: Other processes on the GPUs (from :mod:`preflight`).
        cpu_count: CPUs (for gloo rank counts).
        allocation: The GPUs this job may use (``None``: every GPU of the capture).
    """
    plan = Plan()
    cuda = bool(env_info.get("cuda_available")) and int(env_info.get("device_count") or 0) > 0
    if not cuda:
        reason = env_info.get("no_cuda_reason") or "no CUDA device visible to torch"
        plan.errors += unavailable_errors(("transfer", "p2p", "allreduce"), reason)
        if env_info.get("gloo_available", True):
            plan.specs.append(
                collective_spec("scaling", capture, "gloo", mode, cpu_count=cpu_count)
            )
            plan.notes.append(f"{reason}: the scaling probe runs with gloo on CPU instead")
        else:
            plan.errors += unavailable_errors(("scaling",), "torch has no gloo backend")
        return plan
    indices, notes = probe_gpus(capture, gpus, allocation)
    plan.notes += notes
    if capture.gpus:
        view = cuda_view(capture, indices, env_info)
        plan.notes += view.notes()
        indices = [i for i in indices if i in view.ordinals]
    if allocation is not None and allocation.source is not None and capture.gpus:
        plan.notes += allocation.notes
        plan.notes.append(f"GPUs of this job: {_gpu_list(indices)} ({allocation.describe()})")
    if not capture.gpus:
        # NVML gave us nothing but CUDA sees devices: measure them in CUDA (= PCI) order.
        indices = list(range(int(env_info.get("device_count") or 0)))
        if gpus is not None:
            indices = [i for i in indices if i in set(gpus)]
        plan.notes.append(
            "GPU facts are missing (NVML unavailable); GPUs numbered as CUDA sees them"
        )
    if not indices:
        plan.errors += unavailable_errors(GPU_PROBES, "no usable GPU to measure")
        return plan
    if busy and not force:
        message = preflight.refusal_message(busy)
        plan.errors += unavailable_errors(
            GPU_PROBES if len(indices) > 1 else ("transfer",), message, kind="refused"
        )
        return plan
    plan.specs.append(transfer_spec(capture, indices, mode, env_info))
    if len(indices) >= 2:
        plan.specs.append(p2p_spec(capture, indices, mode, env_info))
        if env_info.get("nccl_available", True):
            # One launch for both: torch, CUDA and NCCL start-up are paid once.
            plan.specs.append(
                collective_spec(
                    "collectives",
                    capture,
                    "nccl",
                    mode,
                    indices=indices,
                    cpu_count=cpu_count,
                    env_info=env_info,
                )
            )
        else:
            plan.errors += unavailable_errors(
                ("allreduce", "scaling"), "torch was built without NCCL"
            )
    return plan


# ---------------------------------------------------------------------------- applying


def apply_outcome(capture: Capture, spec: ProbeSpec, outcome: ProbeOutcome) -> None:
    """Append an outcome's measurements and errors to ``capture.measurements``."""
    m = capture.measurements
    for result in outcome.results:
        measurement = result.measurement
        if isinstance(measurement, TransferMeasurement):
            m.transfers.append(measurement)
        elif isinstance(measurement, P2PMatrixMeasurement):
            m.p2p.append(measurement)
        elif isinstance(measurement, P2PVerification):
            m.p2p_verification.append(measurement)
        elif isinstance(measurement, CollectiveMeasurement):
            m.collectives.append(measurement)
        elif isinstance(measurement, ScalingMeasurement):
            fill_slowest_edge(capture, spec, measurement)
            m.scaling.append(measurement)
    m.probe_errors.extend(_attributed_errors(spec, outcome))
    access = outcome.info.get("can_access_peer")
    probed = outcome.info.get("gpus")
    if spec.name == "p2p" and isinstance(access, list) and isinstance(probed, list):
        _record_peer_access(capture, probed, access)


def fill_slowest_edge(capture: Capture, spec: ProbeSpec | None, m: ScalingMeasurement) -> None:
    """The weakest link among the GPUs of the largest rank count, from the topology."""
    if m.slowest_edge is not None or m.backend != "nccl" or spec is None:
        return
    sets = spec.params.get("gpus_by_count") or {}
    if sets:
        largest = max(sets, key=lambda k: int(k))
        m.slowest_edge = gpusets.slowest_edge(capture, sets[largest])


def probe_names(spec: ProbeSpec) -> list[str]:
    """The probe names the doctor knows for a spec (``collectives`` is two of them)."""
    return ["allreduce", "scaling"] if spec.name == "collectives" else [spec.name]


def _attributed_errors(spec: ProbeSpec, outcome: ProbeOutcome) -> list[ProbeError]:
    """Errors under the probe names the checks know: a combined ``collectives`` run reports its
    errors as ``allreduce`` and/or ``scaling`` (each one that produced no result)."""
    if spec.name != "collectives" or not outcome.errors:
        return list(outcome.errors)
    kinds = {r.kind for r in outcome.results}
    missing = [
        name
        for name, kind in (("allreduce", "collective"), ("scaling", "scaling"))
        if kind not in kinds
    ]
    targets = missing or ["scaling"]
    return [
        error.model_copy(update={"probe": name}) for error in outcome.errors for name in targets
    ]


def _record_peer_access(capture: Capture, probed: list[int], access: list[list[Any]]) -> None:
    status = capture.p2p
    if not status.gpus:
        status.gpus = sorted(probed)
    order = status.gpus
    matrix = status.can_access_peer
    if matrix is None or len(matrix) != len(order):
        matrix = [[None] * len(order) for _ in order]
    for a, ga in enumerate(probed):
        for b, gb in enumerate(probed):
            if ga in order and gb in order and a < len(access) and b < len(access[a]):
                value = access[a][b]
                matrix[order.index(ga)][order.index(gb)] = None if value is None else bool(value)
    status.can_access_peer = matrix


# -------------------------------------------------------------------------- orchestrator


class SessionListener:
    """What a :class:`ProbeSession` reports, one method per event; every method is a no-op
    here. The CLI's console listener prints lines; the TUI's posts messages. Methods are
    called from the thread that runs the session (the reading thread for ``progress``)."""

    def env_started(self) -> None:
        """The ``env`` probe (what torch sees) is about to run."""

    def env_finished(self, outcome: ProbeOutcome, errors: list[ProbeError]) -> None:
        """The ``env`` probe ended; ``errors`` is non-empty when no probe can run."""

    def planned(self, plan: Plan) -> None:
        """The probes that will run (``plan.specs``) and those that will not (``errors``)."""

    def started(self, spec: ProbeSpec) -> None:
        """One probe starts."""

    def progress(self, spec: ProbeSpec, event: ProbeProgress) -> None:
        """A running probe reported progress."""

    def finished(self, spec: ProbeSpec, outcome: ProbeOutcome) -> None:
        """One probe ended; its measurements are already in the capture."""

    def skipped(self, spec: ProbeSpec, errors: list[ProbeError]) -> None:
        """A planned probe did not start (cancelled before its turn)."""

    def ended(self, cancelled: bool) -> None:
        """The session is over (normally, cancelled, or interrupted)."""


BusyCheck = Callable[[Capture, list[int]], list[preflight.BusyProcess]]


def live_busy_check(capture: Capture, indices: list[int]) -> list[preflight.BusyProcess]:
    """Other processes on ``indices``: the capture's, plus what NVML lists right now."""
    return preflight.busy_processes(capture, indices, preflight.live_gpu_processes(indices))


def capture_busy_check(capture: Capture, indices: list[int]) -> list[preflight.BusyProcess]:
    """Other processes on ``indices`` as the capture recorded them (no live NVML query)."""
    return preflight.busy_processes(capture, indices, None)


def no_gpu_message(capture: Capture, torch_error: ProbeError | None) -> str | None:
    """ "no CUDA GPU" first when the machine has none and torch is missing too (both hold)."""
    if capture.gpus or torch_error is None or torch_error.kind != "unavailable":
        return None
    if "not installed" not in torch_error.message and "could not be imported" not in (
        torch_error.message
    ):
        return None
    return f"no CUDA GPU on this machine (NVML found none); also {torch_error.message}"


class ProbeSession:
    """One probe run over a capture: the orchestrator the CLI and the TUI share.

    ``run()`` checks what torch sees (the ``env`` probe, with the same ``CUDA_VISIBLE_DEVICES``
    the probes get), plans (:func:`plan_probes`), runs each probe in a child process through the
    runner, appends measurements and the reasons for the missing ones to
    ``capture.measurements``, and reports every step to the listener.

    Args:
        capture: The machine; its ``measurements`` are extended in place.
        mode: ``quick`` or ``full``.
        listener: Receives planned / started / progress / finished / ended events.
        runner: The probe runner (default: child processes; tests pass a fake).
        force: Measure even when other processes use the GPUs.
        gpus: Restrict the GPU probes to these indices.
        busy_check: Which other processes use the GPUs (``None``: do not look).
        cancel: Stops the running probe and skips the rest when set.
        allocation: The GPUs this job may use (default: read from ``CUDA_VISIBLE_DEVICES``,
            Slurm's variables and the device cgroup when the session runs).
    """

    def __init__(
        self,
        capture: Capture,
        mode: str,
        listener: SessionListener | None = None,
        *,
        runner: ProbeRunner | None = None,
        force: bool = False,
        gpus: Sequence[int] | None = None,
        busy_check: BusyCheck | None = live_busy_check,
        cancel: threading.Event | None = None,
        allocation: Allocation | None = None,
    ) -> None:
        if mode not in params.MODES:
            raise ValueError(f"unknown probe mode {mode!r}")
        self.capture = capture
        self.mode = mode
        self.listener = listener or SessionListener()
        self.runner = runner or SubprocessProbeRunner()
        self.force = force
        self.gpus = gpus
        self.busy_check = busy_check
        self.cancel = cancel
        self.plan: Plan | None = None
        self.allocation = allocation

    @property
    def cancelled(self) -> bool:
        """True once the caller asked to stop."""
        return self.cancel is not None and self.cancel.is_set()

    def run(self) -> None:
        """Run the session (see the class docstring).

        Raises:
            KeyboardInterrupt: Ctrl-C or SIGTERM/SIGHUP; the running probe's processes have
                been ended, and what it had measured is in the capture.
        """
        try:
            self._run()
        finally:
            self.listener.ended(self.cancelled)

    def _run(self) -> None:
        capture = self.capture
        if self.allocation is None:
            self.allocation = allocation_of(capture)
        self.listener.env_started()
        env = run_env(self.runner, None, self.cancel, capture, self.allocation)
        self.allocation = gpu_allocation.resolve(
            self.allocation, gpu_ids(capture), env.info.get("devices") or []
        )
        indices, _notes = probe_gpus(capture, self.gpus, self.allocation)
        busy: list[preflight.BusyProcess] = []
        if indices and not self.force and self.busy_check is not None:
            busy = self.busy_check(capture, indices)
        if not env.info:
            errors = self._env_errors(env)
            capture.measurements.probe_errors.extend(errors)
            self.listener.env_finished(env, errors)
            return
        self.listener.env_finished(env, [])
        plan = plan_probes(
            capture, self.mode, self.force, env.info, self.gpus, busy, allocation=self.allocation
        )
        for spec in plan.specs:
            spec.params["allocation"] = self.allocation.as_dict()
        self.plan = plan
        capture.measurements.probe_errors.extend(plan.errors)
        self.listener.planned(plan)
        for position, spec in enumerate(plan.specs):
            if self.cancelled:
                for rest in plan.specs[position:]:
                    errors = unavailable_errors(
                        probe_names(rest), "cancelled before it started", "interrupted"
                    )
                    capture.measurements.probe_errors.extend(errors)
                    self.listener.skipped(rest, errors)
                return
            self._run_one(spec, plan.specs[position + 1 :])

    def _env_errors(self, env: ProbeOutcome) -> list[ProbeError]:
        error = env.error
        kind = error.kind if error else "error"
        message = error.message if error else "the torch environment probe failed"
        first = no_gpu_message(self.capture, error)
        if first is not None:
            message = first
        elif kind in ("crash", "timeout", "error"):
            message = f"torch could not start: {message}"
        return unavailable_errors(GPU_PROBES, message, kind)

    def _run_one(self, spec: ProbeSpec, later: list[ProbeSpec]) -> None:
        self.listener.started(spec)

        def on_progress(event: ProbeProgress) -> None:
            self.listener.progress(spec, event)

        try:
            outcome = self.runner.run(spec, on_progress, self.cancel)
        except KeyboardInterrupt as exc:
            partial = getattr(exc, "outcome", None)
            if isinstance(partial, ProbeOutcome):
                apply_outcome(self.capture, spec, partial)
            else:
                self.capture.measurements.probe_errors.extend(
                    unavailable_errors(probe_names(spec), "interrupted", "interrupted")
                )
            how = "interrupted by Ctrl-C"
            if partial is not None and partial.error is not None:
                how = partial.error.message.split(";")[0]
            self.capture.measurements.probe_errors.extend(
                unavailable_errors(
                    [n for s in later for n in probe_names(s)], how, kind="interrupted"
                )
            )
            raise
        apply_outcome(self.capture, spec, outcome)
        self.listener.finished(spec, outcome)


def run_env(
    runner: ProbeRunner,
    on_progress: Callable[[ProbeProgress], None] | None = None,
    cancel: threading.Event | None = None,
    capture: Capture | None = None,
    allocation: Allocation | None = None,
) -> ProbeOutcome:
    """Run the ``env`` probe (what torch sees), restricted like the probes of ``capture``."""
    return runner.run(env_spec(capture, allocation), on_progress, cancel)


def measure(*args: Any, **kwargs: Any) -> None:
    """:func:`pcidoc.probes.console.measure` (the CLI's probe run, progress on stderr)."""
    from pcidoc.probes import console

    console.measure(*args, **kwargs)


def probe_command(*args: Any, **kwargs: Any) -> int:
    """:func:`pcidoc.probes.console.probe_command` (``pcidoc probe NAME``)."""
    from pcidoc.probes import console

    return console.probe_command(*args, **kwargs)


def transfer_annotations(capture: Capture, t: TransferMeasurement) -> dict[str, Any]:
    """% of the negotiated link's ceiling (and of NCCL's model of it) for a transfer.

    The link read under load is used when the probe saw it; else the link at collection time
    (which an idle GPU may have trained down), else the maximum.
    """
    gen, width, basis = t.link_gen_under_load, t.link_width_under_load, "under load"
    gpu = capture.gpu(t.gpu)
    if (gen is None or width is None) and gpu is not None:
        if gpu.pcie.current_gen and gpu.pcie.current_width:
            gen, width, basis = gpu.pcie.current_gen, gpu.pcie.current_width, "at collection"
        elif gpu.pcie.max_gen and gpu.pcie.max_width:
            gen, width, basis = gpu.pcie.max_gen, gpu.pcie.max_width, "maximum"
    ceiling = stats.pcie_ceiling_gbps(gen, width)
    model = stats.pcie_nccl_model(gen, width)
    return {
        "ceiling_link": None if ceiling is None else f"{link_label(gen, width)} ({basis})",
        "ceiling_gbps": None if ceiling is None else round(ceiling, 2),
        "percent_of_ceiling": stats.percent_of(t.bandwidth_gbps, ceiling),
        "nccl_model_gbps": model,
        "percent_of_nccl_model": stats.percent_of(t.bandwidth_gbps, model),
    }


_KIND_KEYS = {
    "transfer": "transfers",
    "p2p": "p2p",
    "p2p_verification": "p2p_verification",
    "collective": "collectives",
    "scaling": "scaling",
}


def probe_json(
    name: str,
    mode: str,
    capture: Capture,
    spec: ProbeSpec | None,
    outcome: ProbeOutcome | None,
    errors: Sequence[ProbeError] = (),
) -> dict[str, Any]:
    """The ``pcidoc.probe/1`` document printed by ``pcidoc probe``.

    Each measurement is its model dump (``conditions`` says how it was taken) plus, for
    transfers, the % of the link ceiling (:func:`transfer_annotations`).
    """
    measurements: dict[str, list[dict[str, Any]]] = {}
    if outcome is not None:
        for result in outcome.results:
            if isinstance(result.measurement, ScalingMeasurement):
                fill_slowest_edge(capture, spec, result.measurement)
            record = result.measurement.model_dump(mode="json")
            if isinstance(result.measurement, TransferMeasurement):
                record.update(transfer_annotations(capture, result.measurement))
            measurements.setdefault(_KIND_KEYS[result.kind], []).append(record)
    all_errors = list(errors) + (list(outcome.errors) if outcome else [])
    info = {} if outcome is None else outcome.info
    return {
        "schema": PROBE_SCHEMA,
        "probe": name,
        "mode": mode,
        "params": None
        if spec is None
        else {k: v for k, v in spec.params.items() if k in ("backend", "world", "gpus_by_count")},
        "deadline_s": None if spec is None else round(spec.deadline, 1),
        "wall_s": None if outcome is None else round(outcome.wall_s, 2),
        "ok": not all_errors,
        "gpus_used": None if spec is None else gpus_used(spec),
        "allocation": None if spec is None else spec.params.get("allocation"),
        "measured_with": {
            "python": info.get("python"),
            "python_version": info.get("python_version"),
            "torch_version": info.get("torch_version"),
        },
        "measurements": measurements,
        "errors": [e.model_dump(mode="json") for e in all_errors],
        "info": info,
    }


def gpus_used(spec: ProbeSpec) -> list[int]:
    """The GPU indices a probe spec measures (``[]``: gloo on CPU)."""
    entries = spec.params.get("gpus") or []
    used = {int(e["index"]) for e in entries if isinstance(e, dict) and "index" in e}
    for members in (spec.params.get("gpus_by_count") or {}).values():
        used.update(int(g) for g in members)
    return sorted(used)


__all__ = [
    "GPU_PROBES",
    "Plan",
    "ProbeSession",
    "SessionListener",
    "apply_outcome",
    "collective_spec",
    "measure",
    "p2p_spec",
    "plan_probes",
    "probe_command",
    "probe_json",
    "transfer_spec",
]

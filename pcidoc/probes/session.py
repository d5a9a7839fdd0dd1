"""The parent-side probe API the CLI and the TUI call (no torch here).

* :func:`measure` runs the probes that make sense for a capture and appends their measurements
  (and the reasons for the ones that could not run) to ``capture.measurements``;
* :func:`probe_command` implements ``pcidoc probe NAME``;
* :func:`plan_probes` is the pure planning step both use (which probes, which GPUs, parameters,
  deadlines), so it can be tested without running anything.

Every probe runs in a child process through a :class:`pcidoc.probes.runner.ProbeRunner`;
Ctrl-C ends the child's process group and then propagates as ``KeyboardInterrupt``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pcidoc.errors import ExitCode
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
from pcidoc.model.units import format_bytes, link_label
from pcidoc.probes import gpusets, params, preflight, stats
from pcidoc.probes.protocol import INSTALL_HINT
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


def probe_gpus(capture: Capture, gpus: Sequence[int] | None = None) -> tuple[list[int], list[str]]:
    """GPUs the probes may use: the capture's (or ``gpus``), minus MIG-enabled ones.

    Returns:
        ``(indices, notes)``.
    """
    notes: list[str] = []
    known = sorted(g.index for g in capture.gpus)
    chosen = sorted(set(gpus)) if gpus is not None else known
    usable = []
    for index in chosen:
        gpu = capture.gpu(index)
        if gpu is not None and gpu.mig.enabled:
            notes.append(f"GPU{index} skipped: MIG is enabled (probes measure whole GPUs)")
            continue
        usable.append(index)
    return usable, notes


def gpu_entries(
    capture: Capture, indices: Sequence[int], env_info: dict[str, Any] | None = None
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Per-GPU parameters for the child and the environment that makes its ordinals match.

    With the UUID of every GPU known, the child gets ``CUDA_VISIBLE_DEVICES=<uuids>`` and GPU k
    of the list is CUDA device k. Otherwise CUDA devices are matched by PCI bus id (from the
    ``env`` probe), else assumed to follow NVML order (both enumerate in PCI bus order with
    ``CUDA_DEVICE_ORDER=PCI_BUS_ID``, which every child gets).

    Returns:
        ``(entries, env)``; each entry has ``index``, ``ordinal``, ``bus_id``, ``cpus``,
        ``numa_node``.
    """
    entries: list[dict[str, Any]] = []
    devices = (env_info or {}).get("devices") or []
    by_bus = {d.get("bus_id"): d.get("ordinal") for d in devices if d.get("bus_id")}
    uuids = []
    for index in indices:
        gpu = capture.gpu(index)
        uuids.append(gpu.uuid if gpu is not None else None)
    use_uuids = bool(indices) and all(uuids)
    for position, index in enumerate(indices):
        gpu = capture.gpu(index)
        bus = gpu.bus_id if gpu is not None else None
        if use_uuids:
            ordinal = position
        elif bus and bus in by_bus:
            ordinal = int(by_bus[bus])
        else:
            ordinal = index
        entries.append(
            {
                "index": index,
                "ordinal": ordinal,
                "bus_id": bus,
                "cpus": gpu.cpu_affinity if gpu is not None else None,
                "numa_node": gpu.numa_node if gpu is not None else None,
            }
        )
    env = {"CUDA_VISIBLE_DEVICES": ",".join(str(u) for u in uuids)} if use_uuids else {}
    return entries, env


def _numa_nodes(capture: Capture) -> list[dict[str, Any]]:
    return [{"id": n.id, "cpus": n.cpus, "distances": n.distances} for n in capture.host.numa_nodes]


def env_spec(capture: Capture | None = None) -> ProbeSpec:
    """The ``env`` probe: what torch sees of the capture's usable GPUs (as the probes will:
    same ``CUDA_VISIBLE_DEVICES``)."""
    env: dict[str, str] = {}
    if capture is not None and capture.gpus:
        indices, _notes = probe_gpus(capture)
        _entries, env = gpu_entries(capture, indices)
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
    return ProbeSpec(
        name="p2p",
        params={"mode": mode, "gpus": entries},
        expected_s=params.estimate_p2p_s(len(entries), mode),
        startup_s=params.STARTUP_S["p2p"],
        env=env,
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
) -> ProbeSpec:
    """The ``allreduce``, ``scaling`` or ``collectives`` (both) probe: one launch covering
    every rank count.

    On GPUs (NCCL) the GPU set of each rank count comes from :func:`gpusets.choose_gpu_sets`;
    on CPU (gloo) rank counts are capped by the CPUs (:func:`gpusets.cpu_rank_cap`) unless
    given explicitly.
    """
    cpus = cpu_count if cpu_count is not None else (os.cpu_count() or 2)
    env: dict[str, str] = {}
    if backend == "nccl":
        available = list(indices if indices is not None else (g.index for g in capture.gpus))
        counts = list(ranks) if ranks else gpusets.default_gpu_ranks(len(available))
        sets = gpusets.choose_gpu_sets(capture, counts, available)
        world_gpus = gpusets.world_order(sets)
        members = {str(k): [world_gpus.index(g) for g in v] for k, v in sets.items()}
        gpus_by_count = {str(k): v for k, v in sets.items()}
        _entries, env = gpu_entries(capture, world_gpus)
        if not env:
            env = {"CUDA_VISIBLE_DEVICES": ",".join(str(g) for g in world_gpus)}
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
    return ProbeSpec(
        name=name,
        params={
            "mode": mode,
            "backend": backend,
            "world": world,
            "members": members,
            "gpus_by_count": gpus_by_count,
            "threads_per_rank": threads,
        },
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
    indices, notes = probe_gpus(capture, gpus)
    plan.notes += notes
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
                    "collectives", capture, "nccl", mode, indices=indices, cpu_count=cpu_count
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
            if measurement.slowest_edge is None and measurement.backend == "nccl":
                sets = spec.params.get("gpus_by_count") or {}
                if sets:
                    largest = max(sets, key=lambda k: int(k))
                    measurement.slowest_edge = gpusets.slowest_edge(capture, sets[largest])
            m.scaling.append(measurement)
    m.probe_errors.extend(_attributed_errors(spec, outcome))
    access = outcome.info.get("can_access_peer")
    probed = outcome.info.get("gpus")
    if spec.name == "p2p" and isinstance(access, list) and isinstance(probed, list):
        _record_peer_access(capture, probed, access)


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


# ------------------------------------------------------------------------------ measure


def run_env(
    runner: ProbeRunner,
    display: ProgressDisplay | None = None,
    cancel: threading.Event | None = None,
    capture: Capture | None = None,
) -> ProbeOutcome:
    """Run the ``env`` probe (what torch sees)."""
    spec = env_spec(capture)
    on_progress = display.callback(spec) if display else None
    outcome = runner.run(spec, on_progress, cancel)
    no_gpu = capture.unavailable.get("gpus") if capture is not None and not capture.gpus else None
    if not outcome.info and no_gpu and outcome.errors:
        # Installing torch would not help on a machine without a GPU: say that first.
        outcome.errors = [
            e.model_copy(update={"message": f"no CUDA GPU on this machine ({no_gpu}); {e.message}"})
            for e in outcome.errors
        ]
    return outcome


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
) -> None:
    """Run the probes that make sense for ``capture``; append to ``capture.measurements``.

    Transfer per GPU; P2P, all-reduce and scaling when there are two or more GPUs; on a machine
    without CUDA the scaling probe still runs with gloo on CPU, and the CUDA probes are recorded
    as ``unavailable`` with the reason (the doctor's checks then skip with it).

    Args:
        capture: The machine; its ``measurements`` are extended in place.
        mode: ``quick`` or ``full``.
        force: Measure even when other processes use the GPUs.
        progress: Writes one line of progress (the CLI: stderr).
        runner: The probe runner (default: subprocesses; the TUI and tests pass a fake).
        cancel: Stops the running probe and skips the rest when set.
        gpus: Restrict the GPU probes to these indices.
        live_processes: Also ask NVML, right now, which processes use the GPUs.

    Raises:
        KeyboardInterrupt: Ctrl-C; the running probe's processes have been ended.
        ValueError: unknown ``mode``.
    """
    if mode not in params.MODES:
        raise ValueError(f"unknown probe mode {mode!r}")
    runner = runner or SubprocessProbeRunner()
    display = ProgressDisplay(progress)
    indices, _notes = probe_gpus(capture, gpus)
    busy: list[preflight.BusyProcess] = []
    if indices and not force:
        live = preflight.live_gpu_processes(indices) if live_processes else None
        busy = preflight.busy_processes(capture, indices, live)
    progress(f"pcidoc: probes ({mode}): checking torch and CUDA...")
    env = run_env(runner, None, cancel, capture)
    if not env.info:
        error = env.error
        kind = error.kind if error else "error"
        message = error.message if error else "the torch environment probe failed"
        if kind in ("crash", "timeout", "error"):
            message = f"torch could not start: {message}"
        capture.measurements.probe_errors.extend(unavailable_errors(GPU_PROBES, message, kind))
        progress(f"pcidoc: probes unavailable: {message}")
        return
    plan = plan_probes(capture, mode, force, env.info, gpus, busy)
    for note in plan.notes:
        progress(f"pcidoc: {note}")
    for error in plan.errors:
        if error.kind == "refused":
            progress(f"pcidoc: probe {error.probe}: refused: {error.message}")
    capture.measurements.probe_errors.extend(plan.errors)
    if not plan.specs:
        return
    names = ", ".join(spec.label or spec.name for spec in plan.specs)
    progress(f"pcidoc: probes ({mode}): {names}; about {plan.estimate_s:.0f} s")
    for position, spec in enumerate(plan.specs):
        if cancel is not None and cancel.is_set():
            capture.measurements.probe_errors.extend(
                unavailable_errors(
                    [n for s in plan.specs[position:] for n in probe_names(s)],
                    "cancelled before it started",
                    kind="interrupted",
                )
            )
            return
        display.start(spec, spec.expected_s + params.TYPICAL_STARTUP_S.get(spec.name, 3.0))
        try:
            outcome = runner.run(spec, display.callback(spec), cancel)
        except KeyboardInterrupt:
            capture.measurements.probe_errors.extend(
                unavailable_errors(
                    [n for s in plan.specs[position:] for n in probe_names(s)],
                    "interrupted by Ctrl-C",
                    kind="interrupted",
                )
            )
            raise
        apply_outcome(capture, spec, outcome)
        display.finish(spec, outcome)


# -------------------------------------------------------------------------- pcidoc probe


def _parse_int_list(text: str | None, option: str) -> list[int] | None:
    if text is None:
        return None
    values: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit():
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

    Each measurement is its model dump, plus ``extra`` (numbers the model does not hold) and,
    for transfers, the % of the link ceiling (:func:`transfer_annotations`).
    """
    measurements: dict[str, list[dict[str, Any]]] = {}
    if outcome is not None:
        for result in outcome.results:
            record = result.measurement.model_dump(mode="json")
            if isinstance(result.measurement, TransferMeasurement):
                record.update(transfer_annotations(capture, result.measurement))
            if result.extra:
                record["extra"] = result.extra
            measurements.setdefault(_KIND_KEYS[result.kind], []).append(record)
    all_errors = list(errors) + (list(outcome.errors) if outcome else [])
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
        "measurements": measurements,
        "errors": [e.model_dump(mode="json") for e in all_errors],
        "info": {} if outcome is None else outcome.info,
    }


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
        for row in c.get("rows", []):
            busbw = row.get("busbw_gbps")
            lines.append(
                f"  {format_bytes(row['size_bytes']):>10}  {row['time_us']:>10.1f} us  "
                f"algbw {row['algbw_gbps']:.3f} GB/s  busbw "
                + ("n/a (one rank)" if busbw is None else f"{busbw:.3f} GB/s")
            )
    for s in m.get("scaling", []):
        lines.append(
            f"scaling {s['backend']} model {s.get('model_params')} params, batch "
            f"{s.get('per_rank_batch')}/rank, slowest edge {s.get('slowest_edge')}"
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
        0 on success, 3 on a probe error / unavailable / refused / bad option, 130 on Ctrl-C.
    """
    out = stdout or sys.stdout
    name: str = args.name
    mode: str = getattr(args, "mode", "quick") or "quick"
    try:
        gpus = _parse_int_list(getattr(args, "gpus", None), "--gpus")
        ranks = _parse_int_list(getattr(args, "ranks", None), "--ranks")
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
    runner = runner or SubprocessProbeRunner()
    display = ProgressDisplay(progress)
    try:
        return _probe_command(
            args, name, mode, gpus, ranks, progress, runner, display, capture, out
        )
    except KeyboardInterrupt:
        progress("pcidoc: interrupted; the probe's processes were stopped")
        return int(ExitCode.INTERRUPTED)


def _fail(progress: Progress, message: str, document: dict[str, Any], out: Any) -> int:
    out.write(json.dumps(document, indent=2) + "\n")
    progress(f"pcidoc: {message}")
    return int(ExitCode.BAD_INPUT)


def _probe_command(
    args: Any,
    name: str,
    mode: str,
    gpus: list[int] | None,
    ranks: list[int] | None,
    progress: Progress,
    runner: ProbeRunner,
    display: ProgressDisplay,
    capture: Capture | None,
    out: Any,
) -> int:
    backend: str | None = getattr(args, "backend", None)
    force = bool(getattr(args, "force", False))
    timeout = getattr(args, "timeout", None)
    machine = capture if capture is not None else _collect(progress)
    known = {g.index for g in machine.gpus}
    if gpus is not None and known and not set(gpus) <= known:
        missing = ", ".join(str(g) for g in sorted(set(gpus) - known))
        progress(
            f"pcidoc: --gpus: no GPU {missing} on this machine (GPUs: "
            f"{format_cpulist(sorted(known))})"
        )
        return int(ExitCode.BAD_INPUT)

    def error_document(kind: str, message: str) -> dict[str, Any]:
        error = ProbeError(probe=name, message=message, kind=kind)  # type: ignore[arg-type]
        return probe_json(name, mode, machine, None, None, [error])

    needs_cuda = name in ("transfer", "p2p") or backend == "nccl"
    env_info: dict[str, Any] = {}
    if backend != "gloo":
        env = run_env(runner, None, None, machine)
        if not env.info:
            error = env.error
            message = error.message if error else "the torch environment probe failed"
            kind = error.kind if error else "error"
            return _fail(
                progress, f"probe {name}: {kind}: {message}", error_document(kind, message), out
            )
        env_info = env.info
        cuda = bool(env_info.get("cuda_available")) and int(env_info.get("device_count") or 0) > 0
        if not cuda:
            reason = env_info.get("no_cuda_reason") or "no CUDA device visible to torch"
            if needs_cuda:
                return _fail(
                    progress,
                    f"probe {name}: unavailable: {reason}",
                    error_document("unavailable", reason),
                    out,
                )
            backend = "gloo"
            progress(f"pcidoc: {reason}; running {name} with gloo on CPU")
        elif backend is None:
            backend = "nccl" if env_info.get("nccl_available", True) else "gloo"
    indices: list[int] = []
    if name in ("transfer", "p2p") or backend == "nccl":
        indices, notes = probe_gpus(machine, gpus)
        for note in notes:
            progress(f"pcidoc: {note}")
        if not machine.gpus:
            count = int(env_info.get("device_count") or 0)
            indices = [i for i in range(count) if gpus is None or i in gpus]
        if not indices:
            return _fail(
                progress,
                f"probe {name}: no usable GPU",
                error_document("unavailable", "no usable GPU"),
                out,
            )
        if name == "p2p" and len(indices) < 2:
            return _fail(
                progress,
                "probe p2p: needs at least 2 GPUs",
                error_document("unavailable", "needs at least 2 GPUs"),
                out,
            )
        if ranks is not None and backend == "nccl" and max(ranks) > len(indices):
            progress(f"pcidoc: --ranks: only {len(indices)} GPU(s); larger counts dropped")
        if not force:
            busy = preflight.busy_processes(machine, indices, preflight.live_gpu_processes(indices))
            if busy:
                message = preflight.refusal_message(busy)
                return _fail(
                    progress,
                    f"probe {name}: refused: {message}",
                    error_document("refused", message),
                    out,
                )
    if name == "transfer":
        spec = transfer_spec(machine, indices, mode, env_info)
    elif name == "p2p":
        spec = p2p_spec(machine, indices, mode, env_info)
    else:
        assert backend is not None
        spec = collective_spec(
            name,
            machine,
            backend,
            mode,
            ranks=ranks,
            indices=indices if backend == "nccl" else None,
        )
        if not spec.params["members"]:
            return _fail(
                progress,
                f"probe {name}: no rank count fits",
                error_document("unavailable", "no rank count fits"),
                out,
            )
    if timeout is not None:
        spec.deadline_s = float(timeout)
    display.start(spec, spec.expected_s + params.TYPICAL_STARTUP_S.get(spec.name, 3.0))
    outcome = runner.run(spec, display.callback(spec))
    display.finish(spec, outcome)
    document = probe_json(name, mode, machine, spec, outcome)
    if not getattr(args, "json", False):
        for line in render_table(document):
            progress(line)
    out.write(json.dumps(document, indent=2) + "\n")
    if outcome.errors:
        return int(ExitCode.BAD_INPUT)
    if not outcome.results:
        progress(f"pcidoc: probe {name}: no measurement")
        return int(ExitCode.BAD_INPUT)
    return int(ExitCode.OK)


__all__ = [
    "INSTALL_HINT",
    "Plan",
    "ProgressDisplay",
    "apply_outcome",
    "collective_spec",
    "measure",
    "p2p_spec",
    "plan_probes",
    "probe_command",
    "probe_json",
    "render_table",
    "transfer_spec",
]

"""The loop of ``pcidoc watch`` (the command, its options and its NVML session are
:mod:`pcidoc.cli.watch`): live counters and live checks of this machine, as change events.

The machine is collected once; then every ``--interval`` seconds the counter sampler
(:mod:`pcidoc.collect.counters`: one NVML field-values call per GPU, no 20 ms throughput calls)
reads the link state and the cumulative counters, they update the facts, and the doctor re-runs
over the updated facts (its checks are pure and take milliseconds). Each change becomes one JSON
line:

* ``link_changed``: a GPU's negotiated PCIe generation or width changed (``downtrained`` when the
  new rate is lower); with ``port`` when it is the link of the port the GPU hangs off (sysfs);
* ``replays_grew`` / ``aer_grew`` / ``nvlink_errors_grew``: a cumulative error counter grew
  (with the delta and the rate per second);
* ``nvlink_down`` / ``nvlink_up``;
* ``check_changed``: a check changed severity (with the new summary);
* ``sample_error``: the sampler could not read some counters (once per distinct message);
* ``nccl_ras``: the ranks NCCL's RAS service on this node names changed (queried read-only on
  ``localhost:28028`` every 30 s when a job listens; the report also feeds ``nccl.ras``). Only
  a listener of root's, of the user running ``watch`` or of a ``--ras-user`` is read
  (:mod:`pcidoc.collect.nccl_ras_client`); another is an ``nccl_ras_error`` line.

The first line is ``started`` with the initial worst verdict. The ``--prom`` file is rewritten
atomically after every sample (verdict metrics of :mod:`pcidoc.fleet.prom` plus the time of the
last sample, and per device the link transitions and transitions per minute). Every change of
a GPU's or its upstream port's link is kept with its time (:mod:`pcidoc.watch.flaps`) and judged
by ``pcie.link-flap`` at each diagnosis. Ctrl-C ends the loop with exit code 130, SIGTERM
with 143 and SIGHUP with 129 (one line on stderr; no temporary file stays behind). Clock, sleep
and the NVML backend are injectable so that tests drive the loop with the fake backend on a fake
clock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pcidoc.errors import ExitCode, PcidocError
from pcidoc.model.counters import changed_links

if TYPE_CHECKING:
    from pcidoc.collect.counters import CounterSampler
    from pcidoc.model.capture import Capture
    from pcidoc.model.counters import CounterSample, GpuCounters, NvLinkCounter
    from pcidoc.model.report import Report
    from pcidoc.watch.flaps import PortReader


def _link(gen: int | None, width: int | None) -> str | None:
    if gen is None or width is None:
        return None
    return f"Gen{gen} x{width}"


class Watcher:
    """Turns successive counter samples into facts, verdicts and change events.

    Args:
        capture: The machine collected once at start; its GPU facts are updated in place.
        sampler: A counter sampler over its GPUs.
        wall_time: Returns the time stamp written into events (ISO 8601 UTC).
        node: Node name for the events and the metrics.
        port_reader: Reads (gen, width) of a GPU's upstream port by bus id (sysfs); None to
            record the GPUs' own links only.
    """

    def __init__(
        self,
        capture: Capture,
        sampler: CounterSampler,
        wall_time: Callable[[], str],
        node: str | None = None,
        ras: Any = None,
        port_reader: PortReader | None = None,
    ) -> None:
        from pcidoc.watch.flaps import FlapRecorder

        self.capture = capture
        self.ras = ras
        """A :class:`~pcidoc.collect.nccl_ras_client.RasWatch` (NCCL RAS on this node), or None."""
        self.flaps = FlapRecorder(port_reader)
        self.sampler = sampler
        self.wall_time = wall_time
        self.node = node or capture.host.hostname or ""
        self.report: Report | None = None
        self.previous: CounterSample | None = None
        self._severity: dict[str, str] = {}
        self._errors: set[str] = set()
        self.samples = 0
        self.utilisation: dict[tuple[str, str], float] = {}
        """(GPU label, ``tx``/``rx``) -> throughput between the last two samples as a fraction
        of the negotiated link's per-direction rate."""

    def _record_links(self, sample: CounterSample) -> list[dict[str, Any]]:
        """Record every GPU's and upstream port's link; events for the ports that changed (the
        GPUs' own changes are reported by :meth:`step`)."""
        gpus = {g.index: g for g in self.capture.gpus}
        events: list[dict[str, Any]] = []
        for counters in sample.gpus:
            gpu = gpus.get(counters.index)
            if gpu is None:
                continue
            pcie = gpu.pcie
            self.flaps.record(
                sample.t,
                gpu.label,
                gpu.bus_id,
                "gpu",
                counters.link_gen,
                counters.link_width,
                pcie.max_gen if pcie else None,
                pcie.max_width if pcie else None,
            )
            if gpu.path:
                port = gpu.path[0].bus_id
                changed = self.flaps.read_port(sample.t, gpu.label, port)
                if changed is not None:
                    events.append(
                        self._event(
                            "link_changed",
                            gpu=gpu.label,
                            bus_id=gpu.bus_id,
                            port=port,
                            after=_link(*changed),
                        )
                    )
        history = self.flaps.history()
        history.readings = self.samples + 1
        from pcidoc.model.evidence import ImportedEvidence

        if self.capture.evidence is None:
            self.capture.evidence = ImportedEvidence()
        self.capture.evidence.link_histories = [history]
        return events

    def _diagnose(self) -> Report:
        from pcidoc import doctor
        from pcidoc.model.report import ReportSource

        return doctor.run(self.capture, ReportSource(kind="live"), generated_at=self.wall_time())

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        return {"event": kind, "time": self.wall_time(), "node": self.node, **fields}

    def start(self) -> list[dict[str, Any]]:
        """Diagnose the collected machine and take the first sample (the baseline)."""
        self.previous = self.sampler.sample()
        self._apply(self.previous)
        self._record_links(self.previous)
        self.report = self._diagnose()
        self._severity = {c.id: c.severity for c in self.report.checks}
        self.samples = 1
        return [
            self._event(
                "started",
                gpus=len(self.capture.gpus),
                worst=self.report.worst,
                checks={c.id: c.severity for c in self.report.checks},
            )
        ]

    def _apply(self, sample: CounterSample) -> None:
        """Copy the sampled link state and counters into the facts."""
        gpus = {g.index: g for g in self.capture.gpus}
        for counters in sample.gpus:
            gpu = gpus.get(counters.index)
            if gpu is None:
                continue
            if counters.link_gen is not None:
                gpu.pcie.current_gen = counters.link_gen
            if counters.link_width is not None:
                gpu.pcie.current_width = counters.link_width
            if counters.pstate is not None:
                gpu.pstate = counters.pstate
            if counters.replay_count is not None:
                gpu.replay_count = counters.replay_count
            if counters.aer_correctable is not None:
                gpu.aer_correctable = counters.aer_correctable
            links = {link.link: link for link in gpu.nvlinks}
            for link_counter in counters.nvlinks:
                link = links.get(link_counter.link)
                if link is not None and link_counter.state is not None:
                    link.state = link_counter.state  # type: ignore[assignment]

    def step(self) -> list[dict[str, Any]]:
        """Take one sample; return the change events it caused."""
        if self.previous is None:
            return self.start()
        old, new = self.previous, self.sampler.sample()
        self.samples += 1
        dt = max(1e-9, new.t - old.t)
        events: list[dict[str, Any]] = []
        bus = {g.index: g.bus_id for g in self.capture.gpus}
        before = {g.index: g for g in old.gpus}
        moved = changed_links(old, new)
        for gpu in new.gpus:
            prev = before.get(gpu.index)
            if prev is not None:
                who = {"gpu": f"GPU{gpu.index}", "bus_id": bus.get(gpu.index)}
                events.extend(self._gpu_events(prev, gpu, who, dt, gpu.index in moved))
        for message in new.errors:
            if message not in self._errors:
                self._errors.add(message)
                events.append(self._event("sample_error", message=message))
        self._apply(new)
        events.extend(self._record_links(new))
        self.previous = new
        self.utilisation = _utilisation(old, new)
        if self.ras is not None:
            events.extend(self.ras.poll(self.capture, self._event))
        self.report = self._diagnose()
        events.extend(self._check_events(self.report))
        return events

    def _gpu_events(
        self, prev: GpuCounters, gpu: GpuCounters, who: dict[str, Any], dt: float, moved: bool
    ) -> list[dict[str, Any]]:
        """One GPU's changes between two samples: its link (``moved``: it changed, as
        :func:`~pcidoc.model.counters.changed_links` tells; reported when both readings are
        whole), error counters and NVLinks."""
        events = []
        a, b = _link(prev.link_gen, prev.link_width), _link(gpu.link_gen, gpu.link_width)
        if moved and a is not None and b is not None:
            from pcidoc.model.units import pcie_raw_gbps

            rate_a = pcie_raw_gbps(prev.link_gen, prev.link_width) or 0.0
            rate_b = pcie_raw_gbps(gpu.link_gen, gpu.link_width) or 0.0
            events.append(
                self._event(
                    "link_changed",
                    **who,
                    before=a,
                    after=b,
                    downtrained=rate_b < rate_a,
                    # An idle GPU (not P0) downclocks its link: read the change with this.
                    pstate=None if gpu.pstate is None else f"P{gpu.pstate}",
                )
            )
        for kind, x, y in (
            ("replays_grew", prev.replay_count, gpu.replay_count),
            ("aer_grew", prev.aer_correctable, gpu.aer_correctable),
        ):
            if x is not None and y is not None and y > x:
                events.append(
                    self._event(kind, **who, delta=y - x, total=y, per_s=round((y - x) / dt, 3))
                )
        links_before = {link.link: link for link in prev.nvlinks}
        for link in gpu.nvlinks:
            was = links_before.get(link.link)
            if was is not None:
                events.extend(self._nvlink_events(was, link, who))
        return events

    def _nvlink_events(
        self, was: NvLinkCounter, link: NvLinkCounter, who: dict[str, Any]
    ) -> list[dict[str, Any]]:
        events = []
        # A link dozing off (sleep) or waking is routine: only up <-> down is news.
        if {was.state, link.state} == {"up", "down"}:
            kind = "nvlink_up" if link.state == "up" else "nvlink_down"
            events.append(self._event(kind, **who, link=link.link))
        if was.errors is not None and link.errors is not None and link.errors > was.errors:
            events.append(
                self._event(
                    "nvlink_errors_grew",
                    **who,
                    link=link.link,
                    delta=link.errors - was.errors,
                    total=link.errors,
                )
            )
        return events

    def _check_events(self, report: Report) -> list[dict[str, Any]]:
        """A ``check_changed`` event per check whose severity changed since the last diagnosis."""
        events = []
        for check in report.checks:
            was_severity = self._severity.get(check.id)
            if was_severity is not None and was_severity != check.severity:
                events.append(
                    self._event(
                        "check_changed",
                        check=check.id,
                        before=was_severity,
                        after=check.severity,
                        summary=check.summary,
                        subjects=check.subjects,
                    )
                )
        self._severity = {c.id: c.severity for c in report.checks}
        return events

    def registry(self, unix_time: float) -> Any:
        """The metrics of the latest diagnosis, plus the time of the last sample."""
        from prometheus_client import Gauge

        from pcidoc.fleet.prom import report_registry

        assert self.report is not None
        registry = report_registry(self.report, node=self.node, utilisation=self.utilisation)
        Gauge(
            "pcidoc_watch_last_sample_timestamp_seconds",
            "Unix time of the last counter sample of pcidoc watch",
            ["node"],
            registry=registry,
        ).labels(node=self.node).set(unix_time)
        Gauge(
            "pcidoc_watch_samples",
            "Samples taken since pcidoc watch started",
            ["node"],
            registry=registry,
        ).labels(node=self.node).set(self.samples)
        transitions = Gauge(
            "pcidoc_link_transitions",
            "Changes of negotiated PCIe generation or width since pcidoc watch started",
            ["node", "device"],
            registry=registry,
        )
        per_minute = Gauge(
            "pcidoc_link_transitions_per_minute",
            "Link changes per minute since pcidoc watch started",
            ["node", "device"],
            registry=registry,
        )
        for device, (count, rate) in self.flaps.counts().items():
            transitions.labels(node=self.node, device=device).set(count)
            if rate is not None:
                per_minute.labels(node=self.node, device=device).set(rate)
        return registry


def _utilisation(old: CounterSample, new: CounterSample) -> dict[tuple[str, str], float]:
    """(GPU label, ``tx``/``rx``) -> throughput between two samples as a fraction of the
    negotiated link's per-direction rate."""
    from pcidoc.model.counters import rates
    from pcidoc.model.units import pcie_raw_gbps

    utilisation = {}
    for r in rates(old, new):
        ceiling = pcie_raw_gbps(r.link_gen, r.link_width)
        if not ceiling:
            continue
        for direction, gbps in (("tx", r.pcie_tx_gbps), ("rx", r.pcie_rx_gbps)):
            if gbps is not None:
                utilisation[(f"GPU{r.index}", direction)] = round(gbps / ceiling, 4)
    return utilisation


def run_loop(
    watcher: Watcher,
    *,
    interval: float,
    sleep: Callable[[float], None],
    unix_time: Callable[[], float],
    emit: Callable[[dict[str, Any]], None],
    prom: str | None = None,
    count: int | None = None,
    warn: Callable[[str], None] | None = None,
) -> int:
    """Sample until ``count`` samples were taken or Ctrl-C; returns 0, or 130 when interrupted
    (143 / 129 when SIGTERM / SIGHUP arrived as :class:`~pcidoc.probes.runner.ProbeSignalled`).

    A ``--prom`` file that cannot be written (disk full, read-only, refused) is reported through
    ``warn`` (once per distinct reason) and tried again at the next sample."""
    from pcidoc.fleet.prom import write_prom

    try:
        taken = 0
        last_error = ""
        while True:
            for event in watcher.step():
                emit(event)
            if prom:
                try:
                    write_prom(watcher.registry(unix_time()), prom)
                    last_error = ""
                except PcidocError as exc:
                    if str(exc) != last_error and warn is not None:
                        warn(f"pcidoc: {exc}; trying again at the next sample")
                    last_error = str(exc)
            taken += 1
            if count is not None and taken >= count:
                return int(ExitCode.OK)
            sleep(interval)
    except KeyboardInterrupt as exc:
        return int(getattr(exc, "exit_code", ExitCode.INTERRUPTED))

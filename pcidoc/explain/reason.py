"""From a job's facts to its explanation: pure functions (no I/O), like the doctor's checks.

:func:`explain_facts` runs the rules (:mod:`pcidoc.explain.rules`), weighs what they say per
rank, names a culprit only when one rank clearly stands out, joins it to its GPU and to the
kernel's events there, and lays out the evidence, the chain, the timeline and the advice.
"""

from __future__ import annotations

from typing import Any

from pcidoc.explain import advice
from pcidoc.explain.facts import Event, JobFacts
from pcidoc.explain.hardware import (
    chain_link,
    kernel_cause,
    kernel_events_on_job_gpus,
    kernel_text,
)
from pcidoc.explain.ranks import RankView, build_views, world_size
from pcidoc.explain.rules import (
    RULES,
    Context,
    Finding,
    Straggler,
    disagreements,
    failed,
    ras_unlisted_behind,
    straggler_from_flight,
    straggler_from_timings,
)
from pcidoc.explain.timeline import Clocks, align
from pcidoc.explain.verdict import ChainLink, Culprit, Evidence, Explanation, Moment, RankRow

MIN_SCORE = 2.0
"""A rank is named only with at least this much evidence..."""
MIN_MARGIN = 1.0
"""... and this much more than the next rank."""
_PRECEDENCE = ("died", "mismatch", "hang", "transport", "unknown")


# ----------------------------------------------------------------------------- weighing


def _by_rank(findings: list[Finding]) -> dict[int, list[Finding]]:
    out: dict[int, list[Finding]] = {}
    for finding in findings:
        if finding.rank is not None:
            out.setdefault(finding.rank, []).append(finding)
    return out


def _cause(findings: list[Finding]) -> str:
    best = max(f.weight for f in findings)
    top = [f.cause for f in findings if f.weight == best]
    return min(top, key=lambda c: _PRECEDENCE.index(c) if c in _PRECEDENCE else 99)


def weigh(findings: list[Finding]) -> tuple[int | None, list[dict[str, Any]]]:
    """The culprit rank (None when no rank stands out) and every candidate with its score."""
    grouped = _by_rank(findings)
    candidates: list[dict[str, Any]] = sorted(
        (
            {
                "rank": rank,
                "score": round(sum(f.weight for f in items), 2),
                "cause": _cause(items),
                "why": [f.why for f in items],
            }
            for rank, items in grouped.items()
        ),
        key=lambda c: (-c["score"], c["rank"]),
    )
    if not candidates or candidates[0]["score"] < MIN_SCORE:
        return None, candidates
    if len(candidates) > 1 and candidates[0]["score"] < candidates[1]["score"] + MIN_MARGIN:
        return None, candidates
    return int(candidates[0]["rank"]), candidates


# --------------------------------------------------------------------------- the moment


def _stop_time(view: RankView) -> Event | None:
    """When the rank was last seen making progress (its last step), or its death."""
    died = view.died()
    last = view.last_step
    if last is not None and view.steps[last].time is not None:
        return view.steps[last]
    return died if died is not None and died.time is not None else None


def _moments(views: dict[int, RankView], facts: JobFacts, clocks: Clocks) -> list[Moment]:
    out: list[Moment] = []
    for view in sorted(views.values(), key=lambda v: v.rank):
        if view.steps:
            first, last = min(view.steps), max(view.steps)
            out.append(_moment(f"first step logged ({first})", view.steps[first], clocks))
            out.append(_moment(f"last step logged ({last})", view.steps[last], clocks))
        errors = view.collective_errors() or view.errors
        if errors:
            event = errors[0]
            what = event.kind.replace("_", " ")
            if event.data.get("collective"):
                what += f" in {event.data['collective']}"
            out.append(_moment(what, event, clocks, kind="error"))
        for event in view.exits[:1]:
            out.append(_moment(f"exit {event.data.get('code')}", event, clocks, view.rank, "exit"))
        for event in view.watchdogs[:1]:
            out.append(
                _moment(
                    f"watchdog: {event.data.get('op')} #{event.data.get('seq')}",
                    event,
                    clocks,
                    kind="watchdog",
                )
            )
    for event in facts.events:
        if event.kind == "kernel":
            data = event.data
            what = f"kernel: {kernel_text(data)} on {data.get('bus_id') or '?'}"
            out.append(_moment(what, event, clocks, kind="kernel"))
    out.sort(key=lambda m: (m.aligned is None, m.aligned or 0.0, m.rank or 0))
    return out


def _moment(
    what: str, event: Event, clocks: Clocks, rank: int | None = None, kind: str = "step"
) -> Moment:
    return Moment(
        what=what,
        host=event.host,
        rank=event.rank if rank is None else rank,
        time=event.time,
        aligned=clocks.aligned(event),
        ref=event.ref,
        kind=kind,
    )


# ----------------------------------------------------------------------------- culprit


def _culprit(view: RankView, cause: str, link: ChainLink, detail: str) -> Culprit:
    return Culprit(
        cause=cause,
        rank=view.rank,
        host=view.host,
        local_rank=view.local_rank,
        device=link.device,
        bus_id=link.bus_id,
        gpu=link.gpu,
        step=view.last_step,
        collective=view.collective(),
        detail=detail,
    )


def _confidence(score: float, second: float, views: dict[int, RankView], world: int) -> float:
    value = min(0.95, 0.3 + 0.15 * score)
    if second:
        value -= 0.15 * min(1.0, second / score)
    logged = sum(1 for v in views.values() if v.lines)
    if world and logged < world:
        value -= 0.1
    return max(0.05, value)


class _Reasoner:
    """One explanation being built."""

    def __init__(self, facts: JobFacts) -> None:
        self.facts = facts
        self.views = build_views(facts)
        self.world = world_size(self.views)
        self.ctx = Context(self.views, facts, self.world)
        self.clocks = align(self.views, facts.hosts)
        self.links = {r: chain_link(v, facts) for r, v in self.views.items()}
        self.result = Explanation(status="ok", summary="")
        self.hardware_code: int | None = None

    def run(self) -> Explanation:
        result = self.result
        if failed(self.ctx):
            self._failure()
        else:
            self._healthy()
        result.chain = [self.links[r] for r in sorted(self.links)]
        result.ranks = self._rows()
        result.reference_host = self.clocks.reference
        result.clock_offsets = dict(self.clocks.offsets)
        result.timeline = _moments(self.views, self.facts, self.clocks)
        result.actions = advice.actions(result.culprit, self.hardware_code)
        unexplained = result.status != "ok" and (
            result.culprit is None or result.culprit.rank is None
        )
        result.collect = advice.collect_next_time(self.facts, unexplained)
        result.ranks_seen = sum(1 for v in self.views.values() if v.lines)
        result.world_size = self.world
        result.hosts = list(
            dict.fromkeys([*self.facts.hosts, *(c.host for c in result.chain if c.host)])
        )
        result.files_read = list(self.facts.files_read)
        result.unread = [{"path": u.path, "reason": u.reason} for u in self.facts.unread]
        result.notes = [*result.notes, *self.facts.notes, *self._gaps()]
        return result

    def _rows(self) -> list[RankRow]:
        culprit = self.result.culprit.rank if self.result.culprit else None
        rows = []
        for rank in range(max(self.world, max(self.views, default=-1) + 1)):
            view = self.views.get(rank)
            if view is None or not view.lines:
                rows.append(RankRow(rank, view.host if view else None, "no log"))
                continue
            role = (
                "culprit"
                if rank == culprit
                else "waited"
                if rank in self.result.waiting
                else "quiet"
            )
            if role == "quiet" and self.result.status == "ok":
                role = "ok"
            errors = view.collective_errors() or view.errors
            first = errors[0] if errors else None
            error = None
            if first is not None:
                error = first.kind.replace("_", " ") + (
                    f" in {first.data['collective']}" if first.data.get("collective") else ""
                )
            rows.append(RankRow(rank, view.host, role, view.last_step, error, view.exit_code))
        return rows

    def _gaps(self) -> list[str]:
        notes = []
        missing = [r for r in range(self.world) if r not in self.views or not self.views[r].lines]
        if missing and len(missing) < self.world:
            shown = ", ".join(map(str, missing[:20])) + (" ..." if len(missing) > 20 else "")
            notes.append(f"no log line of rank(s) {shown}: their side is unknown")
        unknown = [h for h, off in self.clocks.offsets.items() if off is None]
        if unknown:
            notes.append(
                "clock offset unknown for " + ", ".join(unknown) + " (no step logged there and "
                "on the reference host): their times are on their own clocks"
            )
        return notes

    # ------------------------------------------------------------------------ failures

    def _failure(self) -> None:
        findings = [f for rule in RULES for f in rule(self.ctx)]
        rank, candidates = weigh(findings)
        self.result.candidates = candidates[:10]
        self.result.notes.extend(disagreements(self.ctx))
        if rank is None:
            self._no_single_rank(findings, candidates)
            return
        view = self.views[rank]
        mine = [f for f in findings if f.rank == rank]
        cause = _cause(mine)
        second = candidates[1]["score"] if len(candidates) > 1 else 0.0
        self.result.confidence = _confidence(candidates[0]["score"], second, self.views, self.world)
        detail = "; ".join(f.why for f in sorted(mine, key=lambda f: -f.weight)[:3])
        self._name(view, cause, detail, mine)

    def _name(
        self,
        view: RankView,
        cause: str,
        detail: str,
        findings: list[Finding],
        anchor: Event | None = None,
    ) -> None:
        """Name ``view`` the culprit; ``anchor``: when its trouble began (default: its last
        step), for the join to the kernel's events."""
        link = self.links[view.rank]
        stop = anchor or _stop_time(view)
        hardware = None
        if cause != "mismatch":
            hardware = kernel_cause(view, link, self.facts, stop.time if stop else None)
        if hardware is None and cause in ("hang", "died", "unknown"):
            transport = [e for e in view.errors if e.kind == "transport"]
            if transport:
                cause = "transport"  # NCCL said why the rank could not go on
        if hardware is not None:
            data = hardware.event.data
            self.hardware_code = data.get("code")
            cause = hardware.cause
            when = " shortly before it stopped" if hardware.timed else " (times not comparable)"
            if hardware.timed and stop is not None and hardware.event.time is not None:
                lead = stop.time - hardware.event.time  # type: ignore[operator]
                moment = "the step it slowed down at" if anchor else "its last step"
                when = f" {abs(lead):.1f} s {'before' if lead >= 0 else 'after'} {moment}"
            detail = f"kernel: {kernel_text(data)} ({hardware.where})," + when + "; " + detail
            self.result.confidence = min(
                0.97, self.result.confidence + (0.1 if hardware.timed else 0.0)
            )
            if hardware.event.ref:
                self._evidence(
                    Evidence(
                        hardware.event.ref, "hardware", view.rank, view.host, detail.split(";")[0]
                    )
                )
        self.result.culprit = _culprit(view, cause, link, detail)
        self.result.status = "warn" if cause in ("slow", "unknown") else "fault"
        for finding in sorted(findings, key=lambda f: -f.weight):
            for ref in finding.refs:
                self._evidence(Evidence(ref, "culprit", view.rank, view.host, finding.why))
        self._peers(view.rank)
        self.result.first_anomaly = (
            _moment(f"rank {view.rank}: last sign of progress", stop, self.clocks) if stop else None
        )
        self.result.summary = _summary(self.result.culprit, self.result.waiting)

    def _evidence(self, item: Evidence) -> None:
        """Add an evidence line once."""
        if all(e.ref != item.ref for e in self.result.evidence):
            self.result.evidence.append(item)

    def _peers(self, culprit: int | None) -> None:
        waiting = sorted(
            v.rank for v in self.views.values() if v.collective_errors() and v.rank != culprit
        )
        self.result.waiting = waiting
        for rank in waiting[:3]:
            event = self.views[rank].collective_errors()[0]
            if event.ref:
                what = event.kind.replace("_", " ")
                self._evidence(
                    Evidence(event.ref, "peer", rank, event.host, f"rank {rank} waited: {what}")
                )

    def _no_single_rank(self, findings: list[Finding], candidates: list[dict[str, Any]]) -> None:
        unlisted = ras_unlisted_behind(self.ctx)
        hardware = self._hardware_only()
        if hardware is not None:
            return
        causes = {c["cause"] for c in candidates}
        if unlisted is not None:
            count, ops, refs = unlisted
            cause, detail = (
                "hang",
                (
                    f"{count} rank(s) stopped at operation {ops} and RAS does not list them; "
                    "the ranks it lists launched the next operation and wait for them"
                ),
            )
            for ref in refs:
                self._evidence(Evidence(ref, "peer", None, None, "RAS lists the ranks ahead"))
        elif self.result.notes and any("different collectives" in n for n in self.result.notes):
            cause, detail = "mismatch", self.result.notes[0]
        elif len(causes) == 1 and candidates:
            cause, detail = (
                causes.pop(),
                "several ranks fit equally: " + ", ".join(str(c["rank"]) for c in candidates[:6]),
            )
        else:
            cause, detail = "unknown", "the job failed but no rank stands out in these files"
        self.result.culprit = Culprit(cause=cause, detail=detail)
        self.result.status = "warn"
        self.result.confidence = 0.3 if cause != "unknown" else 0.15
        self._peers(None)
        self.result.summary = _summary(self.result.culprit, self.result.waiting)

    def _hardware_only(self) -> bool | None:
        """No rank stands out, but a kernel event hit exactly one rank's GPU: that rank."""
        hits = kernel_events_on_job_gpus(self.facts, list(self.links.values()))
        ranks = sorted({rank for rank, _ in hits})
        if len(ranks) != 1:
            return None
        view = self.views[ranks[0]]
        self.result.confidence = 0.5
        self._name(
            view, "unknown", "a kernel event hit its GPU while no rank stood out in the logs", []
        )
        return True

    # ------------------------------------------------------------------------- healthy

    def _healthy(self) -> None:
        straggler = straggler_from_timings(self.views) or straggler_from_flight(self.views)
        if straggler is not None:
            self._straggler(straggler)
            return
        self.result.status = "ok"
        ranks = sum(1 for v in self.views.values() if v.lines)
        if ranks == 0:
            self.result.summary = "no rank of a distributed job found in these files"
            self.result.notes.append(
                "nothing here looks like a job's log (no rank prefix, no step)"
            )
            return
        self.result.summary = (
            f"no fault found: {ranks} rank(s) logged, none reported an error or held the "
            "others back"
        )
        for rank, event in kernel_events_on_job_gpus(self.facts, list(self.links.values()))[:5]:
            self.result.notes.append(
                f"kernel event on rank {rank}'s GPU that the job did not notice: "
                + (event.ref.text if event.ref else str(event.data))
            )

    def _straggler(self, straggler: Straggler) -> None:
        view = self.views[straggler.rank]
        detail = (
            f"it computed {straggler.lag_ms:.0f} ms longer than the others' median in "
            f"{straggler.steps} step(s) from step {straggler.onset} ({straggler.source}); its "
            "peers waited for it in every collective"
        )
        finding = Finding(view.rank, "slow", 2.0, detail, straggler.refs)
        self.result.confidence = min(0.9, 0.5 + 0.04 * straggler.steps)
        onset = view.steps.get(straggler.onset)
        self._name(view, "slow", detail, [finding], onset)
        if onset is not None:
            self.result.first_anomaly = _moment(
                f"rank {view.rank}: first slow step ({straggler.onset})", onset, self.clocks
            )
        self.result.waiting = sorted(
            r for r in self.views if r != view.rank and self.views[r].lines
        )


def _summary(culprit: Culprit | None, waiting: list[int]) -> str:
    if culprit is None:
        return "no fault found"
    if culprit.rank is None:
        return f"the job failed ({culprit.cause}); no single rank can be named: {culprit.detail}"
    where = culprit.host or "an unknown host"
    gpu = f", GPU {culprit.bus_id}" if culprit.bus_id else ""
    what = {
        "hang": "stopped first (hang)",
        "died": "died",
        "slow": "is a straggler (slow)",
        "mismatch": "ran a mismatched collective",
        "xid": "stopped after a GPU Xid error",
        "link": "stopped after PCIe link errors",
        "iommu": "stopped after IOMMU faults",
        "transport": "failed in NCCL's transport",
        "unknown": "stands out (cause unknown)",
    }.get(culprit.cause, culprit.cause)
    if culprit.cause == "link" and "slow" in culprit.detail:
        what = "slowed down with PCIe link errors"
    if culprit.cause == "hang" and not waiting:
        what = "hung" + (f" in {culprit.collective}" if culprit.collective else "")
    peers = f"; {len(waiting)} rank(s) waited for it" if waiting else ""
    return f"rank {culprit.rank} on {where}{gpu} {what}{peers}"


def explain_facts(facts: JobFacts) -> Explanation:
    """The explanation of a job from its facts."""
    return _Reasoner(facts).run()

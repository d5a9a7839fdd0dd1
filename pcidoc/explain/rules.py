"""The attribution rules: pure functions from the ranks' views to findings.

Each rule reads one kind of evidence and says which rank it points at, for which cause, with a
weight (how much that kind of evidence alone should count) and the lines that show it. The
principles, not any tool's exact wording, are what the rules encode:

* a collective completes only when every rank joins it, so the ranks that report a collective
  timing out or losing its peer were *waiting*; the rank that stopped first is the one that
  reports nothing of the kind (it never entered the collective), or that its peers name
  (torch's monitored barrier, NCCL RAS), or that launched fewer collectives than the others
  (watchdog and flight-recorder sequence numbers, RAS operation counts);
* a process that ended on its own (a signal the launcher did not send, an application error)
  is the rank that died; a rank the launcher terminated was still running;
* ranks that disagree on the collective they run (the operation, the tensor's shape, how many
  they call) mismatch; the odd one out is the culprit, and where two ranks disagree with no
  majority the history of the job's collectives tells which one deviated, when a
  flight-recorder dump has it;
* in a synchronous job a straggler computes longer and waits less; its peers wait for it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from statistics import median
from typing import Any

from pcidoc._record import field, record
from pcidoc.explain.facts import Event, JobFacts, Ref
from pcidoc.explain.ranks import RankView


@record
class Finding:
    """What one rule says: the rank it points at (None: a fact about the job), the cause, how
    much it counts, why, and the lines."""

    rank: int | None
    cause: str
    weight: float
    why: str
    refs: list[Ref] = field(default_factory=list)


@record
class Context:
    """What the rules read."""

    views: dict[int, RankView]
    facts: JobFacts
    world: int


def _refs(events: list[Event], limit: int = 3) -> list[Ref]:
    return [e.ref for e in events if e.ref is not None][:limit]


def _waiting(ctx: Context) -> list[RankView]:
    return [v for v in ctx.views.values() if v.collective_errors()]


# ------------------------------------------------------------------------ named by peers


def rule_monitored_barrier(ctx: Context) -> list[Finding]:
    """torch's monitored barrier (gloo, TORCH_DISTRIBUTED_DEBUG=DETAIL) names the ranks that
    never arrived."""
    named: dict[int, list[Event]] = {}
    for view in ctx.views.values():
        for event in view.errors:
            if event.kind == "barrier_missing":
                for rank in event.data.get("ranks", []):
                    named.setdefault(int(rank), []).append(event)
    out = []
    for rank, events in named.items():
        named_view = ctx.views.get(rank)
        cause = "died" if named_view is not None and named_view.died() else "hang"
        out.append(
            Finding(
                rank,
                cause,
                3.0,
                "its peers' monitored barrier names it as the rank that never arrived",
                _refs(events),
            )
        )
    return out


_RAS_STATES = {"dead": ("died", 3.0), "missing": ("hang", 2.5), "unresponsive": ("hang", 2.5)}


def rule_ras(ctx: Context) -> list[Finding]:
    """NCCL RAS: dead or silent processes; ranks behind the others' operation count."""
    out = []
    for view in ctx.views.values():
        for event in view.ras:
            state = event.data.get("state")
            if state in _RAS_STATES:
                cause, weight = _RAS_STATES[state]
                why = f"NCCL RAS reports it {state} (no data from its process)"
                out.append(Finding(view.rank, cause, weight, why, _refs([event])))
            elif state == "behind":
                why = "NCCL RAS: it launched fewer collectives than its peers"
                out.append(Finding(view.rank, "hang", 2.0, why, _refs([event])))
            elif state == "error":
                out.append(
                    Finding(
                        view.rank, "unknown", 1.0, "NCCL RAS: it reported an error", _refs([event])
                    )
                )
    return out


def ras_unlisted_behind(ctx: Context) -> tuple[int, int, list[Ref]] | None:
    """RAS prints only the minority of a count mismatch: when the listed ranks are *ahead*,
    the stalled ranks (behind) are not named. (how many are behind, their count, the line)."""
    for view in ctx.views.values():
        for event in view.ras:
            groups = event.data.get("groups") or []
            if event.data.get("state") != "ahead" or len(groups) < 2:
                continue
            low = min(groups, key=lambda g: g["ops"])
            return int(low["ranks"]), int(low["ops"]), _refs([event])
    return None


# ----------------------------------------------------------------------- sequence numbers


def _behind(counts: dict[int, int]) -> list[int]:
    """The ranks whose count is below the others' highest, when that is a minority."""
    if len(set(counts.values())) < 2:
        return []
    top = max(counts.values())
    behind = [r for r, c in counts.items() if c < top]
    return behind if len(behind) < len(counts) - len(behind) or len(counts) == 2 else []


def rule_watchdog(ctx: Context) -> list[Finding]:
    """NCCL watchdog: the ranks that enqueued fewer collectives did not join the one the
    others time out in. One rank's watchdog alone shows where it waited, not who stopped."""
    dogs = {v.rank: v.watchdogs for v in ctx.views.values() if v.watchdogs}
    counts = {
        rank: max(e.data.get("last_enqueued") or e.data.get("seq") or 0 for e in events)
        for rank, events in dogs.items()
    }
    out = []
    for rank in _behind(counts):
        why = (
            f"its watchdog: last collective enqueued {counts[rank]}, its peers' "
            f"{max(counts.values())}: it never launched the collective they wait in"
        )
        out.append(Finding(rank, "hang", 2.5, why, _refs(dogs[rank])))
    if len(dogs) == 1 and len(ctx.views) <= 1:
        rank, events = next(iter(dogs.items()))
        data = events[0].data
        why = (
            f"the only log here: its watchdog timed out in {data.get('op') or 'a collective'}"
            f" SeqNum={data.get('seq')} (last completed {data.get('last_completed')})"
        )
        out.append(Finding(rank, "hang", 2.0, why, _refs(events)))
    return out


def rule_flight_behind(ctx: Context) -> list[Finding]:
    """Flight recorder: a rank whose last enqueued collective is behind the others'."""
    counts = {
        v.rank: v.flight.last_enqueued
        for v in ctx.views.values()
        if v.flight is not None and v.flight.last_enqueued is not None
    }
    out = []
    for rank in _behind(counts):
        view = ctx.views[rank]
        assert view.flight is not None
        why = (
            f"its flight recorder: last collective enqueued #{counts[rank]}, its peers' "
            f"#{max(counts.values())}"
        )
        out.append(Finding(rank, "hang", 2.5, why, [view.flight.ref]))
    return out


# ------------------------------------------------------------------------------- mismatch


def _odd_one(groups: dict[str, list[int]]) -> list[int] | None:
    """The ranks of the single smallest group, when it is smaller than the largest."""
    sizes = sorted(len(v) for v in groups.values())
    if len(sizes) < 2 or sizes[0] == sizes[-1] or sizes[0] == sizes[1]:
        return None
    return min(groups.values(), key=len)


def rule_fingerprints(ctx: Context) -> list[Finding]:
    """torch's collective fingerprints (TORCH_DISTRIBUTED_DEBUG=DETAIL): majority vote on
    what each rank was running at the same sequence number."""
    seen: dict[int, str] = {}
    events: dict[int, list[Event]] = {}
    for view in ctx.views.values():
        for event in view.errors:
            for rank, print_ in (event.data.get("fingerprints") or {}).items():
                seen.setdefault(int(rank), print_)
                events.setdefault(int(rank), []).append(event)
    groups: dict[str, list[int]] = {}
    for rank, print_ in seen.items():
        groups.setdefault(print_, []).append(rank)
    odd = _odd_one(groups)
    if odd is None:
        return []
    common = max(groups, key=lambda k: len(groups[k]))
    return [
        Finding(
            rank,
            "mismatch",
            3.0,
            f"torch compared the collectives: it ran {seen[rank]}, its peers {common}",
            _refs(events.get(rank, [])),
        )
        for rank in odd
    ]


def _flight_op(view: RankView, seq: int) -> str | None:
    if view.flight is None:
        return None
    for entry in view.flight.entries:
        if entry["seq"] == seq:
            return f"{entry['op']} {entry['sizes'] or ''}".strip()
    return None


def rule_collective_disagree(ctx: Context) -> list[Finding]:
    """Ranks that failed in different collectives (their tracebacks, watchdogs): the odd one
    out ran another collective than its peers."""
    groups: dict[str, list[int]] = {}
    for view in _waiting(ctx):
        op = view.collective()
        if op:
            groups.setdefault(op, []).append(view.rank)
    odd = _odd_one(groups)
    if odd is None:
        return []
    common = max(groups, key=lambda k: len(groups[k]))
    out = []
    for rank in odd:
        view = ctx.views[rank]
        why = f"it was in {view.collective()} when its peers were in {common}"
        out.append(Finding(rank, "mismatch", 2.5, why, _refs(view.collective_errors())))
    return out


def rule_flight_disagree(ctx: Context) -> list[Finding]:
    """Flight recorder: the first sequence number at which ranks recorded different
    collectives. The odd one out is the culprit; with no majority (two ranks), the one whose
    collective the job never ran before deviated."""
    flights = {v.rank: v for v in ctx.views.values() if v.flight is not None and v.flight.entries}
    if len(flights) < 2:
        return []
    seqs = sorted({e["seq"] for v in flights.values() for e in v.flight.entries})  # type: ignore[union-attr]
    for seq in seqs:
        ops = {r: _flight_op(v, seq) for r, v in flights.items()}
        groups: dict[str, list[int]] = {}
        for rank, op in ops.items():
            if op is not None:
                groups.setdefault(op, []).append(rank)
        if len(groups) < 2:
            continue
        odd = _odd_one(groups) or _novel(flights, groups, seq)
        if not odd:
            return []
        return [
            Finding(
                rank,
                "mismatch",
                3.0,
                f"its flight recorder: collective #{seq} was {ops[rank]}, its peers' "
                f"{next(k for k in groups if rank not in groups[k])}",
                [ref for ref in [_flight_ref(flights[rank])] if ref is not None],
            )
            for rank in odd
        ]
    return []


def _flight_ref(view: RankView) -> Ref | None:
    return view.flight.ref if view.flight is not None else None


def _novel(flights: dict[int, RankView], groups: dict[str, list[int]], seq: int) -> list[int]:
    """With no majority: the ranks whose collective at ``seq`` no rank ran before it."""
    before: set[str] = set()
    for view in flights.values():
        for entry in view.flight.entries:  # type: ignore[union-attr]
            if entry["seq"] < seq:
                before.add(f"{entry['op']} {entry['sizes'] or ''}".strip())
    novel = [ranks for op, ranks in groups.items() if op not in before]
    known = [ranks for op, ranks in groups.items() if op in before]
    if len(novel) == 1 and known:
        return novel[0]
    return []


# ------------------------------------------------------------------------- died, stopped


def rule_died(ctx: Context) -> list[Finding]:
    """A process that ended on its own: the earliest, when several did."""
    dead = []
    for view in ctx.views.values():
        event = view.died()
        if event is not None:
            dead.append((view, event))
    if not dead:
        return []
    timed = [(v, e) for v, e in dead if e.time is not None]
    if len(dead) > 1 and len(timed) == len(dead):
        first = min(timed, key=lambda pair: pair[1].time or 0.0)
        dead = [first]
    out = []
    for view, event in dead:
        code = event.data.get("code")
        what = (
            f"its process ended with signal {-code}"
            if isinstance(code, int) and code < 0
            else event.data.get("message")
            or event.data.get("what")
            or (f"its process died ({event.data['death']})" if event.data.get("death") else None)
            or "it exited with an error"
        )
        out.append(
            Finding(
                view.rank, "died", 3.0 if len(dead) == 1 else 2.0, str(what)[:160], _refs([event])
            )
        )
    return out


def rule_silent(ctx: Context) -> list[Finding]:
    """While its peers report a collective that timed out or lost a peer, the rank that
    reports nothing of the kind never entered it: it stopped first (or died quietly)."""
    waiting = _waiting(ctx)
    if not waiting:
        return []
    kinds = Counter(e.kind for v in waiting for e in v.collective_errors())
    silent = [
        v
        for v in ctx.views.values()
        if not v.collective_errors()
        and not v.completed()
        and v.lines > 0
        and not v.died()
        and v.exit_code not in (0,)
    ]
    if not silent or len(silent) >= len(waiting) + len(silent):
        return []
    weight = 2.0 if len(silent) == 1 else 1.0
    ops = {str(v.collective()) for v in waiting if v.collective()}
    if len(ops) > 1:
        # The ranks that did report disagree on the collective: that mismatch is why they
        # waited, and a quiet rank is more likely a waiter the launcher ended before it said so.
        weight /= 2
    cause = "hang" if kinds.get("timeout") or kinds.get("watchdog") else "died"
    out = []
    for view in silent:
        last = view.last_step
        why = (
            f"it reported no collective error while {len(waiting)} peer(s) did "
            f"({', '.join(sorted(kinds))}); its last sign of progress: "
            + (f"step {last}" if last is not None else "none")
        )
        refs = _refs([view.steps[last]]) if last is not None else _refs(view.identity)
        out.append(Finding(view.rank, cause, weight, why, refs))
    return out


def rule_left_early(ctx: Context) -> list[Finding]:
    """A rank that ended normally before the job's last step while its peers still waited in
    a collective: it ran fewer collectives than they did."""
    if not _waiting(ctx):
        return []
    out = []
    for view in ctx.views.values():
        if view.exit_code != 0 or view.errors or view.total is None:
            continue
        last = view.last_step or 0
        if last < view.total:
            why = f"it exited normally after step {last} of {view.total} while its peers waited"
            out.append(Finding(view.rank, "mismatch", 2.5, why, _refs(view.exits)))
    return out


def rule_transport(ctx: Context) -> list[Finding]:
    """NCCL transport warnings (network, shared memory, P2P) on a rank."""
    out = []
    for view in ctx.views.values():
        events = [e for e in view.errors if e.kind == "transport"]
        if events:
            out.append(
                Finding(
                    view.rank,
                    "transport",
                    2.0,
                    f"NCCL reported a transport problem: {events[0].data.get('what', '')[:120]}",
                    _refs(events),
                )
            )
    return out


RULES: tuple[Callable[[Context], list[Finding]], ...] = (
    rule_monitored_barrier,
    rule_ras,
    rule_watchdog,
    rule_flight_behind,
    rule_fingerprints,
    rule_collective_disagree,
    rule_flight_disagree,
    rule_died,
    rule_silent,
    rule_left_early,
    rule_transport,
)


def failed(ctx: Context) -> bool:
    """Whether the job shows a failure at all (an error, a death, RAS trouble)."""
    return any(
        v.errors or v.died() or v.watchdogs or any(e.data.get("state") != "ok" for e in v.ras)
        for v in ctx.views.values()
    )


def disagreements(ctx: Context) -> list[str]:
    """Mismatches without a majority (two ranks, two collectives): said, not guessed."""
    out = []
    groups: dict[str, list[int]] = {}
    for view in _waiting(ctx):
        if view.collective():
            groups.setdefault(str(view.collective()), []).append(view.rank)
    if len(groups) >= 2 and _odd_one(groups) is None:
        out.append(
            "ranks failed in different collectives ("
            + "; ".join(f"{op}: rank {', '.join(map(str, sorted(r)))}" for op, r in groups.items())
            + "), with no majority to tell which deviated"
        )
    prints: dict[str, set[int]] = {}
    for view in ctx.views.values():
        for event in view.errors:
            for rank, print_ in (event.data.get("fingerprints") or {}).items():
                prints.setdefault(print_, set()).add(int(rank))
    if len(prints) >= 2 and _odd_one({k: list(v) for k, v in prints.items()}) is None:
        out.append("torch found ranks running different collectives, with no majority")
    return out


# ---------------------------------------------------------------------------- stragglers


@record
class Straggler:
    """A rank that holds every step back."""

    rank: int
    lag_ms: float
    steps: int
    """Steps in which it was the slowest by that much."""
    onset: int
    """The first of those steps."""
    refs: list[Ref] = field(default_factory=list)
    source: str = "step timings"


def _timed_steps(views: dict[int, RankView], key: str) -> dict[int, dict[int, float]]:
    """step -> rank -> milliseconds of ``key`` (compute or comm)."""
    table: dict[int, dict[int, float]] = {}
    for view in views.values():
        for step, event in view.steps.items():
            value = event.data.get(key)
            if isinstance(value, (int, float)):
                table.setdefault(step, {})[view.rank] = float(value)
    return {s: row for s, row in table.items() if len(row) >= 2}


STRAGGLER_MIN_MS = 50.0
"""A step counts as held back by a rank when it computed at least this much longer than the
others' median, and at least as long again as that median: scheduling noise on a loaded
machine stays below it."""


def _since_onset(hits: list[tuple[int, float]], steps: list[int]) -> list[tuple[int, float]]:
    """The hits from the earliest step after which the rank held back at least two steps and
    60 % of all steps to the end (an early, isolated slow step is noise, not the onset)."""
    for index, (onset, _) in enumerate(hits):
        kept = hits[index:]
        tail = [s for s in steps if s >= onset]
        if len(kept) >= 2 and len(kept) >= 0.6 * len(tail):
            return kept
    return []


def straggler_from_timings(views: dict[int, RankView]) -> Straggler | None:
    """The rank that computes longest, by a margin no noise explains, in at least two steps
    and in most steps from the first of them on, with the others waiting for it (their
    communication time is longer than its own, where the log says)."""
    compute = _timed_steps(views, "compute")
    comm = _timed_steps(views, "comm")
    if len(compute) < 3:
        return None
    slow: dict[int, list[tuple[int, float]]] = {}
    for step, row in sorted(compute.items())[1:]:  # the first step includes warm-up
        rank = max(row, key=lambda r: row[r])
        others = [v for r, v in row.items() if r != rank]
        excess = row[rank] - median(others)
        if excess >= max(STRAGGLER_MIN_MS, median(others)):
            waits = comm.get(step, {})
            if rank in waits and len(waits) > 1:
                peers = [v for r, v in waits.items() if r != rank]
                if waits[rank] > median(peers):
                    continue  # it waited more than its peers: not the one holding them back
            slow.setdefault(rank, []).append((step, excess))
    if not slow:
        return None
    rank, hits = max(slow.items(), key=lambda kv: len(kv[1]))
    hits = _since_onset(hits, sorted(compute)[1:])
    if not hits:
        return None
    view = views[rank]
    return Straggler(
        rank=rank,
        lag_ms=round(median(e for _, e in hits), 1),
        steps=len(hits),
        onset=hits[0][0],
        refs=_refs([view.steps[s] for s, _ in hits[:2]]),
    )


def straggler_from_flight(views: dict[int, RankView]) -> Straggler | None:
    """Flight recorder: the rank that enqueues most collectives last, by a clear margin."""
    flights = {v.rank: v.flight for v in views.values() if v.flight is not None}
    if len(flights) < 2:
        return None
    created: dict[int, dict[int, float]] = {}
    for rank, flight in flights.items():
        for entry in flight.entries:
            if entry["created_s"] is not None:
                created.setdefault(entry["seq"], {})[rank] = entry["created_s"]
    lates: Counter[int] = Counter()
    lags: dict[int, list[float]] = {}
    for row in created.values():
        if len(row) < len(flights):
            continue
        rank = max(row, key=lambda r: row[r])
        lag = (row[rank] - median(v for r, v in row.items() if r != rank)) * 1e3
        if lag >= 30.0:
            lates[rank] += 1
            lags.setdefault(rank, []).append(lag)
    if not lates:
        return None
    rank, count = lates.most_common(1)[0]
    if count < max(3, 0.6 * len(created)):
        return None
    flight = flights[rank]
    return Straggler(
        rank=rank,
        lag_ms=round(median(lags[rank]), 1),
        steps=count,
        onset=0,
        refs=[flight.ref] if flight else [],
        source="flight recorder",
    )


def evidence_events(views: dict[int, RankView]) -> dict[str, Any]:
    """Counts for the report: ranks with logs, errors, exits."""
    return {
        "ranks_with_logs": sum(1 for v in views.values() if v.lines),
        "ranks_reporting_errors": sum(1 for v in views.values() if v.errors),
    }

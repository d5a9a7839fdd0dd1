"""Per-rank views of a job: everything the facts say about each rank, joined by rank number,
process id and (host, local rank)."""

from __future__ import annotations

from typing import Any

from pcidoc._record import field, record
from pcidoc.explain.facts import COLLECTIVE_ERRORS, Event, FlightRank, JobFacts

DEATH_SIGNALS = frozenset({-4, -6, -7, -8, -9, -11})
"""Exit codes (negative signals) of a process that died on its own or was killed by the
system: SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGKILL, SIGSEGV. SIGTERM (-15) is what launchers send
to the ranks that are still running when one failed."""


@record
class RankView:
    """One rank as the job's files show it."""

    rank: int
    host: str | None = None
    local_rank: int | None = None
    pid: int | None = None
    device: int | None = None
    bus_id: str | None = None
    world: int | None = None
    lines: int = 0
    """Events read for this rank (0: its log is missing)."""
    steps: dict[int, Event] = field(default_factory=dict)
    total: int | None = None
    errors: list[Event] = field(default_factory=list)
    """Collective errors, application errors, fatal messages, transport warnings."""
    exits: list[Event] = field(default_factory=list)
    terminated: bool = False
    """The launcher sent it SIGTERM (it was still running when another rank failed)."""
    watchdogs: list[Event] = field(default_factory=list)
    ras: list[Event] = field(default_factory=list)
    flight: FlightRank | None = None
    identity: list[Event] = field(default_factory=list)

    @property
    def last_step(self) -> int | None:
        """The last training step it completed."""
        return max(self.steps) if self.steps else None

    @property
    def exit_code(self) -> int | None:
        """Its exit code (negative: the signal), when a launcher said."""
        codes = [e.data.get("code") for e in self.exits if e.data.get("code") is not None]
        return next((c for c in codes if c != 0), codes[0] if codes else None)

    def collective_errors(self) -> list[Event]:
        """Errors it reported while waiting in a collective."""
        return [e for e in self.errors if e.kind in COLLECTIVE_ERRORS or e.kind == "watchdog"]

    def collective(self) -> str | None:
        """The collective it was in when it failed (a traceback's frame, the watchdog's
        operation)."""
        for event in self.errors + self.watchdogs:
            op = event.data.get("collective") or event.data.get("op")
            if op:
                return str(op).lower().replace("allreduce", "all_reduce")
        return None

    def completed(self) -> bool:
        """It reached the job's last step or exited with 0."""
        if self.exit_code == 0 and not self.errors:
            return True
        return (
            self.total is not None and self.last_step is not None and self.last_step >= self.total
        )

    def died(self) -> Event | None:
        """Evidence that the process itself ended (a signal it did not get from the launcher,
        an application error, a crash message), not a collective that failed under it."""
        own = [e for e in self.errors if e.kind in ("app_error", "fatal")]
        collective = self.collective_errors()
        for event in own:
            if event.kind == "app_error" or not collective:
                return event
        for event in self.exits:
            code = event.data.get("code")
            if code in DEATH_SIGNALS and not (code == -6 and collective):
                return event
            if event.data.get("death") and not collective:
                return event  # a launcher saw its process die (Ray's SYSTEM_ERROR exit)
        return None


def _index(facts: JobFacts) -> tuple[dict[int, int], dict[tuple[str | None, int], int]]:
    """pid → rank and (host, local rank) → rank, from what ranks said about themselves."""
    by_pid: dict[int, int] = {}
    by_local: dict[tuple[str | None, int], int] = {}
    for event in facts.events:
        if event.rank is None:
            continue
        pid = event.data.get("pid")
        if isinstance(pid, int) and event.kind in ("identity", "progress", "ras"):
            by_pid.setdefault(pid, event.rank)
        local = event.data.get("local_rank")
        if isinstance(local, int) and event.kind in ("identity", "progress"):
            by_local.setdefault((event.host, local), event.rank)
    return by_pid, by_local


def _launcher_ranks(
    event: Event, by_pid: dict[int, int], by_local: dict[tuple[str | None, int], int]
) -> list[int]:
    """The ranks a launcher's line is about."""
    if event.data.get("ranks"):
        return list(event.data["ranks"])
    if event.data.get("rank") is not None:
        return [int(event.data["rank"])]
    pid = event.data.get("pid")
    if isinstance(pid, int) and pid in by_pid:
        return [by_pid[pid]]
    local = event.data.get("local_rank")
    if isinstance(local, int) and (event.host, local) in by_local:
        return [by_local[(event.host, local)]]
    return []


def _view(views: dict[int, RankView], rank: int) -> RankView:
    view = views.get(rank)
    if view is None:
        view = views[rank] = RankView(rank)
    return view


def _add(view: RankView, event: Event) -> None:
    view.lines += 1
    if event.host and not view.host:
        view.host = event.host
    kind = event.kind
    if kind == "progress":
        view.steps.setdefault(int(event.data["step"]), event)
        view.total = event.data.get("total") or view.total
    elif kind == "identity":
        view.identity.append(event)
        _identity(view, event.data)
    elif kind == "watchdog":
        view.watchdogs.append(event)
    elif kind == "ras":
        view.ras.append(event)
        if event.data.get("device") is not None and view.device is None:
            view.device = event.data["device"]
    elif kind in ("exit",):
        view.exits.append(event)
    elif kind == "killed_by_launcher":
        view.terminated = True
    elif kind != "kernel":
        view.errors.append(event)
    if event.data.get("local_rank") is not None and view.local_rank is None:
        view.local_rank = event.data["local_rank"]
    if event.data.get("pid") is not None and view.pid is None and kind != "ras":
        view.pid = event.data["pid"]


def _identity(view: RankView, data: dict[str, Any]) -> None:
    for name in ("local_rank", "pid", "device", "bus_id", "world"):
        if data.get(name) is not None and getattr(view, name) is None:
            setattr(view, name, data[name])
    if data.get("host"):
        view.host = data["host"]


def build_views(facts: JobFacts) -> dict[int, RankView]:
    """Every rank the facts name, with what they say about it."""
    by_pid, by_local = _index(facts)
    views: dict[int, RankView] = {}
    launcher: list[Event] = []
    for event in facts.events:
        if event.kind in ("exit", "killed_by_launcher") and event.rank is None:
            launcher.append(event)
            continue
        if event.rank is None:
            continue
        _add(_view(views, event.rank), event)
    for event in launcher:
        ranks = _launcher_ranks(event, by_pid, by_local)
        if event.kind == "killed_by_launcher" and not ranks and event.data.get("host"):
            ranks = [v.rank for v in views.values() if v.host == event.data["host"]]
        for rank in ranks:
            view = _view(views, rank)
            if event.kind == "exit":
                view.exits.append(event)
                if event.data.get("code") == -15:
                    view.terminated = True
            else:
                view.terminated = True
    for flight in facts.flights:
        if flight.rank is not None:
            view = _view(views, flight.rank)
            view.flight = flight
            view.host = view.host or flight.host
    return views


def world_size(views: dict[int, RankView]) -> int:
    """The job's rank count as its logs say (or the highest rank seen + 1)."""
    worlds = [v.world for v in views.values() if v.world]
    worlds += [e.data["world"] for v in views.values() for e in v.identity if e.data.get("world")]
    seen = max(views) + 1 if views else 0
    return max([seen, *worlds]) if worlds else seen

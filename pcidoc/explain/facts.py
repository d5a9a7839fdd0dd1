"""The facts ``pcidoc explain`` gathers from a job's files, before any reasoning.

Every fact keeps where it was read (:class:`Ref`: file, line, the line's text), because an
explanation must quote its evidence. Times are seconds on the clock of the host that wrote the
line (a naive wall-clock time read as if it were UTC), or None; clocks of different hosts are
aligned later (:mod:`pcidoc.explain.timeline`).
"""

from __future__ import annotations

from typing import Any

from pcidoc._record import field, record

CAUSES = ("hang", "died", "slow", "mismatch", "link", "xid", "iommu", "transport", "unknown")
"""The causes an explanation can name (``culprit.cause``)."""

COLLECTIVE_ERRORS = frozenset({"timeout", "peer_lost", "mismatch", "barrier_missing"})
"""Kinds of error a rank reports while it waits in a collective (the peers' side of a fault)."""


@record
class Ref:
    """Where a fact was read: the file (as given, relative to the job folder when inside it),
    the 1-based line (0 for a binary file) and the line's text (cleaned, at most 300
    characters)."""

    file: str
    line: int
    text: str

    def where(self) -> str:
        """``file:line``."""
        return f"{self.file}:{self.line}" if self.line else self.file


@record
class Event:
    """One thing a line (or a dump) says about a rank, a host or the job.

    ``kind`` is one of: ``identity``, ``progress``, ``timeout``, ``peer_lost``, ``mismatch``,
    ``barrier_missing``, ``app_error``, ``fatal``, ``exit``, ``killed_by_launcher``,
    ``transport``, ``watchdog``, ``ras``, ``kernel``. ``data`` holds what the kind reads (a
    step, an exit code, the collective, the named ranks, a bus id...).
    """

    kind: str
    ref: Ref | None = None
    rank: int | None = None
    host: str | None = None
    time: float | None = None
    data: dict[str, Any] = field(default_factory=dict)


@record
class GpuInfo:
    """A GPU of a host as its capture (or NCCL's log) describes it."""

    host: str
    index: int | None
    bus_id: str | None
    name: str | None = None
    ports: list[str] = field(default_factory=list)
    """Upstream PCIe ports, nearest first (from a capture's PCIe path)."""
    source: str | None = None


@record
class FlightRank:
    """What one rank's flight-recorder dump says: every collective it recorded."""

    rank: int | None
    ref: Ref
    entries: list[dict[str, Any]] = field(default_factory=list)
    """``{"seq", "op", "state", "created_s", "sizes", "pg"}`` per collective, oldest first."""
    last_enqueued: int | None = None
    last_completed: int | None = None
    host: str | None = None


@record
class Unread:
    """A path that was skipped, and why."""

    path: str
    reason: str


@record
class JobFacts:
    """Everything read from a job's files."""

    events: list[Event] = field(default_factory=list)
    gpus: list[GpuInfo] = field(default_factory=list)
    flights: list[FlightRank] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    unread: list[Unread] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    """Hosts named by folders, prefixes or content, in order of appearance."""
    world_size: int | None = None
    notes: list[str] = field(default_factory=list)
    """What the reader could not do (a budget ran out, a format it only half reads)."""

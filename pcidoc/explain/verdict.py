"""The explanation of a job (``pcidoc.explain/1``): what the reasoning concluded, with its
evidence, the rank-to-GPU chain, the timeline and what to do. Plain records; :meth:`as_dict`
is the JSON form (documented in docs/formats.md)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from pcidoc._record import field, record
from pcidoc.explain.facts import Ref

SCHEMA = "pcidoc.explain/1"
MAX_CHAIN = 1024
MAX_TIMELINE = 400
MAX_EVIDENCE = 40


@record
class Culprit:
    """The rank that explains the failure (``rank`` None: the failure has no single rank)."""

    cause: str
    rank: int | None = None
    host: str | None = None
    local_rank: int | None = None
    device: int | None = None
    bus_id: str | None = None
    gpu: str | None = None
    step: int | None = None
    """The last step it completed."""
    collective: str | None = None
    detail: str = ""


@record
class Evidence:
    """A line that supports (or frames) the explanation."""

    ref: Ref
    role: str
    """``culprit`` (points at the culprit), ``peer`` (what the others did), ``hardware``,
    ``context``."""
    rank: int | None = None
    host: str | None = None
    why: str = ""


@record
class ChainLink:
    """Rank -> host -> local rank -> CUDA device -> bus id -> GPU, with the links that could not
    be established and where each came from."""

    rank: int
    host: str | None = None
    local_rank: int | None = None
    device: int | None = None
    bus_id: str | None = None
    gpu: str | None = None
    sources: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


@record
class Moment:
    """One event on the job's timeline."""

    what: str
    host: str | None = None
    rank: int | None = None
    time: float | None = None
    """On the host's own clock."""
    aligned: float | None = None
    """On the reference host's clock (None: unknown offset or no time)."""
    ref: Ref | None = None
    kind: str = "step"
    """``step``, ``error``, ``exit``, ``watchdog``, ``kernel``."""


@record
class RankRow:
    """One rank in a line: its role in the failure and what it last did."""

    rank: int
    host: str | None = None
    role: str = "ok"
    """``culprit``, ``waited`` (reported a collective error: it waited for the culprit),
    ``quiet`` (ran, reported nothing), ``no log`` (none of its lines was read)."""
    last_step: int | None = None
    error: str | None = None
    """Its first error, in a few words."""
    exit_code: int | None = None


@record
class Explanation:
    """What ``pcidoc explain`` says about a job."""

    status: str
    """``ok`` (nothing found), ``warn`` (a straggler, or a failure without a culprit), ``fault``
    (a culprit with a fault)."""
    summary: str
    culprit: Culprit | None = None
    confidence: float = 0.0
    candidates: list[dict[str, Any]] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    ranks: list[RankRow] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    chain: list[ChainLink] = field(default_factory=list)
    reference_host: str | None = None
    clock_offsets: dict[str, float | None] = field(default_factory=dict)
    timeline: list[Moment] = field(default_factory=list)
    first_anomaly: Moment | None = None
    actions: list[str] = field(default_factory=list)
    collect: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ranks_seen: int = 0
    world_size: int = 0
    hosts: list[str] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    unread: list[dict[str, str]] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 nothing found, 1 a warning (straggler, unexplained failure), 2 a culprit with a
        fault."""
        return {"ok": 0, "warn": 1, "fault": 2}.get(self.status, 1)

    def as_dict(self) -> dict[str, Any]:
        """The ``pcidoc.explain/1`` JSON object."""
        return {
            "schema": SCHEMA,
            "status": self.status,
            "exit_code": self.exit_code,
            "summary": self.summary,
            "culprit": _culprit(self.culprit),
            "confidence": round(self.confidence, 2),
            "candidates": self.candidates,
            "waiting_ranks": self.waiting,
            "ranks": [_row(r) for r in self.ranks[:MAX_CHAIN]],
            "evidence": [_evidence(e) for e in self.evidence[:MAX_EVIDENCE]],
            "chain": [_link(c) for c in self.chain[:MAX_CHAIN]],
            "timeline": {
                "reference_host": self.reference_host,
                "clock_offsets_s": self.clock_offsets,
                "first_anomaly": _moment(self.first_anomaly),
                "events": [_moment(m) for m in self.timeline[:MAX_TIMELINE]],
            },
            "actions": self.actions,
            "collect_next_time": self.collect,
            "notes": self.notes,
            "inputs": {
                "files_read": len(self.files_read),
                "files": self.files_read[:200],
                "unread": self.unread[:200],
                "ranks_seen": self.ranks_seen,
                "world_size": self.world_size,
                "hosts": self.hosts,
            },
        }


def _culprit(culprit: Culprit | None) -> dict[str, Any] | None:
    if culprit is None:
        return None
    return {
        "rank": culprit.rank,
        "host": culprit.host,
        "local_rank": culprit.local_rank,
        "device": culprit.device,
        "bus_id": culprit.bus_id,
        "gpu": culprit.gpu,
        "cause": culprit.cause,
        "step": culprit.step,
        "collective": culprit.collective,
        "detail": culprit.detail,
    }


def _row(row: RankRow) -> dict[str, Any]:
    return {
        "rank": row.rank,
        "host": row.host,
        "role": row.role,
        "last_step": row.last_step,
        "error": row.error,
        "exit_code": row.exit_code,
    }


def _ref(ref: Ref | None) -> dict[str, Any] | None:
    if ref is None:
        return None
    return {"file": ref.file, "line": ref.line, "text": ref.text}


def _evidence(item: Evidence) -> dict[str, Any]:
    return {
        "role": item.role,
        "rank": item.rank,
        "host": item.host,
        "why": item.why,
        **(_ref(item.ref) or {}),
    }


def _link(link: ChainLink) -> dict[str, Any]:
    return {
        "rank": link.rank,
        "host": link.host,
        "local_rank": link.local_rank,
        "device": link.device,
        "bus_id": link.bus_id,
        "gpu": link.gpu,
        "sources": link.sources,
        "not_established": link.missing,
    }


def clock_text(seconds: float | None) -> str | None:
    """A time as the logs wrote it (their naive wall clock), to the millisecond."""
    if seconds is None:
        return None
    try:
        moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _moment(moment: Moment | None) -> dict[str, Any] | None:
    if moment is None:
        return None
    return {
        "what": moment.what,
        "host": moment.host,
        "rank": moment.rank,
        "time": clock_text(moment.time),
        "aligned_time": clock_text(moment.aligned),
        "kind": moment.kind,
        "where": _ref(moment.ref),
    }

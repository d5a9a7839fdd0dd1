"""Facts of small synthetic jobs for the reasoning tests (the rules are pure functions: they
are tested on facts built here; the readers and the harness are tested on real text)."""

from __future__ import annotations

from typing import Any

from pcidoc.explain.facts import Event, FlightRank, GpuInfo, JobFacts, Ref

T0 = 1_800_000_000.0


def ref(text: str, line: int = 1, file: str = "job.log") -> Ref:
    return Ref(file, line, text)


def ev(
    kind: str,
    who: int | None = None,
    host: str | None = "n1",
    time: float | None = None,
    **data: Any,
) -> Event:
    """An event of rank ``who`` (None: a launcher's or the kernel's line)."""
    return Event(kind, ref(f"{kind} {who} {data}"), rank=who, host=host, time=time, data=data)


def steps(
    ranks: range | list[int],
    last: int,
    host: str = "n1",
    total: int = 10,
    start: float = T0,
    skew: float = 0.0,
    timing: dict[int, float] | None = None,
    world: int | None = None,
) -> list[Event]:
    """Identity lines and steps 1..last of every rank (timestamps 0.1 s apart, on a clock
    ``skew`` seconds off); ``timing[rank]``: its compute ms (others 40 ms, comm the rest)."""
    out = []
    for rank in ranks:
        who = {"rank": rank, "local_rank": rank % 8}
        if world is not None:
            who["world"] = world
        out.append(ev("identity", rank, host, start, **who))
        for step in range(1, last + 1):
            compute = (timing or {}).get(rank, 40.0)
            slowest = max([40.0, *(timing or {}).values()])
            data = {"step": step, "total": total, "compute": compute, "comm": slowest - compute + 2}
            out.append(ev("progress", rank, host, start + skew + 0.1 * step, **data))
    return out


def facts(
    *events: Event | list[Event],
    gpus: list[GpuInfo] | None = None,
    flights: list[FlightRank] | None = None,
) -> JobFacts:
    flat: list[Event] = []
    for item in events:
        flat.extend(item if isinstance(item, list) else [item])
    hosts = list(dict.fromkeys(e.host for e in flat if e.host))
    return JobFacts(
        events=flat, gpus=gpus or [], flights=flights or [], files_read=["job.log"], hosts=hosts
    )


def timeout(rank: int, host: str = "n1", collective: str = "all_reduce") -> Event:
    return ev("timeout", rank, host, exception="RuntimeError", collective=collective)


def peer_lost(rank: int, host: str = "n1", collective: str = "all_reduce") -> Event:
    return ev("peer_lost", rank, host, exception="RuntimeError", collective=collective)


def flight(rank: int, ops: list[str], start: float = T0, late: float = 0.0) -> FlightRank:
    entries = [
        {
            "seq": i + 1,
            "op": op,
            "state": "scheduled",
            "created_s": start + i * 0.1 + late,
            "sizes": "[[8]]",
            "pg": "0",
        }
        for i, op in enumerate(ops)
    ]
    return FlightRank(
        rank=rank,
        ref=ref(f"fr {rank}", 0, f"nccl_trace_rank_{rank}"),
        entries=entries,
        last_enqueued=len(ops),
    )

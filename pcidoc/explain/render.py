"""The explanation as text for a terminal (``pcidoc explain`` without ``--json``).

Presenters only render: everything shown was decided by :mod:`pcidoc.explain.reason`. Every
string that came from a job's files was cleaned of terminal control sequences where it was read;
it is written here as plain text (no markup is interpreted).
"""

from __future__ import annotations

from pcidoc.explain.verdict import ChainLink, Culprit, Explanation, Moment, clock_text
from pcidoc.sanitize import clean_line

TIMELINE_SHORT = 14
"""Timeline events shown without --verbose (the ones nearest the first anomaly)."""


def chain_line(link: ChainLink) -> str:
    parts = [f"rank {link.rank}", link.host or "host ?"]
    parts.append(f"local {link.local_rank}" if link.local_rank is not None else "local ?")
    parts.append(f"cuda:{link.device}" if link.device is not None else "cuda:?")
    parts.append(link.bus_id or "bus ?")
    if link.gpu:
        parts.append(link.gpu)
    return "  " + "  ".join(clean_line(p) for p in parts)


def _culprit_lines(culprit: Culprit, confidence: float) -> list[str]:
    where = []
    if culprit.rank is not None:
        where.append(f"rank {culprit.rank}")
    for label, value in (
        ("host", culprit.host),
        ("local rank", culprit.local_rank),
        ("cuda device", culprit.device),
        ("bus", culprit.bus_id),
        ("GPU", culprit.gpu),
        ("last step", culprit.step),
        ("in", culprit.collective),
    ):
        if value is not None:
            where.append(f"{label} {value}")
    lines = []
    if where:
        lines.append("  culprit     " + " · ".join(clean_line(str(w)) for w in where))
    lines.append(f"  cause       {culprit.cause} (confidence {confidence:.2f})")
    if culprit.detail:
        lines.append("  why         " + clean_line(culprit.detail))
    return lines


def moment_line(moment: Moment) -> str:
    when = clock_text(moment.aligned if moment.aligned is not None else moment.time)
    stamp = when[11:] if when else "(no time)   "
    own = "" if moment.aligned is not None or moment.time is None else " (own clock)"
    who = f"rank {moment.rank}" if moment.rank is not None else ""
    where = f"  {moment.ref.where()}" if moment.ref else ""
    host = moment.host or ""
    return clean_line(f"  {stamp}{own}  {host:<14} {who:<8} {moment.what}{where}")


def short_timeline(result: Explanation) -> list[Moment]:
    """What matters most of the timeline: the kernel's events, the culprit's steps and end,
    and the first few of its peers' errors (timed ones, in time order)."""
    culprit = result.culprit.rank if result.culprit else None
    peers = 0
    shown = []
    for moment in result.timeline:
        keep = moment.kind == "kernel" or (culprit is not None and moment.rank == culprit)
        if not keep and moment.kind in ("error", "watchdog") and peers < 3:
            keep, peers = True, peers + 1
        if keep:
            shown.append(moment)
    return shown[:TIMELINE_SHORT] if shown else result.timeline[:TIMELINE_SHORT]


def _timeline(result: Explanation, verbose: bool) -> list[str]:
    moments = result.timeline
    if not moments:
        return []
    offsets = ", ".join(
        f"{h} {'?' if o is None else f'{o:+.3f} s'}" for h, o in result.clock_offsets.items()
    )
    head = f"Timeline (on {result.reference_host or 'each host'}'s clock"
    head += f"; offsets: {offsets})" if len(result.clock_offsets) > 1 else ")"
    shown = moments if verbose else short_timeline(result)
    lines = [head, *(moment_line(m) for m in shown)]
    if len(shown) < len(moments):
        lines.append(f"  ... {len(moments) - len(shown)} more (--verbose, or --json)")
    return lines


def explanation_text(result: Explanation, verbose: bool = False) -> str:
    """The explanation for a terminal."""
    lines = [f"pcidoc explain: {clean_line(result.summary)}"]
    if result.culprit is not None:
        lines += _culprit_lines(result.culprit, result.confidence)
    if result.waiting:
        shown = ", ".join(map(str, result.waiting[:24])) + (
            " ..." if len(result.waiting) > 24 else ""
        )
        lines.append(f"  waited      rank(s) {shown}")
    if result.evidence:
        lines += ["", "Evidence"]
        for item in result.evidence[: 40 if verbose else 8]:
            lines.append(clean_line(f"  [{item.role}] {item.ref.where()}: {item.ref.text}")[:240])
    timeline = _timeline(result, verbose)
    if timeline:
        lines += ["", *timeline]
    culprit_rank = result.culprit.rank if result.culprit else None
    links = result.chain if verbose else [c for c in result.chain if c.rank == culprit_rank]
    if links:
        lines += ["", "Rank -> GPU" if verbose else "Its way to the GPU"]
        lines += [chain_line(link) for link in links[: 256 if verbose else 1]]
        for missing in links[0].missing if not verbose else []:
            lines.append("    not established: " + clean_line(missing))
    if result.actions:
        lines += ["", "What to do", *(f"  - {clean_line(a)}" for a in result.actions)]
    if result.collect and (result.status != "ok" or verbose):
        title = (
            "Collect next time"
            if result.culprit is None or result.culprit.rank is None
            else ("To see more next time")
        )
        lines += ["", title, *(f"  - {clean_line(c)}" for c in result.collect)]
    if result.notes:
        lines += ["", "Notes", *(f"  - {clean_line(n)}" for n in result.notes[:12])]
    read = (
        f"Read {len(result.files_read)} file(s), {result.ranks_seen} of {result.world_size} rank(s)"
    )
    if result.unread:
        read += f"; skipped {len(result.unread)}: " + "; ".join(
            clean_line(f"{u['path']} ({u['reason']})") for u in result.unread[:3]
        )
    lines += ["", read]
    return "\n".join(lines) + "\n"

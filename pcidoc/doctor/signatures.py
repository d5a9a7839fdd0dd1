"""Findings from the lines that matched the failure catalogue (:mod:`pcidoc.catalogue`).

Every entry names the check that reports it (``nccl.network``, ``nvml.health``...; most report
through ``log.signatures``). A check asks :func:`signature_findings` for its own: one finding per
entry, severity and looked-up value, with the lines quoted (file and line number), the devices
they name joined to the capture's GPUs and NICs, the likely causes in order and the fix.

Captures written before the catalogue existed carry NCCL ``WARN`` lines but no hits; their
warning lines are matched here, so an old capture is judged as a new import of it would be.
"""

from __future__ import annotations

from collections.abc import Callable

from pcidoc.doctor.context import Context
from pcidoc.doctor.devices import device_label, subject
from pcidoc.doctor.finding import Finding
from pcidoc.model.evidence import SignatureHit
from pcidoc.model.report import Evidence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

    from pcidoc.catalogue import Verdict

MAX_QUOTED = 3
"""Lines quoted per finding."""


def catalogue_table(name: str) -> dict[str, dict[str, Any]]:
    """:func:`pcidoc.catalogue.table`, the catalogue module imported on the first call: the
    checks look tables up only for events they explain, and ``check`` on a machine without any
    need not load the catalogue's module (~1.5 ms of its start-up)."""
    from pcidoc import catalogue

    return catalogue.table(name)


def all_hits(ctx: Context) -> list[SignatureHit]:
    """The capture's catalogue hits (matched again from stored NCCL warnings when the capture
    predates the catalogue)."""
    ev = ctx.capture.evidence
    if ev is None:
        return []
    if ev.signatures or ev.scanned_lines:
        return list(ev.signatures)
    hits: list[SignatureHit] = []
    if not ev.nccl_logs:
        return hits
    from pcidoc import catalogue  # not at the top: loaded only when there are lines to judge

    for log in ev.nccl_logs:
        hits.extend(catalogue.scan([w.quote for w in log.warnings if w.quote], log.source).hits)
    return hits


def _where(ctx: Context, hit: SignatureHit) -> tuple[str, str | None]:
    """(`` on GPU3 (0000:3b:00.0)``, subject) of one hit."""
    if hit.bus_id:
        return f" on {device_label(ctx, hit.bus_id)}", subject(ctx, hit.bus_id)
    parts = []
    label = None
    if hit.gpu is not None:
        label = f"GPU{hit.gpu}"
        parts.append(label)
    if hit.nic:
        label = label or hit.nic
        parts.append(hit.nic + (f" port {hit.port}" if hit.port is not None else ""))
    if hit.link is not None:
        parts.append(f"NVLink {hit.link}")
    if hit.host:
        parts.append(f"host {hit.host}")
    if hit.rank is not None:
        parts.append(f"rank {hit.rank}")
    return (f" on {', '.join(parts)}" if parts else ""), label or hit.host


def _quote(hit: SignatureHit) -> Evidence:
    where = hit.file or "pasted text"
    if hit.line:
        where += f" line {hit.line}"
    if hit.count > 1:
        where += f" (x{hit.count})"
    return Evidence(label=where, value=hit.quote)


def _finding(ctx: Context, verdict: Verdict, hits: list[SignatureHit]) -> Finding:
    entry = verdict.entry
    count = sum(h.count for h in hits)
    places = [_where(ctx, h) for h in hits]
    where = places[0][0] if len({p[0] for p in places}) == 1 else f" ({len(places)} places)"
    detail = f" ({verdict.detail})" if verdict.detail else ""
    times = f", {count} lines" if count > 1 else ""
    remediation = [entry.fix]
    if entry.causes:
        remediation.append(
            "Likely causes, most likely first: "
            + "; ".join(f"({n}) {cause}" for n, cause in enumerate(entry.causes, 1))
            + "."
        )
    return Finding(
        verdict.severity,  # type: ignore[arg-type]
        f"{entry.title}{detail}{where}{times}: {verdict.meaning}",
        subjects=list(dict.fromkeys(s for _, s in places if s)),
        evidence=[_quote(h) for h in hits[:MAX_QUOTED]]
        + [Evidence(label="catalogue entry", value=entry.id, subject=entry.source[:200])],
        remediation=remediation,
        confidence=entry.confidence,  # type: ignore[arg-type]
    )


def signature_findings(
    ctx: Context, check_id: str, keep: Callable[[SignatureHit], bool] | None = None
) -> list[Finding]:
    """One finding per (entry, severity, looked-up value) of the hits ``check_id`` reports, in
    the order of their first lines, carrier entries last; known-benign lines give none.
    ``keep`` leaves out hits a structured reader already turned into the check's own events
    (the kernel checks)."""
    hits = all_hits(ctx)
    if not hits:
        return []
    from pcidoc import catalogue  # not at the top: loaded only when there are lines to judge

    groups: dict[tuple[str, str, str], tuple[Verdict, list[SignatureHit]]] = {}
    for hit in hits:
        if keep is not None and not keep(hit):
            continue
        verdict = catalogue.judge(hit)
        if verdict is None or verdict.entry.check != check_id or verdict.severity == "benign":
            continue
        key = (verdict.entry.id, verdict.severity, verdict.detail)
        groups.setdefault(key, (verdict, []))[1].append(hit)
    # A line that only carries its cause (an NCCL result code, a bare CUDA error) follows the
    # specific entries of the same check: the cause leads when both lines are in the paste.
    ordered = sorted(groups.values(), key=lambda group: group[0].entry.carrier)
    return [_finding(ctx, verdict, hits) for verdict, hits in ordered]

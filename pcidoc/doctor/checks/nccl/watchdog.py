"""``nccl.watchdog``: PyTorch's ProcessGroupNCCL watchdog timed out on a collective (the job
hung), and the flight recorder's view of which ranks are behind. The watchdog names the
collective that never finished, not a faulty GPU: the rank that never reached it is the lead.
"""

from __future__ import annotations

from pcidoc.doctor.checks._common import ev
from pcidoc.doctor.checks.nccl._runtime import (
    bus_id_of,
    flight_records,
    switch_pair_step,
    watchdogs,
    who,
)
from pcidoc.doctor.checks.nccl._shared import quote
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, bare_skip, check
from pcidoc.doctor.signatures import signature_findings
from pcidoc.doctor.wording import short_list

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

_STEPS = [
    "The watchdog names the collective that never completed, not a bad GPU: find the rank that "
    "never reached it. Dump every rank's flight recorder (`TORCH_NCCL_TRACE_BUFFER_SIZE=2000 "
    "TORCH_NCCL_DUMP_ON_TIMEOUT=1`) and query NCCL RAS (`ncclras`) while the job hangs; import "
    "both here.",
    "Undo recent NCCL_* settings one at a time (e.g. `NCCL_P2P_USE_CUDA_MEMCPY`, "
    "`NCCL_P2P_LEVEL`, `NCCL_ALGO`/`NCCL_PROTO`) and re-run: a hang at the first collectives "
    "that follows a setting is that setting's.",
    "Then check the GPUs and links of the ranks named (`pcidoc check --probes quick` on that "
    "node: P2P byte verification, link state, kernel log).",
]


def _behind(records: list[Any]) -> tuple[list[Any], int | None]:
    """Ranks whose last enqueued collective is lower than the others' (per process group)."""
    by_pg: dict[str | None, list[Any]] = {}
    for r in records:
        by_pg.setdefault(r.pg, []).append(r)
    behind: list[Any] = []
    top = None
    for group in by_pg.values():
        values = [r.last_enqueued for r in group if r.last_enqueued is not None]
        if len(set(values)) < 2:
            continue
        top = max(values)
        behind += [r for r in group if r.last_enqueued is not None and r.last_enqueued < top]
    return behind, top


def _timeout_text(ctx: Context, w: Any) -> str:
    name = who(ctx, w.rank, w.host, None, None)
    seconds = f" after {w.ran_ms / 1000:.0f} s" if w.ran_ms else ""
    status = ""
    if w.last_completed is not None:
        status = f"last completed {w.last_completed}"
        if w.last_enqueued is not None:
            status += f", last enqueued {w.last_enqueued}"
    if w.op == "watchdog stuck":
        return f"{name}: the watchdog itself was stuck{seconds}"
    if w.op is None:
        return f"{name}: {status or 'status unknown'}"
    head = f"{name}: {w.op} SeqNum={w.seq} did not finish{seconds}"
    return head + (f", {status}" if status else "")


def _divergence(ctx: Context, timeouts: list[Any]) -> str:
    """Which ranks never enqueued the collective others wait on; or frozen processes."""
    enqueued = [w.last_enqueued for w in timeouts if w.last_enqueued is not None]
    if enqueued and max(enqueued) < 0:
        return (
            "; no collective was ever in flight (last enqueued -1): the processes were frozen "
            "(a storage stall, a GIL deadlock), not hung in NCCL"
        )
    if len(set(enqueued)) < 2:
        return ""
    top = max(enqueued)
    behind = [w for w in timeouts if w.last_enqueued is not None and w.last_enqueued < top]
    ahead = [w for w in timeouts if w.last_enqueued == top]
    names = short_list([who(ctx, w.rank, w.host, None, None) for w in behind])
    return (
        f"; {names} never enqueued collective {top}, which "
        f"{short_list([who(ctx, w.rank, w.host, None, None) for w in ahead])} wait on: the "
        "ranks issued different collectives (a skipped or extra collective, or a rank stuck "
        "before it)"
    )


def _flight_finding(ctx: Context, dumps: list[Any]) -> Finding | None:
    records = [r for d in dumps for r in d.ranks]
    behind, top = _behind(records)
    if not behind:
        return None
    names = [
        who(ctx, r.rank, None, None, None) + f" at {r.last_enqueued} ({r.op or '?'}, {r.state})"
        for r in behind
    ]
    return Finding(
        "fail",
        f"Flight recorder: {len(behind)} rank(s) behind the others (who reached collective "
        f"{top}): {short_list(names)}",
        subjects=[f"rank {r.rank}" for r in behind if r.rank is not None],
        evidence=[
            ev("last enqueued collective", r.last_enqueued, subject=f"rank {r.rank}")
            for r in behind[:6]
        ],
        remediation=[*_STEPS, *switch_pair_step(ctx)],
    )


@check("nccl.watchdog")
def watchdog(ctx: Context) -> list[Finding]:
    """Collective timeouts, which rank is behind, and where those ranks run; the failure
    catalogue's watchdog lines when the reader found no structured timeout."""
    timeouts = watchdogs(ctx)
    dumps = flight_records(ctx)
    findings: list[Finding] = []
    flight = _flight_finding(ctx, dumps)
    if flight is not None:
        findings.append(flight)
    if timeouts:
        lines = [_timeout_text(ctx, w) for w in timeouts[:4]]
        summary = "NCCL watchdog timeout: " + "; ".join(lines) + _divergence(ctx, timeouts)
        buses = sorted(
            {b for w in timeouts if (b := bus_id_of(ctx, w.rank, w.host, None)) is not None}
        )
        findings.append(
            Finding(
                "fail",
                summary,
                subjects=sorted({f"rank {w.rank}" for w in timeouts if w.rank is not None}),
                evidence=[quote(w.quote, "watchdog") for w in timeouts[:3] if w.quote]
                + [ev("GPU bus id of a timed-out rank", b) for b in buses],
                remediation=[*_STEPS, *switch_pair_step(ctx)],
            )
        )
    if not timeouts:
        # Watchdog lines the reader could not structure (older formats, a quoted line, the
        # heartbeat monitor, "Some NCCL operations have failed"): with a structured timeout
        # they are the same event, reported once above.
        findings += signature_findings(ctx, "nccl.watchdog")
    if findings:
        return findings
    if dumps:
        return [
            Finding(
                "pass",
                f"flight recorder: {len({(r.rank, r.pg) for d in dumps for r in d.ranks})} "
                "rank record(s), none behind the others",
                confidence="medium",
            )
        ]
    return [bare_skip("nccl.watchdog")]

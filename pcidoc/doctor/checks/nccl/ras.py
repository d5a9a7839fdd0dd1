"""``nccl.ras``: what NCCL's RAS report says about the job's ranks: dead or missing processes,
ranks that reported errors, and collective-count mismatches (which ranks are behind, which
ahead). RAS prints the minority of a mismatch: those may be the ranks that are ahead, while the
stalled ones are the majority it does not list.
"""

from __future__ import annotations

from pcidoc.doctor.checks._common import ev
from pcidoc.doctor.checks.nccl._runtime import ras_reports, switch_pair_step, watchdogs, who
from pcidoc.doctor.checks.nccl._shared import quote
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, bare_skip, check
from pcidoc.doctor.wording import short_list

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

_STUCK_STEPS = [
    "Query RAS again (`ncclras`, or `pcidoc watch` on the node): counts that still differ after "
    "a minute mean the communicator is stuck, not merely busy.",
]


def _named(ctx: Context, ranks: list[Any]) -> list[str]:
    return [who(ctx, r.rank, r.host, r.gpu, r.pid) for r in ranks]


def _lost(ctx: Context, report: Any) -> Finding | None:
    dead = [r for r in report.ranks if r.state == "dead"]
    missing = [r for r in report.ranks if r.state in ("missing", "unresponsive")]
    # A process RAS names and the rank it manages are one thing: keep the rank line.
    rank_pids = {r.pid for r in missing if r.rank is not None}
    missing = [r for r in missing if r.rank is not None or r.pid not in rank_pids]
    errors = [r for r in report.ranks if r.state == "error"]
    if not (dead or missing or errors or report.dead_processes or report.missing_processes):
        return None
    parts = []
    if dead or report.dead_processes:
        parts.append(f"dead: {short_list(_named(ctx, dead)) or report.dead_processes}")
    if missing or report.missing_processes:
        unique = list(dict.fromkeys(_named(ctx, missing)))
        parts.append(f"not answering: {short_list(unique) or report.missing_processes}")
    if errors:
        parts.append(f"reported errors: {short_list(_named(ctx, errors))}")
    return Finding(
        "fail",
        "NCCL RAS: " + "; ".join(parts) + _implausible_note(report),
        subjects=sorted({f"rank {r.rank}" for r in dead + missing + errors if r.rank is not None}),
        evidence=[quote(r.quote, "RAS") for r in (dead + missing + errors)[:6] if r.quote]
        + [quote(n.quote, "RAS outlier node") for n in report.outliers[:3]]
        + [ev("RAS data discarded", x) for x in report.implausible],
        remediation=[
            "Look at the named processes first: are they alive (`ps -p PID` on that node), "
            "stuck in a CUDA call (`py-spy dump --pid PID`), or did their GPU fail "
            "(`dmesg | grep -i xid`, `pcidoc check` on that node)?",
            "A process RAS cannot reach for 60 s is declared dead: restart the job without "
            "that node (drain it) if its GPU or network shows errors.",
            *switch_pair_step(ctx),
        ],
    )


def _implausible_note(report: Any) -> str:
    if not report.implausible:
        return ""
    return (
        f" ({'; '.join(report.implausible)}: impossible for this job, a RAS reporting error, "
        "left out)"
    )


def _mismatch(ctx: Context, report: Any) -> Finding | None:
    if not report.counts:
        return None
    by_comm: dict[str | None, list[Any]] = {}
    for group in report.counts:
        by_comm.setdefault(group.comm, []).append(group)
    texts, evidence = [], []
    for comm, groups in by_comm.items():
        top = max(g.ops for g in groups)
        behind = [g for g in groups if g.ops < top]
        ahead = [g for g in groups if g.ops == top]
        what = groups[0].collective or "collective"
        b = sum(g.ranks for g in behind)
        a = sum(g.ranks for g in ahead)
        named_ahead = [r for r in report.ranks if r.comm == comm and r.state == "ahead"]
        named_behind = [r for r in report.ranks if r.comm == comm and r.state == "behind"]
        text = (
            f"{comm or 'a communicator'}: {b} rank(s) behind at {what} operation "
            f"{min(g.ops for g in groups)}, {a} ahead at {top}"
        )
        if named_ahead and not named_behind:
            text += (
                f"; the ranks RAS lists ({short_list(_named(ctx, named_ahead))}) are the ones "
                f"AHEAD: the stalled ranks are the {b} it does not list"
            )
        elif named_behind:
            text += f"; behind: {short_list(_named(ctx, named_behind))}"
        texts.append(text)
        evidence += [quote(r.quote, "RAS") for r in (named_ahead + named_behind)[:4] if r.quote]
    return Finding(
        "warn",
        "NCCL RAS: collective counts differ: " + " | ".join(texts),
        evidence=evidence,
        remediation=[
            *_STUCK_STEPS,
            "A count mismatch is a rank (or an application code path) that never launched the "
            "next collective: look at what the ranks BEHIND are doing (stack dumps with "
            "`py-spy dump`, the PyTorch flight recorder with `TORCH_NCCL_TRACE_BUFFER_SIZE`), "
            "not at the links of the ranks ahead.",
            *switch_pair_step(ctx),
        ],
        confidence="medium",
    )


@check("nccl.ras")
def ras(ctx: Context) -> list[Finding]:
    """Dead/missing ranks and count mismatches in RAS reports; RAS OK with a watchdog timeout
    is not a healthy job."""
    reports = ras_reports(ctx)
    if not reports:
        return [bare_skip("nccl.ras")]
    findings = [f for report in reports for f in (_lost(ctx, report), _mismatch(ctx, report)) if f]
    if findings:
        return findings
    slow = [r for r in reports if r.timeouts]
    if slow:
        return [
            Finding(
                "warn",
                f"NCCL RAS timed out {slow[0].timeouts} time(s) gathering communicator data: "
                "some processes answered late or not at all",
                remediation=[
                    "Query again with a longer timeout (`ncclras -t 30`); processes that still "
                    "do not answer are stuck or overloaded: look at them first.",
                ],
                confidence="medium",
            )
        ]
    timeouts = watchdogs(ctx)
    if timeouts:
        first = timeouts[0]
        return [
            Finding(
                "warn",
                "NCCL RAS reports every communicator OK, yet the PyTorch watchdog timed out "
                f"(rank {first.rank}, {first.op} SeqNum={first.seq}): the job is not healthy "
                "(see nccl.watchdog)",
                evidence=[quote(first.quote, "watchdog")],
                remediation=[
                    "RAS sees one moment; the watchdog saw a collective never finish. Query RAS "
                    "while the job hangs, and compare the last completed sequence numbers of "
                    "every rank (nccl.watchdog)."
                ],
                confidence="medium",
            )
        ]
    comms = [c for r in reports for c in r.comms]
    return [
        Finding(
            "pass",
            f"NCCL RAS: {len(comms)} communicator line(s), no dead, missing or stalled rank",
            evidence=[quote(c.quote, "RAS") for c in comms[:3] if c.quote],
            confidence="medium",
        )
    ]

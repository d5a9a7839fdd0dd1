"""Run the checks over one capture and build the report. Never raises for a bad check."""

from __future__ import annotations

from collections.abc import Iterable

from pcidoc import __version__
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import CHECK_IDS, REGISTRY, CheckSpec, Finding
from pcidoc.errors import PcidocError
from pcidoc.model.capture import Capture
from pcidoc.model.report import SEVERITY_ORDER, CheckResult, FindingNote, Report, ReportSource
from pcidoc.model.units import plurals

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from pcidoc.model.report import Severity

_CONFIDENCE_RANK = {"high": 2, "medium": 1, "low": 0}


def select_checks(only: Iterable[str] = (), skip: Iterable[str] = ()) -> list[str]:
    """Resolve ``--only``/``--skip`` lists into check ids, in catalogue order.

    An entry may be a full id (``p2p.acs-iommu``) or a topic prefix (``p2p``, ``numa.``).

    Raises:
        PcidocError: an entry matches no check, or the options leave no check to run.
    """

    def expand(entries: Iterable[str], option: str) -> set[str]:
        chosen: set[str] = set()
        for raw in entries:
            for entry in (e.strip() for e in raw.split(",")):
                if not entry:
                    continue
                matched = {
                    cid
                    for cid in CHECK_IDS
                    if cid == entry or cid.startswith(entry.rstrip(".") + ".")
                }
                if not matched:
                    raise PcidocError(
                        f"{option}: unknown check {entry!r}; known checks: {', '.join(CHECK_IDS)}"
                    )
                chosen |= matched
        return chosen

    only_set = expand(only, "--only")
    skip_set = expand(skip, "--skip")
    chosen = [cid for cid in CHECK_IDS if (not only_set or cid in only_set) and cid not in skip_set]
    if not chosen:
        # A report with no checks would pass silently (exit 0), hiding a wrong filter.
        if only_set:
            raise PcidocError(
                "--skip removes every check --only selects: no check left to run; "
                "skip fewer checks or select others"
            )
        raise PcidocError("--skip removes every check: no check left to run; skip fewer checks")
    return chosen


def merge_findings(spec: CheckSpec, findings: list[Finding]) -> CheckResult:
    """Merge the findings of one check into its single result (worst first)."""
    if not findings:
        return CheckResult(
            id=spec.id,
            title=spec.title,
            severity="error",
            summary="the check returned no result (internal error)",
            docs_url=spec.docs_url,
        )
    ordered = sorted(
        findings,
        key=lambda f: (-SEVERITY_ORDER[f.severity], -_CONFIDENCE_RANK[f.confidence]),
    )
    worst = ordered[0]
    notable = [f for f in ordered if f.severity not in ("pass", "skip")]
    summary = plurals(worst.summary)
    if worst.severity not in ("pass", "skip") and len(notable) > 1:
        summary += f" (+{len(notable) - 1} more)"
    # dicts keep first-seen order and de-duplicate in O(1) per item: a 1,000-GPU machine has
    # half a million pairs, and a list scan here was quadratic in them.
    subjects = list(dict.fromkeys(s for f in ordered for s in f.subjects))
    remediation = list(dict.fromkeys(plurals(step) for f in ordered for step in f.remediation))
    evidence = [
        item.model_copy(update={"subject": plurals(item.subject)})
        if item.subject and "(s)" in item.subject
        else item
        for f in ordered
        for item in f.evidence
    ]
    return CheckResult(
        id=spec.id,
        title=spec.title,
        severity=worst.severity,
        summary=summary,
        evidence=evidence,
        remediation=remediation,
        subjects=subjects,
        confidence=worst.confidence,
        needs=worst.needs,
        docs_url=spec.docs_url,
        findings=[
            FindingNote(severity=f.severity, summary=plurals(f.summary), subjects=list(f.subjects))
            for f in notable
        ],
    )


def run_check(spec: CheckSpec, ctx: Context) -> CheckResult:
    """Run one check; an exception becomes an ``error`` result with the message. A check that
    reads only evidence is not run on a capture that carries none: its result is the skip
    :data:`pcidoc.doctor.registry.CHECKS` states for it (what its code returns then)."""
    if spec.bare is not None and ctx.capture.evidence is None:
        return merge_findings(spec, [spec.bare.finding()])
    try:
        outcome = spec.function(ctx)
    except Exception as exc:  # a crashing check must not stop the others
        return CheckResult(
            id=spec.id,
            title=spec.title,
            severity="error",
            summary=f"the check crashed: {exc.__class__.__name__}: {exc}",
            remediation=["Please report this with the capture (`pcidoc capture --redact`)."],
            confidence="low",
            docs_url=spec.docs_url,
        )
    findings = outcome if isinstance(outcome, list) else [outcome]
    return merge_findings(spec, findings)


def run(
    capture: Capture,
    source: ReportSource,
    only: Iterable[str] = (),
    skip: Iterable[str] = (),
    probes_requested: bool = False,
    *,
    generated_at: str,
) -> Report:
    """Run the selected checks over a capture and return the report.

    Args:
        capture: The machine to diagnose.
        source: Where it came from (shown in every presenter).
        only: Check ids or topic prefixes to run (all when empty).
        skip: Check ids or topic prefixes not to run.
        probes_requested: True when this run measured (changes skip hints).
        generated_at: ISO time stamp of the report, given by the caller (the doctor never
            reads the clock, so the same capture always gives the same report).
    """
    ctx = Context(capture, probes_requested=probes_requested)
    results = [run_check(REGISTRY[cid], ctx) for cid in select_checks(only, skip)]
    summary = {sev: 0 for sev in ("pass", "info", "warn", "fail", "skip", "error")}
    for result in results:
        summary[result.severity] += 1
    worst: Severity = max(
        (r.severity for r in results), key=SEVERITY_ORDER.__getitem__, default="pass"
    )
    if worst == "skip":
        worst = "pass"
    from pcidoc.doctor.next_inputs import next_inputs
    from pcidoc.doctor.topology_notes import topology_notes

    # Every part is a validated model already: building the report's validator (the whole
    # capture schema again) would cost 2.5-5 ms of every command's start for nothing.
    return Report.model_construct(
        pcidoc_version=__version__,
        generated_at=generated_at,
        source=source,
        machine=capture,
        checks=results,
        summary=summary,
        worst=worst,
        topology_notes=topology_notes(capture),
        next_inputs=next_inputs(results, source.kind),
    )


def exit_code_for(report: Report) -> int:
    """Exit code of ``pcidoc check``: 2 fail, 3 a check crashed, 1 warn, else 0."""
    from pcidoc.errors import ExitCode

    counts = report.summary
    if counts.get("fail"):
        return ExitCode.FAIL
    if counts.get("error"):
        return ExitCode.BAD_INPUT
    if counts.get("warn"):
        return ExitCode.WARN
    return ExitCode.OK

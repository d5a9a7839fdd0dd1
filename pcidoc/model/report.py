"""The diagnosis report, format ``pcidoc.report/1``, and its parts."""

from __future__ import annotations

from pcidoc.model.base import Field, Literal, Model
from pcidoc.model.capture import Capture
from pcidoc.model.formats import REPORT_SCHEMA

Severity = Literal["pass", "info", "warn", "fail", "skip", "error"]
Confidence = Literal["high", "medium", "low"]

SEVERITY_ORDER: dict[str, int] = {
    "skip": 0,
    "pass": 1,
    "info": 2,
    "warn": 3,
    "error": 4,
    "fail": 5,
}
"""Worst-first sort key: a failure outranks a crashed check, which outranks a warning."""

SEVERITIES: tuple[str, ...] = ("fail", "error", "warn", "info", "pass", "skip")
"""Severities, worst first (display order)."""


class Evidence(Model):
    """One fact or number a check used."""

    label: str
    value: str | bool | int | float | None = None
    unit: str | None = None
    subject: str | None = None
    """What the value is about or for: ``GPU<n>``, ``GPU<a>-GPU<b>``, a NIC name, a bus id, a
    message size (``1 GiB``), or the basis of a modelled value (``12 × NVLink 3.0 at 25 GB/s``,
    ``4 buckets``)."""

    def text(self) -> str:
        """``label: value unit`` for humans."""
        if self.value is None:
            shown = "unknown"
        elif isinstance(self.value, bool):
            shown = "yes" if self.value else "no"
        elif isinstance(self.value, float):
            shown = f"{self.value:.3g}" if abs(self.value) < 100 else f"{self.value:.0f}"
        else:
            shown = str(self.value)
        unit = f" {self.unit}" if self.unit and self.value is not None else ""
        who = f"{self.subject}: " if self.subject else ""
        return f"{who}{self.label}: {shown}{unit}"


class FindingNote(Model):
    """One finding of a check worse than pass (a check may find several: one per GPU, per
    pair...)."""

    severity: Severity
    summary: str
    subjects: list[str] = Field(default_factory=list)


class CheckResult(Model):
    """The outcome of one check."""

    id: str
    title: str
    severity: Severity
    summary: str
    """One line: what was found, with the key numbers."""
    evidence: list[Evidence] = Field(default_factory=list)
    remediation: list[str] = Field(default_factory=list)
    """What to do, in order; commands in backticks."""
    subjects: list[str] = Field(default_factory=list)
    confidence: Confidence = "high"
    needs: str | None = None
    """For ``skip``: what would provide the missing input (``run with --probes quick``)."""
    docs_url: str | None = None
    findings: list[FindingNote] = Field(default_factory=list)
    """Every finding worse than pass, worst first, each with its own summary and subjects (the
    check's summary names the worst and counts the others as "(+N more)")."""


class ReportSource(Model):
    """Where the machine in a report came from."""

    kind: Literal["live", "capture", "import", "demo", "synthetic"]
    path: str | None = None
    name: str | None = None

    @classmethod
    def for_file(cls, path: str, origin_kind: str) -> ReportSource:
        """The source of a machine read with ``--from``: ``import``/``synthetic`` captures keep
        that kind, any other file is a ``capture``."""
        from pcidoc.sanitize import clean_line

        kind = {"import": "import", "synthetic": "synthetic"}.get(origin_kind, "capture")
        # A file name is outside text too: it is shown by check, topo and the TUI.
        return cls(kind=kind, path=clean_line(path))  # type: ignore[arg-type]

    def describe(self) -> str:
        """``live``, ``capture: FILE``, ``demo: NAME``..."""
        detail = self.name or self.path
        return f"{self.kind}: {detail}" if detail else self.kind


class NextInput(Model):
    """An output worth pasting next: what to run, why, and the checks it would let judge."""

    command: str
    why: str
    checks: list[str] = Field(default_factory=list)


class Report(Model):
    """A diagnosis: the machine and one result per check."""

    schema_: Literal["pcidoc.report/1"] = Field(default=REPORT_SCHEMA, alias="schema")
    pcidoc_version: str
    generated_at: str
    source: ReportSource
    machine: Capture
    checks: list[CheckResult]
    summary: dict[str, int] = Field(default_factory=dict)
    """Count per severity."""
    worst: Severity = "pass"
    topology_notes: list[str] = Field(default_factory=list)
    """Notable wiring facts the doctor read from the topology (NVLink islands, GPUs sharing a
    switch, NUMA layout, a flattened view...), one sentence each; presenters render them."""
    next_inputs: list[NextInput] = Field(default_factory=list)
    """When most checks skipped on pasted outputs: the two or three outputs to paste next,
    most useful first."""

    def sorted_checks(self) -> list[CheckResult]:
        """Checks worst first, then in the report's order (the check catalogue's: the
        machine's own checks before those of pasted evidence, and the catch-all of
        catalogue lines, ``log.signatures``, last)."""
        return sorted(self.checks, key=lambda c: -SEVERITY_ORDER[c.severity])

    def check(self, check_id: str) -> CheckResult | None:
        """The result with ``check_id``, or ``None``."""
        return next((c for c in self.checks if c.id == check_id), None)

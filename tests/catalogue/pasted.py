"""What one check concludes on a pasted text: the helper the catalogue's family tests share."""

from __future__ import annotations

from pcidoc.collect.importers import import_texts
from pcidoc.doctor.runner import run
from pcidoc.model.report import ReportSource


def findings(text: str, only: str) -> list[tuple[str, str]]:
    """(severity, summary) of every finding of check ``only`` on a pasted text."""
    capture = import_texts([("paste.txt", text)]).capture
    report = run(
        capture, ReportSource(kind="import", path="paste.txt"), only=[only], generated_at="x"
    )
    (result,) = [c for c in report.checks if c.id == only]
    return [(f.severity, f.summary) for f in result.findings]

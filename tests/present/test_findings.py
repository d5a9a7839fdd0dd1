"""Every finding of a check is reachable: the summaries after the worst one ("(+N more)")."""

from __future__ import annotations

import io
import json

from pcidoc.doctor.registry import Finding, load_checks
from pcidoc.doctor.runner import merge_findings
from pcidoc.model.report import Report
from pcidoc.present.html import render_html
from pcidoc.present.json import report_json
from pcidoc.present.markdown import render_markdown
from pcidoc.present.text import make_console, render_report
from tests.present.fixtures import small_report

SECOND = "GPU6 link at x8 of x16 in P0"
THIRD = "GPU7 at Gen3 of Gen5 `nvidia-smi -q -i 7`"


def _report() -> Report:
    spec = load_checks()["pcie.link-speed"]
    merged = merge_findings(
        spec,
        [
            Finding("fail", "GPU2 at Gen1 x16 under load", subjects=["GPU2"]),
            Finding("warn", SECOND, subjects=["GPU6"]),
            Finding("warn", THIRD, subjects=["GPU7"]),
            Finding("pass", "GPU0 at its max link", subjects=["GPU0"]),
        ],
    )
    report = small_report()
    checks = [merged if c.id == merged.id else c for c in report.checks]
    return report.model_copy(update={"checks": checks})


def test_merge_keeps_every_finding_worse_than_pass() -> None:
    merged = _report().check("pcie.link-speed")
    assert merged is not None and merged.summary.endswith("(+2 more)")
    assert [(f.severity, f.summary, f.subjects) for f in merged.findings] == [
        ("fail", "GPU2 at Gen1 x16 under load", ["GPU2"]),
        ("warn", SECOND, ["GPU6"]),
        ("warn", THIRD, ["GPU7"]),
    ]


def test_verbose_text_lists_every_finding() -> None:
    out = io.StringIO()
    render_report(_report(), make_console(out, width=200), verbose=True)
    text = out.getvalue()
    assert "Findings (3)" in text and f"warn: {SECOND}" in text and "GPU7 at Gen3 of Gen5" in text


def test_json_markdown_html_list_every_finding() -> None:
    doc = json.loads(report_json(_report()))
    check = next(c for c in doc["checks"] if c["id"] == "pcie.link-speed")
    assert [f["summary"] for f in check["findings"]][1:] == [SECOND, THIRD]
    assert f"- warn: {SECOND}" in render_markdown(_report())
    html = render_html(_report())
    assert SECOND in html and "<code>nvidia-smi -q -i 7</code>" in html

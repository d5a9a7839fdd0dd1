"""The runner: merging findings, the report's worst severity, timestamps."""

from __future__ import annotations

import pytest

from pcidoc.doctor.registry import CheckSpec, Finding
from pcidoc.doctor.runner import merge_findings, run
from pcidoc.model import ReportSource
from tests.builders import machine

STAMP = "2026-01-01T00:00:00Z"


def test_a_report_where_every_check_skipped_is_not_worse_than_pass() -> None:
    # Nothing judged is nothing wrong: exit 0 and worst "pass", never "skip" (which would
    # rank below pass and read as if something had been judged).
    cap = machine(2, link="PHB")
    for g in cap.gpus:
        g.nvlinks = []
    report = run(cap, ReportSource(kind="synthetic"), only=["scaling"], generated_at=STAMP)
    assert {c.severity for c in report.checks} == {"skip"}
    assert report.worst == "pass"
    assert report.summary["pass"] == 0 and report.summary["skip"] == len(report.checks)


def test_run_uses_the_callers_timestamp() -> None:
    report = run(machine(1), ReportSource(kind="synthetic"), generated_at=STAMP)
    assert report.generated_at == STAMP


def test_merge_keeps_first_seen_order_without_duplicates() -> None:
    spec = CheckSpec("pcie.errors", "t")
    findings = [
        Finding("warn", "a", subjects=["GPU1", "GPU0"], remediation=["x", "y"]),
        Finding("fail", "b", subjects=["GPU0", "GPU2"], remediation=["y", "z"]),
    ]
    merged = merge_findings(spec, findings)
    assert merged.severity == "fail" and merged.summary == "b (+1 more)"
    assert merged.subjects == ["GPU0", "GPU2", "GPU1"]
    assert merged.remediation == ["y", "z", "x"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 GPU(s)", "1 GPU"),
        ("8 GPU(s), 4 NIC(s)", "8 GPUs, 4 NICs"),
        ("1 GPU pair(s) cross sockets", "1 GPU pair crosses sockets"),
        ("28 GPU pair(s) cross sockets", "28 GPU pairs cross sockets"),
        ("its 1 identical peer(s) have none", "its 1 identical peer has none"),
        ("4 local NIC port(s) for 8 GPUs", "4 local NIC ports for 8 GPUs"),
        ("1 node(s) lack them", "1 node lacks them"),
        ("1,000 node(s) are", "1,000 nodes are"),
        ("on GPU(s) 0-3", "on GPU(s) 0-3"),  # no count: left as written
    ],
)
def test_counted_words_are_singular_or_plural_by_their_count(text: str, expected: str) -> None:
    from pcidoc.model.units import plurals

    assert plurals(text) == expected


def test_merged_results_resolve_plurals_in_summary_and_remediation() -> None:
    spec = CheckSpec("p2p.capability", "t")
    result = merge_findings(
        spec, [Finding("warn", "1 pair(s) refused", remediation=["fix 2 GPU(s)"])]
    )
    assert result.summary == "1 pair refused"
    assert result.remediation == ["fix 2 GPUs"]


def test_evidence_subjects_count_in_english_and_quoted_values_are_left_alone() -> None:
    from pcidoc.model.report import Evidence

    spec = CheckSpec("scaling.efficiency", "t")
    quoted = "NCCL INFO 1 peer(s) found"  # a log line: data, never reworded
    findings = [
        Finding(
            "info",
            "x",
            evidence=[
                Evidence(label="α", value=1.0, unit="us", subject="1 bucket(s)"),
                Evidence(label="α", value=2.0, unit="us", subject="4 bucket(s)"),
                Evidence(label="log line", value=quoted, subject="GPU0"),
            ],
        )
    ]
    evidence = merge_findings(spec, findings).evidence
    assert [e.subject for e in evidence] == ["1 bucket", "4 buckets", "GPU0"]
    assert evidence[2].value == quoted


@pytest.mark.parametrize("name", ["synthetic-72gpu", "h800-8gpu-hgx", "a100-sxm4-8gpu-nvswitch"])
def test_the_report_built_from_its_parts_is_the_validated_report(name: str) -> None:
    from pcidoc.model.report import Report
    from pcidoc.present.json import report_json
    from pcidoc.samples import load_sample

    report = run(load_sample(name), ReportSource(kind="demo"), generated_at="t")
    parts = {field: getattr(report, field) for field in report.model_fields_set}
    validated = Report(**parts)
    assert report.model_fields_set == validated.model_fields_set
    assert report == validated
    assert report_json(report) == report_json(validated)

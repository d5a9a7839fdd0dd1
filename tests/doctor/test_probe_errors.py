"""Probe-fed checks explain why a probe produced nothing instead of a generic skip."""

from __future__ import annotations

import pytest

from pcidoc import doctor
from pcidoc.model import ProbeError, ReportSource
from tests.builders import machine

PROBE_FED = {
    "transfer.pinned": "transfer",
    "transfer.pageable": "transfer",
    "transfer.remote-numa": "transfer",
    "p2p.fallback": "p2p",
    "scaling.allreduce": "allreduce",
    "scaling.efficiency": "scaling",
}


def _report(errors: list[ProbeError]):  # type: ignore[no-untyped-def]
    cap = machine(2, link="PIX", numa_nodes=2)
    cap.measurements.probe_errors = errors
    return doctor.run(
        cap, ReportSource(kind="live"), only=list(PROBE_FED), generated_at="2026-01-01T00:00:00Z"
    )


def test_without_probe_errors_the_checks_say_what_would_measure() -> None:
    report = _report([])
    for check_id in PROBE_FED:
        result = report.check(check_id)
        assert result is not None and result.severity == "skip", check_id
        assert result.needs and "--probes quick" in result.needs


def test_unavailable_probe_skips_with_its_reason_and_install_hint() -> None:
    message = "torch is not installed: pip install 'pcidoc[probes]'"
    errors = [
        ProbeError(probe=p, message=message, kind="unavailable") for p in set(PROBE_FED.values())
    ]
    report = _report(errors)
    for check_id in PROBE_FED:
        result = report.check(check_id)
        assert result is not None and result.severity == "skip", check_id
        assert (
            "could not run" in result.summary and "pip install 'pcidoc[probes]'" in result.summary
        )
        assert result.needs == message


@pytest.mark.parametrize(
    ("kind", "severity", "word"),
    [
        ("timeout", "error", "timed out"),
        ("crash", "error", "crashed"),
        ("refused", "skip", "was refused"),
        ("interrupted", "skip", "was cancelled"),
    ],
)
def test_failed_probes_become_errors_and_refusals_skips(
    kind: str, severity: str, word: str
) -> None:
    report = _report([ProbeError(probe="p2p", message="after 40 s", kind=kind)])  # type: ignore[arg-type]
    result = report.check("p2p.fallback")
    assert result is not None
    assert result.severity == severity
    assert word in result.summary
    other = report.check("transfer.pinned")
    assert other is not None and other.severity == "skip" and "could not" not in other.summary

"""A GPU the capture left nameless takes the one model the rest of the capture names."""

from __future__ import annotations

from pcidoc.model.evidence import EnvReport, ImportedEvidence, PerfRank, PerfRun
from pcidoc.present._common import gpu_models, gpu_name
from tests.builders import machine


def _nameless(n: int = 8):
    cap = machine(n, link="NV18", kind="import")
    for gpu in cap.gpus:
        gpu.name = None
    return cap


def test_env_report_names_the_nameless_gpus() -> None:
    cap = _nameless()
    cap.evidence = ImportedEvidence(
        env_reports=[EnvReport(tool="torch", gpu_models=["NVIDIA H100 80GB HBM3"] * 8)]
    )
    assert gpu_models(cap) == "8 × NVIDIA H100 80GB HBM3"
    assert gpu_name(cap, cap.gpus[0]) == "NVIDIA H100 80GB HBM3"


def test_rank_lines_name_the_nameless_gpus() -> None:
    cap = _nameless(2)
    ranks = [PerfRank(rank=i, host="h", device=i, name="NVIDIA A100-SXM4-80GB") for i in range(2)]
    cap.evidence = ImportedEvidence(test_runs=[PerfRun(ranks=ranks)])
    assert gpu_models(cap) == "2 × NVIDIA A100-SXM4-80GB"


def test_two_models_elsewhere_leave_the_gpu_unknown() -> None:
    cap = _nameless(2)
    cap.evidence = ImportedEvidence(
        env_reports=[EnvReport(tool="torch", gpu_models=["NVIDIA A100-SXM4-80GB", "NVIDIA H100"])]
    )
    assert gpu_models(cap) == "2 × GPU (model not in this capture)"


def test_no_evidence_stays_unknown() -> None:
    assert gpu_models(_nameless(4)) == "4 × GPU (model not in this capture)"


def test_every_header_says_the_model_is_not_in_the_capture() -> None:
    """ "8 × unknown GPU" in a header read as a GPU pcidoc failed to recognise (the rtx4090
    sample's header, whose title names RTX 4090 from the source thread)."""
    from pcidoc.doctor import run
    from pcidoc.model.report import ReportSource
    from pcidoc.present.markdown import render_markdown
    from tests.present.test_text import plain

    cap = _nameless(6)
    report = run(cap, ReportSource(kind="import"), generated_at="2026-01-01T00:00:00Z")
    for text in (plain(report), render_markdown(report)):
        assert "unknown GPU" not in text
        assert "6 × GPU (model not in this capture)" in text

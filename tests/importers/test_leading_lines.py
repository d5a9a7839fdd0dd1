"""Leading lines never defeat format detection (issue 27): every corpus output keeps its
diagnosis behind a long preamble of prose and comment lines: more lines than any reader's
window (collect_env read its first 4,000 lines, the RAS report 5,000, a PyTorch session 2,000),
so a reader that counts from the top of the paste instead of from where its output starts
would miss it. (tests/catalogue/test_pastes_as_people_bring_them.py checks short headers and
a sentence around the body.)"""

from __future__ import annotations

import pytest

from pcidoc.collect.import_formats import TEXT, readers
from pcidoc.collect.importers import import_texts
from pcidoc.doctor.runner import run
from pcidoc.errors import PcidocError
from pcidoc.model.report import ReportSource
from tests.conftest import SHARED

FILES = sorted(
    str(path.relative_to(SHARED))
    for folder in ("realdata", "realdata-evidence")
    if (SHARED / folder).is_dir()
    for path in (SHARED / folder).rglob("*")
    if path.is_file() and path.suffix != ".md"
)

PREAMBLE = (
    "# source: a thread where the job got slow\n"
    + "We reran it overnight and the numbers look the same as last week.\n" * 2600
    + "# the next part is what the tool printed\n"
    + "Then someone asked for the outputs below, so here they are.\n" * 2600
    + "\n"
)


WHOLE_TEXT = {fmt for fmt, _ in readers(TEXT)} - {"error-lines"}
"""Formats read from the whole text, whose readers had windows (the section formats are found
at any line by the scanner: a short preamble shows as much for them)."""


def _diagnosis(text: str) -> tuple[object, list[str]]:
    try:
        capture = import_texts([("paste.txt", text)]).capture
    except PcidocError as exc:
        return f"refused: {str(exc).split(';')[0]}", []
    report = run(capture, ReportSource(kind="import", path="paste.txt"), generated_at="x")
    checks = sorted((c.id, c.severity, c.summary) for c in report.checks)
    return checks, capture.origin.sources[0].formats


@pytest.mark.parametrize("relpath", FILES or ["-"])
def test_a_long_preamble_keeps_the_diagnosis(relpath: str) -> None:
    if relpath == "-":
        pytest.skip("the corpus ../shared is not beside this checkout")
    lines = (SHARED / relpath).read_text(encoding="utf-8", errors="replace").splitlines(True)
    body = "".join(lines[3:] if lines and lines[0].startswith("# source:") else lines)
    diagnosis, formats = _diagnosis(body)
    preamble = PREAMBLE if WHOLE_TEXT & set(formats) else PREAMBLE[-2000:]
    assert _diagnosis(preamble + body)[0] == diagnosis


def test_a_json_document_between_prose_and_a_log_is_read_with_both() -> None:
    from tests.importers.kineto import TraceBuilder

    trace = TraceBuilder(world_size=2)
    trace.step(1, 0.0, 1000.0)
    trace.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 100.0, 400.0)
    text = (
        "# source: our job, rank 0's trace and its log\n"
        "Here is the profiler trace of one step:\n"
        + trace.text()
        + "\nand the NCCL log after it:\n"
        "node1:1:2 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n"
    )
    result = import_texts([("paste.txt", text)])
    # The catalogue also reads the NCCL version line (a known-benign signature).
    assert result.capture.origin.sources[0].formats[:2] == ["pytorch-trace", "nccl-log"]
    assert result.capture.measurements.workloads[0].steps == 1

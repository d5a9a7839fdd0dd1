"""A verdict stands on evidence, not on the words around it (issue 27, "Done when"):

* every file of ../shared/realdata and ../shared/realdata-evidence imported *as it is* (its
  three ``# source/# machine/# note`` lines included: what a user's paste looks like, prose
  around the evidence) gives the diagnosis of its body;
* the body wrapped in prose and a Markdown fence, followed by a sentence that mentions "fallen
  off the bus", Xid 79 and NCCL WARN, keeps exactly the diagnosis of the bare body.
"""

from __future__ import annotations

import pytest

from pcidoc.collect.importers import import_texts
from pcidoc.doctor.runner import run
from pcidoc.errors import PcidocError
from pcidoc.model.report import ReportSource
from tests.conftest import SHARED

FOLDERS = ("realdata", "realdata-evidence")
FILES = sorted(
    str(path.relative_to(SHARED))
    for folder in FOLDERS
    if (SHARED / folder).is_dir()
    for path in (SHARED / folder).rglob("*")
    if path.is_file() and path.suffix != ".md"
)

MENTION = (
    "I read somewhere that this can happen when the GPU has fallen off the bus (Xid 79), and "
    "that NCCL WARN lines show up before it. Any idea what to check first?"
)


def _diagnosis(text: str) -> object:
    try:
        capture = import_texts([("paste.txt", text)]).capture
    except PcidocError as exc:
        return f"refused: {str(exc).split(';')[0]}"
    report = run(capture, ReportSource(kind="import", path="paste.txt"), generated_at="x")
    return sorted((c.id, c.severity, c.summary) for c in report.checks)


def _parts(relpath: str) -> tuple[str, str]:
    text = (SHARED / relpath).read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines(keepends=True)
    if not lines or not lines[0].startswith("# source:"):
        pytest.skip(f"{relpath} has no metadata header")
    return text, "".join(lines[3:])


@pytest.fixture(autouse=True)
def _corpus() -> None:
    if not FILES:
        pytest.skip("the corpus ../shared/realdata{,-evidence} is not beside this checkout")


@pytest.mark.parametrize("relpath", FILES or ["-"])
def test_a_file_as_it_is_gives_the_diagnosis_of_its_body(relpath: str) -> None:
    whole, body = _parts(relpath)
    assert _diagnosis(whole) == _diagnosis(body)


@pytest.mark.parametrize("relpath", FILES or ["-"])
def test_prose_and_a_fence_around_the_body_change_nothing(relpath: str) -> None:
    _, body = _parts(relpath)
    wrapped = (
        "Hi all, our training job on this box got slow and then crashed. Here is what I have:\n\n"
        f"```text\n{body.rstrip()}\n```\n\n{MENTION}\n"
    )
    assert _diagnosis(wrapped) == _diagnosis(body)


def test_a_log_line_quoted_inline_in_a_question_is_evidence() -> None:
    text = (
        "When I run all_reduce_perf across the two nodes I get "
        "`node2:11:12 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.1<4444> with "
        "error 12, opcode 0, len 0, vendor err 129 (Recv)` after a few minutes.\n"
        "Also `NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the "
        "bus.` shows up in dmesg on node1.\n"
    )
    checks = {c[0]: c for c in _diagnosis(text)}  # type: ignore[union-attr]
    assert checks["nccl.network"][1] == "fail" and "RETRY_EXC" in checks["nccl.network"][2]
    assert checks["kernel.xid"][1] == "fail" and "Xid 79" in checks["kernel.xid"][2]
    capture = import_texts([("q.txt", text)]).capture
    assert [(h.line, h.count) for h in capture.evidence.signatures] == [(1, 1)]  # type: ignore[union-attr]

"""``check --from`` takes what people bring (issue 27 item 5): a capture, or pasted output read
through the importers on the way; import warnings reach the verdict; when most checks skip, the
report says what to paste next."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from pcidoc.cli import main
from pcidoc.collect.importers import import_texts
from pcidoc.doctor.next_inputs import next_inputs
from pcidoc.doctor.runner import run
from pcidoc.model.report import ReportSource

IB_LINE = (
    "node1:2345:2400 [3] NCCL WARN NET/IB : Got completion from peer 10.1.2.3<39872> with "
    "error 12, opcode 0, len 0, vendor err 129 (Recv)\n"
)


def _check(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_pasted_error_line_is_diagnosed_directly(tmp_path: Path, capsys) -> None:
    paste = tmp_path / "ib.txt"
    paste.write_text(IB_LINE)
    code, out, err = _check(["--from", str(paste), "--json"], capsys)
    report = json.loads(out)
    network = next(c for c in report["checks"] if c["id"] == "nccl.network")
    assert code == 2 and network["severity"] == "fail"
    assert "IBV_WC_RETRY_EXC_ERR" in network["summary"]
    assert report["source"] == {"kind": "import", "path": str(paste), "name": None}
    assert "error line matched the failure catalogue" in err  # what was read, on stderr
    quoted = [e for e in network["evidence"] if e["label"].startswith("ib.txt line 1")]
    assert quoted and "vendor err 129" in quoted[0]["value"]


def test_pasted_text_on_standard_input(monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(IB_LINE.encode())))
    code, out, _ = _check(["--from", "-", "--json"], capsys)
    assert code == 2
    assert json.loads(out)["worst"] == "fail"


def test_json_of_another_kind_is_imported_too(tmp_path: Path, capsys) -> None:
    runs = tmp_path / "nccl-tests.json"
    runs.write_text(json.dumps({"not": "a capture"}))
    code, _, err = _check(["--from", str(runs)], capsys)
    assert code == 3 and "not a pcidoc capture" in err  # neither a capture nor an output


def test_text_with_nothing_known_is_one_line_of_bad_input(tmp_path: Path, capsys) -> None:
    prose = tmp_path / "q.txt"
    prose.write_text("Hello, my training is slow, what should I check?\n")
    code, out, err = _check(["--from", str(prose)], capsys)
    assert (code, out) == (3, "")
    assert len(err.strip().splitlines()) == 1 and "no supported output recognised" in err


def test_dmesg_lines_are_never_taken_for_json(tmp_path: Path, capsys) -> None:
    """``[    5.376443] mlx5_core ...`` starts like a JSON array (the stamp alone parses): the
    text is read as a paste, and what it says when nothing in it is known is the paste's
    message, not a JSON parser's."""
    paste = tmp_path / "dmesg.txt"
    paste.write_text(
        "[    5.376443] mlx5_core 0000:01:00.0: firmware version: 14.32.1010\n"
        "[    5.502207] mlx5_core 0000:01:00.0: some message pcidoc does not know\n"
    )
    code, out, err = _check(["--from", str(paste)], capsys)
    assert (code, out) == (3, "")
    assert "no supported output recognised" in err and "JSON" not in err


def test_most_checks_skipped_says_what_to_paste_next(tmp_path: Path, capsys) -> None:
    paste = tmp_path / "ib.txt"
    paste.write_text(IB_LINE)
    _, out, _ = _check(["--from", str(paste)], capsys)
    assert "Paste next" in out
    assert out.index("NCCL_DEBUG=INFO") < out.index("nvidia-smi topo -m")  # the topic first
    report = run(
        import_texts([("ib.txt", IB_LINE)]).capture,
        ReportSource(kind="import", path="ib.txt"),
        generated_at="x",
    )
    assert 2 <= len(report.next_inputs) <= 3
    assert all(item.checks for item in report.next_inputs)
    # A live machine or a capture skips for other reasons: no suggestion to paste.
    assert next_inputs(report.checks, "live") == []


def test_import_warnings_reach_the_check(tmp_path: Path, capsys) -> None:
    topo = (
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
        "GPU0\t X \tNV4\t0-15\t0\n"
        "GPU1\tNV4\t X \t0-15\t0\n"
    )
    other = (
        "\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\n"
        "GPU0\t X \tPIX\tSYS\t0-15\t0\n"
        "GPU1\tPIX\t X \tSYS\t0-15\t0\n"
        "GPU2\tSYS\tSYS\t X \t16-31\t1\n"
    )
    paste = tmp_path / "two-machines.txt"
    paste.write_text(topo + "\n\n" + other)
    _, out, _ = _check(["--from", str(paste)], capsys)
    assert "import warning:" in out and "second topology matrix" in out

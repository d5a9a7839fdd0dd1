"""A standard stream closed when ``pcidoc`` starts (``1>&-``, ``0<&-``, ``2>&-``; cron jobs and
daemons do this): one line and exit 3 where data cannot be written, the command as usual where
it writes none, and never a file of pcidoc's on descriptors 0-2."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "pcidoc" / "samples" / "data" / "h800-8gpu-hgx.json"
CLOSED = b"pcidoc: cannot write to standard output (standard output is closed)\n"


def _pcidoc(args: str, redirect: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        f"{shlex.quote(sys.executable)} -m pcidoc {args} {redirect}",
        shell=True,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        "samples",
        "check --json --demo h800-8gpu-hgx",
        "check --demo h800-8gpu-hgx",
        "topo --demo h800-8gpu-hgx",
        "check --help",
        "--version",
    ],
)
def test_a_command_that_prints_says_stdout_is_closed_and_exits_3(args: str) -> None:
    proc = _pcidoc(args, "1>&-")
    assert proc.returncode == 3
    assert proc.stderr == CLOSED


def test_a_command_that_prints_nothing_runs_as_usual(tmp_path: Path) -> None:
    paste = tmp_path / "topo.txt"
    paste.write_text(
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
        "GPU0\t X \tNV4\t0-15\t0\n"
        "GPU1\tNV4\t X \t0-15\t0\n"
    )
    out = tmp_path / "capture.json"
    proc = _pcidoc(f"import {shlex.quote(str(paste))} -o {shlex.quote(str(out))}", "1>&-")
    assert proc.returncode == 0, proc.stderr
    assert b"wrote" in proc.stderr and out.stat().st_size > 1000


def test_a_closed_stdin_reads_as_empty() -> None:
    proc = _pcidoc("check --from -", "0<&-")
    assert proc.returncode == 3
    assert b"empty, nothing to import" in proc.stderr and b"Traceback" not in proc.stderr


def test_a_closed_stderr_keeps_the_commands_exit_code() -> None:
    assert _pcidoc("check --from /nonexistent/capture.json", "2>&-").returncode == 3
    assert _pcidoc("check --json --demo h800-8gpu-hgx", "2>&-").returncode in (0, 1, 2)


_PROBE = r"""
import os, sys
from pcidoc.cli import main
code = main(["check", "--json", "--demo", "h800-8gpu-hgx", "-o", sys.argv[1]])
null = os.stat(os.devnull)
held = [os.fstat(fd).st_rdev == null.st_rdev for fd in (0, 1)]
sys.stderr.write(f"{code} {held}\n")
"""


def test_the_closed_descriptors_hold_dev_null_so_no_file_takes_them(tmp_path: Path) -> None:
    """A file opened while descriptor 1 is free would get number 1, and a child process would
    write its output into it."""
    report = tmp_path / "report.json"
    proc = subprocess.run(
        f"{shlex.quote(sys.executable)} -c {shlex.quote(_PROBE)} {shlex.quote(str(report))}"
        " 0<&- 1>&-",
        shell=True,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert proc.stderr.endswith(b"3 [True, True]\n"), proc.stderr
    assert report.read_bytes().startswith(b"{")

"""What only the ``pcidoc`` command's own process does (``pcidoc.cli.run``), and ``main`` never:
the garbage collector waits until start-up is done, then runs as usual; the process ends after
every atexit handler without the interpreter's teardown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "pcidoc" / "samples" / "data" / "h800-8gpu-hgx.json"

# Runs pcidoc's entry point in a child, recording whether the collector was on at each step.
_TRACE = r"""
import contextlib, gc, io, json, sys
import pcidoc.cli as cli
import pcidoc.cli.samples as samples_command
import pcidoc.collect.load as load
from pcidoc import doctor
seen = []
def traced(module, name, label):
    original = getattr(module, name)
    def wrapper(*args, **kwargs):
        seen.append([label, gc.isenabled()])
        return original(*args, **kwargs)
    setattr(module, name, wrapper)
traced(load, "load_machine", "load")
traced(doctor, "run", "doctor")
traced(samples_command, "run", "cmd_samples")
entry = sys.argv[1]
sys.argv = ["pcidoc", *sys.argv[2:]]
code = None
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    if entry == "run":
        try:
            cli.run()
        except SystemExit as exc:
            code = exc.code
    else:
        if entry == "main-gc-off":
            gc.disable()
        code = cli.main(sys.argv[1:])
print(json.dumps({"seen": seen, "code": code, "enabled_after": gc.isenabled()}))
"""


def _trace(entry: str, *argv: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _TRACE, entry, *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    assert lines, proc.stderr[-2000:]
    return json.loads(lines[-1])


def test_the_command_collects_garbage_only_once_the_machine_is_loaded() -> None:
    out = _trace("run", "check", "--json", "--from", str(SAMPLE))
    assert out["seen"] == [["load", False], ["doctor", True]]
    assert out["code"] in (0, 1, 2)
    assert out["enabled_after"] is True


def test_commands_without_a_machine_to_load_start_with_the_collector_on() -> None:
    assert _trace("run", "samples")["seen"] == [["cmd_samples", True]]


def test_a_failing_start_up_still_switches_the_collector_back_on() -> None:
    out = _trace("run", "check", "--json", "--from", str(ROOT / "no-such-file.json"))
    assert out["code"] == 3
    assert out["seen"] == [["load", False]]
    assert out["enabled_after"] is True


def test_main_leaves_the_collector_as_the_caller_set_it() -> None:
    """Tests and other programs call ``main`` in their own processes: no deferral there."""
    assert _trace("main", "check", "--json", "--from", str(SAMPLE))["seen"] == [
        ["load", True],
        ["doctor", True],
    ]
    off = _trace("main-gc-off", "check", "--json", "--from", str(SAMPLE))
    assert off["seen"] == [["load", False], ["doctor", False]]
    assert off["enabled_after"] is False


def test_the_json_report_written_as_bytes_is_the_report_json_text() -> None:
    """``check --json`` writes the serializer's UTF-8 bytes straight to stdout."""
    from pcidoc import doctor
    from pcidoc.collect.capture import load_capture
    from pcidoc.model.report import ReportSource
    from pcidoc.present.json import report_json

    proc = subprocess.run(
        [sys.executable, "-m", "pcidoc", "check", "--json", "--from", str(SAMPLE)],
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    written = json.loads(proc.stdout.decode("utf-8"))
    source = ReportSource.for_file(str(SAMPLE), "import")
    report = doctor.run(load_capture(SAMPLE), source, [], [], generated_at=written["generated_at"])
    expected = report_json(report)
    assert not expected.isascii()  # the bytes hold UTF-8 text (host↔device...)
    assert proc.stdout.decode("utf-8") == expected


# The command's end: every atexit handler runs, then the process ends without the interpreter's
# teardown (an audit hook sees the interpreter's state cleared only when teardown runs).
_EXIT = r"""
import atexit, os, sys
notes = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
def note(what, write=os.write, notes=notes):
    write(notes, (what + "\n").encode())
def hook(event, args, note=note):
    if event == "cpython.PyInterpreterState_Clear":
        note("torn down")
sys.addaudithook(hook)
if sys.argv[1] == "early":  # as a coverage tool started with the interpreter does
    atexit.register(note, "registered before the command")
import pcidoc.cli as cli
import pcidoc.cli.check as check
original = check.run
def run(args):
    atexit.register(note, "registered by the command")
    return original(args)
check.run = run
sys.argv = ["pcidoc", *sys.argv[3:]]
cli.run()
"""


def _end(tmp_path: Path, when: str, *argv: str) -> tuple[subprocess.CompletedProcess[bytes], list]:
    notes = tmp_path / f"{when}.txt"
    proc = subprocess.run(
        [sys.executable, "-c", _EXIT, when, str(notes), *argv],
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    return proc, notes.read_text(encoding="utf-8").splitlines() if notes.exists() else []


def test_the_command_ends_after_every_atexit_handler_without_teardown(tmp_path: Path) -> None:
    from pcidoc.cli import main

    expected = main(["check", "--json", "--from", str(SAMPLE)])
    proc, notes = _end(tmp_path, "late", "check", "--json", "--from", str(SAMPLE))
    assert proc.returncode == expected, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["machine"]["gpus"]  # the whole report, flushed
    assert notes == ["registered by the command"]  # the handler ran; teardown did not
    bad, notes = _end(tmp_path, "bad", "check", "--from", str(ROOT / "no-such-file.json"))
    assert bad.returncode == 3 and b"no such file" in bad.stderr
    assert notes == ["registered by the command"]


def test_a_handler_registered_before_the_command_keeps_the_usual_end(tmp_path: Path) -> None:
    proc, notes = _end(tmp_path, "early", "check", "--json", "--from", str(SAMPLE))
    assert proc.returncode in (0, 1, 2), proc.stderr[-2000:]
    assert json.loads(proc.stdout)["schema"] == "pcidoc.report/1"
    assert notes == [
        "registered by the command",
        "registered before the command",
        "torn down",
    ]


def test_a_closed_standard_output_ends_without_a_traceback(tmp_path: Path) -> None:
    """Python sets ``sys.stdout`` to None when descriptor 1 is closed at start: the last atexit
    handler must not fail on it (the command's own message stays one line)."""
    proc = subprocess.run(
        f'"{sys.executable}" -m pcidoc samples 1>&-',
        shell=True,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 3
    assert b"Traceback" not in proc.stderr and b"Exception ignored" not in proc.stderr
    assert proc.stderr.count(b"\n") == 1, proc.stderr

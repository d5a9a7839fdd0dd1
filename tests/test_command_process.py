"""What only the ``pcidoc`` command's own process does (``pcidoc.cli.run``), and ``main`` never:
the garbage collector waits until start-up is done, then runs as usual."""

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

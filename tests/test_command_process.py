"""What only the ``pcidoc`` command's own process does (``pcidoc.cli.run``), and ``main`` never:
the garbage collector waits until start-up is done, then runs as usual."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "pcidoc" / "samples" / "data" / "h800-8gpu-hgx.json"

# Runs pcidoc's entry point in a child, recording whether the collector was on at each step.
_TRACE = r"""
import contextlib, gc, io, json, sys
import pcidoc.cli as cli
import pcidoc.collect.capture as capture
from pcidoc import doctor
seen = []
def traced(module, name, label):
    original = getattr(module, name)
    def wrapper(*args, **kwargs):
        seen.append([label, gc.isenabled()])
        return original(*args, **kwargs)
    setattr(module, name, wrapper)
traced(capture, "load_capture", "load")
traced(doctor, "run", "doctor")
traced(cli, "cmd_samples", "cmd_samples")
cli.COMMANDS["samples"] = cli.cmd_samples
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


_UNPRIMED = (
    "import sys, decimal, fractions, ipaddress, pathlib, uuid, pydantic_core\n"
    "from pcidoc.cli import main\n"
    "raise SystemExit(main(sys.argv[1:]))\n"
)
_TIMESTAMP = re.compile(r'"(generated_at|created_at|captured_at)": "[^"]*"')
_UPTIME = re.compile(r'"uptime_s": [0-9.]+')


def _stdout(argv: list[str], primed: bool) -> tuple[int, str]:
    entry = ["-m", "pcidoc"] if primed else ["-c", _UNPRIMED]
    proc = subprocess.run(
        [sys.executable, *entry, *argv],
        capture_output=True,
        cwd=ROOT,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    text = _TIMESTAMP.sub(r'"\1": "-"', proc.stdout.decode("utf-8"))
    return proc.returncode, _UPTIME.sub('"uptime_s": 0', text)


def test_every_serializing_command_prints_the_same_in_the_primed_process(tmp_path: Path) -> None:
    """The command's process hands the engine stand-ins for MISSING and its table of Any
    types; each command that writes models (import, capture, check, fleet, diff, nccl-topo,
    schema) must print exactly what a process with the real ones prints."""
    samples = ROOT / "pcidoc" / "samples" / "data"
    pastes = sorted((ROOT.parent / "shared" / "realdata" / "topo").glob("*.txt"))[:2]
    lines = [
        ["capture", "-o", "-"],
        ["check", "--json", "--from", str(samples / "synthetic-16gpu.json"), "-v"],
        ["fleet", "--json", str(samples)],
        ["diff", str(samples / "h800-8gpu-hgx.json"), str(samples / "synthetic-16gpu.json")],
        ["nccl-topo", "--from", str(samples / "synthetic-16gpu.json"), "-o", "-"],
        ["schema", "report"],
    ]
    if pastes:
        lines.append(["import", *map(str, pastes[:1])])
    for argv in lines:
        primed = _stdout(argv, primed=True)
        assert primed[1], argv
        assert primed == _stdout(argv, primed=False), argv


_TUI_PRIMING = r"""
import contextlib, io, json, sys, threading
import pcidoc.cli as cli
import pcidoc.tui as tui
from pcidoc.model import compiled
seen = {}
def fake_run_tui(**kwargs):
    seen["primed"] = compiled._prime_sentinel is False and "pydantic_core" not in sys.modules
    seen["threads"] = threading.active_count()
    return 0
cli.no_terminal_reason = lambda: None
tui.run_tui = fake_run_tui
sys.argv = ["pcidoc", "--demo"]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        cli.run()
    except SystemExit as exc:
        seen["code"] = exc.code
print(json.dumps(seen))
"""


def test_the_tui_primes_the_engine_before_it_starts_threads() -> None:
    """Priming swaps stand-in modules into sys.modules for a moment: the TUI does it in the
    main thread before the app (and its threads) start."""
    proc = subprocess.run(
        [sys.executable, "-c", _TUI_PRIMING],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {
        "primed": True,
        "threads": 1,
        "code": 0,
    }

#!/usr/bin/env python3
"""Where ``pcidoc check --json`` spends its start-up, step by step: prints figures, asserts nothing.

Usage: ``.venv/bin/python tests/benchmarks/breakdown.py [--repeat N] [--sample NAME]``

Each run is a fresh interpreter that times, with ``time.process_time`` (CPU, less sensitive to a
shared machine than wall time), the steps of the check in the order the command takes them:
pydantic_core, pcidoc's model classes, the doctor, loading the capture, the checks (a first
run, which imports the modules of the checks it runs as the command does, then a second run in
the same process to separate one-time costs from the work that grows with the GPU count) and
the JSON. The interpreter's own start is
measured apart (``python -c pass``), as is the budget the issue gives: 1.6 × ``import pydantic,
rich``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
from pathlib import Path

from run import CHECK_TARGET, bench_env, run_once  # this folder is sys.path[0] when run as a script

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable

_STEPS = r"""
import gc, json, os, sys, time
gc.disable()  # as pcidoc.cli.run does until start-up is done
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
marks = []
def mark(name):
    marks.append((name, time.process_time()))
mark("start")
from pcidoc.model.compiled import core
core()
mark("pydantic_core's engine (its extension module alone)")
import pcidoc.cli
mark("pcidoc.cli and argparse")
import pcidoc.model.capture, pcidoc.model.report
mark("pcidoc's model classes (store header, source digests)")
from pcidoc import doctor
mark("the doctor and its check table")
from pcidoc.collect.capture import load_capture
capture = load_capture(sys.argv[1])
gc.freeze(); gc.enable()  # start-up done (pcidoc.cli.start_up_done)
mark("load and validate the capture")
from pcidoc.model.report import ReportSource
report = doctor.run(capture, ReportSource(kind="demo"), [], [], generated_at="x")
mark("checks, first run (with their modules' import)")
doctor.run(capture, ReportSource(kind="demo"), [], [], generated_at="x")
mark("checks, second run (work that grows with GPUs)")
from pcidoc.present.json import report_json_bytes
report_json_bytes(report)
mark("report JSON (1 MB, indent 2)")
print(json.dumps(marks + [["pydantic imported", "pydantic" in sys.modules],
                         ["pydantic_core package imported", "pydantic_core" in sys.modules]]))
"""


def cpu_of(argv: list[str]) -> float:
    """CPU seconds (user + system) of one run, bytecode caching on."""
    return run_once(argv)[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--sample", default="synthetic-72gpu")
    args = parser.parse_args()
    sample = ROOT / "pcidoc" / "samples" / "data" / f"{args.sample}.json"
    env = bench_env()
    steps: dict[str, list[float]] = {}
    for _ in range(args.repeat + 1):  # the first run warms the bytecode cache
        out = subprocess.run(
            [PY, "-c", _STEPS, str(sample)], capture_output=True, text=True, env=env, cwd=ROOT
        )
        if out.returncode != 0:
            raise SystemExit(out.stderr[-800:])
        marks = json.loads(out.stdout.strip().splitlines()[-1])
        package_loaded = marks.pop()[1]
        pydantic_loaded = marks.pop()[1]
        for (_, before), (name, after) in itertools.pairwise(marks):
            steps.setdefault(name, []).append(after - before)
    # Interleaved, so that a VM that slows down or speeds up meanwhile moves all three alike.
    runs: dict[str, list[float]] = {"pass": [], "base": [], "whole": []}
    for _ in range(args.repeat):
        runs["pass"].append(cpu_of([PY, "-c", "pass"]))
        runs["base"].append(cpu_of([PY, "-c", "import pydantic, rich"]))
        runs["whole"].append(cpu_of([PY, "-m", "pcidoc", "check", "--json", "--from", str(sample)]))
    interpreter, base, whole = (statistics.median(runs[key]) for key in ("pass", "base", "whole"))
    print(f"pcidoc check --json --from {args.sample}: CPU time, median of {args.repeat}")
    print(f"{'interpreter start (python -c pass)':<52} {interpreter * 1000:7.1f} ms")
    total = interpreter
    for name, values in steps.items():
        if name.startswith("checks, second"):
            print(f"  ({name}: {statistics.median(values) * 1000:.1f} ms)")
            continue
        value = statistics.median(values)
        total += value
        print(f"{name:<52} {value * 1000:7.1f} ms")
    print(f"{'sum of the steps':<52} {total * 1000:7.1f} ms")
    print(f"{'the whole command, measured':<52} {whole * 1000:7.1f} ms")
    print(f"{'baseline: import pydantic, rich':<52} {base * 1000:7.1f} ms")
    print(f"{f'target: {CHECK_TARGET} x baseline':<52} {CHECK_TARGET * base * 1000:7.1f} ms")
    print(f"the command is x{whole / base:.2f} the baseline")
    print(f"pydantic itself imported: {'yes' if pydantic_loaded else 'no'}")
    print(f"pydantic_core's package imported: {'yes' if package_loaded else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

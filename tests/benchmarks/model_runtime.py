#!/usr/bin/env python3
"""pcidoc's model runtime against a msgspec prototype of the same models, side by side: prints
figures, asserts nothing (issue 29, docs/performance.md "Issue 29: the measured calls").

Usage::

    .venv/bin/pip install msgspec          # not a pcidoc dependency: for this comparison only
    .venv/bin/python tests/benchmarks/model_runtime.py [--rounds 15] [--sample synthetic-72gpu]

What it does:

1. Generates ``msgspec.Struct`` classes from pcidoc's model classes (the same fields, types,
   defaults, aliases and methods; run with the models as pydantic classes) into a temporary
   folder. Nothing of it is kept.
2. Runs ``pcidoc check --json`` on the sample once and keeps the report's checks.
3. Times, in fresh processes, the model layer's work on the ``check --json`` path on both sides:
   import the classes, parse and validate the capture's bytes, build the report (each evidence,
   finding and check object through its constructor, as the doctor does) and write its JSON
   (indent 2). Side "runtime" is pcidoc's (light classes over the stored schemas, validated and
   serialized by ``pydantic_core``), side "msgspec" the prototype. Both write the report; the
   script says whether the two are byte-identical to the command's output.
4. Shows how the prototype refuses what a capture must not hold (wrong type, unknown major,
   missing field, NaN, a float too large, a repeated key), next to pcidoc's one-line errors.

Each round runs ``python -c "import pydantic, rich"`` (the issue's baseline), then the two sides
in alternating order, then ``pcidoc check --json`` itself: a shared, drifting machine moves all
of a round alike. Prints medians of wall and CPU time (user + system of the child), the
per-round ratios to the baseline, the in-process CPU of each step, and the spread (min-max).
"read path" is the first three steps, what ``topo`` and the TUI's first screen do (no JSON out).
The last line estimates ``check --json`` with the msgspec model layer: per round, the command's
time minus the runtime side plus the msgspec side (the rest of the command does not change).
"""

from __future__ import annotations

import argparse
import json
import marshal
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from run import bench_env, run_once  # this folder is sys.path[0] when run as a script

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable

_GENERATE = r"""
import inspect, os, sys, textwrap, types, typing
os.environ["PCIDOC_COMPILED_SCHEMAS"] = "0"  # the models as pydantic classes
from pydantic_core import PydanticUndefined
from pcidoc.model.compiled import model_classes

def render(ann):
    if ann is type(None):
        return "None"
    if ann is typing.Any:
        return "Any"
    origin = typing.get_origin(ann)
    if origin is typing.Literal:
        return "Literal[" + ", ".join(repr(a) for a in typing.get_args(ann)) + "]"
    if origin in (typing.Union, types.UnionType):
        return " | ".join(render(a) for a in typing.get_args(ann))
    if origin in (list, dict, tuple, set):
        return origin.__name__ + "[" + ", ".join(render(a) for a in typing.get_args(ann)) + "]"
    if isinstance(ann, type):
        return ann.__name__
    raise TypeError(repr(ann))

def methods(cls):
    out = []
    for name, value in list(vars(cls).items()):
        func = getattr(value, "__func__", None) or getattr(value, "fget", None) or value
        if name.startswith("__") or not isinstance(func, types.FunctionType):
            continue
        if func.__qualname__.split(".")[0] != cls.__name__:
            continue
        out.append(textwrap.indent(textwrap.dedent(inspect.getsource(func)), "    "))
    return out

classes = model_classes()
lines = ["from __future__ import annotations", "from typing import Any, Literal", "import msgspec"]
for cls in classes:
    fields = cls.model_fields
    rename = {n: f.alias for n, f in fields.items() if f.alias and f.alias != n}
    extra = f", rename={rename!r}" if rename else ""
    lines.append(f"class {cls.__name__}(msgspec.Struct, kw_only=True{extra}):")
    for name, field in fields.items():
        line = f"    {name}: {render(field.annotation)}"
        if field.default_factory is not None:
            line += f" = msgspec.field(default_factory={field.default_factory.__name__})"
        elif field.default is not PydanticUndefined:
            line += f" = {field.default!r}"
        lines.append(line)
    lines += methods(cls) or ([] if fields else ["    pass"])
    lines.append("")
sys.stdout.write("\n".join(lines) + "\n")
"""

_SIDE = r"""
import gc, marshal, sys, time
gc.disable()  # as pcidoc.cli.run does during start-up
T = time.process_time
t0 = T()
SIDE
t1 = T()
raw = open(sys.argv[2], "rb").read()
cap = DECODE(raw)
t2 = T()
parts = marshal.loads(open(sys.argv[3], "rb").read())
t3 = T()
checks = []
for c in parts["checks"]:
    c = dict(c)
    c["evidence"] = [Evidence(**e) for e in c["evidence"]]
    c["findings"] = [FindingNote(**f) for f in c["findings"]]
    checks.append(CheckResult(**c))
report = Report(
    pcidoc_version=parts["pcidoc_version"], generated_at=parts["generated_at"],
    source=ReportSource(**parts["source"]), machine=cap, checks=checks,
    summary=parts["summary"], worst=parts["worst"], topology_notes=parts["topology_notes"],
    next_inputs=[NextInput(**n) for n in parts["next_inputs"]],
)
t4 = T()
out = ENCODE(report) + b"\n"
t5 = T()
if len(sys.argv) > 4:
    open(sys.argv[4], "wb").write(out)
print(repr([t1 - t0, t2 - t1, t4 - t3, t5 - t4]), file=sys.stderr)
"""

_NAMES = "Capture, CheckResult, Evidence, FindingNote, NextInput, Report, ReportSource"
_RUNTIME = (
    _SIDE.replace(
        "SIDE",
        "from pcidoc.model.capture import Capture\n"
        "from pcidoc.model.report import CheckResult, Evidence, FindingNote, NextInput, Report, "
        "ReportSource\nfrom pcidoc.model.compiled import core",
    )
    .replace(  # the one-step load of pcidoc.collect.capture._validate_current_capture
        "DECODE(raw)",
        'Capture.model_validate(core().from_json(raw, allow_inf_nan=False, cache_strings="keys"))',
    )
    .replace(
        "ENCODE(report)", "Report.__pydantic_serializer__.to_json(report, indent=2, by_alias=True)"
    )
)
_MSGSPEC = (
    _SIDE.replace(
        "SIDE",
        f"import msgspec\nsys.path.insert(0, sys.argv[1])\nfrom msgspec_models import {_NAMES}",
    )
    .replace("DECODE(raw)", "msgspec.json.decode(raw, type=Capture)")
    .replace("ENCODE(report)", "msgspec.json.format(msgspec.json.encode(report), indent=2)")
)

_STRICT = r"""
import copy, json, sys
import msgspec
sys.path.insert(0, sys.argv[2])
from msgspec_models import Capture
from pcidoc.collect.capture import load_capture_bytes
from pcidoc.errors import PcidocError
good = json.loads(open(sys.argv[1], "rb").read())
def edited(change):
    data = copy.deepcopy(good)
    change(data)
    return json.dumps(data).encode()
text = json.dumps(good)
cases = {
    "wrong type": edited(lambda d: d["gpus"][1].__setitem__("index", "abc")),
    "number as text": edited(lambda d: d["gpus"][1].__setitem__("index", "1")),
    "unknown major": edited(lambda d: d.__setitem__("schema", "pcidoc.capture/2")),
    "missing field": edited(lambda d: d.__delitem__("topology")),
    "NaN": text.replace('"uptime_s": ', '"uptime_s": NaN, "x": ', 1).encode(),
    "1e400": text.replace('"uptime_s": ', '"uptime_s": 1e400, "x": ', 1).encode(),
    "repeated key": text.replace('"gpus": [', '"gpus": [], "gpus": [', 1).encode(),
    "defaults": json.dumps({k: v for k, v in good.items() if k != "unavailable"}).encode(),
}
for name, data in cases.items():
    try:
        got = msgspec.json.decode(data, type=Capture)
        proto = f"accepted (unavailable={got.unavailable!r})" if name == "defaults" else "accepted"
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        proto = f"{type(exc).__name__}: {exc}"
    try:
        load_capture_bytes(data, "f.json")
        ours = "accepted"
    except PcidocError as exc:
        ours = exc.message
    print(f"  {name:15} msgspec: {proto}\n  {'':15} pcidoc:  {ours}")
"""


def _spread(values: list[float], scale: float = 1000.0, fmt: str = "{:.1f}") -> str:
    mid = fmt.format(statistics.median(values) * scale)
    return f"{mid} ({fmt.format(min(values) * scale)}-{fmt.format(max(values) * scale)})"


def _side(script: Path, args: list[str]) -> tuple[float, float, list[float]]:
    """Wall, CPU and the in-process step CPU times of one fresh run of a side script."""
    import resource
    import time

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [PY, str(script), *args], capture_output=True, text=True, env=bench_env(), cwd=ROOT
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{script.name} failed: {proc.stderr[-800:]}")
    steps = json.loads(proc.stderr.strip().splitlines()[-1].replace("'", '"'))
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return elapsed, cpu, steps


def _prepare(tmp: Path, sample: Path) -> tuple[Path, Path, bytes]:
    """The prototype module, the report's parts (marshal) and the command's report bytes."""
    generated = subprocess.run(
        [PY, "-c", _GENERATE], capture_output=True, text=True, cwd=ROOT, env=bench_env()
    )
    if generated.returncode != 0:
        raise SystemExit(f"generating the prototype failed: {generated.stderr[-800:]}")
    (tmp / "msgspec_models.py").write_text(generated.stdout, encoding="utf-8")
    argv = [PY, "-m", "pcidoc", "check", "--json", "--from", str(sample)]
    report = subprocess.run(argv, capture_output=True, cwd=ROOT, env=bench_env()).stdout
    parts = {k: v for k, v in json.loads(report).items() if k != "machine"}
    (tmp / "parts.marshal").write_bytes(marshal.dumps(parts))
    (tmp / "runtime_side.py").write_text(_RUNTIME, encoding="utf-8")
    (tmp / "msgspec_side.py").write_text(_MSGSPEC, encoding="utf-8")
    return tmp / "runtime_side.py", tmp / "msgspec_side.py", report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--sample", default="synthetic-72gpu")
    args = parser.parse_args()
    try:
        import msgspec
    except ImportError:
        print("msgspec is not installed: .venv/bin/pip install msgspec (for this benchmark only)")
        return 0
    sample = ROOT / "pcidoc" / "samples" / "data" / f"{args.sample}.json"
    with tempfile.TemporaryDirectory(prefix="pcidoc-msgspec-") as folder:
        tmp = Path(folder)
        runtime, proto, report = _prepare(tmp, sample)
        common = [str(tmp), str(sample), str(tmp / "parts.marshal")]
        sides = {"runtime": runtime, "msgspec": proto}
        for name, script in sides.items():
            _side(script, [*common, str(tmp / f"{name}.json")])
        same = {n: (tmp / f"{n}.json").read_bytes() == report for n in sides}
        print(
            f"python {sys.version.split()[0]}, msgspec {msgspec.__version__}, "
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
            f"{args.sample}, {args.rounds} rounds"
        )
        print(
            "report bytes identical to `pcidoc check --json`: "
            + ", ".join(f"{n} {'yes' if ok else 'NO'}" for n, ok in same.items())
        )
        print("what the prototype refuses (msgspec's message; pcidoc's one line):")
        strict = subprocess.run(
            [PY, "-c", _STRICT, str(sample), str(tmp)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=bench_env(),
        )
        print(strict.stdout.rstrip() or strict.stderr[-800:])
        check_argv = [PY, "-m", "pcidoc", "check", "--json", "--from", str(sample)]
        rows: dict[str, list[tuple[float, float, list[float], float]]] = {n: [] for n in sides}
        checks: list[tuple[float, float, float]] = []
        bases: list[tuple[float, float]] = []
        for index in range(args.rounds):
            base_wall, base_cpu = run_once([PY, "-c", "import pydantic, rich"])
            bases.append((base_wall, base_cpu))
            order = list(sides) if index % 2 == 0 else list(sides)[::-1]
            for name in order:
                wall, cpu, steps = _side(sides[name], common)
                rows[name].append((wall, cpu, steps, base_wall))
            wall, cpu = run_once(check_argv)
            checks.append((wall, cpu, base_wall))
        _print(rows, checks, bases)
    return 0


def _print(
    rows: dict[str, list[tuple[float, float, list[float], float]]],
    checks: list[tuple[float, float, float]],
    bases: list[tuple[float, float]],
) -> None:
    print(
        f"\nbaseline `import pydantic, rich`: wall {_spread([b[0] for b in bases])} ms, "
        f"CPU {_spread([b[1] for b in bases])} ms (median (min-max))"
    )
    base_cpu = statistics.median(b[1] for b in bases)
    steps = ("import", "parse+validate capture", "build report", "report JSON")
    for name, found in rows.items():
        print(
            f"{name:8} wall {_spread([r[0] for r in found])} ms, "
            f"x{statistics.median(r[0] / r[3] for r in found):.2f} base; "
            f"CPU {_spread([r[1] for r in found])} ms"
        )
        for i, step in enumerate(steps):
            print(f"    {step:24} CPU {_spread([r[2][i] for r in found], fmt='{:.2f}')} ms")
        read = [sum(r[2][:3]) for r in found]
        print(f"    {'read path (steps 1-3)':24} CPU {_spread(read, fmt='{:.2f}')} ms")
    print(
        f"check --json wall {_spread([c[0] for c in checks])} ms, "
        f"x{statistics.median(c[0] / c[2] for c in checks):.2f} base (paired); "
        f"CPU {_spread([c[1] for c in checks])} ms, "
        f"x{statistics.median(c[1] for c in checks) / base_cpu:.2f} the baseline's CPU"
    )
    pairs = list(zip(checks, rows["runtime"], rows["msgspec"], strict=True))
    est_wall = [(c[0] - r[0] + m[0]) / c[2] for c, r, m in pairs]
    est_cpu = [c[1] - r[1] + m[1] for c, r, m in pairs]
    print(
        f"check --json with the msgspec layer (estimate): x{statistics.median(est_wall):.2f} "
        f"base ({min(est_wall):.2f}-{max(est_wall):.2f}); CPU {_spread(est_cpu)} ms, "
        f"x{statistics.median(est_cpu) / base_cpu:.2f} the baseline's CPU"
    )


if __name__ == "__main__":
    sys.exit(main())

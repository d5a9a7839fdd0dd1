#!/usr/bin/env python3
"""Source trees of pcidoc, interleaved against the baseline: prints figures, asserts nothing.

Usage::

    git worktree add /tmp/before <commit>        # or: tests/benchmarks/variants.py FOLDER
    .venv/bin/python tests/benchmarks/ab.py --before /tmp/before --after . --rounds 11
    .venv/bin/python tests/benchmarks/ab.py --before B --tree name=PATH ... --tui

Each round times ``python -c "import pydantic, rich"`` (the issue's baseline), then each command
once on each tree (``PYTHONPATH`` set to the tree, same interpreter and packages; the trees'
order alternates from round to round), so a busy or slowed-down VM affects all sides of a
comparison alike. Prints per command and tree the median wall time with its spread (min-max),
the median of the per-round ratios to the baseline and of the differences from it, and the
median CPU time (user + system) of the child process. With ``--tui``, each round also times the
first complete screen of ``pcidoc --demo`` (each tree's ``tests/benchmarks/tui_probe.py``) and,
right before, a minimal Textual app (the floor); that row prints pcidoc's share over the floor
(median of the per-round differences).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from run import bench_env, run_once  # this folder is sys.path[0] when run as a script

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
TUI = "tui first screen (--demo)"


def _run(argv: list[str], tree: Path) -> tuple[float, float]:
    return run_once(argv, {"PYTHONPATH": str(tree)}, cwd=tree)


def _first_screen(tree: Path, mode: str) -> tuple[float, float]:
    """Seconds from process start to the first complete screen, and the child's CPU."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()  # wall clock: comparable across processes, unlike perf_counter
    proc = subprocess.run(
        [PY, str(tree / "tests" / "benchmarks" / "tui_probe.py"), mode, repr(start)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tree,
        env=bench_env({"PYTHONPATH": str(tree)}),
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"tui_probe {mode} in {tree} failed: {proc.stderr[-800:]}")
    first = json.loads(proc.stdout.strip().splitlines()[-1])["first_screen_s"]
    return first, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def _commands() -> dict[str, list[str]]:
    samples = ROOT / "pcidoc" / "samples" / "data"
    corpus = sorted(
        (ROOT.parent / "shared" / "realdata").rglob("*.txt"), key=lambda p: -p.stat().st_size
    )
    big = str(samples / "synthetic-72gpu.json")
    commands = {
        "check --json 72-GPU": ["check", "--json", "--from", big],
        "check --json h800 (8 GPUs)": [
            "check",
            "--json",
            "--from",
            str(samples / "h800-8gpu-hgx.json"),
        ],
        "topo --json 72-GPU": ["topo", "--json", "--from", big],
    }
    if corpus:
        raw = Path("/tmp/pcidoc-ab-import.txt")
        raw.write_text("".join(corpus[0].read_text().splitlines(keepends=True)[3:]))
        commands["import largest corpus file"] = ["import", str(raw), "-o", "/tmp/pcidoc-ab.json"]
    return commands


def _spread(values: list[float]) -> str:
    low, high = 1000 * min(values), 1000 * max(values)
    return f"{1000 * statistics.median(values):6.1f} ({low:.0f}-{high:.0f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, default=None)
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--tui", action="store_true", help="also the TUI's first screen")
    parser.add_argument("--no-commands", action="store_true", help="only the TUI's first screen")
    args = parser.parse_args()
    trees = {"before": args.before.resolve()}
    if args.after is not None or not args.tree:
        trees["after"] = (args.after or ROOT).resolve()
    for item in args.tree:
        name, _, path = item.partition("=")
        trees[name] = Path(path).resolve()
    commands = {} if args.no_commands else _commands()
    for tree in trees.values():  # bytecode caches warm on every side
        for argv in commands.values():
            _run([PY, "-m", "pcidoc", *argv], tree)
        if args.tui:
            _first_screen(tree, "first-screen")
    base: list[tuple[float, float]] = []
    found: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    floor_tree = next(iter(trees.values()))
    for index in range(args.rounds):
        wall, cpu = _run([PY, "-c", "import pydantic, rich"], floor_tree)
        base.append((wall, cpu))
        order = list(trees.items())
        order = order[index % len(order) :] + order[: index % len(order)]
        for name, argv in commands.items():
            for side, tree in order:
                w, c = _run([PY, "-m", "pcidoc", *argv], tree)
                found.setdefault((name, side), []).append((w, c, wall))
        if args.tui:
            for side, tree in order:
                floor, _ = _first_screen(floor_tree, "textual-floor")
                w, c = _first_screen(tree, "first-screen")
                found.setdefault((TUI, side), []).append((w, c, floor))
    med = statistics.median
    print(
        f"baseline `import pydantic, rich`: wall {_spread([b[0] for b in base])} ms, "
        f"CPU {1000 * med(b[1] for b in base):.1f} ms ({args.rounds} rounds; median (min-max))"
    )
    for name in [*commands, *([TUI] if args.tui else [])]:
        print(name if name != TUI else f"{TUI}: against a minimal Textual app right before")
        for side in trees:
            rows = found[(name, side)]
            ratio = med(r[0] / r[2] for r in rows)
            extra = med(r[0] - r[2] for r in rows)
            what = "floor" if name == TUI else "base"
            print(
                f"  {side:12} {_spread([r[0] for r in rows])} ms  x{ratio:4.2f} {what} "
                f"({what} {1000 * extra:+6.1f} ms)  CPU {_spread([r[1] for r in rows])} ms"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

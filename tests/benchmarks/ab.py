#!/usr/bin/env python3
"""Two source trees of pcidoc, interleaved against the baseline: prints figures, asserts nothing.

Usage::

    git worktree add /tmp/before <commit>
    .venv/bin/python tests/benchmarks/ab.py --before /tmp/before --after . --rounds 11

Each round times ``python -c "import pydantic, rich"`` (the issue's baseline), then each command
once on each tree (``PYTHONPATH`` set to the tree, same interpreter and packages), so a busy or
slowed-down VM affects both sides of a comparison alike. Prints per command the median wall
time, the median of the per-round ratios to the baseline and of the differences from it, and the
median CPU time (user + system) of the child process.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from run import run_once  # this folder is sys.path[0] when run as a script

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


def _run(argv: list[str], tree: Path) -> tuple[float, float]:
    return run_once(argv, {"PYTHONPATH": str(tree)}, cwd=tree)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, default=ROOT)
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    samples = ROOT / "pcidoc" / "samples" / "data"
    corpus = sorted(
        (ROOT.parent / "shared" / "realdata").rglob("*.txt"), key=lambda p: -p.stat().st_size
    )
    commands = {
        "check --json 72-GPU": ["check", "--json", "--from", str(samples / "synthetic-72gpu.json")],
        "check --json h800 (8 GPUs)": [
            "check",
            "--json",
            "--from",
            str(samples / "h800-8gpu-hgx.json"),
        ],
        "topo --json 72-GPU": ["topo", "--json", "--from", str(samples / "synthetic-72gpu.json")],
    }
    if corpus:
        raw = Path("/tmp/pcidoc-ab-import.txt")
        raw.write_text("".join(corpus[0].read_text().splitlines(keepends=True)[3:]))
        commands["import largest corpus file"] = ["import", str(raw), "-o", "/tmp/pcidoc-ab.json"]
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    for tree in trees.values():  # bytecode caches warm on both sides
        for argv in commands.values():
            _run([PY, "-m", "pcidoc", *argv], tree)
    base: list[tuple[float, float]] = []
    found: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for _ in range(args.rounds):
        wall, cpu = _run([PY, "-c", "import pydantic, rich"], trees["after"])
        base.append((wall, cpu))
        for name, argv in commands.items():
            for side, tree in trees.items():
                w, c = _run([PY, "-m", "pcidoc", *argv], tree)
                found.setdefault((name, side), []).append((w, c, wall))
    med = statistics.median
    print(
        f"baseline: wall {1000 * med(b[0] for b in base):.1f} ms, "
        f"CPU {1000 * med(b[1] for b in base):.1f} ms ({args.rounds} rounds)"
    )
    for name in commands:
        parts = [f"{name:28}"]
        for side in trees:
            rows = found[(name, side)]
            wall = med(r[0] for r in rows)
            ratio = med(r[0] / r[2] for r in rows)
            extra = med(r[0] - r[2] for r in rows)
            cpu = med(r[1] for r in rows)
            parts.append(
                f"{side}: {1000 * wall:6.1f} ms x{ratio:4.2f} (base {1000 * extra:+6.1f} ms), "
                f"CPU {1000 * cpu:6.1f} ms"
            )
        print(" | ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Benchmark of ``pcidoc fleet``: N 8-GPU captures (default 1,000), prints figures, asserts
nothing.

Usage: ``.venv/bin/python tests/benchmarks/fleet.py [--nodes N] [--jobs 1,2] [--repeat R]``

The captures are the bundled A100 SXM4 8-GPU sample with synthetic per-node changes (hostname,
PCIe link facts, a downtrained link on one node in 100, replays on another), written once to a
temporary folder before timing. Each timed run is a fresh ``pcidoc fleet --json DIR`` process
(wall time from process start to exit, output discarded), so interpreter start and imports are
included. Peak RSS of the parent and of the largest worker come from ``getrusage``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def make_fleet(folder: Path, nodes: int) -> None:
    """Write ``nodes`` synthetic captures into ``folder``."""
    from tests.fleet.conftest import write_fleet

    def change(i: int, cap) -> None:
        if i % 100 == 4:
            cap.gpus[3].pcie.current_width = 8
        if i % 100 == 11:
            cap.gpus[6].replay_count = 5000

    write_fleet(folder, nodes, change)


def timed_run(folder: Path, jobs: int) -> tuple[float, dict]:
    """Wall seconds of one ``pcidoc fleet --json`` process, and its parsed summary."""
    code = (
        "import resource, sys\n"
        "from pcidoc.cli import main\n"
        f"rc = main(['fleet', '--json', '--jobs', '{jobs}', {str(folder)!r}])\n"
        "me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "s = resource.getrusage(resource.RUSAGE_SELF)\n"
        "c = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "cpu = s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime\n"
        "sys.stderr.write(f'RSS {me} {kids} {cpu}\\n')\n"
    )
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT
    )
    wall = time.perf_counter() - start
    doc = json.loads(proc.stdout)
    rss = next(line for line in proc.stderr.splitlines() if line.startswith("RSS ")).split()
    return wall, {
        "summary": doc["summary"],
        "parent_rss_mib": int(rss[1]) / 1024,
        "worker_rss_mib": int(rss[2]) / 1024,
        "stdout_bytes": len(proc.stdout),
        "cpu_s": float(rss[3]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--jobs", default="1,2")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "caps"
        t0 = time.perf_counter()
        make_fleet(folder, args.nodes)
        print(f"wrote {args.nodes} 8-GPU captures in {time.perf_counter() - t0:.1f} s")
        print(f"usable cores: {len(os.sched_getaffinity(0))}, load average: {os.getloadavg()}")
        for jobs in [int(j) for j in args.jobs.split(",")]:
            walls = []
            cpus = []
            info: dict = {}
            for _ in range(args.repeat):
                wall, info = timed_run(folder, jobs)
                walls.append(wall)
                cpus.append(info["cpu_s"])
            print(
                f"pcidoc fleet --jobs {jobs}: median {statistics.median(walls):.2f} s "
                f"(runs: {', '.join(f'{w:.2f}' for w in walls)}); "
                f"{args.nodes / statistics.median(walls):.0f} nodes/s; CPU time (all processes) "
                f"median {statistics.median(cpus):.2f} s; parent peak RSS "
                f"{info['parent_rss_mib']:.0f} MiB, largest worker "
                f"{info['worker_rss_mib']:.0f} MiB; "
                f"outliers {info['summary']['outliers']}, excluded {info['summary']['excluded']}"
            )
    _ = resource


if __name__ == "__main__":
    main()

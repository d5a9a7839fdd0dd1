#!/usr/bin/env python3
"""How the import and the doctor scale with GPU count: prints figures, asserts nothing.

Usage: ``.venv/bin/python tests/benchmarks/scale_gpus.py [N ...]`` (default 200 400 1000)

For each N it writes a synthetic ``nvidia-smi topo -m`` matrix (labelled synthetic: 8-GPU NV18
islands, SYS between them, two NUMA nodes), imports it with ``pcidoc.collect.importers`` and
runs every check with ``pcidoc.doctor.runner.run``, printing the wall time of each stage and
of the slowest checks. The doctor must be near-linear in the number of GPU pairs it has to
look at, so a 1,000-GPU matrix (half a million pairs) must import and check in seconds.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def synthetic_topo(n: int) -> str:
    """A ``topo -m`` text for ``n`` GPUs (synthetic; no machine of this size was measured)."""
    labels = [f"GPU{i}" for i in range(n)]
    header = "\t" + "\t".join(labels) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"
    rows = [header]
    half = max(1, n // 2)
    for i in range(n):
        cells = []
        for j in range(n):
            if i == j:
                cells.append("X")
            elif i // 8 == j // 8:
                cells.append("NV18")
            else:
                cells.append("SYS")
        node = 0 if i < half else 1
        cpus = "0-55" if node == 0 else "56-111"
        rows.append(f"GPU{i}\t" + "\t".join(cells) + f"\t{cpus}\t{node}\t\tN/A")
    rows += ["", "Legend:", "", "  X    = Self", "  SYS  = Connection traversing PCIe"]
    return "\n".join(rows) + "\n"


def main(argv: list[str]) -> None:
    from pcidoc.collect.importers import import_texts
    from pcidoc.doctor.context import Context
    from pcidoc.doctor.registry import load_checks
    from pcidoc.doctor.runner import run, run_check
    from pcidoc.model.report import ReportSource

    sizes = [int(a) for a in argv] or [200, 400, 1000]
    for n in sizes:
        text = synthetic_topo(n)
        t0 = time.perf_counter()
        capture = import_texts([(f"synthetic-topo-{n}.txt", text)]).capture
        t1 = time.perf_counter()
        report = run(
            capture,
            ReportSource(kind="synthetic", name=f"synthetic-topo-{n}"),
            generated_at="2026-01-01T00:00:00Z",
        )
        t2 = time.perf_counter()
        per_check = []
        ctx = Context(capture)
        for spec in load_checks().values():
            s = time.perf_counter()
            run_check(spec, ctx)
            per_check.append((time.perf_counter() - s, spec.id))
        slowest = ", ".join(f"{cid} {sec:.2f}s" for sec, cid in sorted(per_check)[::-1][:3])
        print(
            f"{n:5d} GPUs ({len(text) / 1e6:.1f} MB of text): import {t1 - t0:6.2f} s, "
            f"check {t2 - t1:6.2f} s, worst {report.worst}; slowest checks (warm): {slowest}",
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])

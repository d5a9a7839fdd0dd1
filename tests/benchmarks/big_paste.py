#!/usr/bin/env python3
"""Time and peak memory of ``pcidoc import`` on a large synthetic nccl-tests paste.

Usage: ``.venv/bin/python tests/benchmarks/big_paste.py [--mb 100]``. Prints figures, asserts
nothing (issue 23: a 100 MB nccl-tests paste took 28 s and 895 MB). The paste is synthetic: one
real header and rank block, then result rows repeated with growing sizes until it reaches the
size asked for. Each run is a fresh process; peak RSS is its ``ru_maxrss``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

HEADER = (
    "$ ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 8\n"
    "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5\n"
    "#\n# Using devices\n"
    + "".join(
        f"#  Rank  {i} Group  0 Pid   4242 on     node1 device  {i} [0x{16 + i:02x}] "
        "NVIDIA A100-SXM4-80GB\n"
        for i in range(8)
    )
    + "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong\n"
)

CHILD = """
import resource, sys
from pcidoc.collect.importers import import_paths
result = import_paths([sys.argv[1]])
rows = sum(len(m.rows) for m in result.capture.measurements.collectives)
usage = resource.getrusage(resource.RUSAGE_SELF)
cpu = usage.ru_utime + usage.ru_stime
print(f"{rows} rows kept, {cpu:.1f} s CPU, peak RSS {usage.ru_maxrss / 1024:.0f} MB, "
      f"{len(result.warnings)} warning(s)")
for warning in result.warnings[:3]:
    print("  warning:", warning[:150])
"""


def write_paste(path: Path, megabytes: int) -> None:
    limit = megabytes * 1_000_000
    with path.open("w") as out:
        out.write(HEADER)
        written = len(HEADER)
        size = 8
        while written < limit:
            row = (
                f"{size:>12} {size // 4:>12}     float     sum      -1   123.45  "
                "100.00  175.00      0   123.40  100.10  175.10      0\n"
            )
            out.write(row)
            written += len(row)
            size += 8


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        paste = Path(folder) / "paste.txt"
        write_paste(paste, args.mb)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(paste)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - start
    print(f"nccl-tests paste of {args.mb} MB: {wall:.1f} s wall")
    print(done.stdout.strip() or done.stderr.strip()[-500:])
    return 0


if __name__ == "__main__":
    sys.exit(main())

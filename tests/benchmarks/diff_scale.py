#!/usr/bin/env python3
"""Benchmark of ``pcidoc diff``: the 16-GPU sample against a SYNTHETIC N-GPU capture (default
1,000), prints figures, asserts nothing.

Usage: ``.venv/bin/python tests/benchmarks/diff_scale.py [N ...]``

The N-GPU capture is built with the generator of the synthetic samples (labelled synthetic; no
machine of this size was measured) and written once to a temporary folder. Each timed run is a
fresh ``pcidoc diff`` process (text, then ``--json``), wall time from process start to exit, so
interpreter start, loading both files and running the doctor twice are included; the output's
size and line count are printed beside the time.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main(argv: list[str]) -> None:
    from pcidoc.collect.capture import save_capture
    from pcidoc.samples import sample_path
    from pcidoc.samples.synthetic import _nvswitch_box

    small = str(sample_path("synthetic-16gpu"))
    for n in [int(a) for a in argv] or [1000]:
        with tempfile.TemporaryDirectory() as folder:
            big = Path(folder) / f"synthetic-{n}gpu.json"
            save_capture(_nvswitch_box(n, 8, 8, "Synthetic SXM GPU", 4, 12, "3.0", 25.0, 48), big)
            for extra in ([], ["--json"]):
                argv_ = [sys.executable, "-m", "pcidoc", "diff", *extra, small, str(big)]
                start = time.perf_counter()
                done = subprocess.run(argv_, capture_output=True, check=False)
                wall = time.perf_counter() - start
                out = done.stdout
                lines = out.count(b"\n")
                print(
                    f"16 vs {n} GPUs {' '.join(extra) or 'text'}: {wall:.1f} s wall, exit "
                    f"{done.returncode}, {len(out):,} bytes, {lines:,} lines"
                )


if __name__ == "__main__":
    main(sys.argv[1:])

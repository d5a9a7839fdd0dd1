#!/usr/bin/env python3
"""Accuracy of ``pcidoc explain`` over real failing jobs made by ``tools/inject.py``; prints
a table (docs/explain.md keeps the latest), asserts nothing.

Usage::

    .venv/bin/python tests/benchmarks/explain_accuracy.py                    # the full matrix
    .venv/bin/python tests/benchmarks/explain_accuracy.py --ranks 2,3 --faults hang,die
    .venv/bin/python tests/benchmarks/explain_accuracy.py --seeds 1,2 --nodes 2 --jobs 2

Every (fault, rank count, victim, seed) runs one real job (gloo on CPU; each job's launcher,
log layout and fault variant are drawn from its seed), then ``pcidoc explain --json`` on its
folder. A run is right when the culprit's rank and cause are the truth's; a healthy run is right
when no culprit is named. ``--nodes`` > 1 spreads the ranks over that many simulated nodes
(per-node folders, clocks set off). ``--out`` keeps the jobs' folders and a JSON line per run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
INJECT = ROOT / "tools" / "inject.py"
FAULTS = ("none", "hang", "die", "slow", "mismatch", "xid", "aer", "link", "iommu")


def one_run(spec: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """Run one job and explain it; the comparison with the truth."""
    name = "{fault}-n{ranks}-v{victim}-s{seed}-k{nodes}".format(**spec)
    out, truth_file = workdir / name, workdir / f"{name}.truth.json"
    command = [
        sys.executable,
        str(INJECT),
        "--ranks",
        str(spec["ranks"]),
        "--fault",
        spec["fault"],
        "--victim",
        str(spec["victim"]),
        "--seed",
        str(spec["seed"]),
        "--nodes",
        str(spec["nodes"]),
        "--out",
        str(out),
        "--truth",
        str(truth_file),
    ]
    command += spec.get("extra", [])
    start = time.perf_counter()
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    job_s = time.perf_counter() - start
    if run.returncode == 1 and truth_file.exists():
        # The job failed for another reason than the injected fault (an overloaded machine
        # timed a collective out first) in every attempt: not a sample.
        return {**spec, "name": name, "invalid": run.stderr.strip().splitlines()[-1:]}
    if run.returncode != 0:
        return {**spec, "name": name, "error": run.stderr.strip().splitlines()[-1:]}
    truth = json.loads(truth_file.read_text(encoding="utf-8"))
    return {**spec, "name": name, **explain_and_judge(out, truth), "job_s": round(job_s, 1)}


def explain_and_judge(out: Path, truth: dict[str, Any]) -> dict[str, Any]:
    """``pcidoc explain --json`` on a job's folder, compared with its truth."""
    start = time.perf_counter()
    explained = subprocess.run(
        [sys.executable, "-m", "pcidoc", "explain", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    explain_s = time.perf_counter() - start
    try:
        result = json.loads(explained.stdout)
    except ValueError:
        return {"error": [explained.stderr.strip()[-300:]]}
    return {
        **judge(truth, result),
        "explain_s": round(explain_s, 2),
        "variant": truth["variant"],
        "launcher": truth["launcher"],
        "exit": explained.returncode,
    }


def judge(truth: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """Right or wrong, and what was said."""
    culprit = result.get("culprit") or {}
    got_rank, got_cause = culprit.get("rank"), culprit.get("cause")
    if truth["victim"] is None:
        right = got_rank is None and result.get("status") == "ok"
    else:
        right = got_rank == truth["victim"]["rank"] and got_cause == truth["cause"]
    return {
        "right": right,
        "rank_right": truth["victim"] is not None and got_rank == truth["victim"]["rank"],
        "got": [got_rank, got_cause],
        "want": [truth["victim"] and truth["victim"]["rank"], truth["cause"]],
        "confidence": result.get("confidence"),
    }


def matrix(args: argparse.Namespace) -> list[dict[str, Any]]:
    specs = []
    for fault in args.faults.split(","):
        for ranks in [int(r) for r in args.ranks.split(",")]:
            victims = [0] if fault == "none" else range(ranks)
            for victim in victims:
                for seed in [int(s) for s in args.seeds.split(",")]:
                    nodes = min(args.nodes, ranks)
                    specs.append(
                        {
                            "fault": fault,
                            "ranks": ranks,
                            "victim": victim,
                            "seed": seed + victim * 101 + ranks * 17,
                            "nodes": nodes,
                            "extra": args.inject.split(),
                        }
                    )
    return specs


def table(rows: list[dict[str, Any]]) -> str:
    rows = [r for r in rows if "invalid" not in r]
    faults = [f for f in FAULTS if any(r["fault"] == f for r in rows)]
    counts = sorted({r["ranks"] for r in rows})
    head = "| fault | " + " | ".join(f"{n} ranks" for n in counts) + " | all |"
    lines = [head, "|---" * (len(counts) + 2) + "|"]
    for fault in faults:
        cells = []
        for n in [*counts, None]:
            sel = [r for r in rows if r["fault"] == fault and (n is None or r["ranks"] == n)]
            right = sum(1 for r in sel if r.get("right"))
            cells.append(f"{right}/{len(sel)}" if sel else "")
        lines.append(f"| {fault} | " + " | ".join(cells) + " |")
    total = sum(1 for r in rows if r.get("right"))
    lines.append(
        f"| **all** | {' | '.join('' for _ in counts)} | **{total}/{len(rows)} "
        f"({100.0 * total / max(1, len(rows)):.1f} %)** |"
    )
    return "\n".join(lines)


def rejudge(workdir: Path) -> int:
    """The table of an earlier run's folders, explained by the pcidoc of this checkout."""
    rows = []
    for line in (workdir / "runs.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if "invalid" in row or "error" in row:
            rows.append(row)
            continue
        truth = json.loads((workdir / f"{row['name']}.truth.json").read_text(encoding="utf-8"))
        row.update(explain_and_judge(workdir / row["name"], truth))
        rows.append(row)
    report(rows, workdir, None)
    return 0


def report(rows: list[dict[str, Any]], workdir: Path, start: float | None) -> None:
    """The table, the runs left out and the wrong ones."""
    print(table(rows))
    invalid = [r for r in rows if "invalid" in r]
    if invalid:
        print(f"\n{len(invalid)} run(s) left out: no attempt failed by the injected fault alone")
    rows = [r for r in rows if "invalid" not in r]
    wrong = [r for r in rows if not r.get("right")]
    took = f" in {time.perf_counter() - start:.0f} s" if start is not None else ""
    print(f"\n{len(rows)} runs{took}; wrong: {len(wrong)}")
    for row in wrong:
        print(
            f"  {row['name']} ({row.get('variant')}, {row.get('launcher')}): got {row.get('got')} "
            f"want {row.get('want')} {row.get('error', '')}"
        )
    print(f"folders and runs.jsonl: {workdir}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--ranks", default="2,3,4,5,6,7,8")
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2, help="jobs run at once (2)")
    parser.add_argument(
        "--inject",
        default="",
        help="more tools/inject.py options for every job, e.g. "
        "'--flight-recorder' or '--launcher torchrun'",
    )
    parser.add_argument("--out", help="keep the jobs' folders and results here")
    parser.add_argument(
        "--rejudge",
        metavar="DIR",
        help="run no job: explain again the folders an earlier --out DIR kept (after a change "
        "of pcidoc explain) and print the table",
    )
    args = parser.parse_args()
    if args.rejudge:
        return rejudge(Path(args.rejudge))
    workdir = Path(args.out or tempfile.mkdtemp(prefix="explain-accuracy-"))
    workdir.mkdir(parents=True, exist_ok=True)
    specs = matrix(args)
    start = time.perf_counter()
    rows = []
    with (
        ThreadPoolExecutor(max_workers=args.jobs) as pool,
        (workdir / "runs.jsonl").open("w") as log,
    ):
        for row in pool.map(lambda s: one_run(s, workdir), specs):
            rows.append(row)
            log.write(json.dumps(row) + "\n")
            log.flush()
            mark = "ok " if row.get("right") else "n/a" if "invalid" in row else "BAD"
            sys.stderr.write(
                f"{mark} {row['name']}: got {row.get('got')} want {row.get('want')} "
                f"{row.get('error', '')}\n"
            )
    report(rows, workdir, start)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The probes' torch compatibility matrix, run for real on CPU (not part of the test suite).

For each torch version it builds (once, cached) a virtual environment under
``~/.cache/pcidoc-compat/torch-X`` with ``pip install torch==X`` (the CPU wheel index when it is
reachable, else the default index) and pcidoc (editable, from this checkout, with its test
extra), then runs in it:

* ``pcidoc probe allreduce --backend gloo --ranks 2 --json`` (pass: exit 0, busbw measured);
* ``pcidoc probe scaling --backend gloo --ranks 1,2 --json`` (pass: exit 0, an efficiency at
  2 ranks);
* the same all-reduce from the interpreter running this script, with ``--python`` pointing at the
  environment (the probe child runs under that torch, pcidoc elsewhere);
* ``pytest tests/probes -q``.

It prints a Markdown table (``docs/probes.md`` keeps the latest) and stores each version's row in
``<cache>/results-X.json``; ``--table`` reprints the stored rows without running anything.

    python tools/compat_matrix.py                       # every listed version
    python tools/compat_matrix.py --versions 2.4.1      # one
    python tools/compat_matrix.py --delete-after        # drop each venv once measured (disk)
    python tools/compat_matrix.py --table               # the stored results only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

VERSIONS = ("2.1.2", "2.4.1", "2.6.0", "2.8.0", "2.13.0")
REPO = Path(__file__).resolve().parent.parent
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def cpu_index_reachable(timeout_s: float = 5.0) -> bool:
    """True when the PyTorch CPU wheel index answers."""
    try:
        with urllib.request.urlopen(f"{CPU_INDEX}/torch/", timeout=timeout_s) as response:
            return int(response.status) == 200
    except Exception:
        return False


def run(cmd: list[str], timeout_s: float, cwd: Path | None = None) -> tuple[int, str, str, float]:
    """``(returncode, stdout, stderr, seconds)``; a timeout is returncode 124."""
    started = time.monotonic()
    env = dict(os.environ)
    env.pop("PCIDOC_PYTHON", None)
    env.pop("VIRTUAL_ENV", None)
    try:
        done = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            cwd=cwd,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout if isinstance(exc.stdout, str) else ""
        return 124, out, "timed out", time.monotonic() - started
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


def torch_version_in(python: Path) -> str | None:
    """The torch version importable by ``python``, or ``None``."""
    code, out, _err, _s = run(
        [str(python), "-c", "import torch; print(torch.__version__)"], timeout_s=300
    )
    return out.strip().splitlines()[-1] if code == 0 and out.strip() else None


def build_env(version: str, cache: Path, log: list[str]) -> Path | None:
    """Create (or reuse) the environment of ``version``; returns its python, or ``None``."""
    venv = cache / f"torch-{version}"
    python = venv / "bin" / "python"
    if not python.exists():
        code, _out, err, _s = run([sys.executable, "-m", "venv", str(venv)], timeout_s=600)
        if code != 0:
            log.append(f"venv failed: {err.strip()[-300:]}")
            return None
    installed = torch_version_in(python)
    if installed is None or installed.split("+")[0] != version:
        pip = [str(python), "-m", "pip", "install", "-q", f"torch=={version}"]
        if cpu_index_reachable():
            pip += ["--index-url", CPU_INDEX]
        code, _out, err, seconds = run(pip, timeout_s=3600)
        log.append(f"pip install torch=={version}: exit {code} in {seconds:.0f} s")
        if code != 0:
            log.append(err.strip()[-500:])
            return None
    code, _out, err, _s = run(
        [str(python), "-m", "pip", "install", "-q", "-e", f"{REPO}[test]"], timeout_s=1800
    )
    if code != 0:
        log.append(f"pip install pcidoc: exit {code}: {err.strip()[-500:]}")
        return None
    return python


def _probe(cmd: list[str]) -> tuple[bool, dict, str, float]:
    code, out, err, seconds = run(cmd, timeout_s=900, cwd=REPO)
    try:
        document = json.loads(out)
    except ValueError:
        document = {}
    detail = "" if code == 0 else (err.strip().splitlines() or ["no output"])[-1][:160]
    return code == 0 and bool(document.get("ok")), document, detail, seconds


def check_allreduce(document: dict) -> str | None:
    """``busbw X GB/s @ size`` of the largest size, or ``None`` when none was measured."""
    rows = [
        row
        for c in document.get("measurements", {}).get("collectives", [])
        if c.get("ranks") == 2
        for row in c.get("rows", [])
        if row.get("busbw_gbps") is not None
    ]
    if not rows:
        return None
    row = max(rows, key=lambda r: r["size_bytes"])
    return f"busbw {row['busbw_gbps']:.2f} GB/s @ {row['size_bytes'] // 1024} KiB"


def check_scaling(document: dict) -> str | None:
    """``eff X at 2 ranks``, or ``None`` when the 2-rank efficiency is missing."""
    for s in document.get("measurements", {}).get("scaling", []):
        for point in s.get("points", []):
            if point.get("ranks") == 2 and point.get("efficiency") is not None:
                return f"efficiency {point['efficiency']:.2f} at 2 ranks"
    return None


def measure(version: str, python: Path, skip_tests: bool) -> dict:
    """Run the probes and tests under ``python``; one result row."""
    pcidoc = [str(python), "-m", "pcidoc"]
    row: dict = {
        "torch": version,
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d"),
    }
    row["torch_installed"] = torch_version_in(python)
    ok, doc, detail, seconds = _probe(
        [*pcidoc, "probe", "allreduce", "--backend", "gloo", "--ranks", "2", "--json"]
    )
    summary = check_allreduce(doc)
    row["allreduce"] = {
        "pass": ok and summary is not None,
        "detail": summary or detail,
        "s": seconds,
    }
    ok, doc, detail, seconds = _probe(
        [*pcidoc, "probe", "scaling", "--backend", "gloo", "--ranks", "1,2", "--json"]
    )
    summary = check_scaling(doc)
    row["scaling"] = {"pass": ok and summary is not None, "detail": summary or detail, "s": seconds}
    ok, doc, detail, seconds = _probe(
        [
            sys.executable,
            "-m",
            "pcidoc",
            "probe",
            "allreduce",
            "--backend",
            "gloo",
            "--ranks",
            "2",
            "--json",
            "--python",
            str(python),
        ]
    )
    measured_by = (doc.get("info") or {}).get("torch_version")
    row["foreign"] = {
        "pass": ok and check_allreduce(doc) is not None and measured_by == row["torch_installed"],
        "detail": f"measured by torch {measured_by}" if ok else detail,
        "s": seconds,
    }
    if skip_tests:
        row["tests"] = {"pass": None, "detail": "not run"}
    else:
        code, out, err, seconds = run(
            [str(python), "-m", "pytest", "tests/probes", "-q", "-p", "no:cacheprovider"],
            timeout_s=3600,
            cwd=REPO,
        )
        lines = [
            line for line in (out + err).splitlines() if re.search(r"\d+ (passed|failed)", line)
        ]
        row["failed_tests"] = [
            line.split()[1] for line in out.splitlines() if line.startswith(("FAILED ", "ERROR "))
        ]
        row["tests"] = {
            "pass": code == 0,
            "detail": lines[-1].strip("= ") if lines else f"exit {code}",
            "s": seconds,
        }
    return row


def failed_row(row: dict) -> bool:
    """True when a part of ``row`` failed (its venv is then kept to look into)."""
    return any((row.get(k) or {}).get("pass") is False for k in PARTS)


PARTS = ("allreduce", "scaling", "foreign", "tests")


def _cell(part: dict | None) -> str:
    if not part:
        return "-"
    mark = {True: "pass", False: "FAIL", None: "-"}[part.get("pass")]
    return f"{mark}: {part.get('detail')}" if part.get("detail") else mark


def table(rows: list[dict]) -> str:
    """The Markdown table of ``rows``."""
    lines = [
        "| torch | Python | `probe allreduce --backend gloo --ranks 2` | "
        "`probe scaling --backend gloo --ranks 1,2` | child via `--python` | "
        "`pytest tests/probes` |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.get('torch_installed') or row['torch']} | {row.get('python')} | "
            f"{_cell(row.get('allreduce'))} | {_cell(row.get('scaling'))} | "
            f"{_cell(row.get('foreign'))} | {_cell(row.get('tests'))} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", default=",".join(VERSIONS), help="comma-separated")
    parser.add_argument("--cache", default=str(Path.home() / ".cache" / "pcidoc-compat"))
    parser.add_argument("--delete-after", action="store_true", help="remove each venv after")
    parser.add_argument("--skip-tests", action="store_true", help="probes only")
    parser.add_argument("--table", action="store_true", help="print the stored results only")
    args = parser.parse_args(argv)
    # Started in the background (``nohup ... &``), this process has SIGINT ignored, and so would
    # every process it starts: the probe tests that deliver Ctrl-C would fail. A handler here
    # is reset to the default in the children.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    rows: list[dict] = []
    for version in versions:
        stored = cache / f"results-{version}.json"
        if args.table:
            if stored.exists():
                rows.append(json.loads(stored.read_text()))
            continue
        log: list[str] = []
        print(f"== torch {version}", file=sys.stderr, flush=True)
        python = build_env(version, cache, log)
        for line in log:
            print(f"   {line}", file=sys.stderr, flush=True)
        if python is None:
            row = {
                "torch": version,
                "python": platform.python_version(),
                "allreduce": {"pass": False, "detail": "environment not built"},
            }
        else:
            row = measure(version, python, args.skip_tests)
        stored.write_text(json.dumps(row, indent=1) + "\n")
        rows.append(row)
        print(table([row]).splitlines()[-1], file=sys.stderr, flush=True)
        if args.delete_after and not failed_row(row):
            shutil.rmtree(cache / f"torch-{version}", ignore_errors=True)
    print(table(rows))
    failed = [
        r for r in rows if not all((r.get(k) or {}).get("pass") for k in ("allreduce", "scaling"))
    ]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

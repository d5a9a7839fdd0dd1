#!/usr/bin/env python3
"""Seeded fuzz run of pcidoc's readers: importers (pasted text) and capture loading (JSON).

Not part of the default test suite: it takes minutes. Usage::

    .venv/bin/python tests/benchmarks/fuzz_inputs.py [--cases 10000] [--seed 23] [--out FILE]

Every case is a corpus file (``../shared/realdata``, ``../shared/bad-inputs``, the bundled
sample captures) with one to three seeded mutations: flipped, inserted or deleted bytes, a
duplicated or spliced slice, long runs of whitespace, digits, brackets or one token (up to
``--max-run`` characters), terminal escapes, truncation, and for captures structural edits
(a huge integer, deep nesting, many empty objects, a duplicate key, a label list longer than
its matrix, NaN). Case ``i`` is rebuilt from ``(seed, i)`` alone, so a finding can be replayed
with ``--only i``.

A case runs in this process (the readers are pure functions): ``import_texts`` then the capture
text, or ``load_capture`` on a temporary file; every fifth case that loads is also diagnosed
(``doctor.run``) and rendered in every format (terminal, Markdown, HTML, JSON, Prometheus,
topology); every imported text is also read as an NCCL RAS reply (JSON and text), as
``pcidoc watch`` reads what a RAS listener sends. Findings:

* any exception but :class:`pcidoc.errors.PcidocError` (what the CLI prints as "internal error"
  or a traceback);
* a case over ``--limit-s`` seconds (an alarm interrupts it);
* peak RSS over ``--max-rss-mb`` during a case (the process's high-water mark ``VmHWM``, reset
  through ``/proc/self/clear_refs`` before each case and read after it; the address space is
  capped at twice the limit so a runaway case fails instead of swapping).

Prints progress every 500 cases and a JSON summary at the end (also to ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))

ESCAPES = ["\x1b]0;PWNED\x07", "\x1b[2J", "\x9b31m", "\x1bP+q\x1b\\", "\u202e", "\r", "\x00"]
RUN_UNITS = [" ", "\t", "x", "0", "9", "[", "{", "-", "#", " NCCL INFO ", "GPU0 ", "\n"]


class CaseTimeout(BaseException):
    """Raised by the alarm in a case that ran over its limit."""


def _alarm(_signum: int, _frame: object) -> None:
    raise CaseTimeout


def corpus(evidence: bool = False) -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]]]:
    """(texts to import, captures to load); ``evidence`` adds ``../shared/realdata-evidence``
    (NCCL and kernel logs, RAS, Inspector, topology files...)."""
    texts: list[tuple[str, bytes]] = []
    captures: list[tuple[str, bytes]] = []
    folders = [SHARED / "realdata", SHARED / "bad-inputs"]
    if evidence:
        folders.append(SHARED / "realdata-evidence")
    for folder in folders:
        if folder.is_dir():
            for path in sorted(folder.rglob("*")):
                if not path.is_file() or path.suffix == ".md":
                    continue
                target = captures if path.suffix == ".json" else texts
                target.append((str(path.relative_to(SHARED)), path.read_bytes()))
    for path in sorted((ROOT / "pcidoc" / "samples" / "data").glob("*.json")):
        if path.name != "index.json":
            captures.append((f"samples/{path.name}", path.read_bytes()))
    return texts, captures


def _run(rng: random.Random, max_run: int) -> str:
    unit = rng.choice(RUN_UNITS)
    length = int(10 ** rng.uniform(0, len(str(max_run)) - 1 + 0.0001))
    return (unit * (length // len(unit) + 1))[: min(length, max_run)]


def mutate_bytes(data: bytes, rng: random.Random, pool: list[bytes], max_run: int) -> bytes:
    """One byte-level mutation."""
    if not data:
        return _run(rng, max_run).encode()
    i = rng.randrange(len(data))
    j = min(len(data), i + rng.randrange(1, 4096))
    choice = rng.randrange(9)
    if choice == 0:  # flip bytes
        out = bytearray(data)
        for _ in range(rng.randrange(1, 16)):
            out[rng.randrange(len(out))] = rng.randrange(256)
        return bytes(out)
    if choice == 1:  # random bytes
        return data[:i] + os.urandom(rng.randrange(1, 64)) + data[i:]
    if choice == 2:  # delete a slice
        return data[:i] + data[j:]
    if choice == 3:  # duplicate a slice
        return data[:j] + data[i:j] * rng.randrange(1, 50) + data[j:]
    if choice == 4:  # a long run of one unit
        return data[:i] + _run(rng, max_run).encode() + data[i:]
    if choice == 5:  # escapes
        return data[:i] + rng.choice(ESCAPES).encode("utf-8", "surrogatepass") + data[i:]
    if choice == 6:  # truncate
        return data[:i]
    if choice == 7:  # splice another corpus file
        other = rng.choice(pool)
        k = rng.randrange(len(other) + 1)
        return data[:i] + other[k : k + rng.randrange(1, 20000)] + data[i:]
    # a long line: the run without line breaks, then a token
    return data[:i] + b" " * rng.randrange(1, max_run + 1) + b"x\n" + data[i:]


def _nodes(node: object, path: tuple = ()) -> list[tuple]:
    found: list[tuple] = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _nodes(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node[:8]):
            found += _nodes(value, (*path, index))
    return found


def _set(node: object, path: tuple, value: object) -> object:
    if not path:
        return value
    parent = node
    for key in path[:-1]:
        parent = parent[key]  # type: ignore[index]
    parent[path[-1]] = value  # type: ignore[index]
    return node


def mutate_json(data: bytes, rng: random.Random, max_run: int) -> bytes:
    """One structural mutation of a capture (falls back to bytes when it does not parse)."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return data
    path = rng.choice(_nodes(doc))
    choice = rng.randrange(8)
    marker = "\ufdd0MARK\ufdd0"
    raw: str | None = None
    if choice == 0:
        raw = "9" * rng.choice([20, 400, 4301, 5000])
    elif choice == 1:
        depth = rng.choice([10, 100, 1000, 5000])
        raw = "[" * depth + "]" * depth
    elif choice == 2:
        raw = "[" + ",".join(["{}"] * rng.choice([10, 1000, 70000, 300000])) + "]"
    elif choice == 3:
        raw = '"' + _run(rng, max_run) + '"'
    elif choice == 4:
        raw = rng.choice(["NaN", "Infinity", "-1e999", "1e400", "null", "true", '""', "-0"])
    elif choice == 5 and isinstance(doc, dict) and isinstance(doc.get("topology"), dict):
        labels = doc["topology"].get("labels")
        labels = labels if isinstance(labels, list) else []
        doc["topology"]["labels"] = labels * rng.choice([2, 10, 250])
    elif (
        choice == 6
        and isinstance(doc, dict)
        and isinstance(doc.get("gpus"), list)
        and doc["gpus"]
        and isinstance(doc["gpus"][0], dict)
    ):
        gpu = doc["gpus"][0]
        gpu["cpu_affinity"] = rng.choice(["0-8191,", "0-999999999,", "1,", "\u0661,"]) * 2000
    else:  # duplicate a key
        text = json.dumps(doc)
        where = text.find('": ', rng.randrange(max(1, len(text))))
        if where > 0:
            start = text.rfind('"', 0, where)
            key = text[start : where + 3]
            return (text[:start] + key + "1, " + text[start:]).encode()
        return text.encode()
    if raw is not None:
        doc = _set(doc, path, marker)
        return json.dumps(doc).replace(json.dumps(marker), raw, 1).encode()
    return json.dumps(doc).encode()


def build_case(
    index: int, seed: int, texts: list, captures: list, max_run: int
) -> tuple[str, str, bytes]:
    rng = random.Random(seed * 1_000_003 + index)
    kind = "import" if rng.random() < 0.5 or not captures else "capture"
    name, data = rng.choice(texts if kind == "import" and texts else captures)
    pool = [d for _, d in texts + captures]
    for _ in range(rng.randrange(1, 4)):
        if kind == "capture" and rng.random() < 0.5:
            data = mutate_json(data, rng, max_run)
        else:
            data = mutate_bytes(data, rng, pool, max_run)
    return kind, name, data


def run_case(kind: str, name: str, data: bytes, folder: str, diagnose: bool) -> str:
    """``ok`` or ``refused``; raises anything else."""
    from pcidoc.errors import PcidocError

    try:
        if kind == "import":
            from pcidoc.collect.capture import capture_text
            from pcidoc.collect.importers import import_texts
            from pcidoc.fileio import decode_text

            result = import_texts([(name, decode_text(data, name))])
            capture_text(result.capture)
            capture = result.capture
        else:
            from pcidoc.collect.capture import load_capture

            path = os.path.join(folder, "case.json")
            with open(path, "wb") as handle:
                handle.write(data)
            capture = load_capture(path)
        if kind == "import":
            _ras_replies(data, name)
        if diagnose:
            from pcidoc import doctor
            from pcidoc.model.report import ReportSource

            report = doctor.run(
                capture, ReportSource(kind="import"), generated_at="2026-01-01T00:00:00Z"
            )
            _render_everywhere(report)
        return "ok"
    except PcidocError as exc:
        if "\n" in str(exc).strip():
            raise AssertionError(f"multi-line error: {str(exc)[:200]!r}") from None
        return "refused"


def _ras_replies(data: bytes, name: str) -> None:
    """The text as what ``pcidoc watch`` reads from an NCCL RAS listener: untrusted, as JSON
    and as text (``pcidoc.collect.nccl_ras_client.parse_reply``)."""
    from pcidoc.collect.nccl_ras_client import RasQuery, parse_reply

    text = data.decode("utf-8", "replace")
    for fmt in ("json", "text"):
        parse_reply(RasQuery(text=text, fmt=fmt), f"ras:{name}")


def _render_everywhere(report: object) -> None:
    """Every view of a diagnosis: the terminal (short and verbose), Markdown, HTML, JSON, the
    Prometheus textfile and the topology matrix."""
    import io

    from pcidoc.fleet.prom import render, report_registry
    from pcidoc.present import render_report_file
    from pcidoc.present.text import make_console, render_report, render_topology

    for suffix in (".md", ".html", ".json"):
        render_report_file(report, f"r{suffix}")  # type: ignore[arg-type]
    console = make_console(io.StringIO(), width=100)
    render_report(report, console)  # type: ignore[arg-type]
    render_report(report, console, verbose=True)  # type: ignore[arg-type]
    render_topology(report.machine, console)  # type: ignore[attr-defined]
    render(report_registry(report))  # type: ignore[arg-type]


def _peak_rss_mb() -> float:
    """The process's RSS high-water mark (VmHWM), reset by :func:`_reset_peak` before each case
    so that the memory the harness used to build a large case does not count as the reader's."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--max-run", type=int, default=40_000)
    parser.add_argument("--limit-s", type=int, default=10)
    parser.add_argument("--max-rss-mb", type=int, default=1024)
    parser.add_argument("--first", type=int, default=0, help="first case number (to split a run)")
    parser.add_argument("--only", type=int, action="append", help="replay case N")
    parser.add_argument(
        "--exclude", action="append", default=[], help="leave corpus files whose name has this"
    )
    parser.add_argument(
        "--evidence", action="store_true", help="add ../shared/realdata-evidence to the corpus"
    )
    parser.add_argument("--out", help="write the JSON summary here too")
    args = parser.parse_args(argv)
    cap = 2 * args.max_rss_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    signal.signal(signal.SIGALRM, _alarm)
    texts, captures = corpus(args.evidence)
    texts = [t for t in texts if not any(x in t[0] for x in args.exclude)]
    captures = [c for c in captures if not any(x in c[0] for x in args.exclude)]
    indices = args.only or range(args.first, args.first + args.cases)
    counts = {"ok": 0, "refused": 0, "timeout": 0, "crash": 0}
    by_kind = {"import": 0, "capture": 0}
    findings: list[dict] = []
    slowest = (0.0, -1)
    last_peak = _peak_rss_mb()
    worst_rss = (0.0, -1)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pcidoc-fuzz-") as folder:
        for done, index in enumerate(indices, start=1):
            kind, name, data = build_case(index, args.seed, texts, captures, args.max_run)
            by_kind[kind] += 1
            _reset_peak()
            begin = time.monotonic()
            signal.alarm(args.limit_s)
            try:
                outcome = run_case(kind, name, data, folder, diagnose=index % 5 == 0)
            except CaseTimeout:
                outcome = "timeout"
                findings.append({"case": index, "kind": kind, "file": name, "what": "timeout"})
            except BaseException as exc:  # the fuzzer's job is to catch them all
                if isinstance(exc, KeyboardInterrupt):
                    raise
                outcome = "crash"
                findings.append(
                    {
                        "case": index, "kind": kind, "file": name, "size": len(data),
                        "what": f"{type(exc).__name__}: {str(exc)[:300]}",
                        "where": traceback.format_exc().splitlines()[-3:],
                    }
                )  # fmt: skip
            finally:
                signal.alarm(0)
            elapsed = time.monotonic() - begin
            slowest = max(slowest, (elapsed, index))
            counts[outcome] += 1
            peak = _peak_rss_mb()
            worst_rss = max(worst_rss, (peak, index))
            if outcome in ("timeout", "crash") or peak > last_peak + 100:
                print(
                    f"case {index} ({kind}, {name}, {len(data)} bytes): {outcome}, "
                    f"{elapsed:.2f} s, peak RSS {peak:.0f} MB",
                    flush=True,
                )
                last_peak = peak
            if done % 500 == 0:
                print(
                    f"{done} cases, {time.monotonic() - started:.0f} s: {counts}, slowest "
                    f"{slowest[0]:.2f} s (case {slowest[1]}), peak RSS {worst_rss[0]:.0f} MB "
                    f"(case {worst_rss[1]})",
                    flush=True,
                )
    summary = {
        "seed": args.seed,
        "first": args.first,
        "excluded": args.exclude,
        "max_run": args.max_run,
        "cases": sum(counts.values()),
        "by_kind": by_kind,
        "outcomes": counts,
        "slowest_s": round(slowest[0], 3),
        "slowest_case": slowest[1],
        "peak_rss_mb": round(worst_rss[0], 1),
        "peak_rss_case": worst_rss[1],
        "rss_over_limit": worst_rss[0] > args.max_rss_mb,
        "wall_s": round(time.monotonic() - started, 1),
        "corpus": {"texts": len(texts), "captures": len(captures)},
        "findings": findings[:200],
        "python": sys.version.split()[0],
    }
    text = json.dumps(summary, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 1 if findings or summary["rss_over_limit"] else 0


if __name__ == "__main__":
    sys.exit(main())

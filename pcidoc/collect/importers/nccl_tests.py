"""nccl-tests ``*_perf`` output (all_reduce, all_gather, reduce_scatter, alltoall, broadcast,
reduce, sendrecv...).

Reads the ``# nThread .. nGpus ..`` line, the ``#  Rank r Group g Pid p on HOST device d
[bus] NAME`` lines (ranks, nodes = distinct hosts, and on a single node the GPUs used with their
bus ids and names), every table row (size, count, type, redop, root, then time / algbw / busbw /
#wrong out-of-place and in-place; ``N/A`` for #wrong in some versions; versions without the root
column too), ``# Avg bus bandwidth`` and ``# Out of bounds values``. Authors who stripped the
leading ``#`` and mpirun ``--tag-output`` prefixes (``[0]``) are handled by the text cleaner.

The collective comes from the command (``all_gather_perf``) or nccl-tests' own
``# Collective test starting:`` line; without either it is assumed to be ``all_reduce`` (with a
warning) unless the rows rule that out.
"""

from __future__ import annotations

import re

from pcidoc._record import field, record
from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.text import (
    Doc,
    comment_body,
    label_span,
    lazy,
    normalize_bus_id,
    to_float,
    to_int,
)
from pcidoc.collect.importers.walk import Walker
from pcidoc.model.measurements import CollectiveMeasurement, CollectiveRow

FORMAT = "nccl-tests"
DESCRIPTION = "nccl-tests *_perf tables (collective algbw/busbw per message size)"

# The header patterns are matched against :func:`comment_body` (the line without its leading
# blanks and ``#``): a ``^\s*#?\s*`` prefix in the pattern backtracks quadratically on a long
# run of blanks (issue 23). ``nThread: 1 nGpus: 8`` is the 2019-2020 spelling of some builds.
_NTHREAD_RE = lazy(r"nThread:?\s*(\d{1,9})\s+nGpus:?\s*(\d{1,9})", re.IGNORECASE)
_USING_RE = lazy(r"Using devices\s*$", re.IGNORECASE)
# ``Group g`` is absent before nccl-tests 2.0 (2019-2020 outputs: ``Rank 0 Pid 123 on ...``).
_RANK_RE = lazy(
    r"Rank\s+(?P<rank>\d{1,9})\s+(?:Group\s+(?P<group>\d{1,9})\s+)?Pid\s+(?P<pid>\d{1,12})\s+"
    r"on\s+(?P<host>\S+)\s+device\s+(?P<device>\d{1,9})\s+\[(?P<bus>[^\]]{0,40})\]\s*(?P<name>.*)$",
    re.IGNORECASE,
)
_HEADER_RE = lazy(r"(?:size\s+count\s+type|\(B\)\s+\(elements\)|out-of-place)")
_AVG_RE = lazy(r"Avg bus bandwidth\s*:\s*([\d.]+)", re.IGNORECASE)
_OOB_RE = lazy(r"Out of bounds values\s*:\s*(\d{1,12})\s*(\w+)?", re.IGNORECASE)
_STARTING_RE = lazy(r"Collective test starting:\s*(\w+)\s*$")
_VERSION_RE = lazy(r"nccl-tests version\s+(\S+)|NCCL version\s+([\d.]+\S*)")
_OP_RE = lazy(r"(?:^|[/\s])([a-z]+(?:_[a-z]+)*)_perf(?:_mpi)?\b")
_TYPE_RE = lazy(r"^[a-z][a-z0-9_]*$")
_REDOPS = {"sum", "prod", "max", "min", "avg", "none", "premulsum", "mulsum"}
_TYPES = {
    "int8", "char", "uint8", "int32", "int", "uint32", "int64", "uint64", "half", "float16",
    "float", "float32", "double", "float64", "bfloat16", "bf16", "fp8_e4m3", "fp8_e5m2",
    "f8e4m3", "f8e5m2",
}  # fmt: skip
"""Data types nccl-tests/rccl-tests print; a row without a redop column must name one."""
_INFO_RE = lazy(r"^\s*\S+:\d+:\d+\s+\[\d+\]\s+NCCL\s+(?:INFO|WARN)")
_MAX_ROW_TOKENS = 13
MAX_ROWS = 4096
"""Result rows kept per run (out-of-place and in-place count apart). A sweep from 8 B to 16 GiB
by factors of 2 has 32 sizes; a paste with thousands more is a generated or concatenated file,
whose further rows are counted, not stored (issue 23: a 100 MB paste took 895 MB)."""


def body_match(pattern: object, line: str) -> re.Match[str] | None:
    """``pattern.match`` on the line without its leading blanks and ``#``."""
    return pattern.match(comment_body(line))  # type: ignore[attr-defined, no-any-return]


def rank_line(line: str) -> re.Match[str] | None:
    """A ``#  Rank r [Group g] Pid p on HOST device d [bus] NAME`` line (named groups)."""
    if "Pid" not in line and "pid" not in line.lower():
        return None
    return body_match(_RANK_RE, line)


def header_line(line: str) -> re.Match[str] | None:
    """The ``# nThread N nGpus G ...`` header (groups: threads, GPUs per thread)."""
    return body_match(_NTHREAD_RE, line)


def using_line(line: str) -> bool:
    """The ``# Using devices`` line."""
    return body_match(_USING_RE, line) is not None


def _half_ok(half: list[str]) -> bool:
    return any(to_float(x) is not None for x in half[:3]) or all(x == "N/A" for x in half[:3])


def row_layout(tokens: list[str]) -> tuple[str | None, str | None, list[str]] | None:
    """``(redop, root, values)`` of a result row split on blanks, or None.

    Layouts: ``size count type [redop] [root] time algbw busbw #wrong|error`` once or twice
    (out-of-place, in-place). The redop column is missing in 2019-2020 outputs of the
    collectives without one (all_gather), the root column in others; ``error`` there is the
    largest deviation (a float), ``#wrong`` later the count of wrong elements.
    """
    if not 7 <= len(tokens) <= _MAX_ROW_TOKENS or tokens[0].startswith("#"):
        return None
    if to_int(tokens[0]) is None or to_int(tokens[1]) is None or not _TYPE_RE.match(tokens[2]):
        return None
    rest = tokens[3:]
    redop = rest[0] if rest[0] in _REDOPS else None
    if redop is not None:
        rest = rest[1:]
    root = None
    if len(rest) in (5, 9) and to_int(rest[0]) is not None:
        root, rest = rest[0], rest[1:]
    if len(rest) not in (4, 8) or not _half_ok(rest[:4]):
        return None
    if redop is None and tokens[2] not in _TYPES:
        return None
    return redop, root, rest


def _row_tokens(line: str) -> list[str] | None:
    tokens = line.split(None, _MAX_ROW_TOKENS)
    return tokens if row_layout(tokens) is not None else None


def detect(doc: Doc, index: int, ctx: Context) -> bool:
    """True at the ``nThread`` line, ``Using devices``, a rank line, the table header, a data
    row, or nccl-tests' ``Collective test starting`` line."""
    line = doc.lines[index]
    body = comment_body(line)
    return bool(
        _NTHREAD_RE.match(body)
        or _USING_RE.match(body)
        or rank_line(line)
        or _STARTING_RE.match(body)
        or (_HEADER_RE.match(body) and "#" in line)
        or _row_tokens(line)
    )


def _wrong(token: str) -> int | None:
    value = to_int(token)
    if value is not None:
        return value if value >= 0 else None
    number = to_float(token)
    if number is not None and number == 0:
        return 0
    return None


def _row(tokens: list[str], rest: list[str]) -> list[CollectiveRow] | None:
    size = to_int(tokens[0])
    if size is None or size < 0:
        return None
    rows: list[CollectiveRow] = []
    for half, in_place in ((rest[0:4], False), (rest[4:8], True)):
        if len(half) < 4:
            continue
        time_us, algbw, busbw = (to_float(x) for x in half[:3])
        if time_us is None and algbw is None and busbw is None:
            continue
        rows.append(
            CollectiveRow(
                size_bytes=size,
                time_us=time_us,
                algbw_gbps=algbw,
                busbw_gbps=busbw,
                wrong=_wrong(half[3]),
                in_place=in_place,
            )
        )
    return rows or None


@record
class _Run:
    """What one nccl-tests run has shown so far, while its lines are read."""

    frag: Fragment
    op: str | None = None
    ranks: list[tuple[int, str, int, str, str]] = field(default_factory=list)
    rows: list[CollectiveRow] = field(default_factory=list)
    roots: set[str] = field(default_factory=set)
    redops: set[str] = field(default_factory=set)
    avg: float | None = None
    oob: tuple[int, str | None] | None = None
    n_gpus: int | None = None
    bad_rows: int = 0
    dropped_rows: int = 0
    _line: str | None = None
    _body: str = ""

    def body(self, line: str) -> str:
        """``comment_body(line)``, computed once per line for all the handlers."""
        if line is not self._line:
            self._line, self._body = line, comment_body(line)
        return self._body


# A line handler reads one line into the run: True (consumed), False (not its line) or None
# (the line ends the run); see pcidoc.collect.importers.walk.


def _on_nthread(run: _Run, line: str, index: int) -> bool | None:
    body = run.body(line)
    match = _NTHREAD_RE.match(body)
    if not match:
        return False
    if run.rows:
        return None
    run.n_gpus = int(match.group(2))
    return True


def _on_starting(run: _Run, line: str, index: int) -> bool | None:
    body = run.body(line)
    match = _STARTING_RE.match(body)
    if not match:
        return False
    if run.rows:
        return None
    name = match.group(1)
    run.op = run.op or (name[: -len("_perf")] if name.endswith("_perf") else name)
    return True


def _on_rank(run: _Run, line: str, index: int) -> bool | None:
    match = rank_line(line)
    if not match:
        return False
    run.ranks.append(
        (
            int(match.group("rank")),
            match.group("host"),
            int(match.group("device")),
            match.group("bus"),
            match.group("name").strip(),
        )
    )
    return True


def _looks_like_row(line: str) -> bool:
    """A cheap test for a result row, for the rows past :data:`MAX_ROWS`."""
    tokens = line.split(None, _MAX_ROW_TOKENS)
    return 7 <= len(tokens) <= _MAX_ROW_TOKENS and tokens[0].isdigit() and tokens[1].isdigit()


def _on_row(run: _Run, line: str, index: int) -> bool | None:
    if len(run.rows) >= MAX_ROWS:
        if not _looks_like_row(line):
            return False
        run.dropped_rows += 1
        return True
    tokens = line.split(None, _MAX_ROW_TOKENS)
    layout = row_layout(tokens)
    if layout is None:
        return False
    parsed = _row(tokens, layout[2])
    if parsed:
        run.rows.extend(parsed)
        if layout[0]:
            run.redops.add(layout[0])
        if layout[1] is not None:
            run.roots.add(layout[1])
    else:
        run.bad_rows += 1
    return True


def _on_totals(run: _Run, line: str, index: int) -> bool | None:
    body = run.body(line)
    match = _AVG_RE.match(body)
    if match:
        run.avg = to_float(match.group(1))
        return True
    match = _OOB_RE.match(body)
    if match:
        run.oob = (int(match.group(1)), match.group(2))
        return True
    return False


def _on_other(run: _Run, line: str, index: int) -> bool | None:
    body = run.body(line)
    commented = line.lstrip().startswith("#")
    info = "NCCL" in line and _INFO_RE.match(line)
    version = _VERSION_RE.search(line) if (commented or info) else None
    if version:
        if version.group(1):
            run.frag.tool_versions["nccl-tests"] = version.group(1)
        if version.group(2):
            run.frag.tool_versions["nccl"] = version.group(2)
        return True
    return bool(commented or info or _USING_RE.match(body) or _HEADER_RE.match(body))


_HANDLERS = (_on_nthread, _on_starting, _on_rank, _on_row, _on_totals, _on_other)


def _op_of(run: _Run) -> str:
    if run.op is not None:
        return run.op
    if "none" in run.redops or (run.roots and run.roots != {"-1"}):
        run.frag.warn(
            "nccl-tests: the collective is not shown (no *_perf command) and the rows "
            "(redop/root) rule out all_reduce; stored as 'unknown'"
        )
        return "unknown"
    run.frag.warn("nccl-tests: the collective is not shown (no *_perf command); assumed all_reduce")
    return "all_reduce"


def _gpus_of(run: _Run, hosts: list[str]) -> list[int]:
    """GPUs of a single-node run from its rank lines (with bus ids and names)."""
    if not run.ranks or len(hosts) != 1:
        return []
    by_device: dict[int, tuple[str, str]] = {}
    clash = False
    for _, _, device, bus, name in run.ranks:
        if device in by_device and by_device[device][0] != bus:
            clash = True
        by_device.setdefault(device, (bus, name))
    if clash:
        run.frag.warn(
            "nccl-tests: several ranks report the same device number with different bus "
            "ids (per-process CUDA_VISIBLE_DEVICES); GPUs not taken from the rank lines"
        )
        return []
    for device, (bus, name) in by_device.items():
        part = run.frag.gpu(device)
        if name:
            part.fields["name"] = name
        bus_id = normalize_bus_id(bus) if ":" in bus else None
        if bus_id:
            part.fields["bus_id"] = bus_id
    return sorted(by_device)


def _correct(run: _Run) -> bool | None:
    correct: bool | None = None
    wrongs = [r.wrong for r in run.rows if r.wrong is not None]
    if wrongs:
        correct = all(w == 0 for w in wrongs)
    if run.oob is not None:
        correct = (correct is not False) and run.oob[0] == 0
    return correct


def _summary(run: _Run, m: CollectiveMeasurement, hosts: list[str]) -> str:
    peak = m.peak_busbw()
    text = f"nccl-tests {m.op}: {len({r.size_bytes for r in run.rows})} sizes"
    if peak is not None:
        text += f", peak busbw {peak.busbw_gbps:g} GB/s"
    wrong = sum(r.wrong or 0 for r in run.rows)
    if wrong:
        text += f", {wrong} wrong result(s)"
    if m.ranks:
        text += f", {m.ranks} ranks on {len(hosts)} node(s)"
    elif run.n_gpus is not None:
        text += f", nGpus {run.n_gpus} per process"
    if m.gpus:
        text += f" ({label_span([f'GPU{g}' for g in m.gpus])})"
    return text


def parse(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Parse one nccl-tests run."""
    run = _Run(frag=Fragment(FORMAT))
    match = _OP_RE.search(ctx.command) if ctx.command else None
    if match:
        run.op = match.group(1)
    walker = Walker(blank_lines=2)
    index = walker.walk(doc, start, run, _HANDLERS)
    op = _op_of(run)
    frag = run.frag
    if run.bad_rows:
        frag.warn(f"nccl-tests: {run.bad_rows} table row(s) could not be read")
    note = walker.bad_values_note("nccl-tests")
    if note:
        frag.warn(note)
    if run.dropped_rows:
        frag.warn(
            f"nccl-tests: more than {MAX_ROWS:,} result rows in one run; "
            f"{run.dropped_rows:,} further row(s) counted, not read"
        )
    hosts = list(dict.fromkeys(r[1] for r in run.ranks))
    measurement = CollectiveMeasurement(
        op=op,
        backend="nccl",
        ranks=len(run.ranks) or None,
        nodes=len(hosts) or None,
        gpus=_gpus_of(run, hosts),
        rows=run.rows,
        avg_busbw_gbps=run.avg,
        correct=_correct(run),
        tool="nccl-tests",
        source=ctx.source,
    )
    if not run.rows:
        frag.warn("nccl-tests: no result rows in the paste")
    else:
        frag.collectives.append(measurement)
    frag.read.append(_summary(run, measurement, hosts))
    return frag, index

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

from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.text import Doc, label_span, lazy, normalize_bus_id, to_float, to_int
from pcidoc.model.measurements import CollectiveMeasurement, CollectiveRow

FORMAT = "nccl-tests"
DESCRIPTION = "nccl-tests *_perf tables (collective algbw/busbw per message size)"

_NTHREAD_RE = lazy(r"^\s*#?\s*nThread\s+(\d+)\s+nGpus\s+(\d+)", re.IGNORECASE)
_USING_RE = lazy(r"^\s*#?\s*Using devices\s*$", re.IGNORECASE)
_RANK_RE = lazy(
    r"^\s*#?\s*Rank\s+(\d+)\s+Group\s+(\d+)\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+"
    r"\[([^\]]*)\]\s*(.*)$",
    re.IGNORECASE,
)
_HEADER_RE = lazy(r"^\s*#?\s*(?:size\s+count\s+type|\(B\)\s+\(elements\)|out-of-place)")
_AVG_RE = lazy(r"^\s*#?\s*Avg bus bandwidth\s*:\s*([\d.]+)", re.IGNORECASE)
_OOB_RE = lazy(r"^\s*#?\s*Out of bounds values\s*:\s*(\d+)\s*(\w+)?", re.IGNORECASE)
_STARTING_RE = lazy(r"^\s*#?\s*Collective test starting:\s*(\w+?)(?:_perf)?\s*$")
_VERSION_RE = lazy(r"nccl-tests version\s+(\S+)|NCCL version\s+([\d.]+\S*)")
_OP_RE = lazy(r"(?:^|[/\s])([a-z]+(?:_[a-z]+)*)_perf(?:_mpi)?\b")
_TYPE_RE = lazy(r"^[a-z][a-z0-9_]*$")
_REDOPS = {"sum", "prod", "max", "min", "avg", "none", "premulsum", "mulsum"}
_INFO_RE = lazy(r"^\s*\S+:\d+:\d+\s+\[\d+\]\s+NCCL\s+(?:INFO|WARN)")
_COMMENT_RE = lazy(r"^\s*#")


def _row_tokens(line: str) -> list[str] | None:
    tokens = line.split()
    if len(tokens) not in (8, 9, 12, 13) or tokens[0].startswith("#"):
        return None
    if to_int(tokens[0]) is None or to_int(tokens[1]) is None:
        return None
    if not _TYPE_RE.match(tokens[2]) or tokens[3] not in _REDOPS:
        return None
    return tokens


def detect(doc: Doc, index: int, ctx: Context) -> bool:
    """True at the ``nThread`` line, ``Using devices``, a rank line, the table header, a data
    row, or nccl-tests' ``Collective test starting`` line."""
    line = doc.lines[index]
    return bool(
        _NTHREAD_RE.match(line)
        or _USING_RE.match(line)
        or _RANK_RE.match(line)
        or _STARTING_RE.match(line)
        or (_HEADER_RE.match(line) and "#" in line)
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


def _row(tokens: list[str]) -> list[CollectiveRow] | None:
    size = to_int(tokens[0])
    if size is None or size < 0:
        return None
    rest = tokens[4:]
    if len(rest) in (5, 9):
        rest = rest[1:]
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


def parse(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Parse one nccl-tests run."""
    frag = Fragment(FORMAT)
    op: str | None = None
    if ctx.command:
        match = _OP_RE.search(ctx.command)
        if match:
            op = match.group(1)
    ranks: list[tuple[int, str, int, str, str]] = []
    rows: list[CollectiveRow] = []
    roots: set[str] = set()
    redops: set[str] = set()
    avg: float | None = None
    oob: tuple[int, str | None] | None = None
    n_gpus: int | None = None
    bad_rows = 0
    index = start
    blank = 0
    while index < len(doc.lines):
        line = doc.lines[index]
        if not line.strip():
            blank += 1
            if blank > 2:
                break
            index += 1
            continue
        if doc.is_command(index):
            break
        blank = 0
        match = _NTHREAD_RE.match(line)
        if match:
            if rows:
                break
            n_gpus = int(match.group(2))
            index += 1
            continue
        match = _STARTING_RE.match(line)
        if match:
            if rows:
                break
            op = op or match.group(1)
            index += 1
            continue
        match = _RANK_RE.match(line)
        if match:
            ranks.append(
                (
                    int(match.group(1)),
                    match.group(4),
                    int(match.group(5)),
                    match.group(6),
                    match.group(7).strip(),
                )
            )
            index += 1
            continue
        tokens = _row_tokens(line)
        if tokens:
            parsed = _row(tokens)
            if parsed:
                rows.extend(parsed)
                redops.add(tokens[3])
                if len(tokens) in (9, 13):
                    roots.add(tokens[4])
            else:
                bad_rows += 1
            index += 1
            continue
        match = _AVG_RE.match(line)
        if match:
            avg = to_float(match.group(1))
            index += 1
            continue
        match = _OOB_RE.match(line)
        if match:
            oob = (int(match.group(1)), match.group(2))
            index += 1
            continue
        version = _VERSION_RE.search(line)
        if version and (_COMMENT_RE.match(line) or _INFO_RE.match(line)):
            if version.group(1):
                frag.tool_versions["nccl-tests"] = version.group(1)
            if version.group(2):
                frag.tool_versions["nccl"] = version.group(2)
            index += 1
            continue
        if _COMMENT_RE.match(line) or _USING_RE.match(line) or _INFO_RE.match(line):
            index += 1
            continue
        if _HEADER_RE.match(line):
            index += 1
            continue
        break

    if op is None:
        if "none" in redops or (roots and roots != {"-1"}):
            op = "unknown"
            frag.warn(
                "nccl-tests: the collective is not shown (no *_perf command) and the rows "
                "(redop/root) rule out all_reduce; stored as 'unknown'"
            )
        else:
            op = "all_reduce"
            frag.warn(
                "nccl-tests: the collective is not shown (no *_perf command); assumed all_reduce"
            )
    if bad_rows:
        frag.warn(f"nccl-tests: {bad_rows} table row(s) could not be read")
    hosts = list(dict.fromkeys(r[1] for r in ranks))
    gpus: list[int] = []
    if ranks and len(hosts) == 1:
        by_device: dict[int, tuple[str, str]] = {}
        clash = False
        for _, _, device, bus, name in ranks:
            if device in by_device and by_device[device][0] != bus:
                clash = True
            by_device.setdefault(device, (bus, name))
        if clash:
            frag.warn(
                "nccl-tests: several ranks report the same device number with different bus "
                "ids (per-process CUDA_VISIBLE_DEVICES); GPUs not taken from the rank lines"
            )
        else:
            gpus = sorted(by_device)
            for device, (bus, name) in by_device.items():
                part = frag.gpu(device)
                if name:
                    part.fields["name"] = name
                bus_id = normalize_bus_id(bus) if ":" in bus else None
                if bus_id:
                    part.fields["bus_id"] = bus_id
    correct: bool | None = None
    wrongs = [r.wrong for r in rows if r.wrong is not None]
    if wrongs:
        correct = all(w == 0 for w in wrongs)
    if oob is not None:
        correct = (correct is not False) and oob[0] == 0
    rank_count = len(ranks) or None
    measurement = CollectiveMeasurement(
        op=op,
        backend="nccl",
        ranks=rank_count,
        nodes=len(hosts) or None,
        gpus=gpus,
        rows=rows,
        avg_busbw_gbps=avg,
        correct=correct,
        tool="nccl-tests",
        source=ctx.source,
    )
    if not rows:
        frag.warn("nccl-tests: no result rows in the paste")
    else:
        frag.collectives.append(measurement)
    peak = measurement.peak_busbw()
    text = f"nccl-tests {op}: {len({r.size_bytes for r in rows})} sizes"
    if peak is not None:
        text += f", peak busbw {peak.busbw_gbps:g} GB/s"
    if rank_count:
        text += f", {rank_count} ranks on {len(hosts)} node(s)"
    elif n_gpus is not None:
        text += f", nGpus {n_gpus} per process"
    if gpus:
        text += f" ({label_span([f'GPU{g}' for g in gpus])})"
    frag.read.append(text)
    return frag, index

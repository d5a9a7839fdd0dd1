"""How an nccl-tests / rccl-tests run was launched: who ran where (``capture.evidence.test_runs``).

The ``nccl-tests`` importer reads the result table of a run as a measurement of this machine;
this reader keeps what the launch says across hosts, which a single-machine capture cannot hold:
every ``#  Rank r Group g Pid p on HOST device d [bus] NAME`` line (short ``[0x8d]``,
domain-qualified ``[0002:00:01]`` or rccl's ``[0000:05:00]`` bus ids), how many ``# nThread``
headers and rank lists the paste holds, and result rows whose busbw is 0 or that repeat another
header's table — the marks of processes that each ran as their own 1-rank job. rccl-tests is
recognised by its ``rccl-tests: Version`` line or AMD device names.

nccl-tests' JSON output (``-J FILE`` / ``--output_file``) is read by :func:`parse_json`.
"""

from __future__ import annotations

import re
from typing import Any

from pcidoc._record import field, record
from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.nccl_log import clean
from pcidoc.collect.importers.nccl_tests import (
    MAX_ROWS,
    header_line,
    rank_line,
    row_layout,
    using_line,
)
from pcidoc.collect.importers.text import (
    Doc,
    comment_body,
    json_float,
    json_int,
    lazy,
    to_float,
    to_int,
)
from pcidoc.collect.importers.walk import each_line
from pcidoc.model.evidence import PerfRank, PerfRun
from pcidoc.model.measurements import CollectiveMeasurement, CollectiveRow

FORMAT = "nccl-tests-launch"
FORMAT_JSON = "nccl-tests-json"

_RCCL_RE = lazy(r"rccl-tests\s*:\s*Version\s+(\S+)", re.IGNORECASE)  # on comment_body()
_NCCL_TESTS_RE = lazy(r"nccl-tests version\s+(\S+)", re.IGNORECASE)
_PERF_ARG_RE = lazy(r"(?<![a-z_])([a-z]+(?:_[a-z]+)*)_perf")

Row = tuple[int, "float | None", "float | None"]
"""``(size, busbw, algbw)`` of one out-of-place result."""


def _row(line: str) -> Row | None:
    tokens = line.split(None, 13)
    layout = row_layout(tokens)
    if layout is None:
        return None
    size = to_int(tokens[0])
    values = layout[2]
    if size is None:
        return None
    algbws = [
        v
        for v in (to_float(values[1]), to_float(values[5:6][0] if values[5:6] else None))
        if v is not None
    ]
    return size, to_float(values[2]), max(algbws) if algbws else None


def _count_rows(run: PerfRun, tables: list[list[Row]]) -> None:
    """Rows with busbw 0, rows that repeat another header's table, rows repeated size by size
    (processes of 1-rank jobs writing into one stream), and the largest algbw."""
    seen: set[tuple[Row, ...]] = set()
    for table in tables:
        key = tuple(table)
        if table and key in seen:
            run.duplicated_rows += len(table)
        seen.add(key)
        for pos, (size, busbw, algbw) in enumerate(table):
            run.rows += 1
            if size > 0 and busbw is not None and busbw == 0:
                run.zero_busbw_rows += 1
            if pos and table[pos - 1][0] == size:
                run.duplicated_rows += 1
            if algbw is not None and size > 0:
                run.max_algbw_gbps = max(run.max_algbw_gbps or 0.0, algbw)


def _rank(run: PerfRun, match: re.Match[str]) -> None:
    name = clean(match.group("name")).strip() or None
    if len(run.ranks) < 4096:
        run.ranks.append(
            PerfRank(
                rank=int(match.group("rank")),
                pid=int(match.group("pid")),
                host=match.group("host"),
                device=int(match.group("device")),
                bus=match.group("bus").strip(),
                name=name,
            )
        )
    if name and ("AMD" in name or "Instinct" in name or "Radeon" in name):
        run.tool = "rccl-tests"


def _version(run: PerfRun, line: str) -> bool:
    if "rccl-tests" in line:
        match = _RCCL_RE.match(comment_body(line))
        if match:
            run.tool = "rccl-tests"
            run.version = match.group(1)
            return True
    if "version" in line.lower() and line.lstrip().startswith("#"):
        match = _NCCL_TESTS_RE.search(line)
        if match:
            run.version = run.version or match.group(1)
            return True
    return False


def _launch_line(run: PerfRun, line: str, tables: list[list[Row]]) -> bool:
    """Fold a header, rank list or rank line into ``run``; True when it was one."""
    match = header_line(line)
    if match:
        run.headers += 1
        run.gpus_per_process = run.gpus_per_process or int(match.group(2))
        run.quote = run.quote or " ".join(line.split())[:300]
        tables.append([])
        return True
    if using_line(line):
        run.rank_lists += 1
        return True
    match = rank_line(line)
    if match:
        _rank(run, match)
        return True
    return False


def read(doc: Doc, ctx: Context) -> list[Fragment]:
    """The importer's face: the launch of ``doc`` as a fragment, when it says more than one
    single-node table does (ranks, several headers, repeated rows)."""
    run, warnings = extract(doc, ctx.file)
    ctx.warnings.extend(warnings)
    if run is None or not (run.ranks or run.headers > 1 or run.duplicated_rows):
        return []
    frag = Fragment(FORMAT)
    frag.evidence.test_runs.append(run)
    frag.read.append(summary(run))
    return [frag]


def json_fragment(data: Any, ctx: Context) -> Fragment:
    """The importer's face for nccl-tests' JSON output."""
    run, measurement = parse_json(data, ctx.file)
    fragment = Fragment(FORMAT_JSON)
    fragment.evidence.test_runs.append(run)
    if measurement is not None:
        fragment.collectives.append(measurement)
    fragment.read.append(summary(run) + f", {run.rows} result row(s)")
    return fragment


def extract(doc: Doc, source: str) -> tuple[PerfRun | None, list[str]]:
    """The launch of the nccl-tests/rccl-tests run(s) in ``doc``; None when no header, rank
    line or per-size duplicated row is seen. Result rows are counted up to
    :data:`~pcidoc.collect.importers.nccl_tests.MAX_ROWS` (a paste of a million rows is read in
    bounded memory)."""
    launch = _Launch(PerfRun(source=source))
    walker = each_line(doc, launch, _launch_or_row)
    run = launch.run
    _count_rows(run, launch.tables)
    if not launch.found and not (run.duplicated_rows and run.zero_busbw_rows):
        return None, []
    note = walker.bad_values_note(FORMAT)
    return run, [note] if note else []


@record
class _Launch:
    run: PerfRun
    found: bool = False
    tables: list[list[Row]] = field(default_factory=list)
    kept: int = 0


def _launch_or_row(launch: _Launch, line: str, index: int) -> bool:
    """One line of the text (the walker's handler): a launch line, a version, a result row."""
    if _launch_line(launch.run, line, launch.tables):
        launch.found = True
        return True
    if _version(launch.run, line) or launch.kept >= MAX_ROWS:
        return True
    row = _row(line)
    if row is not None:
        if not launch.tables:
            launch.tables.append([])
        launch.tables[-1].append(row)
        launch.kept += 1
    return True


def summary(run: PerfRun) -> str:
    """One line for ``origin.sources[].read``."""
    hosts = run.hosts
    text = f"{run.tool} launch: {len(run.ranks)} rank line(s) on {len(hosts)} host(s)"
    if run.headers > 1:
        text += f", {run.headers} headers"
    return text


def looks_like_json(data: Any) -> bool:
    """True for nccl-tests' JSON output (``-J``/``--output_file``): an object with ``results``
    and ``devices`` or ``config``."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("results"), list)
        and ("devices" in data or "config" in data)
    )


def _num(value: Any) -> float | None:
    return json_float(value)


def _json_ranks(run: PerfRun, devices: Any) -> None:
    """The ``devices`` of nccl-tests' JSON output as rank lines."""
    for pos, device in enumerate(devices[:4096] if isinstance(devices, list) else []):
        if not isinstance(device, dict):
            continue
        rank = json_int(device.get("rank", pos))
        host = device.get("hostname")
        if rank is None or not isinstance(host, str):
            continue
        name = device.get("device_info")
        run.ranks.append(
            PerfRank(
                rank=rank,
                host=host,
                pid=json_int(device.get("pid")),
                device=json_int(device.get("device")),
                bus=str(device.get("device_hex") or "") or None,
                name=name if isinstance(name, str) else None,
            )
        )
        if isinstance(name, str) and ("AMD" in name or "Instinct" in name):
            run.tool = "rccl-tests"


def _json_op(args: Any) -> str | None:
    """The collective, from the ``*_perf`` binary among the command-line arguments."""
    for arg in args if isinstance(args, list) else []:
        match = _PERF_ARG_RE.search(str(arg)[:4096])
        if match:
            return match.group(1)
    return None


def parse_json(data: dict[str, Any], source: str) -> tuple[PerfRun, CollectiveMeasurement | None]:
    """The launch and the results of nccl-tests' JSON output.

    Field names as nccl-tests writes them (``src/util.cu``): ``devices`` (``rank``, ``pid``,
    ``hostname``, ``device``, ``device_hex``, ``device_info``), ``config`` (``ngpus``...),
    ``results`` (``size``, ``type``, ``redop``, ``root``, ``out_of_place``/``in_place`` with
    ``time``, ``alg_bw``, ``bus_bw``, ``nwrong``), ``out_of_bounds`` and
    ``average_bus_bandwidth``. Unknown or mistyped fields are skipped.
    """
    run = PerfRun(source=source, headers=1, rank_lists=1)
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    ngpus = json_int(config.get("ngpus"))
    if ngpus is not None:
        run.gpus_per_process = ngpus
    _json_ranks(run, data.get("devices"))
    rows: list[CollectiveRow] = []
    op = _json_op(data.get("args"))
    for result in data.get("results") or []:
        if not isinstance(result, dict):
            continue
        size = json_int(result.get("size"))
        if size is None or size < 0:
            continue
        run.rows += 1
        for key, in_place in (("out_of_place", False), ("in_place", True)):
            half = result.get(key)
            if not isinstance(half, dict):
                continue
            busbw = _num(half.get("bus_bw"))
            wrong = _num(half.get("nwrong"))
            rows.append(
                CollectiveRow(
                    size_bytes=size,
                    time_us=_num(half.get("time", half.get("cpu_time"))),
                    algbw_gbps=_num(half.get("alg_bw")),
                    busbw_gbps=busbw,
                    wrong=int(wrong) if wrong is not None and wrong >= 0 else None,
                    in_place=in_place,
                )
            )
            if not in_place and size > 0 and busbw == 0:
                run.zero_busbw_rows += 1
    if not rows:
        return run, None
    avg = data.get("average_bus_bandwidth")
    oob = data.get("out_of_bounds")
    wrongs = [r.wrong for r in rows if r.wrong is not None]
    correct = all(w == 0 for w in wrongs) if wrongs else None
    if isinstance(oob, dict) and isinstance(oob.get("count"), int):
        correct = (correct is not False) and oob["count"] == 0
    hosts = run.hosts
    measurement = CollectiveMeasurement(
        op=op or "unknown",
        backend="nccl",
        ranks=len(run.ranks) or None,
        nodes=len(hosts) or None,
        rows=rows,
        avg_busbw_gbps=_num(avg.get("bandwidth")) if isinstance(avg, dict) else None,
        correct=correct,
        tool=run.tool,
        source=f"import:{source}",
    )
    return run, measurement

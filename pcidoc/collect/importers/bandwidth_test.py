"""cuda-samples ``bandwidthTest`` (readable and ``--csv`` output).

Each block ``<Host to Device | Device to Host | Device to Device> Bandwidth, N Device(s)`` +
``PINNED | PAGEABLE Memory Transfers`` + a ``Transfer Size (Bytes)  Bandwidth(GB/s)`` table
becomes one :class:`~pcidoc.model.measurements.TransferMeasurement` (a size sweep when the
table has several rows; the headline value is the largest size).

Units: current versions print GB/s computed as bytes / 10^9 / seconds, which is pcidoc's unit.
Versions before CUDA 10.1 printed MB/s computed as ``bytes * 2^10 / (ms * 2^20)``, i.e. units of
1.024 x 10^6 bytes per second; those values are converted exactly (x 1.024e-3 to GB/s).
Device-to-device values are kept as the tool reports them (it counts the read and the write).
With ``--device=all`` the tool sums the devices, which is not a per-GPU figure: such blocks are
skipped with a warning.
"""

from __future__ import annotations

import re

from pcidoc._record import field, record
from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.text import Doc, lazy, option_value, to_float, to_int
from pcidoc.collect.importers.walk import Walker
from pcidoc.model.measurements import SweepPoint, TransferMeasurement

FORMAT = "bandwidthTest"
DESCRIPTION = "cuda-samples bandwidthTest (host<->device pinned/pageable bandwidth)"

MB_S_TO_GBPS = 1.024e-3
"""Old bandwidthTest 'MB/s' (bytes * 1024 / (ms * 2^20) = 1.024e6 B/s) in GB/s (1e9 B/s)."""

_TITLE_RE = lazy(r"\[\s*(?:CUDA Bandwidth Test|bandwidthTest)\s*\]")
_RUNNING_RE = lazy(r"^\s*Running on\.*\s*$")
_DEVICE_RE = lazy(r"^\s*Device\s+(\d+):\s*(\S.*)$")
_MODE_RE = lazy(r"^\s*(Quick|Range|Shmoo)\s+Mode\s*$", re.IGNORECASE)
_BLOCK_RE = lazy(
    r"^\s*(Host to Device|Device to Host|Device to Device)\s+Bandwidth,\s*(\d+)\s+Device",
    re.IGNORECASE,
)
_MEMORY_RE = lazy(r"^\s*(PINNED|PAGEABLE)\s+Memory\s+Transfers", re.IGNORECASE)
_WC_RE = lazy(r"Write-Combined Memory Writes are Enabled", re.IGNORECASE)
_TABLE_RE = lazy(r"Transfer\s+Size\s*\(Bytes\)\s+Bandwidth\s*\((GB|MB)/s\)", re.IGNORECASE)
_ROW_RE = lazy(r"^\s*(\d+)\s+([\d.]+)\s*$")
_RESULT_RE = lazy(r"^\s*Result\s*=\s*(\w+)")
_CSV_RE = lazy(
    r"bandwidthTest-(?P<kind>H2D|D2H|D2D)(?:-(?P<mem>Paged|Pinned))?(?:-WriteCombined)?,\s*"
    r"Bandwidth\s*=\s*(?P<bw>[\d.]+)\s*(?P<unit>GB|MB)/s,.{0,200}?Size\s*=\s*(?P<size>\d+)\s*bytes,"
    r"\s*NumDevsUsed\s*=\s*(?P<devs>\d+)",
    re.IGNORECASE,
)
_NOISE_RE = lazy(r"^\s*(?:NOTE: The CUDA Samples|Results may vary)")
_DIRECTIONS = {"host to device": "h2d", "device to host": "d2h", "device to device": "d2d"}


def detect(doc: Doc, index: int, ctx: Context) -> bool:
    """True at the title, a ``... Bandwidth, N Device(s)`` block or a ``--csv`` result line."""
    line = doc.lines[index]
    if _TITLE_RE.search(line) or _BLOCK_RE.match(line) or _CSV_RE.search(line):
        return True
    if _DEVICE_RE.match(line) or _RUNNING_RE.match(line):
        # "Running on..." / " Device 0: NAME" count only when a mode or block line follows.
        for nxt in range(index + 1, min(index + 6, len(doc.lines))):
            following = doc.lines[nxt]
            if _MODE_RE.match(following) or _BLOCK_RE.match(following):
                return True
    return False


def _placement_context(command: str | None) -> tuple[str | None, int | None]:
    """The numactl part of the command and the single NUMA node memory is bound to."""
    if not command:
        return None, None
    tokens = command.split()
    if "numactl" not in tokens:
        return None, None
    kept: list[str] = []
    for token in tokens[tokens.index("numactl") :]:
        if token.endswith("bandwidthTest"):
            break
        kept.append(token)
    context = " ".join(kept)
    membind = option_value(context, "-m", "--membind")
    cpubind = option_value(context, "-N", "--cpunodebind")
    node = to_int(membind) if membind else None
    if node is not None and cpubind is not None and to_int(cpubind) != node:
        node = None
    if "--interleave" in context or "-i" in context.split():
        node = None
    return context, node


class _Table:
    def __init__(self, direction: str, devices: int) -> None:
        self.direction = direction
        self.devices = devices
        self.memory: str | None = None
        self.unit: str = "GB"
        self.write_combined = False
        self.rows: list[tuple[int, float]] = []


@record
class _Run:
    """One bandwidthTest run being read."""

    frag: Fragment
    devices: dict[int, str] = field(default_factory=dict)
    tables: list[_Table] = field(default_factory=list)
    current: _Table | None = None
    csv: list[_Table] = field(default_factory=list)
    seen_title: bool = False


def _on_title(run: _Run, line: str, index: int) -> bool | None:
    if not _TITLE_RE.search(line):
        return False
    if run.seen_title or run.tables or run.csv:
        return None  # the title of the next run
    run.seen_title = True
    return True


def _on_block(run: _Run, line: str, index: int) -> bool:
    match = _BLOCK_RE.match(line)
    if match:
        direction = _DIRECTIONS[" ".join(match.group(1).lower().split())]
        run.current = _Table(direction, int(match.group(2)))
        run.tables.append(run.current)
    return match is not None


def _on_table_line(run: _Run, line: str, index: int) -> bool:
    """The memory kind, write-combining, the table's unit and its rows, in a block."""
    table = run.current
    if table is None:
        return False
    match = _MEMORY_RE.match(line)
    if match:
        table.memory = match.group(1).lower()
        return True
    if _WC_RE.search(line):
        table.write_combined = True
        return True
    match = _TABLE_RE.search(line)
    if match:
        table.unit = match.group(1).upper()
        return True
    match = _ROW_RE.match(line)
    if match:
        size, value = to_int(match.group(1)), to_float(match.group(2))
        if size is not None and value is not None:
            table.rows.append((size, value))
    return match is not None


def _on_csv(run: _Run, line: str, index: int) -> bool:
    match = _CSV_RE.search(line)
    if not match:
        return False
    value, size = to_float(match.group("bw")), to_int(match.group("size"))
    devices = to_int(match.group("devs"))
    if value is None or size is None or devices is None:
        raise ValueError("a value out of range")  # the walker skips the line, with a warning
    table = _Table({"H2D": "h2d", "D2H": "d2h", "D2D": "d2d"}[match.group("kind").upper()], devices)
    table.memory = "pageable" if (match.group("mem") or "").lower() == "paged" else "pinned"
    table.unit = match.group("unit").upper()
    table.rows.append((size, value))
    run.csv.append(table)
    return True


def _on_other(run: _Run, line: str, index: int) -> bool:
    """Device lines (before the first block), banners, notes and the result line."""
    match = _DEVICE_RE.match(line)
    if match and not run.tables:
        run.devices[int(match.group(1))] = match.group(2).strip()
        return True
    if _RUNNING_RE.match(line) or _MODE_RE.match(line) or _NOISE_RE.match(line):
        return True
    match = _RESULT_RE.match(line)
    if match and match.group(1).upper() not in ("PASS", "PASSED"):
        run.frag.warn(f"bandwidthTest: result {match.group(1)} (kept what was printed)")
    return match is not None


_HANDLERS = (_on_title, _on_block, _on_table_line, _on_csv, _on_other)


def parse(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Parse one bandwidthTest run."""
    run = _Run(Fragment(FORMAT))
    walker = Walker(blank_lines=None)
    index = walker.walk(doc, start, run, _HANDLERS)
    frag = run.frag
    note = walker.bad_values_note("bandwidthTest")
    if note:
        frag.warn(note)
    context, bind_node = _placement_context(ctx.command)
    gpu = _device_index(frag, run.devices, option_value(ctx.command, "--device", "-device"))
    if gpu is not None:
        part = frag.gpu(gpu)
        if gpu in run.devices:
            part.fields["name"] = run.devices[gpu]
    memory_option = option_value(ctx.command, "--memory", "-memory")
    counts: dict[str, int] = {}
    for table in run.tables + run.csv:
        _table_measurement(frag, table, gpu, memory_option, context, bind_node, ctx, counts)
    converted = counts.pop("old MB/s values converted", 0)
    summary = ", ".join(f"{n} {what}" for what, n in counts.items())
    if converted:
        summary += " (old-style MB/s converted to GB/s)"
    frag.read.append(
        f"bandwidthTest: {summary or 'no results'}"
        + (f" on GPU{gpu}" if gpu is not None else "")
        + (f" under {context}" if context else "")
    )
    return frag, index


def _device_index(frag: Fragment, devices: dict[int, str], option: str | None) -> int | None:
    if len(devices) == 1:
        return next(iter(devices))
    if len(devices) > 1:
        return None
    if option is not None:
        value = to_int(option)
        if value is not None:
            return value
        return None
    frag.warn("bandwidthTest: no 'Device N:' line in the paste; assumed GPU0 (the tool's default)")
    return 0


def _table_measurement(
    frag: Fragment,
    table: _Table,
    gpu: int | None,
    memory_option: str | None,
    context: str | None,
    bind_node: int | None,
    ctx: Context,
    counts: dict[str, int],
) -> None:
    label = {"h2d": "host to device", "d2h": "device to host", "d2d": "device to device"}
    what = label[table.direction]
    if table.devices > 1:
        frag.warn(
            f"bandwidthTest: {what} result is the sum over {table.devices} devices "
            "(--device=all), not a per-GPU figure; skipped"
        )
        return
    if gpu is None:
        frag.warn(f"bandwidthTest: {what} result of an unknown device; skipped")
        return
    if not table.rows:
        frag.warn(f"bandwidthTest: {what} block has no result row; skipped")
        return
    scale = MB_S_TO_GBPS if table.unit == "MB" else 1.0
    if table.direction == "d2d":
        memory = "device"
    else:
        memory = table.memory or (memory_option or "").lower() or None
        if memory not in ("pinned", "pageable"):
            frag.warn(f"bandwidthTest: {what} block does not say PINNED or PAGEABLE; skipped")
            return
        option = (memory_option or "").lower()
        if option in ("pinned", "pageable") and table.memory and option != table.memory:
            frag.warn(
                f"bandwidthTest: command says --memory={memory_option} but the output "
                f"says {table.memory.upper()}; kept the output's"
            )
    points = [
        SweepPoint(size_bytes=size, bandwidth_gbps=value * scale) for size, value in table.rows
    ]
    largest = max(points, key=lambda p: p.size_bytes)
    notes = [context] if context else []
    if table.write_combined:
        notes.append("write-combined pinned memory")
    measurement = TransferMeasurement(
        gpu=gpu,
        direction=table.direction,  # type: ignore[arg-type]
        memory=memory,  # type: ignore[arg-type]
        size_bytes=largest.size_bytes,
        bandwidth_gbps=largest.bandwidth_gbps,
        sweep=points if len(points) > 1 else [],
        method="bandwidthTest",
        context="; ".join(notes) or None,
        source=ctx.source,
    )
    frag.transfers.append(measurement)
    if bind_node is not None and table.direction != "d2d":
        frag.bindings.append((measurement, bind_node))
    key = "device-to-device" if table.direction == "d2d" else f"{memory} {table.direction.upper()}"
    counts[key] = counts.get(key, 0) + 1
    if table.unit == "MB":
        counts["old MB/s values converted"] = 1

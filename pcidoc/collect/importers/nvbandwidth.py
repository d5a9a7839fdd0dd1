"""``nvbandwidth`` text output.

Reads the version lines (tool, CUDA runtime/driver, driver), the device list (index, name, bus
id) and every ``Running <test>.`` block with its matrix. Host<->device copy tests become
:class:`~pcidoc.model.measurements.TransferMeasurement` (memory ``pinned``: nvbandwidth allocates
pinned host buffers; method ``nvbandwidth-ce`` / ``nvbandwidth-sm``), device-to-device tests
P2P bandwidth matrices (``p2p="enabled"``), ``device_to_device_latency_sm`` a latency matrix
(converted from ns to us). Tests run on all GPUs at once (``all_to_host``, ``host_to_all``,
``all_to_one``...) have no per-GPU equivalent in pcidoc's model and are only listed.
"""

from __future__ import annotations

import re

from pcidoc._record import field, record
from pcidoc.collect.importers.fragment import (
    MAX_MEASURED_DEVICES,
    Context,
    Fragment,
    too_many,
)
from pcidoc.collect.importers.text import (
    Doc,
    lazy,
    normalize_bus_id,
    option_value,
    to_float,
    to_int,
)
from pcidoc.collect.importers.walk import Walker
from pcidoc.model.measurements import P2PMatrixMeasurement, TransferMeasurement

FORMAT = "nvbandwidth"
DESCRIPTION = "nvbandwidth (CE/SM copy bandwidth host<->device and GPU<->GPU, latency)"

_VERSION_RE = lazy(r"^\s*nvbandwidth\s+Version:\s*(\S+)", re.IGNORECASE)
_BUILT_RE = lazy(r"^\s*Built from Git version", re.IGNORECASE)
_CUDA_RE = lazy(r"^\s*CUDA\s+(Runtime|Driver)\s+Version:\s*(\d+)\s*$", re.IGNORECASE)
_DRIVER_RE = lazy(r"^\s*Driver\s+Version:\s*([\d.]+)\s*$", re.IGNORECASE)
_DEVICE_RE = lazy(
    r"^\s*Device\s+(\d+):(.*)\(([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}"
    r"(?:\.[0-7])?)\)\s*$"
)
_RUNNING_RE = lazy(r"^\s*Running\s+([a-z0-9_]+)\.?\s*$")
_TITLE_RE = lazy(
    r"^(?P<what>.*?)\b(?P<row>CPU|GPU)\(row\)\s*(?P<arrow><->|->|<-)\s*"
    r"(?P<col>CPU|GPU)\(column\).{0,300}?\((?P<unit>GB/s|ns|us)\)\s*$",
    re.IGNORECASE,
)
_HEADER_RE = lazy(r"^\s*\d+(?:\s+\d+)*\s*$")  # alignment may be lost in a paste
_ROW_RE = lazy(r"^\s*(\d+)((?:\s+(?:[-+\d.eE]+|N/A))+)\s*$")
_SUM_RE = lazy(r"^\s*SUM\s+([a-z0-9_]+)\s+([\d.]+)\s*$")
_WAIVED_RE = lazy(r"\bwaived\b", re.IGNORECASE)
_NOISE_RE = lazy(
    r"^\s*(?:NOTE: The reported results|Performance can vary|nvbandwidth|Using)", re.IGNORECASE
)
_H2D_RE = lazy(r"^(host_to_device|device_to_host)(_bidirectional)?_memcpy_(ce|sm)$")
_D2D_RE = lazy(r"^device_to_device(_bidirectional)?_memcpy_(read|write)_(ce|sm)$")
_D2D_LATENCY = "device_to_device_latency_sm"


def detect(doc: Doc, index: int, ctx: Context) -> bool:
    """True at the version lines, a ``Device N: NAME (bus id)`` line, a ``Running <test>.`` line
    or a matrix title."""
    line = doc.lines[index]
    return bool(
        _VERSION_RE.match(line)
        or _CUDA_RE.match(line)
        or _DEVICE_RE.match(line)
        or (_RUNNING_RE.match(line) and "_" in line)
        or (_TITLE_RE.match(line) and ("memcpy" in line.lower() or "latency" in line.lower()))
    )


class _Test:
    def __init__(self, name: str) -> None:
        self.name = name
        self.title: re.Match[str] | None = None
        self.columns: list[int] = []
        self.rows: dict[int, list[float | None]] = {}
        self.total: float | None = None
        self.waived = False


def _cuda_version(value: str) -> str | None:
    number = to_int(value)
    if number is None or number <= 0:
        return None
    return f"{number // 1000}.{(number % 1000) // 10}"


@record
class _Run:
    """One nvbandwidth run being read."""

    frag: Fragment
    devices: dict[int, tuple[str, str | None]] = field(default_factory=dict)
    tests: list[_Test] = field(default_factory=list)
    current: _Test | None = None


def _on_versions(run: _Run, line: str, index: int) -> bool | None:
    """The tool, CUDA runtime/driver and driver versions (a second tool version starts the
    next run)."""
    frag = run.frag
    match = _VERSION_RE.match(line)
    if match:
        if run.tests:
            return None
        frag.tool_versions["nvbandwidth"] = match.group(1)
        return True
    match = _CUDA_RE.match(line)
    if match:
        version = _cuda_version(match.group(2))
        if version and match.group(1).lower() == "driver":
            frag.driver["cuda_driver_version"] = version
        elif version:
            frag.tool_versions["cuda-runtime"] = version
        return True
    match = _DRIVER_RE.match(line)
    if match:
        frag.driver["driver_version"] = match.group(1)
    return match is not None


def _on_device(run: _Run, line: str, index: int) -> bool:
    match = _DEVICE_RE.match(line)
    if match:
        run.devices[int(match.group(1))] = (
            match.group(2).strip(),
            normalize_bus_id(match.group(3)),
        )
    return match is not None


def _on_test(run: _Run, line: str, index: int) -> bool:
    """``Running <test>.`` and the matrix title after it."""
    match = _RUNNING_RE.match(line)
    if match:
        run.current = _Test(match.group(1))
        run.tests.append(run.current)
        return True
    title = _TITLE_RE.match(line)
    if title is None:
        return False
    if run.current is None:
        run.current = _Test("unknown")
        run.tests.append(run.current)
    run.current.title = title
    return True


def _on_matrix(run: _Run, line: str, index: int) -> bool:
    """The matrix's header and rows."""
    test = run.current
    if test is None:
        return False
    if test.title is not None and not test.columns and _HEADER_RE.match(line):
        test.columns = [int(x) for x in line.split()[:MAX_MEASURED_DEVICES]]
        return True
    match = _ROW_RE.match(line)
    if match is None or not test.columns:
        return False
    values = [to_float(x) for x in match.group(2).split()[:MAX_MEASURED_DEVICES]]
    if not too_many(run.frag, len(test.rows), MAX_MEASURED_DEVICES, "nvbandwidth matrix"):
        test.rows.setdefault(int(match.group(1)), values)
    return True


def _on_other(run: _Run, line: str, index: int) -> bool:
    """``SUM <test> <value>``, waived tests, the build line and the tool's notes."""
    match = _SUM_RE.match(line)
    if match:
        _sum_line(run.tests, match.group(1), to_float(match.group(2)))
        return True
    if _WAIVED_RE.search(line):
        if run.current is not None:
            run.current.waived = True
        return True
    return bool(_BUILT_RE.match(line) or _NOISE_RE.match(line))


_HANDLERS = (_on_versions, _on_device, _on_test, _on_matrix, _on_other)


def parse(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Parse one nvbandwidth run."""
    run = _Run(Fragment(FORMAT))
    walker = Walker(blank_lines=3)
    index = walker.walk(doc, start, run, _HANDLERS)
    frag = run.frag
    note = walker.bad_values_note("nvbandwidth")
    if note:
        frag.warn(note)
    for gpu_index, (name, bus_id) in run.devices.items():
        part = frag.gpu(gpu_index)
        part.fields["name"] = name
        if bus_id:
            part.fields["bus_id"] = bus_id
    if run.devices:
        frag.gpu_count = max(run.devices) + 1
    buffer = to_int(option_value(ctx.command, "-b", "--bufferSize"))
    size_bytes = buffer * 2**20 if buffer else None
    read = [_test(frag, test, size_bytes, ctx) for test in run.tests]
    version = frag.tool_versions.get("nvbandwidth")
    head = f"nvbandwidth {version}" if version else "nvbandwidth"
    frag.read.append(f"{head}: " + ("; ".join(read) if read else "no test results"))
    return frag, index


def _sum_line(tests: list[_Test], name: str, total: float | None) -> None:
    """Attach a ``SUM <test> <value>`` line to its test; a matrix pasted without its
    ``Running <test>.`` banner takes its name from the SUM line that follows it."""
    named = [t for t in tests if t.name == name]
    if not named and tests and tests[-1].name == "unknown":
        tests[-1].name = name
        named = [tests[-1]]
    for test in named:
        test.total = total


def _values_per_gpu(test: _Test) -> dict[int, float | None] | None:
    """Values of a CPU x GPU matrix keyed by GPU index, or ``None`` when not that shape."""
    title = test.title
    if title is None:
        return None
    row_axis, col_axis = title.group("row").upper(), title.group("col").upper()
    if row_axis == "CPU" and col_axis == "GPU":
        if not test.rows:
            return {}
        first = test.rows[min(test.rows)]
        return {gpu: first[k] if k < len(first) else None for k, gpu in enumerate(test.columns)}
    if row_axis == "GPU" and col_axis == "CPU":
        return {gpu: (values[0] if values else None) for gpu, values in test.rows.items()}
    return None


def _matrix(test: _Test) -> tuple[list[int], list[list[float | None]]]:
    gpus = sorted(set(test.columns) | set(test.rows))
    size = len(gpus)
    values: list[list[float | None]] = [[None] * size for _ in range(size)]
    position = {gpu: i for i, gpu in enumerate(gpus)}
    for row, cells in test.rows.items():
        for k, col in enumerate(test.columns):
            if k < len(cells):
                values[position[row]][position[col]] = cells[k]
    if test.title is not None and test.title.group("arrow") == "<-":
        values = [list(column) for column in zip(*values, strict=True)]
    return gpus, values


def _test(frag: Fragment, test: _Test, size_bytes: int | None, ctx: Context) -> str:
    name = test.name
    if test.waived:
        return f"{name} waived"
    if test.title is None or not test.rows:
        frag.warn(f"nvbandwidth: {name} has no result matrix in the paste")
        return f"{name} (no matrix)"
    unit = test.title.group("unit")
    h2d = _H2D_RE.match(name)
    if h2d:
        per_gpu = _values_per_gpu(test)
        if per_gpu is None:
            frag.warn(f"nvbandwidth: {name} matrix is not CPU x GPU; skipped")
            return f"{name} (skipped)"
        direction = "h2d" if h2d.group(1) == "host_to_device" else "d2h"
        count = 0
        for gpu, value in per_gpu.items():
            if value is None:
                continue
            frag.transfers.append(
                TransferMeasurement(
                    gpu=gpu,
                    direction=direction,  # type: ignore[arg-type]
                    memory="pinned",
                    bidirectional=bool(h2d.group(2)),
                    size_bytes=size_bytes,
                    bandwidth_gbps=value,
                    method=f"nvbandwidth-{h2d.group(3)}",
                    source=ctx.source,
                )
            )
            frag.gpu(gpu)
            count += 1
        return f"{name} {count} GPU(s)"
    d2d = _D2D_RE.match(name)
    if d2d or name == _D2D_LATENCY:
        gpus, values = _matrix(test)
        latency = name == _D2D_LATENCY
        if latency and unit == "ns":
            values = [[None if v is None else v / 1000.0 for v in row] for row in values]
        frag.p2p.append(
            P2PMatrixMeasurement(
                kind="latency" if latency else "bandwidth",
                bidirectional=bool(d2d and d2d.group(1)),
                p2p="enabled",
                access=None if latency or not d2d else d2d.group(2),  # type: ignore[arg-type]
                method="sm" if latency or not d2d else d2d.group(3),  # type: ignore[arg-type]
                latency_side="gpu" if latency else None,
                unit="us" if latency else "GB/s",
                gpus=gpus,
                values=values,
                size_bytes=None if latency else size_bytes,
                source=ctx.source,
            )
        )
        for gpu in gpus:
            frag.gpu(gpu)
        return f"{name} {len(gpus)}x{len(gpus)}"
    if name == "unknown":
        frag.warn(
            "nvbandwidth: a result matrix without its test name (no `Running <test>.` line and "
            f"no SUM line): '{test.title.group(0).strip()[:60]}' skipped"
        )
        return "unnamed matrix (skipped)"
    return f"{name} (not imported: no per-GPU equivalent)"

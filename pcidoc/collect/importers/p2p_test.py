"""cuda-samples ``p2pBandwidthLatencyTest``.

Reads the device list (index, name, bus id), ``Device=i CAN/CANNOT Access Peer Device=j``, the
connectivity matrix and every bandwidth/latency matrix: uni-/bidirectional, P2P disabled/enabled,
``(P2P Writes)``/``(P2P Reads)``, latency measured on the GPU and from the CPU. The copy engine
is the default; ``--sm_copy`` in the command or a note before the output means SM copies.
Truncated matrices keep their complete rows.
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
from pcidoc.collect.importers.text import Doc, lazy, to_float
from pcidoc.collect.importers.walk import Walker
from pcidoc.model.measurements import P2PMatrixMeasurement

FORMAT = "p2pBandwidthLatencyTest"
DESCRIPTION = "cuda-samples p2pBandwidthLatencyTest (P2P bandwidth and latency matrices)"

_TITLE_RE = lazy(r"\[\s*P2P \(Peer-to-Peer\) GPU Bandwidth Latency Test\s*\]")
_DEVICE_RE = lazy(
    r"^\s*Device:\s*(\d+),\s*(\S.*?),\s*pciBusID:\s*([0-9A-Fa-f]+),\s*pciDeviceID:\s*([0-9A-Fa-f]+)"
    r"(?:,\s*pciDomainID:\s*([0-9A-Fa-f]+))?"
)
_PEER_RE = lazy(r"^\s*Device=(\d+)\s+(CAN|CANNOT)\s+Access\s+Peer\s+Device=(\d+)")
_CONNECTIVITY_RE = lazy(r"^\s*P2P Connectivity Matrix\s*$")
_MATRIX_RE = lazy(
    r"^\s*(?:(?P<dir>Unidirectional|Bidirectional)\s+)?P2P=(?P<p2p>Disabled|Enabled)\s+"
    r"(?P<kind>Bandwidth|Latency)\s*(?:\(P2P (?P<access>Writes|Reads)\)\s*)?"
    r"Matrix\s*\((?P<unit>GB/s|us)\)\s*$",
    re.IGNORECASE,
)
_HEADER_RE = lazy(r"^\s*(?P<side>D\\D|GPU|CPU)((?:\s+\d+)+)\s*$")
_ROW_RE = lazy(r"^\s*(\d+)((?:\s+\S+)+)\s*$")
_NOISE_RE = lazy(
    r"^\s*(?:\*\*\*NOTE:|So you can see lesser Bandwidth|NOTE: The CUDA Samples|"
    r"Results may vary)",
)


def detect(doc: Doc, index: int, ctx: Context) -> bool:
    """True at the test's title, a device line, a peer-access line or a matrix title."""
    line = doc.lines[index]
    return bool(
        _TITLE_RE.search(line)
        or _DEVICE_RE.match(line)
        or _PEER_RE.match(line)
        or _CONNECTIVITY_RE.match(line)
        or _MATRIX_RE.match(line)
    )


class _Block:
    """One matrix being read: its description and rows."""

    def __init__(self, spec: dict[str, str | None]) -> None:
        self.spec = spec
        self.side: str | None = None
        self.columns: list[int] = []
        self.rows: dict[int, list[float | None]] = {}
        self.short_rows: list[int] = []
        self.bad_cells = 0


@record
class _Test:
    """One p2pBandwidthLatencyTest output being read."""

    doc: Doc
    start: int
    frag: Fragment
    devices: dict[int, tuple[str, str | None]] = field(default_factory=dict)
    peers: dict[tuple[int, int], bool] = field(default_factory=dict)
    connectivity: _Block | None = None
    blocks: list[_Block] = field(default_factory=list)
    current: _Block | None = None


def _on_device(test: _Test, line: str, index: int) -> bool:
    match = _DEVICE_RE.match(line)
    if not match:
        return False
    domain = int(match.group(5) or "0", 16)
    bus = int(match.group(3), 16)
    dev = int(match.group(4), 16)
    bus_id = f"{domain:04x}:{bus:02x}:{dev:02x}.0" if bus <= 0xFF and dev <= 0x1F else None
    test.devices[int(match.group(1))] = (match.group(2).strip(), bus_id)
    return True


def _on_peer(test: _Test, line: str, index: int) -> bool:
    match = _PEER_RE.match(line)
    if match:
        test.peers[(int(match.group(1)), int(match.group(3)))] = match.group(2) == "CAN"
    return match is not None


def _on_title(test: _Test, line: str, index: int) -> bool:
    """A matrix title (or the connectivity matrix's): the matrix that the next rows fill."""
    if _CONNECTIVITY_RE.match(line):
        test.connectivity = test.current = _Block({})
        return True
    match = _MATRIX_RE.match(line)
    if match:
        test.current = _Block(match.groupdict())
        test.blocks.append(test.current)
    return match is not None


def _on_header(test: _Test, line: str, index: int) -> bool:
    match = _HEADER_RE.match(line)
    current = test.current
    if not match or current is None:
        return False
    if current.side is not None and (current.rows or current.columns):
        # A second sub-block (the CPU latency block) of the same matrix.
        current = test.current = _Block(dict(current.spec))
        test.blocks.append(current)
    current.side = match.group("side")
    current.columns = [int(x) for x in match.group(2).split()[:MAX_MEASURED_DEVICES]]
    return True


def _on_row(test: _Test, line: str, index: int) -> bool:
    match = _ROW_RE.match(line)
    current = test.current
    if not match or current is None or not current.columns:
        return False
    values = [to_float(x) for x in match.group(2).split()]
    current.bad_cells += sum(1 for v in values if v is None)
    row = int(match.group(1))
    if too_many(test.frag, len(current.rows), MAX_MEASURED_DEVICES, "p2pBandwidthLatencyTest"):
        pass
    elif len(values) < len(current.columns):
        current.short_rows.append(row)
    else:
        current.rows.setdefault(row, values[: len(current.columns)])
    return True


def _on_banner(test: _Test, line: str, index: int) -> bool | None:
    """The test's title (a second one starts another output) and its notes."""
    if _TITLE_RE.search(line):
        return None if (test.blocks or test.devices) and index != test.start else True
    return _NOISE_RE.match(line) is not None


_HANDLERS = (_on_device, _on_peer, _on_title, _on_header, _on_row, _on_banner)


def _resumes(test: _Test, index: int, blanks: int) -> bool:
    """After blank lines, the output goes on when the next line is one of its own."""
    line = test.doc.lines[index]
    return bool(
        detect(test.doc, index, Context(file=test.doc.name))
        or _HEADER_RE.match(line)
        or _NOISE_RE.match(line)
    )


def parse(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Parse one p2pBandwidthLatencyTest output."""
    test = _Test(doc=doc, start=start, frag=Fragment(FORMAT))
    walker = Walker(blank_lines=None, resume=_resumes)
    end = walker.walk(doc, start, test, _HANDLERS)
    frag = test.frag
    note = walker.bad_values_note("p2pBandwidthLatencyTest")
    if note:
        frag.warn(note)
    method = "sm" if ctx.mentions("--sm_copy") or ctx.mentions("sm_copy") else "ce"
    _gpus(frag, test.devices, test.peers, test.connectivity, test.blocks)
    for block in test.blocks:
        _measurement(frag, block, method, ctx)
    bandwidth = sum(1 for m in frag.p2p if m.kind == "bandwidth")
    latency = sum(1 for m in frag.p2p if m.kind == "latency")
    gpu_count = frag.gpu_count or 0
    text = f"p2pBandwidthLatencyTest: {gpu_count} GPUs, {bandwidth} bandwidth + {latency} latency"
    text += " matrices"
    if method == "sm":
        text += " (SM copies)"
    if frag.can_access is not None:
        cells = [c for row in frag.can_access[1] for c in row if c is not None]
        text += f"; peer access {sum(cells)}/{len(cells)} pairs"
    frag.read.append(text)
    return frag, end


def _gpus(
    frag: Fragment,
    devices: dict[int, tuple[str, str | None]],
    peers: dict[tuple[int, int], bool],
    connectivity: _Block | None,
    blocks: list[_Block],
) -> None:
    indices: set[int] = set(devices)
    for a, b in peers:
        indices.update((a, b))
    if not indices:
        for block in [*blocks, *([connectivity] if connectivity else [])]:
            indices.update(block.columns)
            indices.update(block.rows)
    for gpu_index in sorted(indices):
        part = frag.gpu(gpu_index)
        if gpu_index in devices:
            name, bus_id = devices[gpu_index]
            if name:
                part.fields["name"] = name
            if bus_id:
                part.fields["bus_id"] = bus_id
    if indices:
        frag.gpu_count = max(indices) + 1
    gpus = sorted(indices)
    size = len(gpus)
    position = {gpu: i for i, gpu in enumerate(gpus)}
    if peers:
        matrix: list[list[bool | None]] = [[None] * size for _ in range(size)]
        for (a, b), can in peers.items():
            matrix[position[a]][position[b]] = can
        frag.can_access = (gpus, matrix)
    elif connectivity is not None and connectivity.rows:
        matrix = [[None] * size for _ in range(size)]
        for row, values in connectivity.rows.items():
            for col, value in zip(connectivity.columns, values, strict=False):
                if row != col and row in position and col in position and value is not None:
                    matrix[position[row]][position[col]] = value >= 1
        frag.can_access = (gpus, matrix)


def _measurement(frag: Fragment, block: _Block, method: str, ctx: Context) -> None:
    spec = block.spec
    kind = (spec.get("kind") or "bandwidth").lower()
    p2p = (spec.get("p2p") or "disabled").lower()
    direction = (spec.get("dir") or "").lower()
    access_text = (spec.get("access") or "").lower()
    access = "write" if access_text == "writes" else "read" if access_text == "reads" else None
    side = "cpu" if block.side == "CPU" else "gpu" if kind == "latency" else None
    title = f"{'bi' if direction == 'bidirectional' else 'uni'}directional P2P={p2p} {kind}"
    if kind == "latency":
        title = f"P2P={p2p} latency ({side})"
    if not block.columns:
        frag.warn(f"p2pBandwidthLatencyTest: {title} matrix has no header row; skipped")
        return
    gpus = list(block.columns)
    size = len(gpus)
    position: dict[int, int] = {}
    for i, gpu in enumerate(gpus):
        position.setdefault(gpu, i)  # a repeated column: its first place, as list.index
    values: list[list[float | None]] = [[None] * size for _ in range(size)]
    for row, cells in block.rows.items():
        if row in gpus:
            values[position[row]] = list(cells[:size])
    missing = [g for g in gpus if g not in block.rows]
    if not block.rows:
        frag.warn(f"p2pBandwidthLatencyTest: {title} matrix has no complete row; skipped")
        return
    if missing or block.short_rows:
        frag.warn(
            f"p2pBandwidthLatencyTest: {title} matrix truncated; imported {len(block.rows)} "
            f"complete rows of {size}"
        )
    if block.bad_cells:
        frag.warn(f"p2pBandwidthLatencyTest: {title} matrix has {block.bad_cells} unreadable cells")
    frag.p2p.append(
        P2PMatrixMeasurement(
            kind="latency" if kind == "latency" else "bandwidth",
            bidirectional=direction == "bidirectional",
            p2p="enabled" if p2p == "enabled" else "disabled",
            access=access if p2p == "enabled" else None,
            method=method,  # type: ignore[arg-type]
            latency_side=side if kind == "latency" else None,  # type: ignore[arg-type]
            unit="us" if kind == "latency" else "GB/s",
            gpus=gpus,
            values=values,
            source=ctx.source,
        )
    )

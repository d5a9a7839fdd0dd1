"""AMD GPU topology: ``rocm-smi --showtopo`` and ``amd-smi topology``.

``rocm-smi`` prints titled matrices (``Weight between two GPUs``, ``Hops between two GPUs``,
``Link Type between two GPUs``) labelled ``GPU0``...; then ``GPU[0] : (Topology) Numa Node: 0``
lines. ``amd-smi topology`` prints ``WEIGHT TABLE:``, ``HOPS TABLE:``, ``LINK TYPE TABLE:``
(and ``ACCESS``/``NUMA BW`` tables) labelled by bus id. Both become
``capture.evidence.amd_topologies[]`` and a topology matrix whose GPU pairs joined by Infinity
Fabric are ``XGMI``; PCIe pairs stay unknown (hops alone do not say PIX/PXB/PHB/SYS).
"""

from __future__ import annotations

import re
from typing import Any

from pcidoc._record import field, record
from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.text import Doc, lazy, normalize_bus_id, to_int
from pcidoc.collect.importers.walk import LAST, Walker
from pcidoc.model.evidence import AmdTopology
from pcidoc.model.facts import Topology

FORMAT = "amd-topology"

_TITLE_RE = lazy(
    r"(?P<rocm>(?P<r>Weight|Hops|Link Type)\s+between two GPUs)|"
    r"^\s*(?P<a>WEIGHT|HOPS|LINK TYPE|ACCESS|NUMA BW|CACHE ?INFO|FB SHARING)\s+TABLE\s*(?::\s*)?$",
    re.IGNORECASE,
)
_NUMA_RE = lazy(r"^\s*GPU\[(\d+)\]\s*:\s*\(Topology\)\s*Numa Node\s*:\s*(-?\d+)", re.IGNORECASE)
_END_RE = lazy(r"End of ROCm SMI Log", re.IGNORECASE)
_MAX_GPUS = 256
_LABEL_RE = lazy(r"^(?:GPU\d+|(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])$")


def detect(doc: Doc, index: int, ctx: Context) -> bool:
    """True at a rocm-smi or amd-smi topology table title."""
    return bool(_TITLE_RE.search(doc.lines[index]))


def _kind(title: re.Match[str]) -> str:
    word = (title.group("r") or title.group("a") or "").lower()
    if word.startswith("weight"):
        return "weight"
    if word.startswith("hops"):
        return "hops"
    if word.startswith("link"):
        return "link"
    return "other"


@record
class _Tables:
    """The tables of one rocm-smi / amd-smi output being read."""

    topo: AmdTopology
    tables: dict[str, tuple[list[str], dict[str, list[str]]]] = field(default_factory=dict)
    current: str | None = None
    header: list[str] = field(default_factory=list)
    rows: dict[str, list[str]] = field(default_factory=dict)
    blank: int = 0


def _on_end(tables: _Tables, line: str, index: int) -> Any:
    return LAST if _END_RE.search(line) else False


def _on_title(tables: _Tables, line: str, index: int) -> bool:
    title = _TITLE_RE.search(line)
    if title is None:
        return False
    if title.group("a"):
        tables.topo.tool = "amd-smi"
    tables.current = _kind(title)
    tables.header, tables.rows = [], {}
    tables.tables[tables.current] = (tables.header, tables.rows)
    tables.blank = 0
    return True


def _on_numa(tables: _Tables, line: str, index: int) -> bool:
    numa = _NUMA_RE.match(line)
    if numa:
        tables.topo.numa_nodes[int(numa.group(1))] = int(numa.group(2))
    return numa is not None


def _on_rule(tables: _Tables, line: str, index: int) -> bool | None:
    """Blank-looking lines (rules, ``Numa Nodes``): more than three before a table end the
    output."""
    stripped = line.strip()
    if stripped and stripped[0] not in "=-" and "Numa Nodes" not in line:
        tables.blank = 0
        return False
    tables.blank += 1
    return None if tables.blank > 3 and tables.current is None else True


def _on_cells(tables: _Tables, line: str, index: int) -> bool:
    """A table's header of labels, its rows, and the tool's own banner lines."""
    tokens = line.split()
    if tables.current is not None and not tables.header and all(_LABEL_RE.match(t) for t in tokens):
        tables.header.extend(tokens)
        return True
    if tables.current is not None and tables.header and _LABEL_RE.match(tokens[0]):
        tables.rows[tokens[0]] = tokens[1:]
        return True
    return line.lstrip().startswith("GPU[") or "ROCm System Management" in line


_HANDLERS = (_on_end, _on_title, _on_numa, _on_rule, _on_cells)


def _matrix(
    tables: dict[str, tuple[list[str], dict[str, list[str]]]], kind: str, labels: list[str]
) -> list[list[str | None]]:
    """Table ``kind`` in ``labels`` order (cells it lacks are None)."""
    head, body = tables.get(kind, ([], {}))
    where = {label: pos for pos, label in enumerate(head)}
    out: list[list[str | None]] = []
    for label in labels:
        cells = body.get(label, [])
        row: list[str | None] = []
        for col in labels:
            pos = where.get(col)
            row.append(cells[pos] if pos is not None and pos < len(cells) else None)
        out.append(row)
    return out


def parse(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Read every table from ``start`` to the end of the tool's output."""
    frag = Fragment(FORMAT)
    tables = _Tables(AmdTopology(source=ctx.file, tool="rocm-smi"))
    index = Walker(blank_lines="read").walk(doc, start, tables, _HANDLERS)
    topo = tables.topo
    labels: list[str] = []
    for head, _ in tables.tables.values():
        if len(head) > len(labels):
            labels = list(head)
    if not labels:
        frag.warn("amd topology: no GPU labels found in the tables; not read")
        return frag, max(index, start + 1)
    if len(labels) > _MAX_GPUS:
        frag.warn(f"amd topology: {len(labels)} labels; only the first {_MAX_GPUS} were read")
        labels = labels[:_MAX_GPUS]
    topo.link_types = [
        [None if c is None or c.upper() in ("0", "SELF", "N/A") else c.upper() for c in row]
        for row in _matrix(tables.tables, "link", labels)
    ]
    topo.hops = [
        [to_int(c) if c else None for c in row] for row in _matrix(tables.tables, "hops", labels)
    ]
    topo.weights = [
        [to_int(c) if c else None for c in row] for row in _matrix(tables.tables, "weight", labels)
    ]
    _fill(frag, topo, labels)
    return frag, max(index, start + 1)


def _fill(frag: Fragment, topo: AmdTopology, labels: list[str]) -> None:
    """The topology matrix (XGMI pairs), the GPUs and what was read."""
    size = len(labels)
    topo.gpus = list(range(size))
    frag.evidence.amd_topologies.append(topo)
    frag.gpu_count = size
    cells: list[list[str | None]] = []
    for i in range(size):
        row: list[str | None] = []
        for j in range(size):
            kind = topo.link_types[i][j] if topo.link_types else None
            row.append("X" if i == j else "XGMI" if kind == "XGMI" else None)
        cells.append(row)
    frag.topology = Topology(labels=[f"GPU{i}" for i in range(size)], links=cells, source="import")
    for i, label in enumerate(labels):
        part = frag.gpu(i)
        bus = normalize_bus_id(label) if ":" in label else None
        if bus:
            part.fields["bus_id"] = bus
        if i in topo.numa_nodes and topo.numa_nodes[i] >= 0:
            part.fields["numa_node"] = topo.numa_nodes[i]
    xgmi = sum(1 for i in range(size) for j in range(i + 1, size) if cells[i][j] == "XGMI")
    frag.read.append(f"{topo.tool} topology: {size} GPUs, {xgmi} XGMI pair(s)")
    if not topo.link_types or all(c is None for row in topo.link_types for c in row):
        frag.warn("amd topology: no link type table; GPU pairs left unknown")

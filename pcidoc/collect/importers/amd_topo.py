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

from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.text import Doc, lazy, normalize_bus_id, to_int
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


def parse(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Read every table from ``start`` to the end of the tool's output."""
    frag = Fragment(FORMAT)
    topo = AmdTopology(source=ctx.file, tool="rocm-smi")
    tables: dict[str, tuple[list[str], dict[str, list[str]]]] = {}
    labels: list[str] = []
    index = start
    current: str | None = None
    header: list[str] = []
    rows: dict[str, list[str]] = {}
    blank = 0
    while index < len(doc.lines):
        line = doc.lines[index]
        if _END_RE.search(line):
            index += 1
            break
        if index > start and doc.is_command(index):
            break
        title = _TITLE_RE.search(line)
        if title:
            if title.group("a"):
                topo.tool = "amd-smi"
            current = _kind(title)
            header, rows = [], {}
            tables[current] = (header, rows)
            index += 1
            blank = 0
            continue
        numa = _NUMA_RE.match(line)
        if numa:
            topo.numa_nodes[int(numa.group(1))] = int(numa.group(2))
            index += 1
            continue
        if not line.strip() or line.strip()[0] in "=-" or "Numa Nodes" in line:
            blank += 1
            if blank > 3 and current is None:
                break
            index += 1
            continue
        blank = 0
        tokens = line.split()
        if current is not None and not header and all(_LABEL_RE.match(t) for t in tokens):
            header.extend(tokens)
            index += 1
            continue
        if current is not None and header and _LABEL_RE.match(tokens[0]):
            rows[tokens[0]] = tokens[1:]
            index += 1
            continue
        if line.lstrip().startswith("GPU[") or "ROCm System Management" in line:
            index += 1
            continue
        break
    for _, (head, _) in tables.items():
        if len(head) > len(labels):
            labels = list(head)
    if not labels:
        frag.warn("amd topology: no GPU labels found in the tables; not read")
        return frag, max(index, start + 1)
    if len(labels) > _MAX_GPUS:
        frag.warn(f"amd topology: {len(labels)} labels; only the first {_MAX_GPUS} were read")
        labels = labels[:_MAX_GPUS]
    size = len(labels)

    def matrix(kind: str) -> list[list[str | None]]:
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

    link = matrix("link")
    topo.link_types = [
        [None if c is None or c.upper() in ("0", "SELF", "N/A") else c.upper() for c in row]
        for row in link
    ]
    topo.hops = [[to_int(c) if c else None for c in row] for row in matrix("hops")]
    topo.weights = [[to_int(c) if c else None for c in row] for row in matrix("weight")]
    topo.gpus = list(range(size))
    frag.evidence.amd_topologies.append(topo)
    frag.gpu_count = size
    cells: list[list[str | None]] = []
    for i in range(size):
        row: list[str | None] = []
        for j in range(size):
            if i == j:
                row.append("X")
                continue
            kind = topo.link_types[i][j] if topo.link_types else None
            row.append("XGMI" if kind == "XGMI" else None)
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
    return frag, max(index, start + 1)

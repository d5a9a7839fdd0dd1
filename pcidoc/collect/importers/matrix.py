"""Shared recognition of the two nvidia-smi matrices: ``topo -m`` and ``topo -p2p``.

Both print a header of device labels and one row per device. Which one a matrix is follows from
its cells: link classes (``NV12``, ``PIX``, ``SYS``...) make a topology, status codes (``OK``,
``NS``, ``CNS``...) a P2P status matrix; a matrix of only ``X`` is decided by the command line.
"""

from __future__ import annotations

import re
from typing import Literal

from pcidoc.collect.importers.fragment import MAX_MATRIX_DEVICES, Context
from pcidoc.collect.importers.text import Doc, LazyPattern, lazy
from pcidoc.model.links import normalize_link

_MAX_ROW_CHARS = 32 * MAX_MATRIX_DEVICES
"""A row of MAX_MATRIX_DEVICES cells, each padded as nvidia-smi pads them, plus affinity."""

P2P_CODES: frozenset[str] = frozenset({"X", "OK", "NS", "CNS", "GNS", "TNS", "DR", "U"})

LABEL_RE = lazy(r"^(?:GPU|NIC)\d+$")
GPU_LABEL_RE = lazy(r"^GPU(\d+)$")
_GLUED_LABELS_RE = lazy(r"GPU\d+|NIC\d+|mlx\d+_(?:bond_)?\d+")
_GLUED_LINKS_RE = lazy(r"NV\d+|PIX|PXB|PHB|NODE|SYS|SOC|X")
NIC_NAME_RE = lazy(r"^[A-Za-z][\w.:-]*\d$")
AFFINITY_RE = lazy(r"CPU\s*Affinity|NUMA\s*Affinity|GPU\s*NUMA\s*ID", re.IGNORECASE)


def split_glued(token: str, pattern: LazyPattern) -> list[str] | None:
    """Split ``NIC11NIC12`` into ``[NIC11, NIC12]``; ``None`` when ``token`` is not such a run."""
    pieces = pattern.findall(token)
    if pieces and "".join(pieces) == token:
        return pieces
    return None


def is_link(token: str) -> bool:
    """True for a topology link class (``X``, ``NV#``, ``PIX`` ... ``SYS``, ``SOC``)."""
    return normalize_link(token) is not None


def header_tokens(line: str) -> tuple[list[str], list[str]] | None:
    """Parse a matrix header line.

    Returns ``(device tokens, affinity columns)`` where affinity columns are ``cpu``, ``numa``
    and ``gpu_numa`` in printed order, or ``None`` when the line is not a header (it must name
    at least one GPU and nothing but device names before the affinity columns).
    """
    if len(line) > 65536:  # 2,048 devices with affinity columns fit; longer is not a header
        return None
    affinity = [m for m in AFFINITY_RE.finditer(line)]
    device_part = line[: affinity[0].start()] if affinity else line
    columns: list[str] = []
    for match in affinity:
        text = match.group(0).upper().replace(" ", "")
        columns.append(
            "cpu" if text.startswith("CPU") else "numa" if text.startswith("NUMA") else "gpu_numa"
        )
    tokens: list[str] = []
    for token in device_part.split():
        if LABEL_RE.match(token):
            tokens.append(token)
            continue
        glued = split_glued(token, _GLUED_LABELS_RE)
        if glued:
            tokens.extend(glued)
            continue
        if NIC_NAME_RE.match(token) and not is_link(token) and token.upper() not in P2P_CODES:
            tokens.append(token)
            continue
        return None
    if not any(GPU_LABEL_RE.match(t) for t in tokens):
        return None
    return tokens, columns


def row_cells(line: str) -> tuple[str, list[str]] | None:
    """Split a matrix row into its label and cell tokens (glued link cells separated).

    A line longer than a row of the largest matrix pcidoc reads (MAX_MATRIX_DEVICES cells plus
    the affinity columns) is not a row.
    """
    if len(line) > _MAX_ROW_CHARS:
        return None
    tokens = line.split()
    if len(tokens) < 2 or len(tokens) > MAX_MATRIX_DEVICES + 8:
        return None
    label = tokens[0]
    if not (LABEL_RE.match(label) or NIC_NAME_RE.match(label)) or is_link(label):
        return None
    cells: list[str] = []
    for token in tokens[1:]:
        if is_link(token) or token.upper() in P2P_CODES:
            cells.append(token)
            continue
        glued = split_glued(token.upper(), _GLUED_LINKS_RE)
        cells.extend(glued if glued else [token])
    return label, cells


MatrixKind = Literal["topo", "p2p"]


def _kind_of_cells(cells: list[str]) -> MatrixKind | None:
    topo = any(is_link(c) and c.upper() != "X" for c in cells)
    p2p = any(c.upper() in P2P_CODES and c.upper() != "X" for c in cells)
    if topo and not p2p:
        return "topo"
    if p2p and not topo:
        return "p2p"
    return None


def _next_nonblank(doc: Doc, start: int, limit: int = 2) -> int | None:
    index = start
    skipped = 0
    while index < len(doc.lines):
        if doc.lines[index].strip():
            return index
        skipped += 1
        if skipped > limit:
            return None
        index += 1
    return None


def classify(doc: Doc, start: int, ctx: Context) -> MatrixKind | None:
    """Whether a topology or P2P status matrix starts at line ``start`` (header or first row)."""
    line = doc.lines[start]
    stripped = line.lstrip()
    if not (stripped.startswith(("GPU", "NIC", "mlx")) or AFFINITY_RE.search(line)):
        return None
    header = header_tokens(line)
    if header is not None:
        _labels, columns = header
        row_index = _next_nonblank(doc, start + 1, limit=1)
        if row_index is None or doc.is_command(row_index):
            return None
        parsed = row_cells(doc.lines[row_index])
        if parsed is None:
            return None
        kind = _kind_of_cells(parsed[1])
        if kind is not None:
            return kind
        if columns:
            return "topo"
        if not all(c.upper() == "X" or is_link(c) or c.upper() in P2P_CODES for c in parsed[1]):
            return None
        return "p2p" if ctx.mentions("p2p") else "topo"
    # A header-less matrix starts with the first row.
    parsed = row_cells(line)
    if parsed is None or not GPU_LABEL_RE.match(parsed[0]):
        return None
    cells = parsed[1]
    if not cells or not (is_link(cells[0]) or cells[0].upper() in P2P_CODES):
        return None
    if sum(1 for c in cells if c.upper() == "X") != 1:
        return None
    kind = _kind_of_cells(cells)
    if kind is None and ctx.mentions("p2p"):
        return "p2p"
    return kind or "topo"

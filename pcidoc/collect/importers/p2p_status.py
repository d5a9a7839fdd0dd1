"""``nvidia-smi topo -p2p r|w|n|a|p``: the P2P status matrix of one capability.

The capability is only visible in the command line. When the paste does not show it, the
matrix is stored as ``read`` (the capability people check most often) and a warning says so;
``rw`` (printed as one matrix by some report scripts) is stored under both ``read`` and
``write``.
"""

from __future__ import annotations

from pcidoc._record import field, record
from pcidoc.collect.importers.fragment import MAX_MATRIX_DEVICES, Context, Fragment, too_many
from pcidoc.collect.importers.matrix import (
    GPU_LABEL_RE,
    P2P_CODES,
    classify,
    header_tokens,
    row_cells,
)
from pcidoc.collect.importers.text import Doc, lazy, named
from pcidoc.collect.importers.walk import Walker

FORMAT = "nvidia-smi-p2p"
DESCRIPTION = "nvidia-smi topo -p2p r|w|n|a|p (P2P status matrix: OK/NS/CNS/GNS/TNS/DR/U)"

_CAP_RE = lazy(r"(?:-p2p|--p2pstatus)(?:=|\s+)([A-Za-z]+)\b")
_CAPS = {"r": "read", "w": "write", "n": "nvlink", "a": "atomics", "p": "pci"}


def detect(doc: Doc, index: int, ctx: Context) -> bool:
    """True when a P2P status matrix (header or first row) starts at line ``index``."""
    return classify(doc, index, ctx) == "p2p"


def capabilities(command: str | None) -> tuple[list[str], str | None]:
    """Capabilities named by a ``topo -p2p`` command and a warning when unknown."""
    match = _CAP_RE.search(command or "")
    if not match:
        return ["read"], (
            "P2P status matrix without its command line: the capability (r/w/n/a/p) is not "
            "shown; stored as 'read'"
        )
    letters = match.group(1).lower()
    caps = [_CAPS[letter] for letter in dict.fromkeys(letters) if letter in _CAPS]
    if not caps or len(caps) != len(set(letters)):
        return ["read"], f"P2P status matrix: unknown capability '{letters}'; stored as 'read'"
    return caps, None


@record
class _Matrix:
    """One ``topo -p2p`` matrix being read: its columns and rows."""

    frag: Fragment
    columns: list[int] = field(default_factory=list)
    rows: dict[int, list[str]] = field(default_factory=dict)


def _on_row(matrix: _Matrix, line: str, index: int) -> bool:
    parsed = row_cells(line)
    if parsed is None:
        return False
    match = GPU_LABEL_RE.match(parsed[0])
    if not match or not parsed[1] or parsed[1][0].upper() not in P2P_CODES:
        return False
    if not too_many(matrix.frag, len(matrix.rows), MAX_MATRIX_DEVICES, "P2P status matrix"):
        matrix.rows.setdefault(int(match.group(1)), parsed[1])
    return True


def _header(matrix: _Matrix, tokens: list[str]) -> None:
    for token in tokens[:MAX_MATRIX_DEVICES]:
        match = GPU_LABEL_RE.match(token)
        if match:
            matrix.columns.append(int(match.group(1)))
        else:
            matrix.frag.warn(f"P2P status matrix: ignored non-GPU column '{token}'")


def _cells(matrix: _Matrix, gpus: list[int]) -> list[list[str | None]]:
    """The square matrix in ``gpus`` order; warns about short rows and unknown codes."""
    size = len(gpus)
    position = {gpu: i for i, gpu in enumerate(gpus)}
    cells: list[list[str | None]] = [[None] * size for _ in range(size)]
    bad: list[str] = []
    short: list[str] = []
    for gpu, row in matrix.rows.items():
        i = position[gpu]
        if len(row) < len(matrix.columns):
            short.append(f"GPU{gpu}")
        for j, cell in enumerate(row[: len(matrix.columns)]):
            code = cell.upper()
            if code in P2P_CODES:
                cells[i][position[matrix.columns[j]]] = code
            else:
                bad.append(cell)
        cells[i][i] = cells[i][i] or "X"
    if short:
        matrix.frag.warn(
            f"P2P status matrix: {named('row', short, 'have')} fewer cells than the header"
        )
    if bad:
        codes = sorted(set(bad))
        matrix.frag.warn(
            f"P2P status matrix: unknown status code{'s' if len(codes) > 1 else ''} "
            f"{', '.join(codes)}"
        )
    return cells


def parse(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Parse one ``topo -p2p`` matrix starting at ``start``."""
    matrix = _Matrix(Fragment(FORMAT, from_nvidia_smi=True))
    frag = matrix.frag
    header = header_tokens(doc.lines[start])
    if header is not None:
        _header(matrix, header[0])
    index = Walker().walk(doc, start + (header is not None), matrix, (_on_row,))
    if header is None:
        matrix.columns = list(matrix.rows)
        frag.warn("P2P status matrix: no header row in the paste; GPUs taken from the row labels")
    gpus = list(dict.fromkeys(matrix.columns + [g for g in matrix.rows]))
    missing = [f"GPU{g}" for g in gpus if g not in matrix.rows]
    if missing:
        frag.warn(f"P2P status matrix: {named('row', missing)} missing; left unknown")
    cells = _cells(matrix, gpus)
    caps, warning = capabilities(ctx.command)
    if warning:
        frag.warn(warning)
    frag.p2p_gpus = gpus
    for cap in caps:
        frag.p2p_matrices[cap] = [list(row) for row in cells]
    if header is not None and gpus:
        frag.gpu_count = max(gpus) + 1
    for gpu in gpus:
        frag.gpu(gpu)
    codes = sorted({c for row in cells for c in row if c and c != "X"})
    stored = " and ".join(caps)
    note = " (one 'rw' matrix stored under both)" if len(caps) > 1 else ""
    size = len(gpus)
    frag.read.append(f"P2P {stored} status {size}x{size}{note}: {', '.join(codes) or 'no pairs'}")
    return frag, index

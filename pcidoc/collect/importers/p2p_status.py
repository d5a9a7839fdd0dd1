"""``nvidia-smi topo -p2p r|w|n|a|p``: the P2P status matrix of one capability.

The capability is only visible in the command line. When the paste does not show it, the
matrix is stored as ``read`` (the capability people check most often) and a warning says so;
``rw`` (printed as one matrix by some report scripts) is stored under both ``read`` and
``write``.
"""

from __future__ import annotations

from pcidoc.collect.importers.fragment import MAX_MATRIX_DEVICES, Context, Fragment, too_many
from pcidoc.collect.importers.matrix import (
    GPU_LABEL_RE,
    P2P_CODES,
    classify,
    header_tokens,
    row_cells,
)
from pcidoc.collect.importers.text import Doc, lazy, named

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


def parse(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Parse one ``topo -p2p`` matrix starting at ``start``."""
    frag = Fragment(FORMAT, from_nvidia_smi=True)
    header = header_tokens(doc.lines[start])
    index = start
    columns: list[int] = []
    if header is not None:
        for token in header[0][:MAX_MATRIX_DEVICES]:
            match = GPU_LABEL_RE.match(token)
            if match:
                columns.append(int(match.group(1)))
            else:
                frag.warn(f"P2P status matrix: ignored non-GPU column '{token}'")
        index += 1
    rows: dict[int, list[str]] = {}
    while index < len(doc.lines):
        line = doc.lines[index]
        if not line.strip() or doc.is_command(index):
            break
        parsed = row_cells(line)
        if parsed is None:
            break
        match = GPU_LABEL_RE.match(parsed[0])
        if not match or not parsed[1] or parsed[1][0].upper() not in P2P_CODES:
            break
        if not too_many(frag, len(rows), MAX_MATRIX_DEVICES, "P2P status matrix"):
            rows.setdefault(int(match.group(1)), parsed[1])
        index += 1
    if header is None:
        columns = list(rows)
        frag.warn("P2P status matrix: no header row in the paste; GPUs taken from the row labels")
    gpus = list(dict.fromkeys(columns + [g for g in rows if g not in columns]))
    size = len(gpus)
    matrix: list[list[str | None]] = [[None] * size for _ in range(size)]
    bad: list[str] = []
    short: list[str] = []
    for gpu, cells in rows.items():
        i = gpus.index(gpu)
        if len(cells) < len(columns):
            short.append(f"GPU{gpu}")
        for j, cell in enumerate(cells[: len(columns)]):
            code = cell.upper()
            if code in P2P_CODES:
                matrix[i][gpus.index(columns[j])] = code
            else:
                bad.append(cell)
        matrix[i][i] = matrix[i][i] or "X"
    missing = [f"GPU{g}" for g in gpus if g not in rows]
    if missing:
        frag.warn(f"P2P status matrix: {named('row', missing)} missing; left unknown")
    if short:
        frag.warn(f"P2P status matrix: {named('row', short, 'have')} fewer cells than the header")
    if bad:
        codes = sorted(set(bad))
        frag.warn(
            f"P2P status matrix: unknown status code{'s' if len(codes) > 1 else ''} "
            f"{', '.join(codes)}"
        )
    caps, warning = capabilities(ctx.command)
    if warning:
        frag.warn(warning)
    frag.p2p_gpus = gpus
    for cap in caps:
        frag.p2p_matrices[cap] = [list(row) for row in matrix]
    if header is not None and gpus:
        frag.gpu_count = max(gpus) + 1
    for gpu in gpus:
        frag.gpu(gpu)
    codes = sorted({c for row in matrix for c in row if c and c != "X"})
    stored = " and ".join(caps)
    note = " (one 'rw' matrix stored under both)" if len(caps) > 1 else ""
    frag.read.append(f"P2P {stored} status {size}x{size}{note}: {', '.join(codes) or 'no pairs'}")
    return frag, index

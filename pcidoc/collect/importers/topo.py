"""``nvidia-smi topo -m`` / ``--matrix``: the topology matrix, CPU/NUMA affinity and NIC names.

Handles every layout seen in the wild: tab- or space-separated, hand-compacted columns, legacy
NIC columns named after the device (``mlx4_0``, ``mlx5_bond_0``: labelled ``NIC0..`` in column
order), ``SOC`` cells (the old name of ``SYS``), glued header tokens (``NIC11NIC12``), rows with
fewer cells than the header, missing rows (filled from the matrix's symmetry), a missing header
(labels taken from the rows) and terminal-clipped affinity values (kept unknown, with a reason).
"""

from __future__ import annotations

import re

from pcidoc._record import field, record
from pcidoc.collect.importers.fragment import (
    MAX_MATRIX_DEVICES,
    Context,
    Fragment,
    GpuPart,
    too_many,
)
from pcidoc.collect.importers.matrix import (
    GPU_LABEL_RE,
    LABEL_RE,
    NIC_NAME_RE,
    classify,
    header_tokens,
    is_link,
    row_cells,
)
from pcidoc.collect.importers.text import Doc, label_span, lazy, named, shorten
from pcidoc.collect.importers.walk import Walker
from pcidoc.model.cpulist import MAX_CPUS, out_of_range, parse_cpulist
from pcidoc.model.facts import Topology
from pcidoc.model.links import normalize_link

FORMAT = "nvidia-smi-topo"
DESCRIPTION = "nvidia-smi topo -m / --matrix (topology matrix, CPU/NUMA affinity, NIC legend)"

_NIC_LEGEND_RE = lazy(r"^\s*NIC\s*Legend\s*(?::\s*)?$", re.IGNORECASE)
_NIC_ENTRY_RE = lazy(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_NUMA_RANGE_RE = lazy(r"^\d+(?:[-,]\d+)+$")
_DEFAULT_COLUMNS = ["cpu", "numa", "gpu_numa"]


def detect(doc: Doc, index: int, ctx: Context) -> bool:
    """True at a ``NIC Legend:`` line or where a topology matrix (header or first row)
    starts."""
    return detect_legend(doc, index, ctx) or classify(doc, index, ctx) == "topo"


def detect_legend(doc: Doc, index: int, ctx: Context) -> bool:
    """True at a ``NIC Legend:`` line."""
    return bool(_NIC_LEGEND_RE.match(doc.lines[index]))


def parse_legend(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Read ``NICk: name`` lines after ``NIC Legend:``."""
    frag = Fragment(FORMAT, from_nvidia_smi=True)
    walker = Walker(blank_lines=None, resume=_legend_goes_on)
    index = walker.walk(doc, start + 1, frag, (_on_legend_entry,))
    if frag.nic_names:
        names = ", ".join(f"{k}={v}" for k, v in list(frag.nic_names.items())[:3])
        more = ", ..." if len(frag.nic_names) > 3 else ""
        frag.read.append(f"NIC legend: {len(frag.nic_names)} names ({names}{more})")
    else:
        frag.warn("NIC legend: the 'NIC Legend:' heading has no 'NICk: name' lines after it")
    return frag, index


def _on_legend_entry(frag: Fragment, line: str, index: int) -> bool:
    match = _NIC_ENTRY_RE.match(line)
    if match:
        frag.nic_names[match.group(1)] = match.group(2)
    return match is not None


def _legend_goes_on(frag: Fragment, index: int, blanks: int) -> bool:
    """Blank lines before the first entry are passed over; after it, one blank line between
    entries."""
    return not frag.nic_names or blanks == 1


class _Row:
    __slots__ = ("affinity", "extra", "label", "links")

    def __init__(self, label: str, links: list[str], extra: list[str], affinity: list[str]) -> None:
        self.label = label
        self.links = links
        self.extra = extra
        """Link cells beyond the header's columns (a header that lost its last columns)."""
        self.affinity = affinity


def parse(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Parse the NIC legend or the topology matrix at ``start``; the fragment and the next
    line."""
    if detect_legend(doc, start, ctx):
        return parse_legend(doc, start, ctx)
    return parse_matrix(doc, start, ctx)


class _Labels:
    """Device labels of one matrix: ``GPU``/``NIC`` labels as printed, and NIC columns named
    after the device (``mlx5_0``) labelled ``NIC0..`` in order."""

    def __init__(self) -> None:
        self.by_name: dict[str, str] = {}
        self.nic_name: dict[str, str] = {}
        """NIC label -> the device name its column had."""
        self.nic_count = 0

    def known(self, token: str) -> bool:
        return bool(LABEL_RE.match(token)) or token in self.by_name

    def label(self, token: str) -> str:
        if token in self.by_name:
            return self.by_name[token]
        if LABEL_RE.match(token):
            if token.startswith("NIC"):
                self.nic_count = max(self.nic_count, int(token[3:]) + 1)
            return token
        label = f"NIC{self.nic_count}"
        self.nic_count += 1
        self.by_name[token] = label
        self.nic_name[label] = token
        return label


@record
class _Matrix:
    """One ``topo -m`` matrix being read."""

    frag: Fragment
    names: _Labels
    header: bool
    expected: int | None
    """Link cells a row may have (the header's columns), None without a header."""
    rows: dict[str, _Row] = field(default_factory=dict)
    duplicate: list[str] = field(default_factory=list)
    columns_of_cells: list[str] = field(default_factory=list)
    """The column each printed cell is read as (the header's, then devices only in rows)."""


def _on_row(matrix: _Matrix, line: str, index: int) -> bool:
    parsed = row_cells(line)
    if parsed is None:
        return False
    raw_label, cells = parsed
    if not matrix.names.known(raw_label) and (
        not NIC_NAME_RE.match(raw_label) or not is_link(cells[0])
    ):
        return False
    links: list[str] = []
    position = 0
    while position < len(cells) and is_link(cells[position]):
        if matrix.expected is not None and len(links) >= matrix.expected:
            break
        links.append(cells[position])
        position += 1
    if not links:
        return False
    extra: list[str] = []
    while position < len(cells) and is_link(cells[position]):
        extra.append(cells[position])
        position += 1
    label = matrix.names.label(raw_label)
    if label in matrix.rows:
        matrix.duplicate.append(label)
    elif not too_many(matrix.frag, len(matrix.rows), MAX_MATRIX_DEVICES, "topo matrix"):
        matrix.rows[label] = _Row(label, links, extra, cells[position:])
    return True


def _rows_go_on(matrix: _Matrix, index: int, blanks: int) -> bool:
    """One blank line may separate the header from the first row."""
    return matrix.header and not matrix.rows


def parse_matrix(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Parse one topology matrix starting at ``start``; returns the fragment and the next line."""
    frag = Fragment(FORMAT, from_nvidia_smi=True)
    header = header_tokens(doc.lines[start])
    names = _Labels()
    columns = list(_DEFAULT_COLUMNS)
    col_labels: list[str] = []
    if header is not None:
        columns = header[1]
        for token in header[0][:MAX_MATRIX_DEVICES]:
            label = names.label(token)
            if label not in col_labels:
                col_labels.append(label)
    matrix = _Matrix(frag, names, header is not None, len(col_labels) if header else None)
    walker = Walker(blank_lines=1, resume=_rows_go_on)
    index = walker.walk(doc, start + (header is not None), matrix, (_on_row,))
    rows = matrix.rows
    if header is None:
        col_labels = list(rows)
        frag.warn(
            "topo matrix: no header row in the paste; labels taken from the row labels "
            f"({label_span(col_labels)})"
        )
    labels = list(col_labels) + [label for label in rows if label not in col_labels]
    links = _links(matrix, labels, col_labels)
    _affinities(frag, labels, rows, columns, header is None)
    gpu_labels = [label for label in labels if GPU_LABEL_RE.match(label)]
    nic_labels = [label for label in labels if label.startswith("NIC")]
    for label in nic_labels:
        frag.nics.append({"label": label, "name": names.nic_name.get(label)})
    if header is not None and gpu_labels:
        frag.gpu_count = max(int(label[3:]) for label in gpu_labels) + 1
    frag.topology = Topology(labels=labels, links=links, source="import")
    detail = []
    if names.nic_name:
        detail.append("NIC columns named " + label_span(list(names.nic_name.values())))
    soc = sum(
        1
        for row in rows.values()
        for j, token in enumerate(row.links + row.extra)
        if token.upper() == "SOC" and j < len(matrix.columns_of_cells)
    )
    if soc:
        detail.append(f"{soc} SOC cells read as SYS")
    extra = f" ({'; '.join(detail)})" if detail else ""
    frag.read.append(f"topology: {len(gpu_labels)} GPUs, {len(nic_labels)} NICs{extra}")
    return frag, index


def _links(matrix: _Matrix, labels: list[str], col_labels: list[str]) -> list[list[str | None]]:
    """The link matrix in ``labels`` order: cells as printed, the diagonal, the rest from
    symmetry; warnings for what is missing or inconsistent."""
    frag, rows = matrix.frag, matrix.rows
    row_only = [label for label in labels if label not in col_labels]
    columns_of_cells = list(col_labels)
    extras = [len(row.extra) for row in rows.values() if row.extra]
    if extras and row_only and matrix.header and max(extras) <= len(row_only):
        # nvidia-smi prints columns in row order: the cells past a clipped header belong to
        # the devices that only appear as rows.
        columns_of_cells += row_only
        frag.warn(
            f"topo matrix: header lacks {label_span(row_only)}; cells past the header read as "
            "those columns (nvidia-smi prints columns in row order)"
        )
    matrix.columns_of_cells = columns_of_cells
    cells, dropped = _cells(rows, labels, columns_of_cells)
    filled, unknown, bad_diagonal, conflicts = _symmetry(cells, labels)
    problems: list[str] = []
    missing_rows = [label for label in labels if label not in rows]
    short_rows = [label for label, row in rows.items() if len(row.links) < len(col_labels)]
    if missing_rows:
        problems.append(f"{named('row', missing_rows)} missing")
    if row_only and matrix.header and len(columns_of_cells) == len(col_labels):
        problems.append(f"header lacks the {named('column', row_only)}")
    if short_rows:
        problems.append(f"{named('row', short_rows, 'have')} fewer cells than the header")
    if problems or unknown:
        what = "; ".join(problems) if problems else "incomplete matrix"
        frag.warn(f"topo matrix: {what}; filled {filled} cells from symmetry, {unknown} unknown")
    if dropped:
        frag.warn(f"topo matrix: {dropped} cells beyond the known columns were dropped")
    if matrix.duplicate:
        frag.warn(f"topo matrix: duplicate {named('row', matrix.duplicate)}; kept the first")
    if bad_diagonal:
        frag.warn(f"topo matrix: diagonal of {label_span(bad_diagonal)} is not X (shifted row?)")
    if conflicts:
        more = f" (+{len(conflicts) - 3} more)" if len(conflicts) > 3 else ""
        frag.warn(f"topo matrix: asymmetric cells {', '.join(conflicts[:3])}{more}")
    return cells


def _cells(
    rows: dict[str, _Row], labels: list[str], columns_of_cells: list[str]
) -> tuple[list[list[str | None]], int]:
    """The cells the rows print, in ``labels`` order, and how many fell past every column."""
    position_of = {label: k for k, label in enumerate(labels)}
    size = len(labels)
    cells: list[list[str | None]] = [[None] * size for _ in range(size)]
    dropped = 0
    for label, row in rows.items():
        i = position_of[label]
        for j, token in enumerate(row.links + row.extra):
            if j >= len(columns_of_cells):
                dropped += 1
                continue
            cells[i][position_of[columns_of_cells[j]]] = normalize_link(token)
    return cells, dropped


def _symmetry(
    cells: list[list[str | None]], labels: list[str]
) -> tuple[int, int, list[str], list[str]]:
    """Fill the diagonal and each missing cell from its mirror: ``(cells filled, cells still
    unknown, labels whose diagonal is not X, asymmetric pairs)``."""
    size = len(labels)
    bad_diagonal: list[str] = []
    for k in range(size):
        if cells[k][k] is None:
            cells[k][k] = "X"
        elif cells[k][k] != "X":
            bad_diagonal.append(labels[k])
    filled = 0
    conflicts: list[str] = []
    for i in range(size):
        for j in range(i + 1, size):
            a, b = cells[i][j], cells[j][i]
            if a is None and b is not None:
                cells[i][j] = b
                filled += 1
            elif b is None and a is not None:
                cells[j][i] = a
                filled += 1
            elif a is not None and b is not None and a != b:
                conflicts.append(f"{labels[i]}-{labels[j]} {a} vs {b}")
    unknown = sum(1 for i in range(size) for j in range(size) if i != j and cells[i][j] is None)
    return filled, unknown, bad_diagonal, conflicts


@record
class _Placement:
    """CPU and NUMA affinity values that cannot be kept, gathered for one warning each."""

    cpu_values: list[str]
    columns: list[str]
    clipped: list[tuple[str, str]] = field(default_factory=list)
    huge: list[tuple[str, str]] = field(default_factory=list)
    numa_cpus: dict[int, set[str]] = field(default_factory=dict)


def _affinities(
    frag: Fragment, labels: list[str], rows: dict[str, _Row], columns: list[str], guessed: bool
) -> None:
    """Fill GPU parts with CPU/NUMA affinity, flagging clipped values."""
    values: dict[str, dict[str, str]] = {}
    extra_cells: list[str] = []
    for label, row in rows.items():
        if not GPU_LABEL_RE.match(label):
            if row.affinity:
                extra_cells.append(label)
            continue
        if len(row.affinity) > len(columns):
            extra_cells.append(label)
        values[label] = dict(zip(columns, row.affinity, strict=False))
    if extra_cells:
        frag.warn(f"topo matrix: unexpected trailing cells in {named('row', extra_cells)}")
    if guessed and values:
        frag.warn("topo matrix: affinity columns assumed in nvidia-smi's order (no header)")
    seen = _Placement(list(dict.fromkeys(v["cpu"] for v in values.values() if "cpu" in v)), columns)
    for label in labels:
        match = GPU_LABEL_RE.match(label)
        if not match:
            continue
        part = frag.gpu(int(match.group(1)))
        row_values = values.get(label)
        if row_values is None:
            reason = "row missing from the pasted topo matrix"
            part.unknown("cpu_affinity", reason)
            part.unknown("numa_node", reason)
            continue
        _cpu_affinity(part, label, row_values.get("cpu"), seen)
        _numa_affinity(part, row_values.get("numa"), seen)
    _placement_warnings(frag, seen)


def _not_shown(column: str, columns: list[str]) -> str:
    if column not in columns:
        return "not in this nvidia-smi topo -m output"
    return "cell missing from the pasted row"


def _cpu_affinity(part: GpuPart, label: str, cpu: str | None, seen: _Placement) -> None:
    if cpu is None:
        part.unknown("cpu_affinity", _not_shown("cpu", seen.columns))
    elif cpu.upper() == "N/A":
        part.unknown("cpu_affinity", "N/A in nvidia-smi topo -m")
    elif out_of_range(cpu):
        seen.huge.append((label, cpu))
        part.unknown("cpu_affinity", f"names CPU ids beyond Linux's limit: '{shorten(cpu, 30)}'")
    elif parse_cpulist(cpu) is None or _is_clipped(cpu, seen.cpu_values):
        seen.clipped.append((label, cpu))
        part.unknown("cpu_affinity", f"clipped in the paste: '{shorten(cpu, 30)}'")
    else:
        part.fields["cpu_affinity"] = cpu


def _numa_affinity(part: GpuPart, numa: str | None, seen: _Placement) -> None:
    if numa is None:
        part.unknown("numa_node", _not_shown("numa", seen.columns))
    elif numa.upper() == "N/A":
        part.unknown("numa_node", "NUMA affinity is N/A in nvidia-smi topo -m")
        part.unknown("numa_affinity", "N/A in nvidia-smi topo -m")
    elif numa.isdecimal() and len(numa) < 6:
        part.fields["numa_node"] = int(numa)
        part.fields["numa_affinity"] = numa
        node_cpus = seen.numa_cpus.setdefault(int(numa), set())
        if "cpu_affinity" in part.fields:
            node_cpus.add(part.fields["cpu_affinity"])
    elif _NUMA_RANGE_RE.match(numa):
        part.fields["numa_affinity"] = numa
        part.unknown("numa_node", f"NUMA affinity is {numa}: the GPU is not local to a single node")
    else:
        part.unknown("numa_node", f"unreadable NUMA affinity in the paste: '{shorten(numa)}'")


def _placement_warnings(frag: Fragment, seen: _Placement) -> None:
    if seen.huge:
        shown = ", ".join(f"'{shorten(v, 30)}'" for v in dict.fromkeys(v for _, v in seen.huge))
        frag.warn(
            f"topo matrix: CPU affinity of {label_span([label for label, _ in seen.huge])} "
            f"names CPU ids of {MAX_CPUS} or more, which no Linux machine has ({shown}); left "
            "unknown"
        )
    if seen.clipped:
        shown = ", ".join(f"'{shorten(v, 30)}'" for v in dict.fromkeys(v for _, v in seen.clipped))
        frag.warn(
            f"topo matrix: CPU affinity of {label_span([label for label, _ in seen.clipped])} "
            f"clipped in the paste ({shown}); left unknown"
        )
    for node, cpus in sorted(seen.numa_cpus.items()):
        frag.numa_cpus[node] = next(iter(cpus)) if len(cpus) == 1 else None


def _is_clipped(value: str, others: list[str]) -> bool:
    """True when ``value`` is the tail of another row's value cut inside a number.

    A terminal that clips the first characters of a column turns ``32-63,96-127`` into
    ``2-63,96-127``: still a valid cpulist, but the same tail as a longer sibling value.
    """
    for other in others:
        if len(other) > len(value) and other.endswith(value):
            before = other[len(other) - len(value) - 1]
            if before.isdecimal():
                return True
    return False

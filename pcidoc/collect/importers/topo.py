"""``nvidia-smi topo -m`` / ``--matrix``: the topology matrix, CPU/NUMA affinity and NIC names.

Handles every layout seen in the wild: tab- or space-separated, hand-compacted columns, legacy
NIC columns named after the device (``mlx4_0``, ``mlx5_bond_0``: labelled ``NIC0..`` in column
order), ``SOC`` cells (the old name of ``SYS``), glued header tokens (``NIC11NIC12``), rows with
fewer cells than the header, missing rows (filled from the matrix's symmetry), a missing header
(labels taken from the rows) and terminal-clipped affinity values (kept unknown, with a reason).
"""

from __future__ import annotations

import re

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
    index = start + 1
    while index < len(doc.lines):
        line = doc.lines[index]
        if not line.strip():
            if frag.nic_names:
                nxt = index + 1
                if nxt < len(doc.lines) and _NIC_ENTRY_RE.match(doc.lines[nxt]):
                    index += 1
                    continue
                break
            index += 1
            continue
        match = _NIC_ENTRY_RE.match(line)
        if not match or doc.is_command(index):
            break
        frag.nic_names[match.group(1)] = match.group(2)
        index += 1
    if frag.nic_names:
        names = ", ".join(f"{k}={v}" for k, v in list(frag.nic_names.items())[:3])
        more = ", ..." if len(frag.nic_names) > 3 else ""
        frag.read.append(f"NIC legend: {len(frag.nic_names)} names ({names}{more})")
    else:
        frag.warn("NIC legend: the 'NIC Legend:' heading has no 'NICk: name' lines after it")
    return frag, index


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


def parse_matrix(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Parse one topology matrix starting at ``start``; returns the fragment and the next line."""
    frag = Fragment(FORMAT, from_nvidia_smi=True)
    header = header_tokens(doc.lines[start])
    index = start
    columns = list(_DEFAULT_COLUMNS)
    col_tokens: list[str] = []
    if header is not None:
        col_tokens, columns = header
        col_tokens = col_tokens[:MAX_MATRIX_DEVICES]
        index += 1
    name_to_label: dict[str, str] = {}
    nic_name: dict[str, str] = {}
    col_labels: list[str] = []
    nic_count = 0

    def label_for(token: str) -> str:
        nonlocal nic_count
        if token in name_to_label:
            return name_to_label[token]
        if LABEL_RE.match(token):
            if token.startswith("NIC"):
                nic_count = max(nic_count, int(token[3:]) + 1)
            return token
        label = f"NIC{nic_count}"
        nic_count += 1
        name_to_label[token] = label
        nic_name[label] = token
        return label

    for token in col_tokens:
        label = label_for(token)
        if label not in col_labels:
            col_labels.append(label)
    expected = len(col_labels) if header is not None else None

    rows: dict[str, _Row] = {}
    duplicate: list[str] = []
    allow_blank = header is not None
    while index < len(doc.lines):
        line = doc.lines[index]
        if not line.strip():
            if not rows and allow_blank:
                allow_blank = False
                index += 1
                continue
            break
        if doc.is_command(index):
            break
        parsed = row_cells(line)
        if parsed is None:
            break
        raw_label, cells = parsed
        known = LABEL_RE.match(raw_label) or raw_label in name_to_label
        if not known and (not NIC_NAME_RE.match(raw_label) or not is_link(cells[0])):
            break
        links: list[str] = []
        position = 0
        while position < len(cells) and is_link(cells[position]):
            if expected is not None and len(links) >= expected:
                break
            links.append(cells[position])
            position += 1
        if not links:
            break
        extra: list[str] = []
        while position < len(cells) and is_link(cells[position]):
            extra.append(cells[position])
            position += 1
        label = label_for(raw_label)
        if label in rows:
            duplicate.append(label)
        elif too_many(frag, len(rows), MAX_MATRIX_DEVICES, "topo matrix"):
            pass
        else:
            rows[label] = _Row(label, links, extra, cells[position:])
        index += 1

    if header is None:
        col_labels = list(rows)
        frag.warn(
            "topo matrix: no header row in the paste; labels taken from the row labels "
            f"({label_span(col_labels)})"
        )
    labels = list(col_labels) + [label for label in rows if label not in col_labels]
    row_only = [label for label in labels if label not in col_labels]
    position_of = {label: k for k, label in enumerate(labels)}
    size = len(labels)
    links_matrix: list[list[str | None]] = [[None] * size for _ in range(size)]
    soc_cells = 0
    dropped_cells = 0
    columns_of_cells = list(col_labels)
    extras = [len(row.extra) for row in rows.values() if row.extra]
    if extras and row_only and header is not None and max(extras) <= len(row_only):
        # nvidia-smi prints columns in row order: the cells past a clipped header belong to
        # the devices that only appear as rows.
        columns_of_cells += row_only
        frag.warn(
            f"topo matrix: header lacks {label_span(row_only)}; cells past the header read as "
            "those columns (nvidia-smi prints columns in row order)"
        )
    for label, row in rows.items():
        i = position_of[label]
        for j, token in enumerate(row.links + row.extra):
            if j >= len(columns_of_cells):
                dropped_cells += 1
                continue
            if token.upper() == "SOC":
                soc_cells += 1
            links_matrix[i][position_of[columns_of_cells[j]]] = normalize_link(token)
    bad_diagonal: list[str] = []
    for k in range(size):
        if links_matrix[k][k] is None:
            links_matrix[k][k] = "X"
        elif links_matrix[k][k] != "X":
            bad_diagonal.append(labels[k])
    filled = 0
    conflicts: list[str] = []
    for i in range(size):
        for j in range(i + 1, size):
            a, b = links_matrix[i][j], links_matrix[j][i]
            if a is None and b is not None:
                links_matrix[i][j] = b
                filled += 1
            elif b is None and a is not None:
                links_matrix[j][i] = a
                filled += 1
            elif a is not None and b is not None and a != b:
                conflicts.append(f"{labels[i]}-{labels[j]} {a} vs {b}")
    unknown = sum(
        1 for i in range(size) for j in range(size) if i != j and links_matrix[i][j] is None
    )

    missing_rows = [label for label in labels if label not in rows]
    short_rows = [label for label, row in rows.items() if len(row.links) < len(col_labels)]
    problems: list[str] = []
    if missing_rows:
        problems.append(f"{named('row', missing_rows)} missing")
    if row_only and header is not None and len(columns_of_cells) == len(col_labels):
        problems.append(f"header lacks the {named('column', row_only)}")
    if short_rows:
        problems.append(f"{named('row', short_rows, 'have')} fewer cells than the header")
    if problems or unknown:
        what = "; ".join(problems) if problems else "incomplete matrix"
        frag.warn(f"topo matrix: {what}; filled {filled} cells from symmetry, {unknown} unknown")
    if dropped_cells:
        frag.warn(f"topo matrix: {dropped_cells} cells beyond the known columns were dropped")
    if duplicate:
        frag.warn(f"topo matrix: duplicate {named('row', duplicate)}; kept the first")
    if bad_diagonal:
        frag.warn(f"topo matrix: diagonal of {label_span(bad_diagonal)} is not X (shifted row?)")
    if conflicts:
        more = f" (+{len(conflicts) - 3} more)" if len(conflicts) > 3 else ""
        frag.warn(f"topo matrix: asymmetric cells {', '.join(conflicts[:3])}{more}")

    _affinities(frag, labels, rows, columns, header is None)

    gpu_labels = [label for label in labels if GPU_LABEL_RE.match(label)]
    nic_labels = [label for label in labels if label.startswith("NIC")]
    for label in nic_labels:
        frag.nics.append({"label": label, "name": nic_name.get(label)})
    if header is not None and gpu_labels:
        frag.gpu_count = max(int(label[3:]) for label in gpu_labels) + 1
    frag.topology = Topology(labels=labels, links=links_matrix, source="import")
    detail = []
    if nic_name:
        detail.append("NIC columns named " + label_span(list(nic_name.values())))
    if soc_cells:
        detail.append(f"{soc_cells} SOC cells read as SYS")
    extra = f" ({'; '.join(detail)})" if detail else ""
    frag.read.append(f"topology: {len(gpu_labels)} GPUs, {len(nic_labels)} NICs{extra}")
    return frag, index


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
        cells = row.affinity
        if len(cells) > len(columns):
            extra_cells.append(label)
        values[label] = dict(zip(columns, cells, strict=False))
    if extra_cells:
        frag.warn(f"topo matrix: unexpected trailing cells in {named('row', extra_cells)}")
    if guessed and values:
        frag.warn("topo matrix: affinity columns assumed in nvidia-smi's order (no header)")

    cpu_values = list(dict.fromkeys(v["cpu"] for v in values.values() if "cpu" in v))
    clipped: list[tuple[str, str]] = []
    huge: list[tuple[str, str]] = []
    numa_cpus: dict[int, set[str]] = {}
    for label in labels:
        match = GPU_LABEL_RE.match(label)
        if not match:
            continue
        part: GpuPart = frag.gpu(int(match.group(1)))
        row_values = values.get(label)
        if row_values is None:
            reason = "row missing from the pasted topo matrix"
            part.unknown("cpu_affinity", reason)
            part.unknown("numa_node", reason)
            continue
        cpu = row_values.get("cpu")
        if cpu is None:
            reason = (
                "not in this nvidia-smi topo -m output"
                if "cpu" not in columns
                else "cell missing from the pasted row"
            )
            part.unknown("cpu_affinity", reason)
        elif cpu.upper() == "N/A":
            part.unknown("cpu_affinity", "N/A in nvidia-smi topo -m")
        elif out_of_range(cpu):
            huge.append((label, cpu))
            part.unknown(
                "cpu_affinity", f"names CPU ids beyond Linux's limit: '{shorten(cpu, 30)}'"
            )
        elif parse_cpulist(cpu) is None or _is_clipped(cpu, cpu_values):
            clipped.append((label, cpu))
            part.unknown("cpu_affinity", f"clipped in the paste: '{shorten(cpu, 30)}'")
        else:
            part.fields["cpu_affinity"] = cpu
        numa = row_values.get("numa")
        if numa is None:
            reason = (
                "not in this nvidia-smi topo -m output"
                if "numa" not in columns
                else "cell missing from the pasted row"
            )
            part.unknown("numa_node", reason)
        elif numa.upper() == "N/A":
            part.unknown("numa_node", "NUMA affinity is N/A in nvidia-smi topo -m")
            part.unknown("numa_affinity", "N/A in nvidia-smi topo -m")
        elif numa.isdecimal() and len(numa) < 6:
            part.fields["numa_node"] = int(numa)
            part.fields["numa_affinity"] = numa
            node_cpus = numa_cpus.setdefault(int(numa), set())
            if "cpu_affinity" in part.fields:
                node_cpus.add(part.fields["cpu_affinity"])
        elif _NUMA_RANGE_RE.match(numa):
            part.fields["numa_affinity"] = numa
            part.unknown(
                "numa_node", f"NUMA affinity is {numa}: the GPU is not local to a single node"
            )
        else:
            part.unknown("numa_node", f"unreadable NUMA affinity in the paste: '{shorten(numa)}'")
    if huge:
        shown = ", ".join(f"'{shorten(v, 30)}'" for v in dict.fromkeys(v for _, v in huge))
        frag.warn(
            f"topo matrix: CPU affinity of {label_span([label for label, _ in huge])} names CPU "
            f"ids of {MAX_CPUS} or more, which no Linux machine has ({shown}); left unknown"
        )
    if clipped:
        shown = ", ".join(f"'{shorten(v, 30)}'" for v in dict.fromkeys(v for _, v in clipped))
        frag.warn(
            f"topo matrix: CPU affinity of {label_span([label for label, _ in clipped])} "
            f"clipped in the paste ({shown}); left unknown"
        )
    for node, cpus in sorted(numa_cpus.items()):
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

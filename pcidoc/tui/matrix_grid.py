"""The topology matrix as a grid of styled cells for the TUI (no widgets here).

Three colour modes share one grid:

* ``class`` — the link class as ``nvidia-smi topo -m`` prints it, coloured like ``pcidoc topo``;
* ``bandwidth`` — measured P2P copy bandwidth of each GPU pair as % of the path's ceiling (when
  the ceiling is known, else in GB/s shaded against the fastest pair);
* ``traffic`` — what flows now: the diagonal shows each GPU's PCIe utilisation, off-diagonal
  cells the traffic over NVLinks that join the pair directly (traffic through an NVSwitch or
  PCIe cannot be attributed to a pair, so those cells stay blank).

Each cell has a full text (``NV12``, ``87%``) and a one-character code for the compact layout
used when the matrix is wider than the screen (the codes of :mod:`pcidoc.present._matrix`).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property

from pcidoc._record import field, record
from pcidoc.model.capture import Capture
from pcidoc.model.counters import GpuRates
from pcidoc.model.linkmodel import gpu_pcie_ceiling, pair_ceiling
from pcidoc.model.links import is_nvlink
from pcidoc.present._matrix import MatrixView
from pcidoc.present.text import CELL_STYLES
from pcidoc.tui.panes.topology import best_p2p_bandwidth, p2p_refused

COLOUR_MODES: tuple[str, ...] = ("class", "bandwidth", "traffic")
"""Colour modes in the order the ``c`` key cycles them."""

MODE_TITLES: dict[str, str] = {
    "class": "link class",
    "bandwidth": "measured P2P bandwidth",
    "traffic": "live traffic",
}

SHORT_LEGEND: dict[str, str] = {
    "X": "self",
    "PIX": "one PCIe switch",
    "PXB": "several PCIe bridges",
    "PHB": "via the CPU's host bridge",
    "NODE": "between host bridges, same NUMA node",
    "SYS": "across NUMA nodes",
    "?": "unknown",
}
"""Legend words short enough for one line at 80 columns."""

EMPTY_STYLE = "dim"
GOOD_STYLE = "bold green"
FAIR_STYLE = "yellow"
POOR_STYLE = "bold red"


@record(frozen=True)
class GridCell:
    """One cell: full text, one-character code and a rich style string."""

    text: str
    code: str
    style: str


@record
class MatrixGrid:
    """Rows × columns of styled cells plus what the legend says."""

    labels: list[str]
    kinds: list[str]
    """``gpu`` or ``nic`` per label."""
    cells: list[list[GridCell]]
    affinity: list[tuple[str, str]]
    """``(CPU affinity, NUMA)`` per row (empty strings when unknown)."""
    mode: str
    legend: list[tuple[str, str, str, str]] = field(default_factory=list)
    """``(class or value range, compact code, style, meaning)`` entries."""
    note: str = ""
    """One line under the legend (what the numbers mean in this mode)."""

    @cached_property
    def widest_text(self) -> int:
        """Length of the longest cell text (cells are shared per class: few distinct)."""
        distinct = {id(cell): cell for row in self.cells for cell in row}
        return max((len(cell.text) for cell in distinct.values()), default=1)

    def short_label(self, index: int) -> str:
        """``G3`` / ``N1`` column header for the narrow layout."""
        label = self.labels[index]
        digits = "".join(ch for ch in label if ch.isdecimal())
        return (label[0] + digits) if digits else label[:3]

    def number(self, index: int) -> str:
        """Trailing number of a label (for the compact header)."""
        digits = "".join(ch for ch in self.labels[index] if ch.isdecimal())
        return digits or str(index)


def _fraction_style(fraction: float) -> str:
    if fraction >= 0.70:
        return GOOD_STYLE
    if fraction >= 0.40:
        return FAIR_STYLE
    return POOR_STYLE


def _fraction_code(fraction: float) -> str:
    """``0``..``9`` tens of percent, ``+`` at or above 100 %."""
    if fraction >= 1.0:
        return "+"
    return str(max(0, min(9, int(fraction * 10))))


def _blank() -> GridCell:
    return GridCell("·", "·", EMPTY_STYLE)


def _self_cell() -> GridCell:
    return GridCell("X", "X", CELL_STYLES["self"])


def _class_grid(view: MatrixView, keep: list[int]) -> list[list[GridCell]]:
    # One cell object per link class: a 90 x 90 matrix has a handful of classes, and cells
    # are never changed in place (a new grid is built for every change).
    made: dict[str | None, GridCell] = {}

    def cell(cls: str | None) -> GridCell:
        found = made.get(cls)
        if found is None:
            found = made[cls] = GridCell(
                view.text(cls), view.code(cls), CELL_STYLES[view.style(cls)]
            )
        return found

    rows = []
    for i in keep:
        cells = view.rows[i].cells
        rows.append([cell(cells[j]) for j in keep])
    return rows


def _class_legend(view: MatrixView, keep: list[int]) -> list[tuple[str, str, str, str]]:
    present = {view.rows[i].cells[j] for i in keep for j in keep}
    entries = []
    for entry in view.legend():
        cls = entry.cls
        if cls == "?":
            if None not in present:
                continue
        elif cls not in present:
            continue
        if cls == "X":
            continue
        words = SHORT_LEGEND.get(cls) or (f"{cls[2:]} NVLinks" if is_nvlink(cls) else entry.meaning)
        entries.append((cls, entry.code, CELL_STYLES[entry.style], words))
    return entries


def _gpu_of(label: str) -> int | None:
    return int(label[3:]) if label.startswith("GPU") and label[3:].isdecimal() else None


STAGED_STYLE = "italic"
"""A copy the driver staged through host memory (P2P refused): not a P2P rate at all."""


def _bandwidth_grid(
    capture: Capture, labels: list[str], links: list[list[str | None]]
) -> tuple[list[list[GridCell]], str]:
    matrix = best_p2p_bandwidth(capture)
    n = len(labels)
    cells = [[_blank() for _ in range(n)] for _ in range(n)]
    for i in range(n):
        cells[i][i] = _self_cell()
    if matrix is None:
        return cells, "no P2P bandwidth measured: run the probes (p) on a live GPU machine"
    values: dict[tuple[int, int], float] = {}
    ceilings: dict[tuple[int, int], float | None] = {}
    for i, a in enumerate(labels):
        for j, b in enumerate(labels):
            ga, gb = _gpu_of(a), _gpu_of(b)
            if i == j or ga is None or gb is None:
                continue
            value = matrix.value(ga, gb)
            if value is None:
                continue
            values[(i, j)] = value
            ceilings[(i, j)] = pair_ceiling(capture, ga, gb, links[i][j]).gbps
    if not values:
        return cells, "no P2P bandwidth measured for these GPUs"
    best = max(values.values()) or 1.0
    relative = 0
    staged = 0
    for (i, j), value in values.items():
        ceiling = ceilings[(i, j)]
        ga, gb = _gpu_of(labels[i]), _gpu_of(labels[j])
        if ga is not None and gb is not None and p2p_refused(capture, ga, gb):
            cells[i][j] = GridCell("staged", "s", STAGED_STYLE)
            staged += 1
            continue
        if ceiling:
            fraction = value / ceiling
            text = f"{fraction * 100:.0f}%"
        else:
            fraction = value / best
            text = f"{value:.0f}" if value >= 10 else f"{value:.1f}"
            relative += 1
        cells[i][j] = GridCell(text, _fraction_code(fraction), _fraction_style(fraction))
    direction = "bidirectional" if matrix.bidirectional else "one direction"
    if relative == len(values):
        note = (
            f"P2P {direction} copy in GB/s, shaded against the fastest pair "
            "(link ceilings not in the capture)"
        )
    elif relative:
        note = f"P2P {direction} copy: % of the path's ceiling; GB/s where the ceiling is unknown"
    else:
        note = f"P2P {direction} copy as % of the path's ceiling (NVLink rate × links, or PCIe raw)"
    if staged:
        note += " · staged: P2P refused, the copy went through host memory (no P2P rate)"
    if matrix.source and matrix.source.startswith("synthetic"):
        note += " · SYNTHETIC numbers"
    return cells, note


def _traffic_grid(
    capture: Capture,
    labels: list[str],
    rates: Mapping[int, GpuRates] | None,
) -> tuple[list[list[GridCell]], str]:
    n = len(labels)
    cells = [[_blank() for _ in range(n)] for _ in range(n)]
    bus_to_gpu = {g.bus_id: g.index for g in capture.gpus if g.bus_id}
    static = rates is None
    for i, label in enumerate(labels):
        index = _gpu_of(label)
        gpu = capture.gpu(index) if index is not None else None
        if gpu is None:
            cells[i][i] = _self_cell()
            continue
        if static:
            tx = None if gpu.tx_bytes_per_s is None else gpu.tx_bytes_per_s / 1e9
            rx = None if gpu.rx_bytes_per_s is None else gpu.rx_bytes_per_s / 1e9
        else:
            r = rates.get(index) if rates else None
            tx = r.pcie_tx_gbps if r else None
            rx = r.pcie_rx_gbps if r else None
        ceiling = gpu_pcie_ceiling(gpu).gbps
        if tx is None and rx is None:
            cells[i][i] = GridCell("X", "X", CELL_STYLES["self"])
        else:
            peak = max(tx or 0.0, rx or 0.0)
            if ceiling:
                fraction = peak / ceiling
                cells[i][i] = GridCell(
                    f"{fraction * 100:.0f}%", _fraction_code(fraction), _traffic_style(fraction)
                )
            else:
                cells[i][i] = GridCell(f"{peak:.1f}", "·", "bold")
        if static or not rates or index not in rates:
            continue
        per_peer: dict[int, float] = {}
        for nv in gpu.nvlinks:
            peer = bus_to_gpu.get(nv.remote_bus_id or "")
            if peer is None or nv.remote_type not in (None, "gpu"):
                continue
            rate = rates[index].nvlink_tx_gbps.get(nv.link)
            if rate is not None:
                per_peer[peer] = per_peer.get(peer, 0.0) + rate
        for peer, gbps in per_peer.items():
            j = labels.index(f"GPU{peer}") if f"GPU{peer}" in labels else None
            if j is not None:
                text = f"{gbps:.0f}" if gbps >= 10 else f"{gbps:.1f}"
                cells[i][j] = GridCell(
                    text, "*" if gbps > 0.05 else "·", "bold cyan" if gbps > 0.05 else EMPTY_STYLE
                )
    if static:
        note = (
            "static: PCIe utilisation at collection time (diagonal) — live counters need a "
            "live GPU machine"
        )
    else:
        note = (
            "diagonal: PCIe utilisation (busier direction ÷ raw link ceiling); off-diagonal: "
            "GB/s over direct NVLinks (NVSwitch/PCIe traffic has no pair)"
        )
    return cells, note


def _traffic_style(fraction: float) -> str:
    if fraction >= 0.70:
        return "bold magenta"
    if fraction >= 0.20:
        return "bold cyan"
    if fraction >= 0.01:
        return "cyan"
    return EMPTY_STYLE


def build_grid(
    capture: Capture,
    mode: str = "class",
    show_nics: bool = True,
    rates: Mapping[int, GpuRates] | None = None,
    view: MatrixView | None = None,
) -> MatrixGrid:
    """The matrix of ``capture`` in colour ``mode``, with or without the NIC rows/columns.

    Args:
        capture: The machine.
        mode: ``class``, ``bandwidth`` or ``traffic``.
        show_nics: Include NICs.
        rates: Live per-GPU rates by index (``traffic`` mode); ``None`` = static values.
        view: A :class:`MatrixView` of the capture to reuse.
    """
    view = view or MatrixView(capture)
    keep = [i for i, kind in enumerate(view.kinds) if show_nics or kind != "nic"]
    labels = [view.labels[i] for i in keep]
    kinds = [view.kinds[i] for i in keep]
    affinity = [(view.rows[i].cpu_affinity or "", view.rows[i].numa or "") for i in keep]
    legend: list[tuple[str, str, str, str]] = []
    note = ""
    if mode == "class":
        cells = _class_grid(view, keep)
        legend = _class_legend(view, keep)
    elif mode == "bandwidth":
        links = [[view.rows[i].cells[j] for j in keep] for i in keep]
        cells, note = _bandwidth_grid(capture, labels, links)
        basis = "of the fastest pair" if "fastest pair" in note else "of the ceiling"
        legend = [
            ("≥70%", "7-9 +", GOOD_STYLE, ""),
            ("40–70%", "4-6", FAIR_STYLE, ""),
            ("<40%", "0-3", POOR_STYLE, basis),
            ("staged", "s", STAGED_STYLE, "P2P refused: via host memory"),
            ("·", "·", EMPTY_STYLE, "not measured"),
        ]
    elif mode == "traffic":
        cells, note = _traffic_grid(capture, labels, rates)
        legend = [
            ("≥70%", "7-9 +", "bold magenta", ""),
            ("≥20%", "2-6", "bold cyan", ""),
            ("<20%", "0-1", "cyan", ""),
            ("·", "·", EMPTY_STYLE, "idle / n/a"),
        ]
    else:
        raise ValueError(f"unknown colour mode {mode!r}")
    return MatrixGrid(labels, kinds, cells, affinity, mode, legend, note)

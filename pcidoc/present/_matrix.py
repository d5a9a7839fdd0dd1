"""The topology matrix prepared for display: rows, cell styles, legend and a compact form.

Shared by the terminal, Markdown and HTML presenters so that all three show the same matrix
with the same words. No rich here: the style of a cell is a short name (``nv-hi``, ``pix``,
``sys``...) that each presenter maps to its own colours.

The compact form draws one character per cell (``N`` for the NVLink class, ``P`` PIX, ``B`` PXB,
``H`` PHB, ``D`` NODE, ``S`` SYS, ``X`` self, ``?`` unknown) with column numbers written
vertically, for matrices too wide to show cell by cell (16 or 72 GPUs on a 100-column screen).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Literal

from pcidoc._record import field, record
from pcidoc.model.capture import Capture
from pcidoc.model.cpulist import format_cpulist
from pcidoc.model.links import LEGEND, PCIE_CLASSES, is_nvlink, nvlink_count
from pcidoc.model.report import Report

STYLE_NAMES: tuple[str, ...] = (
    "self",
    "nv-hi",
    "nv-mid",
    "nv-lo",
    "pix",
    "pxb",
    "phb",
    "node",
    "sys",
    "unknown",
)
"""Every cell style name, nearest class first."""

_PCIE_STYLE = {"PIX": "pix", "PXB": "pxb", "PHB": "phb", "NODE": "node", "SYS": "sys"}
_PCIE_CODE = {"PIX": "P", "PXB": "B", "PHB": "H", "NODE": "D", "SYS": "S"}
_NV_LETTERS = "NMLKJGFECA"  # letters not used by the PCIe codes above, for NV10 and up
_UNKNOWN_MEANING = "unknown: the path between these devices was not reported"
_TRAILING_NUMBER = re.compile(r"(\d+)$")

RowKind = Literal["gpu", "nic"]


@record(frozen=True)
class MatrixRow:
    """One row of the matrix with the affinity columns of ``nvidia-smi topo -m``."""

    label: str
    kind: RowKind
    cells: list[str | None]
    cpu_affinity: str | None = None
    numa: str | None = None


@record(frozen=True)
class LegendEntry:
    """One class shown in the legend (``NV18``, ``PIX``...) with its compact code."""

    cls: str
    code: str
    style: str
    meaning: str


@record
class CompactBlock:
    """A slice of columns of the compact matrix that fits the available width.

    ``columns`` holds matrix column positions, with ``None`` for a spacer column.
    """

    columns: list[int | None] = field(default_factory=list)


class MatrixView:
    """A capture's topology matrix indexed for display.

    Args:
        capture: The machine.
    """

    def __init__(self, capture: Capture) -> None:
        topo = capture.topology
        self.labels: list[str] = list(topo.labels)
        self.source: str | None = topo.source
        gpus = {f"GPU{g.index}": g for g in capture.gpus}
        nics = {n.label: n for n in capture.nics}
        size = len(self.labels)
        self.rows: list[MatrixRow] = []
        for i, label in enumerate(self.labels):
            raw = topo.links[i] if i < len(topo.links) else []
            cells = [raw[j] if j < len(raw) else None for j in range(size)]
            gpu = gpus.get(label)
            if gpu is not None:
                numa = gpu.numa_affinity
                if numa is None and gpu.numa_node is not None:
                    numa = str(gpu.numa_node)
                self.rows.append(MatrixRow(label, "gpu", cells, gpu.cpu_affinity, numa))
            elif label.startswith("GPU"):
                self.rows.append(MatrixRow(label, "gpu", cells))
            else:
                nic = nics.get(label)
                numa = None if nic is None or nic.numa_node is None else str(nic.numa_node)
                self.rows.append(MatrixRow(label, "nic", cells, None, numa))
        self.kinds: list[RowKind] = [row.kind for row in self.rows]
        seen: set[str] = set()
        for row in self.rows:
            seen.update(cell if cell is not None else "?" for cell in row.cells)
        self.classes: set[str] = seen
        self.nv_counts: list[int] = sorted(
            {nvlink_count(c) for c in seen if is_nvlink(c)}, reverse=True
        )
        self.nv_max: int = self.nv_counts[0] if self.nv_counts else 0
        self._nv_codes = self._assign_nv_codes()
        self.nic_names: list[tuple[str, str]] = [
            (n.label, n.name) for n in capture.nics if n.name and n.name != n.label
        ]

    # ---------------------------------------------------------------------- cells

    @property
    def has_affinity(self) -> bool:
        """True when any row has a CPU affinity or NUMA value to show."""
        return any(row.cpu_affinity or row.numa for row in self.rows)

    def text(self, cell: str | None) -> str:
        """Cell text as nvidia-smi prints it (``?`` for unknown)."""
        return "?" if cell is None else cell

    def style(self, cell: str | None) -> str:
        """Style name of a cell: NVLink shaded by link count relative to the matrix's best."""
        if cell is None:
            return "unknown"
        if cell == "X":
            return "self"
        if is_nvlink(cell):
            count = nvlink_count(cell)
            if count >= self.nv_max:
                return "nv-hi"
            return "nv-mid" if count * 2 >= self.nv_max else "nv-lo"
        return _PCIE_STYLE.get(cell, "unknown")

    def _assign_nv_codes(self) -> dict[int, str]:
        codes: dict[int, str] = {}
        big = [c for c in self.nv_counts if c >= 10]
        if len(self.nv_counts) == 1:
            return {self.nv_counts[0]: "N"}
        for pos, count in enumerate(big):
            codes[count] = _NV_LETTERS[pos] if pos < len(_NV_LETTERS) else "#"
        for count in self.nv_counts:
            if count < 10:
                codes[count] = str(count)
        return codes

    def code(self, cell: str | None) -> str:
        """One-character code of a cell for the compact form."""
        if cell is None:
            return "?"
        if cell == "X":
            return "X"
        if is_nvlink(cell):
            return self._nv_codes.get(nvlink_count(cell), "#")
        return _PCIE_CODE.get(cell, "?")

    # --------------------------------------------------------------------- legend

    def legend(self) -> list[LegendEntry]:
        """The classes present in the matrix, nearest first, with their meaning."""
        entries: list[LegendEntry] = []
        if "X" in self.classes:
            entries.append(LegendEntry("X", "X", "self", LEGEND["X"]))
        for count in self.nv_counts:
            cls = f"NV{count}"
            meaning = "a single NVLink" if count == 1 else LEGEND["NV#"].replace("#", str(count))
            entries.append(LegendEntry(cls, self.code(cls), self.style(cls), meaning))
        for cls in PCIE_CLASSES:
            if cls in self.classes:
                entries.append(LegendEntry(cls, self.code(cls), self.style(cls), LEGEND[cls]))
        known = {"X", *PCIE_CLASSES} | {f"NV{c}" for c in self.nv_counts}
        if self.classes - known:
            entries.append(LegendEntry("?", "?", "unknown", _UNKNOWN_MEANING))
        return entries

    # -------------------------------------------------------------------- compact

    def number(self, column: int) -> int:
        """Number shown over a column in the compact form (``GPU12`` -> 12)."""
        match = _TRAILING_NUMBER.search(self.labels[column])
        return int(match.group(1)) if match else column

    def compact_blocks(self, width: int, label_width: int) -> list[CompactBlock]:
        """Split the columns into blocks that fit ``width`` characters (labels included).

        Columns are grouped by eight with a spacer between groups and two between the GPU and
        the NIC columns; a block never splits a group unless a group alone is too wide.
        """
        groups: list[list[int]] = []
        for kind in ("gpu", "nic"):
            cols = [j for j, k in enumerate(self.kinds) if k == kind]
            for start in range(0, len(cols), 8):
                groups.append(cols[start : start + 8])
        avail = max(8, width - label_width - 1)
        blocks: list[CompactBlock] = []
        current = CompactBlock()
        last_kind: str | None = None
        for group in groups:
            kind = self.kinds[group[0]]
            spacer: list[int | None] = []
            if current.columns:
                spacer = [None, None] if kind != last_kind else [None]
            if current.columns and len(current.columns) + len(spacer) + len(group) > avail:
                blocks.append(current)
                current = CompactBlock()
                spacer = []
            current.columns.extend([*spacer, *group])
            last_kind = kind
        if current.columns:
            blocks.append(current)
        return blocks

    def compact_header(self, block: CompactBlock) -> list[str]:
        """Header lines over a compact block: the kind (``GPU``/``NIC``) then digit rows."""
        numbers = [None if c is None else self.number(c) for c in block.columns]
        digits = max((len(str(n)) for n in numbers if n is not None), default=1)
        tag = [" "] * len(block.columns)
        previous: str | None = None
        for pos, col in enumerate(block.columns):
            if col is None:
                continue
            kind = self.kinds[col]
            if kind != previous:
                name = kind.upper()
                for k, ch in enumerate(name):
                    if pos + k < len(tag) and tag[pos + k] == " ":
                        tag[pos + k] = ch
                previous = kind
        lines = ["".join(tag).rstrip()]
        for place in range(digits):
            row = []
            for n in numbers:
                if n is None:
                    row.append(" ")
                    continue
                text = str(n).rjust(digits)
                row.append(text[place])
            lines.append("".join(row).rstrip())
        return lines

    def affinity_groups(self) -> list[tuple[list[int], str, str]]:
        """GPUs with identical (NUMA, CPU affinity), as ``(indices, numa, cpus)`` in order."""
        groups: dict[tuple[str, str], list[int]] = {}
        for row in self.rows:
            if row.kind != "gpu":
                continue
            match = _TRAILING_NUMBER.search(row.label)
            if not match:
                continue
            key = (row.numa or "?", row.cpu_affinity or "?")
            groups.setdefault(key, []).append(int(match.group(1)))
        return [(members, numa, cpus) for (numa, cpus), members in groups.items()]


def gpu_set(indices: list[int]) -> str:
    """``GPU3`` or ``GPUs 0-3,8`` for a compact affinity listing."""
    if len(indices) == 1:
        return f"GPU{indices[0]}"
    return f"GPUs {format_cpulist(indices)}"


@record(frozen=True)
class FindingMarks:
    """Devices and device pairs named by a failing or warning check, with the worst severity.

    Read off the checks' ``subjects`` (``GPU3``, ``NIC0``, ``GPU0-GPU1``) as the doctor wrote
    them: the presenters only point at what the report already says.
    """

    devices: dict[str, str] = field(default_factory=dict)
    pairs: dict[frozenset[str], str] = field(default_factory=dict)
    by_check: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    """Check id -> (severity, the labels and ``a-b`` pairs it names), worst check first."""

    def device(self, label: str) -> str | None:
        """Worst severity of a finding naming ``label``, or ``None``."""
        return self.devices.get(label)

    def pair(self, a: str, b: str) -> str | None:
        """Worst severity of a finding naming the pair ``a``-``b`` (either order), or ``None``."""
        return self.pairs.get(frozenset((a, b)))

    def checks_naming(self, *labels: str) -> list[str]:
        """Ids of the checks that name this device (one label) or pair (two labels)."""
        wanted = (
            {labels[0]}
            if len(labels) == 1
            else {f"{labels[0]}-{labels[1]}", f"{labels[1]}-{labels[0]}"}
        )
        return [cid for cid, (_, named) in self.by_check.items() if wanted & set(named)]

    def __bool__(self) -> bool:
        return bool(self.devices or self.pairs)


_MARKED = ("fail", "error", "warn")
_RANK = {"warn": 1, "error": 2, "fail": 3}


def finding_marks(report: Report | None, labels: list[str]) -> FindingMarks:
    """Which matrix devices and pairs carry a fail/error/warn finding.

    Args:
        report: The report (``None``: nothing marked).
        labels: The matrix labels; subjects that are not among them are ignored.
    """
    marks = FindingMarks()
    if report is None:
        return marks
    known = set(labels)
    for check in report.sorted_checks():
        if check.severity not in _MARKED:
            continue
        named: list[str] = []
        for subject in check.subjects:
            a, sep, b = subject.partition("-")
            if subject in known:
                key: object = subject
                store: dict[Any, str] = marks.devices
            elif sep and a in known and b in known and a != b:
                key, store = frozenset((a, b)), marks.pairs
            else:
                continue
            if subject not in named:
                named.append(subject)
            if _RANK[check.severity] > _RANK.get(store.get(key, ""), 0):
                store[key] = check.severity
        if named:
            marks.by_check[check.id] = (check.severity, named)
    return marks


def printable(text: str, keep: str = "") -> str:
    """``text`` with control and line-breaking characters written as visible escapes.

    For text from a capture that lands in a file someone may ``cat`` or paste: an ``ESC`` (an
    OSC title or clipboard write), a bidi override or a newline inside a fenced block must show
    as ``\\x1b``/``\\u202e``/``\\x0a``, never act. ``keep`` lists characters left as they are
    (``"\\n\\t"`` where a renderer treats them as plain whitespace).
    """
    out = []
    for ch in text:
        if ch not in keep and unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)

"""The default ``nvidia-smi`` summary table (the boxed one everybody pastes first).

Only what the table states unambiguously is read: driver and CUDA versions from the banner and,
per GPU row, its index, bus id, persistence mode, performance state and name (unless the table
truncated it with ``...``).
"""

from __future__ import annotations

import re

from pcidoc._record import record
from pcidoc.collect.importers.fragment import Context, Fragment, GpuPart
from pcidoc.collect.importers.text import Doc, label_span, lazy, normalize_bus_id, option_value
from pcidoc.collect.importers.walk import Walker

FORMAT = "nvidia-smi"
DESCRIPTION = "nvidia-smi summary table (driver/CUDA versions, GPU names and bus ids)"

_BANNER_RE = lazy(
    r"NVIDIA-SMI\s+(?P<smi>[\d.]+)\s+Driver Version:\s*(?P<driver>[\d.]+)"
    r"(?:\s+CUDA Version:\s*(?P<cuda>[\d.]+|N/A))?"
)
_BUS_RE = lazy(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")
_MODES = {"On": True, "Off": False, "WDDM": None, "TCC": None}
_PSTATE_RE = lazy(r"\bP(\d{1,2})\b")
_PROCESSES_RE = lazy(r"^\|\s*Processes:", re.IGNORECASE)


def _gpu_row(line: str) -> tuple[int, str, bool | None, str | None] | None:
    """``(index, name, persistence, bus id)`` of a table row like
    ``|   0  NVIDIA A100-SXM4-80GB   On  | 00000000:07:00.0 Off |``."""
    cells = line.strip().strip("|").split("|")
    if len(cells) < 2:
        return None
    first, second = cells[0].split(), cells[1].split()
    if len(first) < 2 or not first[0].isdecimal() or len(first[0]) > 3:
        return None
    if not second or not _BUS_RE.match(second[0]):
        return None
    mode = first[-1] if first[-1] in _MODES else None
    name = " ".join(first[1:-1] if mode else first[1:])
    return int(first[0]), name, _MODES.get(mode) if mode else None, normalize_bus_id(second[0])


def detect(doc: Doc, index: int, ctx: Context) -> bool:
    """True at the ``NVIDIA-SMI x  Driver Version: y  CUDA Version: z`` banner line."""
    return bool(_BANNER_RE.search(doc.lines[index]))


@record
class _Table:
    """One summary table being read."""

    frag: Fragment
    last_gpu: GpuPart | None = None
    in_processes: bool = False


def _on_boxed(table: _Table, line: str, index: int) -> bool:
    """Every line of the box is the table's; the ``Processes:`` box and what follows are read
    past."""
    line = line.strip()
    if not line.startswith(("|", "+", "=")):
        return False
    if table.in_processes or _PROCESSES_RE.match(line):
        table.in_processes = True
        return True
    row = _gpu_row(line)
    if row is not None:
        gpu_index, name, persistence, bus = row
        part = table.frag.gpu(gpu_index)
        if name and not name.endswith(("...", "…")):
            part.fields["name"] = name
        if bus:
            part.fields["bus_id"] = bus
        if persistence is not None:
            part.fields["persistence_mode"] = persistence
        table.last_gpu = part
        return True
    gpu = table.last_gpu
    if gpu is not None and "pstate" not in gpu.fields:
        match = _PSTATE_RE.search(line)
        if match and "W" in line:
            gpu.fields["pstate"] = int(match.group(1))
    return True


def parse(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Parse one summary table."""
    frag = Fragment(FORMAT, from_nvidia_smi=True)
    banner = _BANNER_RE.search(doc.lines[start])
    assert banner is not None
    frag.driver["driver_version"] = banner.group("driver")
    if banner.group("cuda") and banner.group("cuda") != "N/A":
        frag.driver["cuda_driver_version"] = banner.group("cuda")
    index = Walker().walk(doc, start + 1, _Table(frag), (_on_boxed,))
    indices = sorted(p.index for p in frag.gpus)
    selected = option_value(ctx.command, "-i", "--id")
    if indices and selected is None and indices == list(range(len(indices))):
        frag.gpu_count = len(indices)
    text = f"nvidia-smi table: driver {banner.group('driver')}"
    if "cuda_driver_version" in frag.driver:
        text += f", CUDA {frag.driver['cuda_driver_version']}"
    if indices:
        text += f"; {label_span([f'GPU{i}' for i in indices])}"
    frag.read.append(text)
    return frag, index

"""``nvidia-smi -q`` (also ``-q -d PCIE``, ``-i N -q``) and bare ``Fabric`` / PCI snippets.

Reads driver and CUDA versions, the number of attached GPUs and, per ``GPU <bus id>`` block:
identity (name, architecture, serial, UUID, bus id), persistence/MIG/virtualization modes, the
PCIe link (NVML semantics: ``Max`` = what GPU and slot together allow -> ``max_gen``,
``Device Max`` -> ``device_max_gen``, ``Host Max`` -> ``host_max_gen``), replay counters,
momentary throughput, performance state, BAR1 size and the NVLink fabric state.

Values are looked up by (nearest group heading, key), so stray blank lines and changed
indentation do not matter. The GPU index is the order of the blocks unless ``-i N`` is visible.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pcidoc._record import field, record
from pcidoc.collect.importers.fragment import Context, Fragment, GpuPart
from pcidoc.collect.importers.text import (
    Doc,
    lazy,
    normalize_bus_id,
    option_value,
    to_float,
    to_int,
)
from pcidoc.collect.importers.walk import Walker

FORMAT = "nvidia-smi-query"
DESCRIPTION = "nvidia-smi -q [-i N] [-d PCIE] (GPU identity, PCIe link state, counters, fabric)"

_BANNER_RE = lazy(r"^\s*=+\s*NVSMI LOG\s*=+\s*$")
_GPU_RE = lazy(r"^\s*GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_KV_RE = lazy(r"^(?P<indent>\s*)(?P<key>[A-Za-z][^:]*):\s?(?P<value>.*)$")
_HEADING_RE = lazy(r"^(?P<indent>\s*)(?P<name>[A-Za-z][\w .()/+-]*)$")
_TOP_KEYS = {"timestamp", "driver version", "cuda version", "attached gpus", "nvml version"}
_SNIPPET_HEADINGS = {"fabric", "pci", "gpu link info", "pcie generation", "link width"}
_THROUGHPUT_RE = lazy(r"^([\d.]+)\s*([KMG]?)B/s$", re.IGNORECASE)
_SIZE_RE = lazy(r"^([\d.]+)\s*([KMGT]i?B)$", re.IGNORECASE)
_PSTATE_RE = lazy(r"^P(\d{1,2})$")
_VIRT = {
    "none": "none",
    "pass-through": "passthrough",
    "passthrough": "passthrough",
    "vgpu": "vgpu",
    "host vgpu": "host_vgpu",
    "host vsga": "host_vsga",
}
_FABRIC_STATE = {
    "completed": "completed",
    "in progress": "in_progress",
    "not started": "not_started",
    "not supported": "not_supported",
}
_NA = {"n/a", "[n/a]", "unknown", "not supported", "[not supported]", "unavailable"}


def _aligned(line: str) -> bool:
    """True for nvidia-smi's aligned ``Key<2+ spaces>: value`` layout (not prose)."""
    key, colon, _ = line.partition(":")
    return bool(colon) and key.endswith("  ") and key.strip()[:1].isalpha()


def _kv(line: str) -> tuple[int, str, str] | None:
    match = _KV_RE.match(line)
    if not match:
        return None
    key = " ".join(match.group("key").split()).lower()
    return len(match.group("indent").expandtabs(4)), key, match.group("value").strip()


def _heading(line: str) -> tuple[int, str] | None:
    match = _HEADING_RE.match(line)
    if not match:
        return None
    name = " ".join(match.group("name").split()).lower()
    return len(match.group("indent").expandtabs(4)), name


def _followed_by_kv(doc: Doc, index: int) -> bool:
    for nxt in range(index + 1, min(index + 3, len(doc.lines))):
        line = doc.lines[nxt]
        if not line.strip():
            continue
        return _kv(line) is not None and ":" in line
    return False


def detect(doc: Doc, index: int, ctx: Context) -> bool:
    """True at the NVSMI LOG banner, a ``GPU <bus id>`` block, ``Attached GPUs``, or a bare
    ``Fabric`` / ``PCI`` / ``GPU Link Info`` heading followed by key-value lines."""
    line = doc.lines[index]
    if _BANNER_RE.match(line) or _GPU_RE.match(line):
        return True
    kv = _kv(line)
    if kv is not None and kv[1] in ("attached gpus", "driver version") and kv[2]:
        return _aligned(line) or kv[1] == "attached gpus"
    heading = _heading(line)
    return heading is not None and heading[1] in _SNIPPET_HEADINGS and _followed_by_kv(doc, index)


def _na_reason(value: str) -> str:
    return f"{value} in nvidia-smi -q"


def _set(
    part: GpuPart, target: str, name: str, value: Any, raw: str, sub: dict[str, Any] | None = None
) -> None:
    store = part.fields if sub is None else sub
    if value is None:
        if raw.strip().lower() in _NA:
            part.unknown(name, _na_reason(raw.strip()), target)
        elif raw.strip():
            part.unknown(name, f"unreadable in the paste: '{raw.strip()[:40]}'", target)
        return
    store[name] = value


def _bool(raw: str) -> bool | None:
    value = raw.strip().lower()
    if value in ("enabled", "on", "yes", "true"):
        return True
    if value in ("disabled", "off", "no", "false"):
        return False
    return None


def _gen(raw: str) -> int | None:
    value = to_int(raw)
    return value if value is not None and 1 <= value <= 10 else None


def _width(raw: str) -> int | None:
    value = to_int(raw.strip().lower().rstrip("x"))
    return value if value is not None and 0 < value <= 64 else None


def _throughput(raw: str) -> float | None:
    match = _THROUGHPUT_RE.match(raw.strip())
    if not match:
        return None
    value = to_float(match.group(1))
    if value is None:
        return None
    return value * {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}[match.group(2).upper()]


def _bytes(raw: str) -> int | None:
    match = _SIZE_RE.match(raw.strip())
    if not match:
        return None
    value = to_float(match.group(1))
    if value is None:
        return None
    unit = match.group(2).upper()
    scale = {"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}.get(
        unit, {"KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}.get(unit, 1)
    )
    return int(value * scale)


def _named(value: str) -> str | None:
    return value if value and value.lower() not in _NA else None


def _known(value: str) -> str | None:
    return value if value.lower() not in _NA else None


def _uuid(value: str) -> str | None:
    return value if value.startswith(("GPU-", "MIG-")) else None


def _pstate(value: str) -> int | None:
    match = _PSTATE_RE.match(value)
    return int(match.group(1)) if match else None


def _fabric_status(value: str) -> str | None:
    status = None if value.lower() in _NA or not value else value
    return "success" if status is not None and status.lower() == "success" else status


_Rule = tuple["str | None", frozenset[str], str, str, Callable[[str], Any]]

_RULES: tuple[_Rule, ...] = (
    (None, frozenset({"product name"}), "", "name", _named),
    (None, frozenset({"product architecture"}), "", "architecture", _known),
    (None, frozenset({"serial number"}), "", "serial", _named),
    (None, frozenset({"gpu uuid"}), "", "uuid", _uuid),
    (None, frozenset({"persistence mode"}), "", "persistence_mode", _bool),
    (
        None,
        frozenset({"virtualization mode"}),
        "",
        "virtualization_mode",
        lambda v: _VIRT.get(v.lower()),
    ),
    (None, frozenset({"bus id"}), "", "bus_id", normalize_bus_id),
    (
        None,
        frozenset({"replays since reset", "replay counter", "replays"}),
        "",
        "replay_count",
        to_int,
    ),
    (None, frozenset({"replay number rollovers"}), "", "replay_rollover_count", to_int),
    (None, frozenset({"tx throughput"}), "", "tx_bytes_per_s", _throughput),
    (None, frozenset({"rx throughput"}), "", "rx_bytes_per_s", _throughput),
    (None, frozenset({"performance state"}), "", "pstate", _pstate),
    ("mig mode", frozenset({"current"}), "mig", "enabled", _bool),
    ("mig mode", frozenset({"pending"}), "mig", "pending", _bool),
    ("pcie generation", frozenset({"max"}), "pcie", "max_gen", _gen),
    ("pcie generation", frozenset({"current"}), "pcie", "current_gen", _gen),
    ("pcie generation", frozenset({"device max"}), "pcie", "device_max_gen", _gen),
    ("pcie generation", frozenset({"host max"}), "pcie", "host_max_gen", _gen),
    ("link width", frozenset({"max"}), "pcie", "max_width", _width),
    ("link width", frozenset({"current"}), "pcie", "current_width", _width),
    ("link width", frozenset({"device max"}), "pcie", "device_max_width", _width),
    ("bar1 memory usage", frozenset({"total"}), "", "bar1_total_bytes", _bytes),
    ("fabric", frozenset({"state"}), "fabric", "state", lambda v: _FABRIC_STATE.get(v.lower())),
    (None, frozenset({"fabric state"}), "fabric", "state", lambda v: _FABRIC_STATE.get(v.lower())),
    ("fabric", frozenset({"status"}), "fabric", "status", _fabric_status),
    (None, frozenset({"fabric status"}), "fabric", "status", _fabric_status),
    (None, frozenset({"cliqueid", "clique id"}), "fabric", "clique_id", to_int),
    (None, frozenset({"clusteruuid", "cluster uuid"}), "fabric", "cluster_uuid", _named),
)
"""(heading the key must be under or None, keys, sub-object, field, value reader): what a
``-q`` key fills in a GPU block, in the order the keys are tried."""


def _apply(part: GpuPart, heading: str | None, key: str, raw: str) -> bool:
    """Store one key of a GPU block; returns False when the key is not one pcidoc reads."""
    for under, keys, sub, name, read in _RULES:
        if key in keys and (under is None or under == heading):
            store = {"": None, "mig": part.mig, "pcie": part.pcie, "fabric": part.fabric}[sub]
            _set(part, sub, name, read(raw.strip()), raw, store)
            return True
    return False


@record
class _Query:
    """One ``-q`` output (or snippet) being read."""

    doc: Doc
    frag: Fragment
    blocks: list[tuple[str | None, GpuPart]] = field(default_factory=list)
    current: GpuPart | None = None
    heading: str | None = None
    implicit: bool = False

    def block(self) -> GpuPart:
        """The current GPU block; a block without its ``GPU <bus id>`` line is GPU0's."""
        if self.current is None:
            self.current = GpuPart(index=0, index_certain=False)
            self.blocks.append((None, self.current))
            self.implicit = True
        return self.current


def _on_block(query: _Query, line: str, index: int) -> bool:
    """The banner, and a ``GPU <bus id>`` line that starts a GPU block."""
    if _BANNER_RE.match(line):
        return True
    match = _GPU_RE.match(line)
    if match is None:
        return False
    query.current = GpuPart(index=len(query.blocks))
    bus = normalize_bus_id(match.group(1))
    if bus:
        query.current.fields["bus_id"] = bus
    query.blocks.append((bus, query.current))
    query.heading = None
    return True


def _on_heading(query: _Query, line: str, index: int) -> bool | None:
    head = _heading(line) if _kv(line) is None else None
    if head is None:
        return False
    if head[0] == 0 and not (
        head[1] in _SNIPPET_HEADINGS
        or (query.current is not None and _followed_by_kv(query.doc, index))
    ):
        return None
    query.block()
    query.heading = head[1]
    return True


def _on_key(query: _Query, line: str, index: int) -> bool | None:
    kv = _kv(line)
    if kv is None:
        return None  # neither a heading nor a key: the output ends
    indent, key, value = kv
    if indent == 0 and key not in _TOP_KEYS and (query.current is None or not _aligned(line)):
        return None
    if key in _TOP_KEYS and (query.current is None or indent == 0):
        _top_key(query.frag, key, value)
        return True
    _apply(query.block(), query.heading, key, value)
    return True


def _top_key(frag: Fragment, key: str, value: str) -> None:
    if key == "driver version" and value and value.lower() not in _NA:
        frag.driver["driver_version"] = value
    elif key == "cuda version" and value and value.lower() not in _NA:
        frag.driver["cuda_driver_version"] = value
    elif key == "attached gpus":
        frag.attached_gpus = to_int(value)
    elif key == "nvml version":
        frag.driver["nvml_version"] = value


_HANDLERS = (_on_block, _on_heading, _on_key)


def parse(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Parse one ``nvidia-smi -q`` output (or snippet) starting at ``start``."""
    query = _Query(doc, Fragment(FORMAT, from_nvidia_smi=True))
    index = Walker(blank_lines=3).walk(doc, start, query, _HANDLERS)
    _assign_indices(query.frag, query.blocks, ctx, query.implicit)
    _describe(query.frag)
    return query.frag, index


def _selected_ids(ctx: Context) -> tuple[str | None, list[int] | None]:
    """``-i``'s value and, when it lists indices, the indices."""
    selected = option_value(ctx.command, "-i", "--id")
    if selected is None:
        return None, None
    parsed = [to_int(x) for x in selected.split(",")]
    if all(p is not None for p in parsed):
        return selected, [p for p in parsed if p is not None]
    return selected, None


def _assign_indices(
    frag: Fragment, blocks: list[tuple[str | None, GpuPart]], ctx: Context, implicit: bool
) -> None:
    selected, ids = _selected_ids(ctx)
    attached = frag.attached_gpus
    if ids is not None and len(ids) == len(blocks):
        for gpu_id, (_, part) in zip(ids, blocks, strict=True):
            part.index = gpu_id
    elif blocks:
        if selected is not None:
            frag.warn(
                f"nvidia-smi -q: '-i {selected}' does not name GPU indices; blocks numbered in "
                "order and matched to other outputs by bus id"
            )
            for _, part in blocks:
                part.index_certain = False
        elif implicit:
            frag.warn(
                "nvidia-smi -q: block without its 'GPU <bus id>' heading; attributed to GPU0 "
                "(matched to other outputs by bus id when possible)"
            )
        elif attached is None or len(blocks) < attached:
            if attached is not None:
                frag.warn(
                    f"nvidia-smi -q: {len(blocks)} of {attached} attached GPUs in the paste and "
                    "no '-i N' visible; blocks taken as GPU0.. in order (matched by bus id when "
                    "another output knows it)"
                )
            for _, part in blocks:
                part.index_certain = False
    frag.gpus = [part for _, part in blocks]
    if attached is not None and ids is None and selected is None and len(blocks) == attached:
        frag.gpu_count = attached


def _describe(frag: Fragment) -> None:
    """What was read, in one line."""
    descriptions = []
    for part in frag.gpus:
        name = part.fields.get("name")
        bus = part.fields.get("bus_id")
        what = ", ".join(x for x in (name, bus) if x)
        fabric = "/".join(str(part.fabric[k]) for k in ("state", "status") if k in part.fabric)
        if fabric:
            what = f"{what}, fabric {fabric}" if what else f"fabric {fabric}"
        descriptions.append(f"GPU{part.index}" + (f" ({what})" if what else ""))
    text = "nvidia-smi -q: " + ("; ".join(descriptions) if descriptions else "no GPU block")
    if frag.attached_gpus is not None:
        text += f"; {frag.attached_gpus} attached"
    if "driver_version" in frag.driver:
        text += f"; driver {frag.driver['driver_version']}"
    if "cuda_driver_version" in frag.driver:
        text += f", CUDA {frag.driver['cuda_driver_version']}"
    frag.read.append(text)

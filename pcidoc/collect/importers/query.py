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
from typing import Any

from pcidoc.collect.importers.fragment import Context, Fragment, GpuPart
from pcidoc.collect.importers.text import (
    Doc,
    lazy,
    normalize_bus_id,
    option_value,
    to_float,
    to_int,
)

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


def _apply(part: GpuPart, heading: str | None, key: str, raw: str) -> bool:
    """Store one key of a GPU block; returns False when the key is not one pcidoc reads."""
    value = raw.strip()
    if key == "product name":
        _set(part, "", "name", value if value.lower() not in _NA and value else None, raw)
    elif key == "product architecture":
        _set(part, "", "architecture", value if value.lower() not in _NA else None, raw)
    elif key == "serial number":
        _set(part, "", "serial", value if value.lower() not in _NA and value else None, raw)
    elif key == "gpu uuid":
        _set(part, "", "uuid", value if value.startswith(("GPU-", "MIG-")) else None, raw)
    elif key == "persistence mode":
        _set(part, "", "persistence_mode", _bool(value), raw)
    elif key == "virtualization mode":
        _set(part, "", "virtualization_mode", _VIRT.get(value.lower()), raw)
    elif key == "bus id":
        _set(part, "", "bus_id", normalize_bus_id(value), raw)
    elif key in ("replays since reset", "replay counter", "replays"):
        _set(part, "", "replay_count", to_int(value), raw)
    elif key == "replay number rollovers":
        _set(part, "", "replay_rollover_count", to_int(value), raw)
    elif key == "tx throughput":
        _set(part, "", "tx_bytes_per_s", _throughput(value), raw)
    elif key == "rx throughput":
        _set(part, "", "rx_bytes_per_s", _throughput(value), raw)
    elif key == "performance state":
        match = _PSTATE_RE.match(value)
        _set(part, "", "pstate", int(match.group(1)) if match else None, raw)
    elif heading == "mig mode" and key in ("current", "pending"):
        name = "enabled" if key == "current" else "pending"
        _set(part, "mig", name, _bool(value), raw, part.mig)
    elif heading == "pcie generation" and key in ("max", "current", "device max", "host max"):
        name = {
            "max": "max_gen",
            "current": "current_gen",
            "device max": "device_max_gen",
            "host max": "host_max_gen",
        }[key]
        _set(part, "pcie", name, _gen(value), raw, part.pcie)
    elif heading == "link width" and key in ("max", "current", "device max"):
        name = {"max": "max_width", "current": "current_width", "device max": "device_max_width"}
        _set(part, "pcie", name[key], _width(value), raw, part.pcie)
    elif heading == "bar1 memory usage" and key == "total":
        _set(part, "", "bar1_total_bytes", _bytes(value), raw)
    elif (heading == "fabric" and key == "state") or key == "fabric state":
        state = _FABRIC_STATE.get(value.lower())
        _set(part, "fabric", "state", state, raw, part.fabric)
    elif (heading == "fabric" and key == "status") or key == "fabric status":
        status = None if value.lower() in _NA or not value else value
        if status is not None and status.lower() == "success":
            status = "success"
        _set(part, "fabric", "status", status, raw, part.fabric)
    elif key in ("cliqueid", "clique id"):
        _set(part, "fabric", "clique_id", to_int(value), raw, part.fabric)
    elif key in ("clusteruuid", "cluster uuid"):
        uuid = value if value and value.lower() not in _NA else None
        _set(part, "fabric", "cluster_uuid", uuid, raw, part.fabric)
    else:
        return False
    return True


def parse(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Parse one ``nvidia-smi -q`` output (or snippet) starting at ``start``."""
    frag = Fragment(FORMAT, from_nvidia_smi=True)
    blocks: list[tuple[str | None, GpuPart]] = []
    current: GpuPart | None = None
    heading: str | None = None
    implicit = False
    index = start
    blank_run = 0
    read_keys = 0
    while index < len(doc.lines):
        line = doc.lines[index]
        if not line.strip():
            blank_run += 1
            if blank_run > 3:
                break
            index += 1
            continue
        if doc.is_command(index):
            break
        if _BANNER_RE.match(line):
            blank_run = 0
            index += 1
            continue
        gpu_match = _GPU_RE.match(line)
        if gpu_match:
            current = GpuPart(index=len(blocks))
            bus = normalize_bus_id(gpu_match.group(1))
            if bus:
                current.fields["bus_id"] = bus
            blocks.append((bus, current))
            heading = None
            blank_run = 0
            index += 1
            continue
        kv = _kv(line)
        head = _heading(line) if kv is None else None
        indent = kv[0] if kv else head[0] if head else 0
        if kv is None and head is None:
            break
        if (
            indent == 0
            and kv is not None
            and kv[1] not in _TOP_KEYS
            and (current is None or not _aligned(line))
        ):
            break
        if (
            indent == 0
            and head is not None
            and not (
                head[1] in _SNIPPET_HEADINGS
                or (current is not None and _followed_by_kv(doc, index))
            )
        ):
            break
        blank_run = 0
        if head is not None:
            if current is None:
                current = GpuPart(index=0, index_certain=False)
                blocks.append((None, current))
                implicit = True
            heading = head[1]
            index += 1
            continue
        assert kv is not None
        _, key, value = kv
        if key in _TOP_KEYS and (current is None or indent == 0):
            if key == "driver version" and value and value.lower() not in _NA:
                frag.driver["driver_version"] = value
            elif key == "cuda version" and value and value.lower() not in _NA:
                frag.driver["cuda_driver_version"] = value
            elif key == "attached gpus":
                frag.attached_gpus = to_int(value)
            elif key == "nvml version":
                frag.driver["nvml_version"] = value
            index += 1
            continue
        if current is None:
            current = GpuPart(index=0, index_certain=False)
            blocks.append((None, current))
            implicit = True
        if _apply(current, heading, key, value):
            read_keys += 1
        index += 1

    _assign_indices(frag, blocks, ctx, implicit)
    return frag, index


def _assign_indices(
    frag: Fragment, blocks: list[tuple[str | None, GpuPart]], ctx: Context, implicit: bool
) -> None:
    selected = option_value(ctx.command, "-i", "--id")
    ids: list[int] | None = None
    if selected is not None:
        parsed = [to_int(x) for x in selected.split(",")]
        if all(p is not None for p in parsed):
            ids = [p for p in parsed if p is not None]
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
    descriptions = []
    for _, part in blocks:
        name = part.fields.get("name")
        bus = part.fields.get("bus_id")
        what = ", ".join(x for x in (name, bus) if x)
        fabric = "/".join(str(part.fabric[k]) for k in ("state", "status") if k in part.fabric)
        if fabric:
            what = f"{what}, fabric {fabric}" if what else f"fabric {fabric}"
        descriptions.append(f"GPU{part.index}" + (f" ({what})" if what else ""))
    text = "nvidia-smi -q: " + ("; ".join(descriptions) if descriptions else "no GPU block")
    if attached is not None:
        text += f"; {attached} attached"
    if "driver_version" in frag.driver:
        text += f"; driver {frag.driver['driver_version']}"
    if "cuda_driver_version" in frag.driver:
        text += f", CUDA {frag.driver['cuda_driver_version']}"
    frag.read.append(text)

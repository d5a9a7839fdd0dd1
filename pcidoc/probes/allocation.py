"""The GPUs this job may use: ``CUDA_VISIBLE_DEVICES``, Slurm's GPU list, the device cgroup.

On Slurm and shared nodes NVML sees every GPU of the machine while the job owns a few; the
probes must measure only those. The first of these that is set decides (parent side, pure
Python, standard library only):

1. ``CUDA_VISIBLE_DEVICES`` — indices (``0,2``), UUIDs (``GPU-8f3c…``, a unique prefix is
   enough, as CUDA accepts) or both; as in CUDA, the list ends at the first entry that names no
   GPU (an unknown index or UUID, a duplicate, ``-1``), and an empty value allows none.
   Indices are CUDA's: in PCI bus order (= NVML's) only with ``CUDA_DEVICE_ORDER=PCI_BUS_ID``;
   otherwise CUDA numbers the GPUs fastest first, which only CUDA can tell. The allocation is
   then read in PCI order provisionally and marked :attr:`Allocation.resolve_in_child`: the
   ``env`` probe runs with the user's variables untouched, reports each CUDA device's UUID and
   bus id, and :func:`resolve` maps them to NVML's GPUs. ``MIG-…`` entries name MIG instances,
   which the probes do not measure;
2. ``SLURM_STEP_GPUS``, then ``SLURM_JOB_GPUS`` — Slurm's global GPU ids. Since Slurm 21.08
   (``gres_common.c``: "GPUs ... want it to match the order they enumerate on the PCI bus")
   these are GPU *indices* in PCI bus order, not device minor numbers (``/dev/nvidiaN``), which
   older Slurm wrote. They are read as indices; where the driver's minor numbers
   (``/proc/driver/nvidia/gpus/*/information``) would name other GPUs, or cannot be read, a
   note says so, since the installed Slurm's version is not visible from the job;
3. the cgroup v1 ``devices`` controller's list (``c 195:N``): real device minors, mapped to
   GPUs through the driver's bus ids. A cgroup v2 device filter is an eBPF program that cannot
   be read; the driver then enforces it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

NVIDIA_MAJOR = 195
"""Character-device major number of ``/dev/nvidiaN``."""

SLURM_VARIABLES = ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS")


@dataclass(frozen=True)
class GpuId:
    """What identifies one GPU: NVML index, UUID, PCI bus id."""

    index: int
    uuid: str | None = None
    bus_id: str | None = None


@dataclass
class Allocation:
    """The GPUs the probes may use.

    Attributes:
        indices: Allowed GPU indices, in the order given; ``None``: no restriction found.
        source: What restricted them (``CUDA_VISIBLE_DEVICES``, ``SLURM_STEP_GPUS``,
            ``SLURM_JOB_GPUS``, ``cgroup``), or ``None``.
        value: The variable's value (or the cgroup list) as read.
        notes: Entries that were ignored, and why.
    """

    indices: list[int] | None = None
    source: str | None = None
    value: str | None = None
    notes: list[str] = field(default_factory=list)
    resolve_in_child: bool = False
    """``CUDA_VISIBLE_DEVICES`` holds indices in CUDA's fastest-first order: ``indices`` is a
    provisional PCI-order reading until :func:`resolve` maps what the child saw."""

    def allows(self, index: int) -> bool:
        """True when GPU ``index`` is inside the allocation."""
        return self.indices is None or index in self.indices

    def describe(self) -> str:
        """``CUDA_VISIBLE_DEVICES=0,1`` or ``all GPUs NVML sees``."""
        if self.source is None:
            return "no CUDA_VISIBLE_DEVICES or Slurm GPU list: every GPU NVML sees"
        return f"{self.source}={self.value}"

    def as_dict(self) -> dict[str, object]:
        """JSON form (``pcidoc probe`` output, measurement conditions)."""
        return {"source": self.source, "value": self.value, "gpus": self.indices}


def _uuid_key(uuid: object) -> str | None:
    text = str(uuid).strip().lower() if uuid else ""
    if not text:
        return None
    return text if text.startswith(("gpu-", "mig-")) else "gpu-" + text


def match_device(device: Mapping[str, object], gpus: Sequence[GpuId]) -> int | None:
    """The NVML index of a CUDA device the ``env`` probe reported (by UUID, else bus id)."""
    uuid = _uuid_key(device.get("uuid"))
    if uuid:
        for gpu in gpus:
            if _uuid_key(gpu.uuid) == uuid:
                return gpu.index
    bus = _bus_key(str(device.get("bus_id") or ""))
    if bus:
        for gpu in gpus:
            if gpu.bus_id and _bus_key(gpu.bus_id) == bus:
                return gpu.index
    return None


def _gpu_names(indices: Sequence[int]) -> str:
    return ", ".join(f"GPU{i}" for i in indices) or "no GPU"


def resolve(
    found: Allocation, gpus: Sequence[GpuId], devices: Sequence[Mapping[str, object]]
) -> Allocation:
    """``found`` with CUDA-ordered indices replaced by the GPUs the ``env`` probe saw (run with
    the user's ``CUDA_VISIBLE_DEVICES`` and ``CUDA_DEVICE_ORDER``), matched by UUID or bus id.
    Unchanged unless :attr:`Allocation.resolve_in_child`."""
    if not found.resolve_in_child:
        return found
    mapped = [match_device(device, gpus) for device in devices]
    if devices and None not in mapped:
        indices = list(dict.fromkeys(i for i in mapped if i is not None))
        note = f"CUDA's order, as the probe child saw it: {_gpu_names(indices)}"
        return Allocation(indices, found.source, found.value, [*found.notes, note])
    note = (
        "the probe child could not name its GPUs (no UUID or bus id from CUDA): "
        f"CUDA_VISIBLE_DEVICES read in PCI bus order ({_gpu_names(found.indices or [])})"
    )
    return Allocation(found.indices, found.source, found.value, [*found.notes, note])


def _match_uuid(entry: str, gpus: Sequence[GpuId]) -> GpuId | None:
    wanted = entry.lower()
    if not wanted.startswith("gpu-"):
        wanted = "gpu-" + wanted
    matches = [g for g in gpus if g.uuid and g.uuid.lower().startswith(wanted)]
    return matches[0] if len(matches) == 1 else None


def parse_visible_devices(value: str, gpus: Sequence[GpuId]) -> tuple[list[int], list[str]]:
    """GPU indices ``CUDA_VISIBLE_DEVICES=value`` allows, with CUDA's rules; and notes."""
    by_index = {g.index: g for g in gpus}
    chosen: list[int] = []
    notes: list[str] = []
    for raw in value.split(","):
        entry = raw.strip()
        if not entry:
            if value.strip():
                notes.append("an empty entry ends the list (as in CUDA)")
            break
        if entry.startswith("MIG-"):
            notes.append(f"{entry[:16]}… is a MIG instance: the probes measure whole GPUs")
            continue
        if re.fullmatch(r"-?\d+", entry):
            gpu = by_index.get(int(entry))
        else:
            gpu = _match_uuid(entry, gpus)
        if gpu is None or gpu.index in chosen:
            why = "a duplicate" if gpu is not None else "no GPU NVML sees (or not unique)"
            notes.append(f"{entry!r} is {why}: the list ends there (as in CUDA)")
            break
        chosen.append(gpu.index)
    return chosen, notes


def driver_minors(root: str | Path = "/proc/driver/nvidia/gpus") -> dict[int, str]:
    """Device minor number -> PCI bus id, from the driver's per-GPU ``information`` files."""
    minors: dict[int, str] = {}
    base = Path(root)
    try:
        entries = sorted(base.iterdir())
    except OSError:
        return minors
    for entry in entries:
        try:
            text = (entry / "information").read_text(errors="replace")
        except OSError:
            continue
        minor = re.search(r"Device Minor:\s*(\d+)", text)
        bus = re.search(r"Bus Location:\s*([0-9a-fA-F:.]+)", text)
        if minor:
            minors[int(minor.group(1))] = (bus.group(1) if bus else entry.name).lower()
    return minors


def _bus_key(bus: str | None) -> str | None:
    """``0000:3b:00.0`` (any domain width, any case) -> ``3b:00.0``."""
    if not bus:
        return None
    parts = bus.lower().split(":")
    return ":".join(parts[-2:]) if len(parts) >= 2 else None


def minors_to_indices(
    minors: Iterable[int], gpus: Sequence[GpuId], minor_bus: Mapping[int, str]
) -> tuple[list[int], list[str]]:
    """GPU indices of device minor numbers (through the driver's bus ids; else minor = index)."""
    notes: list[str] = []
    by_bus = {_bus_key(g.bus_id): g.index for g in gpus if g.bus_id}
    known = {g.index for g in gpus}
    out: list[int] = []
    for minor in minors:
        if minor_bus:
            index = by_bus.get(_bus_key(minor_bus.get(minor)))
        else:
            index = minor if minor in known else None
        if index is None:
            notes.append(f"device /dev/nvidia{minor} matches no GPU NVML sees")
        elif index not in out:
            out.append(index)
    if not minor_bus and out:
        notes.append("GPU ids taken as NVML indices (the driver's minor numbers are unreadable)")
    return out, notes


def slurm_to_indices(
    ids: Sequence[int], gpus: Sequence[GpuId], minor_bus: Mapping[int, str]
) -> tuple[list[int], list[str]]:
    """GPU indices of Slurm's GPU ids, read as Slurm 21.08+ writes them: indices in PCI bus
    order (NVML's order; by bus id when every GPU has one). A note when an older Slurm's
    reading (device minor numbers) would name other GPUs, or cannot be checked."""
    if all(g.bus_id for g in gpus):
        ordered = sorted(gpus, key=lambda g: _bus_key(g.bus_id) or "")
    else:
        ordered = sorted(gpus, key=lambda g: g.index)
    out: list[int] = []
    notes: list[str] = []
    for gid in ids:
        if not 0 <= gid < len(ordered):
            notes.append(f"Slurm GPU index {gid} is beyond the {len(ordered)} GPUs NVML sees")
        elif ordered[gid].index not in out:
            out.append(ordered[gid].index)
    if minor_bus:
        as_minors, _ = minors_to_indices(ids, gpus, minor_bus)
        if as_minors != out:
            notes.append(
                "read as GPU indices in PCI bus order (Slurm 21.08 and later); an older Slurm "
                f"wrote device minor numbers, which would be {_gpu_names(as_minors)}"
            )
    elif out:
        notes.append(
            "read as GPU indices in PCI bus order (Slurm 21.08 and later); the driver's minor "
            "numbers are unreadable, so an older Slurm's device minors could not be checked"
        )
    return out, notes


def _int_list(value: str) -> list[int] | None:
    """``0,1`` / ``0-3,5`` -> ints; ``None`` when it is not such a list."""
    out: list[int] = []
    for part in value.split(","):
        part = part.strip()
        found = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not found:
            return None
        low = int(found.group(1))
        high = int(found.group(2) or low)
        out.extend(range(low, high + 1))
    return out


def cgroup_minors(proc_root: str | Path = "/proc", cgroup_root: str | Path = "/sys/fs/cgroup"):
    """Minor numbers of ``/dev/nvidiaN`` the cgroup v1 device list allows, with the list.

    Returns:
        ``(minors, text)``; ``(None, None)`` when there is no readable v1 device list or it
        allows every NVIDIA device.
    """
    try:
        lines = Path(proc_root, "self", "cgroup").read_text().splitlines()
    except OSError:
        return None, None
    path = None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3 and "devices" in parts[1].split(","):
            path = parts[2]
    if path is None:
        return None, None
    try:
        text = Path(cgroup_root, "devices", path.lstrip("/"), "devices.list").read_text()
    except OSError:
        return None, None
    minors: set[int] = set()
    for line in text.split("\n"):
        found = re.fullmatch(r"\s*([abc])\s+(\*|\d+):(\*|\d+)\s+\w+\s*", line)
        if not found:
            continue
        kind, major, minor = found.groups()
        if kind == "a" or (major in ("*", str(NVIDIA_MAJOR)) and minor == "*"):
            return None, None
        if major == str(NVIDIA_MAJOR) and minor.isdecimal() and int(minor) < 128:
            minors.add(int(minor))
    shown = ",".join(map(str, sorted(minors)))
    return sorted(minors), f"/dev/nvidia{{{shown}}}"


def current(
    gpus: Sequence[GpuId],
    environ: Mapping[str, str] | None = None,
    driver_root: str | Path = "/proc/driver/nvidia/gpus",
    proc_root: str | Path = "/proc",
    cgroup_root: str | Path = "/sys/fs/cgroup",
) -> Allocation:
    """The allocation of this process (see the module docstring for the order)."""
    env = os.environ if environ is None else environ
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        indices, notes = parse_visible_devices(visible, gpus)
        by_index = any(re.fullmatch(r"\d+", e.strip()) for e in visible.split(","))
        pci_order = env.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID"
        resolve_in_child = bool(indices) and by_index and not pci_order
        if resolve_in_child:
            notes.append(
                "CUDA_DEVICE_ORDER is not PCI_BUS_ID, so CUDA numbers GPUs fastest first: the "
                "probe child tells which GPUs these indices are"
            )
        return Allocation(indices, "CUDA_VISIBLE_DEVICES", visible, notes, resolve_in_child)
    for variable in SLURM_VARIABLES:
        value = env.get(variable)
        if not value:
            continue
        ids = _int_list(value)
        if ids is None:
            return Allocation(None, None, None, [f"{variable}={value!r} is not a GPU id list"])
        indices, notes = slurm_to_indices(ids, gpus, driver_minors(driver_root))
        return Allocation(indices, variable, value, notes)
    minors, text = cgroup_minors(proc_root, cgroup_root)
    if minors is not None:
        indices, notes = minors_to_indices(minors, gpus, driver_minors(driver_root))
        return Allocation(indices, "cgroup", text, notes)
    return Allocation()

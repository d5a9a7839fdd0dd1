"""Which CUDA device of a probe child each NVML GPU is (parent side, no torch).

NVML numbers GPUs its way (PCI bus order); a CUDA process numbers the devices it can see, in
``CUDA_DEVICE_ORDER``, after ``CUDA_VISIBLE_DEVICES``. A GPU that NVML lost, or one more
GPU on a cgroup-limited node, shifts every ordinal after it, so ordinals are never assumed
from NVML indices when anything else is known. The choice, first that applies:

1. every chosen GPU has a UUID: the child gets ``CUDA_VISIBLE_DEVICES=<uuids>`` (and
   ``CUDA_DEVICE_ORDER=PCI_BUS_ID``, which then changes nothing) and GPU k of the list is CUDA
   device k;
2. otherwise the child sees exactly what the ``env`` probe saw (the same
   ``CUDA_VISIBLE_DEVICES`` and ``CUDA_DEVICE_ORDER``), and each GPU is the CUDA device the
   ``env`` probe reported with its UUID or bus id (from torch's device properties, or from
   ``cudaDeviceGetPCIBusId`` where torch has none: torch 2.4 and older);
3. only where the child could name no device at all, no ``CUDA_VISIBLE_DEVICES`` restricts it,
   it used PCI bus order and it saw exactly the GPUs NVML sees (none lost): the k-th GPU in
   NVML order is CUDA device k.

A GPU none of these places is left out of the plan, with the reason; the others keep their
numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pcidoc.model.capture import Capture
from pcidoc.probes.allocation import GpuId, match_device

PCI_ORDER = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


@dataclass
class CudaView:
    """How a probe child sees the chosen GPUs.

    Attributes:
        env: Variables the child gets (``CUDA_VISIBLE_DEVICES``, ``CUDA_DEVICE_ORDER``).
        ordinals: NVML index -> CUDA ordinal in a child with ``env``.
        left_out: NVML index -> why no CUDA device could be matched to it.
        how: ``uuid``, ``env probe`` (UUID or bus id the child reported), ``pci order`` or
            ``cuda`` (no NVML facts: the indices are CUDA's own).
    """

    env: dict[str, str]
    ordinals: dict[int, int] = field(default_factory=dict)
    left_out: dict[int, str] = field(default_factory=dict)
    how: str = "uuid"

    def notes(self) -> list[str]:
        """One line per GPU left out."""
        return [f"GPU{i} left out: {why}" for i, why in sorted(self.left_out.items())]


def gpu_ids(capture: Capture) -> list[GpuId]:
    """What identifies each GPU of the capture."""
    return [GpuId(g.index, g.uuid, g.bus_id) for g in capture.gpus]


def env_probe_environment(env_info: Mapping[str, Any]) -> dict[str, str]:
    """The CUDA variables the ``env`` probe ran with (what it reported), so that another child
    sees the same devices in the same order."""
    env = {"CUDA_DEVICE_ORDER": str(env_info.get("cuda_device_order") or "FASTEST_FIRST")}
    visible = env_info.get("cuda_visible_devices")
    if visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(visible)
    return env


def cuda_view(
    capture: Capture, indices: Sequence[int], env_info: Mapping[str, Any] | None = None
) -> CudaView:
    """Where each GPU of ``indices`` is in a probe child (see the module docstring).

    Args:
        capture: The machine (UUIDs, bus ids, NVML errors).
        indices: The GPUs to measure (NVML indices).
        env_info: What the ``env`` probe reported; ``None`` before it ran (then only the UUID
            rule or PCI order can apply).
    """
    chosen = list(indices)
    if not capture.gpus:  # NVML gave nothing: the indices are the env probe's CUDA ordinals
        env = env_probe_environment(env_info) if env_info else {}
        return CudaView(env, {i: i for i in chosen}, how="cuda")
    by_index = {g.index: g for g in capture.gpus}
    uuids = [by_index[i].uuid if i in by_index else None for i in chosen]
    if chosen and all(uuids):
        env = {"CUDA_VISIBLE_DEVICES": ",".join(str(u) for u in uuids), **PCI_ORDER}
        return CudaView(env, {i: k for k, i in enumerate(chosen)}, how="uuid")
    if env_info is None:
        return CudaView(dict(PCI_ORDER), {}, how="pci order")
    devices = [d for d in env_info.get("devices") or [] if isinstance(d, Mapping)]
    ids = gpu_ids(capture)
    view = CudaView(env_probe_environment(env_info), how="env probe")
    for index in chosen:
        ordinal = next((int(d["ordinal"]) for d in devices if match_device(d, ids) == index), None)
        if ordinal is None:
            ordinal = _pci_position(capture, index, env_info, devices)
            if ordinal is not None:
                view.how = "pci order"
        if ordinal is None:
            view.left_out[index] = _why_unmatched(by_index.get(index))
        else:
            view.ordinals[index] = ordinal
    return view


def _pci_position(
    capture: Capture, index: int, env_info: Mapping[str, Any], devices: list[Mapping[str, Any]]
) -> int | None:
    """CUDA ordinal = position in NVML order, only where nothing can shift it."""
    if any(d.get("uuid") or d.get("bus_id") for d in devices):
        return None  # the child named its devices, and none is this GPU
    if env_info.get("cuda_visible_devices") is not None:
        return None
    if env_info.get("cuda_device_order") != "PCI_BUS_ID":
        return None
    if int(env_info.get("device_count") or 0) != len(capture.gpus):
        return None
    if any(g.nvml_error for g in capture.gpus):
        return None
    order = sorted(g.index for g in capture.gpus)
    return order.index(index) if index in order else None


def _why_unmatched(gpu: Any) -> str:
    if gpu is None:
        return "NVML does not list it"
    if not gpu.uuid and not gpu.bus_id:
        return "NVML gave neither its UUID nor its bus id, so no CUDA device can be matched to it"
    return (
        f"no CUDA device in the probe child has its UUID or bus id ({gpu.bus_id or gpu.uuid}): "
        "CUDA does not see it here"
    )

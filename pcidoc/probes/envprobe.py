"""Child probe ``env``: what torch sees (version, CUDA devices, NCCL/gloo) — no measurement.

The parent runs it once before the heavy probes, so that a machine without torch or without a
CUDA device gets one clear reason instead of one failed child per GPU.
"""

from __future__ import annotations

import os
from typing import Any

from pcidoc.probes import cudautil
from pcidoc.probes.child import Emitter, import_torch, no_cuda_reason


def device_bus_id(props: Any) -> str | None:
    """``dddd:bb:dd.0`` from torch's device properties, when this torch exposes them
    (``pci_bus_id`` is there from torch 2.5 on)."""
    bus = getattr(props, "pci_bus_id", None)
    device = getattr(props, "pci_device_id", None)
    if bus is None or device is None:
        return None
    domain = getattr(props, "pci_domain_id", 0) or 0
    return f"{int(domain):04x}:{int(bus):02x}:{int(device):02x}.0"


def _uuid_text(props: Any) -> str | None:
    uuid = getattr(props, "uuid", None)
    if uuid is None:
        return None
    text = str(uuid)
    return text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"


def _devices(torch: Any, count: int) -> tuple[list[dict[str, Any]], str | None]:
    """Each CUDA device with its name, UUID and bus id; where torch gives no bus id, CUDA's
    own ``cudaDeviceGetPCIBusId`` (the runtime torch loaded), so the parent can match every
    device to NVML's GPUs. Also which source the bus ids came from."""
    devices: list[dict[str, Any]] = []
    lib = None
    source = None
    for ordinal in range(count):
        props = torch.cuda.get_device_properties(ordinal)
        bus = device_bus_id(props)
        if bus is not None:
            source = source or "torch"
        else:
            if lib is None:
                lib, _where = cudautil.find_cudart(torch)
            bus = cudautil.pci_bus_id(lib, ordinal) if lib is not None else None
            if bus is not None:
                source = "cudaDeviceGetPCIBusId"
        devices.append(
            {
                "ordinal": ordinal,
                "name": props.name,
                "bus_id": bus,
                "uuid": _uuid_text(props),
                "total_memory_bytes": int(props.total_memory),
            }
        )
    return devices, source


def run(params: dict[str, Any], emit: Emitter) -> None:
    """Report torch's view of the machine as an ``info`` message."""
    torch = import_torch()
    import platform
    import sys

    import torch.distributed as dist

    data: dict[str, Any] = {
        "python": sys.executable,
        "python_version": platform.python_version(),
        "torch_version": torch.__version__,
        "cuda_build": torch.version.cuda,
        "cuda_available": bool(torch.cuda.is_available()),
        "device_count": 0,
        "devices": [],
        "distributed": bool(dist.is_available()),
        "nccl_available": bool(dist.is_available() and dist.is_nccl_available()),
        "gloo_available": bool(dist.is_available() and dist.is_gloo_available()),
        "cuda_sleep": hasattr(torch.cuda, "_sleep"),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "cuda_device_order": os.environ.get("CUDA_DEVICE_ORDER"),
        "cpu_count": os.cpu_count(),
    }
    if data["cuda_available"]:
        count = int(torch.cuda.device_count())
        data["device_count"] = count
        data["devices"], data["bus_id_source"] = _devices(torch, count)
    else:
        data["no_cuda_reason"] = no_cuda_reason(torch)
    emit.info(data)

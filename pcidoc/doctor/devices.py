"""Devices named by bus id in evidence (kernel lines, error lines), joined to the capture's GPUs,
their upstream ports and NICs: shared by every check that reads such evidence."""

from __future__ import annotations

from pcidoc.doctor.context import Context
from pcidoc.model.busid import bus_id_or_text


def normalize_bus_id(bus_id: str | None) -> str | None:
    """``0000:3b:00.0`` from any form a capture or an importer stores (NVML's 8-digit domain,
    upper case, no domain); the text itself (lower case) when it is no PCI address."""
    return bus_id_or_text(bus_id) if bus_id else None


def device_label(
    ctx: Context, bus_id: str | None, log_gpus: list[str] | None = None, driver: str | None = None
) -> str:
    """``GPU3 (0000:3b:00.0)``, ``upstream port of GPU3 (0000:3a:00.0)``, ``NIC mlx5_0
    (...)``, ``GPU at 0000:3b:00.0`` (a device the nvidia driver named in the log) or the bus
    id; ``unknown device`` when the log printed none (or redacted it)."""
    bus = normalize_bus_id(bus_id)
    if bus is None:
        return "unknown device (address not in the log)"
    for gpu in ctx.gpus:
        if normalize_bus_id(gpu.bus_id) == bus:
            return f"{gpu.label} ({bus})"
    for gpu in ctx.gpus:
        for hop in gpu.path:
            if normalize_bus_id(hop.bus_id) == bus:
                return f"upstream port of {gpu.label} ({bus})"
    for nic in ctx.nics:
        if normalize_bus_id(nic.bus_id) == bus:
            return f"{nic.label} {nic.name} ({bus})" if nic.name else f"{nic.label} ({bus})"
    if log_gpus and bus in log_gpus:
        return f"GPU at {bus}"
    return f"port {bus}" if driver == "pcieport" else bus


def subject(ctx: Context, bus_id: str | None) -> str | None:
    """The finding subject of a bus id: ``GPU3``/``NIC0`` when it joins, else the bus id."""
    bus = normalize_bus_id(bus_id)
    if bus is None:
        return None
    for gpu in ctx.gpus:
        if normalize_bus_id(gpu.bus_id) == bus or any(
            normalize_bus_id(h.bus_id) == bus for h in gpu.path
        ):
            return gpu.label
    for nic in ctx.nics:
        if normalize_bus_id(nic.bus_id) == bus:
            return nic.label
    return bus

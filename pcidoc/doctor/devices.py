"""Devices named by bus id in evidence (kernel lines, error lines), joined to the capture's GPUs,
their upstream ports and NICs: shared by every check that reads such evidence."""

from __future__ import annotations

from pcidoc.doctor.context import Context
from pcidoc.model.busid import bus_key as normalize_bus_id  # the name the checks import


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


GPU_DRIVERS = ("nvidia", "amdgpu", "nouveau")
NIC_DRIVERS = (
    "mlx5_core",
    "mlx4_core",
    "bnxt_en",
    "ice",
    "i40e",
    "irdma",
    "efa",
    "qede",
    "hfi1",
    "ionic",
    "cxgb4",
)
"""Drivers of the NICs that carry GPU traffic (RDMA, GPUDirect)."""


def _same_card(bus: str, other: str | None) -> bool:
    """Same bus and device (another function of one card: a GPU's audio function)."""
    other = normalize_bus_id(other)
    return other is not None and other.rsplit(".", 1)[0] == bus.rsplit(".", 1)[0]


def relation(ctx: Context, buses: list[str | None], driver: str | None, gpus: list[str]) -> str:
    """``gpu``, ``nic``, ``other`` or ``unknown``: what the devices of an event are to the GPUs.

    ``gpu`` when a device is a GPU (capture, or named by the GPU driver in the log), another
    function of a GPU card, or a port on a GPU's path; ``nic`` for a capture NIC or a NIC driver;
    ``other`` for an endpoint of another driver, or when the GPUs are known and none of the
    devices is one of them; else ``unknown``.
    """
    if driver in GPU_DRIVERS:
        return "gpu"
    known = [normalize_bus_id(b) for b in buses]
    ids = [b for b in known if b and not b.endswith("00:00.0")]
    for bus in ids:
        for gpu in ctx.gpus:
            if _same_card(bus, gpu.bus_id) or any(
                normalize_bus_id(h.bus_id) == bus for h in gpu.path
            ):
                return "gpu"
        if any(_same_card(bus, g) for g in gpus):
            return "gpu"
    if driver in NIC_DRIVERS or any(normalize_bus_id(n.bus_id) in ids for n in ctx.nics):
        return "nic"
    if driver and driver not in ("pcieport", "pci"):
        return "other"  # an endpoint whose driver is neither a GPU's nor a NIC's
    if (ctx.gpus or gpus) and ids:
        return "other"
    return "unknown"

"""Lookups over the kernel logs shared by the ``kernel.*`` and ``pcie.link-flap`` checks: which
logs there are, and the join of a bus id to a GPU, its upstream ports or a NIC of the capture.
"""

from __future__ import annotations

from pcidoc.doctor.context import Context
from pcidoc.doctor.finding import Finding
from pcidoc.model.kernel import KernelLog
from pcidoc.model.report import Evidence


def normalize_bus_id(bus_id: str | None) -> str | None:
    """``0000:3b:00.0`` from the forms a capture or an importer stores (lower case, NVML's
    8-digit domain); the importers normalise fully, this only makes stored forms comparable
    (and keeps the checks free of the importers' imports)."""
    if not bus_id:
        return None
    bus = bus_id.strip().lower()
    if len(bus) > 12 and bus[8:9] == ":" and bus.startswith("0000"):
        bus = bus[4:]
    return bus


def kernel_logs(ctx: Context) -> list[KernelLog]:
    """The capture's kernel logs (pasted or live)."""
    ev = ctx.capture.evidence
    return list(ev.kernel_logs) if ev is not None else []


def readable_logs(ctx: Context) -> list[KernelLog]:
    """The logs that were read (a live log may have been refused)."""
    return [log for log in kernel_logs(ctx) if log.read]


def read_logs(ctx: Context, what: str) -> tuple[Finding | None, list[KernelLog], list[str]]:
    """What every ``kernel.*`` check starts from: the skip for a capture without a readable
    kernel log (``None`` when there is one), the readable logs, and the bus ids the nvidia
    driver named in them."""
    logs = readable_logs(ctx)
    if not logs:
        return _no_log(ctx, what), [], []
    return None, logs, log_gpus(logs)


def _no_log(ctx: Context, what: str) -> Finding:
    """The skip for a capture without a readable kernel log (``what`` is what stays unknown)."""
    logs = kernel_logs(ctx)
    refused = next((log.unreadable for log in logs if not log.read and log.unreadable), None)
    if refused:
        return Finding(
            "skip",
            f"the kernel log could not be read ({refused}): {what} unknown",
            needs="run `sudo pcidoc capture`, or import `sudo dmesg` / `journalctl -k -b`",
            confidence="low",
        )
    return Finding(
        "skip",
        f"no kernel log in the capture: {what} unknown",
        needs="import `sudo dmesg -T` or `journalctl -k -b` (pcidoc import dmesg.txt)",
    )


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


def line(text: str | None, subject_: str | None = None) -> Evidence:
    """Evidence quoting a kernel log line."""
    return Evidence(label="kernel log", value=text, subject=subject_)


def log_gpus(logs: list[KernelLog]) -> list[str]:
    """Bus ids the nvidia driver named in the logs."""
    return list(dict.fromkeys(b for log in logs for b in log.nvidia_devices))


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

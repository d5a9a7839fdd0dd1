"""Lookups over the kernel logs shared by the ``kernel.*`` and ``pcie.link-flap`` checks: which
logs there are, and the join of a bus id to a GPU, its upstream ports or a NIC of the capture.
"""

from __future__ import annotations

from pcidoc.doctor.context import Context
from pcidoc.doctor.devices import device_label as device_label
from pcidoc.doctor.devices import normalize_bus_id as normalize_bus_id
from pcidoc.doctor.devices import subject as subject
from pcidoc.doctor.finding import Finding
from pcidoc.model.kernel import KernelLog
from pcidoc.model.report import Evidence


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

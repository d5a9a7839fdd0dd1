"""Runtime evidence from the kernel log and from repeated link readings
(``capture.evidence.kernel_logs``, ``capture.evidence.link_histories``).

The kernel log is where interconnect faults are written first: NVIDIA Xid events (79: the GPU
fell off the bus; 74 and 144-150: NVLink), PCIe AER reports (correctable storms on one port,
uncorrectable/fatal errors, "can't recover"), IOMMU faults (Intel DMAR, AMD-Vi
``IO_PAGE_FAULT``), the kernel's "available PCIe bandwidth ... limited by" notices and whether
the platform firmware kept AER for itself (``_OSC: platform does not support [AER]``:
firmware-first, so the OS never logs AER and a clean log proves little).

Every event keeps the line it came from (``quote``); bus ids are the normalised sysfs form
(``0000:03:00.0``) or None when the log did not print one (or redacted it).
"""

from __future__ import annotations

from itertools import pairwise

from pcidoc.model.base import Field, Model


class KernelEvent(Model):
    """What every kernel-log event has: when, where, and the line."""

    time_s: float | None = None
    """Seconds since boot (``[ 12.345678]``), or seconds since the first timestamped line for
    wall-clock (``dmesg -T``, syslog, ISO) and relative (``dmesg -H``) stamps; None without."""
    clock: str | None = None
    """The log's own time text (``Sep 19 16:18:02``, ``2026-01-02T03:04:05``) when it had one."""
    bus_id: str | None = None
    """The device the line is about (normalised), None when not printed or redacted."""
    driver: str | None = None
    """The driver that printed the line (``nvidia``, ``pcieport``, ``mlx5_core``), when shown."""
    quote: str | None = None
    """The source line, trimmed (at most 300 characters)."""


class XidEvent(KernelEvent):
    """``NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.``"""

    code: int
    pid: int | None = None
    process: str | None = None
    text: str | None = None
    """The message after the code (and after pid/name)."""
    link: int | None = None
    """The NVLink number named in the text (``link 11``), when one is."""


class FallenOffBus(KernelEvent):
    """``GPU has fallen off the bus`` without an Xid line (the multi-line text newer drivers
    print during probe), or ``probe routine failed``."""

    probe_failed: bool = False


class AerEvent(KernelEvent):
    """One PCIe AER report (the ``PCIe Bus Error`` line and the lines that follow it)."""

    severity: str
    """``corrected``, ``non-fatal`` or ``fatal`` (``Uncorrected (Non-Fatal)`` / ``(Fatal)``)."""
    layer: str | None = None
    """``Physical Layer``, ``Data Link Layer`` or ``Transaction Layer``."""
    agent: str | None = None
    """``Receiver ID``, ``Requester ID``, ``Transmitter ID``, ``Completer ID``."""
    port: str | None = None
    """The port that reported it (``pcieport 0000:00:03.1``), when it differs from the device."""
    source: str | None = None
    """``error message received from 0000:00:00.0`` / ``error received: 0000:3b:00.0``."""
    vendor_device: str | None = None
    """``1022:1453`` from the ``device [vvvv:dddd]`` line."""
    status: str | None = None
    """``error status/mask=00001000/00006000``: the status word."""
    bits: list[str] = Field(default_factory=list)
    """The named error bits (``Timeout``, ``BadTLP``, ``CmpltTO``, ``SDES``...)."""


class AerRecovery(KernelEvent):
    """``AER: can't recover``, ``device recovery failed``, ``Root Port link has been reset``,
    ``AER: Device recovery successful``."""

    outcome: str
    """``failed``, ``reset`` or ``recovered``."""


class IommuFault(KernelEvent):
    """An IOMMU fault on a device's DMA (Intel DMAR, AMD-Vi, ARM SMMU)."""

    iommu: str
    """``DMAR``, ``AMD-Vi`` or ``SMMU``."""
    kind: str | None = None
    """``DMA Read``, ``DMA Write``, ``IO_PAGE_FAULT``, ``INVALID_DEVICE_REQUEST``..."""
    address: str | None = None
    """The faulting address as printed (``0x80000040``)."""
    domain: str | None = None
    reason: str | None = None
    """The fault reason text/number when printed."""


class LinkNotice(KernelEvent):
    """``8.000 Gb/s available PCIe bandwidth, limited by 2.5 GT/s PCIe x8 link at 0000:00:01.0
    (capable of 126.024 Gb/s with 16.0 GT/s PCIe x8 link)``."""

    available_gbps: float | None = None
    capable_gbps: float | None = None
    limited_by: str | None = None
    """The port whose link limits it (normalised), None when the line named none."""
    speed_gts: float | None = None
    width: int | None = None
    capable_gts: float | None = None
    capable_width: int | None = None


class NvlinkEvent(KernelEvent):
    """An NVLink / NVSwitch / fabric manager error line that is not an Xid line."""

    text: str
    link: int | None = None


class KernelLog(Model):
    """What one kernel log (a paste or the live machine's last boot) says."""

    source: str | None = None
    read: bool = True
    """False when the live log could not be read (``unreadable`` says why)."""
    unreadable: str | None = None
    """``dmesg_restrict=1 and not root``, ``journalctl: permission denied``..."""
    lines: int = 0
    """Kernel lines read."""
    hosts: list[str] = Field(default_factory=list)
    """Host names in syslog/journal prefixes (``--redact`` removes them from the quotes)."""
    span_s: float | None = None
    """Seconds between the first and the last timestamped line (None when unknown)."""
    xids: list[XidEvent] = Field(default_factory=list)
    fallen_off_bus: list[FallenOffBus] = Field(default_factory=list)
    aer: list[AerEvent] = Field(default_factory=list)
    aer_recovery: list[AerRecovery] = Field(default_factory=list)
    iommu_faults: list[IommuFault] = Field(default_factory=list)
    link_notices: list[LinkNotice] = Field(default_factory=list)
    nvlink: list[NvlinkEvent] = Field(default_factory=list)
    firmware_first: str | None = None
    """The line saying the OS does not control AER (``_OSC: platform does not support
    [AER ...]``, ``OS does not control AER``), None when the log does not say."""
    aer_native: bool = False
    """True when the log says the OS controls AER (``_OSC: OS now controls [... AER ...]``)."""
    iommu_off: str | None = None
    """The line showing the IOMMU is off or in passthrough (``iommu=off``, ``iommu=pt``,
    ``Default domain type: Passthrough``)."""
    nvidia_devices: list[str] = Field(default_factory=list)
    """The GPUs of the log: bus ids the nvidia/amdgpu driver named (``nvidia 0000:75:00.0:
    ...``) or that enumerated as an NVIDIA/AMD display controller (``pci 0000:75:00.0:
    [10de:2bb5] type 00 class 0x030200``)."""
    dropped: int = 0
    """Events beyond the per-kind cap that were counted but not kept."""


class LinkSample(Model):
    """One reading of one device's negotiated link."""

    time_s: float | None = None
    """Seconds since the first reading (None when the readings carry no time)."""
    sample: int
    """Index of the reading (0, 1, ...) in the history."""
    gen: int | None = None
    width: int | None = None
    max_gen: int | None = None
    max_width: int | None = None
    utilization_pct: float | None = None
    """GPU utilisation at that reading, when it was printed."""


class LinkTrace(Model):
    """The readings of one device (a GPU or its upstream port)."""

    device: str
    """``GPU3``, a bus id, or ``GPU3 upstream``."""
    bus_id: str | None = None
    kind: str = "device"
    """``gpu``, ``port`` (a GPU's upstream port) or ``device`` (a pasted reading that does not
    say which)."""
    samples: list[LinkSample] = Field(default_factory=list)

    def transitions(self) -> int:
        """Changes of (generation, width) between consecutive readings."""
        states = [
            (s.gen, s.width) for s in self.samples if s.gen is not None or s.width is not None
        ]
        return sum(1 for a, b in pairwise(states) if a != b)


class LinkHistory(Model):
    """Repeated link readings (``pcidoc watch``, pasted snapshots, monitoring logs)."""

    source: str | None = None
    tool: str
    """``watch``, ``nvidia-smi-query-csv``, ``nvidia-smi-q``, ``lspci``, ``sysfs``,
    ``pp_dpm_pcie``."""
    readings: int = 0
    """How many readings (snapshots) the history holds."""
    span_s: float | None = None
    traces: list[LinkTrace] = Field(default_factory=list)
    power_levels: list[str] = Field(default_factory=list)
    """Link power states a driver lists (amdgpu ``pp_dpm_pcie``: ``2.5 GT/s x8``, the current
    one ending in ``*``): the speeds an idle link is allowed to drop to."""

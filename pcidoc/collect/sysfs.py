"""PCI facts from sysfs: devices, upstream bridge paths, link state per hop, ACS, AER, IOMMU,
NUMA, and the ``nvidia-smi topo``-style link class between two devices.

Everything is read below ``root`` (``/sys`` by default), so tests drive this module with fake
trees. Nothing here needs the NVIDIA driver, and nothing raises on a strange tree: a value that
cannot be read is ``None`` and the reason goes into the owning object's ``unavailable`` map.

Only the ACS registers need privileges: ``config`` beyond its first 64 bytes is readable only
with CAP_SYS_ADMIN in the initial user namespace (kernel ``pci-sysfs.c``), so without it the
reader says so per hop instead of reporting ACS as off.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from pcidoc.model.busid import bus_id_or_text as normalize_bus_id
from pcidoc.model.busid import is_bus_id
from pcidoc.model.cpulist import format_cpulist, parse_cpumask
from pcidoc.model.facts import AcsControl, PcieHop
from pcidoc.model.units import parse_link_speed

NVIDIA_VENDOR = 0x10DE

_HOST_BRIDGE_RE = re.compile(r"^pci([0-9a-f]{4,8}):([0-9a-f]{2})$", re.IGNORECASE)

ACS_EXT_CAP_ID = 0x000D
PCIE_CAP_ID = 0x10

NEEDS_ROOT_ACS = "needs root: config space beyond 64 bytes is readable only with CAP_SYS_ADMIN"
NO_EXTENDED_CONFIG = (
    "extended config space is not readable (only 256 bytes): conventional PCI or no ECAM access"
)
NUMA_UNKNOWN = "firmware reports no NUMA node (-1)"

_PORT_TYPES: dict[int, str] = {
    4: "root_port",
    5: "switch_upstream",
    6: "switch_downstream",
    7: "bridge",  # PCIe to PCI/PCI-X bridge
    8: "bridge",  # PCI/PCI-X to PCIe bridge
}


def _parse_int(text: str | None, base: int = 10) -> int | None:
    if text is None:
        return None
    try:
        return int(text.strip(), base)
    except ValueError:
        return None


def _natural_key(text: str) -> tuple[object, ...]:
    return tuple(int(part) if part.isdecimal() else part for part in re.split(r"(\d+)", text))


def parse_aer_total(text: str | None, prefix: str = "TOTAL_ERR_") -> int | None:
    """The ``TOTAL_ERR_*`` count of an ``aer_dev_*`` file, or ``None``."""
    if text is None:
        return None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].startswith(prefix):
            return _parse_int(parts[1])
    return None


def find_extended_capability(config: bytes, cap_id: int) -> int | None:
    """Offset of PCIe extended capability ``cap_id`` in a config-space dump, or ``None``."""
    offset = 0x100
    seen: set[int] = set()
    while 0x100 <= offset <= len(config) - 4 and offset not in seen:
        seen.add(offset)
        header = int.from_bytes(config[offset : offset + 4], "little")
        if header in (0, 0xFFFFFFFF):
            return None
        if header & 0xFFFF == cap_id:
            return offset
        offset = (header >> 20) & 0xFFC
    return None


def pcie_port_type(config: bytes) -> int | None:
    """Device/port type from the PCI Express capability (bits 7:4 of its flags), or ``None``."""
    if len(config) < 0x40:
        return None
    status = config[6] | (config[7] << 8)
    if not status & 0x10:  # no capability list
        return None
    pointer = config[0x34] & 0xFC
    seen: set[int] = set()
    while pointer and pointer not in seen and pointer + 4 <= len(config):
        seen.add(pointer)
        if config[pointer] == PCIE_CAP_ID:
            flags = config[pointer + 2] | (config[pointer + 3] << 8)
            return (flags >> 4) & 0xF
        pointer = config[pointer + 1] & 0xFC
    return None


@dataclass
class EndpointInfo:
    """Facts about one PCI function (GPU or NIC) read from sysfs."""

    bus_id: str
    present: bool = True
    vendor: int | None = None
    device: int | None = None
    class_code: int | None = None
    driver: str | None = None
    numa_node: int | None = None
    local_cpulist: str | None = None
    iommu_group: int | None = None
    iommu_group_type: str | None = None
    aer_correctable: int | None = None
    aer_nonfatal: int | None = None
    aer_fatal: int | None = None
    current_gen: int | None = None
    current_width: int | None = None
    max_gen: int | None = None
    max_width: int | None = None
    unavailable: dict[str, str] = field(default_factory=dict)


@dataclass
class NicInfo:
    """A network function found in sysfs."""

    bus_id: str
    name: str | None
    kind: str | None
    netdevs: list[str] = field(default_factory=list)
    rdma_devices: list[str] = field(default_factory=list)


class SysfsReader:
    """Reads PCI facts below ``root`` (``/sys``).

    Args:
        root: The sysfs mount point; a fake tree in tests.
    """

    def __init__(self, root: str = "/sys") -> None:
        self.root = root
        self._devices_dir = os.path.join(root, "bus", "pci", "devices")
        self._hops: dict[str, PcieHop] = {}
        self._chains: dict[str, tuple[str, ...] | None] = {}
        self.config_truncated: set[str] = set()
        """Bus ids whose ``config`` read back only 64 bytes (no CAP_SYS_ADMIN)."""

    # -- raw access ---------------------------------------------------------------------

    def _path(self, bus_id: str, *parts: str) -> str:
        return os.path.join(self._devices_dir, bus_id, *parts)

    def attr(self, bus_id: str, name: str) -> str | None:
        """Text of ``/sys/bus/pci/devices/<bus_id>/<name>`` stripped, or ``None``."""
        try:
            with open(self._path(bus_id, name), encoding="utf-8", errors="replace") as handle:
                return handle.read().strip()
        except OSError:
            return None

    def exists(self) -> bool:
        """True when the PCI device directory exists."""
        return os.path.isdir(self._devices_dir)

    def bus_ids(self) -> list[str]:
        """All PCI functions, sorted by address."""
        try:
            names = os.listdir(self._devices_dir)
        except OSError:
            return []
        return sorted((n for n in names if is_bus_id(n)), key=lambda n: normalize_bus_id(n))

    def has_device(self, bus_id: str) -> bool:
        """True when ``bus_id`` is present in sysfs."""
        return os.path.isdir(self._path(bus_id))

    def vendor(self, bus_id: str) -> int | None:
        """Vendor id."""
        return _parse_int(self.attr(bus_id, "vendor"), 16)

    def device_id(self, bus_id: str) -> int | None:
        """Device id."""
        return _parse_int(self.attr(bus_id, "device"), 16)

    def class_code(self, bus_id: str) -> int | None:
        """24-bit class code (``0x030200`` for a 3D controller)."""
        return _parse_int(self.attr(bus_id, "class"), 16)

    def read_config(self, bus_id: str) -> tuple[bytes | None, str | None]:
        """Config space bytes as the kernel lets this process read them, or the error."""
        try:
            with open(self._path(bus_id, "config"), "rb") as handle:
                data = handle.read(4096)
        except PermissionError:
            return None, "config space unreadable: permission denied"
        except OSError as exc:
            return None, f"config space unreadable: {exc.strerror or exc}"
        if len(data) <= 64:
            self.config_truncated.add(bus_id)
        return data, None

    # -- enumeration ----------------------------------------------------------------------

    def nvidia_gpus(self) -> list[str]:
        """NVIDIA display/3D controllers (vendor 0x10de, class 0x03xxxx), driver or not."""
        result = []
        for bus_id in self.bus_ids():
            code = self.class_code(bus_id)
            if self.vendor(bus_id) == NVIDIA_VENDOR and code is not None and code >> 16 == 0x03:
                result.append(bus_id)
        return result

    def _pci_ancestor(self, real_path: str) -> str | None:
        for part in reversed(real_path.split(os.sep)):
            if is_bus_id(part):
                return normalize_bus_id(part)
        return None

    def _class_links(self, cls: str) -> dict[str, list[str]]:
        """``/sys/class/<cls>/<name>/device`` -> PCI address, grouped by address."""
        folder = os.path.join(self.root, "class", cls)
        try:
            names = sorted(os.listdir(folder), key=_natural_key)
        except OSError:
            return {}
        found: dict[str, list[str]] = {}
        for name in names:
            link = os.path.join(folder, name, "device")
            if not os.path.exists(link):
                continue
            bus_id = self._pci_ancestor(os.path.realpath(link))
            if bus_id is not None:
                found.setdefault(bus_id, []).append(name)
        return found

    def nics(self) -> list[NicInfo]:
        """Network functions: Ethernet (0x0200) and InfiniBand (0x0207) PCI functions and RDMA
        devices, without SR-IOV virtual functions; RDMA devices first, in name order."""
        rdma = self._class_links("infiniband")
        netdevs = self._class_links("net")
        candidates: set[str] = set(rdma)
        for bus_id in self.bus_ids():
            code = self.class_code(bus_id)
            if code is not None and code >> 8 in (0x0200, 0x0207):
                candidates.add(normalize_bus_id(bus_id))
        nics: list[NicInfo] = []
        for bus_id in candidates:
            if os.path.exists(self._path(bus_id, "physfn")):
                continue  # a virtual function of a NIC already listed
            ib_names = rdma.get(bus_id, [])
            nets = netdevs.get(bus_id, [])
            code = self.class_code(bus_id)
            kind: str | None = None
            if ib_names:
                layer = self._read(
                    os.path.join(
                        self.root, "class", "infiniband", ib_names[0], "ports", "1", "link_layer"
                    )
                )
                if layer:
                    kind = "infiniband" if layer.lower() == "infiniband" else "ethernet"
            if kind is None and code is not None:
                kind = {0x0207: "infiniband", 0x0200: "ethernet"}.get(code >> 8, "other")
            name = ib_names[0] if ib_names else (nets[0] if nets else None)
            nics.append(
                NicInfo(bus_id=bus_id, name=name, kind=kind, netdevs=nets, rdma_devices=ib_names)
            )
        nics.sort(key=lambda n: (0 if n.rdma_devices else 1, _natural_key(n.name or "~"), n.bus_id))
        return nics

    def _read(self, path: str) -> str | None:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return handle.read().strip()
        except OSError:
            return None

    # -- paths ----------------------------------------------------------------------------

    def chain(self, bus_id: str) -> tuple[str, ...] | None:
        """The device's place in the tree: ``(host_bridge, bridge..., device)``.

        Built from the real path of the device directory (``readlink -f``), e.g.
        ``("pci0000:00", "0000:00:01.0", "0000:01:00.0")``. ``None`` when the device is absent.
        """
        if bus_id in self._chains:
            return self._chains[bus_id]
        result: tuple[str, ...] | None = None
        path = self._path(bus_id)
        if os.path.isdir(path):
            parts = os.path.realpath(path).split(os.sep)
            start = None
            for i, part in enumerate(parts):
                if _HOST_BRIDGE_RE.match(part):
                    start = i
                    break
            if start is not None:
                items = [parts[start].lower()]
                items += [normalize_bus_id(p) for p in parts[start + 1 :] if is_bus_id(p)]
                result = tuple(items)
        self._chains[bus_id] = result
        return result

    def upstream_bus_ids(self, bus_id: str) -> list[str]:
        """Bridges above the device, nearest first (the last one is the root port)."""
        chain = self.chain(bus_id)
        if not chain:
            return []
        return list(reversed(chain[1:-1]))

    def _structural_role(self, bus_id: str) -> str:
        chain = self.chain(bus_id) or ()
        code = self.class_code(bus_id)
        if code is not None and code >> 8 != 0x0604:
            return "other"
        try:
            depth = chain.index(normalize_bus_id(bus_id))
        except ValueError:
            return "other"
        if depth == 1:
            return "root_port"
        # Below a root port, switches come as an upstream port followed by downstream ports.
        return "switch_upstream" if depth % 2 == 0 else "switch_downstream"

    def hop(self, bus_id: str) -> PcieHop:
        """One port with its link state, role, ACS and AER counters (a fresh copy)."""
        key = normalize_bus_id(bus_id)
        cached = self._hops.get(key)
        if cached is None:
            cached = self._read_hop(key)
            self._hops[key] = cached
        return cached.model_copy(deep=True)

    def _read_hop(self, bus_id: str) -> PcieHop:
        hop = PcieHop(bus_id=bus_id)
        vendor, device = self.vendor(bus_id), self.device_id(bus_id)
        hop.vendor_id = None if vendor is None else f"{vendor:04x}"
        hop.device_id = None if device is None else f"{device:04x}"
        self._fill_link(bus_id, hop)
        self._fill_aer(bus_id, hop)
        config, error = self.read_config(bus_id)
        port_type = pcie_port_type(config) if config else None
        hop.role = (
            _PORT_TYPES.get(port_type, "other")
            if port_type is not None
            else (self._structural_role(bus_id))
        )
        if config is None:
            reason = error or "config space unreadable"
            hop.mark_unavailable("acs", reason)
            hop.mark_unavailable("acs_capable", reason)
        elif len(config) <= 64:
            hop.mark_unavailable("acs", NEEDS_ROOT_ACS)
            hop.mark_unavailable("acs_capable", NEEDS_ROOT_ACS)
        elif len(config) < 0x100 + 8:
            hop.mark_unavailable("acs", NO_EXTENDED_CONFIG)
            hop.mark_unavailable("acs_capable", NO_EXTENDED_CONFIG)
        else:
            offset = find_extended_capability(config, ACS_EXT_CAP_ID)
            if offset is None or offset + 8 > len(config):
                hop.acs_capable = False
                hop.mark_unavailable("acs", "port has no ACS capability")
            else:
                hop.acs_capable = True
                raw = int.from_bytes(config[offset + 6 : offset + 8], "little")
                hop.acs = AcsControl.from_raw(raw)
        return hop

    def _fill_link(self, bus_id: str, target: object) -> None:
        """Fill current/max gen and width on a PcieHop or EndpointInfo-like object."""
        reasons: dict[str, str] = {}
        for prefix in ("current", "max"):
            speed = self.attr(bus_id, f"{prefix}_link_speed")
            width = self.attr(bus_id, f"{prefix}_link_width")
            if speed is None:
                reasons[f"{prefix}_gen"] = f"sysfs has no {prefix}_link_speed for this device"
            else:
                gen = parse_link_speed(speed)
                setattr(target, f"{prefix}_gen", gen)
                if gen is None:
                    reasons[f"{prefix}_gen"] = f"sysfs reports link speed {speed!r}"
            if width is None:
                reasons[f"{prefix}_width"] = f"sysfs has no {prefix}_link_width for this device"
            else:
                value = _parse_int(width.lstrip("x"))
                setattr(target, f"{prefix}_width", value or None)
                if not value:
                    reasons[f"{prefix}_width"] = f"sysfs reports link width {width!r}"
        _record(target, reasons)

    def _fill_aer(self, bus_id: str, target: object) -> None:
        reasons: dict[str, str] = {}
        for name, attr in (
            ("aer_correctable", "aer_dev_correctable"),
            ("aer_nonfatal", "aer_dev_nonfatal"),
            ("aer_fatal", "aer_dev_fatal"),
        ):
            text = self.attr(bus_id, attr)
            value = parse_aer_total(text)
            setattr(target, name, value)
            if text is None:
                reasons[name] = (
                    f"sysfs has no {attr} (no AER capability, AER handled by firmware, or an "
                    "older kernel)"
                )
            elif value is None:
                reasons[name] = f"{attr} has no TOTAL_ERR line"
        _record(target, reasons)

    def upstream_path(self, bus_id: str) -> list[PcieHop]:
        """Ports from the device up to its root port, nearest first."""
        return [self.hop(b) for b in self.upstream_bus_ids(bus_id)]

    # -- endpoint facts -------------------------------------------------------------------

    def numa_node(self, bus_id: str) -> tuple[int | None, str | None]:
        """The device's NUMA node, or ``None`` and why."""
        text = self.attr(bus_id, "numa_node")
        if text is None:
            return None, "sysfs has no numa_node for this device"
        value = _parse_int(text)
        if value is None:
            return None, f"numa_node reads {text!r}"
        if value < 0:
            return None, NUMA_UNKNOWN
        return value, None

    def endpoint(self, bus_id: str) -> EndpointInfo:
        """NUMA, local CPUs, IOMMU group, AER and link state of one function."""
        key = normalize_bus_id(bus_id)
        info = EndpointInfo(bus_id=key)
        if not self.has_device(key):
            info.present = False
            info.unavailable["sysfs"] = f"{key} is not in {self._devices_dir}"
            return info
        info.vendor, info.device, info.class_code = (
            self.vendor(key),
            self.device_id(key),
            self.class_code(key),
        )
        driver_link = self._path(key, "driver")
        if os.path.islink(driver_link):
            info.driver = os.path.basename(os.readlink(driver_link))
        info.numa_node, reason = self.numa_node(key)
        if reason:
            info.unavailable["numa_node"] = reason
        cpus = self.attr(key, "local_cpulist")
        if cpus is None:
            mask = parse_cpumask(self.attr(key, "local_cpus"))
            cpus = format_cpulist(mask) if mask is not None else None
        info.local_cpulist = cpus or None
        if info.local_cpulist is None:
            info.unavailable["local_cpulist"] = "sysfs has no local_cpulist for this device"
        group_link = self._path(key, "iommu_group")
        if os.path.exists(group_link):
            info.iommu_group = _parse_int(os.path.basename(os.path.realpath(group_link)))
            info.iommu_group_type = self._read(os.path.join(group_link, "type"))
            if info.iommu_group_type is None:
                info.unavailable["iommu_group_type"] = (
                    "kernel does not expose iommu_group/type (added in Linux 5.11)"
                )
        else:
            reason = "device has no IOMMU group (no IOMMU enabled)"
            info.unavailable["iommu_group"] = reason
            info.unavailable["iommu_group_type"] = reason
        self._fill_link(key, info)
        self._fill_aer(key, info)
        return info

    # -- IOMMU ----------------------------------------------------------------------------

    def iommu_units(self) -> list[str] | None:
        """Names under ``/sys/class/iommu`` (``dmar0``, ``ivhd0``...), ``None`` if absent."""
        try:
            return sorted(os.listdir(os.path.join(self.root, "class", "iommu")), key=_natural_key)
        except OSError:
            return None

    def iommu_group_count(self) -> int | None:
        """Number of IOMMU groups, ``None`` when ``/sys/kernel/iommu_groups`` is absent."""
        try:
            return len(os.listdir(os.path.join(self.root, "kernel", "iommu_groups")))
        except OSError:
            return None

    # -- link classes ---------------------------------------------------------------------

    def link_class(
        self, bus_a: str, bus_b: str, numa_nodes: int | None = None
    ) -> tuple[str | None, str | None]:
        """The ``nvidia-smi topo -m`` class between two PCI functions, from their sysfs paths.

        Rules (see docs/collection.md): ``X`` same device; ``PIX`` the path stays inside one
        PCIe switch (or one port); ``PXB`` it crosses several switches below one root port;
        ``PHB`` the devices share a host bridge but not a root port; ``NODE`` different host
        bridges on the same NUMA node; ``SYS`` different NUMA nodes. With an unknown NUMA node on
        a host that has more than one, the class is unknown.

        Args:
            bus_a: First device.
            bus_b: Second device.
            numa_nodes: Number of NUMA nodes of the host, when known.

        Returns:
            ``(class, None)`` or ``(None, reason)``.
        """
        a, b = normalize_bus_id(bus_a), normalize_bus_id(bus_b)
        if a == b:
            return "X", None
        chain_a, chain_b = self.chain(a), self.chain(b)
        if chain_a is None or chain_b is None:
            return None, f"{a if chain_a is None else b} is not in sysfs"
        if chain_a[0] != chain_b[0]:
            numa_a, _ = self.numa_node(a)
            numa_b, _ = self.numa_node(b)
            if numa_a is not None and numa_b is not None:
                return ("NODE" if numa_a == numa_b else "SYS"), None
            if numa_nodes is not None and numa_nodes <= 1:
                return "NODE", None
            unknown = a if numa_a is None else b
            return None, (
                f"{unknown}: {NUMA_UNKNOWN}; the devices are on different host bridges of a "
                "multi-node host, so NODE and SYS cannot be told apart"
            )
        bridges_a, bridges_b = chain_a[1:-1], chain_b[1:-1]
        common = 0
        for x, y in zip(bridges_a, bridges_b, strict=False):
            if x != y:
                break
            common += 1
        if common == 0:
            return "PHB", None
        below_a, below_b = len(bridges_a) - common, len(bridges_b) - common
        if below_a <= 1 and below_b <= 1:
            return "PIX", None
        return "PXB", None


def _record(target: object, reasons: dict[str, str]) -> None:
    mark = getattr(target, "mark_unavailable", None)
    for key, reason in reasons.items():
        if mark is not None:
            mark(key, reason)
        else:
            target.unavailable.setdefault(key, reason)  # type: ignore[attr-defined]


def iommu_vendor(units: list[str]) -> str | None:
    """IOMMU vendor from unit names: ``dmar*`` intel, ``ivhd*`` amd, ``*smmu*`` arm."""
    for unit in units:
        lowered = unit.lower()
        if lowered.startswith("dmar"):
            return "intel"
        if lowered.startswith("ivhd"):
            return "amd"
        if "smmu" in lowered:
            return "arm"
    if units:
        return re.sub(r"[\d.]+$", "", units[0]) or units[0]
    return None

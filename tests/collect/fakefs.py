"""Builders of fake ``/sys``, ``/proc`` and ``/etc`` trees for collector tests (synthetic).

The sysfs builder reproduces the structure the collectors rely on: real device directories
under ``devices/pciDDDD:BB/...`` nested by bridge, and ``bus/pci/devices/<bdf>`` symlinks into
them, plus attribute files and binary ``config`` files::

    sysfs = FakeSysfs(tmp_path / "sys")
    rp = sysfs.add_device(["pci0000:00", "0000:00:01.0"], cls=0x060400, port_type=4)
    gpu = sysfs.add_device([*rp, "0000:01:00.0"], vendor=0x10DE, cls=0x030200)

Nothing here describes a real machine; link speeds and ids are chosen for the test at hand.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

NVIDIA = 0x10DE
BRIDGE = 0x060400
GPU_3D = 0x030200
ETHERNET = 0x020000
INFINIBAND = 0x020700

AER_COR_NAMES = (
    "RxErr",
    "BadTLP",
    "BadDLLP",
    "Rollover",
    "Timeout",
    "NonFatalErr",
    "CorrIntErr",
    "HeaderOF",
)


def config_space(
    *,
    vendor: int = 0x1000,
    device: int = 0x0001,
    port_type: int | None = None,
    acs_control: int | None = None,
    size: int = 4096,
) -> bytes:
    """A synthetic config space: a PCI Express capability at 0x40 (when ``port_type`` is given)
    and, in extended space, an AER capability at 0x100 followed by ACS at 0x148 (when
    ``acs_control`` is given). ``size`` truncates the result (64 = what non-root reads)."""
    buf = bytearray(4096)
    buf[0:2] = vendor.to_bytes(2, "little")
    buf[2:4] = device.to_bytes(2, "little")
    if port_type is not None:
        buf[6] = 0x10  # status: capability list present
        buf[0x34] = 0x40
        buf[0x40] = 0x10  # PCI Express capability id
        buf[0x41] = 0x00  # last in the list
        flags = 0x2 | (port_type << 4)
        buf[0x42:0x44] = flags.to_bytes(2, "little")
    if acs_control is not None:
        # AER (id 0x0001, version 2) at 0x100 pointing to ACS at 0x148.
        buf[0x100:0x104] = (0x0001 | (2 << 16) | (0x148 << 20)).to_bytes(4, "little")
        buf[0x148:0x14C] = (0x000D | (1 << 16) | (0 << 20)).to_bytes(4, "little")
        buf[0x14C:0x14E] = (0x005F).to_bytes(2, "little")  # ACS capability register
        buf[0x14E:0x150] = acs_control.to_bytes(2, "little")
    return bytes(buf[:size])


def aer_text(prefix: str, total: int, names: Sequence[str] = AER_COR_NAMES) -> str:
    """An ``aer_dev_*`` file: one line per error type and a ``TOTAL_ERR_<prefix>`` line."""
    lines = [f"{name} 0" for name in names]
    if names:
        lines[0] = f"{names[0]} {total}"
    lines.append(f"TOTAL_ERR_{prefix} {total}")
    return "\n".join(lines) + "\n"


class FakeSysfs:
    """Builds a fake sysfs tree below ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        (self.root / "bus" / "pci" / "devices").mkdir(parents=True, exist_ok=True)
        (self.root / "devices").mkdir(parents=True, exist_ok=True)

    def device_dir(self, chain: Sequence[str]) -> Path:
        """The real directory of the device at the end of ``chain``."""
        return self.root.joinpath("devices", *chain)

    def add_device(
        self,
        chain: Sequence[str],
        *,
        vendor: int = 0x1000,
        device: int = 0x0001,
        cls: int = BRIDGE,
        current_speed: str | None = "16.0 GT/s PCIe",
        current_width: int | None = 16,
        max_speed: str | None = "16.0 GT/s PCIe",
        max_width: int | None = 16,
        numa_node: int | None = 0,
        local_cpulist: str | None = "0-7",
        port_type: int | None = None,
        acs_control: int | None = None,
        config_size: int = 4096,
        config: bytes | None = None,
        aer: Mapping[str, int] | None = None,
        iommu_group: int | None = None,
        driver: str | None = None,
        extra: Mapping[str, str] | None = None,
    ) -> list[str]:
        """Create a PCI function at the end of ``chain`` (``["pci0000:00", bridge..., bdf]``).

        Returns ``chain`` as a list, handy for building children.
        """
        path = self.device_dir(chain)
        path.mkdir(parents=True, exist_ok=True)
        bdf = chain[-1]
        attrs: dict[str, str] = {
            "vendor": f"0x{vendor:04x}",
            "device": f"0x{device:04x}",
            "class": f"0x{cls:06x}",
        }
        if current_speed is not None:
            attrs["current_link_speed"] = current_speed
        if current_width is not None:
            attrs["current_link_width"] = str(current_width)
        if max_speed is not None:
            attrs["max_link_speed"] = max_speed
        if max_width is not None:
            attrs["max_link_width"] = str(max_width)
        if numa_node is not None:
            attrs["numa_node"] = str(numa_node)
        if local_cpulist is not None:
            attrs["local_cpulist"] = local_cpulist
        for kind, total in (aer or {}).items():
            label = {"correctable": "COR", "nonfatal": "NONFATAL", "fatal": "FATAL"}[kind]
            attrs[f"aer_dev_{kind}"] = aer_text(label, total)
        attrs.update(extra or {})
        for name, text in attrs.items():
            (path / name).write_text(text + ("" if text.endswith("\n") else "\n"))
        data = config
        if data is None:
            data = config_space(
                vendor=vendor,
                device=device,
                port_type=port_type,
                acs_control=acs_control,
                size=config_size,
            )
        (path / "config").write_bytes(data)
        if iommu_group is not None:
            group = self.root / "kernel" / "iommu_groups" / str(iommu_group)
            (group / "devices").mkdir(parents=True, exist_ok=True)
            os.symlink(os.path.relpath(group, path), path / "iommu_group")
        if driver is not None:
            drv = self.root / "bus" / "pci" / "drivers" / driver
            drv.mkdir(parents=True, exist_ok=True)
            os.symlink(os.path.relpath(drv, path), path / "driver")
        link = self.root / "bus" / "pci" / "devices" / bdf
        os.symlink(os.path.relpath(path, link.parent), link)
        return list(chain)

    def set_iommu_group_type(self, group: int, kind: str) -> None:
        """Write ``/sys/kernel/iommu_groups/<group>/type``."""
        folder = self.root / "kernel" / "iommu_groups" / str(group)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "type").write_text(kind + "\n")

    def add_iommu_unit(self, name: str) -> None:
        """Add ``/sys/class/iommu/<name>``."""
        (self.root / "class" / "iommu" / name).mkdir(parents=True, exist_ok=True)

    def empty_iommu(self) -> None:
        """Create empty ``/sys/class/iommu`` and ``/sys/kernel/iommu_groups``."""
        (self.root / "class" / "iommu").mkdir(parents=True, exist_ok=True)
        (self.root / "kernel" / "iommu_groups").mkdir(parents=True, exist_ok=True)

    def add_netdev(self, name: str, chain: Sequence[str], *, via: str | None = None) -> None:
        """``/sys/class/net/<name>/device`` -> the function (or a child node ``via`` of it)."""
        target = self.device_dir(chain)
        if via:
            target = target / via
            target.mkdir(parents=True, exist_ok=True)
        folder = self.root / "class" / "net" / name
        folder.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(target, folder), folder / "device")

    def add_rdma(self, name: str, chain: Sequence[str], link_layer: str = "InfiniBand") -> None:
        """``/sys/class/infiniband/<name>`` with ``device`` and ``ports/1/link_layer``."""
        folder = self.root / "class" / "infiniband" / name
        (folder / "ports" / "1").mkdir(parents=True, exist_ok=True)
        (folder / "ports" / "1" / "link_layer").write_text(link_layer + "\n")
        os.symlink(os.path.relpath(self.device_dir(chain), folder), folder / "device")

    def add_numa_node(
        self, node: int, cpus: str, distances: Sequence[int], mem_kb: int | None = None
    ) -> None:
        """``/sys/devices/system/node/node<N>`` with cpulist, distance and meminfo."""
        folder = self.root / "devices" / "system" / "node" / f"node{node}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "cpulist").write_text(cpus + "\n")
        (folder / "distance").write_text(" ".join(str(d) for d in distances) + "\n")
        if mem_kb is not None:
            (folder / "meminfo").write_text(
                f"Node {node} MemTotal:       {mem_kb} kB\nNode {node} MemFree:        1 kB\n"
            )

    def add_cpu(self, cpu: int, package: int) -> None:
        """``/sys/devices/system/cpu/cpu<N>/topology/physical_package_id``."""
        folder = self.root / "devices" / "system" / "cpu" / f"cpu{cpu}" / "topology"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "physical_package_id").write_text(f"{package}\n")

    def add_module(self, name: str) -> None:
        """``/sys/module/<name>``."""
        (self.root / "module" / name).mkdir(parents=True, exist_ok=True)

    def set_dmi(self, sys_vendor: str, product_name: str) -> None:
        """``/sys/class/dmi/id/{sys_vendor,product_name}``."""
        folder = self.root / "class" / "dmi" / "id"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "sys_vendor").write_text(sys_vendor + "\n")
        (folder / "product_name").write_text(product_name + "\n")


INTEL_CPUINFO = """processor\t: {n}
vendor_id\t: GenuineIntel
cpu family\t: 6
model name\t: Synthetic Intel(R) Xeon(R) CPU (test)
physical id\t: {package}
flags\t\t: fpu vme sse sse2 {flags}
"""

AMD_CPUINFO = """processor\t: {n}
vendor_id\t: AuthenticAMD
model name\t: Synthetic AMD EPYC (test)
physical id\t: {package}
flags\t\t: fpu sse sse2 {flags}
"""

ARM_CPUINFO = """processor\t: {n}
BogoMIPS\t: 2000.00
Features\t: fp asimd evtstrm {flags}
CPU implementer\t: 0x41
CPU architecture: 8
CPU part\t: 0xd4f
"""

POWER_CPUINFO = """processor\t: {n}
cpu\t\t: POWER9 (raw), altivec supported
revision\t: 2.3 (pvr 004e 1203)
"""


def cpuinfo(template: str, cpus: int, packages: int = 1, hypervisor: bool = False) -> str:
    """``/proc/cpuinfo`` text with ``cpus`` entries spread over ``packages``."""
    per = max(1, cpus // packages)
    flags = "hypervisor" if hypervisor else ""
    return "\n".join(
        template.format(n=n, package=min(n // per, packages - 1), flags=flags) for n in range(cpus)
    )


class FakeProc:
    """Builds a fake procfs below ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        (self.root / "sys" / "kernel").mkdir(parents=True, exist_ok=True)

    def write(self, relpath: str, text: str) -> None:
        """Write a file below the root."""
        path = self.root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def basics(
        self,
        *,
        hostname: str = "testhost",
        kernel: str = "6.1.0-test",
        cmdline: str = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro",
        cpuinfo_text: str | None = None,
        uptime: str = "12345.67 20000.00",
        numa_balancing: str = "1",
        cgroup: str = "0::/\n",
    ) -> None:
        """The files ``collect_host`` reads."""
        self.write("sys/kernel/hostname", hostname + "\n")
        self.write("sys/kernel/osrelease", kernel + "\n")
        self.write("cmdline", cmdline + "\n")
        self.write("cpuinfo", cpuinfo_text or cpuinfo(INTEL_CPUINFO, 4))
        self.write("uptime", uptime + "\n")
        self.write("sys/kernel/numa_balancing", numa_balancing + "\n")
        self.write("1/cgroup", cgroup)

    def add_process(
        self, pid: int, comm: str, cpus: str | None = "0-7", mems: str | None = "0"
    ) -> None:
        """``/proc/<pid>/{comm,status}``."""
        lines = [f"Name:\t{comm}", "State:\tS (sleeping)"]
        if cpus is not None:
            lines.append(f"Cpus_allowed_list:\t{cpus}")
        if mems is not None:
            lines.append(f"Mems_allowed_list:\t{mems}")
        self.write(f"{pid}/comm", comm + "\n")
        self.write(f"{pid}/status", "\n".join(lines) + "\n")


def fake_etc(root: Path, pretty: str = "Synthetic Linux 1.0 (test)") -> Path:
    """An ``/etc`` with ``os-release``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "os-release").write_text(f'NAME="Synthetic"\nPRETTY_NAME="{pretty}"\n')
    return root

"""Facts about one machine: host, driver, GPUs with their PCIe paths and NVLinks, NICs,
the topology matrix and the P2P status matrices.

Every field that may be unknown is ``None`` with the reason in the owning object's
``unavailable`` mapping (see :class:`pcidoc.model.base.FactModel`). Bus ids are normalized to
the sysfs form ``dddd:bb:dd.f`` in lower case.
"""

from __future__ import annotations

from pcidoc.model.base import FactModel, Field, Literal, Model

LinkState = Literal["up", "down", "sleep"]
"""NVLink state; ``sleep`` is a trained link in its low-power state (field 165 = 2): neither
up nor down."""
P2PCap = Literal["read", "write", "nvlink", "atomics", "pci"]
P2P_CAPS: tuple[str, ...] = ("read", "write", "nvlink", "atomics", "pci")

P2P_CODES: dict[str, str] = {
    "X": "the GPU itself",
    "OK": "P2P supported",
    "CNS": "chipset not supported: the platform/root complex (or a VM's emulated chipset) is "
    "not on the driver's P2P allow-list",
    "GNS": "GPU not supported: the driver does not allow P2P on this GPU (typical of GeForce)",
    "TNS": "topology not supported: the PCIe path between the GPUs does not allow P2P",
    "NS": "not supported",
    "DR": "disabled by a driver registry key",
    "U": "unknown",
}
"""Meaning of the status codes printed by ``nvidia-smi topo -p2p`` (our wording)."""


# --------------------------------------------------------------------------------------- host


class NumaNode(Model):
    """One NUMA node of the host."""

    id: int
    cpus: str | None = None
    """CPUs of the node as a cpulist (``"0-23,48-71"``)."""
    distances: list[int] | None = None
    """SLIT distance row (``/sys/devices/system/node/nodeN/distance``), in node-id order."""
    memory_total_bytes: int | None = None


class Iommu(FactModel):
    """IOMMU (VT-d / AMD-Vi / SMMU) state as the kernel sees it."""

    enabled: bool | None = None
    """True when ``/sys/class/iommu`` has units or IOMMU groups exist."""
    vendor: str | None = None
    """``intel`` (dmar), ``amd`` (ivhd), ``arm`` (smmu) or another unit name."""
    kernel_args: list[str] = Field(default_factory=list)
    """IOMMU/ACS-related kernel arguments found on the command line (``iommu=pt``, ...)."""
    group_count: int | None = None
    default_domain_type: str | None = None
    """Most common IOMMU group type among GPUs: ``identity`` (passthrough), ``DMA``, ``DMA-FQ``."""


class Virtualization(FactModel):
    """Whether the OS runs in a VM or container, and confidential computing."""

    hypervisor: bool | None = None
    """True when the CPU reports the ``hypervisor`` flag."""
    vendor: str | None = None
    """Hypervisor vendor when known (``kvm``, ``vmware``, ``microsoft``, ``xen``, ``amazon``...)."""
    container: str | None = None
    """Container runtime when detected (``docker``, ``kubernetes``, ``podman``, ``lxc``)."""
    confidential_compute: bool | None = None
    cc_multi_gpu_mode: str | None = None
    """NVML confidential-compute multi-GPU mode (``none``, ``protected_pcie``, ``nvle``)."""


class GpuDirect(FactModel):
    """Kernel modules for GPUDirect RDMA."""

    nvidia_peermem: bool | None = None
    """``/sys/module/nvidia_peermem`` present."""
    nv_peer_mem: bool | None = None
    """Legacy Mellanox ``nv_peer_mem`` module present."""


class GpuProcess(FactModel):
    """A process currently using a GPU, with its CPU binding.

    A ``FactModel`` so that a field the collector could not read (another PID namespace, no
    permission) carries its reason in ``unavailable``.
    """

    pid: int
    name: str | None = None
    gpus: list[int] = Field(default_factory=list)
    """Indices of the GPUs it uses."""
    cpu_affinity: str | None = None
    """Allowed CPUs (cpulist) from ``sched_getaffinity``."""
    mems_allowed: str | None = None
    """``Mems_allowed_list`` from ``/proc/<pid>/status``."""
    used_memory_bytes: int | None = None


class Host(FactModel):
    """The host: OS, CPUs, NUMA, IOMMU, virtualization and environment."""

    hostname: str | None = None
    kernel: str | None = None
    os: str | None = None
    cmdline: str | None = None
    cpu_model: str | None = None
    cpu_vendor: str | None = None
    """``intel``, ``amd``, ``arm``, ``ibm`` or None."""
    logical_cpus: int | None = None
    sockets: int | None = None
    uptime_s: float | None = None
    """Seconds since boot; the time base for cumulative error counters."""
    numa_nodes: list[NumaNode] = Field(default_factory=list)
    iommu: Iommu = Field(default_factory=Iommu)
    virtualization: Virtualization = Field(default_factory=Virtualization)
    numa_balancing: bool | None = None
    """``/proc/sys/kernel/numa_balancing``."""
    gpudirect: GpuDirect = Field(default_factory=GpuDirect)
    environment: dict[str, str] = Field(default_factory=dict)
    """``NCCL_*``, ``CUDA_VISIBLE_DEVICES`` and related variables of the collecting process."""
    processes: list[GpuProcess] = Field(default_factory=list)
    privileged: bool | None = None
    """Whether the collector could read privileged data (root / CAP_SYS_ADMIN)."""


# ------------------------------------------------------------------------------------- driver


class FabricManager(FactModel):
    """The NVIDIA Fabric Manager service on NVSwitch systems."""

    active: bool | None = None
    version: str | None = None


class Driver(FactModel):
    """NVIDIA driver/NVML state."""

    nvml_available: bool = False
    """True when NVML initialised."""
    nvml_error: str | None = None
    """NVML error name when it did not (``LIBRARY_NOT_FOUND``, ``DRIVER_NOT_LOADED``,
    ``LIB_RM_VERSION_MISMATCH``, ``NO_PERMISSION``...)."""
    nvml_error_message: str | None = None
    driver_version: str | None = None
    nvml_version: str | None = None
    cuda_driver_version: str | None = None
    """CUDA version supported by the driver, e.g. ``"12.6"``."""
    fabric_manager: FabricManager = Field(default_factory=FabricManager)
    nvidia_pci_devices: int | None = None
    """NVIDIA display/3D controllers on the PCI bus, counted from sysfs even with no driver."""


# --------------------------------------------------------------------------------- PCIe / GPU


class AcsControl(Model):
    """The ACS Control register of a PCIe port (``ECAP_ACS+0x6``), decoded."""

    raw: int
    source_validation: bool
    translation_blocking: bool
    request_redirect: bool
    completion_redirect: bool
    upstream_forwarding: bool
    egress_control: bool
    direct_translated: bool

    @classmethod
    def from_raw(cls, raw: int) -> AcsControl:
        """Decode the 16-bit register value (bits per ``include/uapi/linux/pci_regs.h``)."""
        return cls(
            raw=raw,
            source_validation=bool(raw & 0x01),
            translation_blocking=bool(raw & 0x02),
            request_redirect=bool(raw & 0x04),
            completion_redirect=bool(raw & 0x08),
            upstream_forwarding=bool(raw & 0x10),
            egress_control=bool(raw & 0x20),
            direct_translated=bool(raw & 0x40),
        )

    @property
    def redirects_p2p(self) -> bool:
        """True when RR, CR or EC is set: peer traffic is forced up to the root complex."""
        return self.request_redirect or self.completion_redirect or self.egress_control

    def describe(self) -> str:
        """``lspci``-style summary, e.g. ``SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+``."""
        names = [
            ("SrcValid", self.source_validation),
            ("TransBlk", self.translation_blocking),
            ("ReqRedir", self.request_redirect),
            ("CmpltRedir", self.completion_redirect),
            ("UpstreamFwd", self.upstream_forwarding),
            ("EgressCtrl", self.egress_control),
            ("DirectTrans", self.direct_translated),
        ]
        return " ".join(f"{n}{'+' if v else '-'}" for n, v in names)


class PcieHop(FactModel):
    """One PCIe port on the path from a device up to its root port."""

    bus_id: str
    role: Literal["root_port", "switch_downstream", "switch_upstream", "bridge", "other"] | None = (
        None
    )
    vendor_id: str | None = None
    device_id: str | None = None
    name: str | None = None
    current_gen: int | None = None
    current_width: int | None = None
    max_gen: int | None = None
    max_width: int | None = None
    acs_capable: bool | None = None
    """Whether the port has an ACS extended capability (None if config space was unreadable)."""
    acs: AcsControl | None = None
    aer_correctable: int | None = None
    aer_nonfatal: int | None = None
    aer_fatal: int | None = None


class PcieLink(FactModel):
    """The GPU's own PCIe link (the endpoint side)."""

    current_gen: int | None = None
    current_width: int | None = None
    max_gen: int | None = None
    """Max generation possible with this GPU *and* this slot (NVML ``MaxPcieLinkGeneration``)."""
    max_width: int | None = None
    """Max width possible with this GPU and this slot."""
    device_max_gen: int | None = None
    """What the GPU alone supports (NVML ``GpuMaxPcieLinkGeneration`` / nvidia-smi Device Max)."""
    device_max_width: int | None = None
    host_max_gen: int | None = None
    """What the host side (root port / switch port) supports (nvidia-smi ``Host Max``)."""


class NvLink(FactModel):
    """One NVLink of a GPU."""

    link: int
    state: LinkState | None = None
    version: str | None = None
    """NVLink version such as ``"4.0"`` (never the raw NVML integer)."""
    speed_gbps: float | None = None
    """Per-direction rate as reported (``nvidia-smi nvlink -s``: 26.562 GB/s on H100)."""
    remote_bus_id: str | None = None
    remote_type: Literal["gpu", "switch", "ibmnpu", "unknown"] | None = None
    remote_link: int | None = None
    errors: dict[str, int] = Field(default_factory=dict)
    """Cumulative error counters: ``replay``, ``recovery``, ``crc_flit``, ``crc_data``, ..."""


class Fabric(FactModel):
    """NVLink fabric registration state (Hopper and newer)."""

    state: str | None = None
    """``not_supported``, ``not_started``, ``in_progress`` or ``completed``."""
    status: str | None = None
    """``success`` or the error text; meaningful only when ``state == "completed"``."""
    clique_id: int | None = None
    cluster_uuid: str | None = None
    health: list[str] = Field(default_factory=list)
    """Unhealthy bits of the fabric health mask (e.g. ``degraded_bandwidth``)."""


class Mig(FactModel):
    """Multi-Instance GPU mode."""

    enabled: bool | None = None
    pending: bool | None = None


class Gpu(FactModel):
    """One GPU (NVML index order, which is PCI bus order)."""

    index: int
    name: str | None = None
    uuid: str | None = None
    serial: str | None = None
    bus_id: str | None = None
    architecture: str | None = None
    numa_node: int | None = None
    numa_affinity: str | None = None
    """NUMA affinity exactly as reported (may be a range such as ``"0-1"``)."""
    cpu_affinity: str | None = None
    """CPUs local to the GPU, as a cpulist."""
    pcie: PcieLink = Field(default_factory=PcieLink)
    path: list[PcieHop] = Field(default_factory=list)
    """Upstream ports, nearest first: ``path[0]`` is the port the GPU hangs off, the last one the
    root port."""
    replay_count: int | None = None
    replay_rollover_count: int | None = None
    pcie_counters: dict[str, int] = Field(default_factory=dict)
    """Other cumulative NVML PCIe counters (``l0_to_recovery``, ``naks_received``, ...)."""
    aer_correctable: int | None = None
    aer_nonfatal: int | None = None
    aer_fatal: int | None = None
    tx_bytes_per_s: float | None = None
    """PCIe TX throughput at collection time (a momentary reading, not a measurement)."""
    rx_bytes_per_s: float | None = None
    pstate: int | None = None
    """Performance state at collection time (0 = P0, full speed)."""
    persistence_mode: bool | None = None
    mig: Mig = Field(default_factory=Mig)
    virtualization_mode: str | None = None
    """``none``, ``passthrough``, ``vgpu``, ``host_vgpu`` or ``host_vsga``."""
    iommu_group: int | None = None
    iommu_group_type: str | None = None
    """``identity`` (not translated), ``DMA`` or ``DMA-FQ`` (translated)."""
    bar1_total_bytes: int | None = None
    nvlinks: list[NvLink] = Field(default_factory=list)
    fabric: Fabric = Field(default_factory=Fabric)
    nvml_error: str | None = None
    """Set when NVML failed for this GPU (``GPU_IS_LOST``, ``NO_PERMISSION``...)."""

    @property
    def label(self) -> str:
        """``"GPU<index>"``, the label used in matrices and findings."""
        return f"GPU{self.index}"


class Nic(FactModel):
    """A network adapter (RDMA device or PCI network function)."""

    label: str
    """``"NIC<n>"``, the label used in the topology matrix."""
    name: str | None = None
    """Device name, e.g. ``mlx5_0``."""
    bus_id: str | None = None
    numa_node: int | None = None
    kind: Literal["infiniband", "ethernet", "other"] | None = None
    """Link layer when known."""
    netdevs: list[str] = Field(default_factory=list)
    path: list[PcieHop] = Field(default_factory=list)


# ------------------------------------------------------------------------------ matrices


class Topology(Model):
    """The ``nvidia-smi topo -m`` matrix: labels and link classes (``None`` = unknown)."""

    labels: list[str] = Field(default_factory=list)
    links: list[list[str | None]] = Field(default_factory=list)
    source: str | None = None
    """Where the matrix came from: ``nvml``, ``sysfs``, ``import`` or ``synthetic``."""

    def index(self, label: str) -> int | None:
        """Position of ``label`` in the matrix, or ``None``."""
        try:
            return self.labels.index(label)
        except ValueError:
            return None

    def link(self, a: str, b: str) -> str | None:
        """Link class between two labelled devices, or ``None`` when unknown."""
        i, j = self.index(a), self.index(b)
        if i is None or j is None:
            return None
        row = self.links[i] if i < len(self.links) else []
        return row[j] if j < len(row) else None


class P2PStatus(Model):
    """P2P capability matrices, indexed by position in ``gpus``."""

    gpus: list[int] = Field(default_factory=list)
    """GPU indices in matrix order."""
    matrices: dict[str, list[list[str | None]]] = Field(default_factory=dict)
    """Capability (``read``, ``write``, ``nvlink``, ``atomics``, ``pci``) -> status codes
    (``OK``, ``CNS``, ``GNS``, ``TNS``, ``NS``, ``DR``, ``U``; ``X`` on the diagonal)."""
    can_access_peer: list[list[bool | None]] | None = None
    """``cudaDeviceCanAccessPeer`` as reported by a CUDA program or probe."""

    def status(self, cap: str, a: int, b: int) -> str | None:
        """Status code of GPU ``a`` -> GPU ``b`` for one capability, or ``None``."""
        matrix = self.matrices.get(cap)
        if matrix is None or a not in self.gpus or b not in self.gpus:
            return None
        i, j = self.gpus.index(a), self.gpus.index(b)
        try:
            return matrix[i][j]
        except IndexError:
            return None

"""Evidence read from outputs that describe a job or a machine indirectly: NCCL's own logs and
topology files, ``lspci``, ``collect_env`` reports, multi-node nccl-tests/rccl-tests runs and AMD
topology tables (``capture.evidence``).

These are kept as read, with the log line each fact came from (``quote``), because a diagnosis
built on them must quote its evidence. Facts that also describe this machine's GPUs (bus ids,
NVLinks, the PCIe tree of a topology file) are additionally merged into the capture's GPUs and
topology by the importer; what only concerns a job (transports chosen, ranks on other hosts)
stays here.
"""

from __future__ import annotations

from pcidoc.model.base import Field, Model
from pcidoc.model.kernel import KernelLog, LinkHistory
from pcidoc.model.runtime import (
    FlightRecorderDump,
    InspectorRecord,
    NcclRasReport,
    NcclWatchdog,
    P2PIntegrity,
    ProfilerTrace,
)


class Quoted(Model):
    """A fact with the line of text it was read from."""

    quote: str | None = None
    """The source line, trimmed (at most 300 characters)."""


class NcclRank(Quoted):
    """One rank as NCCL's ``comm ... rank r nranks n cudaDev d busId b`` line shows it."""

    rank: int
    nranks: int | None = None
    host: str | None = None
    cuda_dev: int | None = None
    bus_id: str | None = None
    """Normalised sysfs form (``0000:1c:00.0``) when NCCL printed one."""


class NcclConnection(Quoted):
    """One ``Channel``/``Ring`` connection line: which transport NCCL chose between two ranks."""

    channel: int | None = None
    src_rank: int
    dst_rank: int
    src_dev: str | None = None
    """What NCCL printed in brackets after the rank: a CUDA device (new logs) or a bus id
    (2.4-2.7 logs)."""
    dst_dev: str | None = None
    host: str | None = None
    transport: str
    """``P2P``, ``SHM``, ``NET`` or ``COLLNET`` (2.4's ``direct shared memory`` is ``SHM``)."""
    detail: str
    """Everything after ``via`` as printed (``P2P/CUMEM/read``, ``NET/IB/3/GDRDMA``)."""
    network: str | None = None
    """For NET: the network (``IB``, ``Socket``, ``AWS Libfabric``, a plugin name)."""
    nic_index: int | None = None
    gdr: bool | None = None
    """For NET: whether the line says ``/GDRDMA``."""
    direction: str | None = None
    """``send`` or ``receive`` when printed."""


class NcclNic(Model):
    """A NIC NCCL listed (``NET/IB : Using [0]mlx5_0:1/RoCE``)."""

    index: int | None = None
    name: str
    port: int | None = None
    link_layer: str | None = None
    """``IB`` or ``RoCE`` (IB transport), or None (sockets)."""
    address: str | None = None
    """For sockets: the IP address printed."""


class NcclLog(Model):
    """What one NCCL_DEBUG=INFO log (one paste, possibly several hosts) says."""

    source: str | None = None
    version: str | None = None
    """``2.21.5`` (from ``NCCL version 2.21.5+cuda12.4``)."""
    cuda_driver_version: str | None = None
    """``12.1`` from ``cudaDriverVersion 12010``."""
    hosts: list[str] = Field(default_factory=list)
    """Host names in the line prefixes (may be redacted by the poster)."""
    nranks: int | None = None
    nnodes: int | None = None
    ranks: list[NcclRank] = Field(default_factory=list)
    connections: list[NcclConnection] = Field(default_factory=list)
    networks: list[Quoted] = Field(default_factory=list)
    """``Using network IB`` lines; the quote holds the line, ``name`` the network."""
    network: str | None = None
    """The last network NCCL said it used (``IB``, ``Socket``, a plugin's name)."""
    net_plugin: str | None = None
    """A network plugin that was loaded (``IBext_v8``, ``AWS Libfabric``...)."""
    net_plugin_quote: str | None = None
    ib_nics: list[NcclNic] = Field(default_factory=list)
    socket_nics: list[NcclNic] = Field(default_factory=list)
    socket_quote: str | None = None
    """The first ``NET/Socket : Using <if>`` line (NCCL <= 2.5 names the socket network only
    there)."""
    bootstrap_if: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    """``NCCL_X set by environment to Y`` lines."""
    env_quotes: dict[str, str] = Field(default_factory=dict)
    gdr_disabled: list[Quoted] = Field(default_factory=list)
    """``GPU Direct RDMA Disabled for HCA`` lines."""
    p2p_refused: list[Quoted] = Field(default_factory=list)
    """``P2P is disabled between connected GPUs`` / ``Could not enable P2P`` lines."""
    ib_unusable: list[Quoted] = Field(default_factory=list)
    """``NET/IB : No device found`` / ``Unable to open device`` / ``ibv_open_device failed``."""
    shm_errors: list[Quoted] = Field(default_factory=list)
    """``posix_fallocate failed`` / ``failed to extend /dev/shm`` / ``No space left``."""
    warnings: list[Quoted] = Field(default_factory=list)
    """Every ``NCCL WARN`` line (at most 50)."""
    lines: int = 0
    """NCCL lines read."""


class TopoCpu(Model):
    """A ``<cpu>`` node of an NCCL topology file."""

    numaid: int | None = None
    affinity: str | None = None
    arch: str | None = None
    vendor: str | None = None
    familyid: int | None = None
    modelid: int | None = None


class TopoNvlink(Model):
    """An ``<nvlink>`` element of a ``<gpu>``."""

    target: str | None = None
    count: int | None = None
    tclass: str | None = None


class TopoPci(Model):
    """A ``<pci>`` node: a bridge/switch, GPU, NIC or unidentified device."""

    busid: str
    """As written in the file (lower case)."""
    parent: str | None = None
    """Bus id of the enclosing ``<pci>``, or None directly under a ``<cpu>``."""
    numaid: int | None = None
    """``numaid`` of the enclosing ``<cpu>``."""
    cpu_index: int | None = None
    """Position of the enclosing ``<cpu>`` in ``NcclTopology.cpus``."""
    cls: str | None = None
    """PCI class (``0x030200`` 3D controller, ``0x020700`` InfiniBand, ``0x060400`` bridge)."""
    vendor: str | None = None
    device: str | None = None
    link_speed: str | None = None
    link_width: int | None = None
    kind: str = "unknown"
    """``gpu``, ``nic``, ``bridge`` or ``unknown`` (from the class or the child element)."""
    gpu_dev: int | None = None
    gpu_sm: int | None = None
    gpu_gdr: bool | None = None
    nvlinks: list[TopoNvlink] = Field(default_factory=list)
    net_names: list[str] = Field(default_factory=list)
    net_speed_mbps: int | None = None
    net_gdr: bool | None = None


class NcclTopology(Model):
    """An NCCL topology file (``NCCL_TOPO_FILE`` / ``NCCL_TOPO_DUMP_FILE``)."""

    source: str | None = None
    version: str | None = None
    cpus: list[TopoCpu] = Field(default_factory=list)
    pci: list[TopoPci] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    """What NCCL would reject or misread (a ``<cpu>`` without ``arch``/``vendor``...)."""


class LspciDevice(Model):
    """One device block (or a header-less excerpt) of ``lspci -vv``/``-vvv`` output."""

    bus_id: str | None = None
    name: str | None = None
    kind: str | None = None
    """``bridge``, ``gpu``, ``nic`` or ``other`` (from the header line's class text)."""
    lnkcap_gts: float | None = None
    lnkcap_width: int | None = None
    lnksta_gts: float | None = None
    lnksta_width: int | None = None
    speed_downgraded: bool = False
    width_downgraded: bool = False
    lnksta_quote: str | None = None
    lnkcap2_gts: float | None = None
    """The fastest of ``LnkCap2: Supported Link Speeds: 2.5-16GT/s``."""
    lnkctl2_target_gts: float | None = None
    """``LnkCtl2: Target Link Speed: 8GT/s``: the speed the port may train to at most."""
    lnkctl2_quote: str | None = None
    acs_ctl: str | None = None
    """The ACSCtl flags as printed (``SrcValid+ TransBlk- ReqRedir+ ...``)."""
    acs_redirect: bool | None = None
    """True when ReqRedir+, CmpltRedir+ or EgressCtrl+."""
    uncorrectable: list[str] = Field(default_factory=list)
    """UESta bits that are set."""
    correctable: list[str] = Field(default_factory=list)
    """CESta bits that are set."""
    devsta_errors: list[str] = Field(default_factory=list)
    """DevSta error bits that are set (``CorrErr``, ``UnsupReq``...)."""


class LspciTree(Model):
    """``lspci -tv``: the devices under each root, by bus id."""

    devices: dict[str, str] = Field(default_factory=dict)
    """Bus id -> description."""
    parents: dict[str, str] = Field(default_factory=dict)
    """Bus id -> bus id of the bridge it hangs under."""


class EnvReport(Model):
    """A ``python -m torch.utils.collect_env`` or vLLM ``collect_env.py`` report."""

    tool: str
    """``torch`` or ``vllm``."""
    source: str | None = None
    torch_version: str | None = None
    cuda_build: str | None = None
    """CUDA used to build PyTorch."""
    cuda_runtime: str | None = None
    rocm_version: str | None = None
    nccl_version: str | None = None
    driver_version: str | None = None
    vllm_version: str | None = None
    cuda_archs: str | None = None
    os: str | None = None
    kernel: str | None = None
    gpu_models: list[str] = Field(default_factory=list)
    """One entry per GPU, as listed."""
    nic_notice: str | None = None
    """``N NICs found ... only displaying M`` when the report clipped its NIC list."""


class PerfRank(Model):
    """A ``#  Rank r Group g Pid p on HOST device d [bus] NAME`` line."""

    rank: int
    host: str
    pid: int | None = None
    device: int | None = None
    bus: str | None = None
    """As printed (``0x8d``, ``0002:00:01``)."""
    name: str | None = None


class PerfRun(Model):
    """The launch of an nccl-tests / rccl-tests run: who ran where, and how."""

    tool: str = "nccl-tests"
    """``nccl-tests`` or ``rccl-tests``."""
    source: str | None = None
    version: str | None = None
    gpus_per_process: int | None = None
    ranks: list[PerfRank] = Field(default_factory=list)
    headers: int = 0
    """How many ``# nThread`` headers the paste holds (one per process when each ran alone)."""
    rank_lists: int = 0
    """How many ``# Using devices`` rank lists."""
    zero_busbw_rows: int = 0
    """Result rows with a busbw of 0 at a message size above 0."""
    rows: int = 0
    duplicated_rows: int = 0
    """Rows that repeat an earlier row of another header's table size for size, or the row
    before them at the same size (several 1-rank jobs writing into one output)."""
    max_algbw_gbps: float | None = None
    """The largest out-of-place algbw of the rows (a 1-rank job's algbw is a local copy's)."""
    quote: str | None = None

    @property
    def hosts(self) -> list[str]:
        """Distinct host names, in order of appearance."""
        return list(dict.fromkeys(r.host for r in self.ranks))


class AmdTopology(Model):
    """``rocm-smi --showtopo`` / ``amd-smi topology``: per GPU pair the link type, hops and
    weight, and each GPU's NUMA node."""

    source: str | None = None
    tool: str = "rocm-smi"
    gpus: list[int] = Field(default_factory=list)
    link_types: list[list[str | None]] = Field(default_factory=list)
    """``XGMI``, ``PCIE`` or None, in ``gpus`` order."""
    hops: list[list[int | None]] = Field(default_factory=list)
    weights: list[list[int | None]] = Field(default_factory=list)
    numa_nodes: dict[int, int] = Field(default_factory=dict)


class SignatureHit(Quoted):
    """A line that matched an entry of the failure catalogue (:mod:`pcidoc.catalogue`).

    Only the entry's id and what the line said are kept: what the entry means, how severe it
    is and what to do come from the catalogue when the capture is diagnosed.
    """

    id: str
    """The catalogue entry (``nccl.net-ib.completion-error``)."""
    file: str | None = None
    """The pasted file (or live source) the line came from."""
    line: int | None = None
    """Its line number there (1-based), the first when ``count`` > 1."""
    count: int = 1
    """Identical lines (same entry, subject and values) read."""
    values: dict[str, str] = Field(default_factory=dict)
    """What the entry's pattern captured (``status``, ``code``, ``vendor_err``...)."""
    host: str | None = None
    rank: int | None = None
    cuda_dev: int | None = None
    """The CUDA device an NCCL prefix named (an ordinal of the process's visible devices)."""
    bus_id: str | None = None
    """Normalised (``0000:3b:00.0``) when the line named the device."""
    gpu: int | None = None
    """A GPU index the line named (``GPU 3``)."""
    nic: str | None = None
    """An RDMA device or network interface (``mlx5_0``)."""
    port: int | None = None
    link: int | None = None
    """An NVLink number."""


class RdmaPort(Model):
    """One port of an RDMA device as ``ibdev2netdev``, ``ibstat`` or ``ibv_devinfo`` print it
    (each tool fills what it shows; the check joins them by device and port)."""

    tool: str
    """``ibdev2netdev``, ``ibstat`` or ``ibv_devinfo``."""
    hca: str
    """The RDMA device (``mlx5_0``)."""
    port: int = 1
    state: str | None = None
    """The port's logical state as the tool prints it (``Active``, ``Down``, ``Init``,
    ``PORT_ACTIVE``)."""
    active: bool | None = None
    """True for Active/PORT_ACTIVE, False for Down/Init/Armed/PORT_DOWN..."""
    physical: str | None = None
    """The physical state (``LinkUp``, ``Polling``, ``Disabled``)."""
    rate_gbps: float | None = None
    """``ibstat``'s ``Rate:`` (the link's data rate in Gb/s)."""
    link_layer: str | None = None
    """``InfiniBand`` or ``Ethernet`` (RoCE)."""
    netdev: str | None = None
    """The network interface of the port (``ibdev2netdev``: ``ibp26s0``, ``enp27s0f0np0``)."""
    netdev_up: bool | None = None
    """``ibdev2netdev``'s ``(Up)``/``(Down)``: the network interface's state, which for an
    InfiniBand port is the IPoIB interface, not the port."""
    quote: str | None = None


class ImportedEvidence(Model):
    """Everything of the kinds above read from the imported (or live) text."""

    nccl_logs: list[NcclLog] = Field(default_factory=list)
    nccl_topologies: list[NcclTopology] = Field(default_factory=list)
    lspci: list[LspciDevice] = Field(default_factory=list)
    lspci_trees: list[LspciTree] = Field(default_factory=list)
    env_reports: list[EnvReport] = Field(default_factory=list)
    test_runs: list[PerfRun] = Field(default_factory=list)
    amd_topologies: list[AmdTopology] = Field(default_factory=list)
    nccl_ras: list[NcclRasReport] = Field(default_factory=list)
    nccl_watchdogs: list[NcclWatchdog] = Field(default_factory=list)
    flight_records: list[FlightRecorderDump] = Field(default_factory=list)
    inspector: list[InspectorRecord] = Field(default_factory=list)
    profiler_traces: list[ProfilerTrace] = Field(default_factory=list)
    p2p_integrity: list[P2PIntegrity] = Field(default_factory=list)
    """Run-time evidence (:mod:`pcidoc.model.runtime`)."""
    kernel_logs: list[KernelLog] = Field(default_factory=list)
    """Kernel logs (``dmesg``, ``journalctl -k``, ``kern.log``; see :mod:`pcidoc.model.kernel`)."""
    link_histories: list[LinkHistory] = Field(default_factory=list)
    rdma_ports: list[RdmaPort] = Field(default_factory=list)
    """RDMA device ports (``ibdev2netdev``, ``ibstat``, ``ibv_devinfo``)."""
    """Repeated link readings (``pcidoc watch``, pasted snapshots)."""
    signatures: list[SignatureHit] = Field(default_factory=list)
    """Lines that matched the failure catalogue (:mod:`pcidoc.catalogue`), known-benign ones
    included."""
    mentions: list[SignatureHit] = Field(default_factory=list)
    """Sentences that mention a catalogue entry without being a log line: context, never
    counted as evidence (at most 20)."""
    scanned_lines: int = 0
    """Lines matched against the failure catalogue (0: no text was, e.g. an old capture)."""
    topo_file_env: str | None = None
    """``NCCL_TOPO_FILE`` of a live machine, when set (its content is in ``nccl_topologies``)."""
    topo_file_error: str | None = None
    """Why the live ``NCCL_TOPO_FILE`` could not be read."""

    def empty(self) -> bool:
        """True when nothing was read."""
        return not (
            self.nccl_logs
            or self.nccl_topologies
            or self.lspci
            or self.lspci_trees
            or self.env_reports
            or self.test_runs
            or self.amd_topologies
            or self.nccl_ras
            or self.nccl_watchdogs
            or self.flight_records
            or self.inspector
            or self.profiler_traces
            or self.p2p_integrity
            or self.kernel_logs
            or self.link_histories
            or self.rdma_ports
            or self.signatures
            or self.topo_file_env
        )

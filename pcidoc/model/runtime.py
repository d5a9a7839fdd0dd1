"""Evidence of a job at run time: NCCL RAS reports, PyTorch's NCCL watchdog and flight
recorder, NCCL Inspector bandwidth records and peer-to-peer data-integrity outputs
(``capture.evidence``; see :mod:`pcidoc.model.evidence`).

Kept as read, with the line each fact came from (``quote``), so a diagnosis can quote it.
"""

from __future__ import annotations

from pcidoc.model.base import Field, Model


class RasRank(Model):
    """A rank (or process) RAS named, with what it said about it."""

    rank: int | None = None
    """Rank within the communicator (None for a process-level line)."""
    comm: str | None = None
    """``#0-0`` (text) or the communicator hash (JSON)."""
    gpu: int | None = None
    """CUDA device of the process that manages the rank."""
    nvml_dev: int | None = None
    pid: int | None = None
    host: str | None = None
    """Node address or name as RAS printed it."""
    state: str
    """``missing`` (no data from it), ``dead`` (unreachable), ``unresponsive``, ``behind`` or
    ``ahead`` (collective counts), ``error`` (reported an error) or ``status`` (a status that
    differs from its peers)."""
    ops: int | None = None
    """The operation count of the rank's group, when RAS printed one."""
    quote: str | None = None


class RasCountGroup(Model):
    """``N ranks have launched up to operation X`` inside a MISMATCH block."""

    comm: str | None = None
    collective: str | None = None
    ranks: int
    ops: int
    """0 for ``have not launched any operations``."""


class RasComm(Model):
    """A communicator (or group of them) with its status and errors."""

    ident: str
    """``#0-0`` or ``group 1`` (summary table) or the hash (JSON)."""
    status: str | None = None
    errors: list[str] = Field(default_factory=list)
    """``OK``, ``INCOMPLETE``, ``MISMATCH``, ``ERROR``, ``TIMEOUT``..."""
    ranks: int | None = None
    """Ranks per communicator."""
    missing: int | None = None
    """``Missing communicator data from N ranks``."""
    quote: str | None = None


class RasOutlier(Model):
    """A node RAS calls an outlier (``Node 10.4.109.13 running processes 60004,60035``)."""

    host: str
    quote: str | None = None


class NcclRasReport(Model):
    """One NCCL RAS status report (``ncclras`` text or ``-f json``, or the live socket)."""

    source: str | None = None
    fmt: str = "text"
    """``text`` or ``json``."""
    version: str | None = None
    nodes: int | None = None
    processes: int | None = None
    gpus: int | None = None
    outliers: list[RasOutlier] = Field(default_factory=list)
    """``The outlier node(s)`` lines (a node whose process or GPU count differs)."""
    comms: list[RasComm] = Field(default_factory=list)
    counts: list[RasCountGroup] = Field(default_factory=list)
    ranks: list[RasRank] = Field(default_factory=list)
    dead_processes: int = 0
    missing_processes: int = 0
    timeouts: int = 0
    implausible: list[str] = Field(default_factory=list)
    """Numbers the report cannot mean (more missing ranks than the job has GPUs...)."""


class NcclWatchdog(Model):
    """A ProcessGroupNCCL watchdog timeout (``WorkNCCL(SeqNum=...) ran for ... ms``)."""

    rank: int | None = None
    pg: str | None = None
    seq: int | None = None
    op: str | None = None
    numel_in: int | None = None
    numel_out: int | None = None
    timeout_ms: int | None = None
    ran_ms: int | None = None
    last_enqueued: int | None = None
    last_completed: int | None = None
    host: str | None = None
    quote: str | None = None


class FlightEntry(Model):
    """The last collective of one rank in a PyTorch flight-recorder dump."""

    rank: int | None = None
    pg: str | None = None
    seq: int | None = None
    op: str | None = None
    state: str | None = None
    """``scheduled``, ``started`` or ``completed``."""
    last_completed: int | None = None
    """Highest collective sequence number this rank completed."""
    last_started: int | None = None
    last_enqueued: int | None = None


class FlightRecorderDump(Model):
    """A PyTorch NCCL flight-recorder dump (``TORCH_NCCL_TRACE_BUFFER_SIZE``), JSON form."""

    source: str | None = None
    version: str | None = None
    entries: int = 0
    ranks: list[FlightEntry] = Field(default_factory=list)


class InspectorRecord(Model):
    """One NCCL Inspector record (JSON ``coll_perf`` or a Prometheus sample)."""

    fmt: str = "json"
    """``json`` or ``prometheus``."""
    version: str | None = None
    collective: str
    """``AllReduce``, ``ReduceScatter``... or ``Send``/``Recv`` for point-to-point."""
    p2p: bool = False
    msg_size_bytes: int | None = None
    """The message size (the lower end of a Prometheus size bucket)."""
    msg_size_label: str | None = None
    busbw_gbps: float | None = None
    algbw_gbps: float | None = None
    exec_time_us: float | None = None
    nranks: int | None = None
    nnodes: int | None = None
    rank: int | None = None
    host: str | None = None
    gpu: str | None = None
    comm: str | None = None
    algo_proto: str | None = None


class ProfilerTrace(Model):
    """NCCL's example profiler plugin trace (Chrome trace events): no bandwidth in it."""

    source: str | None = None
    events: int = 0
    collectives: list[str] = Field(default_factory=list)
    """``AllReduce count=262144 ncclFloat32 RING/SIMPLE``-style summaries."""


class P2PIntegrity(Model):
    """What a pasted output says about the bytes a peer copy delivered."""

    tool: str
    """``simpleP2P``, ``pytorch`` (a REPL session) or ``iommu-table`` (GPUs, IOMMU groups and
    root complexes listed with a corrupted result)."""
    ok: bool | None = None
    """True: verified correct; False: wrong data; None: suspected (indirect)."""
    src: int | None = None
    dst: int | None = None
    wrong: int = 0
    """Wrong elements printed."""
    staged_ok: bool | None = None
    """A host-staged copy of the same data arrived intact (PyTorch sessions)."""
    bandwidth_gbps: float | None = None
    gpus: list[str] = Field(default_factory=list)
    """Bus ids of the GPUs named."""
    iommu_groups: list[str] = Field(default_factory=list)
    root_complexes: list[str] = Field(default_factory=list)
    quote: str | None = None
    detail: str | None = None

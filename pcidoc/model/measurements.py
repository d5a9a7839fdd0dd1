"""Measurements: what the wiring delivered, from pcidoc's probes or from imported tool output.

Every measurement says where it came from (``source``: ``probe`` or ``import:<file>``) and
how it was taken (``method``), so a number from a 2017 ``bandwidthTest`` paste is never shown as
if pcidoc had measured it. Bandwidth is GB/s = 10^9 B/s, latency microseconds.
"""

from __future__ import annotations

from pcidoc.model.base import Any, Field, Literal, Model

Direction = Literal["h2d", "d2h", "d2d"]
Memory = Literal["pinned", "pageable", "device"]
Placement = Literal["local", "remote", "unbound"]


class SweepPoint(Model):
    """One size of a transfer size sweep."""

    size_bytes: int
    bandwidth_gbps: float


class TransferMeasurement(Model):
    """Host<->device (or on-device) copy bandwidth of one GPU in one direction."""

    gpu: int
    direction: Direction
    memory: Memory
    bidirectional: bool = False
    """True when the other direction ran at the same time (the value is this direction only)."""
    placement: Placement | None = None
    """Host memory and thread relative to the GPU's NUMA node; ``None`` when not controlled."""
    host_numa_node: int | None = None
    size_bytes: int | None = None
    bandwidth_gbps: float
    """Median over trials (or the tool's single reported value)."""
    min_gbps: float | None = None
    max_gbps: float | None = None
    cov: float | None = None
    """Coefficient of variation of the trials (stdev/mean)."""
    trials: int | None = None
    method: str | None = None
    """``cuda-events`` (pcidoc), ``host-timer`` (pageable), ``bandwidthTest``, ``nvbandwidth-ce``,
    ``nvbandwidth-sm``."""
    link_gen_under_load: int | None = None
    link_width_under_load: int | None = None
    pstate_under_load: int | None = None
    sweep: list[SweepPoint] = Field(default_factory=list)
    saturation_size_bytes: int | None = None
    """Smallest size reaching 95 % of the plateau."""
    context: str | None = None
    """How the run was placed, e.g. ``numactl -m1 -N1``."""
    source: str | None = None
    conditions: dict[str, Any] = Field(default_factory=dict)
    """How it was taken, so the number can be reproduced: mode, sizes, copies per trial,
    trials, warm-up, gating, threads, model shape, torch/CUDA/NCCL versions, ``NCCL_ALGO`` /
    ``NCCL_PROTO`` when set (pcidoc's probes; empty for imported numbers)."""


class P2PMatrixMeasurement(Model):
    """A GPU x GPU matrix of copy bandwidth or latency (rows = source, columns = destination)."""

    kind: Literal["bandwidth", "latency"]
    bidirectional: bool = False
    p2p: Literal["enabled", "disabled", "staged"]
    """``enabled``: peer access on; ``disabled``: the driver's fallback copy with peer access off;
    ``staged``: an explicit copy through pinned host memory."""
    access: Literal["write", "read"] | None = None
    method: Literal["ce", "sm"] | None = None
    latency_side: Literal["gpu", "cpu"] | None = None
    """For latency matrices: measured on the GPU or from the CPU."""
    unit: Literal["GB/s", "us"]
    gpus: list[int]
    values: list[list[float | None]]
    size_bytes: int | None = None
    source: str | None = None
    conditions: dict[str, Any] = Field(default_factory=dict)
    """How it was taken, so the number can be reproduced: mode, sizes, copies per trial,
    trials, warm-up, gating, threads, model shape, torch/CUDA/NCCL versions, ``NCCL_ALGO`` /
    ``NCCL_PROTO`` when set (pcidoc's probes; empty for imported numbers)."""

    def value(self, src: int, dst: int) -> float | None:
        """Value for GPU ``src`` -> GPU ``dst``, or ``None``."""
        if src not in self.gpus or dst not in self.gpus:
            return None
        i, j = self.gpus.index(src), self.gpus.index(dst)
        try:
            return self.values[i][j]
        except IndexError:
            return None


class P2PVerification(Model):
    """A byte-verified peer copy."""

    src: int
    dst: int
    ok: bool
    detail: str | None = None
    source: str | None = None


class CollectiveRow(Model):
    """One message size of a collective benchmark (nccl-tests definitions)."""

    size_bytes: int
    time_us: float | None = None
    algbw_gbps: float | None = None
    busbw_gbps: float | None = None
    wrong: int | None = None
    """Number of wrong elements (nccl-tests ``#wrong``); 0 when verified correct."""
    in_place: bool = False


class CollectiveMeasurement(Model):
    """A collective bandwidth run (nccl-tests ``*_perf`` or pcidoc's all-reduce probe)."""

    op: str = "all_reduce"
    backend: str | None = None
    """``nccl`` or ``gloo``."""
    ranks: int | None = None
    nodes: int | None = None
    gpus: list[int] = Field(default_factory=list)
    """GPU indices used on this machine (empty when unknown or multi-node)."""
    rows: list[CollectiveRow] = Field(default_factory=list)
    avg_busbw_gbps: float | None = None
    """nccl-tests' ``# Avg bus bandwidth`` line when present."""
    correct: bool | None = None
    tool: str | None = None
    """``nccl-tests`` or ``pcidoc``."""
    nccl_env: dict[str, str] = Field(default_factory=dict)
    """NCCL variables in effect when pcidoc measured that change bus bandwidth (``NCCL_ALGO``,
    ``NCCL_P2P_DISABLE``, ``NCCL_NVLS_ENABLE``, ``NCCL_MAX_NCHANNELS``, ``NCCL_TOPO_FILE``...);
    empty when none was set, or for imported results."""
    source: str | None = None
    conditions: dict[str, Any] = Field(default_factory=dict)
    """How it was taken, so the number can be reproduced: mode, sizes, copies per trial,
    trials, warm-up, gating, threads, model shape, torch/CUDA/NCCL versions, ``NCCL_ALGO`` /
    ``NCCL_PROTO`` when set (pcidoc's probes; empty for imported numbers)."""

    def peak_busbw(self) -> CollectiveRow | None:
        """Out-of-place row with the highest bus bandwidth (in-place rows when that is all)."""
        rows = [r for r in self.rows if r.busbw_gbps is not None and not r.in_place] or [
            r for r in self.rows if r.busbw_gbps is not None
        ]
        return max(rows, key=lambda r: r.busbw_gbps or 0.0) if rows else None


class ScalingPoint(Model):
    """Throughput of the synthetic data-parallel step at one rank count."""

    ranks: int
    gpus: list[int] = Field(default_factory=list)
    throughput_samples_per_s: float
    step_time_ms: float | None = None
    step_time_p90_ms: float | None = None
    efficiency: float | None = None
    """throughput(N) / (N x throughput(1)); 1.0 at N = 1."""
    allreduce_busbw_gbps: float | None = None
    """All-reduce bus bandwidth at the gradient size on these ranks (``None`` for one rank)."""


class ScalingMeasurement(Model):
    """A 1 -> N ranks scaling ladder."""

    backend: str | None = None
    model_params: int | None = None
    gradient_bytes: int | None = None
    per_rank_batch: int | None = None
    points: list[ScalingPoint] = Field(default_factory=list)
    allreduce_busbw_gbps: float | None = None
    """Bus bandwidth measured at the gradient size in the same run (feeds the alpha-beta model)."""
    slowest_edge: str | None = None
    """The weakest link class among the GPUs used at the largest rank count (``SYS``...)."""
    source: str | None = None
    conditions: dict[str, Any] = Field(default_factory=dict)
    """How it was taken, so the number can be reproduced: mode, sizes, copies per trial,
    trials, warm-up, gating, threads, model shape, torch/CUDA/NCCL versions, ``NCCL_ALGO`` /
    ``NCCL_PROTO`` when set (pcidoc's probes; empty for imported numbers)."""


class MemcpyKind(Model):
    """Host<->device copies of one kind in a profiler trace."""

    kind: str
    """Kineto's label, e.g. ``Memcpy HtoD (Pageable -> Device)``."""
    direction: Literal["h2d", "d2h", "d2d", "other"]
    memory: Literal["pageable", "pinned", "device", "other"]
    count: int
    bytes: int
    time_us: float


class WorkloadEvidence(Model):
    """What a PyTorch profiler trace of the user's own job shows."""

    steps: int | None = None
    """Profiler steps found (``ProfilerStep#N``)."""
    step_time_ms: float | None = None
    memcpy: list[MemcpyKind] = Field(default_factory=list)
    nccl_time_share: float | None = None
    """Share of step time with an NCCL kernel running."""
    nccl_exposed_share: float | None = None
    """Share of step time with NCCL running and no compute kernel overlapping it."""
    ranks: int | None = None
    source: str | None = None


class ProbeError(Model):
    """A probe that could not produce its measurement."""

    probe: str
    message: str
    kind: Literal["timeout", "crash", "unavailable", "interrupted", "refused", "error"] = "error"


class Measurements(Model):
    """All measurements attached to a capture."""

    transfers: list[TransferMeasurement] = Field(default_factory=list)
    p2p: list[P2PMatrixMeasurement] = Field(default_factory=list)
    p2p_verification: list[P2PVerification] = Field(default_factory=list)
    collectives: list[CollectiveMeasurement] = Field(default_factory=list)
    scaling: list[ScalingMeasurement] = Field(default_factory=list)
    workloads: list[WorkloadEvidence] = Field(default_factory=list)
    probe_errors: list[ProbeError] = Field(default_factory=list)

    def is_empty(self) -> bool:
        """True when nothing was measured or imported."""
        return not (
            self.transfers
            or self.p2p
            or self.p2p_verification
            or self.collectives
            or self.scaling
            or self.workloads
        )

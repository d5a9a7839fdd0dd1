"""What one recognised section of a pasted text contributes to the capture.

Each format parser turns one section into a :class:`Fragment`; :mod:`.merge` folds the fragments
of all files into one :class:`~pcidoc.model.capture.Capture`. Fragments hold plain dictionaries
for GPU facts (so that several partial views of one GPU merge field by field) and finished
pydantic models for measurements.
"""

from __future__ import annotations

from typing import Any

from pcidoc._record import field, record
from pcidoc.model.evidence import ImportedEvidence
from pcidoc.model.facts import Topology
from pcidoc.model.measurements import (
    CollectiveMeasurement,
    P2PMatrixMeasurement,
    TransferMeasurement,
    WorkloadEvidence,
)

MAX_MATRIX_DEVICES = 2048
"""Most devices a topology or P2P status matrix may name (a matrix costs the square of it).
A 1,000-GPU matrix imports; a paste naming 200,000 devices stops at this many."""

MAX_MEASURED_DEVICES = 1024
"""Most GPUs a bandwidth/latency matrix (p2pBandwidthLatencyTest, nvbandwidth) may hold."""


def too_many(frag: Fragment, count: int, limit: int, what: str) -> bool:
    """True (with one warning per fragment) when ``count`` devices reach ``limit``."""
    if count < limit:
        return False
    note = f"{what}: more than {limit} devices; read the first {limit}"
    if note not in frag.warnings:
        frag.warn(note)
    return True


@record
class GpuPart:
    """What one section says about one GPU.

    ``fields`` are top-level :class:`~pcidoc.model.facts.Gpu` fields; ``pcie``, ``mig`` and
    ``fabric`` the fields of those sub-objects; ``nvlinks`` maps a link number to
    :class:`~pcidoc.model.facts.NvLink` fields. ``unavailable`` maps ``""`` (the GPU itself),
    ``"pcie"``, ``"mig"`` or ``"fabric"`` to field -> reason.
    """

    index: int
    index_certain: bool = True
    """False when the index is an assumption (matched again by bus id / UUID when merging)."""
    fields: dict[str, Any] = field(default_factory=dict)
    pcie: dict[str, Any] = field(default_factory=dict)
    mig: dict[str, Any] = field(default_factory=dict)
    fabric: dict[str, Any] = field(default_factory=dict)
    nvlinks: dict[int, dict[str, Any]] = field(default_factory=dict)
    remotes: list[tuple[int, str | None, int | None]] = field(default_factory=list)
    """``nvidia-smi nvlink -R`` entries as printed: (link, remote bus id, remote link)."""
    unavailable: dict[str, dict[str, str]] = field(default_factory=dict)

    def unknown(self, field_name: str, reason: str, part: str = "") -> None:
        """Record why ``field_name`` (of the GPU or of sub-object ``part``) is unknown."""
        self.unavailable.setdefault(part, {}).setdefault(field_name, reason)


@record
class Fragment:
    """The facts and measurements one section of one file contributes."""

    fmt: str
    """Format id (a key of ``SUPPORTED_FORMATS``)."""
    read: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    gpus: list[GpuPart] = field(default_factory=list)
    gpu_count: int | None = None
    """Set when the section lists every GPU of the machine (topology, ``-q`` with all blocks,
    p2pBandwidthLatencyTest's device list...)."""
    attached_gpus: int | None = None
    """``nvidia-smi -q``'s ``Attached GPUs`` (may exceed the blocks in the paste)."""
    topology: Topology | None = None
    nics: list[dict[str, Any]] = field(default_factory=list)
    nic_names: dict[str, str] = field(default_factory=dict)
    """NIC label -> device name from a ``NIC Legend`` block."""
    numa_cpus: dict[int, str | None] = field(default_factory=dict)
    p2p_gpus: list[int] = field(default_factory=list)
    p2p_matrices: dict[str, list[list[str | None]]] = field(default_factory=dict)
    can_access: tuple[list[int], list[list[bool | None]]] | None = None
    transfers: list[TransferMeasurement] = field(default_factory=list)
    p2p: list[P2PMatrixMeasurement] = field(default_factory=list)
    collectives: list[CollectiveMeasurement] = field(default_factory=list)
    workloads: list[WorkloadEvidence] = field(default_factory=list)
    bindings: list[tuple[TransferMeasurement, int]] = field(default_factory=list)
    """Transfers run under ``numactl`` with memory bound to one node (resolved to a placement
    once the GPU's NUMA node is known)."""
    driver: dict[str, str] = field(default_factory=dict)
    tool_versions: dict[str, str] = field(default_factory=dict)
    from_nvidia_smi: bool = False
    """True when the section is nvidia-smi output (NVML answered when it was taken)."""
    evidence: ImportedEvidence = field(default_factory=ImportedEvidence)
    """NCCL logs/topology files, lspci, collect_env, test launches, AMD topology (see
    :mod:`pcidoc.model.evidence`)."""

    def gpu(self, index: int) -> GpuPart:
        """The part for GPU ``index``, created on first use."""
        for part in self.gpus:
            if part.index == index:
                return part
        part = GpuPart(index=index)
        self.gpus.append(part)
        return part

    def warn(self, message: str) -> None:
        """Add a warning (once)."""
        if message not in self.warnings:
            self.warnings.append(message)


@record
class Context:
    """What the scanner knows when a section starts."""

    file: str
    """File name used in measurement sources (``import:<file>``)."""
    command: str | None = None
    """The shell command shown before the section, if any."""
    notes: list[str] = field(default_factory=list)
    """Comment lines seen since the previous section (``# With --sm_copy``)."""
    last_topology: Fragment | None = None
    """The most recent topology fragment of the same file (for a following NIC legend)."""
    warnings: list[str] = field(default_factory=list)
    """Warnings about the text as a whole rather than about one fragment (a whole-text reader
    that found lines but nothing it could use)."""

    @property
    def source(self) -> str:
        """Measurement source string."""
        return f"import:{self.file}"

    def mentions(self, text: str) -> bool:
        """True when the command or a note contains ``text``."""
        if self.command and text in self.command:
            return True
        return any(text in note for note in self.notes)

"""The capture: everything pcidoc knows about one machine, format ``pcidoc.capture/1``."""

from __future__ import annotations

from pcidoc.model.base import Field, Literal, Model
from pcidoc.model.evidence import ImportedEvidence
from pcidoc.model.facts import Driver, Gpu, Host, Nic, P2PStatus, Topology
from pcidoc.model.formats import CAPTURE_MAJOR, CAPTURE_SCHEMA
from pcidoc.model.measurements import Measurements

__all__ = ["CAPTURE_MAJOR", "CAPTURE_SCHEMA", "Capture", "Origin", "OriginSource", "SampleInfo"]


class OriginSource(Model):
    """One input file of an import and what was read from it."""

    path: str
    formats: list[str] = Field(default_factory=list)
    """Formats recognised in the file (``nvidia-smi-topo``, ``p2pBandwidthLatencyTest``...)."""
    read: list[str] = Field(default_factory=list)
    """What was taken from it, one short line each (``topology 8 GPUs + 4 NICs``)."""
    warnings: list[str] = Field(default_factory=list)
    """What was recognised but dropped or could not be read."""
    citation: str | None = None
    """Where the text came from (an issue thread, a blog post)."""


class SampleInfo(Model):
    """Metadata of a bundled sample machine."""

    name: str
    title: str
    summary: str | None = None


class Origin(Model):
    """How this capture was made."""

    kind: Literal["live", "import", "synthetic"]
    created_at: str | None = None
    """ISO 8601 UTC time the capture was written."""
    pcidoc_version: str | None = None
    tool_versions: dict[str, str] = Field(default_factory=dict)
    sources: list[OriginSource] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    redacted: bool = False
    sample: SampleInfo | None = None
    note: str | None = None


class Capture(Model):
    """A machine: facts plus optional measurements, and where they came from."""

    schema_: Literal["pcidoc.capture/1"] = Field(default=CAPTURE_SCHEMA, alias="schema")
    origin: Origin
    host: Host
    driver: Driver
    gpus: list[Gpu]
    nics: list[Nic]
    topology: Topology
    p2p: P2PStatus
    measurements: Measurements
    evidence: ImportedEvidence | None = None
    """NCCL logs and topology files, lspci, collect_env, multi-node test runs and AMD topology
    tables read with the capture (see :mod:`pcidoc.model.evidence`); None when there were none."""
    unavailable: dict[str, str] = Field(default_factory=dict)
    """Whole-section gaps, e.g. ``{"gpus": "NVIDIA driver not loaded"}``."""

    def gpu(self, index: int) -> Gpu | None:
        """The GPU with NVML index ``index``, or ``None``."""
        for gpu in self.gpus:
            if gpu.index == index:
                return gpu
        return None

    def nic(self, label: str) -> Nic | None:
        """The NIC labelled ``label`` (``NIC0``) or named ``label`` (``mlx5_0``)."""
        for nic in self.nics:
            if label in (nic.label, nic.name):
                return nic
        return None

    @classmethod
    def empty(cls, kind: Literal["live", "import", "synthetic"]) -> Capture:
        """A capture with no facts yet, to be filled by a collector or importer."""
        return cls(
            origin=Origin(kind=kind),
            host=Host(),
            driver=Driver(),
            gpus=[],
            nics=[],
            topology=Topology(),
            p2p=P2PStatus(),
            measurements=Measurements(),
        )

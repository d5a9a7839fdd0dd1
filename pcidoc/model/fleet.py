"""The fleet report, format ``pcidoc.fleet/1``: many machines diagnosed side by side.

Pure data (no I/O); :mod:`pcidoc.fleet.analyze` builds it, :mod:`pcidoc.fleet.render` and
:mod:`pcidoc.fleet.prom` present it. The JSON Schema under ``docs/schema/fleet.schema.json`` is
generated from these models (``python -m pcidoc.model.schemas``).
"""

from __future__ import annotations

from typing import Literal

from pcidoc.model.base import Field, Model
from pcidoc.model.report import Severity

FLEET_SCHEMA = "pcidoc.fleet/1"


class Difference(Model):
    """One way a node differs from its peer group."""

    key: str
    """What differs: ``GPU3.pcie_link``, ``GPU6.replays``, ``driver``, ``check:pcie.errors``..."""
    kind: Literal["fact", "verdict", "signature"]
    value: str | None
    """This node's value (``Gen4 x8``, ``5000``, ``warn``); ``None`` = unknown."""
    peers: str | None
    """What the peer group has (the majority value, or the peers' median for counters)."""
    peer_share: float | None = None
    """Share of the peer group holding ``peers`` (0..1)."""
    degrades: bool = False
    """True when the difference costs bandwidth or reliability (a narrower link, a link down,
    growing error counters, a worse verdict); False for drift such as a different driver."""
    subject: str | None = None
    """``GPU3 (0000:3b:00.0)``, a NIC name, or ``None`` for the whole node."""
    text: str
    """One line for humans."""


class NodeFinding(Model):
    """A check that did not pass on this node."""

    id: str
    severity: Severity
    summary: str
    subjects: list[str] = Field(default_factory=list)


class FleetNode(Model):
    """One machine of the fleet."""

    name: str
    """The capture's hostname, else the file name (made unique within the fleet)."""
    path: str
    hostname: str | None = None
    group: str
    """Id of its hardware-signature group (``g1``...)."""
    worst: Severity
    summary: dict[str, int] = Field(default_factory=dict)
    """Count of its checks per severity."""
    outlier: bool = False
    differs: list[Difference] = Field(default_factory=list)
    """What differs from its peer group (empty when it matches it)."""
    findings: list[NodeFinding] = Field(default_factory=list)
    """Its checks worse than pass, worst first."""
    gpus: int = 0
    link_speed_ratio: dict[str, float] = Field(default_factory=dict)
    """GPU label -> negotiated PCIe link rate (gen x width) as a fraction of its maximum."""


class FleetGroup(Model):
    """Nodes with the same hardware signature (GPU models and count, link classes, NICs)."""

    id: str
    signature: str
    """``8x NVIDIA A100-SXM4-80GB; GPU links NV+SYS; 4 NICs``."""
    nodes: list[str]
    peers_comparable: bool
    """False when the group is too small (< 3 nodes) for a majority to mean anything."""


class FleetFinding(Model):
    """A verdict shared by every node of a group: a configuration or design choice, fixed once
    for the whole group rather than node by node."""

    group: str
    id: str
    severity: Severity
    summary: str
    """The summary on the group's first node (the others say the same about their own GPUs)."""
    nodes: int


class ExcludeEntry(Model):
    """A node a scheduler should drain, and why."""

    name: str
    reason: str


class UnreadableInput(Model):
    """A file that could not be read; it was skipped, the rest of the fleet was not."""

    path: str
    error: str

    def text(self) -> str:
        """``PATH: why``: the error names the file already; the path is added only when not."""
        return self.error if self.error.startswith(self.path) else f"{self.path}: {self.error}"


class FleetReport(Model):
    """Many machines' diagnoses compared with their peers."""

    schema_: Literal["pcidoc.fleet/1"] = Field(default=FLEET_SCHEMA, alias="schema")
    pcidoc_version: str
    generated_at: str
    nodes: list[FleetNode]
    """Worst first, outliers before their equals, then by name."""
    groups: list[FleetGroup]
    fleet_findings: list[FleetFinding]
    exclude: list[ExcludeEntry]
    unreadable: list[UnreadableInput] = Field(default_factory=list)
    summary: dict[str, int] = Field(default_factory=dict)
    """``nodes``, ``outliers``, ``excluded``, ``unreadable``, and node counts per worst
    severity (``fail``, ``warn``...)."""
    worst: Severity = "pass"

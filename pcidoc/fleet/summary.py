"""One node of a fleet reduced to what the comparison needs: its facts as comparable strings or
counters, its verdicts, and its hardware signature.

A :class:`NodeSummary` is small (a few hundred values for an 8-GPU node) and picklable, so
worker processes return it instead of the capture or the report: the fleet's memory grows with
these summaries only.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pcidoc.model.links import is_nvlink, normalize_link, rank
from pcidoc.model.units import pcie_raw_gbps

if TYPE_CHECKING:
    from collections.abc import Callable

    from pcidoc.model.capture import Capture
    from pcidoc.model.report import Report

COUNTER_KEYS = ("replays", "aer_correctable", "aer_fatal", "nvlink_errors")
"""Fact names (the part after ``GPU<n>.``) that are cumulative counters: compared with the peers'
median rather than by majority."""


@dataclass
class NodeSummary:
    """What the fleet analysis keeps of one node."""

    path: str
    hostname: str | None
    signature: str
    facts: dict[str, str | None] = field(default_factory=dict)
    """Comparable facts (``GPU3.pcie_link`` -> ``Gen4 x16``, ``driver`` -> ``550.54.15``)."""
    counters: dict[str, int | None] = field(default_factory=dict)
    """Cumulative counters (``GPU6.replays`` -> 5000)."""
    subjects: dict[str, str] = field(default_factory=dict)
    """``GPU3`` -> ``GPU3 (0000:3b:00.0)``, to name GPUs by index and bus id."""
    verdicts: dict[str, str] = field(default_factory=dict)
    """Check id -> severity."""
    findings: list[tuple[str, str, str, list[str]]] = field(default_factory=list)
    """(id, severity, summary, subjects) of checks worse than pass, worst first."""
    worst: str = "pass"
    summary: dict[str, int] = field(default_factory=dict)
    gpus: int = 0
    link_speed_ratio: dict[str, float] = field(default_factory=dict)
    gpu_models: tuple[str, ...] = ()
    """Distinct GPU model names, sorted."""


def _link_text(gen: int | None, width: int | None) -> str | None:
    if gen is None and width is None:
        return None
    return f"Gen{gen if gen is not None else '?'} x{width if width is not None else '?'}"


def signature_of(capture: Capture) -> str:
    """Hardware signature: GPU models with counts, GPU-GPU link classes (``NV#`` as ``NV``, so a
    node with one NVLink down stays in its group and shows as an outlier), NIC count."""
    models = Counter(g.name or "unknown GPU" for g in capture.gpus)
    gpu_part = ", ".join(f"{n}x {name}" for name, n in sorted(models.items())) or "no GPUs"
    labels = capture.topology.labels
    classes: set[str] = set()
    gpu_rows = [i for i, label in enumerate(labels) if label.startswith("GPU")]
    for i in gpu_rows:
        row = capture.topology.links[i] if i < len(capture.topology.links) else []
        for j in gpu_rows:
            if j <= i or j >= len(row):
                continue
            link = normalize_link(row[j])
            if link is not None:
                classes.add("NV" if is_nvlink(link) else link)
    order = sorted(classes, key=lambda c: (rank(c) or 9, c))
    links = "+".join(order) if order else "unknown"
    return f"{gpu_part}; GPU links {links}; {len(capture.nics)} NICs"


def _link_reader(capture: Capture) -> Callable[[str, str], str | None]:
    """``Topology.link`` with the label positions looked up once: ``Topology.index`` scans the
    labels, which made the per-GPU peer links cubic in the GPU count (61 s for 1,000 GPUs)."""
    where: dict[str, int] = {}
    for i, label in enumerate(capture.topology.labels):
        where.setdefault(label, i)
    rows = capture.topology.links

    def link(a: str, b: str) -> str | None:
        i, j = where.get(a), where.get(b)
        if i is None or j is None or i >= len(rows):
            return None
        row = rows[i]
        return row[j] if j < len(row) else None

    return link


def _nearest_nic(
    capture: Capture, label: str, link_of: Callable[[str, str], str | None]
) -> str | None:
    best: tuple[int, str] | None = None
    for nic in capture.nics:
        link = normalize_link(link_of(label, nic.label))
        r = rank(link)
        if link is None or r is None:
            continue
        if best is None or r < best[0]:
            best = (r, link)
    return None if best is None else best[1]


def facts_of(capture: Capture) -> tuple[dict[str, str | None], dict[str, int | None]]:
    """Comparable facts and counters of a capture (see :class:`NodeSummary`)."""
    facts: dict[str, str | None] = {
        "driver": capture.driver.driver_version,
        "cuda_driver": capture.driver.cuda_driver_version,
        "gpu_count": str(len(capture.gpus)),
        "virtualization": _virtualization(capture),
        "iommu": _iommu(capture),
    }
    counters: dict[str, int | None] = {}
    link_of = _link_reader(capture)
    for gpu in capture.gpus:
        label = gpu.label
        # Width is compared always (it rarely drops at idle); the generation only in P0 or as
        # read under load, because an idle GPU downclocks its link to save power and a fleet
        # captured at rest would otherwise be full of false outliers.
        if gpu.pcie.current_width is not None:
            facts[f"{label}.pcie_width"] = f"x{gpu.pcie.current_width}"
        gen = _gen_under_load(capture, gpu)
        if gen is not None:
            facts[f"{label}.pcie_gen"] = f"Gen{gen}"
        facts[f"{label}.pcie_max"] = _link_text(gpu.pcie.max_gen, gpu.pcie.max_width)
        facts[f"{label}.nearest_nic"] = (
            _nearest_nic(capture, label, link_of) if capture.nics else None
        )
        facts[f"{label}.numa_node"] = None if gpu.numa_node is None else str(gpu.numa_node)
        facts[f"{label}.state"] = f"lost ({gpu.nvml_error})" if gpu.nvml_error else "ok"
        if gpu.nvlinks:
            up = sum(1 for link in gpu.nvlinks if link.state == "up")
            facts[f"{label}.nvlinks_up"] = f"{up}/{len(gpu.nvlinks)}"
            errors = [sum(link.errors.values()) for link in gpu.nvlinks if link.errors]
            counters[f"{label}.nvlink_errors"] = sum(errors) if errors else None
        if gpu.mig.enabled is not None:
            facts[f"{label}.mig"] = "on" if gpu.mig.enabled else "off"
        counters[f"{label}.replays"] = gpu.replay_count
        counters[f"{label}.aer_correctable"] = gpu.aer_correctable
        counters[f"{label}.aer_fatal"] = gpu.aer_fatal
        # NVLink classes of this GPU to each peer, from the matrix (a missing link shows here
        # even without per-link facts).
        row_links = []
        for other in capture.gpus:
            if other.index != gpu.index:
                row_links.append(link_of(label, other.label) or "?")
        if row_links and any(is_nvlink(x) for x in row_links):
            facts[f"{label}.peer_links"] = " ".join(row_links)
    for key, value in list(facts.items()):
        if value is None:
            del facts[key]
    return facts, {k: v for k, v in counters.items() if v is not None}


def _gen_under_load(capture: Capture, gpu: object) -> int | None:
    """The link generation read under load (a probe's reading while copying), else the current
    one when the GPU was in P0; ``None`` when only an idle reading exists."""
    index = getattr(gpu, "index", None)
    for t in capture.measurements.transfers:
        if t.gpu == index and t.link_gen_under_load is not None:
            return t.link_gen_under_load
    pcie = getattr(gpu, "pcie", None)
    if getattr(gpu, "pstate", None) == 0 and pcie is not None:
        return pcie.current_gen
    return None


def _virtualization(capture: Capture) -> str | None:
    v = capture.host.virtualization
    parts = []
    if v.hypervisor is not None:
        parts.append(f"vm:{v.vendor or 'yes'}" if v.hypervisor else "bare-metal")
    if v.container:
        parts.append(f"container:{v.container}")
    return ",".join(parts) or None


def _iommu(capture: Capture) -> str | None:
    iommu = capture.host.iommu
    if iommu.enabled is None:
        return None
    if not iommu.enabled:
        return "off"
    return f"on ({iommu.default_domain_type})" if iommu.default_domain_type else "on"


def speed_ratio_of(capture: Capture) -> dict[str, float]:
    """GPU label -> negotiated PCIe link rate as a fraction of the maximum it could train at
    (an idle GPU's downclocked link reads low too: see its P-state)."""
    out: dict[str, float] = {}
    for gpu in capture.gpus:
        now = pcie_raw_gbps(gpu.pcie.current_gen, gpu.pcie.current_width)
        top = pcie_raw_gbps(gpu.pcie.max_gen, gpu.pcie.max_width)
        if now is not None and top:
            out[gpu.label] = round(min(1.0, now / top), 4)
    return out


def traffic_ratio_of(capture: Capture) -> dict[tuple[str, str], float]:
    """(GPU label, ``tx``/``rx``) -> PCIe throughput at collection time (NVML's momentary
    reading) as a fraction of the negotiated link's per-direction rate."""
    out: dict[tuple[str, str], float] = {}
    for gpu in capture.gpus:
        ceiling = pcie_raw_gbps(gpu.pcie.current_gen, gpu.pcie.current_width)
        if not ceiling:
            continue
        for direction, value in (("tx", gpu.tx_bytes_per_s), ("rx", gpu.rx_bytes_per_s)):
            if value is not None:
                out[(gpu.label, direction)] = round(value / 1e9 / ceiling, 4)
    return out


def summarise(capture: Capture, report: Report, path: str) -> NodeSummary:
    """The summary of one diagnosed node."""
    from pcidoc.model.report import SEVERITY_ORDER

    facts, counters = facts_of(capture)
    findings = [
        (c.id, c.severity, c.summary, list(c.subjects))
        for c in report.sorted_checks()
        if SEVERITY_ORDER[c.severity] > SEVERITY_ORDER["pass"]
    ]
    return NodeSummary(
        path=path,
        hostname=capture.host.hostname,
        signature=signature_of(capture),
        facts=facts,
        counters=counters,
        subjects={
            g.label: f"{g.label} ({g.bus_id})" if g.bus_id else g.label for g in capture.gpus
        },
        verdicts={c.id: c.severity for c in report.checks},
        findings=findings,
        worst=report.worst,
        summary=dict(report.summary),
        gpus=len(capture.gpus),
        link_speed_ratio=speed_ratio_of(capture),
        gpu_models=tuple(sorted({g.name or "unknown GPU" for g in capture.gpus})),
    )


def summarise_file(path: str) -> NodeSummary | tuple[str, str]:
    """Load, diagnose and summarise one file; ``(path, error)`` when it cannot be read.

    Runs in a worker process: it never raises for a bad file.
    """
    from pcidoc import doctor
    from pcidoc.collect.capture import load_capture
    from pcidoc.errors import PcidocError
    from pcidoc.model.report import ReportSource

    try:
        capture = load_capture(path)
    except PcidocError as exc:
        return (path, exc.message)
    except Exception as exc:
        return (path, f"{path}: cannot read ({exc.__class__.__name__}: {exc})")
    try:
        source = ReportSource.for_file(path, capture.origin.kind)
        report = doctor.run(capture, source, generated_at="-")
        return summarise(capture, report, path)
    except Exception as exc:
        return (path, f"{path}: diagnosis failed ({exc.__class__.__name__}: {exc})")


def display_name(summary: NodeSummary, names: str = "host") -> str:
    """The capture's hostname (``names="host"``), else (or with ``names="file"``) the file name
    without ``.json``/``.json.gz``."""
    if summary.hostname and names == "host":
        return summary.hostname
    base = os.path.basename(summary.path)
    head, sep, tail = base.partition(".json")
    if sep and tail not in ("", ".gz"):
        return tail.lstrip(".") or head  # clush --rcopy: capture.json.<node>
    return head or summary.path

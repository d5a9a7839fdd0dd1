"""Prometheus / node_exporter textfile-collector output of a report or a fleet report.

Metrics carry verdicts, not raw counters alone: the severity of every check (per subject), the
worst severity, and each GPU's negotiated PCIe link as a fraction of its maximum. Severities are
numbers, worst highest (``pcidoc_severity_info`` documents the mapping as a metric too):
skip 0, pass 1, info 2, warn 3, error 4, fail 5.

``prometheus_client`` builds and escapes the text (label values from an untrusted capture may
hold quotes, backslashes and newlines); pcidoc's own safe writer (:mod:`pcidoc.fileio`) writes
it atomically (temporary file + rename, as the textfile collector requires). The package is
imported here only, when a .prom file is wanted.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pcidoc.errors import PcidocError
from pcidoc.model.report import SEVERITY_ORDER

if TYPE_CHECKING:
    from pcidoc.fileio import WriteResult
    from pcidoc.model.fleet import FleetReport
    from pcidoc.model.report import Report


def _registry() -> tuple[Any, Any]:
    try:
        from prometheus_client import CollectorRegistry, Gauge
    except ImportError:
        raise PcidocError(
            ".prom output needs the prometheus_client package (`pip install prometheus_client`)"
        ) from None

    registry = CollectorRegistry()
    mapping = Gauge(
        "pcidoc_severity_info",
        "Value of each severity in pcidoc_*severity metrics (worst highest)",
        ["severity"],
        registry=registry,
    )
    for name, value in SEVERITY_ORDER.items():
        mapping.labels(severity=name).set(value)
    return registry, Gauge


def report_registry(
    report: Report,
    node: str | None = None,
    utilisation: dict[tuple[str, str], float] | None = None,
) -> Any:
    """A registry with the metrics of one machine's report.

    Args:
        report: The diagnosis.
        node: The ``node`` label (default: the capture's hostname).
        utilisation: (GPU label, ``tx``/``rx``) -> throughput as a fraction of the link's rate
            (``pcidoc watch`` passes rates from its counter samples); default: the capture's
            momentary throughput readings.
    """
    registry, gauge = _registry()
    host = node or report.machine.host.hostname or ""
    check = gauge(
        "pcidoc_check_severity",
        "Severity of a check for one subject (skip 0 .. fail 5; subject '' = whole machine)",
        ["node", "check", "subject"],
        registry=registry,
    )
    for result in report.checks:
        for subject in result.subjects or [""]:
            check.labels(node=host, check=result.id, subject=subject).set(
                SEVERITY_ORDER[result.severity]
            )
    gauge(
        "pcidoc_worst_severity", "Worst severity of the report", ["node"], registry=registry
    ).labels(node=host).set(SEVERITY_ORDER[report.worst])
    counts = gauge(
        "pcidoc_checks", "Number of checks per severity", ["node", "severity"], registry=registry
    )
    for severity, count in report.summary.items():
        counts.labels(node=host, severity=severity).set(count)
    from pcidoc.fleet.summary import speed_ratio_of, traffic_ratio_of

    gpus = {g.label: g for g in report.machine.gpus}
    speed = gauge(
        "pcidoc_pcie_link_speed_ratio",
        "Negotiated PCIe link rate (gen x width) as a fraction of the maximum it can train at "
        "(idle GPUs downclock: see the pstate label)",
        ["node", "gpu", "bus_id", "pstate"],
        registry=registry,
    )
    for label, fraction in speed_ratio_of(report.machine).items():
        gpu = gpus[label]
        pstate = "" if gpu.pstate is None else f"P{gpu.pstate}"
        speed.labels(node=host, gpu=label, bus_id=gpu.bus_id or "", pstate=pstate).set(fraction)
    util = gauge(
        "pcidoc_pcie_link_utilisation_ratio",
        "PCIe throughput per direction as a fraction of the negotiated link's rate",
        ["node", "gpu", "bus_id", "direction"],
        registry=registry,
    )
    traffic = traffic_ratio_of(report.machine) if utilisation is None else utilisation
    for (label, direction), fraction in traffic.items():
        bus = gpus[label].bus_id if label in gpus else None
        util.labels(node=host, gpu=label, bus_id=bus or "", direction=direction).set(fraction)
    return registry


def fleet_registry(report: FleetReport) -> Any:
    """A registry with the metrics of a fleet report (one series per node)."""
    registry, gauge = _registry()
    worst = gauge(
        "pcidoc_fleet_node_worst_severity",
        "Worst severity per node",
        ["node", "group"],
        registry=registry,
    )
    outlier = gauge(
        "pcidoc_fleet_node_outlier",
        "1 when the node differs from its peer group",
        ["node"],
        registry=registry,
    )
    excluded = gauge(
        "pcidoc_fleet_node_excluded",
        "1 when the node should be drained",
        ["node", "reason"],
        registry=registry,
    )
    check = gauge(
        "pcidoc_fleet_node_check_severity",
        "Severity of a check on a node, for checks worse than pass (info 2 .. fail 5)",
        ["node", "check"],
        registry=registry,
    )
    speed = gauge(
        "pcidoc_pcie_link_speed_ratio",
        "Negotiated PCIe link rate (gen x width) as a fraction of the maximum it can train at",
        ["node", "gpu"],
        registry=registry,
    )
    reasons = {e.name: e.reason for e in report.exclude}
    for node in report.nodes:
        worst.labels(node=node.name, group=node.group).set(SEVERITY_ORDER[node.worst])
        outlier.labels(node=node.name).set(1 if node.outlier else 0)
        if node.name in reasons:
            excluded.labels(node=node.name, reason=reasons[node.name][:200]).set(1)
        for finding in node.findings:
            check.labels(node=node.name, check=finding.id).set(SEVERITY_ORDER[finding.severity])
        for label, fraction in node.link_speed_ratio.items():
            speed.labels(node=node.name, gpu=label).set(fraction)
    gauge("pcidoc_fleet_worst_severity", "Worst severity of the fleet", registry=registry).set(
        SEVERITY_ORDER[report.worst]
    )
    nodes = gauge("pcidoc_fleet_nodes", "Fleet node counts", ["kind"], registry=registry)
    for kind, count in report.summary.items():
        nodes.labels(kind=kind).set(count)
    return registry


def render(registry: Any) -> str:
    """The text exposition format of ``registry``."""
    from prometheus_client import generate_latest

    return generate_latest(registry).decode("utf-8")


def write_prom(registry: Any, path: str | os.PathLike[str]) -> WriteResult:
    """Write the text exposition of ``registry`` with :func:`pcidoc.fileio.write_output`:
    atomic (temporary file + rename, as the textfile collector requires), owner and mode kept,
    devices, FIFOs and unsafe symbolic links refused (``prometheus_client.write_to_textfile``
    renamed over all of them).

    Raises:
        PcidocError: the target is refused, its folder is missing, or the write failed.
    """
    from pcidoc.fileio import write_output

    return write_output(path, render(registry))

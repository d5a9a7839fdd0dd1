"""``pcidoc diff A B``: what changed between two captures (or reports).

Two captures of one machine before/after a driver or BIOS change, or two nodes that should be
identical. Compared: facts (per GPU: PCIe link, NVLinks up and per-link state, replay/AER and
NVLink error counters, NUMA node, MIG; P2P status codes per pair and capability; topology cells;
NIC placement; driver; virtualization; IOMMU), measurements beyond their noise, and the doctor's
verdicts. GPUs are matched by NVML index and named with their bus ids.

Noise: a bandwidth is "changed" when it moved by more than ``max(5 %, 2 x the larger CoV)`` of
the old value (pcidoc's probes report the coefficient of variation of their trials; imported
single numbers have none, so 5 % applies).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pcidoc.fleet.summary import facts_of
from pcidoc.model.report import SEVERITY_ORDER
from pcidoc.model.units import plurals

if TYPE_CHECKING:
    from pcidoc.model.capture import Capture
    from pcidoc.model.report import Report

DIFF_SCHEMA = "pcidoc.diff/1"
MIN_RELATIVE_CHANGE = 0.05
"""Smallest relative bandwidth change reported when the trials' CoV is unknown or smaller."""


@dataclass
class Change:
    """One difference between A and B."""

    area: str
    """``fact``, ``counter``, ``topology``, ``p2p``, ``measurement`` or ``verdict``."""
    key: str
    subject: str | None
    a: Any
    b: Any
    text: str
    worse: bool | None = None
    """True when B is worse than A, False when better, None when neither applies."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "area": self.area,
            "key": self.key,
            "subject": self.subject,
            "a": self.a,
            "b": self.b,
            "worse": self.worse,
            "text": self.text,
        }


@dataclass
class DiffResult:
    """All changes from A to B."""

    a: str
    b: str
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The ``pcidoc.diff/1`` document."""
        return {
            "schema": DIFF_SCHEMA,
            "a": self.a,
            "b": self.b,
            "changed": bool(self.changes),
            "changes": [c.as_dict() for c in self.changes],
            "notes": self.notes,
        }


def _gpu_names(a: Capture, b: Capture) -> dict[str, str]:
    names: dict[str, str] = {}
    bus_b = {g.label: g.bus_id for g in b.gpus}
    for gpu in a.gpus:
        other = bus_b.get(gpu.label)
        if gpu.bus_id and other and other != gpu.bus_id:
            names[gpu.label] = f"{gpu.label} ({gpu.bus_id} / {other})"
        elif gpu.bus_id or other:
            names[gpu.label] = f"{gpu.label} ({gpu.bus_id or other})"
    for gpu in b.gpus:
        names.setdefault(gpu.label, f"{gpu.label} ({gpu.bus_id})" if gpu.bus_id else gpu.label)
    return names


def _extra_facts(capture: Capture) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for gpu in capture.gpus:
        # The raw negotiated link (the P-state is reported beside it): a diff shows facts as
        # they are; the fleet's peer comparison is what leaves idle generations out.
        out[f"{gpu.label}.pcie_link"] = (
            None
            if gpu.pcie.current_gen is None and gpu.pcie.current_width is None
            else f"Gen{gpu.pcie.current_gen} x{gpu.pcie.current_width}"
        )
        for link in gpu.nvlinks:
            out[f"{gpu.label}.nvlink{link.link}"] = link.state
        out[f"{gpu.label}.name"] = gpu.name
        out[f"{gpu.label}.pstate"] = None if gpu.pstate is None else f"P{gpu.pstate}"
    for nic in capture.nics:
        out[f"{nic.label}.numa_node"] = None if nic.numa_node is None else str(nic.numa_node)
        out[f"{nic.label}.name"] = nic.name
        out[f"{nic.label}.bus_id"] = nic.bus_id
    host = capture.host
    out["kernel"] = host.kernel
    out["cmdline"] = host.cmdline
    out["numa_balancing"] = None if host.numa_balancing is None else str(host.numa_balancing)
    out["fabric_manager"] = (
        None
        if capture.driver.fabric_manager.active is None
        else ("active" if capture.driver.fabric_manager.active else "inactive")
    )
    acs = [
        f"{hop.bus_id}:{'redirect' if hop.acs.redirects_p2p else 'ok'}"
        for gpu in capture.gpus
        for hop in gpu.path
        if hop.acs is not None
    ]
    out["acs"] = ",".join(sorted(set(acs))) or None
    return out


def _topology_cells(capture: Capture) -> dict[tuple[str, str], str | None]:
    cells: dict[tuple[str, str], str | None] = {}
    labels = capture.topology.labels
    for i, a in enumerate(labels):
        for j in range(i + 1, len(labels)):
            cells[(a, labels[j])] = capture.topology.link(a, labels[j])
    return cells


def _p2p_cells(capture: Capture) -> dict[tuple[str, int, int], str | None]:
    cells: dict[tuple[str, int, int], str | None] = {}
    p2p = capture.p2p
    for cap in p2p.matrices:
        for a in p2p.gpus:
            for b in p2p.gpus:
                if a != b:
                    cells[(cap, a, b)] = p2p.status(cap, a, b)
    return cells


def _measurements(capture: Capture) -> dict[str, tuple[float, float | None, str]]:
    """Key -> (value GB/s, CoV or None, description)."""
    out: dict[str, tuple[float, float | None, str]] = {}
    m = capture.measurements
    for t in m.transfers:
        key = (
            f"transfer:GPU{t.gpu}:{t.direction}:{t.memory}:{t.placement or '-'}"
            f":{'bidir' if t.bidirectional else 'uni'}"
        )
        what = f"GPU{t.gpu} {t.direction} {t.memory}{' bidirectional' if t.bidirectional else ''}"
        out[key] = (t.bandwidth_gbps, t.cov, what)
    for p in m.p2p:
        if p.kind != "bandwidth":
            continue
        for i, src in enumerate(p.gpus):
            for j, dst in enumerate(p.gpus):
                value = p.values[i][j] if i < len(p.values) and j < len(p.values[i]) else None
                if src == dst or value is None:
                    continue
                bi = "bidir" if p.bidirectional else "uni"
                key = f"p2p:{p.p2p}:{bi}:GPU{src}->GPU{dst}"
                out[key] = (value, None, f"P2P {p.p2p} {bi} GPU{src}->GPU{dst}")
    for c in m.collectives:
        peak = c.peak_busbw()
        if peak is not None and peak.busbw_gbps is not None:
            key = f"collective:{c.op}:{c.backend}:{c.ranks}r:{c.nodes or 1}n"
            out[key] = (peak.busbw_gbps, None, f"{c.op} {c.backend} {c.ranks} ranks peak busbw")
    return out


def diff_captures(
    a: Capture,
    b: Capture,
    report_a: Report | None = None,
    report_b: Report | None = None,
    name_a: str = "A",
    name_b: str = "B",
) -> DiffResult:
    """Every change from ``a`` to ``b`` (verdicts too when both reports are given)."""
    result = DiffResult(a=name_a, b=name_b)
    names = _gpu_names(a, b)

    def subject_of(key: str) -> str | None:
        head = key.split(".", 1)[0]
        return names.get(head, head) if "." in key else None

    facts_a, counters_a = facts_of(a)
    facts_b, counters_b = facts_of(b)
    facts_a.update({k: v for k, v in _extra_facts(a).items() if v is not None})
    facts_b.update({k: v for k, v in _extra_facts(b).items() if v is not None})
    for facts in (facts_a, facts_b):
        for key in [k for k in facts if k.endswith((".pcie_width", ".pcie_gen"))]:
            del facts[key]  # pcie_link says both
    for key in sorted(set(facts_a) | set(facts_b)):
        va, vb = facts_a.get(key), facts_b.get(key)
        if va == vb:
            continue
        subject = subject_of(key)
        who = f"{subject}: " if subject else ""
        field_name = key.split(".", 1)[1] if subject else key
        result.changes.append(
            Change("fact", key, subject, va, vb, f"{who}{field_name}: {va} -> {vb}")
        )
    for key in sorted(set(counters_a) | set(counters_b)):
        ca, cb = counters_a.get(key), counters_b.get(key)
        if ca == cb:
            continue
        subject = subject_of(key)
        who = f"{subject}: " if subject else ""
        grew = None if ca is None or cb is None else cb > ca
        extra = f" (+{cb - ca})" if ca is not None and cb is not None and cb > ca else ""
        result.changes.append(
            Change(
                "counter",
                key,
                subject,
                ca,
                cb,
                f"{who}{key.split('.', 1)[-1]}: {ca} -> {cb}{extra}",
                worse=grew,
            )
        )
    cells_a, cells_b = _topology_cells(a), _topology_cells(b)
    for pair in sorted(set(cells_a) | set(cells_b)):
        ta, tb = cells_a.get(pair), cells_b.get(pair)
        if ta != tb:
            result.changes.append(
                Change(
                    "topology",
                    f"{pair[0]}-{pair[1]}",
                    f"{pair[0]}-{pair[1]}",
                    ta,
                    tb,
                    f"topology {pair[0]}-{pair[1]}: {ta} -> {tb}",
                )
            )
    p2p_a, p2p_b = _p2p_cells(a), _p2p_cells(b)
    for cell in sorted(set(p2p_a) | set(p2p_b), key=str):
        pa, pb = p2p_a.get(cell), p2p_b.get(cell)
        if pa != pb:
            cap, x, y = cell
            result.changes.append(
                Change(
                    "p2p",
                    f"{cap}:GPU{x}-GPU{y}",
                    f"GPU{x}-GPU{y}",
                    pa,
                    pb,
                    f"P2P {cap} GPU{x}->GPU{y}: {pa} -> {pb}",
                    worse=None if pa is None or pb is None else (pa == "OK" and pb != "OK"),
                )
            )
    meas_a, meas_b = _measurements(a), _measurements(b)
    for key in sorted(set(meas_a) & set(meas_b)):
        (va_m, cov_a, what), (vb_m, cov_b, _what) = meas_a[key], meas_b[key]
        if va_m <= 0:
            continue
        noise = max(MIN_RELATIVE_CHANGE, 2 * max(cov_a or 0.0, cov_b or 0.0))
        change = (vb_m - va_m) / va_m
        if abs(change) > noise:
            result.changes.append(
                Change(
                    "measurement",
                    key,
                    None,
                    va_m,
                    vb_m,
                    f"{what}: {va_m:.3g} -> {vb_m:.3g} GB/s ({change * 100:+.0f}%, noise "
                    f"±{noise * 100:.0f}%)",
                    worse=change < 0,
                )
            )
    only = sorted(set(meas_a) ^ set(meas_b))
    if only:
        result.notes.append(
            plurals(f"{len(only)} measurement(s) exist on one side only and were not compared")
        )
    if report_a is not None and report_b is not None:
        before = {c.id: c for c in report_a.checks}
        for check in report_b.checks:
            old = before.get(check.id)
            if old is None or old.severity == check.severity:
                continue
            worse = SEVERITY_ORDER[check.severity] > SEVERITY_ORDER[old.severity]
            result.changes.append(
                Change(
                    "verdict",
                    check.id,
                    None,
                    old.severity,
                    check.severity,
                    f"{check.id}: {old.severity} -> {check.severity}: {check.summary}",
                    worse=worse,
                )
            )
    if a.origin.kind != b.origin.kind:
        result.notes.append(f"A is a {a.origin.kind} capture, B a {b.origin.kind} one")
    return result


def diff_files(path_a: str, path_b: str) -> DiffResult:
    """Load, diagnose and diff two files (captures or reports)."""
    from pcidoc import doctor
    from pcidoc.collect.capture import load_capture
    from pcidoc.model.report import ReportSource

    a, b = load_capture(path_a), load_capture(path_b)
    ra = doctor.run(a, ReportSource.for_file(path_a, a.origin.kind), generated_at="-")
    rb = doctor.run(b, ReportSource.for_file(path_b, b.origin.kind), generated_at="-")
    return diff_captures(a, b, ra, rb, path_a, path_b)


def diff_text(result: DiffResult) -> str:
    """Human lines, grouped by area."""
    if not result.changes:
        lines = [f"pcidoc diff: no change between {result.a} and {result.b}"]
    else:
        count = plurals(f"{len(result.changes)} change(s)")
        lines = [f"pcidoc diff: {count} from {result.a} to {result.b}"]
        titles = {
            "verdict": "Verdicts",
            "fact": "Facts",
            "counter": "Counters",
            "topology": "Topology",
            "p2p": "P2P status",
            "measurement": "Measurements",
        }
        for area, title in titles.items():
            items = [c for c in result.changes if c.area == area]
            if not items:
                continue
            lines.append(f"{title}:")
            for c in items:
                mark = {True: "  worse ", False: "  better", None: "        "}[c.worse]
                lines.append(f"{mark} {c.text}")
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines) + "\n"


def exit_code_for_diff(result: DiffResult) -> int:
    """0 nothing changed, 1 something changed, 2 something got worse."""
    if any(c.worse for c in result.changes):
        return 2
    return 1 if result.changes else 0

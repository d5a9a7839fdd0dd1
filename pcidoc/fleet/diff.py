"""``pcidoc diff A B``: what changed between two captures (or reports).

Two captures of one machine before/after a driver or BIOS change, or two nodes that should be
identical. Compared: facts (per GPU: PCIe link, NVLinks up and per-link state, replay/AER and
NVLink error counters, NUMA node, MIG; P2P status codes per pair and capability; topology cells;
NIC placement; driver; virtualization; IOMMU), measurements beyond their noise, the doctor's
verdicts and, under a verdict that did not change, its findings (a second NVLink down under a
check that already failed is new damage). GPUs are matched by NVML index and named with their
bus ids.

What is "worse": a verdict that rose to ``warn``/``fail`` (or from ``warn`` to ``fail``), a new
finding at ``warn`` or above, an NVLink that went down, fewer NVLinks up, a narrower PCIe link
(or a slower one in P0), a lost GPU, a counter that grew, a P2P pair that lost ``OK``, a slower
measurement. A check that did not run on one side (``skip``) or crashed (``error``) is not
comparable: it is listed as "now judged"/"no longer judged", neither worse nor better. A GPU,
NIC, NVLink, counter or topology cell that exists on one side only is "absent" on the other;
such differences are summarised per kind, never listed one by one.

Noise: a bandwidth is "changed" when it moved by more than ``max(5 %, 2 x the larger CoV)`` of
the old value (pcidoc's probes report the coefficient of variation of their trials; imported
single numbers have none, so 5 % applies).

Bounds: text output lists at most :data:`LIST_LIMIT` changes per area (the worse first) and
counts the rest; the JSON keeps at most :data:`JSON_LIMIT` per area and counts the rest in
``omitted``. Only GPUs, NICs and pairs present on both sides are compared cell by cell, so a
16-GPU capture against a 1,000-GPU one compares 16 GPUs, not half a million pairs.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pcidoc.doctor.wording import is_gpu_label
from pcidoc.fleet.summary import facts_of
from pcidoc.model.cpulist import format_cpulist
from pcidoc.model.report import SEVERITY_ORDER
from pcidoc.model.units import plurals
from pcidoc.sanitize import clean_line

if TYPE_CHECKING:
    from collections.abc import Iterable

    from pcidoc.model.capture import Capture
    from pcidoc.model.report import CheckResult, Report

DIFF_SCHEMA = "pcidoc.diff/1"
MIN_RELATIVE_CHANGE = 0.05
"""Smallest relative bandwidth change reported when the trials' CoV is unknown or smaller."""
LIST_LIMIT = 25
"""Changes listed per area in the text output (the worse first); the rest are counted."""
JSON_LIMIT = 2000
"""Changes kept per area in the JSON output; the rest are counted in ``omitted``."""
ABSENT = "absent"
"""How a value that exists on one side only is shown."""
NOT_COMPARABLE = ("skip", "error")
"""Verdicts that say nothing about the machine: the check lacked input or crashed."""
AREAS = {
    "verdict": "Verdicts",
    "finding": "Findings",
    "fact": "Facts",
    "counter": "Counters",
    "topology": "Topology",
    "p2p": "P2P status",
    "measurement": "Measurements",
}
"""Areas in display order, with their titles."""

_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[Any, ...]:
    """Sort key that orders numbers inside text by value: nvlink2 before nvlink10."""
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(text))


def shown(value: Any) -> str:
    """A value for humans: ``absent`` for a value that does not exist on that side."""
    return ABSENT if value is None else str(value)


@dataclass
class Change:
    """One difference between A and B."""

    area: str
    """``verdict``, ``finding``, ``fact``, ``counter``, ``topology``, ``p2p`` or
    ``measurement``."""
    key: str
    subject: str | None
    a: Any
    b: Any
    text: str
    worse: bool | None = None
    """True when B is worse than A, False when better, None when neither applies."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form (``a``/``b`` are null where the value is absent on that side)."""
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

    def by_area(self) -> dict[str, list[Change]]:
        """Changes per area, in display order; the worse first, then the better, then the
        summaries of what one side lacks, then the rest, each naturally by key."""
        out: dict[str, list[Change]] = {area: [] for area in AREAS}
        for change in self.changes:
            out.setdefault(change.area, []).append(change)
        rank = {True: 0, False: 1, None: 3}

        def order(c: Change) -> tuple[int, tuple[Any, ...]]:
            # Summaries of what one side lacks come before the single neutral changes.
            summary = c.worse is None and c.key.endswith((":only-A", ":only-B"))
            return (2 if summary else rank[c.worse], natural_key(c.key))

        for items in out.values():
            items.sort(key=order)
        return {area: items for area, items in out.items() if items}

    def as_dict(self) -> dict[str, Any]:
        """The ``pcidoc.diff/1`` document."""
        kept: list[dict[str, Any]] = []
        omitted: dict[str, int] = {}
        for area, items in self.by_area().items():
            kept += [c.as_dict() for c in items[:JSON_LIMIT]]
            if len(items) > JSON_LIMIT:
                omitted[area] = len(items) - JSON_LIMIT
        return {
            "schema": DIFF_SCHEMA,
            "a": self.a,
            "b": self.b,
            "changed": bool(self.changes),
            "worse": sum(1 for c in self.changes if c.worse),
            "changes": kept,
            "omitted": omitted,
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


def labels_text(labels: Iterable[str]) -> str:
    """``GPU0-GPU7``-style ranges for GPU labels (``GPUs 0-3, 8``), else a comma list (the
    first ten and a count)."""
    labels = sorted(set(labels), key=natural_key)
    if labels and all(map(is_gpu_label, labels)):
        indices = format_cpulist({int(label[3:]) for label in labels})
        return f"GPU{indices}" if len(labels) == 1 else f"GPUs {indices}"
    head = ", ".join(labels[:10])
    return head + (f" and {len(labels) - 10} more" if len(labels) > 10 else "")


def _extra_facts(capture: Capture, labels: set[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for gpu in capture.gpus:
        if gpu.label not in labels:
            continue
        # The raw negotiated link (the P-state is reported beside it): a diff shows facts as
        # they are; the fleet's peer comparison is what leaves idle generations out.
        gen, width = gpu.pcie.current_gen, gpu.pcie.current_width
        out[f"{gpu.label}.pcie_link"] = (
            None
            if gen is None and width is None
            else f"Gen{'?' if gen is None else gen} x{'?' if width is None else width}"
        )
        for link in gpu.nvlinks:
            out[f"{gpu.label}.nvlink{link.link}"] = link.state
        out[f"{gpu.label}.name"] = gpu.name
        out[f"{gpu.label}.pstate"] = None if gpu.pstate is None else f"P{gpu.pstate}"
    for nic in capture.nics:
        if nic.label not in labels:
            continue
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


def _all_facts(capture: Capture, labels: set[str]) -> tuple[dict[str, str], dict[str, int | None]]:
    """Facts and counters of the subjects both sides have (and the machine-wide ones)."""
    facts, counters = facts_of(capture)
    facts.update({k: v for k, v in _extra_facts(capture, labels).items() if v is not None})

    def kept(key: str) -> bool:
        return "." not in key or key.split(".", 1)[0] in labels

    # pcie_link says both width and generation; the topology cells say each peer link (the
    # fleet's one-line peer_links grows with the GPU count).
    dropped = (".pcie_width", ".pcie_gen", ".peer_links")
    clean = {
        k: v for k, v in facts.items() if v is not None and kept(k) and not k.endswith(dropped)
    }
    return clean, {k: v for k, v in counters.items() if kept(k)}


def _link_parts(text: str | None) -> tuple[int | None, int | None]:
    match = re.fullmatch(r"Gen(\d+|\?) x(\d+|\?)", text or "")
    if match is None:
        return None, None
    gen, width = match.groups()
    return (int(gen) if gen.isdigit() else None, int(width) if width.isdigit() else None)


def _lower(a: int | None, b: int | None) -> bool | None:
    """True when ``b`` < ``a``, False when greater, None when equal or unknown."""
    if a is None or b is None or a == b:
        return None
    return b < a


def _pcie_worse(va: str, vb: str, pstate_b: str | None) -> tuple[bool | None, str]:
    """A narrower link is worse; a slower generation too unless B's GPU idled (a P-state above
    P0 downclocks the link to save power). Returns the flag and the reason in words."""
    gen_a, width_a = _link_parts(va)
    gen_b, width_b = _link_parts(vb)
    narrower = _lower(width_a, width_b)
    if narrower is not None:
        return narrower, "narrower" if narrower else "wider"
    slower = _lower(gen_a, gen_b)
    if slower is None:
        return None, ""
    if slower and pstate_b not in (None, "P0"):
        return None, f"slower, but B was idle in {pstate_b}"
    return slower, "slower" if slower else "faster"


def _down_count(text: str) -> int | None:
    up, _, total = text.partition("/")
    return int(total) - int(up) if up.isdigit() and total.isdigit() else None


def _fact_change(
    key: str, va: str, vb: str, who: str, facts_b: dict[str, str]
) -> tuple[str, bool | None]:
    """Text and worse-flag of a fact present on both sides with different values."""
    head, _, name = key.partition(".")
    if name.startswith("nvlink") and name[6:].isdigit():
        if vb == "down" and va != "down":
            return f"new: {head} {name} down (was {va})", True
        if va == "down" and vb == "up":
            return f"{head} {name} back up", False
        return f"{who}{name}: {va} -> {vb}", None
    if name == "nvlinks_up":
        down_a, down_b = _down_count(va), _down_count(vb)
        worse = _lower(down_b, down_a) if down_a is not None and down_b is not None else None
        return f"{who}NVLinks up: {va} -> {vb}", worse
    if name == "pcie_link":
        worse, why = _pcie_worse(va, vb, facts_b.get(f"{head}.pstate"))
        return f"{who}PCIe link: {va} -> {vb}{f' ({why})' if why else ''}", worse
    if name == "state":
        return f"{who}state: {va} -> {vb}", vb != "ok" if "ok" in (va, vb) else None
    if key == "gpu_count" and va.isdigit() and vb.isdigit():
        return f"GPU count: {va} -> {vb}", _lower(int(va), int(vb))
    return f"{who}{name if name else key}: {va} -> {vb}", None


class _OneSided:
    """Values that exist on one side only, summarised per kind instead of one line each (a
    kind with a single such value is listed as it is: ``NIC2: numa_node: absent -> 0``)."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str, str], list[tuple[str, str, Any, Any]]] = defaultdict(list)

    def add(
        self,
        area: str,
        kind: str,
        side: str,
        subject: str,
        key: str = "",
        a: Any = None,
        b: Any = None,
    ) -> None:
        self.groups[(area, kind, side)].append((subject, key, a, b))

    def changes(self, names: dict[str, str]) -> list[Change]:
        out = []
        for (area, kind, side), entries in self.groups.items():
            subject, key, a, b = entries[0]
            if len(entries) == 1 and key:
                who = names.get(subject, subject)
                text = f"{who}: {key.partition('.')[2]}: {shown(a)} -> {shown(b)}"
                out.append(Change(area, key, who, a, b, text))
                continue
            other = "B" if side == "A" else "A"
            count = len(entries)
            listed = labels_text(e[0] for e in entries)
            text = f"{kind}: {count} {ABSENT} in {other} (only in {side}): {listed}"
            a, b = (count, None) if side == "A" else (None, count)
            out.append(Change(area, f"{kind}:only-{side}", None, a, b, text))
        return out


def _compare_facts(
    result: DiffResult,
    a: tuple[dict[str, str], dict[str, int | None]],
    b: tuple[dict[str, str], dict[str, int | None]],
    names: dict[str, str],
    one_sided: _OneSided,
) -> None:
    facts_a, counters_a = a
    facts_b, counters_b = b
    for key in sorted(set(facts_a) | set(facts_b), key=natural_key):
        va, vb = facts_a.get(key), facts_b.get(key)
        if va == vb:
            continue
        head, _, name = key.partition(".")
        if (va is None or vb is None) and not name:
            text = f"{key}: {shown(va)} -> {shown(vb)}"
            result.changes.append(Change("fact", key, None, va, vb, text))
            continue
        if va is None or vb is None:
            kind = re.sub(r"\d+$", "", name) if name.startswith("nvlink") else (name or key)
            one_sided.add("fact", kind, "A" if vb is None else "B", head, key, va, vb)
            continue
        who = f"{names.get(head, head)}: " if name else ""
        text, worse = _fact_change(key, va, vb, who, facts_b)
        subject = names.get(head, head) if name else None
        result.changes.append(Change("fact", key, subject, va, vb, text, worse))
    for key in sorted(set(counters_a) | set(counters_b), key=natural_key):
        ca, cb = counters_a.get(key), counters_b.get(key)
        if ca == cb:
            continue
        head, _, name = key.partition(".")
        if ca is None or cb is None:
            one_sided.add("counter", name, "A" if cb is None else "B", head, key, ca, cb)
            continue
        extra = f" (+{cb - ca})" if cb > ca else ""
        subject = names.get(head, head)
        result.changes.append(
            Change(
                "counter", key, subject, ca, cb, f"{subject}: {name}: {ca} -> {cb}{extra}", cb > ca
            )
        )


def _topology_cells(capture: Capture, labels: set[str]) -> dict[tuple[str, str], str | None]:
    """Cells between the labels both sides have (an index lookup per row, not per cell)."""
    cells: dict[tuple[str, str], str | None] = {}
    all_labels = capture.topology.labels
    rows = capture.topology.links
    kept = [(i, label) for i, label in enumerate(all_labels) if label in labels]
    for n, (i, x) in enumerate(kept):
        row = rows[i] if i < len(rows) else []
        for j, y in kept[n + 1 :]:
            cells[(x, y)] = row[j] if j < len(row) else None
    return cells


def _compare_topology(result: DiffResult, a: Capture, b: Capture, common: set[str]) -> None:
    cells_a, cells_b = _topology_cells(a, common), _topology_cells(b, common)
    for pair in set(cells_a) | set(cells_b):
        ta, tb = cells_a.get(pair), cells_b.get(pair)
        if ta != tb:
            key = f"{pair[0]}-{pair[1]}"
            text = f"topology {key}: {shown(ta)} -> {shown(tb)}"
            result.changes.append(Change("topology", key, key, ta, tb, text))


def _p2p_cells(capture: Capture, gpus: set[int]) -> dict[tuple[str, int, int], str | None]:
    cells: dict[tuple[str, int, int], str | None] = {}
    p2p = capture.p2p
    kept = [g for g in p2p.gpus if g in gpus]
    for cap in p2p.matrices:
        for x in kept:
            for y in kept:
                if x != y:
                    cells[(cap, x, y)] = p2p.status(cap, x, y)
    return cells


def _compare_p2p(result: DiffResult, a: Capture, b: Capture) -> None:
    gpus = set(a.p2p.gpus) & set(b.p2p.gpus)
    p2p_a, p2p_b = _p2p_cells(a, gpus), _p2p_cells(b, gpus)
    for cell in set(p2p_a) | set(p2p_b):
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
                    f"P2P {cap} GPU{x}->GPU{y}: {shown(pa)} -> {shown(pb)}",
                    worse=None if pa is None or pb is None else (pa == "OK" and pb != "OK"),
                )
            )


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


def _compare_measurements(result: DiffResult, a: Capture, b: Capture) -> None:
    meas_a, meas_b = _measurements(a), _measurements(b)
    for key in sorted(set(meas_a) & set(meas_b), key=natural_key):
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
    only = set(meas_a) ^ set(meas_b)
    if only:
        result.notes.append(
            plurals(f"{len(only)} measurement(s) exist on one side only and were not compared")
        )


def verdict_worse(old: str, new: str) -> bool | None:
    """True when ``new`` is a worse verdict that calls for action (it rose to warn or fail, or
    from warn to fail), False when such a verdict eased; None when the two are not comparable
    (either is ``skip`` or ``error``) or neither calls for action (``pass`` and ``info``)."""
    if old in NOT_COMPARABLE or new in NOT_COMPARABLE or old == new:
        return None
    if max(SEVERITY_ORDER[old], SEVERITY_ORDER[new]) < SEVERITY_ORDER["warn"]:
        return None
    return SEVERITY_ORDER[new] > SEVERITY_ORDER[old]


def _verdict_change(old: CheckResult, new: CheckResult) -> Change:
    worse = verdict_worse(old.severity, new.severity)
    if old.severity in NOT_COMPARABLE and new.severity not in NOT_COMPARABLE:
        text = f"{new.id}: now judged (was {old.severity}): {new.severity}: {new.summary}"
    elif new.severity in NOT_COMPARABLE:
        why = new.needs or new.summary
        text = f"{new.id}: no longer judged (was {old.severity}, now {new.severity}): {why}"
    else:
        text = f"{new.id}: {old.severity} -> {new.severity}: {new.summary}"
    return Change("verdict", new.id, None, old.severity, new.severity, text, worse)


def _findings(check: CheckResult) -> dict[str, tuple[str, str]]:
    """Subject key -> (severity, summary) of each finding worse than pass."""
    if check.severity in ("pass", "skip", "error"):
        return {}
    notes = [(n.severity, n.summary, n.subjects) for n in check.findings] or [
        (check.severity, check.summary, check.subjects)
    ]
    # A finding is known by its subjects; a check's one finding without subjects by the check.
    alone = sum(1 for n in notes if not n[2]) == 1
    return {", ".join(s) or ("" if alone else text): (sev, text) for sev, text, s in notes}


def _compare_findings(result: DiffResult, old: CheckResult, new: CheckResult) -> None:
    """Findings of a check whose verdict did not change: new damage under a failing check."""
    before, after = _findings(old), _findings(new)
    for subject in sorted(set(before) | set(after), key=natural_key):
        was, now = before.get(subject), after.get(subject)
        if was is not None and now is not None and was[0] == now[0]:
            continue
        worse: bool | None
        if was is None and now is not None:
            text = f"new: {new.id} {now[0]}: {now[1]}"
            worse = True if SEVERITY_ORDER[now[0]] >= SEVERITY_ORDER["warn"] else None
        elif now is None and was is not None:
            text = f"gone: {new.id} {was[0]}: {was[1]}"
            worse = False if SEVERITY_ORDER[was[0]] >= SEVERITY_ORDER["warn"] else None
        else:
            assert was is not None and now is not None
            worse = verdict_worse(was[0], now[0])
            text = f"{new.id}{' ' + subject if subject else ''}: {was[0]} -> {now[0]}: {now[1]}"
        result.changes.append(
            Change(
                "finding",
                f"{new.id}:{subject}",
                subject,
                None if was is None else was[0],
                None if now is None else now[0],
                text,
                worse,
            )
        )


def _compare_reports(result: DiffResult, report_a: Report, report_b: Report) -> None:
    before = {c.id: c for c in report_a.checks}
    for check in report_b.checks:
        old = before.get(check.id)
        if old is None:
            continue
        if old.severity != check.severity:
            result.changes.append(_verdict_change(old, check))
        else:
            _compare_findings(result, old, check)


def diff_captures(
    a: Capture,
    b: Capture,
    report_a: Report | None = None,
    report_b: Report | None = None,
    name_a: str = "A",
    name_b: str = "B",
) -> DiffResult:
    """Every change from ``a`` to ``b`` (verdicts and findings too when both reports are
    given)."""
    result = DiffResult(a=clean_line(name_a), b=clean_line(name_b))
    names = _gpu_names(a, b)
    labels_a = {g.label for g in a.gpus} | {n.label for n in a.nics}
    labels_b = {g.label for g in b.gpus} | {n.label for n in b.nics}
    common = labels_a & labels_b
    one_sided = _OneSided()
    for side, only in (("A", labels_a - labels_b), ("B", labels_b - labels_a)):
        for label in only:
            one_sided.add("fact", "GPU" if is_gpu_label(label) else "NIC", side, label)
    _compare_facts(result, _all_facts(a, common), _all_facts(b, common), names, one_sided)
    _compare_topology(result, a, b, common)
    _compare_p2p(result, a, b)
    _compare_measurements(result, a, b)
    if report_a is not None and report_b is not None:
        _compare_reports(result, report_a, report_b)
    result.changes += one_sided.changes(names)
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


_MARKS = {True: "  worse ", False: "  better", None: "        "}


def diff_text(result: DiffResult) -> str:
    """Human lines, grouped by area, the worse first; at most :data:`LIST_LIMIT` per area."""
    if not result.changes:
        lines = [f"pcidoc diff: no change between {result.a} and {result.b}"]
    else:
        count = plurals(f"{len(result.changes)} change(s)")
        worse = sum(1 for c in result.changes if c.worse)
        tail = f" ({worse} worse)" if worse else ""
        lines = [f"pcidoc diff: {count} from {result.a} to {result.b}{tail}"]
        for area, items in result.by_area().items():
            lines.append(f"{AREAS.get(area, area)}:")
            lines += [f"{_MARKS[c.worse]} {c.text}" for c in items[:LIST_LIMIT]]
            if len(items) > LIST_LIMIT:
                rest = len(items) - LIST_LIMIT
                lines.append(
                    plurals(f"          ... and {rest} more change(s) here (`--json` lists them)")
                )
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines) + "\n"


def exit_code_for_diff(result: DiffResult) -> int:
    """0 nothing changed, 1 something changed, 2 something got worse."""
    if any(c.worse for c in result.changes):
        return 2
    return 1 if result.changes else 0

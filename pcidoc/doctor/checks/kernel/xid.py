"""``kernel.xid``: NVIDIA Xid events, "fallen off the bus" without an Xid line, and
NVLink/NVSwitch/fabric manager error lines, each with what the code means and the action
NVIDIA's catalogue prescribes.

What a code means is data: the ``xid`` table of the failure catalogue
(``pcidoc/catalogue/data/xid.toml``: NVIDIA's public Xid catalogue, every code with its class,
this tool's severity, its meaning and NVIDIA's immediate resolution bucket; ``xid_action``
says what each bucket asks for). Codes of the links (79, 74, 136, 144-150, C2C), of memory
(48, 64, 95, 140...) and of firmware (119, 120...) warn or fail; application codes (13, 31, 43,
45...) are reported as info with their meaning, since they say nothing about the links, unless
one GPU reports them for several processes (the table's ``repeat``). An Xid 45 that names its
cause ("caused by previous Xid 149") is judged as that cause: the NVLink error is the fault,
the 45 its consequence. Codes the table does not know are counted.

The lines are read by the kernel-log reader (bus id, pid, process, NVLink number, the text
after the code). A GSP-era line may carry no usable PCI address and name the GPU by the
driver's index instead (``... interrupt hit on link 11 on GPU0: PRIV Error``): that index names
the device. Lines of the catalogue reported by this check that the reader does not turn into
events (``The NVIDIA probe routine failed``, ``GPU is lost``) are reported when no
fallen-off-the-bus event already covers them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from functools import cache

from pcidoc._lazyre import LazyPattern, lazy
from pcidoc._record import field, record
from pcidoc.doctor.context import Context
from pcidoc.doctor.devices import device_label, subject
from pcidoc.doctor.evidence import line, read_logs
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.signatures import catalogue_table, signature_findings
from pcidoc.model.evidence import SignatureHit
from pcidoc.model.kernel import KernelEvent, KernelLog, XidEvent
from pcidoc.model.report import SEVERITY_ORDER, Confidence, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

CHECK_ID = "kernel.xid"
REPEAT_PROCESSES = 3
"""Processes that must report the same code on one GPU before a ``repeat`` severity applies."""
INTERCONNECT = ("pcie", "nvlink", "c2c")
"""Classes of codes about the GPU's links."""

_ROOT_RE = lazy(r"caused by previous Xid (\d{1,4})")
_GPU_INDEX_RE = lazy(r"\bon GPU(\d{1,4})\b")


@record(frozen=True)
class XidCode:
    """One row of the catalogue's ``xid`` table."""

    code: int
    name: str
    klass: str
    severity: Severity
    meaning: str
    action: str
    then: str | None = None
    """The catalogue's investigatory bucket (shown when the code warns or fails)."""
    when: tuple[tuple[LazyPattern, Severity], ...] = ()
    repeat: Severity | None = None
    confidence: Confidence = "high"

    def judge(self, text: str | None) -> Severity:
        """The severity of one line of this code (a ``when`` rule on its text, else the row's)."""
        for pattern, severity in self.when:
            if text and pattern.search(text):
                return severity
        return self.severity


def _row(code: int, raw: dict[str, Any]) -> XidCode:
    return XidCode(
        code=code,
        name=raw["name"],
        klass=raw["class"],
        severity=raw["severity"],
        meaning=raw["meaning"],
        action=raw["action"],
        then=raw.get("then"),
        when=tuple((lazy(r["pattern"]), r["severity"]) for r in raw.get("when", [])),
        repeat=raw.get("repeat"),
        confidence=raw.get("confidence", "high"),
    )


@cache
def xid_codes() -> dict[int, XidCode]:
    """The ``xid`` table of the catalogue, by code."""
    return {int(code): _row(int(code), raw) for code, raw in catalogue_table("xid").items()}


def action(bucket: str) -> str:
    """What NVIDIA's resolution bucket asks for, as one sentence."""
    text = catalogue_table("xid_action").get(bucket, {}).get("text", bucket)
    return text[0].upper() + text[1:] + "."


def _worst(severities: Iterable[Severity]) -> Severity:
    return max(severities, key=SEVERITY_ORDER.__getitem__, default="info")


# ----------------------------------------------------------------------------- devices


def gpu_index(event: XidEvent) -> int | None:
    """The driver's GPU index a line names (``on GPU0``), used when it has no PCI address."""
    found = _GPU_INDEX_RE.search(event.text or "")
    return int(found.group(1)) if found else None


def _device(event: XidEvent) -> tuple[str | None, int | None]:
    return (event.bus_id, None) if event.bus_id else (None, gpu_index(event))


def _where(
    ctx: Context, device: tuple[str | None, int | None], gpus: list[str]
) -> tuple[str, str | None]:
    """(label, subject) of a device key."""
    bus, index = device
    if bus is not None or index is None:
        return device_label(ctx, bus, gpus), subject(ctx, bus)
    return f"GPU{index} (the driver's numbering; the line has no PCI address)", f"GPU{index}"


# ----------------------------------------------------------------------------- grouping


@record
class _Group:
    """The events of one code on one device: its own lines and the lines that name it as their
    cause (an Xid 45 ``caused by previous Xid N``)."""

    code: int
    device: tuple[str | None, int | None]
    first: int
    own: list[XidEvent] = field(default_factory=list)
    caused: list[XidEvent] = field(default_factory=list)

    @property
    def events(self) -> list[XidEvent]:
        return self.own + self.caused


def _root(event: XidEvent) -> int | None:
    found = _ROOT_RE.search(event.text or "")
    return int(found.group(1)) if found else None


def group_events(xids: list[XidEvent]) -> list[_Group]:
    """Events by (code, device), an event naming its cause filed under that cause; in the
    order of each group's first line."""
    groups: dict[tuple[int, tuple[str | None, int | None]], _Group] = {}
    for number, event in enumerate(xids):
        root = _root(event)
        code = root if root is not None else event.code
        device = _device(event)
        group = groups.setdefault((code, device), _Group(code, device, number))
        (group.caused if root is not None else group.own).append(event)
    return sorted(groups.values(), key=lambda g: g.first)


def _processes(group: _Group) -> int:
    return len({e.pid for e in group.own if e.pid is not None})


def _severity(row: XidCode, group: _Group) -> Severity:
    severities = [row.judge(e.text) for e in group.own]
    if group.caused:
        # The cause's own line may be missing: what it did (tearing down applications) is
        # judged by the code itself.
        severities.append(row.severity)
    if row.repeat and _processes(group) >= REPEAT_PROCESSES:
        severities.append(row.repeat)
    return _worst(severities)


# ----------------------------------------------------------------------------- findings


def _headline(row: XidCode, group: _Group) -> str:
    """``Xid 149 (NVLINK_NETIR_ERROR) x2``, or, when only later lines name it, ``Xid 149
    (NVLINK_NETIR_ERROR), named as the cause of 2 Xid 45``."""
    head = f"Xid {row.code} ({row.name})"
    if group.own:
        head += f" x{len(group.own)}"
    if group.caused:
        codes = Counter(e.code for e in group.caused)
        named = ", ".join(f"{n} Xid {c}" for c, n in sorted(codes.items()))
        head += f", named as the cause of {named} (applications stopped because of it)"
        if not group.own:
            head += f"; its own Xid {row.code} line is not in the log"
    return head


def _details(row: XidCode, group: _Group, first_on_device: bool) -> str:
    """NVLinks, the process, repetition and the place of the group in its GPU's cascade."""
    events = group.events
    links = sorted({e.link for e in events if e.link is not None})
    text = f" on NVLink {', '.join(map(str, links))}" if links else ""
    first = group.own[0] if group.own else None
    if first and first.pid and first.process:
        text += f" (pid {first.pid}, {first.process})"
    if row.repeat and _processes(group) >= REPEAT_PROCESSES:
        text += f" from {_processes(group)} processes"
    if first_on_device:
        text += ", the first Xid of this GPU in the log"
    return text


def _remediation(row: XidCode, group: _Group, severity: Severity, lost: bool = False) -> list[str]:
    if lost:
        return ["Act on the link failure first (kernel.aer): this Xid is its consequence."]
    steps = [action(row.action)]
    if group.caused:
        steps.insert(
            0, f"Act on Xid {row.code} first: the later Xid lines that name it are its consequence."
        )
    if severity in ("warn", "fail") and row.then and row.then != row.action:
        steps.append(action(row.then))
    if row.repeat and _processes(group) >= REPEAT_PROCESSES:
        steps.append(
            "Several programs hit it on this GPU: run the field diagnostic (`dcgmi diag -r 3`); "
            "if it passes and one program causes every event, debug the program."
        )
    if severity == "info" and row.klass not in INTERCONNECT:
        steps.append("Nothing here concerns the GPU's PCIe or NVLink links.")
    return steps


LOST_LINK = (
    "; this GPU's PCIe link failed {when} (an AER recovery that failed, or the GPU fallen off "
    "the bus): read it as a consequence of the lost link, not of the program"
)


def _finding(
    ctx: Context,
    row: XidCode,
    group: _Group,
    gpus: list[str],
    first: bool,
    lost: str | None = None,
) -> Finding:
    label, subj = _where(ctx, group.device, gpus)
    severity = _severity(row, group)
    return Finding(
        severity,
        f"{_headline(row, group)} on {label}{_details(row, group, first)}: {row.meaning}"
        + (LOST_LINK.format(when=lost) if lost else ""),
        subjects=[subj] if subj else [],
        evidence=[line(e.quote, subj) for e in group.events[:3]],
        remediation=_remediation(row, group, severity, lost is not None),
        confidence=row.confidence if severity != "info" else "high",
    )


def _places(ctx: Context, groups: list[_Group], gpus: list[str]) -> tuple[str, list[str]]:
    """(``GPU0 (...), GPU3 (...) and 2 more``, subjects) of several groups."""
    places = list(dict.fromkeys(_where(ctx, g.device, gpus) for g in groups))
    text = ", ".join(p[0] for p in places[:4])
    if len(places) > 4:
        text += f" and {len(places) - 4} more"
    return text, list(dict.fromkeys(p[1] for p in places if p[1]))


def _info_finding(ctx: Context, row: XidCode, groups: list[_Group], gpus: list[str]) -> Finding:
    """One finding for a code that says nothing about the links, on every GPU that printed it."""
    if len(groups) == 1:
        return _finding(ctx, row, groups[0], gpus, False)
    where, subjects = _places(ctx, groups, gpus)
    count = sum(len(g.events) for g in groups)
    return Finding(
        "info",
        f"Xid {row.code} ({row.name}) x{count} on {where}: {row.meaning}",
        subjects=subjects,
        evidence=[line(e.quote) for g in groups[:3] for e in g.events[:1]],
        remediation=_remediation(row, groups[0], "info"),
    )


def _unknown(ctx: Context, groups: list[_Group], gpus: list[str]) -> list[Finding]:
    if not groups:
        return []
    counted = Counter(g.code for g in groups for _ in g.events)
    where, subjects = _places(ctx, groups, gpus)
    return [
        Finding(
            "info",
            "Xid code(s) not in pcidoc's table: "
            + ", ".join(f"Xid {c} x{n}" for c, n in sorted(counted.items()))
            + f" on {where}",
            subjects=subjects,
            evidence=[line(e.quote) for g in groups[:3] for e in g.events[:1]],
            remediation=[
                "Look the code up in NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors); "
                "a newer pcidoc may know it."
            ],
            confidence="low",
        )
    ]


def lost_links(logs: list[KernelLog]) -> dict[str, float | None]:
    """Devices whose PCIe link failed in the logs (an AER recovery that failed, a GPU fallen
    off the bus, Xid 79), each with the time of its first failure when the log has times."""
    events: list[KernelEvent] = [
        e for log in logs for e in log.aer_recovery if e.outcome == "failed"
    ]
    events += [e for log in logs for e in log.fallen_off_bus]
    events += [e for log in logs for e in log.xids if e.code == 79]
    lost: dict[str, float | None] = {}
    for event in events:
        if event.bus_id:
            seen = lost.get(event.bus_id, event.time_s)
            times = [x for x in (seen, event.time_s) if x is not None]
            lost[event.bus_id] = min(times) if times else None
    return lost


def _after_loss(group: _Group, lost: dict[str, float | None]) -> str | None:
    """When the group's GPU lost its link: ``before it`` (by the log's times), ``in the same
    log`` (no times to order them); None when it did not, or only after the group's line."""
    bus = group.device[0]
    if bus is None or bus not in lost:
        return None
    when, first = lost[bus], group.events[0].time_s
    if when is None or first is None:
        return "in the same log"
    return "before it" if first >= when else None


def xid_findings(
    ctx: Context, xids: list[XidEvent], gpus: list[str], lost: dict[str, float | None] | None = None
) -> list[Finding]:
    """One finding per code and device that warns or fails (the cause of a cascade first), one
    per code for codes that say nothing about the links, one for codes the table lacks. A
    code that says nothing about the links, on a GPU whose link failed before it (``lost``:
    :func:`lost_links`), gets its own finding that names the link failure as its cause."""
    codes = xid_codes()
    groups = group_events(xids)
    per_device = Counter(g.device for g in groups)
    seen: set[tuple[str | None, int | None]] = set()
    findings: list[Finding] = []
    quiet: dict[int, list[_Group]] = {}
    for group in groups:
        row = codes.get(group.code)
        if row is None:
            continue
        known = group.device != (None, None)
        first = known and group.device not in seen and per_device[group.device] > 1
        seen.add(group.device)
        info = _severity(row, group) == "info"
        after = _after_loss(group, lost or {}) if info else None
        if after:
            findings.append(_finding(ctx, row, group, gpus, first, after))
        elif info:
            quiet.setdefault(row.code, []).append(group)
        else:
            findings.append(_finding(ctx, row, group, gpus, first))
    findings += [_info_finding(ctx, codes[c], gs, gpus) for c, gs in quiet.items()]
    return findings + _unknown(ctx, [g for g in groups if g.code not in codes], gpus)


def _fallen(ctx: Context, logs: list[KernelLog], gpus: list[str]) -> list[Finding]:
    xid79 = {e.bus_id for log in logs for e in log.xids if e.code == 79}
    row = xid_codes()[79]
    out: list[Finding] = []
    for log in logs:
        for event in log.fallen_off_bus:
            if event.bus_id in xid79 and event.bus_id is not None:
                continue
            probe = " and the driver's probe failed" if event.probe_failed else ""
            out.append(
                Finding(
                    "fail",
                    f"{device_label(ctx, event.bus_id, gpus)} has fallen off the bus{probe} "
                    "(the same condition as Xid 79, printed without an Xid line)",
                    subjects=[s for s in [subject(ctx, event.bus_id)] if s],
                    evidence=[line(event.quote, subject(ctx, event.bus_id))],
                    remediation=[action(row.action)],
                )
            )
    return out


def _nvlink_lines(ctx: Context, logs: list[KernelLog]) -> list[Finding]:
    events = [e for log in logs for e in log.nvlink]
    if not events:
        return []
    links = sorted({e.link for e in events if e.link is not None})
    on = f" (link {', '.join(map(str, links))})" if links else ""
    fatal = any(
        "fatal" in e.text.lower()
        and "non-fatal" not in e.text.lower()
        and "nonfatal" not in e.text.lower()
        for e in events
    )
    return [
        Finding(
            "fail" if fatal else "warn",
            f"{len(events)} NVLink/NVSwitch/fabric manager error line(s) in the kernel log{on}",
            subjects=list(dict.fromkeys(s for e in events if (s := subject(ctx, e.bus_id))))[:8],
            evidence=[line(e.quote, subject(ctx, e.bus_id)) for e in events[:3]],
            remediation=[
                "Read the fabric manager log (`journalctl -u nvidia-fabricmanager`) and the "
                "link counters (`nvidia-smi nvlink -e`); " + action("WORKFLOW_NVLINK_ERR")
            ],
            confidence="medium",
        )
    ]


def _catalogue_lines(ctx: Context, logs: list[KernelLog]) -> list[Finding]:
    """Catalogue lines of this check the reader keeps no event for, unless a lost GPU is
    already reported (a fallen-off-the-bus event or an Xid 79)."""
    lost = any(log.fallen_off_bus or any(e.code == 79 for e in log.xids) for log in logs)

    def keep(_hit: SignatureHit) -> bool:
        return not lost

    return signature_findings(ctx, CHECK_ID, keep)


@check(CHECK_ID)
def xid(ctx: Context) -> list[Finding]:
    """Every Xid code explained (links, memory and firmware warn or fail; application codes
    info), GPUs lost on the bus, NVLink error lines."""
    missing, logs, gpus = read_logs(ctx, CHECK_ID)
    if missing is not None:
        return _catalogue_lines(ctx, []) or [missing]
    xids = [e for log in logs for e in log.xids]
    findings = (
        xid_findings(ctx, xids, gpus, lost_links(logs))
        + _fallen(ctx, logs, gpus)
        + _nvlink_lines(ctx, logs)
        + _catalogue_lines(ctx, logs)
    )
    if findings:
        return findings
    lines = sum(log.lines for log in logs)
    return [
        Finding(
            "pass",
            f"no Xid, fallen-off-the-bus or NVLink error in {lines} kernel line(s)",
        )
    ]

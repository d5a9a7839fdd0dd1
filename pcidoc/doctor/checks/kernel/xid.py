"""``kernel.xid``: NVIDIA Xid events that concern the interconnect, "fallen off the bus" without
an Xid line, and NVLink/NVSwitch/fabric manager error lines, each with what NVIDIA's catalogue
says it means and the action it prescribes.

The catalogue (:data:`XID_CATALOGUE`) follows NVIDIA's "Xid Errors" catalogue
(docs.nvidia.com/deploy/xid-errors, its recommended actions: restart the application, reset the
GPU, drain and reboot, run field diagnostics / RMA) and DCGM's health watches, which map Xid 38,
39 and 42 to PCIe (research/checks.md §4). Codes that are application faults (13, 31, 43, 45,
109...) are counted but do not warn: they say nothing about the links.
"""

from __future__ import annotations

from collections import Counter

from pcidoc._record import record
from pcidoc.doctor.checks.kernel._shared import (
    device_label,
    line,
    read_logs,
    subject,
)
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.model.kernel import XidEvent
from pcidoc.model.report import Severity


@record(frozen=True)
class XidEntry:
    """What one Xid code means for the interconnect."""

    meaning: str
    severity: Severity
    action: str


_RESET = "reset the GPU (`nvidia-smi -r -i <n>` with no process on it) or reboot the node"
_DRAIN = "drain the node, reboot; if it comes back, reseat the GPU and check its power cables"
_FIELD = "run the field diagnostic (`dcgmi diag -r 3`); RMA the GPU if the error repeats"
_NVLINK = (
    "look at the link's error counters (`nvidia-smi nvlink -e -i <n>`), drain the node and "
    "reset the GPU; a link that keeps failing needs the GPU/baseboard serviced"
)

XID_CATALOGUE: dict[int, XidEntry] = {
    38: XidEntry("driver firmware error (DCGM counts it as a PCIe error)", "warn", _RESET),
    39: XidEntry("PCIe fabric error (DCGM health watch)", "warn", _RESET),
    42: XidEntry(
        "PCIe replay error (DCGM health watch)", "warn", "check the slot/riser; " + _RESET
    ),
    48: XidEntry(
        "double-bit ECC error (uncorrectable memory error)", "fail", _RESET + "; " + _FIELD
    ),
    61: XidEntry("internal micro-controller breakpoint/warning", "warn", _RESET),
    62: XidEntry("internal micro-controller halt", "fail", _RESET),
    63: XidEntry(
        "ECC page retirement / row remapping recorded", "info", "no action unless it repeats"
    ),
    64: XidEntry("ECC page retirement / row remapper failure", "fail", _FIELD),
    74: XidEntry("NVLink error (the bits name the fault and the link)", "fail", _NVLINK),
    79: XidEntry("GPU has fallen off the bus (lost on PCIe)", "fail", _DRAIN + "; " + _FIELD),
    92: XidEntry("high single-bit ECC error rate", "warn", _FIELD),
    94: XidEntry("contained ECC error", "warn", "restart the application; " + _RESET),
    95: XidEntry("uncontained ECC error", "fail", "drain the node; " + _RESET),
    119: XidEntry(
        "GSP RPC timeout (GPU firmware not answering)", "fail", _RESET + "; update the driver"
    ),
    120: XidEntry("GSP error (GPU firmware)", "fail", _RESET),
    121: XidEntry("C2C (chip-to-chip) link corrected error", "warn", "watch the rate; " + _RESET),
    137: XidEntry("NVLink FLA privilege error / interrupt on a link", "warn", _NVLINK),
    140: XidEntry("unrecovered ECC error", "fail", _RESET),
    143: XidEntry("GPU initialisation failure", "fail", _DRAIN),
    144: XidEntry("NVLink SAW error", "fail", _NVLINK),
    145: XidEntry("NVLink RLW error", "fail", _NVLINK),
    146: XidEntry("NVLink TLW error", "fail", _NVLINK),
    147: XidEntry("NVLink TREX error", "fail", _NVLINK),
    148: XidEntry("NVLink NVLPW_CTRL error", "fail", _NVLINK),
    149: XidEntry("NVLink NETIR error", "fail", _NVLINK),
    150: XidEntry("NVLink MSE error", "fail", _NVLINK),
    154: XidEntry(
        "GPU recovery action changed (the driver asks for a reset/reboot)", "fail", _RESET
    ),
}
"""Xid codes that concern the GPU's links or its health on the bus; others are counted only."""

_ORDER: dict[str, int] = {"fail": 3, "warn": 2, "info": 1, "pass": 0}


def _severity(event: XidEvent, entry: XidEntry) -> Severity:
    """NVLink errors marked non-fatal warn; the catalogue's severity otherwise."""
    text = (event.text or "").lower()
    if 144 <= event.code <= 150 and ("nonfatal" in text or "non-fatal" in text):
        return "warn"
    return entry.severity


def _xid_findings(ctx: Context, xids: list[XidEvent], gpus: list[str]) -> list[Finding]:
    groups: dict[tuple[int, str | None], list[XidEvent]] = {}
    for event in xids:
        groups.setdefault((event.code, event.bus_id), []).append(event)
    findings: list[Finding] = []
    for (code, bus), events in groups.items():
        entry = XID_CATALOGUE.get(code)
        if entry is None:
            continue
        first = events[0]
        links = sorted({e.link for e in events if e.link is not None})
        where = device_label(ctx, bus, gpus)
        on_links = f" on NVLink {', '.join(map(str, links))}" if links else ""
        who = f" (pid {first.pid}, {first.process})" if first.pid and first.process else ""
        findings.append(
            Finding(
                max((_severity(e, entry) for e in events), key=_ORDER.__getitem__),
                f"Xid {code} x{len(events)} on {where}{on_links}: {entry.meaning}{who}",
                subjects=[s for s in [subject(ctx, bus)] if s],
                evidence=[line(e.quote, subject(ctx, bus)) for e in events[:3]],
                remediation=[entry.action[0].upper() + entry.action[1:] + "."],
            )
        )
    return findings


def _fallen(ctx: Context, logs: list, gpus: list[str]) -> list[Finding]:
    xid79 = {e.bus_id for log in logs for e in log.xids if e.code == 79}
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
                    remediation=[
                        XID_CATALOGUE[79].action[0].upper() + XID_CATALOGUE[79].action[1:] + "."
                    ],
                )
            )
    return out


def _nvlink_lines(ctx: Context, logs: list) -> list[Finding]:
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
                "link counters (`nvidia-smi nvlink -e`); " + _NVLINK + "."
            ],
            confidence="medium",
        )
    ]


@check("kernel.xid", "Xid and fallen-off-the-bus events in the kernel log")
def xid(ctx: Context) -> list[Finding]:
    """Interconnect-related Xid codes, GPUs lost on the bus, NVLink error lines."""
    missing, logs, gpus = read_logs(ctx, "Xid events")
    if missing is not None:
        return [missing]
    xids = [e for log in logs for e in log.xids]
    findings = _xid_findings(ctx, xids, gpus) + _fallen(ctx, logs, gpus) + _nvlink_lines(ctx, logs)
    if findings:
        return findings
    others = Counter(e.code for e in xids)
    counted = ", ".join(f"Xid {c} x{n}" for c, n in sorted(others.items()))
    lines = sum(log.lines for log in logs)
    return [
        Finding(
            "pass",
            f"no interconnect Xid, fallen-off-the-bus or NVLink error in {lines} kernel line(s)"
            + (f" (application Xids only: {counted})" if counted else ""),
            evidence=[line(e.quote) for e in xids[:2]],
        )
    ]

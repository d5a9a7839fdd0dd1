"""``kernel.aer``: PCIe AER reports in the kernel log, by device and reporting port.

Uncorrectable errors (non-fatal or fatal) fail: the link lost data or went down, and a device
that "can't recover" is gone until a reset. Corrected errors are counted per device against
time: a burst (several within a second) or more than DCGM's rate (16 per minute; 32 on a Gen5
x16 link; research/checks.md §4, DCGM's PCIe test) is a storm, the warning sign of a marginal
link (riser, slot, cable, power) that precedes a GPU falling off the bus. An isolated corrected
error is reported, not judged.

What each error bit means (``RxErr``, ``SDES``, ``CmpltTO``, ``ACSViol``..., short and
spelled-out names) and what a layer's errors point at is data: the ``aer_error`` and
``aer_layer`` tables of the failure catalogue (``pcidoc/catalogue/data/aer.toml``, after
drivers/pci/pcie/aer.c). A root port's "error message received" line whose report is missing
(cut, or rate-limited by the kernel) is a catalogue line: it is reported, cautiously, when the
reader found no AER report at all.

A log without AER reports is only evidence of health when the OS handles AER: when the firmware
keeps it (``_OSC: platform does not support [AER]``, firmware-first), errors go to the BMC/SEL
and never reach this log, so the pass says so with low confidence.
"""

from __future__ import annotations

from pcidoc.doctor import config
from pcidoc.doctor.context import Context
from pcidoc.doctor.devices import device_label, relation, subject
from pcidoc.doctor.evidence import line, read_logs
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.signatures import catalogue_table, signature_findings
from pcidoc.doctor.wording import by_card
from pcidoc.model.evidence import SignatureHit
from pcidoc.model.kernel import AerEvent, KernelLog
from pcidoc.model.report import Evidence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

CHECK_ID = "kernel.aer"

CORRECTED_PER_MINUTE = config.AER_CORRECTED_PER_MINUTE
CORRECTED_PER_MINUTE_GEN5_X16 = config.AER_CORRECTED_PER_MINUTE_GEN5_X16
BURST_COUNT = config.AER_BURST_COUNT
BURST_SECONDS = config.AER_BURST_SECONDS

_LINK_ACTION = (
    "Reseat the GPU (and its riser/cable), check its power connectors, try another slot; "
    "force a lower link speed in the BIOS to confirm a signal-integrity problem"
)


def aer_bit(name: str) -> tuple[str, dict[str, Any]] | None:
    """(short name, row) of an error bit as Linux prints it (``CmpltTO`` or ``Completion
    Timeout``); None for a name the table lacks."""
    rows = catalogue_table("aer_error")
    row = rows.get(name.strip())
    if row is not None and "alias" in row:
        name, row = row["alias"], rows.get(row["alias"])
    return (name.strip(), row) if row is not None else None


def explain_bits(bits: list[str]) -> Evidence | None:
    """What the error bits of the reports mean, as one evidence line."""
    known = dict(b for b in (aer_bit(name) for name in bits) if b is not None)
    if not known:
        return None
    return Evidence(
        label="what the AER bits mean",
        value="; ".join(f"{name} = {row['meaning']}" for name, row in list(known.items())[:6]),
    )


def bit_fixes(bits: list[str]) -> list[str]:
    """The advice the table gives for the bits seen (``SDES``: the slot, riser or power)."""
    known = (aer_bit(name) for name in bits)
    return list(
        dict.fromkeys(row["fix"] for b in known if b is not None and "fix" in (row := b[1]))
    )


def explain_layers(layers: list[str]) -> Evidence | None:
    """What the errors of each layer usually point at."""
    rows = catalogue_table("aer_layer")
    known = [f"{layer}: {rows[layer]['meaning']}" for layer in layers if layer in rows]
    return Evidence(label="where to look", value="; ".join(known)) if known else None


def _max_in_window(times: list[float], window: float) -> int:
    times = sorted(times)
    best, start = 0, 0
    for end, t in enumerate(times):
        while t - times[start] > window:
            start += 1
        best = max(best, end - start + 1)
    return best


def _uncorrectable(ctx: Context, logs: list[KernelLog], gpus: list[str]) -> list[Finding]:
    events = [e for log in logs for e in log.aer if e.severity != "corrected"]
    failed = [r for log in logs for r in log.aer_recovery if r.outcome == "failed"]
    if not events and not failed:
        return []
    fatal = [e for e in events if e.severity == "fatal"]
    bits = list(dict.fromkeys(b for e in events for b in e.bits))
    where = ", ".join(
        dict.fromkeys(
            [device_label(ctx, e.bus_id, gpus, e.driver) for e in events if e.bus_id]
            + [device_label(ctx, e.port, gpus, "pcieport") for e in events if e.port]
        )
    )
    drivers = {r.bus_id: r.driver for r in failed if r.bus_id}
    lost = ", ".join(  # one card once: not a GPU and, beside it, its audio function
        device_label(ctx, bus, gpus, drivers[bus])
        + (f" (and its function{'s' if len(more) > 1 else ''} {', '.join(more)})" if more else "")
        for bus, more in by_card(drivers)
    )
    parts = []
    if events:
        kind = "fatal" if fatal else "non-fatal"
        parts.append(
            f"{len(events)} uncorrectable ({kind}) AER error(s) on {where or 'a device'}"
            + (f" [{', '.join(bits[:6])}]" if bits else "")
        )
    if failed:
        parts.append(f"recovery failed for {lost or 'a device'}")
    subjects = [s for e in events for s in (subject(ctx, e.bus_id), subject(ctx, e.port)) if s]
    subjects += [s for bus, _ in by_card(drivers) if (s := subject(ctx, bus))]
    explained = explain_bits(bits)
    return [
        Finding(
            "fail",
            "; ".join(parts) + ": the link lost data or went down",
            subjects=list(dict.fromkeys(subjects))[:8],
            evidence=[line(e.quote, subject(ctx, e.bus_id)) for e in (events[:2] + failed[:2])]
            + ([explained] if explained else []),
            remediation=[
                "A device whose recovery failed is lost until a reset: drain the node and reboot.",
                *bit_fixes(bits),
                _LINK_ACTION + ".",
            ],
        )
    ]


def _limit(ctx: Context, bus: str | None) -> int:
    for gpu in ctx.gpus:
        if gpu.bus_id and bus and gpu.bus_id.lower() == bus:
            pcie = gpu.pcie
            if pcie is not None and pcie.max_gen == 5 and pcie.max_width == 16:
                return CORRECTED_PER_MINUTE_GEN5_X16
    return CORRECTED_PER_MINUTE


def _storm(ctx: Context, bus: str | None, events: list[AerEvent]) -> str | None:
    """Why the corrected errors of one device are a storm, or None."""
    times = [e.time_s for e in events if e.time_s is not None]
    limit = _limit(ctx, bus)
    if len(times) >= BURST_COUNT and _max_in_window(times, BURST_SECONDS) >= BURST_COUNT:
        return f"{_max_in_window(times, BURST_SECONDS)} within {BURST_SECONDS:g} s"
    if _max_in_window(times, 60.0) > limit:
        return f"{_max_in_window(times, 60.0)} within one minute (limit {limit}/min)"
    return None


def _corrected(ctx: Context, logs: list[KernelLog], gpus: list[str]) -> list[Finding]:
    by_device: dict[str | None, list[AerEvent]] = {}
    for log in logs:
        for event in log.aer:
            if event.severity == "corrected":
                by_device.setdefault(event.bus_id, []).append(event)
    findings: list[Finding] = []
    for bus, events in by_device.items():
        layer_list = list(dict.fromkeys(e.layer for e in events if e.layer))
        bit_list = list(dict.fromkeys(b for e in events for b in e.bits))
        layers = ", ".join(layer_list) or "unknown layer"
        bits = ", ".join(bit_list)
        storm = _storm(ctx, bus, events)
        peers = len(by_device) - 1
        related = relation(
            ctx,
            [bus, *(e.port for e in events), *(e.source for e in events)],
            events[0].driver,
            gpus,
        )
        where = device_label(ctx, bus, gpus, events[0].driver)
        source = next((e.source for e in events if e.source and e.source != bus), None)
        text = (
            f"{len(events)} corrected AER error(s) on {where} ({layers}"
            + (f": {bits}" if bits else "")
            + ")"
            + (f", reported for {source}" if source and not source.endswith("00:00.0") else "")
        )
        if storm:
            text += f": a storm ({storm})" + ("" if peers else ", on this port only")
        if storm and related == "other":
            text += "; not on a GPU's or NIC's link"
        judged = storm and related != "other"
        explained = [x for x in (explain_bits(bit_list), explain_layers(layer_list)) if x]
        findings.append(
            Finding(
                "warn" if judged else "info",
                text,
                subjects=[s for s in [subject(ctx, bus)] if s],
                evidence=[line(e.quote, subject(ctx, bus)) for e in events[:3]] + explained,
                remediation=[
                    _LINK_ACTION + " (a correctable storm often precedes Xid 79).",
                    "Watch the counters: `pcidoc watch` and "
                    "`cat /sys/bus/pci/devices/<port>/aer_dev_correctable`.",
                ]
                if judged
                else ["Isolated corrected errors are normal; watch for a rising rate."],
                confidence="high" if judged and related == "gpu" else "medium",
            )
        )
    return findings


def _clean(logs: list[KernelLog]) -> Finding:
    lines = sum(log.lines for log in logs)
    firmware = next((log.firmware_first for log in logs if log.firmware_first), None)
    if firmware:
        return Finding(
            "pass",
            f"no AER report in {lines} kernel line(s), but the firmware handles AER "
            "(firmware-first): errors go to the BMC/SEL, so a clean log proves little",
            evidence=[line(firmware)],
            remediation=[
                "Read the BMC's event log (`ipmitool sel elist`) or the OS's `rasdaemon`/"
                "`/sys/bus/pci/devices/*/aer_dev_*` for errors the firmware kept."
            ],
            confidence="low",
        )
    native = any(log.aer_native for log in logs)
    return Finding(
        "pass",
        f"no AER report in {lines} kernel line(s)"
        + ("" if native else " (the log does not show whether the OS or the firmware owns AER)"),
        confidence="high" if native else "medium",
    )


def _catalogue_lines(ctx: Context, logs: list[KernelLog]) -> list[Finding]:
    """AER lines of the catalogue the reader made no report of ("error received" alone)."""
    reported = any(log.aer or log.aer_recovery for log in logs)

    def keep(_hit: SignatureHit) -> bool:
        return not reported

    return signature_findings(ctx, CHECK_ID, keep)


@check(CHECK_ID)
def aer(ctx: Context) -> list[Finding]:
    """Uncorrectable AER = fail; corrected storms per device/port = warn."""
    missing, logs, gpus = read_logs(ctx, CHECK_ID)
    if missing is not None:
        return _catalogue_lines(ctx, []) or [missing]
    findings = (
        _uncorrectable(ctx, logs, gpus) + _corrected(ctx, logs, gpus) + _catalogue_lines(ctx, logs)
    )
    return findings or [_clean(logs)]

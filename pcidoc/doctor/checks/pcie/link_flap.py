"""``pcie.link-flap``: links that change their negotiated generation/width, or stay trained
low, over repeated readings (``pcidoc watch``, pasted ``nvidia-smi``/``lspci``/sysfs snapshots,
monitoring logs) and the kernel's "available PCIe bandwidth ... limited by" notices.

Idle power saving is normal: a GPU drops its link to Gen1 when idle and returns to full speed
under load, changing the generation but never the width. Instability is a width that changes
(:data:`WIDTH_CHANGES_WARN`), generation changes under load, or transitions faster than power
management makes them (:data:`FAST_TRANSITIONS_PER_MINUTE`); a link that stays below its width,
or below its generation while loaded, is stuck low (research/anchors_2026.md: 1,415 transitions in
2 minutes; a GPU at Gen2 for hours of training).
"""

from __future__ import annotations

from itertools import pairwise

from pcidoc.doctor import config
from pcidoc.doctor.context import Context
from pcidoc.doctor.devices import device_label, relation, subject
from pcidoc.doctor.evidence import kernel_logs, line, log_gpus
from pcidoc.doctor.registry import Finding, check
from pcidoc.model.kernel import LinkHistory, LinkNotice, LinkSample, LinkTrace
from pcidoc.model.report import Evidence, Severity

LOADED_PCT = config.LINK_LOADED_PCT
WIDTH_CHANGES_WARN = config.LINK_WIDTH_CHANGES_WARN
FAST_TRANSITIONS_PER_MINUTE = config.LINK_FAST_TRANSITIONS_PER_MINUTE
"""Thresholds (with their sources) live in :mod:`pcidoc.doctor.config`."""


def _state(s: LinkSample) -> tuple[int | None, int | None]:
    return s.gen, s.width


def _loaded(s: LinkSample) -> bool:
    return s.utilization_pct is not None and s.utilization_pct >= LOADED_PCT


def _gpu_max(ctx: Context, trace: LinkTrace) -> tuple[int | None, int | None]:
    for gpu in ctx.gpus:
        if trace.bus_id and gpu.bus_id and gpu.bus_id.lower() == trace.bus_id:
            pcie = gpu.pcie
            return (pcie.max_gen, pcie.max_width) if pcie else (None, None)
    return None, None


def _judge(ctx: Context, trace: LinkTrace, gpus: list[str]) -> tuple[str, str] | None:
    """(severity, text) for one device, None when it is stable and at its best."""
    samples = [s for s in trace.samples if s.gen is not None or s.width is not None]
    changes = [(a, b) for a, b in pairwise(samples) if _state(a) != _state(b)]
    width_changes = [c for c in changes if c[0].width != c[1].width]
    loaded_changes = [c for c in changes if _loaded(c[0]) and _loaded(c[1])]
    gmax, wmax = _gpu_max(ctx, trace)
    max_gen = max((s.max_gen for s in samples if s.max_gen), default=gmax)
    max_width = max((s.max_width for s in samples if s.max_width), default=wmax)
    name = device_label(ctx, trace.bus_id or trace.device, gpus)
    if trace.bus_id is None:
        name = trace.device
    span = [s.time_s for s in samples if s.time_s is not None]
    minutes = (max(span) - min(span)) / 60 if len(span) >= 2 and max(span) > min(span) else None
    rate = f", {len(changes) / minutes:.1f}/min" if minutes else ""
    if len(width_changes) >= WIDTH_CHANGES_WARN:
        widths = sorted({s.width for s in samples if s.width})
        return "warn", (
            f"{name}: width changed {len(width_changes)} time(s) over {len(samples)} readings "
            f"(x{', x'.join(map(str, widths))}{rate}): the link retrains, it is unstable"
        )
    if loaded_changes and (not minutes or len(loaded_changes) / minutes >= 1):
        return "warn", (
            f"{name}: {len(loaded_changes)} generation change(s) under load{rate}: "
            "the link is not holding its speed while busy"
        )
    unknown_load = all(s.utilization_pct is None for s in samples)
    if (
        changes
        and minutes
        and unknown_load
        and len(changes) / minutes >= FAST_TRANSITIONS_PER_MINUTE
    ):
        return "warn", (
            f"{name}: {len(changes)} generation change(s){rate}: faster than link power "
            "management changes speed; the link is retraining"
        )
    widths = [s.width for s in samples if s.width]
    if max_width and widths and max(widths) < max_width:
        gens = [s.gen for s in samples if s.gen]
        at = f"Gen{max(gens)} " if gens else ""
        of = f"Gen{max_gen} " if max_gen else ""
        return "warn", (
            f"{name}: trained at {at}x{max(widths)} of {of}x{max_width} in every reading: "
            "stuck at a lower width (slot, riser or board)"
        )
    loaded = [s for s in samples if _loaded(s) and s.gen]
    if max_gen and loaded and all(s.gen < max_gen for s in loaded):  # type: ignore[operator]
        return "warn", (
            f"{name}: at Gen{max(s.gen for s in loaded)} of Gen{max_gen} in all "  # type: ignore[type-var]
            f"{len(loaded)} reading(s) under load: stuck low"
        )
    gens = [s.gen for s in samples if s.gen]
    if max_gen and gens and max(gens) < max_gen and not changes:
        return "info", (
            f"{name}: at Gen{max(gens)} of Gen{max_gen} in every reading, none under load: "
            "idle power saving unless a job was running (read it under load)"
        )
    if changes:
        return "info", (
            f"{name}: {len(changes)} generation change(s) without a width change{rate}, "
            "not under load: idle power saving, normal"
        )
    if not max_gen and gens and max(gens) <= IDLE_GEN:
        return "info", (
            f"{name}: at Gen{max(gens)} in every reading; its maximum is not in the readings "
            "(a monitor shows the current link only): an idle GPU drops to Gen1 to save power, "
            "read it under load"
        )
    return None


def _maxima_unknown(ctx: Context) -> int:
    """Links of the readings whose maximum generation neither they nor the capture say."""
    return sum(
        1
        for history in _histories(ctx)
        for trace in history.traces
        if not any(s.max_gen for s in trace.samples) and not _gpu_max(ctx, trace)[0]
    )


def _histories(ctx: Context) -> list[LinkHistory]:
    ev = ctx.capture.evidence
    return list(ev.link_histories) if ev is not None else []


IDLE_SPEED_GTS = 2.5
"""The speed a PCIe link drops to in its lowest power state (Gen1)."""
IDLE_GEN = 1


def _share(available: float | None, capable: float | None) -> str:
    if not available or not capable:
        return "part"
    return f"{100 * available / capable:.0f} %"


def _alternating(ctx: Context, gpus: list[str]) -> tuple[list[Finding], set[str]]:
    """Devices the kernel announced at more than one link state: the link retrained (the
    notice comes at enumeration, so again only after a reset or a retrain)."""
    states: dict[str, list[LinkNotice]] = {}
    for log in kernel_logs(ctx):
        for notice in log.link_notices:
            if notice.bus_id:
                states.setdefault(notice.bus_id, []).append(notice)
    out: list[Finding] = []
    for bus, notices in states.items():
        seen = list(dict.fromkeys(_link(n) for n in notices))
        if len(seen) < 2:
            continue
        shown = ", ".join(f"{speed:g} GT/s x{width}" for speed, width in seen[:6])
        out.append(
            Finding(
                "warn",
                f"kernel: {device_label(ctx, bus, gpus)} announced at {len(seen)} link states "
                f"in {len(notices)} notices ({shown}): the link retrained or was reset",
                subjects=[s for s in [subject(ctx, bus)] if s],
                evidence=[line(n.quote, subject(ctx, bus)) for n in notices[:4]],
                remediation=[
                    "Look for AER errors, Xid 79 or a reset of this device around these lines; "
                    "reseat the card and its riser, check the slot and the power cables."
                ],
                confidence="medium",
            )
        )
    flapping = {bus for bus, notices in states.items() if len({_link(n) for n in notices}) > 1}
    return out, flapping


def _link(notice: LinkNotice) -> tuple[float | None, int | None]:
    return notice.speed_gts, notice.width


def _notices(ctx: Context, gpus: list[str]) -> list[Finding]:
    out, flapping = _alternating(ctx, gpus)
    for log in kernel_logs(ctx):
        for notice in log.link_notices:
            if notice.bus_id in flapping:
                continue  # said once, as a retrain
            device = device_label(ctx, notice.bus_id, gpus)
            narrow = notice.width and notice.capable_width and notice.width < notice.capable_width
            # A port above the device trained below the card's speed, but above the lowest
            # speed a link idles at: that is the slot's (riser's, board's) ceiling, not power
            # saving (the kernel prints the notice once, at enumeration).
            upstream = notice.limited_by not in (None, notice.bus_id)
            ceiling = upstream and (notice.speed_gts or 0) > IDLE_SPEED_GTS
            related = relation(ctx, [notice.bus_id], notice.driver, gpus)
            severity: Severity = (
                "warn" if related in ("gpu", "unknown") and (narrow or ceiling) else "info"
            )
            if narrow:
                why = ""
            elif ceiling:
                why = (
                    f": the port's link is the ceiling (a slot, riser or board that trains at "
                    f"most {notice.speed_gts:g} GT/s), "
                    f"{_share(notice.available_gbps, notice.capable_gbps)} of the card's bandwidth"
                )
            else:
                why = ": a speed-only limit at enumeration may be power saving"
            out.append(
                Finding(
                    severity,
                    f"kernel: {device} limited to {notice.speed_gts:g} GT/s x{notice.width} "
                    f"(capable of {notice.capable_gts:g} GT/s x{notice.capable_width}) by the "
                    f"link at {notice.limited_by or 'an upstream port'}" + why,
                    subjects=[s for s in [subject(ctx, notice.bus_id)] if s],
                    evidence=[line(notice.quote, subject(ctx, notice.bus_id))],
                    remediation=[
                        "Check the slot and riser of the narrow link; re-read the link "
                        "under load (`pcidoc watch`)."
                        if narrow
                        else "Move the card to a slot wired to a port of its generation (the "
                        "board manual's slot table), or check the BIOS's PCIe speed setting and "
                        "the riser; re-read the link under load (`pcidoc watch`)."
                    ]
                    if severity == "warn"
                    else [],
                    confidence="high" if related == "gpu" else "medium",
                )
            )
    return out


def _history_findings(ctx: Context, gpus: list[str]) -> tuple[list[Finding], int, int]:
    findings: list[Finding] = []
    devices = readings = 0
    for history in _histories(ctx):
        readings = max(readings, history.readings)
        levels = (
            f" (the driver's link power states: {', '.join(history.power_levels)}; a low speed "
            "at idle is one of them)"
            if history.power_levels
            else ""
        )
        for trace in history.traces:
            devices += 1
            verdict = _judge(ctx, trace, gpus)
            if verdict is None:
                continue
            severity, text = verdict
            findings.append(
                Finding(
                    severity,  # type: ignore[arg-type]
                    text + (levels if severity == "warn" else ""),
                    subjects=[s for s in [subject(ctx, trace.bus_id) or trace.device] if s],
                    evidence=[
                        Evidence(
                            label=f"reading {s.sample}",
                            value=f"Gen{s.gen} x{s.width}"
                            + (
                                f", {s.utilization_pct:g}% busy"
                                if s.utilization_pct is not None
                                else ""
                            ),
                            subject=trace.device,
                        )
                        for s in trace.samples[:4]
                    ],
                    remediation=[
                        "Reseat the GPU/riser and check the slot; compare with a reading under "
                        "load (`nvidia-smi -q -d PCIE` while a job runs); `pcidoc watch` counts "
                        "transitions per minute.",
                    ]
                    if severity == "warn"
                    else [],
                    confidence="medium" if history.tool != "watch" else "high",
                )
            )
    return findings, devices, readings


@check("pcie.link-flap")
def link_flap(ctx: Context) -> list[Finding]:
    """Width changes, changes under load, links stuck low; idle downclocking is normal."""
    gpus = log_gpus(kernel_logs(ctx))
    findings, devices, readings = _history_findings(ctx, gpus)
    findings += _notices(ctx, gpus)
    if findings:
        return findings
    if devices:
        unknown = _maxima_unknown(ctx)
        return [
            Finding(
                "pass",
                f"{readings} reading(s) of {devices} link(s): no change of generation or width, "
                + (
                    f"the maximum of {unknown} link(s) is not in the readings"
                    if unknown
                    else "none below its maximum"
                ),
                confidence="medium" if unknown else "high",
            )
        ]
    return [
        Finding(
            "skip",
            "no repeated link readings",
            needs="run `pcidoc watch`, or import several `nvidia-smi -q -d PCIE` / "
            "`nvidia-smi --query-gpu=pci.bus_id,pcie.link.gen.current,pcie.link.width.current "
            "--format=csv` readings",
        )
    ]

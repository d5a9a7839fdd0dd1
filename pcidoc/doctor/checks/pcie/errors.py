"""The ``pcie.errors`` check."""

from __future__ import annotations

from pcidoc.doctor import config
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.checks._common import judged_of
from pcidoc.doctor.checks._common import median as _median
from pcidoc.doctor.checks._common import no_gpu as _no_gpu
from pcidoc.doctor.checks._common import with_gap as _with_gap
from pcidoc.doctor.checks.pcie._shared import _RESEAT, _port_name
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import gpu_names as _names
from pcidoc.doctor.wording import gpu_ref, outlier_factor
from pcidoc.model.facts import Gpu, PcieHop
from pcidoc.model.report import Severity
from pcidoc.model.units import link_label

# ============================================================================ pcie.errors


def _limit_link(gpu: Gpu) -> tuple[int | None, int | None]:
    """The link the replay limit is scaled by: the negotiated max, else the current link."""
    link = gpu.pcie
    return (link.max_gen or link.current_gen, link.max_width or link.current_width)


def _per_minute(count: int, uptime_s: float | None) -> float | None:
    if not uptime_s or uptime_s <= 0:
        return None
    minutes = uptime_s / 60.0
    if minutes <= 0:  # a denormal uptime underflows to 0 (hypothesis found 5e-324)
        return None
    return count / minutes


def _replay_findings(ctx: Context, gpu: Gpu) -> list[Finding]:
    subject = gpu.label
    count = gpu.replay_count
    rollovers = gpu.replay_rollover_count
    if count is None or (count <= 0 and not rollovers):
        return []  # no replay: nothing to say, nothing to build
    findings: list[Finding] = []
    gen, width = _limit_link(gpu)
    limit = config.replay_limit_per_minute(gen, width)
    rate = _per_minute(count, ctx.host.uptime_s)
    evidence = [_ev("replays since driver load", count, "replays", subject)]
    if limit is not None:
        evidence.append(_ev(f"limit for {link_label(gen, width)}", limit, "replays/min", subject))
    if rate is not None:
        evidence.append(_ev("average since boot", round(rate, 3), "replays/min", subject))
    remediation = [
        "Reset the counters' baseline: note `nvidia-smi -q -d PCIE -i "
        f"{gpu.index}` (Replays Since Reset), run load for a few minutes and read it again; a "
        "rising count under load is the real signal (`dcgmi health -s p` watches it).",
        _RESEAT,
        "Run the platform's PCIe diagnostics for the hops off the GPU board, then "
        "`dcgmi diag -r 2` and the field diagnostic if the GPU itself is suspect.",
    ]
    if count > 0 and rate is not None and limit is not None and rate > limit:
        severe = rate > limit * config.REPLAY_FAIL_MULTIPLE
        findings.append(
            Finding(
                "fail" if severe else "warn",
                f"{subject}: {count} PCIe replays, an average of {rate:.1f}/min since boot "
                f"(limit {limit}/min for {link_label(gen, width)}"
                + (f", >{config.REPLAY_FAIL_MULTIPLE}x" if severe else "")
                + "); an average since boot hides when they happened",
                subjects=[subject],
                evidence=evidence,
                remediation=remediation,
                confidence="low",
            )
        )
    elif count > 0:
        detail = (
            f"average {rate:.3g}/min since boot, under the {limit}/min limit"
            if rate is not None and limit is not None
            else "no time base in the capture to turn it into a rate"
        )
        findings.append(
            Finding(
                "info",
                f"{subject}: {count} PCIe replays since the driver loaded ({detail}); only a "
                "rate under load says whether the link is marginal",
                subjects=[subject],
                evidence=evidence,
                remediation=remediation[:1],
                confidence="low",
            )
        )
    if rollovers:
        findings.append(
            Finding(
                "warn",
                f"{subject}: the replay number rolled over {rollovers} time(s): a packet needed "
                "repeated replays and the link had to retrain",
                subjects=[subject],
                evidence=[_ev("replay rollovers", rollovers, "events", subject), *evidence],
                remediation=remediation,
                confidence="medium",
            )
        )
    return findings


def identical_peer_groups(ctx: Context) -> list[list[Gpu]]:
    """GPUs that should behave alike: same model name and same link class (the most the card
    and slot allow: ``max_gen``/``max_width``, else the device's own), two or more per group."""
    groups: dict[tuple[object, ...], list[Gpu]] = {}
    for gpu in ctx.gpus:
        link = gpu.pcie
        key = (
            gpu.name or "?",
            link.max_gen or link.device_max_gen,
            link.max_width or link.device_max_width,
        )
        groups.setdefault(key, []).append(gpu)
    return [peers for peers in groups.values() if len(peers) >= 2]


def _replay_outliers(ctx: Context) -> list[Finding]:
    """A GPU whose replay count stands out among identical peers, with or without a time base.

    Peers are each other's reference: with a median above 0 the GPU must reach
    ``REPLAY_OUTLIER_FACTOR`` times it (and ``REPLAY_OUTLIER_MIN``); when every peer has none,
    any replay names the GPU (``warn`` from ``REPLAY_OUTLIER_MIN``, else ``info``).
    """
    findings: list[Finding] = []
    for group in identical_peer_groups(ctx):
        peers = [g for g in group if g.replay_count is not None]
        if len(peers) < 2:
            continue
        for gpu in peers:
            if (gpu.replay_count or 0) <= 0:
                continue  # no replay: not an outlier (and no peer list to build for it)
            finding = _replay_outlier(gpu, [p.replay_count or 0 for p in peers if p is not gpu])
            if finding is not None:
                findings.append(finding)
    return findings


def _replay_outlier(gpu: Gpu, others: list[int]) -> Finding | None:
    median = _median(others)
    count = gpu.replay_count or 0
    if count <= 0:
        return None
    if median > 0 and not (
        count >= config.REPLAY_OUTLIER_MIN and count >= config.REPLAY_OUTLIER_FACTOR * median
    ):
        return None
    severity: Severity = "warn" if count >= config.REPLAY_OUTLIER_MIN else "info"
    peers_text = (
        "have none"
        if median == 0
        else f"have a median of {median:g} ({outlier_factor(count, median)})"
    )
    return Finding(
        severity,
        f"{gpu_ref(gpu)} has {count} PCIe replays while its {len(others)} identical peer(s) "
        f"{peers_text}: its link (slot, riser, cable) is the suspect",
        subjects=[gpu.label],
        evidence=[
            _ev("replays", count, "replays", gpu.label),
            _ev("peers' median", median, "replays"),
            _ev("outlier factor", outlier_factor(count, median)),
        ],
        remediation=[
            "Swap the GPU with a peer's slot: if the replays follow the slot, "
            "the slot or riser is at fault; if they follow the card, the card.",
            _RESEAT,
        ],
        confidence="medium" if severity == "warn" else "low",
    )


def _aer_counts(obj: Gpu | PcieHop) -> tuple[int | None, int | None, int | None]:
    fatal, nonfatal = obj.aer_fatal, obj.aer_nonfatal
    if isinstance(obj, Gpu):
        fatal = fatal if fatal is not None else obj.pcie_counters.get("fatal_error")
        nonfatal = nonfatal if nonfatal is not None else obj.pcie_counters.get("non_fatal_error")
    return obj.aer_correctable, nonfatal, fatal


def _aer_findings(ctx: Context) -> tuple[list[Finding], bool]:
    """AER findings for every GPU and every port of its path (ports deduplicated)."""
    findings: list[Finding] = []
    seen_any = False
    # Port -> the port, the GPUs below it, its position in the first path and that GPU.
    ports: dict[str, tuple[PcieHop, list[str], int, Gpu]] = {}
    for gpu in ctx.gpus:
        counts = _aer_counts(gpu)
        if counts != (None, None, None):
            seen_any = True
            if _counted(counts):  # what names the GPU is built only when it has errors
                findings.extend(
                    _aer_one(
                        ctx,
                        gpu.label,
                        f"on {gpu.label}",
                        [gpu.label],
                        counts,
                        _limit_link(gpu),
                        bus_id=gpu.bus_id,
                    )
                )
        for i, hop in enumerate(gpu.path):
            entry = ports.get(hop.bus_id)
            if entry is None:
                ports[hop.bus_id] = (hop, [gpu.label], i, gpu)
            elif gpu.label not in entry[1]:
                entry[1].append(gpu.label)
    for hop, gpus, position, first_gpu in ports.values():
        counts = _aer_counts(hop)
        if counts == (None, None, None):
            continue
        seen_any = True
        if not _counted(counts):
            continue
        place = (
            f"at the link partner {_port_name(hop)} of {_names(gpus)}"
            if position == 0
            else f"on {_port_name(hop)} (carrying {_names(gpus)})"
        )
        link = _limit_link(first_gpu)
        findings.extend(
            _aer_one(
                ctx,
                hop.bus_id,
                place,
                gpus,
                counts,
                (hop.current_gen or link[0], hop.current_width or link[1]),
                bus_id=hop.bus_id,
            )
        )
    return findings, seen_any


def _counted(counts: tuple[int | None, int | None, int | None]) -> bool:
    """Whether AER counts ``(correctable, non-fatal, fatal)`` hold an error to report."""
    correctable, nonfatal, fatal = counts
    return bool((fatal or 0) > 0 or (nonfatal or 0) > 0 or correctable)


def _aer_one(
    ctx: Context,
    who: str,
    place: str,
    gpus: list[str],
    counts: tuple[int | None, int | None, int | None],
    link: tuple[int | None, int | None],
    bus_id: str | None,
) -> list[Finding]:
    """AER findings of one device: ``who`` names it in evidence, ``place`` in summaries."""
    correctable, nonfatal, fatal = counts
    if not _counted(counts):
        return []  # no error counted: nothing to say, nothing to build
    subjects = list(dict.fromkeys([*gpus, *([bus_id] if bus_id and bus_id != who else [])]))
    if who not in subjects:
        subjects.insert(0, who)
    findings: list[Finding] = []
    evidence = [
        _ev("AER correctable", correctable, "errors", who),
        _ev("AER non-fatal", nonfatal, "errors", who),
        _ev("AER fatal", fatal, "errors", who),
    ]
    device = bus_id or "<bus id>"
    if (fatal or 0) > 0 or (nonfatal or 0) > 0:
        findings.append(
            Finding(
                "fail",
                f"uncorrectable PCIe errors {place}: {fatal or 0} fatal, {nonfatal or 0} non-fatal",
                subjects=subjects,
                evidence=evidence,
                remediation=[
                    f"Read the details: `cat /sys/bus/pci/devices/{device}/aer_dev_fatal "
                    f"/sys/bus/pci/devices/{device}/aer_dev_nonfatal` and `sudo dmesg | grep "
                    "-i aer`.",
                    "Drain the node if jobs crash or hang; " + _RESEAT[0].lower() + _RESEAT[1:],
                    "Run the platform's PCIe diagnostics and `dcgmi diag -r 3`.",
                ],
                confidence="high",
            )
        )
    if correctable:
        rate = _per_minute(correctable, ctx.host.uptime_s)
        limit = config.aer_correctable_limit_per_minute(*link)
        if rate is not None and rate > limit:
            findings.append(
                Finding(
                    "warn",
                    f"{correctable} correctable PCIe errors {place}: an average of "
                    f"{rate:.1f}/min since boot (limit {limit}/min)",
                    subjects=subjects,
                    evidence=[
                        *evidence,
                        _ev("average since boot", round(rate, 2), "errors/min", who),
                    ],
                    remediation=[
                        f"See which kinds: `cat /sys/bus/pci/devices/{device}/aer_dev_correctable`"
                        " (Receiver/Bad TLP/Bad DLLP errors point at signal integrity).",
                        _RESEAT,
                    ],
                    confidence="low",
                )
            )
        else:
            detail = (
                f"average {rate:.3g}/min since boot, under the {limit}/min limit"
                if rate is not None
                else "no time base to turn it into a rate"
            )
            findings.append(
                Finding(
                    "info",
                    f"{correctable} correctable PCIe errors {place} ({detail})",
                    subjects=subjects,
                    evidence=evidence,
                    confidence="low",
                )
            )
    return findings


@check("pcie.errors")
def pcie_errors(ctx: Context) -> list[Finding]:
    """Judge replay counters and AER counters on each GPU and along its PCIe path.

    Args:
        ctx: The machine.

    Returns:
        Findings per GPU/port with errors, a pass when every known counter is clean, a skip
        when no counter is known.
    """
    if not ctx.gpus:
        return [_no_gpu(ctx)]
    findings: list[Finding] = []
    unknown_replays = [g for g in ctx.gpus if g.replay_count is None]
    for gpu in ctx.gpus:
        findings.extend(_replay_findings(ctx, gpu))
    findings.extend(_replay_outliers(ctx))
    aer, aer_seen = _aer_findings(ctx)
    findings.extend(aer)

    if len(unknown_replays) == len(ctx.gpus) and not aer_seen:
        reasons = sorted({g.why("replay_count") or "" for g in ctx.gpus} - {""})
        return [
            Finding(
                "skip",
                "no PCIe error counter is known for any GPU"
                + (f" ({'; '.join(reasons)})" if reasons else ""),
                needs=(
                    "replay counters come from NVML (NOT_SUPPORTED on GeForce) or `nvidia-smi "
                    "-q` (Replays Since Reset); AER counters from a live capture on a kernel "
                    "with AER (`/sys/bus/pci/devices/*/aer_dev_*`): run `pcidoc check --only "
                    "pcie.errors` on the machine"
                ),
            )
        ]
    clean = not findings
    if unknown_replays:
        reasons = sorted({g.why("replay_count") or "not in the capture" for g in unknown_replays})
        findings.append(
            Finding(
                "info",
                f"replay counter unknown for {_names(g.label for g in unknown_replays)} "
                f"({'; '.join(reasons)})",
                subjects=[g.label for g in unknown_replays],
                confidence="low",
            )
        )
    if clean:
        known = [g for g in ctx.gpus if g.replay_count is not None]
        basis = []
        if known:
            basis.append(f"0 replays on {_names(g.label for g in known)}")
        if aer_seen:
            basis.append("no AER errors on the GPUs or their ports")
        findings.append(
            Finding(
                "pass",
                "; ".join(basis)
                + " (counters are cumulative since the driver loaded)"
                + (judged_of(ctx, len(known)) if known else ""),
                evidence=[_ev("uptime", ctx.host.uptime_s, "s")],
                confidence="medium" if unknown_replays else "high",
            )
        )
    return _with_gap(ctx, findings)

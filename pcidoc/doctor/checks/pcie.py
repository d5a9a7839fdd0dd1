"""PCIe checks: ``pcie.link-speed``, ``pcie.errors`` and ``pcie.shared-uplink``.

* ``pcie.link-speed``: a link trained below what both ends support (downtrained, judged only
  under load or in P0) versus a link capped by the slot, the host or an upstream port
  (slot-limited); upstream ports on the path whose own link runs below its ceiling.
* ``pcie.errors``: replay counters against DCGM's generation-scaled rate, replay outliers
  among identical GPUs, rollovers and AER counters on the GPU and every port of its path.
* ``pcie.shared-uplink``: GPUs behind one switch uplink that contend for it during
  concurrent host transfers, and switch pairs without P2P whose copies cross the uplink twice.

All three are pure functions of the capture; every threshold is in :mod:`pcidoc.doctor.config`.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pcidoc.doctor import config
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.checks._common import no_gpu as _no_gpu
from pcidoc.doctor.checks._common import not_applicable
from pcidoc.doctor.checks._common import with_gap as _with_gap
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import gpu_names as _names
from pcidoc.doctor.wording import gpu_ref, outlier_factor
from pcidoc.model.facts import Gpu, PcieHop
from pcidoc.model.links import is_nvlink
from pcidoc.model.report import Confidence, Severity
from pcidoc.model.units import link_label, pcie_raw_gbps

_RESEAT = (
    "Reseat the GPU (and its riser or cable), check retimers, and check the BIOS slot settings "
    "(forced generation, bifurcation); update the BIOS and the GPU VBIOS."
)
_LOAD_HINT = "`pcidoc check --probes quick` (reads the link while it copies data)"


# ----------------------------------------------------------------------------- helpers


def _kind(ctx: Context) -> str:
    return ctx.capture.origin.kind


def _model(gen: int | None, width: int | None) -> float | None:
    return config.pcie_nccl_model_gbps(gen, width)


def _ceiling(gen: int | None, width: int | None) -> str:
    """``"Gen3 x16 = 12 GB/s model"`` (NCCL's link model), or just the label when unknown."""
    model = _model(gen, width)
    label = link_label(gen, width)
    return f"{label} = {model:.0f} GB/s model" if model is not None else label


def _min_known(*values: int | None) -> int | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None


_ROLE_NAMES = {
    "root_port": "root port",
    "switch_upstream": "switch uplink port",
    "switch_downstream": "switch downstream port",
    "bridge": "bridge",
}


def _port_name(hop: PcieHop) -> str:
    """``"switch uplink port 0000:10:00.0"``."""
    return f"{_ROLE_NAMES.get(hop.role or '', 'upstream port')} {hop.bus_id}"


def _vm_note() -> str:
    return (
        "in a VM the PCIe ports the guest sees are virtual and often report arbitrary or lower "
        "speeds"
    )


@dataclass
class _LinkUnderLoad:
    """What the GPU's link looked like and whether that reading may be judged."""

    gen: int | None
    width: int | None
    state: str
    """``measured`` (a probe read it while copying), ``p0``, ``idle`` or ``unknown``."""
    pstate: int | None = None


def _link_under_load(ctx: Context, gpu: Gpu) -> _LinkUnderLoad:
    measured = [
        t
        for t in ctx.measurements.transfers
        if t.gpu == gpu.index
        and (t.link_gen_under_load is not None or t.link_width_under_load is not None)
    ]
    if measured:
        gens = [t.link_gen_under_load for t in measured if t.link_gen_under_load is not None]
        widths = [t.link_width_under_load for t in measured if t.link_width_under_load is not None]
        return _LinkUnderLoad(
            gen=max(gens) if gens else gpu.pcie.current_gen,
            width=max(widths) if widths else gpu.pcie.current_width,
            state="measured",
            pstate=next(
                (t.pstate_under_load for t in measured if t.pstate_under_load is not None), None
            ),
        )
    pstate = gpu.pstate
    if pstate is None:
        state = "unknown"
    elif pstate == config.LINK_JUDGE_PSTATE:
        state = "p0"
    else:
        state = "idle"
    return _LinkUnderLoad(gpu.pcie.current_gen, gpu.pcie.current_width, state, pstate)


def _possible(gpu: Gpu, vm: bool) -> tuple[int | None, int | None]:
    """Max gen/width possible with this GPU in this slot (NVML's Max), else derived."""
    link = gpu.pcie
    slot = gpu.path[0] if gpu.path else None
    gen = link.max_gen
    if gen is None:
        gen = _min_known(
            link.device_max_gen, None if vm else link.host_max_gen, slot.max_gen if slot else None
        )
    width = link.max_width
    if width is None:
        width = _min_known(link.device_max_width, slot.max_width if slot else None)
    return gen, width


def _pinned_h2d(ctx: Context, index: int) -> float | None:
    solo = [
        t.bandwidth_gbps
        for t in ctx.transfers(gpu=index, direction="h2d", memory="pinned")
        if not _is_concurrent(t.context)
    ]
    return max(solo) if solo else None


def _is_concurrent(context: str | None) -> bool:
    return bool(context) and "concurrent" in (context or "").lower()


# ========================================================================= pcie.link-speed


def _downtrain_findings(ctx: Context, gpu: Gpu, vm: bool) -> list[Finding]:
    subject = gpu.label
    now = _link_under_load(ctx, gpu)
    max_gen, max_width = _possible(gpu, vm)
    findings: list[Finding] = []
    gen_low = now.gen is not None and max_gen is not None and now.gen < max_gen
    width_low = now.width is not None and max_width is not None and now.width < max_width
    evidence = [
        _ev("link now", link_label(now.gen, now.width), subject=subject),
        _ev("max possible (GPU and slot)", link_label(max_gen, max_width), subject=subject),
        _ev("P-state", None if now.pstate is None else f"P{now.pstate}", subject=subject),
        _ev(
            "reading taken",
            {
                "measured": "under load by a pcidoc probe",
                "p0": "in P0 at collection time",
                "idle": "while idle (not P0)",
                "unknown": "P-state unknown",
            }[now.state],
            subject=subject,
        ),
    ]
    if not (gen_low or width_low):
        return findings
    now_model, max_model = _model(now.gen, now.width), _model(max_gen, max_width)
    if now_model is not None:
        evidence.append(_ev("link model now", round(now_model, 1), "GB/s", subject))
    if max_model is not None:
        evidence.append(_ev("link model at max", round(max_model, 1), "GB/s", subject))
    cost = f"{_ceiling(now.gen, now.width)} vs {_ceiling(max_gen, max_width)}"
    judged = now.state in ("measured", "p0")
    where = "under load" if now.state == "measured" else "in P0"

    if judged:
        what = []
        if gen_low:
            what.append(f"Gen{now.gen} of Gen{max_gen}")
        if width_low:
            what.append(f"x{now.width} of x{max_width}")
        remediation = [
            _RESEAT,
            "Check the link while loaded: `nvidia-smi -q -d PCIE -i "
            f"{gpu.index}` (Link Gen/Width current vs max) or `sudo lspci -vv -s "
            f"{gpu.bus_id or '<bus id>'} | grep -E 'LnkCap|LnkSta'`.",
            "If it persists, move the GPU to another CPU-attached x16 slot to tell a bad slot "
            "from a bad card, then run `dcgmi diag -r 2`.",
        ]
        if vm and width_low and not gen_low:
            return [
                Finding(
                    "warn",
                    f"{subject} runs at x{now.width} of x{max_width} {where} ({cost}); this is a "
                    "VM, where a cloud instance type can expose a narrower link by design",
                    subjects=[subject],
                    evidence=evidence,
                    remediation=[
                        "Compare with the instance type's documented PCIe width; on bare metal "
                        "this would be a failure.",
                        *remediation[1:2],
                    ],
                    confidence="low",
                )
            ]
        confidence: Confidence = "high" if now.state == "measured" else "medium"
        if vm:
            confidence = "low" if confidence == "medium" else "medium"
        if now.state != "measured":
            remediation.insert(0, f"Confirm under load: {_LOAD_HINT}.")
        return [
            Finding(
                "fail",
                f"{subject} link downtrained {where}: {' and '.join(what)} ({cost})",
                subjects=[subject],
                evidence=evidence,
                remediation=remediation,
                confidence=confidence,
            )
        ]

    # Idle or unknown P-state: the generation drop is power management, not a fault.
    state_text = f"idle (P{now.pstate})" if now.state == "idle" else "in an unknown P-state"
    if gen_low:
        findings.append(
            Finding(
                "info",
                f"{subject} at Gen{now.gen} while {state_text}, max Gen{max_gen}: an idle link "
                f"downclocks to save power; it must be measured under load: {_LOAD_HINT}",
                subjects=[subject],
                evidence=evidence,
                remediation=[f"Judge it under load: {_LOAD_HINT}."],
                confidence="medium",
            )
        )
    if width_low:
        findings.append(
            Finding(
                "warn",
                f"{subject} at x{now.width} of x{max_width} while {state_text} ({cost}); width "
                "rarely drops at idle, so this is probably a real narrow link",
                subjects=[subject],
                evidence=evidence,
                remediation=[f"Confirm under load: {_LOAD_HINT}.", _RESEAT],
                confidence="low",
            )
        )
    return findings


def _slot_limit_findings(ctx: Context, gpu: Gpu, vm: bool) -> list[Finding]:
    """The slot, the host or the root port caps what this GPU could do."""
    subject = gpu.label
    link = gpu.pcie
    now = _link_under_load(ctx, gpu)
    device_gen = link.device_max_gen or link.max_gen
    device_width = link.device_max_width or link.max_width
    slot = gpu.path[0] if gpu.path else None
    cap_gen = _min_known(link.max_gen, slot.max_gen if slot else None)
    cap_width = _min_known(link.max_width, slot.max_width if slot else None)
    findings: list[Finding] = []

    # nvidia-smi's "Host Max" below the device's max.
    host = link.host_max_gen
    if host is not None and device_gen is not None and host < device_gen:
        running = now.gen if now.gen is not None else link.current_gen
        if running is not None and running > host:
            findings.append(
                Finding(
                    "info",
                    f"{subject}: the host side reports Gen{host} max but the link runs at "
                    f"Gen{running}: the reported host value is not the real limit (typical of a "
                    "VM's virtual root port)",
                    subjects=[subject],
                    evidence=[
                        _ev("host max generation", host, subject=subject),
                        _ev("device max generation", device_gen, subject=subject),
                        _ev("current generation", running, subject=subject),
                    ],
                    confidence="low" if vm else "medium",
                )
            )
        else:
            cap_gen = _min_known(cap_gen, host)

    gen_capped = cap_gen is not None and device_gen is not None and cap_gen < device_gen
    width_capped = cap_width is not None and device_width is not None and cap_width < device_width
    if not (gen_capped or width_capped):
        return findings
    lost = f"{_ceiling(cap_gen or device_gen, cap_width or device_width)} vs " + _ceiling(
        device_gen, device_width
    )
    evidence = [
        _ev("GPU supports", link_label(device_gen, device_width), subject=subject),
        _ev("slot/host allows", link_label(cap_gen, cap_width), subject=subject),
    ]
    capped_model = _model(cap_gen or device_gen, cap_width or device_width)
    full_model = _model(device_gen, device_width)
    if capped_model is not None and full_model is not None:
        evidence.append(_ev("ceiling lost", round(full_model - capped_model, 1), "GB/s", subject))
    what = []
    if gen_capped:
        what.append(f"Gen{cap_gen} slot for a Gen{device_gen} GPU")
    if width_capped:
        what.append(f"x{cap_width} slot for an x{device_width} GPU")
    summary = f"{subject} slot-limited: {' and '.join(what)} ({lost})"
    remediation = [
        "Move the GPU to a slot wired for its full generation and width (check the board "
        "manual: some x16 slots are x8 electrically or share lanes).",
        "Check BIOS settings that force a lower generation or split the slot "
        "(bifurcation) and update the BIOS.",
    ]
    if not vm:
        return [
            *findings,
            Finding(
                "warn",
                summary,
                subjects=[subject],
                evidence=evidence,
                remediation=remediation,
                confidence="high",
            ),
        ]
    measured = _pinned_h2d(ctx, gpu.index)
    raw_cap = pcie_raw_gbps(cap_gen or device_gen, cap_width or device_width)
    if measured is not None and raw_cap is not None:
        evidence.append(_ev("measured pinned H2D", round(measured, 1), "GB/s", subject))
        if measured <= raw_cap:
            return [
                *findings,
                Finding(
                    "warn",
                    f"{summary}; measured pinned H2D {measured:.1f} GB/s fits under that cap",
                    subjects=[subject],
                    evidence=evidence,
                    remediation=[
                        "Ask the cloud provider / hypervisor admin which PCIe generation "
                        "and width the instance exposes.",
                        *remediation,
                    ],
                    confidence="medium",
                ),
            ]
        return [
            *findings,
            Finding(
                "info",
                f"{subject}: the VM reports a slot cap ({what[0]}) but measured pinned H2D "
                f"{measured:.1f} GB/s exceeds that cap, so the reported value is virtual",
                subjects=[subject],
                evidence=evidence,
                confidence="medium",
            ),
        ]
    return [
        *findings,
        Finding(
            "info",
            f"{summary}; {_vm_note()}, so this may not be real",
            subjects=[subject],
            evidence=evidence,
            remediation=[f"Measure to confirm: {_LOAD_HINT}."],
            confidence="low",
        ),
    ]


@dataclass
class _HopIssue:
    hop: PcieHop
    gpus: list[str] = field(default_factory=list)
    loaded: bool = False


def _link_partner(path: Sequence[PcieHop], i: int) -> PcieHop | None:
    """The port at the other end of ``path[i]``'s link, when the roles say which it is."""
    hop = path[i]
    if hop.role == "switch_upstream":
        return path[i + 1] if i + 1 < len(path) else None
    if hop.role in ("root_port", "switch_downstream") and i >= 1:
        return path[i - 1]
    # Unknown role: the neighbour reporting the same current speed/width shares the link.
    for j in (i - 1, i + 1):
        if 1 <= j < len(path):
            other = path[j]
            if (other.current_gen, other.current_width) == (hop.current_gen, hop.current_width):
                return other
    return None


def _upstream_findings(ctx: Context, vm: bool) -> list[Finding]:
    """Upstream ports whose own link is downtrained, or whose ceiling caps the GPUs below."""
    downtrained: dict[frozenset[str], _HopIssue] = {}
    capping: dict[str, _HopIssue] = {}
    for gpu in ctx.gpus:
        if len(gpu.path) < 2:
            continue
        loaded = _link_under_load(ctx, gpu).state in ("measured", "p0")
        gpu_gen, gpu_width = _possible(gpu, vm)
        for i in range(1, len(gpu.path)):
            hop = gpu.path[i]
            partner = _link_partner(gpu.path, i)
            key = frozenset({hop.bus_id, partner.bus_id if partner else hop.bus_id})
            top_gen = _min_known(hop.max_gen, partner.max_gen if partner else None)
            top_width = _min_known(hop.max_width, partner.max_width if partner else None)
            slow = hop.current_gen is not None and top_gen is not None and hop.current_gen < top_gen
            narrow = (
                hop.current_width is not None
                and top_width is not None
                and hop.current_width < top_width
            )
            if slow or narrow:
                issue = downtrained.setdefault(key, _HopIssue(hop))
                if gpu.label not in issue.gpus:
                    issue.gpus.append(gpu.label)
                issue.loaded = issue.loaded or loaded
            caps = (hop.max_gen is not None and gpu_gen is not None and hop.max_gen < gpu_gen) or (
                hop.max_width is not None and gpu_width is not None and hop.max_width < gpu_width
            )
            if caps:
                issue = capping.setdefault(hop.bus_id, _HopIssue(hop))
                if gpu.label not in issue.gpus:
                    issue.gpus.append(gpu.label)

    findings: list[Finding] = []
    for issue in downtrained.values():
        hop = issue.hop
        evidence = [
            _ev("link now", link_label(hop.current_gen, hop.current_width), subject=hop.bus_id),
            _ev("port max", link_label(hop.max_gen, hop.max_width), subject=hop.bus_id),
            _ev("GPUs behind it", _names(issue.gpus), subject=hop.bus_id),
        ]
        summary = (
            f"{_port_name(hop)} runs at {link_label(hop.current_gen, hop.current_width)}"
            f" below its {link_label(hop.max_gen, hop.max_width)} ceiling; it carries "
            f"{_names(issue.gpus)}"
        )
        if vm:
            findings.append(
                Finding(
                    "info",
                    f"{summary} ({_vm_note()})",
                    subjects=[hop.bus_id, *issue.gpus],
                    evidence=evidence,
                    confidence="low",
                )
            )
            continue
        findings.append(
            Finding(
                "fail" if issue.loaded else "warn",
                summary,
                subjects=[hop.bus_id, *issue.gpus],
                evidence=evidence,
                remediation=[
                    f"Check the port: `sudo lspci -vv -s {hop.bus_id} | grep -E "
                    "'LnkCap|LnkSta'` (a downgraded link shows `(downgraded)` in LnkSta).",
                    "Reseat the switch board / riser or cable that this port belongs to and "
                    "check the BIOS PCIe settings for that slot.",
                    f"Confirm under load: {_LOAD_HINT}.",
                ],
                confidence="medium",
            )
        )
    for issue in capping.values():
        hop = issue.hop
        summary = (
            f"{_port_name(hop)} supports only "
            f"{_ceiling(hop.max_gen, hop.max_width)}, below what {_names(issue.gpus)} could "
            "use"
        )
        evidence = [
            _ev("port max", link_label(hop.max_gen, hop.max_width), subject=hop.bus_id),
            _ev("GPUs behind it", _names(issue.gpus), subject=hop.bus_id),
        ]
        findings.append(
            Finding(
                "info" if vm else "warn",
                f"{summary} ({_vm_note()})" if vm else summary,
                subjects=[hop.bus_id, *issue.gpus],
                evidence=evidence,
                remediation=[]
                if vm
                else [
                    "Host transfers of these GPUs are capped by this port: use a slot attached "
                    "to a faster root port or switch, or accept the lower ceiling.",
                ],
                confidence="low" if vm else "medium",
            )
        )
    return findings


@check("pcie.link-speed", "PCIe link speed and width", needs="facts")
def pcie_link_speed(ctx: Context) -> list[Finding]:
    """Find downtrained links (judged under load/P0 only) and slot-limited GPUs.

    Args:
        ctx: The machine.

    Returns:
        One finding per problem, an aggregate pass for healthy GPUs, info/skip for what could
        not be judged.
    """
    if not ctx.gpus:
        return [_no_gpu(ctx)]
    vm = bool(ctx.is_vm)
    findings: list[Finding] = []
    healthy: list[str] = []
    unknown: list[str] = []
    idle_only: list[str] = []
    for gpu in ctx.gpus:
        if (
            gpu.pcie.current_gen is None
            and gpu.pcie.current_width is None
            and not any(
                t.gpu == gpu.index and t.link_gen_under_load is not None
                for t in ctx.measurements.transfers
            )
        ):
            unknown.append(gpu.label)
            continue
        own = _downtrain_findings(ctx, gpu, vm) + _slot_limit_findings(ctx, gpu, vm)
        findings.extend(own)
        if not any(f.severity in ("warn", "fail") for f in own):
            healthy.append(gpu.label)
            if _link_under_load(ctx, gpu).state in ("idle", "unknown") and any(
                f.severity == "info" for f in own
            ):
                idle_only.append(gpu.label)
    findings.extend(_upstream_findings(ctx, vm))

    if unknown and not healthy and not findings:
        reasons = sorted({g.why("pcie") or "" for g in ctx.gpus if g.label in unknown} - {""})
        return [
            Finding(
                "skip",
                "PCIe link state of the GPUs is not in this capture"
                + (f" ({'; '.join(reasons)})" if reasons else ""),
                needs="run `pcidoc check` on the machine, or import `nvidia-smi -q` "
                "(its PCI section) with `pcidoc import`",
            )
        ]
    if unknown:
        findings.append(
            Finding(
                "info",
                f"not judged: {_names(unknown)} (PCIe link state not in the capture)",
                subjects=unknown,
                confidence="low",
                needs="import `nvidia-smi -q` for every GPU, or run `pcidoc check` on the machine",
            )
        )
    fine = [g for g in healthy if g not in idle_only]
    if fine:
        links = sorted({link_label(*_possible(g, vm)) for g in ctx.gpus if g.label in fine})
        findings.append(
            Finding(
                "pass",
                f"{_names(fine)} at {'its' if len(fine) == 1 else 'their'} max link "
                f"({', '.join(links)})"
                + (f"; {_names(unknown)} not in the capture" if unknown else ""),
                evidence=[_ev("GPUs at max link", len(fine), "GPUs")],
                confidence="high" if not unknown else "medium",
            )
        )
    return _with_gap(ctx, findings)


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
    if count is None:
        return []
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
    rollovers = gpu.replay_rollover_count
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
            finding = _replay_outlier(gpu, [p.replay_count or 0 for p in peers if p is not gpu])
            if finding is not None:
                findings.append(finding)
    return findings


def _replay_outlier(gpu: Gpu, others: list[int]) -> Finding | None:
    median = statistics.median(others)
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
    ports: dict[str, tuple[PcieHop, list[str], int, tuple[int | None, int | None]]] = {}
    for gpu in ctx.gpus:
        correctable, nonfatal, fatal = _aer_counts(gpu)
        if any(v is not None for v in (correctable, nonfatal, fatal)):
            seen_any = True
        findings.extend(
            _aer_one(
                ctx,
                gpu.label,
                f"on {gpu.label}",
                [gpu.label],
                (correctable, nonfatal, fatal),
                _limit_link(gpu),
                bus_id=gpu.bus_id,
            )
        )
        for i, hop in enumerate(gpu.path):
            entry = ports.get(hop.bus_id)
            if entry is None:
                ports[hop.bus_id] = (hop, [gpu.label], i, _limit_link(gpu))
            elif gpu.label not in entry[1]:
                entry[1].append(gpu.label)
    for hop, gpus, position, link in ports.values():
        correctable, nonfatal, fatal = _aer_counts(hop)
        if any(v is not None for v in (correctable, nonfatal, fatal)):
            seen_any = True
        place = (
            f"at the link partner {_port_name(hop)} of {_names(gpus)}"
            if position == 0
            else f"on {_port_name(hop)} (carrying {_names(gpus)})"
        )
        findings.extend(
            _aer_one(
                ctx,
                hop.bus_id,
                place,
                gpus,
                (correctable, nonfatal, fatal),
                (hop.current_gen or link[0], hop.current_width or link[1]),
                bus_id=hop.bus_id,
            )
        )
    return findings, seen_any


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


@check("pcie.errors", "PCIe replays and AER errors", needs="facts")
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
                "; ".join(basis) + " (counters are cumulative since the driver loaded)",
                evidence=[_ev("uptime", ctx.host.uptime_s, "s")],
                confidence="medium" if unknown_replays else "high",
            )
        )
    return _with_gap(ctx, findings)


# ====================================================================== pcie.shared-uplink


@dataclass
class _Uplink:
    hop: PcieHop
    gpus: list[Gpu]


def _shared_uplinks(ctx: Context) -> list[_Uplink]:
    """Ports on the path of two or more GPUs: one per distinct GPU set, nearest the GPUs."""
    users: dict[str, list[Gpu]] = {}
    position: dict[str, int] = {}
    hops: dict[str, PcieHop] = {}
    for gpu in ctx.gpus:
        for i, hop in enumerate(gpu.path):
            users.setdefault(hop.bus_id, []).append(gpu)
            position[hop.bus_id] = min(position.get(hop.bus_id, i), i)
            hops.setdefault(hop.bus_id, hop)
    best: dict[frozenset[int], str] = {}
    for bus, gpus in users.items():
        if len(gpus) < 2:
            continue
        key = frozenset(g.index for g in gpus)
        current = best.get(key)
        if current is None or position[bus] < position[current]:
            best[key] = bus
    return [
        _Uplink(hops[bus], sorted(users[bus], key=lambda g: g.index))
        for key, bus in sorted(best.items(), key=lambda kv: (sorted(kv[0]), kv[1]))
    ]


def _uplink_finding(ctx: Context, uplink: _Uplink, vm: bool) -> Finding:
    hop = uplink.hop
    labels = [g.label for g in uplink.gpus]
    up_gen = hop.current_gen or hop.max_gen
    up_width = hop.current_width or hop.max_width
    up_model = _model(up_gen, up_width)
    gpu_models = [_model(*_possible(g, vm)) for g in uplink.gpus]
    demand = (
        sum(m for m in gpu_models if m is not None)
        if all(m is not None for m in gpu_models)
        else None
    )
    subjects = [*labels, hop.bus_id]
    evidence = [
        _ev("uplink port", hop.bus_id, subject=hop.bus_id),
        _ev("uplink link", link_label(up_gen, up_width), subject=hop.bus_id),
        _ev("uplink model", None if up_model is None else round(up_model, 1), "GB/s", hop.bus_id),
        _ev("GPUs behind it", len(labels), "GPUs", hop.bus_id),
        _ev(
            "their combined link model",
            None if demand is None else round(demand, 1),
            "GB/s",
            hop.bus_id,
        ),
    ]
    remediation = [
        "Data loading that feeds all these GPUs at once is capped by this uplink; stagger the "
        "host copies, keep batches resident on the GPU, or spread the job over GPUs behind "
        "different uplinks (`nvidia-smi topo -m`: pick GPUs that are not PIX/PXB to each other).",
    ]

    concurrent = {
        g.index: [
            t.bandwidth_gbps
            for t in ctx.transfers(gpu=g.index, direction="h2d", memory="pinned")
            if _is_concurrent(t.context)
        ]
        for g in uplink.gpus
    }
    if all(concurrent.values()):
        ratios = []
        for g in uplink.gpus:
            solo = _pinned_h2d(ctx, g.index)
            together = max(concurrent[g.index])
            evidence.append(_ev("concurrent pinned H2D", round(together, 1), "GB/s", g.label))
            if solo:
                evidence.append(_ev("solo pinned H2D", round(solo, 1), "GB/s", g.label))
                ratios.append(together / solo)
        total = sum(max(v) for v in concurrent.values())
        if ratios:
            worst = min(ratios)
            if worst < config.SHARED_UPLINK_CONCURRENT_WARN_FRACTION:
                return Finding(
                    "warn",
                    f"{_names(labels)} share uplink {hop.bus_id} "
                    f"({_ceiling(up_gen, up_width)}): concurrent H2D fell to {worst:.0%} of the "
                    f"solo rate (together {total:.1f} GB/s)",
                    subjects=subjects,
                    evidence=evidence,
                    remediation=remediation,
                    confidence="high",
                )
            return Finding(
                "pass",
                f"{_names(labels)} share uplink {hop.bus_id} but measured concurrent H2D held "
                f"{worst:.0%} of the solo rate",
                subjects=subjects,
                evidence=evidence,
                confidence="high",
            )

    if up_model is None or demand is None:
        return Finding(
            "info",
            f"{_names(labels)} share PCIe uplink {hop.bus_id}; its speed is unknown, so the "
            "contention cannot be quantified",
            subjects=subjects,
            evidence=evidence,
            remediation=remediation,
            confidence="medium",
        )
    ratio = demand / up_model
    if ratio > config.SHARED_UPLINK_OVERSUBSCRIBED_RATIO:
        each = up_model / len(labels)
        return Finding(
            "info",
            f"{_names(labels)} share uplink {hop.bus_id} ({_ceiling(up_gen, up_width)}): "
            f"together their links can move {demand:.0f} GB/s, so concurrent H2D gets about "
            f"{each:.0f} GB/s each ({ratio:.1f}x oversubscribed)",
            subjects=subjects,
            evidence=[*evidence, _ev("oversubscription", round(ratio, 2), "x", hop.bus_id)],
            remediation=[
                *remediation,
                "Measure it: `pcidoc check --probes full` (concurrent H2D).",
            ],
            confidence="low" if vm else "medium",
        )
    return Finding(
        "pass",
        f"{_names(labels)} share uplink {hop.bus_id} ({_ceiling(up_gen, up_width)}), which "
        f"covers their combined {demand:.0f} GB/s",
        subjects=subjects,
        evidence=evidence,
        confidence="medium",
    )


def _switch_pairs_from_matrix(ctx: Context) -> list[tuple[int, int, str]]:
    return [(a, b, link) for a, b, link in ctx.gpu_pairs() if link in ("PIX", "PXB")]


def _no_p2p_pairs(ctx: Context, pairs: Iterable[tuple[int, int, str]]) -> list[Finding]:
    """The GeForce trap: two GPUs under one switch without P2P copy through the uplink twice."""
    findings = []
    for a, b, link in pairs:
        code = ctx.p2p_code(a, b)
        cuda = ctx.can_access_peer(a, b)
        if (code is None or code in ("OK", "U")) and cuda is not False:
            continue
        subject = f"GPU{a}-GPU{b}"
        findings.append(
            Finding(
                "info",
                f"{subject} sit behind one PCIe switch ({link}) but cannot use P2P "
                f"({code or 'peer access refused'}): their copies go up the shared uplink to host "
                "memory and back down, so this pair can be slower than a pair on different root "
                "ports",
                subjects=[subject],
                evidence=[
                    _ev("link class", link, subject=subject),
                    _ev("P2P status", code, subject=subject),
                ],
                remediation=[
                    "For jobs on these GPUs prefer GPUs on different root ports, or accept the "
                    "host-staged path (NCCL uses SHM for it); consumer GPUs do not offer P2P "
                    "with the stock driver (NVIDIA/nccl#1309).",
                ],
                confidence="medium",
            )
        )
    return findings


@check("pcie.shared-uplink", "GPUs sharing a PCIe switch uplink", needs="facts")
def pcie_shared_uplink(ctx: Context) -> list[Finding]:
    """Find GPUs that share one switch uplink and quantify the contention.

    Uses the PCIe path of each GPU when known, else PIX/PXB pairs of the topology matrix;
    measured concurrent H2D (transfers whose ``context`` mentions ``concurrent``) wins over
    the arithmetic.

    Args:
        ctx: The machine.

    Returns:
        One finding per shared uplink (or inferred switch group), plus the no-P2P trap.
    """
    if len(ctx.gpus) < 2:
        if not ctx.gpus:
            return [_no_gpu(ctx)]
        gap = ctx.capture.unavailable.get("gpus")
        if gap:
            return [
                Finding(
                    "skip",
                    f"only {ctx.gpus[0].label} is in this capture ({gap}): cannot tell which "
                    "GPUs share an uplink",
                    needs="run `pcidoc check` on the machine, or import `nvidia-smi topo -m`",
                )
            ]
        return [not_applicable("one GPU, so no uplink is shared between GPUs")]
    if any(g.path for g in ctx.gpus):
        findings, switch_pairs = _uplinks_from_paths(ctx)
    elif not ctx.has_topology:
        return [
            Finding(
                "skip",
                "neither the PCIe tree nor a topology matrix is in this capture",
                needs="run `pcidoc check` on the machine (PCIe tree from sysfs), or import "
                "`nvidia-smi topo -m`",
            )
        ]
    else:
        switch_pairs = _switch_pairs_from_matrix(ctx)
        findings = _uplinks_from_matrix(ctx, switch_pairs)
        if (findings and findings[0].severity == "skip") or _is_flattened_finding(findings):
            return findings
    findings.extend(_no_p2p_pairs(ctx, switch_pairs))
    return _with_gap(ctx, findings)


def _uplinks_from_paths(ctx: Context) -> tuple[list[Finding], list[tuple[int, int, str]]]:
    """Shared uplinks read from each GPU's PCIe path (a live capture)."""
    vm = bool(ctx.is_vm)
    with_path = [g for g in ctx.gpus if g.path]
    uplinks = _shared_uplinks(ctx)
    findings = _fold_alike([_uplink_finding(ctx, u, vm) for u in uplinks])
    switch_pairs: list[tuple[int, int, str]] = []
    seen = set()
    for u in uplinks:
        idx = [g.index for g in u.gpus]
        for i, a in enumerate(idx):
            for b in idx[i + 1 :]:
                if (a, b) not in seen:
                    seen.add((a, b))
                    switch_pairs.append((a, b, ctx.gpu_link(a, b) or "same switch"))
    missing = [g.label for g in ctx.gpus if not g.path]
    if missing:
        findings.append(
            Finding(
                "info",
                f"PCIe path unknown for {_names(missing)}: not judged",
                subjects=missing,
                confidence="low",
                needs="a live capture (the PCIe tree comes from sysfs)",
            )
        )
    if not uplinks:
        findings.append(
            Finding(
                "pass",
                f"no uplink is shared: each of {_names(g.label for g in with_path)} has "
                "its own path to the CPU",
                confidence="high" if not missing else "medium",
            )
        )
    return findings, switch_pairs


_FLATTENED_TAIL = "the topology looks flattened by a hypervisor"


def _is_flattened_finding(findings: list[Finding]) -> bool:
    return len(findings) == 1 and _FLATTENED_TAIL in findings[0].summary


def _uplinks_from_matrix(ctx: Context, switch_pairs: list[tuple[int, int, str]]) -> list[Finding]:
    """Switch groups inferred from PIX/PXB pairs of the topology matrix (no PCIe tree)."""
    findings = []
    groups = _union([(a, b) for a, b, _ in switch_pairs])
    for group in groups:
        labels = [f"GPU{i}" for i in sorted(group)]
        classes = sorted({link for a, b, link in switch_pairs if a in group and b in group})
        findings.append(
            Finding(
                "info",
                f"{_names(labels)} are {'/'.join(classes)} to each other in the topology "
                "matrix: probably behind one PCIe switch, so concurrent host transfers share "
                "its uplink",
                subjects=labels,
                evidence=[_ev("link class", "/".join(classes), subject="-".join(labels))],
                remediation=[
                    "The matrix cannot show the uplink's speed: run `pcidoc check` on "
                    "the machine to read the PCIe tree, or measure with "
                    "`pcidoc check --probes full`."
                ],
                confidence="low",
            )
        )
    if groups:
        return findings
    return [_no_switch_in_matrix(ctx)]


def _no_switch_in_matrix(ctx: Context) -> Finding:
    """No PIX/PXB pair in the matrix: hidden by NVLink, flattened by a hypervisor, or none."""
    pairs = list(ctx.gpu_pairs())
    nv_pairs = [(a, b) for a, b, link in pairs if is_nvlink(link)]
    unknown_pairs = [(a, b) for a, b, link in pairs if link is None]
    if nv_pairs and len(nv_pairs) == len(pairs):
        return Finding(
            "skip",
            "every GPU pair is NVLink in the matrix, which hides the PCIe switches",
            needs="run `pcidoc check` on the machine to read the PCIe tree",
        )
    if ctx.flattened_view or (ctx.is_vm is not False and _looks_flattened(ctx)):
        why = ctx.flattened_view or "every GPU pair is SYS while all GPUs sit on one NUMA node"
        return Finding(
            "info",
            f"{why}: {_FLATTENED_TAIL}, so PCIe switches (if any) are hidden",
            remediation=[
                "Ask the provider for the real PCIe topology and give it to NCCL "
                "with `NCCL_TOPO_FILE=<xml>` if the hypervisor does not inject one.",
            ],
            confidence="low",
            needs="run `pcidoc check` on the host, or measure concurrent H2D with "
            "`pcidoc check --probes full`",
        )
    note = "; NVLink or unknown pairs hide their PCIe path" if nv_pairs or unknown_pairs else ""
    return Finding(
        "pass",
        "no GPU pair is PIX/PXB in the topology matrix: no shared switch uplink seen" + note,
        confidence="low" if note else "medium",
    )


_FOLD_MIN = 4
"""From this many uplink findings that read alike, they are reported as one."""
_GPU_OR_BDF = re.compile(
    r"\bGPUs [0-9,-]+|\bGPU\d+\b|\b[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\b"
)


def _fold_alike(findings: list[Finding]) -> list[Finding]:
    """Uplink findings that differ only in GPU names and bus ids, folded into one.

    A big tray has dozens of identical switches (36 on a 72-GPU NVLink domain): one finding
    that names them all reads better than 36 copies.
    """
    groups: dict[tuple[str, str, str], list[Finding]] = {}
    for finding in findings:
        shape = _GPU_OR_BDF.sub("#", finding.summary)
        groups.setdefault((finding.severity, finding.confidence, shape), []).append(finding)
    out: list[Finding] = []
    for group in groups.values():
        if len(group) < _FOLD_MIN:
            out.extend(group)
            continue
        first = group[0]
        ports = [s for f in group for s in f.subjects if not s.startswith("GPU")]
        subjects = list(dict.fromkeys(s for f in group for s in f.subjects))
        shown = ", ".join(ports[:6]) + (f" and {len(ports) - 6} more" if len(ports) > 6 else "")
        out.append(
            Finding(
                first.severity,
                f"{len(group)} uplinks alike, e.g. {first.summary}",
                subjects=subjects,
                evidence=[*first.evidence, _ev("uplinks like this one", shown)],
                remediation=first.remediation,
                confidence=first.confidence,
            )
        )
    return out


def _looks_flattened(ctx: Context) -> bool:
    """All GPU pairs SYS while every GPU reports the same NUMA node (or none): a VM's view."""
    pairs = [link for _, _, link in ctx.gpu_pairs()]
    nodes = {g.numa_node if g.numa_node is not None and g.numa_node >= 0 else -1 for g in ctx.gpus}
    return bool(pairs) and all(link == "SYS" for link in pairs) and len(nodes) == 1


def _union(pairs: Iterable[tuple[int, int]]) -> list[set[int]]:
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        parent[find(a)] = find(b)
    groups: dict[int, set[int]] = {}
    for x in list(parent):
        groups.setdefault(find(x), set()).add(x)
    return sorted(groups.values(), key=min)

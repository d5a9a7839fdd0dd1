"""The ``pcie.link-speed`` check."""

from __future__ import annotations

from collections.abc import Sequence

from pcidoc.doctor import config
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.checks._common import no_gpu as _no_gpu
from pcidoc.doctor.checks._common import with_gap as _with_gap
from pcidoc.doctor.checks.pcie._shared import (
    _RESEAT,
    _ceiling,
    _min_known,
    _model,
    _pinned_h2d,
    _port_name,
    _possible,
)
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import gpu_names as _names
from pcidoc.model.facts import Gpu, PcieHop
from pcidoc.model.report import Confidence
from pcidoc.model.units import link_label, pcie_raw_gbps

_LOAD_HINT = "`pcidoc check --probes quick` (reads the link while it copies data)"


def _vm_note() -> str:
    return (
        "in a VM the PCIe ports the guest sees are virtual and often report arbitrary or lower "
        "speeds"
    )


class _LinkUnderLoad:
    """What the GPU's link looked like and whether that reading may be judged."""

    __slots__ = ("gen", "pstate", "state", "width")

    def __init__(
        self, gen: int | None, width: int | None, state: str, pstate: int | None = None
    ) -> None:
        self.gen = gen
        self.width = width
        self.state = state
        """``measured`` (a probe read it while copying), ``p0``, ``idle`` or ``unknown``."""
        self.pstate = pstate


def _link_under_load(ctx: Context, gpu: Gpu) -> _LinkUnderLoad:
    """The GPU's link as last seen (asked several times per GPU: read once per run)."""
    memo = ctx.memo.setdefault("pcie.link_under_load", {})
    found = memo.get(id(gpu))
    if found is None:
        found = memo[id(gpu)] = _read_link_under_load(ctx, gpu)
    return found  # type: ignore[return-value]


def _read_link_under_load(ctx: Context, gpu: Gpu) -> _LinkUnderLoad:
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


# ========================================================================= pcie.link-speed


def _downtrain_findings(ctx: Context, gpu: Gpu, vm: bool) -> list[Finding]:
    subject = gpu.label
    now = _link_under_load(ctx, gpu)
    max_gen, max_width = _possible(gpu, vm)
    findings: list[Finding] = []
    gen_low = now.gen is not None and max_gen is not None and now.gen < max_gen
    width_low = now.width is not None and max_width is not None and now.width < max_width
    if not (gen_low or width_low):
        return findings
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


class _HopIssue:
    __slots__ = ("gpus", "hop", "loaded")

    def __init__(self, hop: PcieHop) -> None:
        self.hop = hop
        self.gpus: list[str] = []
        self.loaded = False


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
            top_gen = _min_known(hop.max_gen, partner.max_gen if partner else None)
            top_width = _min_known(hop.max_width, partner.max_width if partner else None)
            slow = hop.current_gen is not None and top_gen is not None and hop.current_gen < top_gen
            narrow = (
                hop.current_width is not None
                and top_width is not None
                and hop.current_width < top_width
            )
            if slow or narrow:
                key = frozenset({hop.bus_id, partner.bus_id if partner else hop.bus_id})
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


@check("pcie.link-speed")
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
        labels = set(fine)
        links = sorted({link_label(*_possible(g, vm)) for g in ctx.gpus if g.label in labels})
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

"""NVLink checks: ``nvlink.state``, ``nvlink.errors`` and ``nvlink.fabric``.

* ``nvlink.state``: links down or missing, judged against identical peers and against the
  topology matrix, never against a table of GPU models. Designed partial meshes (DGX-1 hybrid
  cube mesh), bridged pairs and unwired bridge lanes are recognised as designs, and MIG mode
  (where NVML reports links down) is never a failure.
* ``nvlink.errors``: replay, recovery and CRC counters, which are cumulative.
* ``nvlink.fabric``: NVSwitch systems whose fabric is not registered, whose Fabric Manager is
  not running or does not match the driver, and multi-node NVLink (MNNVL) nodes without a
  clique/cluster.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from pcidoc.doctor import config
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.checks._common import no_gpu as _no_gpu
from pcidoc.doctor.checks._common import not_applicable
from pcidoc.doctor.checks._common import with_gap as _with_gap
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import gpu_ref
from pcidoc.doctor.wording import joined as _names
from pcidoc.model import linkmodel
from pcidoc.model.facts import Gpu
from pcidoc.model.links import is_nvlink, nvlink_count
from pcidoc.model.report import Confidence, Evidence, Severity

_NVLINK_RESET = (
    "With no process on the GPU, reset it (`sudo nvidia-smi -r -i {index}`) or reboot; if the "
    "links stay down, run `dcgmi diag -r 3`, collect `sudo nvidia-bug-report.sh` and ask for "
    "baseboard/NVSwitch service."
)


def _mode(values: list[int]) -> int:
    """Most common value; ties go to the larger value (the healthier configuration)."""
    counts = Counter(values)
    best = max(counts.values())
    return max(v for v, c in counts.items() if c == best)


def _links_known(gpu: Gpu) -> bool | None:
    """True when the GPU's NVLink list was read (possibly empty because it has none)."""
    reason = (gpu.why("nvlinks") or "").upper()
    if gpu.nvlinks:
        # A list with a recorded gap is partial (an elided paste): not a full count.
        return None if reason else True
    if any(tag in reason for tag in ("NOT_SUPPORTED", "NOT SUPPORTED", "NO NVLINK", "0 NVLINK")):
        return True
    return None


def _up(gpu: Gpu) -> int:
    return sum(1 for link in gpu.nvlinks if link.state == "up")


def _down(gpu: Gpu) -> int:
    return sum(1 for link in gpu.nvlinks if link.state == "down")


def _to_switch(gpu: Gpu) -> bool:
    return any(link.remote_type == "switch" for link in gpu.nvlinks)


@dataclass
class _TopoView:
    """A GPU's NVLink neighbourhood in the topology matrix."""

    peers: int
    """Number of other GPUs joined to it by NV#."""
    total: int
    """Sum of NV# over its peers."""
    widest: int
    """Largest NV# to any peer."""


def _topo_view(ctx: Context, gpu: Gpu, among: list[Gpu]) -> _TopoView | None:
    links = [ctx.gpu_link(gpu.index, other.index) for other in among if other is not gpu]
    if not links or any(link is None for link in links):
        return None  # a row with unknown cells (a damaged paste) cannot be compared
    counts = [nvlink_count(link) for link in links if is_nvlink(link)]
    return _TopoView(len(counts), sum(counts), max(counts, default=0))


def _groups(gpus: list[Gpu]) -> dict[str, list[Gpu]]:
    groups: dict[str, list[Gpu]] = {}
    for gpu in gpus:
        groups.setdefault(gpu.name or "?", []).append(gpu)
    return groups


def _common_nv(ctx: Context, gpus: list[Gpu]) -> str | None:
    """The most common NV# class among the pairs of ``gpus``."""
    classes = [
        ctx.gpu_link(a.index, b.index)
        for i, a in enumerate(gpus)
        for b in gpus[i + 1 :]
        if is_nvlink(ctx.gpu_link(a.index, b.index))
    ]
    return Counter(classes).most_common(1)[0][0] if classes else None


# ============================================================================ nvlink.state


def _fact_findings(ctx: Context, peers: list[Gpu], named: bool) -> tuple[list[Finding], set[int]]:
    """Up-link counts compared among identical peers; explained/unexplained down links."""
    findings: list[Finding] = []
    flagged: set[int] = set()
    known = [g for g in peers if _links_known(g)]
    if not known:
        return findings, flagged
    counts = [_up(g) for g in known]
    reference = _mode(counts)
    confidence: Confidence = "high" if named else "medium"
    for gpu in known:
        up, down = _up(gpu), _down(gpu)
        evidence = [
            _ev("NVLinks up", up, "links", gpu.label),
            _ev("NVLinks down", down, "links", gpu.label),
            _ev("peers' usual count", reference, "links"),
        ]
        if len(known) >= 2 and up < reference:
            flagged.add(gpu.index)
            others = len(known) - 1
            findings.append(
                Finding(
                    "fail",
                    f"{gpu_ref(gpu)} has {up} NVLinks up while its {others} "
                    f"{'identical ' if named else ''}peer(s) have {reference}",
                    subjects=[gpu.label],
                    evidence=evidence,
                    remediation=[
                        f"See which links: `nvidia-smi nvlink -s -i {gpu.index}` and "
                        f"`nvidia-smi nvlink -e -i {gpu.index}`; check `sudo dmesg | grep -i "
                        "xid` for NVLink Xids (74, 144-150).",
                        _NVLINK_RESET.format(index=gpu.index),
                    ],
                    confidence=confidence,
                )
            )
    # Down links on GPUs that match their peers: unwired lanes or a fault shared by all?
    consistent = [g for g in known if _down(g) and g.index not in flagged]
    if consistent:
        downs = sorted({_down(g) for g in consistent})
        labels = [g.label for g in consistent]
        topo_ok = all(_topology_matches(ctx, g) for g in consistent)
        switch = any(_to_switch(g) for g in consistent)
        same_everywhere = len(known) >= 2 and len(consistent) == len(known) and len(downs) == 1
        nv = _common_nv(ctx, peers)
        evidence = [
            _ev("inactive links", downs[0] if len(downs) == 1 else str(downs), "links", g.label)
            for g in consistent
        ]
        if topo_ok:
            findings.append(
                Finding(
                    "info",
                    f"{_names(labels)}: {'/'.join(map(str, downs))} NVLink(s) inactive on each, "
                    f"and the topology ({nv or 'NV#'}) counts exactly the {reference} active "
                    "ones: these lanes are not wired in this design (e.g. bridged PCIe cards), "
                    "not down",
                    subjects=labels,
                    evidence=evidence,
                    confidence="high",
                )
            )
        elif same_everywhere and not switch:
            findings.append(
                Finding(
                    "info",
                    f"every GPU shows the same {downs[0]} inactive NVLink(s) next to {reference} "
                    "active: a design with unwired lanes rather than a fault",
                    subjects=labels,
                    evidence=evidence,
                    remediation=[
                        "Confirm with `nvidia-smi topo -m`: NV# should equal the active count."
                    ],
                    confidence="medium",
                )
            )
        else:
            findings.append(
                Finding(
                    "warn",
                    f"{_names(labels)}: {'/'.join(map(str, downs))} NVLink(s) down"
                    + (
                        " on an NVSwitch baseboard, where every link should be up"
                        if switch
                        else "; no peer or topology to tell a design from a fault"
                    ),
                    subjects=labels,
                    evidence=evidence,
                    remediation=[
                        "Compare with `nvidia-smi topo -m` and the system's documented NVLink "
                        "count per GPU.",
                        _NVLINK_RESET.format(index=consistent[0].index),
                    ],
                    confidence="low",
                )
            )
    return findings, flagged


def _topology_matches(ctx: Context, gpu: Gpu) -> bool:
    """True when the matrix's NV# for this GPU equals its count of active links."""
    others = [g for g in ctx.gpus if g is not gpu]
    view = _topo_view(ctx, gpu, others)
    if view is None or view.peers == 0:
        return False
    up = _up(gpu)
    return up in (view.total, view.widest)


def _topology_findings(
    ctx: Context, peers: list[Gpu], named: bool, flagged: set[int]
) -> list[Finding]:
    """NVLink neighbourhoods from the matrix compared among identical peers."""
    views = {g.index: _topo_view(ctx, g, peers) for g in peers}
    known = {i: v for i, v in views.items() if v is not None}
    if len(known) < 2:
        return []
    ref_peers = _mode([v.peers for v in known.values()])
    ref_total = _mode([v.total for v in known.values()])
    if ref_peers == 0:
        return []
    nv = _common_nv(ctx, peers) or "NV#"
    confidence: Confidence = "high" if named else "medium"
    findings = []
    pair_design = ref_peers == 1
    for gpu in peers:
        view = known.get(gpu.index)
        if view is None or gpu.index in flagged:
            continue
        evidence = [
            _ev("NVLink peers", view.peers, "GPUs", gpu.label),
            _ev("NVLinks to peers (sum of NV#)", view.total, "links", gpu.label),
            _ev("peers' usual NVLink peers", ref_peers, "GPUs"),
            _ev("peers' usual NV# sum", ref_total, "links"),
        ]
        remediation = [
            f"Check the GPU's links: `nvidia-smi nvlink -s -i {gpu.index}` and "
            f"`nvidia-smi topo -m`.",
            _NVLINK_RESET.format(index=gpu.index),
        ]
        if view.peers == 0 and pair_design:
            findings.append(
                Finding(
                    "info",
                    f"{gpu.label} has no NVLink bridge partner while the other GPUs are bridged "
                    f"in pairs ({nv}); it reaches them over PCIe only",
                    subjects=[gpu.label],
                    evidence=evidence,
                    confidence="medium",
                )
            )
        elif view.peers == 0:
            findings.append(
                Finding(
                    "fail",
                    f"{gpu.label} has no NVLink peers while its peers have {nv} to each other",
                    subjects=[gpu.label],
                    evidence=evidence,
                    remediation=remediation,
                    confidence=confidence,
                )
            )
        elif view.peers < ref_peers or view.total < ref_total:
            if pair_design:
                findings.append(
                    Finding(
                        "warn",
                        f"{gpu.label} has fewer bridge links ({view.total}) than the other "
                        f"bridged GPUs ({ref_total}): a bridge may be missing or unseated",
                        subjects=[gpu.label],
                        evidence=evidence,
                        remediation=[
                            "Check that every NVLink bridge is seated, then "
                            f"`nvidia-smi nvlink -s -i {gpu.index}`."
                        ],
                        confidence="medium",
                    )
                )
            else:
                findings.append(
                    Finding(
                        "fail",
                        f"{gpu.label} reaches {view.peers} GPU(s) over NVLink with {view.total} "
                        f"links in all, while its peers reach {ref_peers} with {ref_total} "
                        f"({nv})",
                        subjects=[gpu.label],
                        evidence=evidence,
                        remediation=remediation,
                        confidence=confidence,
                    )
                )
    return findings


def _bridge_findings(ctx: Context, peers: list[Gpu], flagged: set[int]) -> list[Finding]:
    """Bridged cards (PCIe/NVL boards) with fewer NVLinks than their bridge set carries.

    The link model knows how many links a card's full bridge set carries (A100 PCIe 12 over
    three bridges, H100 PCIe/NVL 12, GA102 boards 4). A card showing some links but fewer is a
    partial NVLink: a bridge missing or loose. SXM boards are not judged here (a paste may
    show only some of the GPUs of a direct mesh); their peers are the reference.
    """
    findings: list[Finding] = []
    for gpu in peers:
        model = linkmodel.gpu_model_of(gpu)
        if gpu.index in flagged or model is None or model.nvlink_via != "bridge":
            continue
        expected = model.nvlink_links or 0
        if _links_known(gpu):
            seen, how = _up(gpu), "NVLinks up"
        else:
            view = _topo_view(ctx, gpu, ctx.gpus)
            if view is None:
                continue
            seen, how = view.total, "NVLinks to its peers in the topology (sum of NV#)"
        if not 0 < seen < expected:
            continue
        findings.append(
            Finding(
                "warn",
                f"{gpu_ref(gpu)} shows {seen} of the {expected} NVLinks a {gpu.name} carries with "
                "its full bridge set: a partial NVLink (a bridge missing or not seated)",
                subjects=[gpu.label],
                evidence=[
                    _ev(how, seen, "links", gpu.label),
                    _ev("links of the full bridge set", expected, "links", subject=model.source),
                ],
                remediation=[
                    "Power down and reseat every NVLink bridge (all bridge positions populated), "
                    f"then `nvidia-smi nvlink -s -i {gpu.index}` should list {expected} links.",
                    "If fewer bridges were fitted on purpose, NVLink bandwidth is "
                    f"{seen}/{expected} of what the cards can carry.",
                ],
                confidence="medium",
            )
        )
    return findings


@check("nvlink.state", "NVLink state", needs="facts")
def nvlink_state(ctx: Context) -> list[Finding]:
    """Find NVLinks down or missing, against identical peers and the topology (MIG-aware).

    Args:
        ctx: The machine.

    Returns:
        Failures for outlier GPUs, infos for designs with inactive lanes, MIG and PCIe-only
        machines, a pass when every GPU matches its peers, a skip without NVLink facts.
    """
    if not ctx.gpus:
        return [_no_gpu(ctx)]
    mig = sorted(ctx.mig_gpus)
    judged = [g for g in ctx.gpus if g.index not in ctx.mig_gpus]
    facts_known = [g for g in judged if _links_known(g)]
    topo_known = ctx.has_topology and any(_topo_view(ctx, g, ctx.gpus) is not None for g in judged)
    findings: list[Finding] = []
    if mig:
        labels = [f"GPU{i}" for i in mig]
        findings.append(
            Finding(
                "info",
                f"MIG is enabled on {_names(labels)}: NVML reports NVLinks down in MIG mode "
                "(and links towards MIG GPUs); that is expected, and those links are not judged",
                subjects=labels,
                evidence=[_ev("MIG enabled", True, subject=label) for label in labels],
                confidence="high",
            )
        )
    if not facts_known and not topo_known:
        if findings:
            return findings
        return [
            Finding(
                "skip",
                "no NVLink facts in this capture (neither per-link state nor a topology matrix)",
                needs="run `pcidoc check` on the machine, or import `nvidia-smi nvlink -s` and "
                "`nvidia-smi topo -m`",
            )
        ]

    any_links = any(_up(g) or _down(g) for g in facts_known) or (
        topo_known and bool(ctx.nvlink_pairs)
    )
    if not any_links:
        reasons = sorted({g.why("nvlinks") or "" for g in judged} - {""})
        findings.append(
            Finding(
                "info",
                "no NVLink: the GPUs talk to each other over PCIe only"
                + (f" ({'; '.join(reasons)})" if reasons else ""),
                evidence=[_ev("GPU pairs with NVLink", 0, "pairs")],
                confidence="high" if facts_known else "medium",
            )
        )
        return _with_gap(ctx, findings)

    groups = _groups(judged)
    named = all(name != "?" for name in groups)
    problems: list[Finding] = []
    for peers in groups.values():
        fact, flagged = _fact_findings(ctx, peers, named)
        problems.extend(fact)
        bridge = _bridge_findings(ctx, peers, flagged)
        flagged |= {int(f.subjects[0][3:]) for f in bridge}
        problems.extend(bridge)
        problems.extend(_topology_findings(ctx, peers, named, flagged))

    judged_problem = any(f.severity in ("warn", "fail") for f in problems)
    if mig:
        note = f" (not judged: MIG is enabled on {_names([f'GPU{i}' for i in mig])})"
        for finding in problems:
            if finding.severity in ("warn", "fail"):
                finding.severity = "info"
                finding.summary += note
                finding.confidence = "low"
    findings.extend(problems)

    unknown = [
        g.label for g in judged if not _links_known(g) and _topo_view(ctx, g, ctx.gpus) is None
    ]
    if unknown:
        findings.append(
            Finding(
                "info",
                f"NVLink state unknown for {_names(unknown)}: not judged",
                subjects=unknown,
                confidence="low",
                needs="import `nvidia-smi nvlink -s` for every GPU or run `pcidoc check` on the "
                "machine",
            )
        )
    if not judged_problem:
        parts = []
        up_counts = sorted({_up(g) for g in facts_known})
        if facts_known:
            parts.append(
                f"{len(facts_known)} GPU(s) with {'/'.join(map(str, up_counts))} NVLinks up each"
            )
        classes = sorted(
            {link for _, _, link in ctx.gpu_pairs() if is_nvlink(link)}, key=nvlink_count
        )
        if topo_known and classes:
            parts.append(f"topology {'/'.join(c for c in classes if c)} consistent across peers")
        findings.append(
            Finding(
                "pass",
                "; ".join(parts) or "NVLink consistent across peers",
                evidence=[_ev("NVLinks up", _up(g), "links", g.label) for g in facts_known],
                confidence="high" if facts_known and not unknown else "medium",
            )
        )
    return _with_gap(ctx, findings)


# =========================================================================== nvlink.errors

_SEVERE = ("replay", "recovery", "symbol")


def _error_class(name: str) -> str:
    lowered = name.lower()
    if "crc" in lowered:
        return "crc"
    if any(key in lowered for key in _SEVERE):
        return "replay/recovery"
    return "other"


@check("nvlink.errors", "NVLink error counters", needs="facts")
def nvlink_errors(ctx: Context) -> list[Finding]:
    """Judge NVLink replay/recovery/CRC counters (cumulative since the driver loaded).

    Args:
        ctx: The machine.

    Returns:
        A warning per GPU with replay/recovery or CRC errors (failure when the average rate
        since boot already exceeds DCGM's limits), a pass when all counters are zero, a skip when
        no counter was read.
    """
    gpus = [g for g in ctx.gpus if g.nvlinks]
    if not gpus:
        if any(_links_known(g) for g in ctx.gpus) or (
            ctx.has_topology and not ctx.nvlink_pairs and ctx.gpus
        ):
            return [not_applicable("no NVLink on these GPUs")]
        return [
            Finding(
                "skip",
                "no NVLink facts in this capture",
                needs="run `pcidoc check` on the machine, or import `nvidia-smi nvlink -e`",
            )
        ]
    counted = [g for g in gpus if any(link.errors for link in g.nvlinks)]
    if not counted:
        return [
            Finding(
                "skip",
                "NVLink error counters were not read",
                needs="run `pcidoc check --only nvlink.errors` on the machine, or import "
                "`nvidia-smi nvlink -e`",
            )
        ]
    uptime = ctx.host.uptime_s
    minutes = uptime / 60.0 if uptime else None
    findings: list[Finding] = []
    for gpu in counted:
        totals: dict[str, int] = {"replay/recovery": 0, "crc": 0, "other": 0}
        per_link: list[Evidence] = []
        for link in gpu.nvlinks:
            for name, value in sorted(link.errors.items()):
                totals[_error_class(name)] += value
                if value:
                    per_link.append(_ev(f"link {link.link} {name}", value, "errors", gpu.label))
        severe, crc = totals["replay/recovery"], totals["crc"]
        remediation = [
            f"Get a rate instead of a lifetime total: `sudo nvidia-smi nvlink -re -i {gpu.index}`"
            f" (reset the counters), run a load for a few minutes, then `nvidia-smi nvlink -e -i "
            f"{gpu.index}`; `dcgmi health -s n` watches them continuously.",
            _NVLINK_RESET.format(index=gpu.index),
        ]
        if severe:
            rate = severe / minutes if minutes else None
            fails = rate is not None and rate >= config.NVLINK_ERROR_FAIL_PER_MIN
            detail = (
                f"an average of {rate:.2g}/min since boot"
                if rate is not None
                else "cumulative, no time window"
            )
            findings.append(
                Finding(
                    "fail" if fails else "warn",
                    f"{gpu.label}: {severe} NVLink replay/recovery errors ({detail}; DCGM fails "
                    f"at {config.NVLINK_ERROR_FAIL_PER_MIN:g}/min)",
                    subjects=[gpu.label],
                    evidence=per_link,
                    remediation=remediation,
                    confidence="low" if rate is not None else "medium",
                )
            )
        if crc:
            per_s = crc / uptime if uptime else None
            fails = per_s is not None and per_s >= config.NVLINK_CRC_FAIL_PER_S
            detail = (
                f"an average of {per_s:.2g}/s since boot"
                if per_s is not None
                else "cumulative, no time window"
            )
            findings.append(
                Finding(
                    "fail" if fails else "warn",
                    f"{gpu.label}: {crc} NVLink CRC errors ({detail}; they matter from "
                    f"{config.NVLINK_CRC_FAIL_PER_S}/s)",
                    subjects=[gpu.label],
                    evidence=per_link,
                    remediation=remediation,
                    confidence="low" if per_s is not None else "medium",
                )
            )
        if totals["other"] and not (severe or crc):
            findings.append(
                Finding(
                    "info",
                    f"{gpu.label}: {totals['other']} other NVLink error events counted",
                    subjects=[gpu.label],
                    evidence=per_link,
                    remediation=remediation[:1],
                    confidence="low",
                )
            )
    missing = [g.label for g in gpus if g not in counted]
    if missing:
        findings.append(
            Finding(
                "info",
                f"NVLink error counters not read for {_names(missing)}",
                subjects=missing,
                confidence="low",
            )
        )
    if not any(f.severity in ("warn", "fail", "info") and f.subjects != missing for f in findings):
        links = sum(len(g.nvlinks) for g in counted)
        findings.append(
            Finding(
                "pass",
                f"0 NVLink errors on {links} links of {len(counted)} GPU(s) (cumulative since the "
                "driver loaded)",
                evidence=[_ev("NVLinks counted", links, "links")],
                confidence="high" if not missing else "medium",
            )
        )
    return _with_gap(ctx, findings)


# =========================================================================== nvlink.fabric

_ZERO_RE = re.compile(r"[^0-9a-fA-F]")


def _zero_uuid(value: str | None) -> bool:
    if value is None:
        return False
    digits = _ZERO_RE.sub("", value)
    return not digits or set(digits) == {"0"}


def _fabric_reported(gpu: Gpu) -> bool:
    state = (gpu.fabric.state or "").lower()
    return bool(state) and state != "not_supported"


def _is_mnnvl(ctx: Context) -> bool:
    """Multi-node NVLink (GB200-class): a clique/cluster is reported, or a Grace host's GPUs
    register with an NVLink fabric."""
    for gpu in ctx.gpus:
        if gpu.fabric.cluster_uuid and not _zero_uuid(gpu.fabric.cluster_uuid):
            return True
        if gpu.fabric.clique_id:
            return True
    grace = (ctx.host.cpu_vendor or "").lower() == "arm" or "grace" in (
        ctx.host.cpu_model or ""
    ).lower()
    return (
        grace
        and any(_fabric_reported(g) for g in ctx.gpus)
        and any(_to_switch(g) for g in ctx.gpus)
    )


def _not_nvswitch(ctx: Context) -> Finding:
    """Verdict when no link reaches a switch and no GPU reports a fabric state."""
    bus_ids = {g.bus_id for g in ctx.gpus if g.bus_id}
    up = [link for g in ctx.gpus for link in g.nvlinks if link.state == "up"]
    direct = [
        link
        for link in up
        if link.remote_type in ("gpu", "ibmnpu")
        or (link.remote_type is None and link.remote_bus_id in bus_ids)
    ]
    if up and len(direct) == len(up):
        return not_applicable("no NVSwitch (every NVLink goes GPU-to-GPU)")
    # Without types: a GPU whose links all reach one device is bridged to a GPU; GPUs on an
    # NVSwitch baseboard spread their links over several switches.
    single_remote = []
    for gpu in ctx.gpus:
        remotes = [link.remote_bus_id for link in gpu.nvlinks if link.state == "up"]
        if remotes:
            single_remote.append(
                len(remotes) >= 2 and None not in remotes and len(set(remotes)) == 1
            )
    if single_remote and all(single_remote):
        return not_applicable(
            "each GPU's NVLinks all reach one device (a bridged GPU), not a set of NVSwitches",
            confidence="medium",
        )
    pairs = [link for _, _, link in ctx.gpu_pairs()]
    topo_nv = [link for link in pairs if is_nvlink(link)]
    if not up and not topo_nv:
        if any(_links_known(g) for g in ctx.gpus) or (ctx.has_topology and pairs):
            return not_applicable("no NVLink, so no NVSwitch fabric")
        return Finding(
            "skip",
            "no NVLink or fabric facts in this capture",
            needs="run `pcidoc check` on the machine, or import `nvidia-smi -q` and "
            "`nvidia-smi topo -m`",
        )
    if pairs and len(topo_nv) < len(pairs) and not any(link is None for link in pairs):
        # On an NVSwitch baseboard every GPU pair is NV#; a partial mesh is a direct design.
        return not_applicable(
            "not every GPU pair is NVLink, so this is a direct NVLink design, not an NVSwitch "
            "fabric",
            confidence="medium",
        )
    nv = _common_nv(ctx, ctx.gpus)
    if topo_nv and len(topo_nv) == len(pairs):
        count = "both" if len(ctx.gpus) == 2 else f"all {len(ctx.gpus)}"
        what = f"{count} GPUs are {nv} to each other"
        needed = min(
            sum(nvlink_count(ctx.gpu_link(g.index, o.index)) for o in ctx.gpus if o is not g)
            for g in ctx.gpus
        )
        if needed > config.NVLINK_MAX_LINKS_PER_GPU:
            return Finding(
                "info",
                f"{what}, which only NVSwitches can wire ({needed} NVLinks per GPU as a direct "
                f"mesh, more than the {config.NVLINK_MAX_LINKS_PER_GPU} a GPU has): an NVSwitch "
                "system whose fabric state is not in this capture",
                evidence=[
                    _ev("NVLink class of the GPU pairs", nv),
                    _ev("NVLinks a direct mesh would need per GPU", needed, "links"),
                ],
                remediation=[
                    "Check the fabric on the machine: `nvidia-smi -q | grep -A8 Fabric` (State "
                    "Completed, Status Success) and `systemctl status nvidia-fabricmanager`.",
                ],
                confidence="medium",
                needs="import `nvidia-smi -q` (Fabric section), or run `pcidoc check` on the "
                "machine",
            )
    elif up:
        what = "NVLinks are up but their far ends (GPU or NVSwitch) are not in the capture"
    else:
        what = f"the topology shows NVLink between GPUs ({nv}) but not every pair is known"
    return Finding(
        "info",
        f"{what}: this may be an NVSwitch system (or a direct NVLink mesh or bridge); its fabric "
        "state is not in this capture",
        evidence=[_ev("NVLink class of the GPU pairs", nv), _ev("NVLinks up", len(up), "links")],
        confidence="low",
        needs="import `nvidia-smi -q` (Fabric section) and `nvidia-smi nvlink -R`, or run "
        "`pcidoc check` on the machine",
    )


def _fabric_manager_findings(ctx: Context, kind: str, fm_evidence: list[Evidence]) -> list[Finding]:
    """The Fabric Manager service of a single-node NVSwitch system: stopped or mismatched."""
    fm = ctx.driver.fabric_manager
    findings = []
    if fm.active is False:
        findings.append(
            Finding(
                "fail",
                f"{kind} system but the NVIDIA Fabric Manager is not running: CUDA fails "
                "to start (error 802, system not ready) or P2P over NVSwitch is unavailable",
                evidence=fm_evidence,
                remediation=[
                    "Install the `nvidia-fabricmanager` package of exactly the driver's "
                    f"version ({ctx.driver.driver_version or 'see `nvidia-smi`'}) and start "
                    "it: `sudo systemctl enable --now nvidia-fabricmanager`.",
                    "If it fails, read why: `journalctl -u nvidia-fabricmanager`; on NVLink5 "
                    "(B200-class) systems it also needs the `mlx5_ib` and `ib_umad` modules.",
                ],
                confidence="high",
            )
        )
    if fm.version and ctx.driver.driver_version and fm.version != ctx.driver.driver_version:
        findings.append(
            Finding(
                "fail",
                f"Fabric Manager {fm.version} does not match driver "
                f"{ctx.driver.driver_version}: it refuses to run with another version",
                evidence=fm_evidence,
                remediation=[
                    "Install the `nvidia-fabricmanager` package matching the driver exactly "
                    "(same branch and version) and restart it: `sudo systemctl restart "
                    "nvidia-fabricmanager`.",
                ],
                confidence="high",
            )
        )
    return findings


def _fabric_problem(gpu: Gpu, mnnvl: bool) -> list[tuple[Severity, str, str]]:
    """What is wrong with one GPU's fabric registration: ``(severity, what, detail)`` keys."""
    fab = gpu.fabric
    state = (fab.state or "").lower()
    status = fab.status if (fab.status or "").strip().lower() not in ("", "n/a") else None
    keys: list[tuple[Severity, str, str]] = []
    if state == "completed":
        if status is not None and status.strip().lower() not in ("success", "ok"):
            keys.append(("fail", "status", status))
        elif mnnvl and (fab.clique_id == 0 or _zero_uuid(fab.cluster_uuid)):
            keys.append(("fail", "clique", ""))
    elif state == "in_progress":
        keys.append(("warn", "in_progress", ""))
    elif state:
        keys.append(("fail", "state", state))
    if fab.health:
        keys.append(("fail", "health", ", ".join(fab.health)))
    return keys


_FABRIC_SUMMARY = {
    "status": "{who}: NVLink fabric registration completed with status '{detail}' instead of "
    "success",
    "clique": "{who}: MNNVL fabric completed but without a clique/cluster (clique id 0 or zero "
    "cluster UUID): multi-node NVLink jobs cannot use this node",
    "in_progress": "{who}: NVLink fabric registration still in progress",
    "state": "{who}: NVLink fabric state is '{detail}' (not completed)",
    "health": "{who}: NVLink fabric health reports {detail}",
}


def _fabric_fix(mnnvl: bool) -> str:
    return (
        "Check the fabric service: `systemctl status nvidia-fabricmanager` and "
        "`journalctl -u nvidia-fabricmanager`"
        + (
            "; on MNNVL nodes also `systemctl status nvidia-imex` and the NVLink switch trays' "
            "fabric manager (NMX)"
            if mnnvl
            else ""
        )
        + "; then `nvidia-smi -q | grep -A 8 Fabric`."
    )


def _registration_findings(fabric: list[Gpu], mnnvl: bool) -> list[Finding]:
    """Per-GPU fabric registration problems, one finding per kind of problem."""
    problems: dict[tuple[Severity, str, str], list[Gpu]] = {}
    for gpu in fabric:
        for key in _fabric_problem(gpu, mnnvl):
            problems.setdefault(key, []).append(gpu)
    findings = []
    for (severity, what, detail), gpus in problems.items():
        labels = [g.label for g in gpus]
        evidence = []
        for g in gpus:
            evidence += [
                _ev("fabric state", g.fabric.state, subject=g.label),
                _ev("fabric status", g.fabric.status, subject=g.label),
            ]
            if mnnvl:
                evidence += [
                    _ev("clique id", g.fabric.clique_id, subject=g.label),
                    _ev("cluster uuid", g.fabric.cluster_uuid, subject=g.label),
                ]
        remediation = [_fabric_fix(mnnvl)]
        if what == "in_progress":
            remediation.insert(
                0, "Re-check in a minute; if it stays in progress, the fabric manager is failing."
            )
        findings.append(
            Finding(
                severity,
                _FABRIC_SUMMARY[what].format(who=_names(labels), detail=detail),
                subjects=labels,
                evidence=evidence,
                remediation=remediation,
                confidence="high",
            )
        )
    return findings


def _fabric_pass(
    ctx: Context, kind: str, fabric: list[Gpu], mnnvl: bool, fm_evidence: list[Evidence]
) -> Finding:
    fm = ctx.driver.fabric_manager
    parts = []
    if fabric:
        parts.append(f"fabric registration completed on {len(fabric)} GPU(s)")
    if fm.active:
        parts.append(f"Fabric Manager active ({fm.version or 'version unknown'})")
    elif mnnvl:
        parts.append("clique/cluster assigned")
    return Finding(
        "pass",
        f"{kind}: " + ("; ".join(parts) or "no fabric problem reported"),
        evidence=fm_evidence,
        confidence="high" if fabric or fm.active else "medium",
    )


@check("nvlink.fabric", "NVSwitch fabric and Fabric Manager", needs="facts")
def nvlink_fabric(ctx: Context) -> list[Finding]:
    """Judge NVLink fabric registration and the Fabric Manager on NVSwitch systems.

    Args:
        ctx: The machine.

    Returns:
        Failures for an unregistered fabric, bad status/health, a stopped or mismatched Fabric
        Manager, or an MNNVL node without clique/cluster; a skip (not applicable) on machines
        without NVSwitch; a skip when the facts cannot tell.
    """
    if not ctx.gpus:
        return [_no_gpu(ctx)]
    switch = [g for g in ctx.gpus if _to_switch(g)]
    fabric = [g for g in ctx.gpus if _fabric_reported(g)]
    fm = ctx.driver.fabric_manager
    if not switch and not fabric:
        return [_not_nvswitch(ctx)]
    mnnvl = _is_mnnvl(ctx)
    kind = "multi-node NVLink (MNNVL)" if mnnvl else "NVSwitch"
    fm_evidence = [
        _ev("fabric manager active", fm.active),
        _ev("fabric manager version", fm.version),
        _ev("driver version", ctx.driver.driver_version),
    ]
    # Fabric Manager service (single-node NVSwitch systems; MNNVL compute trays use IMEX).
    findings = [] if mnnvl else _fabric_manager_findings(ctx, kind, fm_evidence)
    findings += _registration_findings(fabric, mnnvl)
    if not fabric and fm.active is None and not mnnvl:
        unknown_state = [g for g in switch if not _fabric_reported(g)]
        return findings or [
            Finding(
                "skip",
                f"{kind} system, but neither the fabric state nor the Fabric Manager service "
                "state is in this capture",
                subjects=[g.label for g in unknown_state],
                needs="run `pcidoc check --only nvlink.fabric` on the machine (reads "
                "`systemctl is-active nvidia-fabricmanager`), or import `nvidia-smi -q`",
            )
        ]
    if not any(f.severity in ("warn", "fail") for f in findings):
        findings.append(_fabric_pass(ctx, kind, fabric, mnnvl, fm_evidence))
    return _with_gap(ctx, findings)

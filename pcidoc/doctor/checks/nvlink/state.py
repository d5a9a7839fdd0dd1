"""The ``nvlink.state`` check."""

from __future__ import annotations

from collections import Counter

from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.checks._common import no_gpu as _no_gpu
from pcidoc.doctor.checks._common import with_gap as _with_gap
from pcidoc.doctor.checks.nvlink._shared import _NVLINK_RESET, _common_nv, _links_known, _to_switch
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import gpu_ref, short_list
from pcidoc.doctor.wording import joined as _names
from pcidoc.model.facts import Gpu
from pcidoc.model.linkmodel import unwired_nvlinks
from pcidoc.model.links import is_nvlink, nvlink_count
from pcidoc.model.report import Confidence


def _mode(values: list[int]) -> int:
    """Most common value; ties go to the larger value (the healthier configuration)."""
    counts = Counter(values)
    best = max(counts.values())
    return max(v for v, c in counts.items() if c == best)


def _up(gpu: Gpu) -> int:
    return sum(1 for link in gpu.nvlinks if link.state == "up")


def _down(gpu: Gpu) -> int:
    return sum(1 for link in gpu.nvlinks if link.state == "down")


def _up_down(ctx: Context, gpu: Gpu) -> tuple[int, int]:
    """``(_up(gpu), _down(gpu))``, counted once per GPU and run (asked several times each)."""
    memo = ctx.memo.setdefault("nvlink.up_down", {})
    found = memo.get(id(gpu))
    if found is None:
        states = [link.state for link in gpu.nvlinks]
        found = memo[id(gpu)] = (states.count("up"), states.count("down"))
    return found  # type: ignore[return-value]


class _TopoView:
    """A GPU's NVLink neighbourhood in the topology matrix."""

    __slots__ = ("peers", "total", "widest")

    def __init__(self, peers: int, total: int, widest: int) -> None:
        self.peers = peers
        """Number of other GPUs joined to it by NV#."""
        self.total = total
        """Sum of NV# over its peers."""
        self.widest = widest
        """Largest NV# to any peer."""


def _topo_view(ctx: Context, gpu: Gpu, among: list[Gpu]) -> _TopoView | None:
    """``gpu``'s view among ``among`` (which holds it); each GPU set's views are computed
    once per run, as every GPU is asked about several times."""
    return _topo_views(ctx, among)[id(gpu)]


def _topo_views(ctx: Context, among: list[Gpu]) -> dict[int, _TopoView | None]:
    """The view of every GPU of ``among`` among the others, by ``id`` of the GPU."""
    # By the list itself first (kept alive in the memo, so its id cannot be reused), then by
    # its GPUs: a group of peers holding every GPU shares the views of ``ctx.gpus``.
    by_list = ctx.memo.setdefault("nvlink.topo_views_by_list", {})
    known = by_list.get(id(among))
    if known is not None and known[0] is among:  # type: ignore[index]
        return known[1]  # type: ignore[index,no-any-return]
    memo = ctx.memo.setdefault("nvlink.topo_views", {})
    key = tuple(map(id, among))
    views = memo.get(key)
    if views is None:
        views = memo[key] = {}
        indices = [other.index for other in among]
        unique = len(set(key)) == len(key)
        for pos, gpu in enumerate(among):
            if unique:  # each GPU once: its own cell is the one left out
                links = ctx.gpu_links(gpu.index, indices)
                del links[pos]
            else:  # a GPU listed twice (a hand-built capture): leave out every copy
                get = ctx.gpu_link_row(gpu.index).get
                links = [get(other.index) for other in among if other is not gpu]
            views[id(gpu)] = _topo_view_of(links)
    by_list[id(among)] = (among, views)
    return views  # type: ignore[return-value]


def _topo_view_of(links: list[str | None]) -> _TopoView | None:
    """The view of a GPU from its cells towards the other GPUs."""
    if not links or None in links:
        return None  # a row with unknown cells (a damaged paste) cannot be compared
    # A row has a few distinct classes (one on a switched box): count each once.
    first = links[0]
    if links.count(first) == len(links):
        tally = [(nvlink_count(first), len(links))] if is_nvlink(first) else []
    else:
        tally = [(nvlink_count(link), n) for link, n in Counter(links).items() if is_nvlink(link)]
    return _TopoView(
        sum(n for _, n in tally),
        sum(count * n for count, n in tally),
        max((count for count, _ in tally), default=0),
    )


def _groups(gpus: list[Gpu]) -> dict[str, list[Gpu]]:
    groups: dict[str, list[Gpu]] = {}
    for gpu in gpus:
        groups.setdefault(gpu.name or "?", []).append(gpu)
    return groups


# ============================================================================ nvlink.state


def _fact_findings(ctx: Context, peers: list[Gpu], named: bool) -> tuple[list[Finding], set[int]]:
    """Up-link counts compared among identical peers; explained/unexplained down links."""
    findings: list[Finding] = []
    flagged: set[int] = set()
    known = [g for g in peers if _links_known(g)]
    if not known:
        return findings, flagged
    counts = [_up_down(ctx, g)[0] for g in known]
    reference = _mode(counts)
    confidence: Confidence = "high" if named else "medium"
    for gpu in known:
        up, down = _up_down(ctx, gpu)
        if len(known) >= 2 and up < reference:
            evidence = [
                _ev("NVLinks up", up, "links", gpu.label),
                _ev("NVLinks down", down, "links", gpu.label),
                _ev("peers' usual count", reference, "links"),
            ]
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
    consistent = [g for g in known if _up_down(ctx, g)[1] and g.index not in flagged]
    if consistent:
        downs = sorted({_up_down(ctx, g)[1] for g in consistent})
        labels = [g.label for g in consistent]
        # One rule with the Links pane (pcidoc.model.linkmodel.unwired_nvlinks).
        unwired = [unwired_nvlinks(ctx.capture, g) for g in consistent]
        topo_ok = all(
            u.count == _up_down(ctx, g)[1] for u, g in zip(unwired, consistent, strict=True)
        )
        switch = any(_to_switch(g) for g in consistent)
        same_everywhere = len(known) >= 2 and len(consistent) == len(known) and len(downs) == 1
        evidence = [
            _ev("inactive links", downs[0] if len(downs) == 1 else str(downs), "links", g.label)
            for g in consistent
        ]
        if topo_ok:
            findings.append(
                Finding(
                    "info",
                    f"{_names(labels)}: {'/'.join(map(str, downs))} NVLink(s) inactive on each, "
                    f"and {unwired[0].basis}: these lanes are not wired in this design (e.g. "
                    "bridged PCIe cards), not down",
                    subjects=labels,
                    evidence=evidence,
                    confidence="high" if all(u.measured for u in unwired) else "medium",
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
        if not (view.peers == 0 or view.peers < ref_peers or view.total < ref_total):
            continue  # like its peers: nothing to say (and no evidence to build)
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
        model = ctx.gpu_model(gpu)
        if gpu.index in flagged or model is None or model.nvlink_via != "bridge":
            continue
        expected = model.nvlink_links or 0
        if _links_known(gpu):
            seen, how = _up_down(ctx, gpu)[0], "NVLinks up"
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


def _amd_fabric(ctx: Context) -> Finding | None:
    """AMD GPUs (``rocm-smi --showtopo`` / ``amd-smi topology``): Infinity Fabric (XGMI) is
    their NVLink. Every pair typed PCIE means a box without Infinity Fabric between GPUs."""
    evidence = ctx.capture.evidence
    for topo in evidence.amd_topologies if evidence is not None else []:
        n = len(topo.link_types)
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
        kinds = {
            (i, j): (topo.link_types[i][j] or "?") for i, j in pairs if j < len(topo.link_types[i])
        }
        if not kinds or "?" in kinds.values():
            continue
        pcie = [f"GPU{i}-GPU{j}" for (i, j), kind in kinds.items() if kind != "XGMI"]
        tool = f"{topo.tool} link types"
        if not pcie:
            return Finding(
                "pass",
                f"AMD GPUs: Infinity Fabric (XGMI) between all {len(kinds)} GPU pairs ({tool})",
                evidence=[_ev("XGMI pairs", len(kinds), "pairs")],
                confidence="medium",
            )
        every = len(pcie) == len(kinds)
        return Finding(
            "info",
            (
                "AMD GPUs without Infinity Fabric: every GPU pair is joined by PCIe"
                if every
                else f"AMD GPUs: {short_list(pcie, 6)} joined by PCIe, not Infinity Fabric (XGMI)"
            )
            + f" ({tool}); GPU-to-GPU traffic crosses PCIe, and the CPU interconnect where "
            "the GPUs hang off different sockets",
            evidence=[
                _ev("PCIe pairs", len(pcie), "pairs"),
                _ev("XGMI pairs", len(kinds) - len(pcie), "pairs"),
            ],
            remediation=[
                "Expected on PCIe cards without an Infinity Fabric bridge; on an OAM/MI2xx-3xx "
                "board every pair should be XGMI: check `rocm-smi --showtopo` and `dmesg` "
                "for xgmi errors.",
            ],
            confidence="medium",
        )
    return None


def _no_nvlink(ctx: Context, gpus: list[Gpu], facts_known: bool) -> Finding:
    """No NVLink between any GPUs: PCIe-only GPUs (info), or two or more GPUs of one model
    whose every board joins them by NVLink, whose links are then down or not set up (warn)."""
    models = {ctx.gpu_model(g) for g in gpus}
    model = models.pop() if len(models) == 1 and len(gpus) > 1 else None
    if model is None or not model.nvlink_on_every_board:
        reasons = sorted({g.why("nvlinks") or "" for g in gpus} - {""})
        return Finding(
            "info",
            "no NVLink: the GPUs talk to each other over PCIe only"
            + (f" ({'; '.join(reasons)})" if reasons else ""),
            evidence=[_ev("GPU pairs with NVLink", 0, "pairs")],
            confidence="high" if facts_known else "medium",
        )
    name = gpus[0].name or model.key
    return Finding(
        "warn",
        f"no NVLink between the {len(gpus)} {name} GPUs, which every board made for them joins "
        "by NVLink: the links are down or not set up, and GPU-to-GPU traffic crosses PCIe",
        subjects=[g.label for g in gpus],
        evidence=[_ev("GPU pairs with NVLink", 0, "pairs"), _ev("GPU model", name)],
        remediation=[
            "Check the links (`nvidia-smi nvlink -s`: Inactive or no links) and, on NVSwitch "
            "boards, the Fabric Manager (`systemctl status nvidia-fabricmanager`, nvlink.fabric); "
            "in a VM or container, ask whether the provider's NVLink partition includes these "
            "GPUs. A reboot after a fabric error often brings the links back.",
        ],
        confidence="medium",
    )


@check("nvlink.state")
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
    amd = _amd_fabric(ctx)
    if amd is not None:
        return [amd]
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

    any_links = any(_up_down(ctx, g) != (0, 0) for g in facts_known) or (
        topo_known and ctx.has_nvlink_pair
    )
    if not any_links:
        findings.append(_no_nvlink(ctx, judged, bool(facts_known)))
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
        up_counts = sorted({_up_down(ctx, g)[0] for g in facts_known})
        if facts_known:
            of = f" of {len(ctx.gpus)}" if len(facts_known) < len(ctx.gpus) else ""
            parts.append(
                f"{len(facts_known)}{of} GPU(s) with {'/'.join(map(str, up_counts))} NVLinks "
                "up each"
            )
        classes = sorted({link for link in ctx.pair_classes if is_nvlink(link)}, key=nvlink_count)
        if topo_known and classes:
            parts.append(f"topology {'/'.join(c for c in classes if c)} consistent across peers")
        findings.append(
            Finding(
                "pass",
                "; ".join(parts) or "NVLink consistent across peers",
                evidence=[
                    _ev("NVLinks up", _up_down(ctx, g)[0], "links", g.label) for g in facts_known
                ],
                confidence="high" if facts_known and not unknown else "medium",
            )
        )
    return _with_gap(ctx, findings)

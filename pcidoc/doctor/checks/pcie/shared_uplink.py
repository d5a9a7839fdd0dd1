"""The ``pcie.shared-uplink`` check."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pcidoc._lazyre import lazy
from pcidoc.doctor import config
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.checks._common import no_gpu as _no_gpu
from pcidoc.doctor.checks._common import not_applicable
from pcidoc.doctor.checks._common import with_gap as _with_gap
from pcidoc.doctor.checks.pcie._shared import (
    _ceiling,
    _is_concurrent,
    _model,
    _pinned_h2d,
    _possible,
)
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import gpu_names as _names
from pcidoc.model.facts import Gpu, PcieHop
from pcidoc.model.links import is_nvlink
from pcidoc.model.report import Evidence
from pcidoc.model.units import link_label

# ====================================================================== pcie.shared-uplink


class _Uplink:
    __slots__ = ("gpus", "hop")

    def __init__(self, hop: PcieHop, gpus: list[Gpu]) -> None:
        self.hop = hop
        self.gpus = gpus


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


def _concurrent_h2d(ctx: Context) -> dict[int, list[float]]:
    """Concurrent pinned H2D rates by GPU, in measurement order (read once per run)."""
    memo = ctx.memo.setdefault("pcie.concurrent_h2d", {})
    if None not in memo:
        by_gpu: dict[int, list[float]] = {}
        for t in ctx.transfers(direction="h2d", memory="pinned"):
            if _is_concurrent(t.context):
                by_gpu.setdefault(t.gpu, []).append(t.bandwidth_gbps)
        memo[None] = by_gpu
    return memo[None]  # type: ignore[return-value]


class _Draft:
    """An uplink's finding and how to build its evidence: uplinks that read alike are folded
    into one finding that keeps the first one's evidence (36 switches on a 72-GPU box), so the
    others' evidence is never built."""

    __slots__ = ("evidence", "finding")

    def __init__(self, finding: Finding, evidence: Callable[[], list[Evidence]]) -> None:
        self.finding = finding
        self.evidence = evidence

    def made(self) -> Finding:
        """The finding with its evidence."""
        self.finding.evidence = self.evidence()
        return self.finding


def _uplink_finding(ctx: Context, uplink: _Uplink, vm: bool) -> _Draft:
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

    def evidence(*more: Evidence) -> Callable[[], list[Evidence]]:
        def build() -> list[Evidence]:
            return [
                _ev("uplink port", hop.bus_id, subject=hop.bus_id),
                _ev("uplink link", link_label(up_gen, up_width), subject=hop.bus_id),
                _ev(
                    "uplink model",
                    None if up_model is None else round(up_model, 1),
                    "GB/s",
                    hop.bus_id,
                ),
                _ev("GPUs behind it", len(labels), "GPUs", hop.bus_id),
                _ev(
                    "their combined link model",
                    None if demand is None else round(demand, 1),
                    "GB/s",
                    hop.bus_id,
                ),
                *more,
            ]

        return build

    remediation = [
        "Data loading that feeds all these GPUs at once is capped by this uplink; stagger the "
        "host copies, keep batches resident on the GPU, or spread the job over GPUs behind "
        "different uplinks (`nvidia-smi topo -m`: pick GPUs that are not PIX/PXB to each other).",
    ]

    by_gpu = _concurrent_h2d(ctx)
    concurrent = {g.index: by_gpu.get(g.index, []) for g in uplink.gpus}
    if all(concurrent.values()):
        ratios = []
        measured = []
        for g in uplink.gpus:
            solo = _pinned_h2d(ctx, g.index)
            together = max(concurrent[g.index])
            measured.append(_ev("concurrent pinned H2D", round(together, 1), "GB/s", g.label))
            if solo:
                measured.append(_ev("solo pinned H2D", round(solo, 1), "GB/s", g.label))
                ratios.append(together / solo)
        total = sum(max(v) for v in concurrent.values())
        if ratios:
            worst = min(ratios)
            if worst < config.SHARED_UPLINK_CONCURRENT_WARN_FRACTION:
                return _Draft(
                    Finding(
                        "warn",
                        f"{_names(labels)} share uplink {hop.bus_id} "
                        f"({_ceiling(up_gen, up_width)}): concurrent H2D fell to {worst:.0%} of "
                        f"the solo rate (together {total:.1f} GB/s)",
                        subjects=subjects,
                        remediation=remediation,
                        confidence="high",
                    ),
                    evidence(*measured),
                )
            return _Draft(
                Finding(
                    "pass",
                    f"{_names(labels)} share uplink {hop.bus_id} but measured concurrent H2D "
                    f"held {worst:.0%} of the solo rate",
                    subjects=subjects,
                    confidence="high",
                ),
                evidence(*measured),
            )
        # Concurrent rates without solo ones: judged by the link model below; the evidence
        # lists the concurrent rates read.
        unmeasured = evidence(*measured)
    else:
        unmeasured = evidence()

    if up_model is None or demand is None:
        return _Draft(
            Finding(
                "info",
                f"{_names(labels)} share PCIe uplink {hop.bus_id}; its speed is unknown, so the "
                "contention cannot be quantified",
                subjects=subjects,
                remediation=remediation,
                confidence="medium",
            ),
            unmeasured,
        )
    ratio = demand / up_model
    if ratio > config.SHARED_UPLINK_OVERSUBSCRIBED_RATIO:
        each = up_model / len(labels)
        return _Draft(
            Finding(
                "info",
                f"{_names(labels)} share uplink {hop.bus_id} ({_ceiling(up_gen, up_width)}): "
                f"together their links can move {demand:.0f} GB/s, so concurrent H2D gets about "
                f"{each:.0f} GB/s each ({ratio:.1f}x oversubscribed)",
                subjects=subjects,
                remediation=[
                    *remediation,
                    "Measure it: `pcidoc check --probes full` (concurrent H2D).",
                ],
                confidence="low" if vm else "medium",
            ),
            lambda: [*unmeasured(), _ev("oversubscription", round(ratio, 2), "x", hop.bus_id)],
        )
    return _Draft(
        Finding(
            "pass",
            f"{_names(labels)} share uplink {hop.bus_id} ({_ceiling(up_gen, up_width)}), which "
            f"covers their combined {demand:.0f} GB/s",
            subjects=subjects,
            confidence="medium",
        ),
        unmeasured,
    )


def _switch_pairs_from_matrix(ctx: Context) -> list[tuple[int, int, str]]:
    return [(a, b, link) for a, b, link in ctx.gpu_pairs() if link in ("PIX", "PXB")]


def _no_p2p_pairs(ctx: Context, pairs: Iterable[tuple[int, int, str]]) -> list[Finding]:
    """The GeForce trap: two GPUs under one switch without P2P copy through the uplink twice."""
    if ctx.capture.p2p.can_access_peer is None and ctx.p2p_codes_seen <= {"OK", "U"}:
        return []  # no refusal in the matrices and no CUDA answer: no pair to flag
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


@check("pcie.shared-uplink")
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


_GPU_OR_BDF = lazy(
    r"\bGPUs [0-9,-]+|\bGPU\d+\b|\b[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\b"
)


def _fold_alike(drafts: list[_Draft]) -> list[Finding]:
    """Uplink findings that differ only in GPU names and bus ids, folded into one.

    A big tray has dozens of identical switches (36 on a 72-GPU NVLink domain): one finding
    that names them all reads better than 36 copies.
    """
    groups: dict[tuple[str, str, str], list[_Draft]] = {}
    for draft in drafts:
        finding = draft.finding
        shape = _GPU_OR_BDF.sub("#", finding.summary)
        groups.setdefault((finding.severity, finding.confidence, shape), []).append(draft)
    out: list[Finding] = []
    for group in groups.values():
        if len(group) < _FOLD_MIN:
            out.extend(draft.made() for draft in group)
            continue
        first = group[0].made()
        findings = [draft.finding for draft in group]
        ports = [s for f in findings for s in f.subjects if not s.startswith("GPU")]
        subjects = list(dict.fromkeys(s for f in findings for s in f.subjects))
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

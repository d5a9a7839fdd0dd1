"""The ``numa.cross-socket`` check."""

from __future__ import annotations

from pcidoc.doctor import config
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.checks.numa._shared import (
    _nic_name,
    _single_known_node,
    gpu_node,
    gpu_set,
    is_bond,
    locality_groups,
    pcie_model_of,
    socket_of_node,
    sockets_known,
)
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import counted, short_list
from pcidoc.model.report import Confidence, Evidence, Severity
from pcidoc.model.units import link_label


def _flattened(ctx: Context, sys_pairs: list[tuple[int, int]]) -> bool:
    """Every SYS pair sits on one NUMA node (or nodes are unknown): a VM's flattened view."""
    if not sys_pairs:
        return False
    for a, b in sys_pairs:
        na = gpu_node(ctx.gpu_by_index[a]) if a in ctx.gpu_by_index else None
        nb = gpu_node(ctx.gpu_by_index[b]) if b in ctx.gpu_by_index else None
        if na is not None and nb is not None and na != nb:
            return False
    return bool(ctx.is_vm) or _single_known_node(ctx)


# ---------------------------------------------------------------------- numa.cross-socket


@check("numa.cross-socket")
def numa_cross_socket(ctx: Context) -> Finding | list[Finding]:
    """GPU pairs at SYS not bridged by NVLink, and GPU↔NIC paths at SYS."""
    indices = [g.index for g in ctx.gpus]
    if len(indices) < 2 and not ctx.nics:
        return Finding("skip", "fewer than two GPUs and no NICs: nothing can cross a socket")
    if not ctx.has_topology:
        return Finding(
            "skip",
            "no topology matrix in the capture",
            needs="the topology: `pcidoc capture` on the machine, or import `nvidia-smi topo -m`",
        )
    classes = ctx.pair_classes  # a big NVLink box has thousands of pairs, none SYS or unknown
    pair_count = sum(classes.values())
    sys_pairs = (
        [(a, b) for a, b, link in ctx.gpu_pairs() if link == "SYS"] if "SYS" in classes else []
    )
    unknown = [(a, b) for a, b, link in ctx.gpu_pairs() if link is None] if None in classes else []
    findings: list[Finding] = []
    if _flattened(ctx, sys_pairs) or ctx.flattened_view:
        nodes = sorted({n for g in ctx.gpus if (n := gpu_node(g)) is not None})
        why = ctx.flattened_view or (
            f"{len(sys_pairs)} of {pair_count} GPU pairs read SYS while all GPUs report "
            f"{'NUMA node ' + str(nodes[0]) if nodes else 'no NUMA node'}"
        )
        return Finding(
            "info",
            f"{why}: the topology looks flattened (typical of a VM), so socket locality "
            "cannot be judged",
            evidence=[
                _ev("SYS pairs", len(sys_pairs)),
                _ev("virtual machine", ctx.is_vm),
                _ev("GPU NUMA nodes", ", ".join(map(str, nodes)) or "unknown"),
            ],
            remediation=[
                "Ask the provider which GPUs share a socket or PCIe switch, and give NCCL the "
                "real topology with `NCCL_TOPO_FILE=<xml>` if the hypervisor does not inject one.",
            ],
            confidence="low",
        )
    sockets = socket_of_node(ctx) if sys_pairs else {}  # read only for SYS pairs
    same_socket: list[tuple[int, int]] = []
    cross: list[tuple[int, int]] = []
    for a, b in sys_pairs:
        na, nb = gpu_node(ctx.gpu_by_index[a]), gpu_node(ctx.gpu_by_index[b])
        if na is not None and nb is not None and sockets.get(na, na) == sockets.get(nb, nb):
            same_socket.append((a, b))
        else:
            cross.append((a, b))
    groups = locality_groups(ctx, indices)
    group_text = " or ".join(gpu_set(g) for g in groups)
    group_evidence = [
        _ev("GPU set without a SYS hop", gpu_set(g), subject=_node_label(ctx, g)) for g in groups
    ]
    if cross and not sockets_known(ctx):
        findings.append(_numa_finding(ctx, cross, groups, group_text, group_evidence))
    elif cross:
        findings.append(_cross_finding(ctx, cross, groups, group_text, group_evidence))
    if same_socket:
        findings.append(
            Finding(
                "info",
                f"{len(same_socket)} GPU pair(s) read SYS between NUMA nodes of one socket "
                "(NPS/SNC "
                "mode): a smaller penalty than crossing sockets",
                subjects=[f"GPU{a}-GPU{b}" for a, b in same_socket],
                evidence=[
                    _ev(
                        "NUMA nodes per socket",
                        f"{len(ctx.host.numa_nodes)} nodes on "
                        + counted(ctx.host.sockets, "socket"),
                    )
                ],
                confidence="medium",
            )
        )
    findings.extend(_nic_sys_findings(ctx))
    if unknown:
        findings.append(
            Finding(
                "info",
                f"link class unknown for {len(unknown)} GPU pair(s): not judged",
                subjects=[f"GPU{a}-GPU{b}" for a, b in unknown],
                confidence="low",
            )
        )
    if not findings:
        findings.append(
            Finding(
                "pass",
                f"no GPU pair crosses sockets without NVLink ({pair_count} pair(s) checked)",
                evidence=group_evidence[:4],
            )
        )
    return findings


def _node_label(ctx: Context, group: list[int]) -> str | None:
    nodes = sorted(
        {
            n
            for i in group
            if i in ctx.gpu_by_index and (n := gpu_node(ctx.gpu_by_index[i])) is not None
        }
    )
    return f"NUMA {','.join(map(str, nodes))}" if nodes else None


def _first_pairs(pairs: list[tuple[int, int]]) -> tuple[str, str]:
    """``("GPU0-GPU1, GPU0-GPU2, ...", " and 24 more")``: the first four pairs and the rest."""
    shown = ", ".join(f"GPU{a}-GPU{b}" for a, b in pairs[:4])
    return shown, f" and {len(pairs) - 4} more" if len(pairs) > 4 else ""


def _cross_finding(
    ctx: Context,
    cross: list[tuple[int, int]],
    groups: list[list[int]],
    group_text: str,
    group_evidence: list[Evidence],
) -> Finding:
    socket_gbps = config.socket_interconnect_gbps(ctx.host.cpu_vendor, ctx.host.cpu_model)
    involved = sorted({i for p in cross for i in p})
    models = [m for i in involved if (m := pcie_model_of(ctx.gpu_by_index[i])) is not None]
    pcie_gbps = min(models) if models else None
    evidence = [_ev("GPU pairs across sockets", len(cross))]
    evidence.append(
        _ev(
            "socket interconnect (NCCL model)",
            socket_gbps,
            "GB/s",
            subject=ctx.host.cpu_model or ctx.host.cpu_vendor,
        )
    )
    if pcie_gbps is not None:
        gpu = ctx.gpu_by_index[involved[0]]
        evidence.append(
            _ev(
                "GPU PCIe link (NCCL model)",
                pcie_gbps,
                "GB/s",
                subject=link_label(gpu.pcie.max_gen, gpu.pcie.max_width),
            )
        )
    evidence += group_evidence
    severity: Severity = "info"
    confidence: Confidence = "high"
    bound = ""
    if socket_gbps is not None and pcie_gbps is not None:
        if socket_gbps < pcie_gbps:
            severity = "warn"
            bound = (
                f"; collectives spanning them are bounded by the socket link "
                f"(~{socket_gbps:.0f} GB/s in NCCL's model, below the GPUs' "
                f"{pcie_gbps:.0f} GB/s PCIe links)"
            )
        else:
            bound = (
                f"; the socket link (~{socket_gbps:.0f} GB/s) is not slower than the "
                f"GPUs' PCIe links ({pcie_gbps:.0f} GB/s), but P2P stops there"
            )
    else:
        confidence = "medium"
        bound = "; CPU or link speed unknown, so the socket-link bound was not computed"
    shown, more = _first_pairs(cross)
    advice = (
        f"Keep tightly coupled ranks on one side: use {group_text} together"
        if len(groups) > 1
        else "Keep tightly coupled ranks on one socket"
    )
    return Finding(
        severity,
        f"{len(cross)} GPU pair(s) cross sockets without NVLink ({shown}{more}){bound}",
        subjects=[f"GPU{a}-GPU{b}" for a, b in cross],
        evidence=evidence,
        remediation=[
            advice + " (`CUDA_VISIBLE_DEVICES=...`, Slurm `--gpu-bind=closest`).",
            "NCCL uses shared memory, not P2P, across sockets; jobs that must span both "
            "sockets are bounded by that link, so prefer tensor/pipeline splits that keep the "
            "heavy traffic inside one set.",
        ],
        confidence=confidence,
    )


def _numa_finding(
    ctx: Context,
    cross: list[tuple[int, int]],
    groups: list[list[int]],
    group_text: str,
    group_evidence: list[Evidence],
) -> Finding:
    """SYS pairs between NUMA nodes whose sockets the capture does not give."""
    nodes = sorted({n for g in ctx.gpus if (n := gpu_node(g)) is not None})
    shown, more = _first_pairs(cross)
    sockets = ctx.host.sockets
    where = f"on {sockets} sockets" if sockets else "on an unknown number of sockets"
    return Finding(
        "info",
        f"{len(cross)} GPU pair(s) cross NUMA nodes without NVLink ({shown}{more}); with "
        f"{len(ctx.host.numa_nodes)} NUMA nodes {where} and no NUMA distances, the capture "
        "cannot tell which of them also cross sockets (NPS/SNC modes split one socket into "
        "several nodes)",
        subjects=[f"GPU{a}-GPU{b}" for a, b in cross],
        evidence=[
            _ev("GPU pairs across NUMA nodes (SYS)", len(cross)),
            _ev("GPU NUMA nodes", ", ".join(map(str, nodes)) or "unknown"),
            _ev("sockets", sockets if sockets is not None else "unknown"),
            *group_evidence,
        ],
        remediation=[
            "See which nodes share a socket with `numactl -H` (node distances) or "
            "`lscpu | grep -i numa`, or capture on the machine (`pcidoc capture`) so the "
            "distances are read.",
            f"Keep tightly coupled ranks together: use {group_text} together."
            if any(len(g) > 1 for g in groups)
            else "Each GPU sits on its own NUMA node: once the distances show which nodes "
            "share a socket, keep tightly coupled ranks on one socket's GPUs.",
        ],
        confidence="medium",
    )


def _nic_sys_findings(ctx: Context) -> list[Finding]:
    nodes = {n for g in ctx.gpus if (n := gpu_node(g)) is not None}
    if len(nodes) <= 1:
        return []  # one NUMA node: a SYS to a NIC is a flattened view, not a socket crossing
    far: list[str] = []
    evidence = []
    indices = [g.index for g in ctx.gpus]
    for nic in ctx.nics:
        if is_bond(nic):
            continue
        column = ctx.nic_column(nic.label)
        if "SYS" not in column:
            continue
        sys_gpus = [index for index, link in zip(indices, column, strict=True) if link == "SYS"]
        if sys_gpus and len(sys_gpus) < len(ctx.gpus):
            far.append(nic.label)
            evidence.append(
                _ev("GPUs at SYS from this NIC", gpu_set(sys_gpus), subject=_nic_name(nic))
            )
    if not far:
        return []
    if sockets_known(ctx):
        text = "sit on the other socket from some GPUs"
        hop = "crosses the socket link"
    else:
        text = "sit on another NUMA node than some GPUs (SYS)"
        hop = "goes through the CPU interconnect"
    return [
        Finding(
            "info",
            f"{len(far)} NIC(s) {text} ({short_list(far)}): traffic between those GPUs and "
            f"NICs {hop} (see numa.nic-affinity)",
            subjects=far,
            evidence=evidence,
            confidence="medium",
        )
    ]

"""NUMA checks: GPU pairs and GPU↔NIC paths across sockets (``numa.cross-socket``), GPU
processes bound away from their GPU (``numa.process-affinity``) and GPUs without a near NIC
(``numa.nic-affinity``)."""

from __future__ import annotations

from pcidoc.doctor import config
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.model.cpulist import format_cpulist, parse_cpulist
from pcidoc.model.facts import Gpu, GpuProcess, Nic
from pcidoc.model.links import rank
from pcidoc.model.report import Confidence, Evidence, Severity
from pcidoc.model.units import link_label

_NEAR_NIC = ("PIX", "PXB")


# ------------------------------------------------------------------------------ helpers


def gpu_set(indices: list[int] | set[int]) -> str:
    """``[0, 1, 2, 3]`` -> ``"GPUs 0-3"``; one GPU -> ``"GPU0"``."""
    ordered = sorted(indices)
    if len(ordered) == 1:
        return f"GPU{ordered[0]}"
    return f"GPUs {format_cpulist(set(ordered))}"


def gpu_node(gpu: Gpu) -> int | None:
    """The GPU's NUMA node, ``None`` when unknown or -1."""
    return gpu.numa_node if gpu.numa_node is not None and gpu.numa_node >= 0 else None


def socket_of_node(ctx: Context) -> dict[int, int]:
    """NUMA node -> socket key, merging nodes of one socket (NPS/SNC) by SLIT distance.

    Without distances, nodes are taken as sockets (the common case) unless the host reports a
    single socket, in which case every node is on socket 0.
    """
    nodes = sorted(ctx.host.numa_nodes, key=lambda n: n.id)
    ids = [n.id for n in nodes]
    if ctx.host.sockets == 1:
        return dict.fromkeys(ids, 0)
    parent = {i: i for i in ids}

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for node in nodes:
        for pos, dist in enumerate(node.distances or []):
            if (
                pos < len(ids)
                and ids[pos] != node.id
                and dist <= config.NUMA_SAME_SOCKET_DISTANCE_MAX
            ):
                parent[find(ids[pos])] = find(node.id)
    return {i: find(i) for i in ids}


def pcie_model_of(gpu: Gpu) -> float | None:
    """NCCL's model of the GPU's PCIe link at its maximum (slot-limited) gen and width."""
    link = gpu.pcie
    return config.pcie_nccl_model_gbps(
        link.max_gen or link.current_gen, link.max_width or link.current_width
    )


def locality_groups(ctx: Context, indices: list[int]) -> list[list[int]]:
    """GPU sets that avoid the socket interconnect: connected by links better than SYS, or
    (when every pair is SYS) by NUMA socket."""
    parent = {i: i for i in indices}

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for pos, a in enumerate(indices):
        for b in indices[pos + 1 :]:
            link = ctx.gpu_link(a, b)
            if link is not None and link != "SYS":
                parent[find(b)] = find(a)
    groups: dict[int, list[int]] = {}
    for i in indices:
        groups.setdefault(find(i), []).append(i)
    result = sorted(groups.values())
    if all(len(g) == 1 for g in result) and len(result) > 1:
        sockets = socket_of_node(ctx)
        by_socket: dict[int, list[int]] = {}
        for i in indices:
            node = gpu_node(ctx.gpu_by_index[i]) if i in ctx.gpu_by_index else None
            if node is None:
                return result
            by_socket.setdefault(sockets.get(node, node), []).append(i)
        result = sorted(by_socket.values())
    return result


def is_bond(nic: Nic) -> bool:
    """A bonded (management) interface such as ``mlx5_bond_0``."""
    return "bond" in (nic.name or "").lower() or any("bond" in n for n in nic.netdevs)


def _nic_name(nic: Nic) -> str:
    return f"{nic.label} ({nic.name})" if nic.name and nic.name != nic.label else nic.label


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


def _single_known_node(ctx: Context) -> bool:
    """Every GPU reports the same NUMA node (unknown nodes do not count as one)."""
    nodes = [gpu_node(g) for g in ctx.gpus]
    return bool(nodes) and None not in nodes and len(set(nodes)) == 1


# ---------------------------------------------------------------------- numa.cross-socket


@check("numa.cross-socket", "GPU pairs and NIC paths across sockets", needs="facts")
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
    pairs = list(ctx.gpu_pairs())
    sys_pairs = [(a, b) for a, b, link in pairs if link == "SYS"]
    unknown = [(a, b) for a, b, link in pairs if link is None]
    findings: list[Finding] = []
    if _flattened(ctx, sys_pairs) or ctx.flattened_view:
        nodes = sorted({n for g in ctx.gpus if (n := gpu_node(g)) is not None})
        why = ctx.flattened_view or (
            f"{len(sys_pairs)} of {len(pairs)} GPU pairs read SYS while all GPUs report "
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
    sockets = socket_of_node(ctx)
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
    if cross:
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
                        f"{len(ctx.host.numa_nodes)} nodes on {ctx.host.sockets or '?'} socket(s)",
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
                f"no GPU pair crosses sockets without NVLink ({len(pairs)} pair(s) checked)",
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
    shown = ", ".join(f"GPU{a}-GPU{b}" for a, b in cross[:4])
    more = f" and {len(cross) - 4} more" if len(cross) > 4 else ""
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


def _nic_sys_findings(ctx: Context) -> list[Finding]:
    nodes = {n for g in ctx.gpus if (n := gpu_node(g)) is not None}
    if len(nodes) <= 1:
        return []  # one NUMA node: a SYS to a NIC is a flattened view, not a socket crossing
    far: list[str] = []
    evidence = []
    for nic in ctx.nics:
        if is_bond(nic):
            continue
        sys_gpus = [g.index for g in ctx.gpus if ctx.link(g.label, nic.label) == "SYS"]
        if sys_gpus and len(sys_gpus) < len(ctx.gpus):
            far.append(nic.label)
            evidence.append(
                _ev("GPUs at SYS from this NIC", gpu_set(sys_gpus), subject=_nic_name(nic))
            )
    if not far:
        return []
    return [
        Finding(
            "info",
            f"{len(far)} NIC(s) sit on the other socket from some GPUs "
            f"({', '.join(far[:4])}): traffic between those GPUs and NICs crosses the socket "
            "link (see numa.nic-affinity)",
            subjects=far,
            evidence=evidence,
            confidence="medium",
        )
    ]


# ------------------------------------------------------------------ numa.process-affinity


@check("numa.process-affinity", "GPU processes vs their GPU's NUMA node", needs="facts")
def numa_process_affinity(ctx: Context) -> Finding | list[Finding]:
    """Running GPU processes whose allowed CPUs or memory nodes are away from their GPU."""
    processes = ctx.host.processes
    if not processes:
        if ctx.capture.origin.kind != "live":
            return Finding(
                "skip",
                "process list not captured (live captures only)",
                needs="run `pcidoc check` on the machine while the job runs",
            )
        return Finding(
            "info",
            "no GPU processes were running: nothing to judge",
            remediation=["Run `pcidoc check --only numa.process-affinity` while your job runs."],
        )
    container = ctx.host.virtualization.container
    findings: list[Finding] = []
    bound_nodes: list[bool] = []
    judged = 0
    for proc in processes:
        outcome = _judge_process(ctx, proc, container)
        if outcome is None:
            continue
        finding, bound = outcome
        judged += 1
        bound_nodes.append(bound)
        if finding is not None:
            findings.append(finding)
    if judged == 0:
        return Finding(
            "info",
            f"{len(processes)} GPU process(es) found but their CPU affinity or their GPUs' local "
            "CPUs are unknown: not judged",
            confidence="low",
        )
    if ctx.host.numa_balancing and bound_nodes and all(bound_nodes):
        findings.append(
            Finding(
                "info",
                "automatic NUMA balancing is on while the GPU processes are bound to nodes: it "
                "only adds page-migration overhead",
                evidence=[_ev("kernel.numa_balancing", True)],
                remediation=[
                    "`sudo sysctl kernel.numa_balancing=0` (persist it in `/etc/sysctl.d/`)."
                ],
                confidence="medium",
            )
        )
    if not any(f.severity in ("warn", "fail") for f in findings):
        findings.append(
            Finding(
                "pass",
                f"{judged} GPU process(es) may run on their GPUs' local CPUs",
                evidence=[_ev("processes judged", judged)],
            )
        )
    return findings


def _local_cpus(ctx: Context, gpus: list[Gpu]) -> frozenset[int] | None:
    local: set[int] = set()
    for gpu in gpus:
        cpus = ctx.gpu_cpus(gpu)
        node = gpu_node(gpu)
        if cpus is None and node is not None:
            cpus = next((parse_cpulist(n.cpus) for n in ctx.host.numa_nodes if n.id == node), None)
        if cpus is None:
            return None
        local |= cpus
    return frozenset(local)


def _judge_process(
    ctx: Context, proc: GpuProcess, container: str | None
) -> tuple[Finding | None, bool] | None:
    gpus = [ctx.gpu_by_index[i] for i in proc.gpus if i in ctx.gpu_by_index]
    allowed = parse_cpulist(proc.cpu_affinity)
    local = _local_cpus(ctx, gpus) if gpus else None
    if not gpus or allowed is None or local is None or not allowed:
        return None
    who = f"PID {proc.pid}" + (f" ({proc.name})" if proc.name else "")
    subjects = [g.label for g in gpus]
    nodes = sorted({n for g in gpus if (n := gpu_node(g)) is not None})
    overlap = allowed & local
    share = len(overlap) / len(allowed)
    all_node_cpus = [parse_cpulist(n.cpus) for n in ctx.host.numa_nodes]
    spans = sum(1 for cpus in all_node_cpus if cpus and allowed & cpus)
    bound = spans <= 1
    scope = "the container's cpuset" if container else "its CPU affinity"
    evidence = [
        _ev("allowed CPUs", proc.cpu_affinity, subject=who),
        _ev("GPU-local CPUs", format_cpulist(local), subject=", ".join(subjects)),
        _ev("share of allowed CPUs that are local", round(share, 2), subject=who),
    ]
    fix = _bind_fix(gpus, nodes, local, container)
    mems = parse_cpulist(proc.mems_allowed)
    if not overlap and nodes:
        return Finding(
            "fail",
            f"{who} uses {', '.join(subjects)} but {scope} allows only CPUs "
            f"{proc.cpu_affinity}, none local to the GPU (NUMA {','.join(map(str, nodes))})",
            subjects=subjects,
            evidence=evidence,
            remediation=fix,
            confidence="medium" if container else "high",
        ), bound
    if share < config.PROCESS_LOCAL_CPU_WARN_SHARE:
        return Finding(
            "warn",
            f"{who} on {', '.join(subjects)}: only {share:.0%} of its allowed CPUs are local, so "
            "its threads float across sockets",
            subjects=subjects,
            evidence=evidence,
            remediation=fix,
            confidence="medium" if container else "high",
        ), bound
    if mems is not None and nodes and not set(nodes) & mems:
        return Finding(
            "warn",
            f"{who} on {', '.join(subjects)} may allocate memory only on NUMA node(s) "
            f"{proc.mems_allowed}, not on its GPU's node {','.join(map(str, nodes))}",
            subjects=subjects,
            evidence=[*evidence, _ev("Mems_allowed", proc.mems_allowed, subject=who)],
            remediation=fix,
        ), bound
    if spans > 1 and len(ctx.host.numa_nodes) > 1:
        return Finding(
            "info",
            f"{who} on {', '.join(subjects)} is not bound: it may run on {spans} NUMA nodes "
            f"({share:.0%} of its CPUs are local)",
            subjects=subjects,
            evidence=evidence,
            remediation=fix,
            confidence="medium",
        ), bound
    return None, bound


def _bind_fix(
    gpus: list[Gpu], nodes: list[int], local: frozenset[int], container: str | None
) -> list[str]:
    node = ",".join(map(str, nodes)) or "<node>"
    bdf = next((g.bus_id for g in gpus if g.bus_id), "<gpu-bdf>")
    steps = [
        f"Bind each rank to its GPU's node: `numactl --cpunodebind={node} --membind={node} "
        "python train.py`, or with torchrun "
        f"`taskset -c $(cat /sys/bus/pci/devices/{bdf}/local_cpulist)`, or Slurm "
        "`--cpu-bind=cores --gpu-bind=closest`.",
    ]
    if container:
        steps.append(
            f"In a container the cpuset decides: start it with `--cpuset-cpus="
            f"{format_cpulist(local)} --cpuset-mems={node}` for this GPU."
        )
    return steps


# ---------------------------------------------------------------------- numa.nic-affinity


def _rdma_nic(nic: Nic) -> bool:
    name = (nic.name or "").lower()
    return nic.kind == "infiniband" or name.startswith(("mlx", "ib", "bnxt_re", "irdma"))


@check("numa.nic-affinity", "GPU↔NIC locality and GPUDirect RDMA", needs="facts")
def numa_nic_affinity(ctx: Context) -> Finding | list[Finding]:
    """GPUs with no PCIe-local NIC, and GPUDirect RDMA kernel support."""
    if not ctx.gpus:
        return Finding("skip", "no GPUs in the capture")
    if not ctx.nics and not ctx.capture.topology.labels and ctx.capture.origin.kind == "import":
        return Finding(
            "skip",
            "no topology matrix in the imported text, so its NICs are not known",
            needs="import `nvidia-smi topo -m` (with its NIC columns), or run `pcidoc check` on "
            "the machine",
        )
    if not ctx.nics:
        return Finding(
            "info",
            "no NICs in the topology: single-node only (or NICs were not captured)",
            confidence="medium",
        )
    findings: list[Finding] = []
    bonds = [n for n in ctx.nics if is_bond(n)]
    data_nics = [n for n in ctx.nics if not is_bond(n)] or list(ctx.nics)
    for nic in bonds:
        links = [ctx.link(g.label, nic.label) for g in ctx.gpus]
        if all(link in (None, "SYS", "NODE", "PHB") for link in links):
            findings.append(
                Finding(
                    "info",
                    f"{_nic_name(nic)} is a bonded interface far from every GPU: keep it out of "
                    "NCCL's NIC list",
                    subjects=[nic.name or nic.label],
                    remediation=[
                        f"List the data NICs explicitly, e.g. `NCCL_IB_HCA=="
                        f"{','.join(n.name or n.label for n in data_nics[:4])}`."
                    ],
                    confidence="medium",
                )
            )
    best: dict[int, str | None] = {}
    for gpu in ctx.gpus:
        classes = [c for n in data_nics if (c := ctx.link(gpu.label, n.label)) is not None]
        best[gpu.index] = min(classes, key=lambda c: rank(c) or 99) if classes else None
    known = {i: c for i, c in best.items() if c is not None}
    far = sorted(i for i, c in known.items() if c not in _NEAR_NIC)
    if not known:
        findings.append(
            Finding(
                "info",
                "GPU↔NIC link classes are not in the topology: NIC locality not judged",
                confidence="low",
                needs="import `nvidia-smi topo -m` with its NIC columns, or run on the machine",
            )
        )
    elif far and _flattened_nics(ctx, far):
        findings.append(
            Finding(
                "info",
                "every GPU↔NIC path reads SYS while all GPUs sit on one NUMA node: the topology "
                "looks flattened by a hypervisor, NIC locality cannot be judged",
                confidence="low",
                remediation=[
                    "Ask the provider for the GPU↔NIC pairing and pass it to NCCL with "
                    "`NCCL_TOPO_FILE=<xml>`."
                ],
            )
        )
    elif far:
        findings.append(_far_finding(ctx, far, known, data_nics))
    else:
        near_nics = {
            n.label for n in data_nics for g in ctx.gpus if ctx.link(g.label, n.label) in _NEAR_NIC
        }
        one_to_one = all(
            sum(1 for n in data_nics if ctx.link(g.label, n.label) == "PIX") >= 1 for g in ctx.gpus
        )
        findings.append(
            Finding(
                "pass",
                f"every GPU has a PCIe-local NIC ({len(near_nics)} NIC(s) at PIX/PXB"
                + (", 1:1 PIX" if one_to_one else "")
                + ")",
                evidence=[
                    _ev("nearest NIC", _nearest_nics(ctx, i, c, data_nics), subject=f"GPU{i}")
                    for i, c in known.items()
                ][:8],
            )
        )
    findings.extend(_gpudirect_findings(ctx, data_nics))
    return findings


def _nearest_nics(ctx: Context, index: int, link: str | None, nics: list[Nic]) -> str:
    """``"mlx5_6, mlx5_7 (PXB)"``: the NICs at a GPU's nearest link class, by name."""
    names = [n.name or n.label for n in nics if ctx.link(f"GPU{index}", n.label) == link]
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return f"{shown} ({link})" if shown else str(link)


def _flattened_nics(ctx: Context, far: list[int]) -> bool:
    if len(far) < len(ctx.gpus):
        return False
    links = {ctx.link(g.label, n.label) for g in ctx.gpus for n in ctx.nics}
    if not links <= {"SYS", None}:
        return False
    return (
        bool(ctx.is_vm)
        or bool(ctx.flattened_view)
        or (_single_known_node(ctx) and ctx.is_vm is not False)
    )


def _far_finding(
    ctx: Context, far: list[int], known: dict[int, str | None], data_nics: list[Nic]
) -> Finding:
    evidence = [_ev("nearest NIC path", known[i], subject=f"GPU{i}") for i in far]
    near = [i for i in known if i not in far]
    nvlinked = (
        len(ctx.gpus) > 1 and len(ctx.nvlink_pairs) == len(ctx.gpus) * (len(ctx.gpus) - 1) // 2
    )
    if near:
        summary = (
            f"{gpu_set(far)} have no PCIe-local NIC (nearest: "
            f"{'/'.join(sorted({known[i] or '?' for i in far}))}) while {gpu_set(near)} do: "
            "GPUDirect RDMA for them crosses the CPU"
        )
        near_nics = {
            n.label for n in data_nics for i in near if ctx.link(f"GPU{i}", n.label) in _NEAR_NIC
        }
        if len(near_nics) < len(known):
            summary += (
                f"; {len(near_nics)} local NIC port(s) for {len(known)} GPUs: expect about "
                f"{len(near_nics) / len(known):.0%} of a one-NIC-per-GPU inter-node "
                "bandwidth"
            )
    else:
        summary = (
            f"no GPU has a PCIe-local NIC (all {len(far)} GPUs reach the NICs at "
            f"{'/'.join(sorted({known[i] or '?' for i in far}))}): GPUDirect RDMA crosses "
            "the CPU for every GPU"
        )
    summary += " (matters for multi-node jobs)"
    remediation = []
    if nvlinked and near:
        remediation.append(
            "NCCL can send these GPUs' traffic over NVLink to a GPU that owns a NIC (PXN, on by "
            "default; keep `NCCL_PXN_DISABLE` unset)."
        )
    if near:
        remediation.append(
            f"For multi-node jobs that use only some GPUs, prefer {gpu_set(near)}, which own a "
            "NIC; or move NICs into the other GPUs' PCIe switches."
        )
    else:
        remediation.append(
            "For multi-node training the NICs belong in the GPUs' PCIe switches (one NIC per GPU "
            "or per GPU pair); as wired, inter-node traffic goes through the CPU."
        )
    remediation.append(
        "NCCL uses GPUDirect RDMA only up to PXB by default (`NCCL_NET_GDR_LEVEL`); raising it "
        "makes RDMA cross the CPU at lower bandwidth, so leave it unless you measure a gain."
    )
    return Finding(
        "warn",
        summary,
        subjects=[f"GPU{i}" for i in far],
        evidence=evidence,
        remediation=remediation,
        confidence="high" if ctx.is_vm is False else "medium",
    )


def _gpudirect_findings(ctx: Context, data_nics: list[Nic]) -> list[Finding]:
    rdma = [n for n in data_nics if _rdma_nic(n)]
    gd = ctx.host.gpudirect
    if not rdma or ctx.capture.origin.kind != "live":
        return []
    if gd.nvidia_peermem is False and not gd.nv_peer_mem:
        return [
            Finding(
                "warn",
                f"{len(rdma)} RDMA NIC(s) present but the `nvidia_peermem` module is not loaded: "
                "GPUDirect RDMA is off unless NCCL can use DMA-BUF",
                subjects=[n.name or n.label for n in rdma],
                evidence=[
                    _ev("nvidia_peermem loaded", False),
                    _ev("nv_peer_mem loaded", gd.nv_peer_mem),
                ],
                remediation=[
                    "`sudo modprobe nvidia-peermem` (and add it to `/etc/modules-load.d/` so it "
                    "loads at boot), or use the open GPU kernel modules with a DMA-BUF capable "
                    "kernel, which NCCL detects by itself.",
                    "Check with `NCCL_DEBUG=INFO`: look for `GPU Direct RDMA Enabled` and channels "
                    "`via NET/IB/.../GDRDMA`.",
                ],
                confidence="medium",
            )
        ]
    return []

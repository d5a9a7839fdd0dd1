"""The ``numa.process-affinity`` check."""

from __future__ import annotations

from pcidoc.doctor import config
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.checks.numa._shared import gpu_node
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.model.cpulist import format_cpulist, parse_cpulist
from pcidoc.model.facts import Gpu, GpuProcess

# ------------------------------------------------------------------ numa.process-affinity


@check("numa.process-affinity")
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

"""The ``transfer.remote-numa`` check."""

from __future__ import annotations

from pcidoc.doctor import config
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.checks.transfer._shared import _DIRECTION, _best
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import gbps as _gbps
from pcidoc.model.measurements import TransferMeasurement

# ------------------------------------------------------------------- transfer.remote-numa


def _placement(ctx: Context, t: TransferMeasurement) -> str | None:
    if t.placement in ("local", "remote"):
        return t.placement
    gpu = ctx.gpu_by_index.get(t.gpu)
    if (
        t.host_numa_node is not None
        and gpu is not None
        and gpu.numa_node is not None
        and gpu.numa_node >= 0
    ):
        return "local" if t.host_numa_node == gpu.numa_node else "remote"
    return None


def _placement_comparisons(pinned: list[TransferMeasurement]) -> list[Finding]:
    """The same copy run under different placements (``numactl -m/-N``...): their ratio.

    Works without the GPU's own NUMA node: when one import holds the run with its buffer on
    two nodes, the slower node is the remote one for this GPU.
    """
    runs: dict[tuple[int, str], dict[str, TransferMeasurement]] = {}
    for t in pinned:
        key = t.context or "no placement given"
        slot = runs.setdefault((t.gpu, t.direction), {})
        if key not in slot or t.bandwidth_gbps > slot[key].bandwidth_gbps:
            slot[key] = t
    findings = []
    for (index, direction), by_context in sorted(runs.items()):
        if len(by_context) < 2:
            continue
        fast = max(by_context.values(), key=lambda t: t.bandwidth_gbps)
        slow = min(by_context.values(), key=lambda t: t.bandwidth_gbps)
        if fast.bandwidth_gbps <= 0:
            continue
        findings.append(_placement_finding(index, direction, fast, slow))
    return findings


def _placement_finding(
    index: int, direction: str, fast: TransferMeasurement, slow: TransferMeasurement
) -> Finding:
    label, name = f"GPU{index}", _DIRECTION[direction]
    ratio = slow.bandwidth_gbps / fast.bandwidth_gbps
    nodes = (fast.host_numa_node, slow.host_numa_node)
    other_node = None not in nodes and nodes[0] != nodes[1]
    fast_how, slow_how = fast.context or "no placement", slow.context or "no placement"
    evidence = [
        _ev(f"pinned {name} under {how}", t.bandwidth_gbps, "GB/s", label)
        for t, how in ((fast, fast_how), (slow, slow_how))
    ]
    evidence.append(_ev("slow / fast", f"{ratio:.0%}", subject=label))
    if ratio >= config.REMOTE_NUMA_WARN_FRACTION:
        return Finding(
            "pass",
            f"{label} pinned {name} keeps {ratio:.0%} across placements ({slow_how} vs {fast_how})",
            subjects=[label],
            evidence=evidence,
            confidence="medium",
        )
    slower = f"{1 / ratio:.1f}× slower" if ratio > 0 else "at 0 GB/s"
    head = (
        f"{label} pinned {name} is {slower} under `{slow_how}` than under `{fast_how}` "
        f"({_gbps(slow.bandwidth_gbps)} vs {_gbps(fast.bandwidth_gbps)} GB/s)"
    )
    if other_node:
        head += f": memory on node {nodes[1]} is remote to this GPU, node {nodes[0]} is local"
    step = (
        f"Run this GPU's work with its memory and threads placed like `{fast.context}` "
        "(`numactl --cpunodebind=<n> --membind=<n>`; Slurm `--gpu-bind=closest "
        "--cpu-bind=cores`)."
        if fast.context
        else "Compare with `nvidia-smi topo -m` (NUMA Affinity) to learn the GPU's node."
    )
    return Finding(
        "warn" if other_node else "info",
        head,
        subjects=[label],
        evidence=evidence,
        remediation=[step],
        confidence="medium",
    )


@check("transfer.remote-numa")
def transfer_remote_numa(ctx: Context) -> Finding | list[Finding]:
    """Pinned H2D/D2H from the GPU's local NUMA node vs a remote one."""
    pinned = [
        t for t in ctx.transfers(memory="pinned", bidirectional=False) if t.direction in _DIRECTION
    ]
    # pcidoc's probe measures local and remote in one NUMA step (same allocator and copy
    # count): compare those two, not the remote run with the plateau (issue 9).
    numa_step = {(t.gpu, t.direction) for t in pinned if t.conditions.get("step") == "numa"}
    pinned = [
        t
        for t in pinned
        if (t.gpu, t.direction) not in numa_step or t.conditions.get("step") == "numa"
    ]
    placed: dict[tuple[int, str], dict[str, list[TransferMeasurement]]] = {}
    for t in pinned:
        where = _placement(ctx, t)
        if where:
            placed.setdefault((t.gpu, t.direction), {}).setdefault(where, []).append(t)
    comparable = {k: v for k, v in placed.items() if "local" in v and "remote" in v}
    if not comparable:
        compared = _placement_comparisons(pinned)
        if compared:
            return compared
        if ctx.single_numa_node:
            return Finding("info", "single NUMA node: remote-socket memory does not apply")
        return ctx.unmeasured(
            "transfer", "no pinned copy was measured from both the local and a remote NUMA node"
        )
    findings: list[Finding] = []
    ratios = []
    for (index, direction), where in sorted(comparable.items()):
        local, remote = _best(where["local"]), _best(where["remote"])
        ratio = remote.bandwidth_gbps / local.bandwidth_gbps if local.bandwidth_gbps else 1.0
        label = f"GPU{index}"
        name = _DIRECTION[direction]
        ratios.append(ratio)
        evidence = [
            _ev(f"pinned {name} from the local node", local.bandwidth_gbps, "GB/s", label),
            _ev(f"pinned {name} from a remote node", remote.bandwidth_gbps, "GB/s", label),
        ]
        for t in (local, remote):
            if t.context:
                evidence.append(_ev(f"{_placement(ctx, t)} run", t.context, subject=label))
        if ratio < config.REMOTE_NUMA_WARN_FRACTION:
            gpu = ctx.gpu_by_index.get(index)
            node = gpu.numa_node if gpu and gpu.numa_node is not None else "<n>"
            findings.append(
                Finding(
                    "warn",
                    f"{label} pinned {name} from remote memory runs at {ratio:.0%} of local "
                    f"({_gbps(remote.bandwidth_gbps)} vs {_gbps(local.bandwidth_gbps)} GB/s): "
                    "unbound ranks pay this whenever they land on the wrong socket",
                    subjects=[label],
                    evidence=evidence,
                    remediation=[
                        f"Bind ranks to their GPU's node: `numactl --cpunodebind={node} "
                        f"--membind={node} <cmd>`; with torchrun wrap each rank in `taskset -c "
                        "<local cpus>`; with Slurm use `--gpu-bind=closest --cpu-bind=cores`.",
                    ],
                )
            )
        else:
            findings.append(
                Finding(
                    "pass",
                    f"{label} {name} remote/local = {ratio:.0%}",
                    evidence=evidence,
                )
            )
    if not any(f.severity == "warn" for f in findings):
        evidence = [e for f in findings for e in f.evidence]
        return Finding(
            "pass",
            f"remote-node pinned copies keep ≥ {config.REMOTE_NUMA_WARN_FRACTION:.0%} of local "
            f"bandwidth (lowest {min(ratios):.0%})",
            evidence=evidence,
        )
    return [f for f in findings if f.severity != "pass"]

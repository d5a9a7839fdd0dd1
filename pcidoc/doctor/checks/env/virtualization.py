"""The ``env.virtualization`` check."""

from __future__ import annotations

from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import joined as _names
from pcidoc.model.report import Evidence

# ===================================================================== env.virtualization


def _flattened(ctx: Context) -> tuple[bool, list[Evidence]]:
    """Every GPU pair SYS while every GPU reports the same single NUMA node (or none)."""
    pairs = [link for _, _, link in ctx.gpu_pairs()]
    if len(ctx.gpus) < 2 or not pairs or any(link is None for link in pairs):
        return False, []
    nodes = {g.numa_node for g in ctx.gpus}
    all_sys = all(link == "SYS" for link in pairs)
    one_node = len(nodes) == 1 and next(iter(nodes)) is not None
    no_node = all(n is None or n < 0 for n in nodes)
    evidence = [
        _ev("GPU pairs", len(pairs), "pairs"),
        _ev("pairs at SYS", sum(1 for link in pairs if link == "SYS"), "pairs"),
        _ev(
            "GPU NUMA nodes",
            _names([str(n) for n in sorted(nodes, key=lambda n: -2 if n is None else n)]),
        ),
    ]
    if ctx.flattened_view:
        return True, evidence
    cpus = {g.cpu_affinity for g in ctx.gpus if g.cpu_affinity}
    if no_node and len(cpus) > 1:
        return False, []  # old-driver matrix with per-GPU CPU affinity: two sockets
    return all_sys and (one_node or no_node), evidence


@check("env.virtualization")
def env_virtualization(ctx: Context) -> list[Finding]:
    """Say whether this is a VM, vGPU, MIG, container or CC machine and what that changes.

    Args:
        ctx: The machine.

    Returns:
        Infos describing each layer and its consequences; a failure for confidential computing
        with several GPUs and no multi-GPU mode; a pass on bare metal; a skip when unknown.
    """
    virt = ctx.host.virtualization
    modes = {g.virtualization_mode for g in ctx.gpus if g.virtualization_mode}
    findings: list[Finding] = []

    # --- VM / passthrough / vGPU
    vm = ctx.is_vm
    flat, flat_evidence = _flattened(ctx) if vm is not False else (False, [])
    if vm:
        how = []
        if "passthrough" in modes:
            how.append("GPUs passed through")
        if "vgpu" in modes:
            how.append("vGPU")
        vendor = f" ({virt.vendor})" if virt.vendor else ""
        evidence = [
            _ev("hypervisor flag", virt.hypervisor),
            _ev("hypervisor vendor", virt.vendor),
            _ev("GPU virtualization modes", _names(sorted(modes)) or None),
        ]
        numa_unknown = [g.label for g in ctx.gpus if g.numa_node is None or g.numa_node < 0]
        if numa_unknown:
            evidence.append(_ev("GPUs without a NUMA node", len(numa_unknown), "GPUs"))
        topo_file = "NCCL_TOPO_FILE" in ctx.host.environment
        findings.append(
            Finding(
                "info",
                f"runs in a VM{vendor}{': ' + ', '.join(how) if how else ''}: the PCIe tree, NUMA "
                "placement and link speeds seen here are the hypervisor's virtual ones, so "
                "topology-derived locality is unreliable"
                + ("; the topology also looks flattened (all pairs SYS)" if flat else ""),
                evidence=evidence + flat_evidence,
                remediation=[
                    "Give NCCL the real topology: the cloud's topology XML via `NCCL_TOPO_FILE` "
                    "(NCCL also reads `/var/run/nvidia-topologyd/virtualTopology.xml` when "
                    "present)" + (" - already set here" if topo_file else "") + ".",
                    "P2P between GPUs needs the hypervisor's support (e.g. QEMU "
                    "`x-nv-gpudirect-clique`); leave ACS on in a VM and enable ATS on the NICs.",
                ],
                confidence="high"
                if virt.hypervisor or modes & {"passthrough", "vgpu"}
                else "medium",
            )
        )
        if "vgpu" in modes:
            findings.append(
                Finding(
                    "info",
                    "vGPU guest: P2P over PCIe is not supported, NVLink P2P only for "
                    "time-sliced vGPUs that own the whole GPU, and PCIe throughput counters "
                    "are not reported",
                    subjects=[g.label for g in ctx.gpus if g.virtualization_mode == "vgpu"],
                    confidence="high",
                )
            )
    elif flat:
        findings.append(
            Finding(
                "info",
                "topology looks flattened by a hypervisor: every GPU pair is SYS while all GPUs "
                "report the same NUMA node (or none); locality derived from it is unreliable",
                evidence=flat_evidence,
                remediation=["If this is a VM, give NCCL the real topology with `NCCL_TOPO_FILE`."],
                confidence="low",
            )
        )
    if modes & {"host_vgpu", "host_vsga"}:
        findings.append(
            Finding(
                "info",
                "this is a vGPU host: the GPUs are shared with VMs, and guests see virtual "
                "topology",
                evidence=[_ev("GPU virtualization modes", _names(sorted(modes)))],
                confidence="high",
            )
        )

    # --- MIG
    mig = sorted(ctx.mig_gpus)
    if mig:
        labels = [f"GPU{i}" for i in mig]
        findings.append(
            Finding(
                "info",
                f"MIG enabled on {_names(labels)}: no P2P between instances on different GPUs, "
                "NCCL does not support MIG, NVLinks read as down; the interconnect checks for "
                "these GPUs are limited",
                subjects=labels,
                evidence=[_ev("MIG enabled", True, subject=label) for label in labels],
                remediation=[
                    "For multi-GPU training disable MIG: `sudo nvidia-smi -i <n> -mig 0`"
                    " (then reset the GPU)."
                ],
                confidence="high",
            )
        )
    pending = [
        g.label
        for g in ctx.gpus
        if g.mig.pending is not None
        and g.mig.enabled is not None
        and g.mig.pending != g.mig.enabled
    ]
    if pending:
        findings.append(
            Finding(
                "info",
                f"MIG mode change pending on {_names(pending)}: it applies after a GPU reset",
                subjects=pending,
                remediation=["Reset the GPU with no process on it: `sudo nvidia-smi -r -i <n>`."],
                confidence="high",
            )
        )

    # --- containers
    if virt.container:
        findings.append(
            Finding(
                "info",
                f"runs in a {virt.container} container: NCCL needs shared memory and pinned "
                "memory limits raised, and root inside it cannot read PCIe extended config "
                "space (ACS/AER)",
                evidence=[_ev("container", virt.container)],
                remediation=[
                    "Start it with `--ipc=host` (or `--shm-size=1g`) and `--ulimit memlock=-1`; "
                    "ranks in different containers need a shared IPC namespace for P2P/SHM.",
                    "Run `pcidoc` on the host for ACS/AER registers.",
                ],
                confidence="high",
            )
        )

    # --- confidential computing
    if virt.confidential_compute:
        multi = (virt.cc_multi_gpu_mode or "").lower()
        if len(ctx.gpus) > 1 and multi in ("", "none"):
            findings.append(
                Finding(
                    "fail" if multi == "none" else "warn",
                    f"confidential computing is on with {len(ctx.gpus)} GPUs and multi-GPU mode "
                    f"{virt.cc_multi_gpu_mode or 'unknown'}: outside protected PCIe mode only one "
                    "GPU per VM is supported, more give undefined behaviour",
                    evidence=[
                        _ev("confidential computing", True),
                        _ev("CC multi-GPU mode", virt.cc_multi_gpu_mode),
                        _ev("GPUs", len(ctx.gpus), "GPUs"),
                    ],
                    remediation=[
                        "Use one GPU per CC VM, or configure protected PCIe (PPCIe) "
                        "mode on an 8-GPU HGX system."
                    ],
                    confidence="high" if multi == "none" else "low",
                )
            )
        findings.append(
            Finding(
                "info",
                "confidential computing is on: host transfers go through encrypted bounce "
                "buffers, so H2D/D2H numbers are not comparable to reference values",
                evidence=[
                    _ev("confidential computing", True),
                    _ev("CC multi-GPU mode", virt.cc_multi_gpu_mode),
                ],
                confidence="high",
            )
        )

    if findings:
        return findings
    if vm is False:
        live = virt.hypervisor is False
        return [
            Finding(
                "pass",
                "bare metal: no hypervisor, MIG, container or confidential computing detected"
                if live
                else "no virtualization reported (GPU virtualization mode none), no MIG",
                evidence=[
                    _ev("hypervisor flag", virt.hypervisor),
                    _ev("GPU virtualization modes", _names(sorted(modes)) or None),
                ],
                confidence="high" if live else "medium",
            )
        ]
    return [
        Finding(
            "skip",
            "virtualization state not in this capture",
            needs="run `pcidoc check --only env.virtualization` on the machine, or import "
            "`nvidia-smi -q` (GPU Virtualization Mode)",
        )
    ]

"""The ``numa.nic-affinity`` check."""

from __future__ import annotations

from collections.abc import Mapping

from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.checks.numa._shared import _nic_name, _single_known_node, gpu_set, is_bond
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import short_list
from pcidoc.model.facts import Nic
from pcidoc.model.links import rank

_NEAR_NIC = ("PIX", "PXB")


# ---------------------------------------------------------------------- numa.nic-affinity


def _rdma_nic(nic: Nic) -> bool:
    name = (nic.name or "").lower()
    return nic.kind == "infiniband" or name.startswith(("mlx", "ib", "bnxt_re", "irdma"))


@check("numa.nic-affinity")
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
        links = ctx.nic_column(nic.label)
        if all(link in (None, "SYS", "NODE", "PHB") for link in links):
            findings.append(
                Finding(
                    "info",
                    f"{_nic_name(nic)} is a bonded interface far from every GPU: keep it out of "
                    "NCCL's NIC list",
                    subjects=[nic.name or nic.label],
                    remediation=[
                        f"List the data NICs explicitly, e.g. `NCCL_IB_HCA=="
                        f"{','.join(n.name or n.label for n in data_nics)}`."
                    ],
                    confidence="medium",
                )
            )
    # Each GPU's classes to the data NICs (in their order), read once.
    data_labels = [n.label for n in data_nics]
    cells = [list(map(ctx.nic_row(g.label).get, data_labels)) for g in ctx.gpus]
    best: dict[int, str | None] = {}
    for gpu, row in zip(ctx.gpus, cells, strict=True):
        # The nearest class; among classes of equal rank the first seen (min keeps the first).
        classes = dict.fromkeys(c for c in row if c is not None)
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
        findings.append(_near_finding(ctx, known, data_nics))
    findings.extend(_gpudirect_findings(ctx, data_nics))
    return findings


def _sharing(ctx: Context, known: Mapping[int, str | None], nics: list[Nic]) -> str:
    """How the GPUs share their nearest NICs: ``1:1 PIX``, ``4 GPUs share each``..."""
    users: dict[str, int] = {}
    per_gpu = set()
    for index, link in known.items():
        row = ctx.nic_row(f"GPU{index}")
        nearest = [n.label for n in nics if row.get(n.label) == link]
        per_gpu.add(len(nearest))
        for label in nearest:
            users[label] = users.get(label, 0) + 1
    sharing = set(users.values())
    if per_gpu == {1} and sharing == {1}:
        return f", 1:1 {'/'.join(sorted({c for c in known.values() if c}))}"
    if max(sharing, default=1) > 1:
        most = max(sharing)
        return f", {most} GPUs share each" if len(sharing) == 1 else f", up to {most} share one"
    return ""


def _near_finding(ctx: Context, known: Mapping[int, str | None], nics: list[Nic]) -> Finding:
    """Every GPU has a NIC at PIX/PXB: how many NICs, and how the GPUs share them."""
    near_nics = {
        n.label for i in known for n in nics if ctx.nic_row(f"GPU{i}").get(n.label) in _NEAR_NIC
    }
    evidence = [
        _ev("nearest NIC", _nearest_nics(ctx, i, c, nics), subject=f"GPU{i}")
        for i, c in list(known.items())[:_LISTED]
    ]
    if len(known) > _LISTED:
        evidence.append(_ev("nearest NIC not listed", f"{len(known) - _LISTED} more GPUs"))
    return Finding(
        "pass",
        f"every GPU has a PCIe-local NIC ({len(near_nics)} NIC(s) at PIX/PXB"
        f"{_sharing(ctx, known, nics)})",
        evidence=evidence,
    )


_LISTED = 8
"""GPUs whose nearest NIC is listed as evidence (the rest are counted)."""


def _nearest_nics(ctx: Context, index: int, link: str | None, nics: list[Nic]) -> str:
    """``"mlx5_6, mlx5_7 (PXB)"``: the NICs at a GPU's nearest link class, by name."""
    row = ctx.nic_row(f"GPU{index}")
    names = [n.name or n.label for n in nics if row.get(n.label) == link]
    shown = short_list(names)
    return f"{shown} ({link})" if shown else str(link)


def _flattened_nics(ctx: Context, far: list[int]) -> bool:
    if len(far) < len(ctx.gpus):
        return False
    rows = [ctx.nic_row(g.label) for g in ctx.gpus]
    links = {row.get(n.label) for row in rows for n in ctx.nics}
    if not links <= {"SYS", None}:
        return False
    return (
        bool(ctx.is_vm)
        or bool(ctx.flattened_view)
        or (_single_known_node(ctx) and ctx.is_vm is not False)
    )


def _far_finding(
    ctx: Context, far: list[int], known: Mapping[int, str | None], data_nics: list[Nic]
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
            n.label
            for n in data_nics
            for i in near
            if ctx.nic_row(f"GPU{i}").get(n.label) in _NEAR_NIC
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

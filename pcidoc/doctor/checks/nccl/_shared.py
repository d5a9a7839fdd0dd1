"""Lookups over ``capture.evidence`` shared by the ``nccl.*`` checks (no check lives here)."""

from __future__ import annotations

from pcidoc.doctor.context import Context
from pcidoc.doctor.evidence import NoEvidence as NoEvidence
from pcidoc.doctor.evidence import evidence as evidence
from pcidoc.doctor.evidence import nccl_logs as logs
from pcidoc.doctor.evidence import quote as quote
from pcidoc.model.facts import Gpu

RDMA_PREFIXES = ("mlx", "ib", "bnxt_re", "irdma", "efa", "hfi", "qedr", "rdma", "erdma", "ionic")
"""RDMA device name prefixes (Mellanox/NVIDIA, Broadcom, Intel, AWS EFA, Cornelis, QLogic...)."""


def gpu_names(ctx: Context) -> list[str]:
    """GPU model names known from any source (capture GPUs, collect_env, test rank lines)."""
    names = [g.name for g in ctx.gpus if g.name]
    ev = evidence(ctx)
    for report in ev.env_reports:
        names.extend(report.gpu_models)
    for run in ev.test_runs:
        names.extend(r.name for r in run.ranks if r.name)
    return names


def gpu_by_bus(ctx: Context, bus_id: str | None) -> Gpu | None:
    """The capture GPU with this bus id."""
    if not bus_id:
        return None
    for gpu in ctx.gpus:
        if gpu.bus_id and gpu.bus_id.lower() == bus_id.lower():
            return gpu
    return None


def is_consumer(name: str) -> bool:
    """GeForce/TITAN: the stock driver refuses P2P and GPUDirect RDMA on them."""
    lowered = name.lower()
    return "geforce" in lowered or "titan" in lowered or lowered.startswith("rtx 40")


def rdma_nics(ctx: Context) -> list[str]:
    """RDMA NIC names known from the capture's NICs or from NCCL's NIC lists."""
    names = [n.name for n in ctx.nics if n.name and n.name.lower().startswith(RDMA_PREFIXES)]
    for log in logs(ctx):
        names.extend(n.name for n in log.ib_nics)
    return list(dict.fromkeys(names))

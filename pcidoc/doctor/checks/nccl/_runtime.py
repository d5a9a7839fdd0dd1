"""Lookups over the run-time evidence (RAS, watchdog, flight recorder) shared by ``nccl.ras``
and ``nccl.watchdog``: who a rank is (host, GPU, bus id) wherever the evidence says it."""

from __future__ import annotations

from pcidoc.doctor.checks.nccl._shared import evidence
from pcidoc.doctor.context import Context

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


def ras_reports(ctx: Context) -> list[Any]:
    """The NCCL RAS reports of the capture."""
    return list(getattr(evidence(ctx), "nccl_ras", ()))


def watchdogs(ctx: Context) -> list[Any]:
    """The watchdog timeouts of the capture."""
    return list(getattr(evidence(ctx), "nccl_watchdogs", ()))


def flight_records(ctx: Context) -> list[Any]:
    """The flight-recorder dumps of the capture."""
    return list(getattr(evidence(ctx), "flight_records", ()))


def bus_id_of(ctx: Context, rank: int | None, host: str | None, gpu: int | None) -> str | None:
    """The PCI bus id of a rank's GPU: from an NCCL log of the same job (rank, host, CUDA
    device), or from the capture's GPUs when the rank runs on the captured host."""
    for log in evidence(ctx).nccl_logs:
        for r in log.ranks:
            if r.bus_id is None or (rank is not None and r.rank != rank):
                continue
            if host and r.host and host != r.host:
                continue
            if rank is None and (gpu is None or r.cuda_dev != gpu):
                continue
            return r.bus_id
    same_host = host is None or host == ctx.host.hostname
    if gpu is not None and same_host and ctx.gpus:
        found = ctx.gpu_by_index.get(gpu)
        return found.bus_id if found else None
    return None


def _identity(ctx: Context, rank: int) -> tuple[str | None, int | None, int | None]:
    """(host, GPU, pid) of a rank from the job's other evidence: a RAS report, an NCCL log."""
    for report in ras_reports(ctx):
        for r in report.ranks:
            if r.rank == rank and (r.host or r.gpu is not None):
                return r.host, r.gpu, r.pid
    for log in evidence(ctx).nccl_logs:
        for n in log.ranks:
            if n.rank == rank and (n.host or n.cuda_dev is not None):
                return n.host, n.cuda_dev, None
    return None, None, None


def who(ctx: Context, rank: int | None, host: str | None, gpu: int | None, pid: int | None) -> str:
    """``rank 12 (GPU 4, bus 0000:1c:00.0, process 323032, on node 10.137.190.124)``; what the
    caller does not know is looked up in the job's other evidence."""
    if rank is not None and host is None and gpu is None:
        host, gpu, found_pid = _identity(ctx, rank)
        pid = pid if pid is not None else found_pid
    head = f"rank {rank}" if rank is not None else f"process {pid}" if pid is not None else "a rank"
    parts = []
    if gpu is not None:
        parts.append(f"GPU {gpu}")
    bus = bus_id_of(ctx, rank, host, gpu)
    if bus:
        parts.append(f"bus {bus}")
    if rank is not None and pid is not None:
        parts.append(f"process {pid}")
    if host:
        parts.append(f"on node {host}")
    return head + (f" ({', '.join(parts)})" if parts else "")


def switch_pair_step(ctx: Context) -> list[str]:
    """The remedy a hang owes to GPUs that share a PCIe switch (PIX/PXB): ACS or the IOMMU
    (VT-d, AMD-Vi) can drop their peer writes, and NCCL then waits for ever instead of failing.
    Said with the pairs when the topology shows some, as a question when it is not known, and
    not at all when every pair is known to be otherwise joined."""
    from pcidoc.doctor.wording import short_list

    pairs = [f"GPU{a}-GPU{b}" for a, b, link in ctx.gpu_pairs() if link in ("PIX", "PXB")]
    fix = (
        "with ACS redirecting on the switch ports or the IOMMU (Intel VT-d, AMD-Vi) "
        "translating, their P2P writes can be dropped and a collective hangs instead of "
        "failing. Check p2p.acs-iommu (`sudo pcidoc check --only p2p.acs-iommu`); disable ACS "
        "on those ports or boot with `iommu=pt` (or VT-d off in the BIOS when nothing needs "
        "it); confirm with `NCCL_P2P_DISABLE=1`: a hang that goes away was the peer path."
    )
    if pairs:
        return [f"{short_list(pairs)} share a PCIe switch (PIX/PXB): {fix}"]
    if not ctx.has_topology:
        return ["If the ranks' GPUs share a PCIe switch (PIX/PXB in `nvidia-smi topo -m`): " + fix]
    return []

"""Lookups over ``capture.evidence`` shared by the ``nccl.*`` checks (no check lives here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pcidoc.doctor.context import Context
from pcidoc.model.evidence import NcclLog
from pcidoc.model.facts import Gpu
from pcidoc.model.report import Evidence

if TYPE_CHECKING:
    from pcidoc.model.evidence import (
        AmdTopology,
        EnvReport,
        ImportedEvidence,
        LspciDevice,
        LspciTree,
        NcclTopology,
        PerfRun,
        SignatureHit,
    )
    from pcidoc.model.kernel import KernelLog, LinkHistory
    from pcidoc.model.runtime import (
        FlightRecorderDump,
        InspectorRecord,
        NcclRasReport,
        NcclWatchdog,
        P2PIntegrity,
        ProfilerTrace,
    )

RDMA_PREFIXES = ("mlx", "ib", "bnxt_re", "irdma", "efa", "hfi", "qedr", "rdma", "erdma", "ionic")
"""RDMA device name prefixes (Mellanox/NVIDIA, Broadcom, Intel, AWS EFA, Cornelis, QLogic...)."""


class NoEvidence:
    """What the checks read of an :class:`ImportedEvidence`, for a capture without one: empty,
    and cheap (an ``ImportedEvidence()`` loads the schema of every evidence model first)."""

    __slots__ = ()

    nccl_logs: tuple[NcclLog, ...] = ()
    nccl_topologies: tuple[NcclTopology, ...] = ()
    lspci: tuple[LspciDevice, ...] = ()
    lspci_trees: tuple[LspciTree, ...] = ()
    env_reports: tuple[EnvReport, ...] = ()
    test_runs: tuple[PerfRun, ...] = ()
    amd_topologies: tuple[AmdTopology, ...] = ()
    nccl_ras: tuple[NcclRasReport, ...] = ()
    nccl_watchdogs: tuple[NcclWatchdog, ...] = ()
    flight_records: tuple[FlightRecorderDump, ...] = ()
    inspector: tuple[InspectorRecord, ...] = ()
    profiler_traces: tuple[ProfilerTrace, ...] = ()
    p2p_integrity: tuple[P2PIntegrity, ...] = ()
    kernel_logs: tuple[KernelLog, ...] = ()
    link_histories: tuple[LinkHistory, ...] = ()
    signatures: tuple[SignatureHit, ...] = ()
    mentions: tuple[SignatureHit, ...] = ()
    scanned_lines: int = 0
    topo_file_env: str | None = None
    topo_file_error: str | None = None


_NO_EVIDENCE = NoEvidence()


def evidence(ctx: Context) -> ImportedEvidence | NoEvidence:
    """The capture's evidence (empty when there is none)."""
    return ctx.capture.evidence or _NO_EVIDENCE


def logs(ctx: Context) -> list[NcclLog]:
    """The NCCL logs of the capture."""
    return list(evidence(ctx).nccl_logs)


def quote(text: str | None, label: str = "log line", subject: str | None = None) -> Evidence:
    """Evidence quoting a line of the imported text."""
    return Evidence(label=label, value=text, subject=subject)


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


_NO_LOG = "import an NCCL_DEBUG=INFO log of the job (`pcidoc import nccl.log`)"

"""What the checks read of ``capture.evidence``, for every topic: the evidence (empty when the
capture has none), the NCCL logs, the kernel logs, and quoting a line of them."""

from __future__ import annotations

from pcidoc.doctor.context import Context
from pcidoc.doctor.finding import Finding
from pcidoc.doctor.registry import bare_of
from pcidoc.model.evidence import NcclLog
from pcidoc.model.kernel import KernelLog
from pcidoc.model.report import Evidence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from pcidoc.model.evidence import (
        AmdTopology,
        EnvReport,
        ImportedEvidence,
        LspciDevice,
        LspciTree,
        NcclTopology,
        PerfRun,
        RdmaPort,
        SignatureHit,
    )
    from pcidoc.model.kernel import LinkHistory
    from pcidoc.model.runtime import (
        FlightRecorderDump,
        InspectorRecord,
        NcclRasReport,
        NcclWatchdog,
        P2PIntegrity,
        ProfilerTrace,
    )


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
    rdma_ports: tuple[RdmaPort, ...] = ()
    signatures: tuple[SignatureHit, ...] = ()
    mentions: tuple[SignatureHit, ...] = ()
    scanned_lines: int = 0
    topo_file_env: str | None = None
    topo_file_error: str | None = None


_NO_EVIDENCE = NoEvidence()


def evidence(ctx: Context) -> ImportedEvidence | NoEvidence:
    """The capture's evidence (empty when there is none)."""
    return ctx.capture.evidence or _NO_EVIDENCE


def nccl_logs(ctx: Context) -> list[NcclLog]:
    """The NCCL logs of the capture."""
    return list(evidence(ctx).nccl_logs)


def quote(text: str | None, label: str = "log line", subject: str | None = None) -> Evidence:
    """Evidence quoting a line of the imported text."""
    return Evidence(label=label, value=text, subject=subject)


def kernel_logs(ctx: Context) -> list[KernelLog]:
    """The capture's kernel logs (pasted or live)."""
    ev = ctx.capture.evidence
    return list(ev.kernel_logs) if ev is not None else []


def readable_logs(ctx: Context) -> list[KernelLog]:
    """The logs that were read (a live log may have been refused)."""
    return [log for log in kernel_logs(ctx) if log.read]


def read_logs(ctx: Context, check_id: str) -> tuple[Finding | None, list[KernelLog], list[str]]:
    """What every ``kernel.*`` check starts from: the skip for a capture without a readable
    kernel log (``None`` when there is one), the readable logs, and the bus ids the nvidia
    driver named in them."""
    logs = readable_logs(ctx)
    if not logs:
        return _no_log(ctx, check_id), [], []
    return None, logs, log_gpus(logs)


def _no_log(ctx: Context, check_id: str) -> Finding:
    """The skip for a capture without a readable kernel log: the check's evidence-less skip
    (:data:`pcidoc.doctor.registry.CHECKS`), or why the log could not be read."""
    bare = bare_of(check_id)
    logs = kernel_logs(ctx)
    refused = next((log.unreadable for log in logs if not log.read and log.unreadable), None)
    if refused:
        return Finding(
            "skip",
            f"the kernel log could not be read ({refused}): {bare.unknown} unknown",
            needs="run `sudo pcidoc capture`, or import `sudo dmesg` / `journalctl -k -b`",
            confidence="low",
        )
    return bare.finding()


def line(text: str | None, subject_: str | None = None) -> Evidence:
    """Evidence quoting a kernel log line."""
    return Evidence(label="kernel log", value=text, subject=subject_)


def log_gpus(logs: list[KernelLog]) -> list[str]:
    """Bus ids the nvidia driver named in the logs."""
    return list(dict.fromkeys(b for log in logs for b in log.nvidia_devices))

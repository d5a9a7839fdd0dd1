"""NCCL ``WARN`` lines explained: a table of what each common warning means and its fix.

Each entry names the check that reports it (``build``: nccl.version, ``network``: nccl.network,
``gpu``: nccl.transport), a plain-text marker every such line contains (tested before the
pattern, so most lines cost one substring test), a linear-time pattern, what it means and the
fix. The meanings come from NCCL's source (the message texts) and the maintainers' answers in
NVIDIA/nccl issues, cited per entry; the wording is ours.
"""

from __future__ import annotations

from pcidoc._lazyre import LazyPattern, lazy
from pcidoc._record import record
from pcidoc.doctor.registry import Finding
from pcidoc.model.evidence import NcclLog
from pcidoc.model.report import Evidence, Severity


@record(frozen=True)
class WarnEntry:
    """One kind of NCCL warning."""

    family: str
    marker: str
    pattern: LazyPattern
    severity: Severity
    meaning: str
    fix: str


CATALOGUE: tuple[WarnEntry, ...] = (
    # NVIDIA/nccl#1102, #1246: a build whose kernels need more shared memory than the GPU's
    # architecture offers: the NCCL build predates the architecture.
    WarnEntry(
        "build",
        "maxSharedMem",
        lazy(r"ncclMaxSharedMem\s+\d+\s+exceeds\s+device/fn\s+maxSharedMem\s+\d+"),
        "fail",
        "this NCCL build is too old for the GPU architecture (its kernels ask for more shared "
        "memory than the GPU's architecture gives)",
        "Use an NCCL built for this GPU generation: upgrade the framework, container or "
        "libnccl (the release notes list the first release per architecture).",
    ),
    # cudaErrorNoKernelImageForDevice / cudaErrorInvalidDeviceFunction from NCCL's kernels.
    WarnEntry(
        "build",
        "Cuda failure",
        lazy(r"Cuda failure '(?:no kernel image is available|invalid device function)"),
        "fail",
        "NCCL has no kernels compiled for this GPU architecture",
        "Install an NCCL (or framework wheel) built for this GPU's compute capability.",
    ),
    # NCCL's bootstrap/socket code: the peer's address could not be reached.
    WarnEntry(
        "network",
        "onnect",
        lazy(r"(?:[Cc]onnect to \S{1,200} failed|socketStartConnect|Connection refused)"),
        "fail",
        "a rank could not open a TCP connection to another rank (bootstrap or socket "
        "transport): a firewall, a wrong interface or an address only one side can reach",
        "Pin the interface every node can reach with NCCL_SOCKET_IFNAME (e.g. `=eth0` or "
        "`=^docker,lo`), and open the ports between the nodes.",
    ),
    WarnEntry(
        "network",
        "socket interface",
        lazy(r"Bootstrap\s*:\s*no socket interface found"),
        "fail",
        "NCCL found no network interface matching NCCL_SOCKET_IFNAME",
        "List the interfaces (`ip -br addr`) and set NCCL_SOCKET_IFNAME to one that exists "
        "on every node.",
    ),
    # ibv_wc_status 12 = IBV_WC_RETRY_EXC_ERR, 13 = IBV_WC_RNR_RETRY_EXC_ERR (verbs.h).
    WarnEntry(
        "network",
        "with error",
        lazy(r"Got completion (?:from peer \S{1,200} )?with error\s+1[23]\b"),
        "fail",
        "InfiniBand/RoCE transfers ran out of retries: a link, cable or switch port is "
        "dropping packets (or the peer died)",
        "Check the ports on both nodes (`ibstat`, `perfquery -x` error counters) and the "
        "switch; on RoCE check PFC/ECN. NCCL_IB_TIMEOUT only hides a bad link.",
    ),
    WarnEntry(
        "network",
        "async event",
        lazy(r"Got async event\s*:\s*(?:port error|local catastrophic error|GID table change)"),
        "warn",
        "the InfiniBand/RoCE port reported an error event during the run",
        "Check the port state and counters (`ibstat`, `ibv_devinfo`, `dmesg` for mlx5 "
        "messages) and the cable/transceiver.",
    ),
    # NVIDIA/nccl#406: registering buffers fails when locked memory is limited.
    WarnEntry(
        "network",
        "ibv_",
        lazy(r"(?:Call to )?ibv_(?:reg_mr|create_qp|create_cq|modify_qp)\w*\s+failed"),
        "fail",
        "NCCL could not register memory or create queues on the RDMA device: usually the "
        "locked-memory limit (ulimit -l) or a container without RDMA rights",
        "Raise the locked-memory limit (`ulimit -l unlimited`; Docker `--ulimit memlock=-1`, "
        "`--cap-add=IPC_LOCK`; Slurm `PropagateResourceLimits`).",
    ),
    # init.cc: two ranks of one communicator on the same GPU.
    WarnEntry(
        "gpu",
        "Duplicate GPU",
        lazy(r"Duplicate GPU detected"),
        "fail",
        "two ranks of one communicator use the same GPU: the launcher's local-rank to GPU "
        "mapping is wrong",
        "Set the device from the local rank (`torch.cuda.set_device(local_rank)`) or give "
        "each rank its own CUDA_VISIBLE_DEVICES.",
    ),
    WarnEntry(
        "gpu",
        "illegal memory access",
        lazy(r"Cuda failure 'an illegal memory access was encountered'"),
        "fail",
        "a kernel faulted on memory; with NCCL this is often peer (P2P) traffic the "
        "platform does not deliver (IOMMU/ACS), otherwise the application's own bug",
        "Rerun with NCCL_P2P_DISABLE=1: if it passes, fix P2P (IOMMU passthrough or off, "
        "ACS redirect off; see p2p.acs-iommu).",
    ),
    WarnEntry(
        "gpu",
        "out of memory",
        lazy(r"Cuda failure 'out of memory'"),
        "fail",
        "the GPU had no memory left for NCCL's buffers",
        "Leave GPU memory for NCCL (lower the framework's memory fraction or batch size), or "
        "reduce NCCL_BUFFSIZE / channels.",
    ),
    # proxy.cc / net_socket.cc: a rank received another size than it expected.
    WarnEntry(
        "network",
        "Message truncated",
        lazy(r"Message truncated\s*:\s*received\s+\d+\s+bytes instead of\s+\d+"),
        "fail",
        "ranks disagree on a message size: they called different collectives or sizes (a "
        "desynchronised program) or run different NCCL versions",
        "Check that every rank runs the same code path and the same NCCL version.",
    ),
)
"""The catalogue, most specific first; a line gets the first entry it matches."""


def explain(text: str) -> WarnEntry | None:
    """The catalogue entry of one warning line, or None."""
    for entry in CATALOGUE:
        if entry.marker in text and entry.pattern.search(text[:2000]):
            return entry
    return None


def warn_findings(logs: list[NcclLog], family: str) -> list[Finding]:
    """One finding per catalogue entry of ``family`` seen in the logs' WARN lines."""
    seen: dict[int, list[str]] = {}
    for log in logs:
        for warning in log.warnings:
            entry = explain(warning.quote or "")
            if entry is not None and entry.family == family:
                seen.setdefault(CATALOGUE.index(entry), []).append(warning.quote or "")
    findings = []
    for pos, quotes in sorted(seen.items()):
        entry = CATALOGUE[pos]
        findings.append(
            Finding(
                entry.severity,
                f"NCCL warned: {entry.meaning}"
                + (f" ({len(quotes)} lines)" if len(quotes) > 1 else ""),
                evidence=[Evidence(label="NCCL WARN", value=q) for q in quotes[:2]],
                remediation=[entry.fix],
                confidence="high",
            )
        )
    return findings

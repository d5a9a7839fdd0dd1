"""What to do about a cause, and what to collect next time when the files did not tell."""

from __future__ import annotations

from pcidoc.explain.facts import JobFacts
from pcidoc.explain.verdict import Culprit


def actions(culprit: Culprit | None, hardware_code: int | None = None) -> list[str]:
    """The next steps for the culprit's cause (none when nothing was found)."""
    if culprit is None:
        return []
    where = f"rank {culprit.rank}" if culprit.rank is not None else "the stalled rank(s)"
    host = culprit.host or "its node"
    gpu = culprit.bus_id or "its GPU"
    cause = culprit.cause
    if cause == "hang":
        return [
            f"{where} stopped outside the collectives its peers waited in: next time it hangs, "
            f"dump its Python stack on {host} (`py-spy dump --pid PID`) before the timeout "
            "fires; look at what it does between collectives (data loading, I/O, a lock, a "
            "rank-dependent branch)",
            "if it recurs on the same node or GPU, drain the node and run `pcidoc check` and "
            "`dcgmi diag -r 3` there",
        ]
    if cause == "died":
        return [
            f"{where} ended on its own: read the end of its log and, for a signal, the kernel "
            f"log of {host} (`journalctl -k | grep -iE 'killed process|segfault|oom'`: SIGKILL is "
            "usually the out-of-memory killer)",
            "rerun with the same seed/data on that rank alone to reproduce the crash",
        ]
    if cause == "slow":
        return [
            f"{where} is a straggler: check {gpu} on {host} (clocks, throttling: "
            "`nvidia-smi -q -d PERFORMANCE,CLOCK`; `pcidoc check` for its link), CPU "
            "contention and data loading on that rank",
            "compare its step times with the others after a restart on another node "
            "(exclude the node with Slurm's --exclude to confirm)",
        ]
    if cause == "mismatch":
        return [
            "ranks called different collectives (a rank- or data-dependent branch, an uneven "
            "data shard, a skipped barrier): rerun with TORCH_DISTRIBUTED_DEBUG=DETAIL, which "
            "compares every collective across ranks and names the one that differs",
        ]
    return _hardware(cause, where, host, gpu, hardware_code)


def _hardware(cause: str, where: str, host: str, gpu: str, code: int | None) -> list[str]:
    if cause == "xid":
        what = f"Xid {code}" if code is not None else "the GPU fell off the bus or an NVLink error"
        return [
            f"drain {host}: {what} on {gpu} ({where}); run `nvidia-smi -q` and "
            "`dcgmi diag -r 3` there before returning it to service",
            "if the Xid recurs on the same GPU, reseat it (or its NVLink/NVSwitch tray) and open "
            "an RMA with the NVIDIA bug report (`nvidia-bug-report.sh`)",
        ]
    if cause == "link":
        return [
            f"drain {host}: PCIe errors on {gpu} or the port above it ({where}); reseat the GPU "
            "and its riser/cable, then `pcidoc check --only pcie` and `lspci -vvv` on that port",
        ]
    if cause == "iommu":
        return [
            f"IOMMU faults on {gpu} ({where} on {host}): peer-to-peer DMA translated by the "
            "IOMMU; boot with iommu=pt (or disable it) and check ACS on the switches: "
            "`pcidoc check --only p2p.acs-iommu`",
        ]
    if cause == "transport":
        return [
            f"NCCL's transport failed on {where} ({host}): check its NICs and links "
            "(`ibstat`, `ibv_devinfo`, switch counters), /dev/shm size for SHM, and the NCCL_IB_*/"
            "NCCL_SOCKET_IFNAME settings; `pcidoc check` on the node reads its NCCL environment",
        ]
    return []


def collect_next_time(facts: JobFacts, unexplained: bool) -> list[str]:
    """The exact settings and commands whose output would have told more. Always given; the
    ones whose evidence this job lacked come first."""
    has_nccl = any(e.data.get("source") == "nccl" for e in facts.events)
    has_kernel = any(e.kind == "kernel" for e in facts.events) or any(
        "journalctl" in f or "dmesg" in f or "kern" in f for f in facts.files_read
    )
    has_flight = bool(facts.flights)
    has_caps = any(g.source and "capture" in g.source for g in facts.gpus)
    items: list[tuple[bool, str]] = [
        (
            has_flight,
            "TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 "
            "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/shared/fr/nccl_trace_rank_ (flight recorder: every "
            "rank's last collectives, dumped on a timeout)",
        ),
        (
            has_nccl,
            "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET (each rank's GPU bus id and "
            "the transports chosen)",
        ),
        (
            False,
            "TORCH_DISTRIBUTED_DEBUG=DETAIL (compares every collective across ranks and "
            "names a rank that never reaches torch's monitored barrier)",
        ),
        (
            False,
            "per-rank logs with the rank in every line: `torchrun --tee 3 --log-dir DIR`, "
            "`srun -l`, `mpirun --tag-output`",
        ),
        (
            has_kernel,
            "on every node after a failure: `journalctl -k -o short-iso-precise "
            "--since '-2h' > dmesg-$(hostname).txt`",
        ),
        (
            has_caps,
            "on every node: `pcidoc capture -o pcidoc-$(hostname).json` (GPU bus ids, "
            "PCIe path, NVLinks)",
        ),
        (
            False,
            "while it hangs: `ncclras` (NCCL 2.24+) on any node, and `py-spy dump --pid "
            "PID` on the rank that stopped",
        ),
    ]
    missing = [text for have, text in items if not have]
    present = [text for have, text in items if have]
    return missing + present if unexplained else missing

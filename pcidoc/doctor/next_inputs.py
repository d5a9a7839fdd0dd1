"""What to paste next when most checks could not judge (issue 27: "when most checks skip, the
output says which 2-3 outputs to paste next and why").

Each output of :data:`OUTPUTS` names the checks it feeds (by id or topic prefix; the first is
its own topic); the outputs that would let the most skipped checks judge come first, those about
the topic of a warning or failure before the others. Only for pasted outputs (a live
machine or a capture skips for other reasons: no GPU, no permission; those checks say so).
"""

from __future__ import annotations

from pcidoc.model.report import CheckResult, NextInput

MAX_SUGGESTIONS = 3
RELATED_BONUS = 4
"""Added to an output's count of checks when it is about the topic of a warn/fail finding."""
SHARE = 0.5
"""Suggestions are made when more than this share of the checks skipped."""

OUTPUTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "NCCL_DEBUG=INFO <the job> 2>&1 | tee job.log",
        "the transports, network and NICs NCCL chose, its version and its warnings",
        ("nccl.transport", "nccl.network", "nccl.version", "nccl.shm", "nccl.env-ignored"),
    ),
    (
        "nvidia-smi topo -m",
        "how GPUs and NICs connect: P2P paths, NVLink, the NUMA node of each GPU and NIC",
        (
            "numa.cross-socket",
            "numa.nic-affinity",
            "p2p.capability",
            "pcie.shared-uplink",
            "nvlink.state",
            "nccl.nic-inventory",
        ),
    ),
    (
        "nvidia-smi -q",
        "each GPU's PCIe link (generation, width, replays), fabric and virtualization state",
        ("nvml.health", "pcie.link-speed", "pcie.errors", "nvlink.fabric", "env.virtualization"),
    ),
    (
        "sudo dmesg -T (or journalctl -k -b)",
        "the kernel's view: Xid events, AER errors, IOMMU faults, link retraining",
        ("kernel.xid", "kernel.aer", "kernel.iommu-fault", "pcie.link-flap"),
    ),
    (
        "sudo lspci -vvv",
        "every PCIe port's link state, ACS redirect and AER bits on the path between devices",
        ("p2p.acs-iommu", "nccl.acs-redirect", "nccl.lspci-link"),
    ),
    (
        "p2pBandwidthLatencyTest (cuda-samples), or pcidoc check --probes quick on the machine",
        "measured P2P and host copy bandwidth: whether P2P is faster than staging",
        ("p2p.fallback", "transfer.pinned", "p2p.integrity"),
    ),
    (
        "all_reduce_perf -b 8 -e 1G -f 2 -g <GPUs> (nccl-tests)",
        "measured all-reduce bus bandwidth to compare with the link model",
        ("scaling.allreduce",),
    ),
)


def _feeds(check_id: str, targets: tuple[str, ...]) -> bool:
    return any(check_id == t or check_id.startswith(t + ".") for t in targets)


def next_inputs(checks: list[CheckResult], source_kind: str) -> list[NextInput]:
    """The outputs to paste next (empty unless most checks skipped on pasted outputs)."""
    if source_kind != "import" or not checks:
        return []
    skipped = [c.id for c in checks if c.severity == "skip"]
    if len(skipped) <= SHARE * len(checks):
        return []
    # An output about the topic of a finding comes first: an NCCL network error wants the
    # job's NCCL log before the topology.
    faulty = {c.id.split(".")[0] for c in checks if c.severity in ("warn", "fail")}
    ranked = []
    for order, (command, why, targets) in enumerate(OUTPUTS):
        fed = [c for c in skipped if _feeds(c, targets)]
        related = targets[0].split(".")[0] in faulty  # the output's own topic
        if fed:
            score = len(fed) + (RELATED_BONUS if related else 0)
            ranked.append((-score, order, NextInput(command=command, why=why, checks=fed)))
    return [item for *_, item in sorted(ranked, key=lambda r: r[:2])[:MAX_SUGGESTIONS]]

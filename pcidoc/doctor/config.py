"""Every threshold the doctor uses, with its source, and the link models derived from the
hardware that was detected (negotiated PCIe gen x width, NVLink version x links, the socket
interconnect). The table of GPU models and the link rates live in
:mod:`pcidoc.model.linkmodel`; the link models here are re-exported from it.

Source tags follow ``research/checks.md``: [A] vendor/kernel source or docs, [M] maintainer
statement, [U] user report, [D] pcidoc design choice derived from the others.
"""

from __future__ import annotations

import math

from pcidoc.model import linkmodel
from pcidoc.model.units import PCIE_GT_PER_S

# ------------------------------------------------------------------------------ PCIe models

# PCIe link models (NCCL's model, raw rate after line coding, the newest generation NCCL
# models) live in the link model, the one place for hardware knowledge [A] (NCCL topo.cc
# kvDictPciGen, PCI_BW; PCI-SIG base specifications).
pcie_nccl_model_gbps = linkmodel.pcie_nccl_model_gbps
pcie_ceiling_gbps = linkmodel.pcie_rate_gbps
PCIE_NEWEST_GEN = linkmodel.PCIE_NEWEST_GEN


# Pinned H2D/D2H verdicts against NCCL's link model of the *negotiated* link [D]
# (research/checks.md §2 "h2d_below_link"): warn below 0.75x, fail below 0.5x.
PINNED_WARN_FRACTION = 0.75
PINNED_FAIL_FRACTION = 0.50

# H2D far below D2H on the same GPU is abnormal for copy-engine transfers (CE copies are
# symmetric [S nvbandwidth]; DGX A100 25.7 vs 25.8 GB/s [U]); SM copies are not (35 vs 53 on
# H100 [U]), so only CE/pinned results are judged [D].
H2D_D2H_ASYMMETRY_WARN = 0.75

# Remote-NUMA pinned H2D below 0.8x local -> warn [D] (research/checks.md §3
# "remote_h2d_penalty"; P100 12.2 vs 3.8 GB/s [U] gearshifft#82).
REMOTE_NUMA_WARN_FRACTION = 0.80

# Pageable copies: no vendor ratio exists [A: DCGM ships min_bandwidth 0]; reported as info.
# A workload whose H2D bytes are >10 % pageable per step -> warn [D] (checks.md §2).
PAGEABLE_WORKLOAD_WARN_SHARE = 0.10


def replay_limit_per_minute(gen: int | None, width: int | None) -> int | None:
    """DCGM's expected PCIe replay rate limit: ceil(BER 1e-12 x lane rate x 60 s x lanes).

    x16 limits: Gen3 8, Gen4 16, Gen5 31 per minute [A] (DCGM DcgmHealthWatch.cpp
    GetExpectedPcieReplayRate).
    """
    if not gen or not width or gen not in PCIE_GT_PER_S:
        return None
    bits_per_s = PCIE_GT_PER_S[gen] * 1e9
    return math.ceil(1e-12 * bits_per_s * 60 * width)


# Replays above 10x the rate limit, or any fatal/non-fatal AER error -> fail [D on A].
REPLAY_FAIL_MULTIPLE = 10
# A GPU whose replay count is at least this many times the median of identical peers (and at
# least REPLAY_OUTLIER_MIN) is an outlier [D].
REPLAY_OUTLIER_FACTOR = 10
REPLAY_OUTLIER_MIN = 10
# AER correctable errors on the GPU or its link partners above this per minute under load ->
# warn; 32/min for Gen5 x16 [A] (DCGM Pcie.cpp, GEMM rule).
AER_CORRECTABLE_WARN_PER_MIN = 16
AER_CORRECTABLE_WARN_PER_MIN_GEN5_X16 = 32

# ---------------------------------------------------------------------------- NVLink models

# Per-link, per-direction line rate by NVLink version, GB/s [A] (pcidoc.model.linkmodel cites
# the datasheets: A100 12 x 25 = 300, H100 18 x 25 = 450, B200 18 x 50 = 900 per direction).
NVLINK_LINE_RATE_GBPS = linkmodel.NVLINK_LINE_RATE_GBPS

# Application-level P2P over NVLink reaches ~80 % of the line rate [M] (sjeaugey,
# NVIDIA/nccl#1054; measured 81-92 %, probes.md §4.2). Below 0.8x the line rate -> warn [D];
# an NVLink pair measuring at PCIe rates is not using NVLink -> fail.
# The fastest a GPU sends to all its peers: B200's NVLink 5, 18 links x 50 GB/s = 900 GB/s per
# direction [A] (the datasheet figure above). An nccl-tests algbw above it was not carried by
# any link: a 1-rank job timed a local copy [D].
FASTEST_GPU_LINK_GBPS = 900.0
NVLINK_P2P_WARN_FRACTION = 0.80
NVLINK_AT_PCIE_RATE_GBPS = 60.0

# NVLink errors over a window: replay/recovery delta >= 1 -> fail; CRC delta >= 1 -> warn;
# CRC >= 100 per second -> fail [A] (DCGM DcgmHealthWatch.cpp, DcgmGPUHardwareLimits.h).
NVLINK_CRC_FAIL_PER_S = 100


def nvlink_line_rate_gbps(version: str | None, reported_gbps: float | None = None) -> float | None:
    """Per-link per-direction rate: what the driver reported, else the version's line rate."""
    if reported_gbps:
        return reported_gbps
    return linkmodel.nvlink_nominal_rate_gbps(version)


# ------------------------------------------------------------------------- P2P and sockets

# P2P enabled must beat the host-staged/disabled copy: below 1.2x on a PIX/PXB pair the peer
# path is not working [D] (research/checks.md §1 "p2p_no_speedup"); below 1.0x it is slower
# than staging, the classic ACS/IOMMU redirect symptom [U] (NVIDIA/nccl#814, #199).
P2P_MIN_SPEEDUP = 1.2
# One GPU whose P2P row/column median is below this fraction of its peers' median is flagged
# as the likely narrow or downtrained link [D].
P2P_OUTLIER_FRACTION = 0.70


def socket_interconnect_gbps(cpu_vendor: str | None, cpu_model: str | None) -> float | None:
    """NCCL's model of the inter-socket link bandwidth (GB/s) for this CPU [A] (NCCL topo.h).

    Broadwell QPI 6, Skylake-class UPI 10, Sapphire Rapids 22, Emerald Rapids 40, AMD 16,
    POWER9 32, ARM 6. Returns ``None`` when the CPU is unknown.
    """
    vendor = (cpu_vendor or "").lower()
    model = (cpu_model or "").lower()
    if vendor == "amd" or "epyc" in model or "threadripper" in model or "ryzen" in model:
        return 16.0
    if vendor == "ibm" or "power9" in model:
        return 32.0
    if vendor == "arm" or "grace" in model or "neoverse" in model:
        return 6.0
    if vendor == "intel" or "xeon" in model or "intel" in model:
        if any(tag in model for tag in ("e5-", "v4", "v3", "broadwell", "haswell")):
            return 6.0
        # Emerald Rapids = 5th gen Xeon Scalable (model numbers x5xx), Sapphire Rapids = 4th.
        if "platinum 85" in model or "gold 65" in model or "gold 55" in model:
            return 40.0
        if "platinum 84" in model or "gold 64" in model or "gold 54" in model or "max 94" in model:
            return 22.0
        return 10.0
    return None


# ---------------------------------------------------------------------------- collectives

# All-reduce bus bandwidth vs the link model of the GPUs used: warn below 0.7x, fail below
# 0.5x [D] (research/checks.md §6 "busbw_low").
BUSBW_WARN_FRACTION = 0.70
BUSBW_FAIL_FRACTION = 0.50
# Peak bandwidth needs large messages: below this size busbw is not judged against the model
# [M] (nccl-tests#212: "256M is too small to reach peak" on H100; #149 use 8G on A100).
BUSBW_MIN_SIZE_BYTES = 64 * 1024 * 1024
# When the links between the GPUs are not known, busbw is still judged against the slowest
# intra-node hop NCCL models on current hardware: PCIe Gen3 x8 (8 x 60 / 80 = 6 GB/s) and the
# slowest socket links (Broadwell QPI, ARM: 6 GB/s) [A] (NCCL topo.h/topo.cc). Below
# BUSBW_WARN_FRACTION of even that -> warn, low confidence [D].
BUSBW_FLOOR_MODEL_GBPS = 6.0
# A drop of busbw by more than half from one size to the next larger size (a cliff, not a
# plateau) is flagged [D] (NVIDIA/nccl#1453: 29.5 -> 5 GB/s at 64 MiB).
BUSBW_CLIFF_FRACTION = 0.5
# A drop at one size whose neighbours are within this fraction of each other and of the peak
# (a flat curve) is NCCL changing algorithm/protocol at that size: info, not a warning [D]
# (nccl-tests outputs show single-size dips at the tuner's switch points, e.g. 64 MiB).
BUSBW_FLAT_FRACTION = 0.8

# Data-parallel scaling efficiency E(N) = throughput(N) / (N x throughput(1)) [D]
# (research/probes.md §3.3): NVLink/NVSwitch pass >= 0.85, warn 0.70-0.85, fail < 0.70;
# PCIe-only boxes are reported and fail only below 0.5.
SCALING_PASS_NVLINK = 0.85
SCALING_FAIL_NVLINK = 0.70
SCALING_FAIL_PCIE = 0.50
# Measured efficiency below 0.85x the alpha-beta prediction: the loss is not the interconnect
# [D] (research/checks.md §6 "scaling_gap").
SCALING_GAP_FRACTION = 0.85

# NCCL ring all-reduce latency (alpha) per step, microseconds [A] (NCCL tuning.cc): base 8.4
# (Simple) + 2(n-1) x hw latency: NVLink 3.4, PCIe 5.7.
NCCL_BASE_LATENCY_US = 8.4
NCCL_HW_LATENCY_US = {"nvlink": 3.4, "pcie": 5.7}

# ------------------------------------------------------------------------------ processes

# A rank whose allowed CPUs are less than half local to its GPU floats across sockets [D]
# (research/checks.md §3 "rank_unbound").
PROCESS_LOCAL_CPU_WARN_SHARE = 0.5

__all__ = [name for name in dir() if name.isupper() or name.endswith("_gbps")]

# ============================================================================================
# P2P, NUMA, transfer and scaling checks (p2p.*, numa.*, transfer.*, scaling.*)
# ============================================================================================

# NCCL's *effective* per-link NVLink bandwidth (by version and by compute capability), its
# ~80 % efficiency and the snapping of reported speeds live in the link model [A] (NCCL topo.h).
NCCL_NVLINK_EFFECTIVE_GBPS = linkmodel.NCCL_NVLINK_EFFECTIVE_GBPS
NVLINK_NCCL_EFFICIENCY = linkmodel.NVLINK_NCCL_EFFICIENCY
NVLINK_REPORTED_SNAP_TOLERANCE = linkmodel.NVLINK_REPORTED_SNAP_TOLERANCE
nvlink_nominal_rate_gbps = linkmodel.nvlink_nominal_rate_gbps
nccl_nvlink_model_gbps = linkmodel.nccl_nvlink_model_gbps
# More NVLinks than this per GPU do not exist (NVLink4/5: 18 per GPU) [A] (NVML
# NVML_NVLINK_MAX_LINKS on Hopper/Blackwell boards). A topology whose NV# per pair times the
# number of peers exceeds it must be an NVSwitch fabric (NV# = the GPU's links to the switch),
# not a direct mesh [D]. The count of one GPU model (A100 12) is linkmodel.nvlinks_of.
NVLINK_MAX_LINKS_PER_GPU = linkmodel.NVLINK_MAX_LINKS_PER_GPU


# P2P enabled within this fraction of the disabled/staged copy is indistinguishable from the
# driver's fallback copy [D] (p2pBandwidthLatencyTest with peer access unavailable prints
# identical enabled/disabled matrices: rtx4090x2 22.18 vs 22.02 GB/s [U]).
P2P_FALLBACK_TOLERANCE = 0.05
# Enabled-P2P latency at or above this fraction of the disabled (staged) latency looks staged
# [D] (probes.md §4.4: P2P 2-3.5 us over NVLink/PCIe vs 10-25 us disabled).
P2P_LATENCY_STAGED_FRACTION = 0.5
# Bidirectional P2P enabled at or above this multiple of the bidirectional staged copy: the
# peer path works (a direct path carries both directions at once, ~2x; staging through host
# memory does not) [D] (research/probes.md §4.4; issue 8: bidirectional bandwidth doubles).
P2P_BIDIR_WORKS_SPEEDUP = 1.5
# BAR1 below this size on a GPU whose P2P misbehaves points at Resizable BAR being off [U]
# (aikitoria/open-gpu-kernel-modules#6/#9: BAR1-based P2P needs a large BAR; 256 MiB = off).
BAR1_SMALL_BYTES = 1024**3
# NCCL uses P2P up to PATH_PXB by default, but up to SYS on AMD CPUs with at most this many GPUs
# [A] (NCCL paths.cc ncclTopoCheckP2p).
NCCL_AMD_P2P_SYS_MAX_GPUS = 2

# SLIT distances: 10 local [A] (ACPI SLIT); nodes of one socket (NPS/SNC) sit at 11-12,
# other sockets at >= 20 (typically 21-32) [U]. At or below this distance two NUMA nodes are
# treated as one socket [D].
NUMA_SAME_SOCKET_DISTANCE_MAX = 19

# A profiled job with less pageable H2D than this per step is not worth a warning whatever its
# share (tiny scalar copies) [D] (checks.md §2 trap "tiny copies").
PAGEABLE_WORKLOAD_MIN_BYTES_PER_STEP = 16 * 1024**2
# A profiled job that spends more than this share of its step in NCCL with no compute
# overlapping is communication-bound [D].
NCCL_EXPOSED_SHARE_WARN = 0.20
# PyTorch DDP's default gradient bucket (bucket_cap_mb=25) [A] (torch DDP docs; pytorch#118421)
# and the larger bucket the what-if uses [D].
DDP_DEFAULT_BUCKET_BYTES = 25 * 1024**2
DDP_LARGE_BUCKET_BYTES = 100 * 1024**2
# Gradient-accumulation steps the what-if prints when no step count reaches the target [D].
GRAD_ACCUM_WHAT_IF_STEPS = 4
# Accumulation is never suggested beyond this many micro-steps [D].
GRAD_ACCUM_MAX_STEPS = 64

# ============================================================================================
# Link, error, uplink, NVLink and environment checks (nvml.*, pcie.*, nvlink.*, env.*)
# ============================================================================================

# A GPU's PCIe gen/width is judged only at full-speed P-state (P0): DCGM skips its link check
# unless the GPU is in P0 before and after reading them [A] (DCGM PcieMain.cpp
# bg_check_pci_link); idle GPUs drop to Gen1 [U] (checks.md §4 "idle downclocking").
LINK_JUDGE_PSTATE = 0


def aer_correctable_limit_per_minute(gen: int | None, width: int | None) -> int:
    """AER correctable errors per minute tolerated on a GPU or its link partner.

    DCGM's GEMM rule: more than 32/min on Gen5 x16, 16/min otherwise, fails [A] (DCGM Pcie.cpp;
    checks.md §4). Gen6 and wider links keep the Gen5 x16 value [D].
    """
    if gen is not None and width is not None and gen >= 5 and width >= 16:
        return AER_CORRECTABLE_WARN_PER_MIN_GEN5_X16
    return AER_CORRECTABLE_WARN_PER_MIN


# Concurrent pinned H2D of the GPUs behind one switch uplink below this fraction of each GPU's
# solo pinned H2D: the shared uplink is the bottleneck [D] (same cut as PINNED_WARN_FRACTION,
# checks.md §2 "h2d_below_link"; probes.md §4.1 names the shared uplink as a cause).
SHARED_UPLINK_CONCURRENT_WARN_FRACTION = 0.75
# GPUs behind one uplink whose combined link model exceeds the uplink's model by more than this
# ratio are oversubscribed for concurrent H2D [D] (arithmetic: 1.0 = exactly saturated).
SHARED_UPLINK_OVERSUBSCRIBED_RATIO = 1.0

# NVLink replay/recovery errors: DCGM fails at a delta >= 1 within its one-minute watch window
# [A] (DcgmHealthWatch.cpp MonitorNVLink4Fields, DCGM_LIMIT_MAX_NVLINK_ERROR). CRC errors warn at
# any delta and fail at NVLINK_CRC_FAIL_PER_S (above).
NVLINK_ERROR_FAIL_PER_MIN = 1.0

# NCCL's default P2P cutoff: P2P up to PXB, not across CPU host bridges [A] (NCCL paths.cc
# ncclTopoCheckP2p; env docs NCCL_P2P_LEVEL). AMD CPUs with <= NCCL_AMD_P2P_SYS_MAX_GPUS use SYS.
NCCL_P2P_DEFAULT_LEVEL = "PXB"
# NCCL's default GPUDirect RDMA cutoff between a GPU and a NIC [A] (NCCL paths.cc
# ncclTopoCheckGdr: PATH_PXB).
NCCL_NET_GDR_DEFAULT_LEVEL = "PXB"

# ---------------------------------------------------------------- kernel log and link flaps

# Corrected AER errors on one device: DCGM's PCIe test fails above 16 per minute, 32 on a Gen5
# x16 link [A] (research/checks.md §4). A burst of AER_BURST_COUNT within AER_BURST_SECONDS is a
# storm however long the log is [D] (a healthy link does not log several errors a second).
AER_CORRECTED_PER_MINUTE = 16
AER_CORRECTED_PER_MINUTE_GEN5_X16 = 32
AER_BURST_COUNT = 3
AER_BURST_SECONDS = 1.0
# Link readings: utilisation at which a reading is under load; width changes that make a link
# unstable (a healthy link never retrains its width); generation changes per minute too fast for
# link power management when the load is unknown (rtx6kpro#88: 1,415 in two minutes) [D].
LINK_LOADED_PCT = 50.0
LINK_WIDTH_CHANGES_WARN = 1
LINK_FAST_TRANSITIONS_PER_MINUTE = 30.0

__all__ = [name for name in dir() if name.isupper() or name.endswith("_gbps")]

"""The doctor on every real paste of ../shared/realdata: what each file's note says it shows.

Every corpus file (globbed, so a new file at least runs) is imported on its own with
``import_texts`` and diagnosed with ``pcidoc.doctor.run``. Two things are asserted:

* no check ends in ``error`` on any file, and the invariants that hold for every paste (an
  import never proves the driver healthy now, ACS/IOMMU state or the job's environment);
* the table :data:`EXPECTED`, written from each file's ``# note`` header, the corpus INDEX
  ("expected diagnosis") and DIAGNOSIS-NOTES.md: for each check the note supports a verdict
  on, the severities it may end in, the subjects it must name and words it must say.

A file diagnosed wrongly is a bug in a check (fix the check in a general way, with a unit test
of the rule in the check's own test module), unless the expectation misreads the note.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pytest

from pcidoc.collect.importers import import_texts
from pcidoc.doctor import run
from pcidoc.model.report import CheckResult, Report, ReportSource
from tests.conftest import read_realdata, realdata_dir

HEALTHY = frozenset({"pass", "info"})
"""Not a fault: a pass, or something worth knowing with nothing to fix."""


@dataclass(frozen=True)
class Expect:
    """What one check must conclude on one corpus file."""

    check: str
    severities: frozenset[str]
    subjects: frozenset[str] = frozenset()
    exact_subjects: bool = False
    confidence: frozenset[str] = frozenset()
    says: tuple[str, ...] = ()
    unproven: bool = False

    def verify(self, result: CheckResult) -> list[str]:
        """Why ``result`` does not meet the expectation (empty when it does)."""
        problems: list[str] = []
        if self.unproven:
            if result.severity != "skip" and (
                result.severity == "pass" or result.confidence != "low"
            ):
                problems.append(
                    f"expected skip or a low-confidence non-pass (the paste cannot prove it), "
                    f"got {result.severity}/{result.confidence}"
                )
            return problems
        if result.severity not in self.severities:
            problems.append(f"severity {result.severity}, expected {'/'.join(self.severities)}")
        if self.confidence and result.confidence not in self.confidence:
            problems.append(f"confidence {result.confidence}, expected {'/'.join(self.confidence)}")
        subjects = set(result.subjects)
        if self.exact_subjects and subjects != self.subjects:
            problems.append(f"subjects {sorted(subjects)}, expected {sorted(self.subjects)}")
        elif not self.subjects <= subjects:
            problems.append(f"subjects {sorted(subjects)} lack {sorted(self.subjects - subjects)}")
        text = _text(result).lower()
        for words in self.says:
            if words.lower() not in text:
                problems.append(f"does not say {words!r}")
        return problems


def _text(result: CheckResult) -> str:
    """Everything a reader sees of a result: summary, evidence, remediation, needs."""
    parts = [result.summary, result.needs or ""]
    parts += [e.text() for e in result.evidence]
    parts += list(result.remediation)
    return "\n".join(parts)


def expect(
    check: str,
    severity: str | Iterable[str],
    *,
    subjects: Iterable[str] = (),
    exact: bool = False,
    confidence: str | Iterable[str] = (),
    says: str | Iterable[str] = (),
) -> Expect:
    """One row of the table: ``expect("p2p.fallback", "fail", subjects={"GPU0-GPU1"})``.

    Args:
        check: Check id.
        severity: The severity, or the severities it may end in.
        subjects: Subjects the result must name (all of them; more are allowed unless
            ``exact``).
        exact: The result names exactly ``subjects``.
        confidence: The confidence, or the confidences allowed.
        says: Words (case-insensitive) the summary, evidence or remediation must contain.
    """
    return Expect(
        check,
        frozenset([severity] if isinstance(severity, str) else severity),
        frozenset(subjects),
        exact,
        frozenset([confidence] if isinstance(confidence, str) else confidence),
        (says,) if isinstance(says, str) else tuple(says),
    )


def unproven(check: str) -> Expect:
    """The paste cannot show what this check needs: skip, or a low-confidence non-pass."""
    return Expect(check, frozenset(), unproven=True)


def pairs(*labels: str) -> set[str]:
    """``pairs("0-1", "2-3")`` -> ``{"GPU0-GPU1", "GPU2-GPU3"}``."""
    out = set()
    for label in labels:
        a, b = label.split("-")
        out.add(f"GPU{a}-GPU{b}")
    return out


def gpus(*indices: int) -> set[str]:
    """``gpus(0, 1)`` -> ``{"GPU0", "GPU1"}``."""
    return {f"GPU{i}" for i in indices}


ALL_PAIRS_6 = pairs(*(f"{a}-{b}" for a in range(6) for b in range(a + 1, 6)))

# Per corpus file: the verdicts its note supports. Comments quote the note / INDEX briefly.
EXPECTED: dict[str, list[Expect]] = {
    # --------------------------------------------------------------------------- bandwidth
    # "H2D 12.3 / D2H 13.2 GB/s is Gen3-x16-class although A100 is PCIe Gen4-capable ...
    # check nvidia-smi -q -d PCIE": the link is not in the paste, so a hint to check it.
    "bandwidth/a100-sxm4-40gb-pinned-12gbps-cuda-demo.txt": [
        expect(
            "transfer.pinned",
            {"info", "warn"},
            subjects=gpus(0),
            confidence="low",
            says=["Gen3", "nvidia-smi -q -d PCIE"],
        ),
        expect("transfer.pageable", "skip"),
        expect("pcie.link-speed", "skip"),
    ],
    # "Pinned H2D 25.7 / D2H 25.8 GB/s (healthy Gen4 x16) vs pageable 10.0 / 10.8":
    # pinned ~2.5x pageable is normal (DIAGNOSIS-NOTES).
    "bandwidth/dgx-a100-pinned-vs-pageable-vim-listchars-gengwg.txt": [
        expect("transfer.pageable", "info", says=["2.6×", "25.7 vs 10.0"]),
        expect("transfer.pinned", HEALTHY, subjects=gpus(0), says="Gen4"),
    ],
    # "healthy Gen4 x16 at moderate sizes" (SM copy 25.13 GB/s at 512 MiB).
    "bandwidth/nvbandwidth-a100-h2d-sm-25gbps-nvbandwidth-42.txt": [
        expect("transfer.pinned", HEALTHY, subjects=gpus(0), says="Gen4"),
    ],
    # "H2D 12.2, D2H 13.2 GB/s = healthy Gen3 x16".
    "bandwidth/rtx2080ti-pinned-gen3-autodl.txt": [
        expect("transfer.pinned", HEALTHY, subjects=gpus(0), says="Gen3"),
    ],
    # "H2D 9.7 GB/s, D2H 11.1 GB/s: normal for Gen3 x16".
    "bandwidth/t4-aliyun-pinned-quick-cuda-demo.txt": [
        expect("transfer.pinned", HEALTHY, subjects=gpus(0), says="Gen3"),
    ],
    # "H2D 9.6 / D2H 11.4 GB/s (Gen3 x16 normal)".
    "bandwidth/v100-sxm2-16gb-pinned-cuda-demo.txt": [
        expect("transfer.pinned", HEALTHY, subjects=gpus(0), says="Gen3"),
    ],
    # -------------------------------------------------------------------------- nccl-tests
    # "busbw climbs to 29.5 GB/s at 32 MiB then collapses to ~5 GB/s from 64 MiB upward
    # (a cliff, not saturation)".
    "nccl-tests/h100-2node-allreduce-cliff-at-64mb-tagged-output-nccl-1453.txt": [
        expect("scaling.allreduce", {"warn", "fail"}, says=["29.5", "5.3", "64.0 MiB"]),
    ],
    # "healthy multi-node (network-bound well below NVLink)".
    "nccl-tests/h100-a3mega-2node-16gpu-allreduce-338gbps-ztan.txt": [
        expect("scaling.allreduce", "info", says=["2 nodes", "network"]),
    ],
    # "busbw saturates at 4.00 GB/s (SHM path, no P2P). Compare ~10 GB/s expected with working
    # P2P on Gen3 x16": low for any PCIe ring; the GPUs are GeForce (P2P refused by policy).
    "nccl-tests/rtx2080ti-x2-pix-no-p2p-allreduce-4gbps-autodl.txt": [
        expect(
            "scaling.allreduce",
            "warn",
            subjects=gpus(0, 1),
            confidence="low",
            says=["4.0 GB/s", "P2P", "shared memory"],
        ),
    ],
    # "P2P working over PCIe (cross-socket), busbw ~20 GB/s is PCIe Gen4 x16 cross-socket
    # bound": nothing wrong; the links are not in the paste, so no verdict on the level.
    "nccl-tests/rtx4090x8-pcie-sys-p2p-unlocked-allreduce-blog.txt": [
        expect("scaling.allreduce", HEALTHY, says="20.6"),
    ],
    # ------------------------------------------------------------------------------ nvlink
    # "NVLink healthy; slowness was config (NCCL_P2P_LEVEL=LOC)"; GPUs after GPU2 elided.
    "nvlink/a100-sxm4-80gb-12links-25gbps-tab-indent-nccl-tests-228.txt": [
        expect("nvlink.state", HEALTHY),
        expect("nvlink.errors", "skip"),
        expect("nvlink.fabric", "info", confidence="low"),
        expect("env.nccl", "skip"),
    ],
    # "18 NVLinks x 53.125 GB/s per GPU (NVLink5)": healthy.
    "nvlink/gb200-18links-53gbps-k8s-test-infra-371.txt": [
        expect("nvlink.state", HEALTHY),
        expect("nvlink.errors", "skip"),
    ],
    # "IMPORTANT NEGATIVE CASE: 6 of 18 links <inactive> ... EXPECTED for H100 PCIe with
    # bridges": unwired lanes, not a fault; a bridge is not an NVSwitch fabric.
    "nvlink/h100-pcie-x2-bridge-12of18-active-6-inactive-koga.txt": [
        expect("nvlink.state", "info", subjects=gpus(0, 1), says=["inactive", "12 active"]),
        expect("nvlink.fabric", "skip", says=["not applicable", "bridge"]),
    ],
    # "H800 has 8 NVLinks per GPU at 26.562 GB/s (author elided GPUs 2-6)": healthy.
    "nvlink/h800-8links-26gbps-llm-action.txt": [
        expect("nvlink.state", HEALTHY),
    ],
    # ----------------------------------------------------------------------- p2p-bandwidth
    # "Healthy NVLink3 reference: P2P writes ~265-275 GB/s ... latency ~3 us vs ~24 us".
    "p2p-bandwidth/a100-sxm4-80gb-x8-nvlink-270gbps-distserve-3.txt": [
        expect("p2p.capability", "pass"),
        expect("p2p.fallback", "pass", says="NVLink"),
    ],
    # "Healthy bridged NVLink: P2P writes 256.6 GB/s uni, 509 GB/s bidir".
    "p2p-bandwidth/h100-pcie-x2-nvlink-bridge-256gbps-koga.txt": [
        expect("p2p.capability", "pass"),
        expect("p2p.fallback", "pass", says="NVLink"),
    ],
    # "CANNOT Access Peer; ... P2P=Enabled == Disabled (~5.7 GB/s)": refused, fallback copy.
    "p2p-bandwidth/rtx2080ti-x2-pix-no-p2p-5.7gbps-autodl.txt": [
        expect("p2p.capability", "info", subjects=pairs("0-1"), says="consumer GPUs"),
        expect("p2p.fallback", "info", subjects=pairs("0-1"), says=["5.7", "fallback"]),
    ],
    # "driver 525.105.17 has P2P properly disabled on GeForce ... Enabled == Disabled".
    "p2p-bandwidth/rtx4090x2-driver525-p2p-denied-puget-kinghorn.txt": [
        expect("p2p.capability", "info", subjects=pairs("0-1"), says="consumer GPUs"),
        expect("p2p.fallback", "info", subjects=pairs("0-1"), says="fallback"),
    ],
    # "P2P writes ~10-11 GB/s, reads ~12.4 GB/s vs ~22 GB/s disabled": broken P2P, disable it.
    "p2p-bandwidth/rtx4090x6-sm-copy-p2p-enabled-10gbps-nccl-814.txt": [
        expect(
            "p2p.fallback",
            "fail",
            subjects=ALL_PAIRS_6,
            exact=True,
            says=["slower than staging", "NCCL_P2P_DISABLE=1"],
        ),
    ],
    # "P2P Connectivity Matrix all 0 ... P2P=Enabled rows equal Disabled rows because fallback
    # memcpy is used": P2P refused (the pairs are SYS, but the paste does not show it).
    "p2p-bandwidth/rtx4090x8-sys-no-p2p-stock-driver-blog.txt": [
        expect("p2p.capability", {"warn", "info"}, subjects=pairs("0-1", "6-7")),
        expect("p2p.fallback", "info", subjects=pairs("0-1", "6-7"), says="fallback"),
    ],
    # "Classic 'P2P enabled is SLOWER than disabled': 12.19 GB/s one way and 2.01 the other".
    "p2p-bandwidth/rtx5090x2-p2p-enabled-2gbps-rebar-off-aikitoria-9.txt": [
        expect(
            "p2p.fallback",
            "fail",
            subjects=pairs("0-1"),
            exact=True,
            says=["slower than staging", "2.0 vs"],
        ),
        expect("p2p.capability", "pass"),
    ],
    # -------------------------------------------------------------------------- p2p-matrix
    # "All OK" on an 8x H100 node: a grant, nothing measured.
    "p2p-matrix/h100x8-p2p-r-all-ok-ml-engineering.txt": [
        expect("p2p.capability", "pass", confidence="medium", says="grant"),
    ],
    # "CNS = Chipset not supported on a pair of L4s".
    "p2p-matrix/l4x2-p2p-r-cns-ml-engineering.txt": [
        expect("p2p.capability", "warn", subjects=pairs("0-1"), says=["CNS", "allow-list"]),
    ],
    # "NS for the PIX pair".
    "p2p-matrix/rtx2080ti-x2-pix-ns-autodl.txt": [
        expect("p2p.capability", "warn", subjects=pairs("0-1"), says="NS"),
    ],
    # "p2p rw all OK thanks to patched driver ... corruption in vLLM custom all-reduce":
    # OK is a grant, not delivery.
    "p2p-matrix/rtx3090x2-patched-ok-club3090-922.txt": [
        expect("p2p.capability", HEALTHY, confidence="medium", says="grant"),
    ],
    # "GNS = GPU not supported (stock GeForce driver, no P2P)".
    "p2p-matrix/rtx5090x2-tr3975wx-gns-club3090-1140.txt": [
        expect("p2p.capability", "info", subjects=pairs("0-1"), says="GNS"),
    ],
    # -------------------------------------------------------------------------- pcie-query
    # "Max 4 / Current 4 / Device Max 4 but 'Host Max : 3' ... Replays Since Reset 0":
    # the host value is not the real limit; no replays.
    "pcie-query/a100-sxm4-40gb-q-host-max-gen3-xuesongtap.txt": [
        expect("pcie.link-speed", "info", subjects=gpus(0), says="Host"),
        expect("pcie.errors", HEALTHY),
        expect("env.virtualization", HEALTHY),
    ],
    # "Link Width Max 16x but Current 8x (A10G in this cloud SKU is wired/exposed as x8)":
    # halves H2D; in this VM likely by design.
    "pcie-query/a10g-aws-passthrough-x8-of-x16-host-max-na.txt": [
        expect("pcie.link-speed", "warn", subjects=gpus(0), exact=True, confidence="low"),
        expect("pcie.errors", "pass"),
        expect("env.virtualization", "info", says="VM"),
    ],
    # "State Completed but Status 'Insufficient Resources', CliqueId 0 and all-zero
    # ClusterUUID -> fabric not usable".
    "pcie-query/gb200-fabric-insufficient-resources-azhpc-images-506.txt": [
        expect("nvlink.fabric", "fail", subjects=gpus(0), says="Insufficient Resources"),
    ],
    # "healthy Gen5 x16, Replays 0".
    "pcie-query/h800-q-gen5-x16-llm-action.txt": [
        expect("pcie.link-speed", HEALTHY),
        expect("pcie.errors", HEALTHY),
        expect("nvlink.fabric", HEALTHY),
        expect("env.virtualization", HEALTHY),
    ],
    # -------------------------------------------------------------------------------- topo
    # "NODE pair, P2P NS (not supported)".
    "topo/2gpu-node-ns-indented-wrapped-paste-club3090-1125.txt": [
        expect("p2p.capability", "warn", subjects=pairs("0-1"), says=["NS", "NODE"]),
        expect("numa.cross-socket", "pass"),
        expect("nvlink.state", "info", says="no NVLink"),
        unproven("p2p.acs-iommu"),
    ],
    # "healthy; use mlx5_6/7 for GPUDirect RDMA (PXB)"; GPUs on NUMA node 1, so the host has
    # more than one node.
    "topo/2gpu-nv12-slice-8-mlx5-columns-lmdeploy-1944.txt": [
        expect("nvlink.state", "pass"),
        expect("numa.nic-affinity", "pass", says=["mlx5_6", "mlx5_7"]),
        expect("numa.cross-socket", "pass"),
        expect("transfer.remote-numa", "skip"),
    ],
    # "NVLink bridge pair healthy".
    "topo/2gpu-nv2-bridge-ml-engineering.txt": [
        expect("nvlink.state", "pass"),
        expect("nvlink.fabric", HEALTHY),
        expect("numa.cross-socket", "pass"),
    ],
    # "consumer PCIe pair via host bridge"; P2P status not in the paste.
    "topo/2gpu-phb-no-nvlink-ml-engineering.txt": [
        expect("nvlink.state", "info", says="no NVLink"),
        expect("p2p.capability", "skip"),
        expect("numa.cross-socket", "pass"),
    ],
    # "NVLink pair 0-1 healthy; GPU2 reachable only via PCIe (NODE); NICs local only to
    # GPU2" (PHB, beyond NCCL's default GPUDirect level PXB).
    "topo/3gpu-nv4-pair-plus-pcie-gpu-2mlx5-nccl-tests-320.txt": [
        expect("nvlink.state", "info", subjects=gpus(2), exact=True, says="bridge"),
        expect("numa.nic-affinity", "warn", subjects=gpus(0, 1, 2), says="PHB"),
        expect("nvlink.fabric", "skip", says="not applicable"),
    ],
    # "ACS/VT-d (IOMMU) redirecting P2P -> hang": not visible in topo -m alone; PXB/PIX pairs
    # on two sockets.
    "topo/4gpu-pxb-pix-hang-vtd-nccl-667.txt": [
        unproven("p2p.acs-iommu"),
        expect(
            "numa.cross-socket",
            "info",
            subjects=pairs("0-2", "0-3", "1-2", "1-3"),
            exact=True,
            says="GPUs 0-1 or GPUs 2-3",
        ),
        expect("pcie.shared-uplink", "info", subjects=gpus(0, 1, 2, 3)),
        expect("nvlink.state", "info"),
    ],
    # "best pairs are (1,2) and (3,4) PHB; avoid GPU0 in TP group (cross-socket)".
    "topo/5gpu-4090-mixed-sys-phb-node-club3090-46.txt": [
        expect(
            "numa.cross-socket",
            "info",
            subjects=pairs("0-1", "0-2", "0-3", "0-4"),
            exact=True,
            says="GPUs 1-4",
        ),
        expect("pcie.shared-uplink", "pass"),
    ],
    # "healthy slice; affinity must match NUMA 3".
    "topo/a100-2gpu-slurm-slice-nv12-10nic-dask-cuda-1358.txt": [
        expect("nvlink.state", "pass"),
        expect("numa.nic-affinity", "pass"),
        expect("numa.cross-socket", "pass"),
        expect("numa.process-affinity", "skip"),
        expect("transfer.remote-numa", "skip"),
    ],
    # "healthy NV4 ... 4 mlx5 NICs each PXB to one GPU".
    "topo/a100-4gpu-nv4-4nic-pxb-cpu-affinity-0-numa-0-1-nccl-tests-331.txt": [
        expect("nvlink.state", "pass"),
        expect("numa.nic-affinity", "pass"),
        expect("numa.cross-socket", "pass"),
    ],
    # "NVLink healthy; NIC placement poor for GPUDirect RDMA (SYS)".
    "topo/a100-sxm4-80gb-x8-nv12-4nic-all-sys-distserve-3.txt": [
        expect("nvlink.state", "pass"),
        expect("numa.nic-affinity", "warn", subjects=gpus(*range(8)), exact=True, says="SYS"),
        expect("numa.cross-socket", "pass"),
    ],
    # "healthy NVLink; NUMA info hidden (VM) -> CPU affinity unreliable; exclude mlx5_bond_0
    # from NCCL".
    "topo/a100-sxm4-8gpu-nv12-17nic-bond-single-numa-xuesongtap.txt": [
        expect("nvlink.state", "pass"),
        expect(
            "numa.nic-affinity",
            "info",
            subjects={"mlx5_bond_0"},
            says=["bond", "NCCL_IB_HCA"],
        ),
        expect("numa.cross-socket", "pass"),
    ],
    # "healthy NVSwitch".
    "topo/a100x8-nv12-compacted-columns-ml-engineering.txt": [
        expect("nvlink.state", "pass"),
        expect("nvlink.fabric", "info", confidence="medium", says="NVSwitch system"),
        expect("numa.cross-socket", "pass"),
    ],
    # "topology hidden by hypervisor; P2P likely unavailable; cannot infer locality".
    "topo/a10x4-all-sys-vm-2nic-xuesongtap.txt": [
        expect("numa.cross-socket", "info", confidence="low", says="flattened"),
        expect("env.virtualization", "info", confidence="low", says="flattened"),
        expect("numa.nic-affinity", "info", confidence="low", says="flattened"),
        expect("pcie.shared-uplink", "info", confidence="low"),
    ],
    # "healthy; NUMA-aware pinning needed (2 GPUs per NUMA node)"; rows GPU5-7 truncated.
    "topo/b200-8gpu-4numa-9nic-unsloth-3872.txt": [
        expect("nvlink.state", HEALTHY),
        expect("numa.nic-affinity", "pass"),
        expect("numa.cross-socket", HEALTHY),
    ],
    # "GB200 4-GPU NV18, Grace NUMA split, no NICs": healthy.
    "topo/gb200-4gpu-nv18-grace-k8s-test-infra-371.txt": [
        expect("nvlink.state", "pass"),
        expect("nvlink.fabric", "info", confidence="medium", says="NVSwitch system"),
        expect("numa.cross-socket", "pass"),
        expect("numa.nic-affinity", "info", says="no NICs"),
    ],
    # "PHB consumer pair; P2P capability not shown in this capture".
    "topo/gtx1080ti-x2-desktop-phb-numa-na-xuesongtap.txt": [
        expect("nvlink.state", "info"),
        expect("p2p.capability", "skip"),
        expect("numa.cross-socket", "pass"),
    ],
    # "healthy; GPU<->NIC affinity ideal (PIX)".
    "topo/h100-4gpu-nv6-4nic-nccl-1617.txt": [
        expect("nvlink.state", "pass"),
        expect("nvlink.fabric", "info", confidence="low", says="may be an NVSwitch"),
        expect("numa.nic-affinity", "pass", says="1:1"),
    ],
    # "NIC:GPU ratio 1:2 - expected ~half inter-node bandwidth vs 8-NIC rail design; use PXN"
    # (GPU7's row is truncated).
    "topo/h100-8gpu-nv18-only-4-pix-nics-nccl-tests-232.txt": [
        expect("nvlink.state", "pass"),
        expect("numa.nic-affinity", "warn", subjects=gpus(1, 3, 5), says="PXN"),
    ],
    # "healthy".
    "topo/h100-hgx-nv18-10nic-trailing-tabs-nccl-1264.txt": [
        expect("nvlink.state", "pass"),
        expect("numa.nic-affinity", "pass"),
    ],
    # "healthy bridged pair".
    "topo/h100-pcie-x2-nv12-bridged-dl380a-koga.txt": [
        expect("nvlink.state", "pass"),
        expect("numa.cross-socket", "pass"),
        expect("transfer.remote-numa", "skip"),
    ],
    # "healthy NVSwitch system; all pairs NV18".
    "topo/h100-sxm-8gpu-nv18-thunderkittens-167.txt": [
        expect("nvlink.state", "pass"),
        expect("nvlink.fabric", "info", confidence="medium", says="NVSwitch system"),
        expect("numa.cross-socket", "pass"),
    ],
    # "healthy NVSwitch".
    "topo/h100x8-nv18-compacted-columns-ml-engineering.txt": [
        expect("nvlink.state", "pass"),
    ],
    # "healthy NVLink; GPUs 0,1,4,5 have no PCIe-local NIC".
    "topo/h800-8gpu-nv8-2nic-pxb-vllm-8852.txt": [
        expect("nvlink.state", "pass"),
        expect("numa.nic-affinity", "warn", subjects=gpus(0, 1, 4, 5), exact=True),
    ],
    # "parser should degrade gracefully; NV8 mesh, NIC PIX to GPU1/GPU3/GPU7".
    "topo/h800-8gpu-nv8-terminal-truncated-paste-llm-action.txt": [
        expect("nvlink.state", "pass"),
        expect("numa.nic-affinity", "warn", subjects=gpus(0, 2, 4, 5, 6), exact=True),
    ],
    # "no NVLink; best pairs (0,1),(2,3) NODE; GPUDirect RDMA local only for GPU2/3" (NODE,
    # beyond NCCL's default PXB).
    "topo/l40s-x4-node-sys-2mlx5-warpem-106.txt": [
        expect("nvlink.state", "info"),
        expect(
            "numa.cross-socket",
            "info",
            subjects=pairs("0-2", "0-3", "1-2", "1-3"),
            says="GPUs 0-1 or GPUs 2-3",
        ),
        expect("numa.nic-affinity", "warn", subjects=gpus(0, 1, 2, 3), says="NODE"),
    ],
    # "classic dual-socket PCIe tree; NIC local (PHB) only to socket-0 GPUs".
    "topo/old-format-8gpu-mlx4-pix-phb-sys-k8s-53497.txt": [
        expect("numa.nic-affinity", "warn", says="PHB"),
        expect("numa.cross-socket", "info", subjects=pairs("0-4", "3-7")),
        expect("pcie.shared-uplink", "info", subjects=gpus(0, 1)),
    ],
    # "P2P not supported (GeForce driver) even though GPUs share a PCIe switch".
    "topo/rtx2080ti-x2-pix-container-with-p2p-ns-autodl.txt": [
        expect("p2p.capability", "warn", subjects=pairs("0-1"), says=["NS", "PIX"]),
        expect("pcie.shared-uplink", "info", subjects=pairs("0-1"), says="uplink"),
        expect("numa.cross-socket", "pass"),
        expect("transfer.remote-numa", "skip"),
    ],
    # "P2P reported OK (patched)": the -p2p matrix is in another file; this one has topo only.
    "topo/rtx3090x2-phb-patched-p2p-ok-club3090-922.txt": [
        expect("p2p.capability", "skip"),
        expect("nvlink.state", "info"),
        unproven("p2p.acs-iommu"),
    ],
    # "no NVLink; PHB P2P (if enabled) limited by x8 links" (the widths are not in topo -m).
    "topo/rtx3090x2-phb-pcie-x8-club3090-104.txt": [
        expect("nvlink.state", "info", says="no NVLink"),
        expect("pcie.link-speed", "skip"),
        expect("numa.cross-socket", "pass"),
    ],
    # "P2P over PIX/PHB hangs -> suspect ACS/IOMMU; workaround NCCL_P2P_DISABLE=1": not
    # provable from topo -m.
    "topo/rtx3090x8-pix-phb-sys-timeout-nccl-1439.txt": [
        unproven("p2p.acs-iommu"),
        expect("numa.cross-socket", "info", subjects=pairs("0-4", "3-7"), says="GPUs 0-3"),
        expect("pcie.shared-uplink", "info", subjects=gpus(0, 1, 6, 7)),
    ],
    # "no P2P-friendly pairs (all SYS); pick GPUs within same NUMA node; cross-socket".
    "topo/rtx4090-8gpu-all-sys-2nic-go-gpuallocator-17.txt": [
        expect("numa.cross-socket", "info", subjects=pairs("0-4", "3-7"), says="GPUs 0-3"),
        expect("numa.nic-affinity", "warn"),
        expect("pcie.shared-uplink", "pass"),
    ],
    # "no PCIe-switch locality; all cross-root/cross-socket SYS".
    "topo/rtx4090x8-dual-epyc7542-nps4-4mlx5-all-sys-blog.txt": [
        expect("numa.cross-socket", "info", subjects=pairs("0-1", "6-7")),
        expect("numa.nic-affinity", "warn"),
        expect("nvlink.state", "info"),
    ],
    # "PHB; P2P not supported on GeForce" (the P2P status is not in this paste).
    "topo/rtx5070x2-phb-no-p2p-aikitoria-12.txt": [
        expect("p2p.capability", "skip"),
        expect("nvlink.state", "info"),
        expect("numa.cross-socket", "pass"),
    ],
    # "P2P unavailable: GNS" (saved separately in p2p-matrix/): topo only here.
    "topo/rtx5090x2-tr3975wx-phb-gns-club3090-1140.txt": [
        expect("p2p.capability", "skip"),
        expect("numa.cross-socket", "pass"),
    ],
    # "P2P reported OK via patched driver; topology NODE": a grant, not delivery.
    "topo/rtx5090x5-epyc-node-phb-with-p2p-p-aikitoria-13.txt": [
        expect("p2p.capability", HEALTHY, confidence="medium", says="grant"),
        expect("numa.cross-socket", "pass"),
    ],
    # "ACS ReqRedir/CmpltRedir enabled on root ports -> P2P redirected via IOMMU -> hang":
    # topo only, so ACS cannot be proven from the paste.
    "topo/rtx5880ada-x2-node-deadlock-acs-nccl-2079.txt": [
        unproven("p2p.acs-iommu"),
        expect("p2p.capability", "skip"),
        expect("numa.cross-socket", "pass"),
        expect("nvlink.state", "info"),
    ],
    # "healthy DGX-2 topology" (rows after GPU3 truncated).
    "topo/v100-dgx2-16gpu-nv6-10mlx5-nccl-tests-78.txt": [
        expect("nvlink.state", HEALTHY),
        expect("numa.nic-affinity", "pass"),
        expect("nvlink.fabric", "info"),
    ],
}


def _corpus_files() -> list[str]:
    try:
        root = realdata_dir()
    except pytest.skip.Exception:
        return []
    return sorted(str(p.relative_to(root)) for p in root.glob("*/*.txt"))


FILES = _corpus_files()


def diagnose(relpath: str) -> Report:
    """Import one corpus file on its own and run every check over it."""
    capture = import_texts([(relpath, read_realdata(relpath))]).capture
    return run(
        capture,
        ReportSource(kind="import", path=relpath),
        generated_at="2000-01-01T00:00:00Z",
    )


def test_the_expectation_table_names_real_files() -> None:
    root = realdata_dir()
    assert FILES, f"no corpus files under {root}"
    unknown = sorted(set(EXPECTED) - set(FILES))
    assert not unknown, f"the table names files that are not in the corpus: {unknown}"
    # Files added to the corpus later get the generic assertions of test_corpus_file_diagnosis
    # (no check errors, nothing a paste cannot show passes) until they get a row here.


@pytest.mark.parametrize("relpath", FILES or ["<corpus missing>"])
def test_corpus_file_diagnosis(relpath: str) -> None:
    if relpath == "<corpus missing>":
        realdata_dir()  # skips locally, fails in CI
        pytest.fail("corpus present but empty")
    report = diagnose(relpath)
    errors = [f"{c.id}: {c.summary}" for c in report.checks if c.severity == "error"]
    assert not errors, errors
    # What no paste can show: the driver's health now, ACS/IOMMU state, the job's environment
    # and its processes. Those never pass on an import.
    for check_id in ("nvml.health", "p2p.acs-iommu", "env.nccl", "numa.process-affinity"):
        result = report.check(check_id)
        assert result is not None
        assert result.severity != "pass", (check_id, result.summary)
    assert report.check("env.nccl").severity == "skip"  # type: ignore[union-attr]
    problems = []
    for row in EXPECTED.get(relpath, []):
        result = report.check(row.check)
        assert result is not None, row.check
        problems += [f"{row.check}: {p} — {result.summary}" for p in row.verify(result)]
    assert not problems, "\n".join(problems)

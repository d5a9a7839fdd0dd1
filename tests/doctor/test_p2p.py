"""p2p.capability, p2p.acs-iommu and p2p.fallback.

Numbers in the fixtures come from the real-output corpus (../shared/realdata); each literal is
labelled with the corpus file it was read from. Machines are synthetic (tests/builders.py).
"""

from __future__ import annotations

import pytest

from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import load_checks
from pcidoc.doctor.runner import run_check
from pcidoc.model import (
    AcsControl,
    Capture,
    CheckResult,
    P2PMatrixMeasurement,
    P2PVerification,
    PcieHop,
)
from pcidoc.model.facts import P2PStatus
from tests.builders import machine

GEFORCE = {"name": "NVIDIA GeForce RTX 4090"}


def result(cap: Capture, check_id: str) -> CheckResult:
    return run_check(load_checks()[check_id], Context(cap))


def codes(cap: Capture, code: str, cap_name: str = "read") -> Capture:
    """Every off-diagonal pair gets ``code`` in one capability matrix."""
    n = len(cap.p2p.gpus)
    cap.p2p.matrices[cap_name] = [["X" if i == j else code for j in range(n)] for i in range(n)]
    return cap


def access(cap: Capture, ok: bool) -> Capture:
    n = len(cap.p2p.gpus)
    cap.p2p.can_access_peer = [[True if i == j else ok for j in range(n)] for i in range(n)]
    return cap


def switch_paths(cap: Capture, acs_raw: int | None, **hop_fields: object) -> Capture:
    """All GPUs behind one PCIe switch; every downstream port gets ``acs_raw``."""
    for g in cap.gpus:
        dsp = PcieHop(
            bus_id=f"0000:{0x80 + g.index:02x}:00.0",
            role="switch_downstream",
            acs_capable=True,
            acs=None if acs_raw is None else AcsControl.from_raw(acs_raw),
        )
        for key, value in hop_fields.items():
            setattr(dsp, key, value)
        g.path = [
            dsp,
            PcieHop(bus_id="0000:7f:00.0", role="switch_upstream", acs_capable=False),
            PcieHop(
                bus_id="0000:00:01.0",
                role="root_port",
                acs_capable=True,
                acs=AcsControl.from_raw(0x1F),
            ),
        ]
    return cap


def root_port_paths(cap: Capture, acs_raw: int) -> Capture:
    """Each GPU on its own root port (PHB/NODE/SYS pairs)."""
    for g in cap.gpus:
        g.path = [
            PcieHop(
                bus_id=f"0000:{0x40 + 0x20 * g.index:02x}:01.1",
                role="root_port",
                acs_capable=True,
                acs=AcsControl.from_raw(acs_raw),
            )
        ]
    return cap


def matrix(kind: str, p2p: str, values: list[list[float]], **kw: object) -> P2PMatrixMeasurement:
    n = len(values)
    return P2PMatrixMeasurement(
        kind=kind,  # type: ignore[arg-type]
        p2p=p2p,  # type: ignore[arg-type]
        unit="GB/s" if kind == "bandwidth" else "us",
        gpus=list(range(n)),
        values=values,
        **kw,  # type: ignore[arg-type]
    )


def pair_matrix(n: int, off: float, diag: float = 900.0) -> list[list[float]]:
    return [[diag if i == j else off for j in range(n)] for i in range(n)]


# ============================================================================ p2p.capability


def test_capability_skips_without_any_p2p_status() -> None:
    r = result(machine(2, link="PIX"), "p2p.capability")
    assert r.severity == "skip"
    assert r.needs is not None
    assert "topo -p2p" in r.needs


def test_capability_skips_single_gpu() -> None:
    assert result(machine(1), "p2p.capability").severity == "skip"


def test_capability_gns_pair_explained() -> None:
    # p2p-matrix/rtx5090x2-tr3975wx-gns-club3090-1140: PHB pair, topo -p2p rw all GNS.
    cap = codes(machine(2, link="PHB", gpu_fields={"name": "NVIDIA GeForce RTX 5090"}), "GNS")
    r = result(cap, "p2p.capability")
    assert r.severity == "info"  # the driver's policy on consumer GPUs: nothing to repair
    assert "GNS" in r.summary
    assert "staged through host memory" in r.summary
    assert r.subjects == ["GPU0-GPU1"]
    assert any("not a fault" in step for step in r.remediation)


def test_capability_refused_on_consumer_gpus_leads_with_what_to_do() -> None:
    # p2p-bandwidth/rtx4090x2-driver525-p2p-denied-puget-kinghorn: CANNOT Access Peer on two
    # GeForce cards. The first step (the one a short report shows) is what to plan for.
    cap = access(machine(2, link="PHB", gpu_fields=GEFORCE), False)
    r = result(cap, "p2p.capability")
    assert r.severity == "info"
    assert "consumer GPUs" in r.summary
    assert "not a fault" in r.remediation[0]
    assert "NVLink" in r.remediation[0]


def test_capability_ns_on_pix_pair_bounces_through_uplink() -> None:
    # p2p-matrix/rtx2080ti-x2-pix-ns-autodl: two 2080 Ti behind one switch, topo -p2p p = NS.
    cap = codes(
        machine(2, link="PIX", gpu_fields={"name": "NVIDIA GeForce RTX 2080 Ti"}), "NS", "pci"
    )
    r = result(cap, "p2p.capability")
    assert r.severity == "info"
    assert "even between PIX GPUs (up the switch uplink and back)" in r.summary


def test_capability_consumer_refusal_has_one_severity_whatever_the_path() -> None:
    # The rtx4090-8gpu-pcie demo (SYS pairs) said info, autodl-2080ti-2gpu (a PIX pair) warn
    # for the same root cause: the stock driver refuses P2P on consumer GPUs.
    severities = {
        link: result(access(machine(2, link=link, gpu_fields=GEFORCE), False), "p2p.capability")
        for link in ("PIX", "PXB", "PHB", "NODE", "SYS")
    }
    assert {r.severity for r in severities.values()} == {"info"}
    # GNS is that policy's own code: the same verdict when the import has no GPU names.
    assert result(codes(machine(2, link="PHB"), "GNS"), "p2p.capability").severity == "info"
    # Refused on datacenter GPUs behind one switch: a cause to fix (ACS, IOMMU, VM, registry).
    other = result(access(machine(2, link="PIX"), False), "p2p.capability")
    assert other.severity == "warn"
    assert all("CUDA: CUDA" not in e.text() for e in other.evidence)


def test_capability_cns_in_vm_points_at_gpudirect_clique() -> None:
    # p2p-matrix/l4x2-p2p-r-cns-ml-engineering: 2x L4, CNS.
    cap = codes(machine(2, link="PHB", hypervisor=True), "CNS")
    r = result(cap, "p2p.capability")
    assert r.severity == "warn"
    assert any("x-nv-gpudirect-clique" in step for step in r.remediation)


def test_capability_cns_on_bare_metal_does_not_talk_about_hypervisors() -> None:
    cap = codes(machine(2, link="PHB", hypervisor=False), "CNS")
    r = result(cap, "p2p.capability")
    assert r.severity == "warn"
    assert not any("clique" in step for step in r.remediation)
    assert any("allow-list" in step for step in r.remediation)


def test_capability_sys_pairs_without_p2p_are_info_not_fail() -> None:
    # p2p-bandwidth/rtx4890x8-sys-no-p2p-stock-driver-blog: all SYS, connectivity matrix all 0.
    cap = access(machine(8, link="SYS", numa_nodes=2, gpu_fields=GEFORCE), False)
    r = result(cap, "p2p.capability")
    assert r.severity == "info"
    assert "through the CPU interconnect (SYS)" in r.summary
    assert "shared memory" in r.summary


def test_capability_nvlink_pair_granted_in_a_row_without_refusals_is_seen() -> None:
    # GPU1's row holds only its NVLink pair, granted: the refused PCIe pairs are GPU0's.
    cap = machine(3, link="NODE", pairs={(1, 2): "NV4"})
    cap.p2p.matrices["read"] = [["X", "CNS", "CNS"], ["CNS", "X", "OK"], ["CNS", "OK", "X"]]
    r = result(cap, "p2p.capability")
    assert r.severity == "warn"
    assert "2 pairs: GPU0-GPU1 (NODE), GPU0-GPU2 (NODE)" in r.summary
    assert "NVLink pairs have P2P" in r.summary
    assert any(e.label == "pairs with P2P granted" and e.value == 1 for e in r.evidence)


def test_capability_refused_nvlink_pair_fails() -> None:
    cap = codes(machine(2, link="NV12"), "CNS")
    r = result(cap, "p2p.capability")
    assert r.severity == "fail"
    assert "NVLink" in r.summary


def test_capability_mixed_nvlink_ok_and_pcie_refused() -> None:
    # topo/3gpu-nv4-pair-plus-pcie-gpu: GPU0-GPU1 NV4, GPU2 PCIe-only (NODE).
    cap = machine(3, link="NODE", pairs={(0, 1): "NV4"})
    cap.p2p.matrices["read"] = [["X", "OK", "CNS"], ["OK", "X", "CNS"], ["CNS", "CNS", "X"]]
    r = result(cap, "p2p.capability")
    assert r.severity == "warn"
    assert "NVLink pairs have P2P" in r.summary
    assert set(r.subjects) >= {"GPU0-GPU2", "GPU1-GPU2"}
    assert "GPU0-GPU1" not in r.subjects


@pytest.mark.parametrize(("nvml", "cuda"), [("OK", False), ("CNS", True)])
def test_capability_cuda_and_nvml_contradiction(nvml: str, cuda: bool) -> None:
    cap = access(codes(machine(2, link="PIX"), nvml), cuda)
    r = result(cap, "p2p.capability")
    assert r.severity == "warn"
    assert any(e.label == "cudaDeviceCanAccessPeer" and e.value is cuda for e in r.evidence)
    assert any(e.label == "NVML P2P status" and e.value == nvml for e in r.evidence)


def test_capability_all_ok_without_measurement_is_a_grant_not_delivery() -> None:
    # p2p-matrix/h100x8-p2p-r-all-ok-ml-engineering.
    cap = codes(machine(8, link="NV18"), "OK")
    r = result(cap, "p2p.capability")
    assert r.severity == "pass"
    assert r.confidence == "medium"
    assert "grant, not delivery" in r.summary
    assert any("--probes quick" in step for step in r.remediation)


def test_capability_all_ok_with_measurement_is_confident() -> None:
    cap = codes(machine(2, link="NV12"), "OK")
    cap.measurements.p2p_verification = [P2PVerification(src=0, dst=1, ok=True)]
    r = result(cap, "p2p.capability")
    assert (r.severity, r.confidence) == ("pass", "high")


def test_capability_ok_on_geforce_asks_for_byte_verification() -> None:
    # p2p-matrix/rtx3090x2-patched-ok-club3090-922: patched driver, all OK.
    cap = codes(machine(2, link="PHB", gpu_fields={"name": "NVIDIA GeForce RTX 3090"}), "OK")
    r = result(cap, "p2p.capability")
    assert r.severity == "info"
    assert "byte-verify" in r.summary
    assert any("--disable-custom-all-reduce" in step for step in r.remediation)


def test_capability_disabled_by_regkey() -> None:
    cap = codes(machine(2, link="PXB"), "DR")
    r = result(cap, "p2p.capability")
    assert r.severity == "warn"
    assert any("NVreg_RegistryDwords" in step for step in r.remediation)


def test_capability_from_cuda_answer_only() -> None:
    # p2p-bandwidth/rtx4090x2-driver525-p2p-denied-puget-kinghorn: "CANNOT Access Peer", no
    # topology in that paste.
    cap = access(machine(2, gpu_fields=GEFORCE), False)
    cap.topology.links = [[None, None], [None, None]]
    r = result(cap, "p2p.capability")
    assert r.severity == "info"  # consumer GPUs: the driver's policy (one rule per cause)
    assert r.confidence == "medium"
    assert "path unknown" in r.summary


# ============================================================================= p2p.acs-iommu


def test_acs_redirect_on_switch_ports_fails_on_bare_metal() -> None:
    cap = switch_paths(machine(2, link="PIX"), 0x1D)  # SrcValid ReqRedir CmpltRedir UpstreamFwd
    r = result(cap, "p2p.acs-iommu")
    assert (r.severity, r.confidence) == ("fail", "high")
    assert "0000:80:00.0" in r.summary
    steps = " ".join(r.remediation)
    assert "sudo setpci -s 0000:80:00.0 ECAP_ACS+0x6.w=0000" in steps
    assert "pci=disable_acs_redir=0000:80:00.0;0000:81:00.0" in steps
    assert "NCCL_P2P_DISABLE=1" in steps


def test_acs_redirect_cites_the_measured_effect() -> None:
    # p2p-bandwidth/rtx4090x6-...-nccl-814: P2P 10.14 vs 22.2 GB/s staged.
    cap = switch_paths(machine(2, link="PIX"), 0x1D)
    cap.measurements.p2p = [
        matrix("bandwidth", "enabled", pair_matrix(2, 10.14)),
        matrix("bandwidth", "disabled", pair_matrix(2, 22.2)),
    ]
    r = result(cap, "p2p.acs-iommu")
    assert any(
        e.label == "measured P2P vs staged" and "10.1 vs 22.2" in str(e.value) for e in r.evidence
    )


def test_acs_in_a_vm_is_info_not_fail() -> None:
    cap = switch_paths(machine(2, link="PIX", hypervisor=True), 0x1D)
    for g in cap.gpus:
        g.iommu_group_type = "DMA"
    r = result(cap, "p2p.acs-iommu")
    assert r.severity == "info"
    assert any("ATS" in step for step in r.remediation)


def test_acs_source_validation_only_is_not_a_redirect() -> None:
    cap = switch_paths(machine(2, link="PIX"), 0x11)  # SrcValid+ UpstreamFwd+
    cap.host.iommu.enabled = False
    r = result(cap, "p2p.acs-iommu")
    assert r.severity in ("info", "pass")
    assert r.severity != "fail"
    assert "does not redirect" in r.summary


def test_acs_is_irrelevant_for_nvlink_pairs() -> None:
    cap = switch_paths(machine(4, link="NV12"), 0x1D)
    cap.host.iommu.enabled = False
    r = result(cap, "p2p.acs-iommu")
    assert r.severity == "pass"
    assert "NVLink" in r.summary


def test_acs_on_root_ports_of_intel_sys_pairs_is_not_a_failure() -> None:
    cap = root_port_paths(machine(2, link="SYS", numa_nodes=2), 0x1D)
    cap.host.iommu.enabled = False
    r = result(cap, "p2p.acs-iommu")
    assert r.severity not in ("fail", "warn")


def test_acs_on_amd_root_ports_with_two_gpus_fails() -> None:
    # topo/rtx5880ada-x2-node-deadlock-acs-nccl-2079: ACSCtl 0x001d on AMD GPP bridges, NODE.
    cap = root_port_paths(machine(2, link="NODE", cpu_vendor="amd"), 0x001D)
    cap.host.cpu_model = "AMD Ryzen Threadripper PRO 3975WX 32-Cores"
    r = result(cap, "p2p.acs-iommu")
    assert r.severity == "fail"
    assert "root ports" in r.summary
    assert "0000:40:01.1" in " ".join(r.remediation)


def test_acs_on_amd_root_ports_with_four_gpus_is_off_the_nccl_path() -> None:
    cap = root_port_paths(machine(4, link="NODE", cpu_vendor="amd"), 0x001D)
    cap.host.iommu.enabled = False
    r = result(cap, "p2p.acs-iommu")
    assert r.severity == "info"
    assert "shared memory" in r.summary


def test_acs_unreadable_without_root_never_passes() -> None:
    cap = switch_paths(machine(2, link="PIX"), None)
    for g in cap.gpus:
        g.path[0].acs_capable = None
        g.path[0].mark_unavailable("acs", "needs root (config space beyond 64 bytes)")
    cap.host.iommu.enabled = True
    r = result(cap, "p2p.acs-iommu")
    assert (r.severity, r.confidence) == ("warn", "low")
    assert r.needs is not None
    assert "sudo pcidoc check --only p2p.acs-iommu" in r.needs
    cap.host.iommu.enabled = False
    r = result(cap, "p2p.acs-iommu")
    assert r.severity == "info"
    assert r.needs is not None
    assert "sudo" in r.needs


def test_acs_topology_only_import_is_skipped_with_what_to_run() -> None:
    cap = machine(4, link="PIX", kind="import")
    r = result(cap, "p2p.acs-iommu")
    assert r.severity == "skip"
    assert r.needs is not None
    assert "sudo pcidoc check --only p2p.acs-iommu" in r.needs


def test_iommu_translating_on_bare_metal_switch_pair_warns() -> None:
    cap = switch_paths(machine(2, link="PIX"), 0x00)
    for g in cap.gpus:
        g.iommu_group_type = "DMA-FQ"
    cap.host.iommu.kernel_args = ["intel_iommu=on", "iommu=pt"]
    r = result(cap, "p2p.acs-iommu")
    assert r.severity == "warn"
    assert "IOMMU translates" in r.summary
    assert any("iommu_group/type" in step and "identity" in step for step in r.remediation)
    assert any(e.label == "note" and "running state wins" in str(e.value) for e in r.evidence)


def test_iommu_kernel_arguments_are_read_from_the_command_line() -> None:
    cap = switch_paths(machine(2, link="PIX"), 0x00)
    for g in cap.gpus:
        g.iommu_group_type = "DMA"
    cap.host.cmdline = (
        "BOOT_IMAGE=/vmlinuz root=/dev/sda1 amd_iommu=on pcie_acs_override=downstream"
    )
    r = result(cap, "p2p.acs-iommu")
    args = [e.value for e in r.evidence if e.label == "IOMMU/ACS kernel arguments"]
    assert args == ["amd_iommu=on pcie_acs_override=downstream"]


def test_iommu_identity_and_clear_acs_pass() -> None:
    cap = switch_paths(machine(2, link="PIX"), 0x00)
    for g in cap.gpus:
        g.iommu_group_type = "identity"
    cap.host.iommu.enabled = True
    r = result(cap, "p2p.acs-iommu")
    assert r.severity == "pass"


def test_acs_redirect_on_refused_pair_is_only_info() -> None:
    cap = codes(switch_paths(machine(2, link="PIX", gpu_fields=GEFORCE), 0x1D), "GNS")
    cap.host.iommu.enabled = False
    r = result(cap, "p2p.acs-iommu")
    assert r.severity == "info"
    assert "refuses P2P there anyway" in r.summary


def test_acs_redirect_with_unknown_virtualization_is_medium_confidence() -> None:
    cap = switch_paths(machine(2, link="PIX", hypervisor=None), 0x04)
    cap.host.iommu.enabled = False
    r = result(cap, "p2p.acs-iommu")
    assert (r.severity, r.confidence) == ("fail", "medium")


# ============================================================================== p2p.fallback


def fallback_machine(link: str = "PIX", n: int = 2, **kw: object) -> Capture:
    cap = machine(n, link=link, **kw)  # type: ignore[arg-type]
    return cap


def test_fallback_skips_without_measurement() -> None:
    r = result(machine(2, link="PIX"), "p2p.fallback")
    assert r.severity == "skip"
    assert r.needs is not None
    assert "--probes quick" in r.needs


def test_fallback_p2p_slower_than_staging_fails_with_cause() -> None:
    # p2p-bandwidth/rtx4090x6-sm-copy-p2p-enabled-10gbps-nccl-814 (GPU0 row): 10.14 vs 22.21.
    cap = codes(fallback_machine(gpu_fields=GEFORCE), "OK")
    cap.measurements.p2p = [
        matrix("bandwidth", "enabled", pair_matrix(2, 10.14), method="sm"),
        matrix("bandwidth", "disabled", pair_matrix(2, 22.21), method="sm"),
    ]
    switch_paths(cap, 0x1D)
    r = result(cap, "p2p.fallback")
    assert r.severity == "fail"
    assert "slower than staging" in r.summary
    assert "ACS redirect at 0000:8" in r.summary
    assert any("p2p.acs-iommu" in step for step in r.remediation)


@pytest.mark.parametrize(("speedup", "severity"), [(1.19, "warn"), (1.21, "pass")])
def test_fallback_min_speedup_edge(speedup: float, severity: str) -> None:
    cap = codes(fallback_machine(), "OK")
    cap.measurements.p2p = [
        matrix("bandwidth", "enabled", pair_matrix(2, 20.0 * speedup)),
        matrix("bandwidth", "disabled", pair_matrix(2, 20.0)),
    ]
    assert result(cap, "p2p.fallback").severity == severity


def test_fallback_small_speedup_through_the_cpu_is_info() -> None:
    cap = codes(fallback_machine(link="PHB"), "OK")
    cap.measurements.p2p = [
        matrix("bandwidth", "enabled", pair_matrix(2, 22.0)),
        matrix("bandwidth", "disabled", pair_matrix(2, 20.0)),
    ]
    assert result(cap, "p2p.fallback").severity == "info"


def test_fallback_cannot_access_peer_is_the_fallback_copy_not_a_broken_path() -> None:
    # p2p-bandwidth/rtx4090x2-driver525-p2p-denied-puget-kinghorn: CANNOT Access Peer,
    # enabled 22.18/22.45 == disabled 22.02/22.05.
    cap = access(fallback_machine(gpu_fields=GEFORCE), False)
    cap.measurements.p2p = [
        matrix("bandwidth", "enabled", [[912.68, 22.18], [22.45, 922.37]]),
        matrix("bandwidth", "disabled", [[913.74, 22.02], [22.05, 921.88]]),
    ]
    r = result(cap, "p2p.fallback")
    assert r.severity == "info"
    assert "P2P not available" in r.summary
    assert "staged through host memory" in r.summary
    assert "p2p.capability" in " ".join(r.remediation)


def test_fallback_equal_numbers_with_unknown_access_warns_medium() -> None:
    cap = fallback_machine()
    cap.measurements.p2p = [
        matrix("bandwidth", "enabled", pair_matrix(2, 22.18)),
        matrix("bandwidth", "disabled", pair_matrix(2, 22.02)),
    ]
    r = result(cap, "p2p.fallback")
    assert (r.severity, r.confidence) == ("warn", "medium")


def test_fallback_rebar_off_asymmetric_collapse() -> None:
    # p2p-bandwidth/rtx5090x2-p2p-enabled-2gbps-rebar-off-aikitoria-9.
    cap = access(fallback_machine(link="PHB", gpu_fields={"name": "NVIDIA GeForce RTX 5090"}), True)
    for g in cap.gpus:
        g.bar1_total_bytes = 256 * 1024**2
    cap.measurements.p2p = [
        matrix("bandwidth", "enabled", [[1519.99, 12.19], [2.01, 1547.03]]),
        matrix("bandwidth", "disabled", [[1528.91, 42.47], [42.54, 1553.23]]),
        matrix("latency", "enabled", [[2.07, 0.36], [0.37, 2.07]], latency_side="gpu"),
        matrix("latency", "disabled", [[2.07, 14.44], [14.37, 2.07]], latency_side="gpu"),
    ]
    r = result(cap, "p2p.fallback")
    assert r.severity == "fail"
    assert "GPU0→GPU1" in r.summary
    assert "GPU1→GPU0" in r.summary
    assert "small BAR1" in r.summary
    assert any("path is up" in str(e.value) for e in r.evidence)
    assert any("Resizable BAR" in step for step in r.remediation)


# p2p-bandwidth/a100-sxm4-80gb-x8-nvlink-270gbps-distserve-3 (rows 0 and 4, P2P writes; the
# disabled matrix has the odd ~10.7 GB/s pairs 4-5 and 6-7).
A100_ENABLED_ROW = [268.94, 269.36, 272.10, 275.19, 274.06, 274.26, 273.27]
A100_DISABLED = 10.65


def nvswitch_a100(version: str | None = "3.0", speed: float | None = 25.0) -> Capture:
    return machine(
        8,
        link="NV12",
        numa_nodes=2,
        gpu_fields={
            "nvlink_version": version,
            "nvlink_speed": speed,
            "name": "NVIDIA A100-SXM4-80GB",
        },
    )


def a100_matrices() -> list[P2PMatrixMeasurement]:
    n = 8
    enabled = [
        [1528.0 if i == j else A100_ENABLED_ROW[(j - i - 1) % 7] for j in range(n)]
        for i in range(n)
    ]
    disabled = [
        [
            1520.0 if i == j else (A100_DISABLED if {i, j} in ({4, 5}, {6, 7}) else 18.0)
            for j in range(n)
        ]
        for i in range(n)
    ]
    return [matrix("bandwidth", "enabled", enabled), matrix("bandwidth", "disabled", disabled)]


def test_fallback_healthy_nvswitch_a100_passes_despite_slow_disabled_pairs() -> None:
    cap = nvswitch_a100()
    cap.measurements.p2p = a100_matrices()
    r = result(cap, "p2p.fallback")
    assert (r.severity, r.confidence) == ("pass", "high")
    assert "NVLink pairs" in r.summary


def test_fallback_nvlink_rate_unknown_still_passes_with_lower_confidence() -> None:
    cap = nvswitch_a100(version=None, speed=None)
    for gpu in cap.gpus:
        gpu.name = "Some Future GPU"  # not in the link model: the per-link rate is unknown
    cap.measurements.p2p = a100_matrices()
    r = result(cap, "p2p.fallback")
    assert (r.severity, r.confidence) == ("pass", "medium")


def test_fallback_nvlink_rate_from_the_gpu_model_when_the_paste_has_no_nvlink_facts() -> None:
    # An A100 NV12 pair whose capture lacks NVLink version and speed: the link model knows an
    # A100 SXM4 runs NVLink 3 at 25 GB/s per link, so the pair is judged against 300 GB/s.
    cap = nvswitch_a100(version=None, speed=None)
    cap.measurements.p2p = a100_matrices()
    r = result(cap, "p2p.fallback")
    assert (r.severity, r.confidence) == ("pass", "high")
    assert "300 GB/s" in r.summary


@pytest.mark.parametrize(("version", "speed"), [(None, 26.562), ("4.0", 26.562), (None, 25.0)])
def test_fallback_bridged_h100_pcie_passes(version: str | None, speed: float) -> None:
    # p2p-bandwidth/h100-pcie-x2-nvlink-bridge-256gbps-koga: 256.62 / 256.99 GB/s over NV12.
    cap = machine(
        2,
        link="NV12",
        gpu_fields={"nvlink_version": version, "nvlink_speed": speed, "name": "NVIDIA H100 PCIe"},
    )
    cap.measurements.p2p = [
        matrix("bandwidth", "enabled", [[1634.15, 256.62], [256.99, 1660.74]]),
        matrix("bandwidth", "disabled", [[1622.17, 26.10], [25.00, 1634.15]]),
    ]
    assert result(cap, "p2p.fallback").severity == "pass"


def test_fallback_pairs_of_unknown_path_faster_than_any_pcie_link_are_called_nvlink() -> None:
    # p2p-bandwidth/a100-sxm4-80gb-x8-nvlink-270gbps-distserve-3 imported alone: ~270 GB/s
    # enabled vs ~18 GB/s staged and no topology; no PCIe x16 link carries 270 GB/s.
    cap = machine(8)
    cap.topology.labels, cap.topology.links = [], []
    cap.measurements.p2p = a100_matrices()
    r = result(cap, "p2p.fallback")
    assert (r.severity, r.confidence) == ("pass", "medium")
    assert "beyond any PCIe x16 link" in r.summary and "NVLink" in r.summary
    assert "PCIe pair" not in r.summary


def test_pairs_beyond_any_pcie_link_are_nvlink_even_without_a_staged_baseline() -> None:
    cap = machine(8)
    cap.topology.labels, cap.topology.links = [], []
    cap.measurements.p2p = [m for m in a100_matrices() if m.p2p == "enabled"]
    r = result(cap, "p2p.fallback")
    assert r.severity == "pass"
    assert "NVLink" in r.summary
    assert "not judged" not in r.summary


def _pcie_pair(link: str = "PIX") -> Capture:
    cap = machine(2, link=link, gpu_fields={"gen": 4, "width": 16})
    cap.p2p = P2PStatus(gpus=[0, 1], matrices={"read": [["X", "OK"], ["OK", "X"]]})
    # Unidirectional P2P only 1.1x the staged copy: weak evidence that P2P is not working.
    cap.measurements.p2p = [
        matrix("bandwidth", "enabled", [[700.0, 22.0], [22.0, 700.0]]),
        matrix("bandwidth", "disabled", [[700.0, 20.0], [20.0, 700.0]]),
    ]
    return cap


def test_weak_unidirectional_gain_alone_warns_on_a_switch_pair() -> None:
    assert result(_pcie_pair(), "p2p.fallback").severity == "warn"


def test_latency_overrules_a_weak_unidirectional_gain() -> None:
    # Latency drops from ~15 us staged to ~1.5 us with P2P: the peer path works.
    cap = _pcie_pair()
    cap.measurements.p2p += [
        matrix("latency", "enabled", [[0.0, 1.5], [1.5, 0.0]]),
        matrix("latency", "disabled", [[0.0, 15.0], [15.0, 0.0]]),
    ]
    r = result(cap, "p2p.fallback")
    assert r.severity == "pass", r.summary
    assert "stronger evidence" in r.summary
    assert any("latency 1.50 vs 15.00" in str(e.value) for e in r.evidence)


def test_bidirectional_doubling_overrules_a_weak_unidirectional_gain() -> None:
    cap = _pcie_pair()
    cap.measurements.p2p += [
        matrix("bandwidth", "enabled", [[700.0, 42.0], [42.0, 700.0]], bidirectional=True),
        matrix("bandwidth", "disabled", [[700.0, 20.0], [20.0, 700.0]], bidirectional=True),
    ]
    assert result(cap, "p2p.fallback").severity == "pass"


def test_staged_like_latency_confirms_the_weak_gain() -> None:
    cap = _pcie_pair()
    cap.measurements.p2p += [
        matrix("latency", "enabled", [[0.0, 14.0], [14.0, 0.0]]),
        matrix("latency", "disabled", [[0.0, 15.0], [15.0, 0.0]]),
    ]
    r = result(cap, "p2p.fallback")
    assert (r.severity, r.confidence) == ("warn", "high")


def test_fallback_pairs_of_unknown_path_at_pcie_rates_are_not_called_nvlink() -> None:
    cap = machine(2, gpu_fields={"name": "NVIDIA L40S"})
    cap.topology.labels, cap.topology.links = [], []
    cap.measurements.p2p = [
        matrix("bandwidth", "enabled", pair_matrix(2, 25.0)),
        matrix("bandwidth", "disabled", pair_matrix(2, 12.0)),
    ]
    r = result(cap, "p2p.fallback")
    assert r.severity == "pass"
    assert "every pair" in r.summary
    assert "NVLink" not in r.summary


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("NVIDIA A100-SXM4-80GB", True),  # HGX boards: NVSwitch or a full 4-GPU mesh
        ("NVIDIA H100 80GB HBM3", True),
        ("NVIDIA A100-PCIE-40GB", False),  # bridges are optional
        ("Tesla V100-SXM2-32GB", False),  # DGX-1's hybrid cube-mesh leaves pairs without NVLink
        ("NVIDIA L40S", False),
    ],
)
def test_sxm_pairs_at_pcie_rates_without_a_topology_warn_nvlink_unused(
    name: str, expected: bool
) -> None:
    cap = machine(2, gpu_fields={"name": name})
    cap.topology.labels, cap.topology.links = [], []
    cap.measurements.p2p = [matrix("bandwidth", "enabled", pair_matrix(2, 18.4, 1530.0))]
    r = result(cap, "p2p.fallback")
    found = [f for f in r.findings if "NVLink not used" in f.summary]
    if not expected:
        assert not found and "NVLink" not in r.summary
        return
    assert r.severity == "warn" and r.confidence == "medium"
    assert "GPU0→GPU1, GPU1→GPU0" in r.summary and name in r.summary
    assert "topology is not in the capture" in r.summary
    # At NVLink rates the same pair passes (NVLink inferred from the speed).
    cap.measurements.p2p = [matrix("bandwidth", "enabled", pair_matrix(2, 180.0, 1530.0))]
    assert result(cap, "p2p.fallback").severity == "pass"


def test_fallback_nvlink_at_pcie_rate_fails() -> None:
    cap = nvswitch_a100()
    n = 8
    cap.measurements.p2p = [matrix("bandwidth", "enabled", pair_matrix(n, 22.0, 1500.0))]
    r = result(cap, "p2p.fallback")
    assert r.severity == "fail"
    assert "NVLink not used" in r.summary


@pytest.mark.parametrize(("value", "severity"), [(239.0, "warn"), (241.0, "pass")])
def test_fallback_nvlink_warn_fraction_edge(value: float, severity: str) -> None:
    # 12 links x 25 GB/s = 300; warn below 0.8 x 300 = 240.
    cap = nvswitch_a100()
    cap.measurements.p2p = [matrix("bandwidth", "enabled", pair_matrix(8, value, 1500.0))]
    assert result(cap, "p2p.fallback").severity == severity


def test_fallback_names_the_outlier_gpu() -> None:
    cap = codes(machine(4, link="PIX"), "OK")
    cap.gpus[2].pcie.current_width = 4
    cap.gpus[2].pcie.max_width = 16
    values = pair_matrix(4, 25.0)
    for j in range(4):
        if j != 2:
            values[2][j] = values[j][2] = 8.0
    cap.measurements.p2p = [
        matrix("bandwidth", "enabled", values),
        matrix("bandwidth", "disabled", pair_matrix(4, 6.0)),
    ]
    r = result(cap, "p2p.fallback")
    assert r.severity == "warn"
    assert r.summary.startswith(f"GPU2 ({cap.gpus[2].bus_id}) is the P2P outlier")
    assert "Gen5 x4 of Gen5 x16" in r.summary


def test_integrity_byte_verification_failure_fails_with_the_iommu_cause() -> None:
    cap = codes(machine(2, link="PHB"), "OK")
    cap.host.iommu.enabled = True
    cap.host.iommu.default_domain_type = "DMA-FQ"
    cap.measurements.p2p_verification = [
        P2PVerification(src=0, dst=1, ok=False, detail="4096 of 67108864 bytes differ"),
        P2PVerification(src=1, dst=0, ok=True),
    ]
    r = result(cap, "p2p.integrity")
    assert r.severity == "fail"
    assert "data is wrong" in r.summary
    assert "GPU0→GPU1" in r.summary
    assert any(e.label == "IOMMU group type" and e.value == "DMA-FQ" for e in r.evidence)
    assert any("NCCL_P2P_DISABLE=1" in step for step in r.remediation)
    # One rule for one root cause: p2p.fallback does not repeat it.
    assert result(cap, "p2p.fallback").severity not in ("fail", "warn")


def test_integrity_verification_only_passes() -> None:
    cap = machine(2, link="PHB")
    cap.measurements.p2p_verification = [P2PVerification(src=0, dst=1, ok=True)]
    assert result(cap, "p2p.integrity").severity == "pass"


def test_fallback_sys_pair_slower_than_staging_is_a_warning() -> None:
    cap = access(machine(2, link="SYS", numa_nodes=2), True)
    cap.measurements.p2p = [
        matrix("bandwidth", "enabled", pair_matrix(2, 9.0)),
        matrix("bandwidth", "disabled", pair_matrix(2, 18.0)),
    ]
    r = result(cap, "p2p.fallback")
    assert r.severity == "warn"
    assert "SYS path" in r.summary


# ====================================================== robustness on sparse/odd captures

MY_CHECKS = (
    "p2p.capability",
    "p2p.acs-iommu",
    "p2p.fallback",
    "numa.cross-socket",
    "numa.process-affinity",
    "numa.nic-affinity",
    "transfer.pinned",
    "transfer.pageable",
    "transfer.remote-numa",
    "scaling.allreduce",
    "scaling.efficiency",
)


def _odd_captures() -> list[Capture]:
    from pcidoc.model import (
        CollectiveMeasurement,
        CollectiveRow,
        GpuProcess,
        Nic,
        ScalingMeasurement,
        ScalingPoint,
        TransferMeasurement,
    )

    empty = Capture.empty("import")
    single = machine(1)
    unknown = machine(3, link="PIX", nics=["NIC0"])
    unknown.topology.links = [[None] * 4 for _ in range(4)]
    weird = machine(2, link="PHB", numa_nodes=2)
    weird.gpus[0].numa_node = -1
    weird.gpus[0].cpu_affinity = "N/A"
    weird.gpus[1].cpu_affinity = "-31,64-95"  # clipped paste
    weird.host.processes = [
        GpuProcess(pid=1, gpus=[9], cpu_affinity="0-3"),
        GpuProcess(pid=2, gpus=[0], cpu_affinity=None),
    ]
    weird.nics = [Nic(label="NIC7")]  # not in the matrix
    weird.p2p.gpus = [0, 1, 2]
    weird.p2p.matrices = {"read": [["X", "OK"]]}  # ragged
    weird.p2p.can_access_peer = [[True]]
    weird.measurements.p2p = [
        matrix("bandwidth", "enabled", [[None, 3.0], [0.0, None]]),  # type: ignore[list-item]
        matrix("bandwidth", "disabled", [[None, 0.0]]),  # type: ignore[list-item]
        matrix("latency", "enabled", [[1.0]]),
    ]
    weird.measurements.transfers = [
        TransferMeasurement(gpu=5, direction="h2d", memory="pinned", bandwidth_gbps=0.0),
        TransferMeasurement(gpu=0, direction="d2d", memory="device", bandwidth_gbps=900.0),
        TransferMeasurement(
            gpu=1, direction="h2d", memory="pinned", bandwidth_gbps=1.0, placement="remote"
        ),
    ]
    weird.measurements.collectives = [
        CollectiveMeasurement(rows=[CollectiveRow(size_bytes=8)]),
        CollectiveMeasurement(rows=[CollectiveRow(size_bytes=2**30, busbw_gbps=0.0)], gpus=[0, 7]),
    ]
    weird.measurements.scaling = [
        ScalingMeasurement(
            points=[
                ScalingPoint(ranks=1, throughput_samples_per_s=0.0),
                ScalingPoint(ranks=2, throughput_samples_per_s=1.0),
            ],
            allreduce_busbw_gbps=5.0,
            gradient_bytes=10**6,
        ),
    ]
    return [empty, single, unknown, weird]


@pytest.mark.parametrize("cap", _odd_captures(), ids=["empty", "single", "unknown", "weird"])
def test_checks_survive_sparse_and_odd_captures(cap: Capture) -> None:
    for check_id in MY_CHECKS:
        r = result(cap, check_id)
        assert r.severity != "error", (check_id, r.summary)
        assert r.summary


@pytest.mark.parametrize(("vendor", "uses"), [("amd", True), ("intel", False)])
def test_nccl_uses_p2p_across_sys_only_on_small_amd_hosts(vendor: str, uses: bool) -> None:
    # NCCL paths.cc: P2P up to PXB by default, up to SYS on AMD CPUs with <= 2 GPUs.
    from pcidoc.doctor.checks.p2p._shared import pair_path

    cap = machine(2, link="SYS", numa_nodes=2, cpu_vendor=vendor)
    if vendor == "amd":
        cap.host.cpu_model = "AMD EPYC 7542 32-Core Processor"
    path = pair_path(Context(cap), 0, 1)
    assert (path.kind, path.uses_pcie_p2p) == ("sys", uses)

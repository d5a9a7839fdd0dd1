"""Tests of the NVLink checks: nvlink.state, nvlink.errors, nvlink.fabric."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcidoc.doctor import run
from pcidoc.doctor.checks.nvlink.fabric import nvlink_fabric
from pcidoc.doctor.checks.nvlink.state import nvlink_state
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import load_checks
from pcidoc.doctor.runner import run_check
from pcidoc.model import Capture, NvLink, ReportSource
from pcidoc.model.report import CheckResult
from tests.builders import machine, topology

STAMP = "2026-01-01T00:00:00Z"

# ----------------------------------------------------------------------------- helpers


def result(cap: Capture, check_id: str) -> CheckResult:
    """The merged result of one check, as the engine builds it."""
    return run_check(load_checks()[check_id], Context(cap))


def links(
    up: int,
    down: int = 0,
    remote: str = "switch",
    total: int | None = None,
    inactive: tuple[int, ...] = (),
    errors: dict[str, int] | None = None,
) -> list[NvLink]:
    """``up`` active links (to ``remote``) and ``down`` inactive ones; ``inactive`` picks ids."""
    count = total if total is not None else up + down
    down_ids = set(inactive) if inactive else set(range(up, count))
    return [
        NvLink(
            link=i,
            state="down" if i in down_ids else "up",
            version="4.0",
            speed_gbps=None if i in down_ids else 26.562,
            remote_type=None if i in down_ids else remote,  # type: ignore[arg-type]
            errors=dict(errors or {}),
        )
        for i in range(count)
    ]


def hgx(n: int = 8, nv: str = "NV18", **kw: object) -> Capture:
    """An HGX-style box: every GPU NV18 to an NVSwitch, 18 links up each."""
    return machine(n, link=nv, **kw)  # type: ignore[arg-type]


# DGX-1V hybrid cube mesh (each GPU: 6 links to 4 peers, SYS to the other 3).
_DGX1 = [
    "X NV1 NV1 NV2 NV2 SYS SYS SYS",
    "NV1 X NV2 NV1 SYS NV2 SYS SYS",
    "NV1 NV2 X NV2 SYS SYS NV1 SYS",
    "NV2 NV1 NV2 X SYS SYS SYS NV1",
    "NV2 SYS SYS SYS X NV1 NV1 NV2",
    "SYS NV2 SYS SYS NV1 X NV2 NV1",
    "SYS SYS NV1 SYS NV1 NV2 X NV2",
    "SYS SYS SYS NV1 NV2 NV1 NV2 X",
]


def dgx1() -> Capture:
    cap = machine(8, link="SYS", gpu_fields={"name": "Tesla V100-SXM2-16GB"})
    rows = [row.split() for row in _DGX1]
    pairs = {(a, b): rows[a][b] for a in range(8) for b in range(8) if a != b}
    cap.topology = topology(8, "SYS", pairs)
    for g in cap.gpus:
        g.nvlinks = links(6, remote="gpu")
    return cap


# ========================================================================= nvlink.state


def test_healthy_nvswitch_box_passes():
    res = result(hgx(), "nvlink.state")
    assert res.severity == "pass"
    assert "18 NVLinks up" in res.summary


def test_gpu_with_fewer_up_links_than_identical_peers_fails():
    cap = hgx()
    cap.gpus[3].nvlinks = links(16, 2)
    res = result(cap, "nvlink.state")
    assert res.severity == "fail"
    bus = cap.gpus[3].bus_id
    assert res.summary.startswith(
        f"GPU3 ({bus}) has 16 NVLinks up while its 7 identical peers have 18"
    )
    assert res.subjects == ["GPU3"]
    assert res.confidence == "high"


def test_gpu_without_nvlink_peers_in_the_matrix_fails():
    # vllm#16336: one B200 showing NODE/SYS to everyone while the others are NV18.
    cap = hgx(kind="import")
    for b in range(8):
        if b != 2:
            cap.topology.links[2][b] = cap.topology.links[b][2] = "SYS"
    for g in cap.gpus:
        g.nvlinks = []
    res = result(cap, "nvlink.state")
    assert res.severity == "fail"
    assert "GPU2 has no NVLink peers while its peers have NV18" in res.summary
    assert res.subjects == ["GPU2"]


def test_degraded_gpu_in_the_matrix_fails_only_that_gpu():
    cap = hgx(kind="import")
    for g in cap.gpus:
        g.nvlinks = []
    for b in range(8):
        if b != 5:
            cap.topology.links[5][b] = cap.topology.links[b][5] = "NV16"
    findings = nvlink_state(Context(cap))
    failed = [f for f in findings if f.severity == "fail"]
    assert [f.subjects for f in failed] == [["GPU5"]]


def test_unnamed_gpus_are_compared_with_medium_confidence():
    cap = hgx(kind="import")
    for g in cap.gpus:
        g.name = None
    cap.gpus[1].nvlinks = links(12, 6)
    res = result(cap, "nvlink.state")
    assert (res.severity, res.confidence) == ("fail", "medium")


def test_mig_links_down_are_not_a_failure():
    cap = hgx()
    cap.gpus[0].mig.enabled = True
    cap.gpus[0].nvlinks = links(0, 18)
    cap.gpus[1].nvlinks = links(17, 1)  # a link towards the MIG GPU reads down as well
    res = result(cap, "nvlink.state")
    assert res.severity == "info"
    assert "MIG" in res.summary
    findings = nvlink_state(Context(cap))
    assert all(f.severity not in ("warn", "fail") for f in findings)


def test_h100_pcie_bridge_12_of_18_links_is_a_design_not_a_fault():
    # nvlink/h100-pcie-x2-bridge-12of18-active-6-inactive: links 4,5,10,11,16,17 inactive.
    cap = machine(2, link="NV12", gpu_fields={"name": "NVIDIA H100 PCIe"})
    for g in cap.gpus:
        g.nvlinks = links(12, total=18, remote="gpu", inactive=(4, 5, 10, 11, 16, 17))
    res = result(cap, "nvlink.state")
    assert res.severity == "info"
    assert "not wired" in res.summary
    assert res.confidence == "high"


def test_same_inactive_links_everywhere_without_a_matrix_is_still_not_a_fault():
    cap = machine(2, link="NV12", gpu_fields={"name": "NVIDIA H100 PCIe"}, kind="import")
    cap.topology.labels, cap.topology.links = [], []
    for g in cap.gpus:
        g.nvlinks = links(12, total=18, remote="gpu", inactive=(4, 5, 10, 11, 16, 17))
    res = result(cap, "nvlink.state")
    assert (res.severity, res.confidence) == ("info", "medium")


def test_links_down_on_every_gpu_of_an_nvswitch_board_warn_without_confirmation():
    cap = hgx()
    cap.topology.labels, cap.topology.links = [], []
    for g in cap.gpus:
        g.nvlinks = links(16, 2)
    res = result(cap, "nvlink.state")
    assert (res.severity, res.confidence) == ("warn", "low")
    assert "NVSwitch" in res.summary


def test_hybrid_cube_mesh_is_not_a_fault():
    res = result(dgx1(), "nvlink.state")
    assert res.severity == "pass", res.summary


def test_hybrid_cube_mesh_with_a_missing_link_fails():
    cap = dgx1()
    cap.gpus[4].nvlinks = links(5, 1, remote="gpu")
    res = result(cap, "nvlink.state")
    assert res.severity == "fail"
    assert res.subjects == ["GPU4"]


def test_bridged_pairs_are_not_a_fault():
    cap = machine(4, link="SYS", pairs={(0, 1): "NV4", (2, 3): "NV4"}, kind="import")
    for g in cap.gpus:
        g.nvlinks = []
    assert result(cap, "nvlink.state").severity == "pass"


def test_odd_gpu_without_a_bridge_partner_is_info():
    # topo/3gpu-nv4-pair-plus-pcie-gpu: GPU0-GPU1 NV4, GPU2 PCIe only.
    cap = machine(3, link="PHB", pairs={(0, 1): "NV4"}, kind="import")
    for g in cap.gpus:
        g.nvlinks = []
    res = result(cap, "nvlink.state")
    assert res.severity == "info"
    assert "GPU2 has no NVLink bridge partner" in res.summary


def test_a_pair_with_fewer_bridge_links_warns():
    cap = machine(4, link="SYS", pairs={(0, 1): "NV4", (2, 3): "NV2"}, kind="import")
    for g in cap.gpus:
        g.nvlinks = []
    res = result(cap, "nvlink.state")
    # with 2 pairs the mode is a tie; the larger (healthier) value is the reference
    assert res.severity == "warn"
    assert set(res.subjects) == {"GPU2", "GPU3"}


def test_pcie_only_gpus_are_info_not_failure():
    cap = machine(2, link="PHB", gpu_fields={"name": "NVIDIA L40S"})
    for g in cap.gpus:
        g.mark_unavailable("nvlinks", "NVML reports 0 NVLinks on this GPU")
    res = result(cap, "nvlink.state")
    assert res.severity == "info"
    assert "no NVLink" in res.summary
    assert result(cap, "nvlink.errors").severity == "skip"
    assert result(cap, "nvlink.fabric").severity == "skip"


@pytest.mark.parametrize(
    ("name", "severity"),
    [
        ("NVIDIA H100 80GB HBM3", "warn"),
        ("NVIDIA A100-SXM4-80GB", "warn"),
        ("Tesla V100-SXM2-32GB", "info"),  # DGX-1's cube-mesh: not every pair is linked
        ("NVIDIA A100-PCIE-40GB", "info"),
    ],
)
def test_gpus_of_an_nvlink_board_model_without_any_nvlink_warn(name: str, severity: str):
    for facts in (True, False):
        cap = machine(2, link="PHB", gpu_fields={"name": name})
        if facts:
            for g in cap.gpus:
                g.mark_unavailable("nvlinks", "NVML reports 0 NVLinks on this GPU")
        res = result(cap, "nvlink.state")
        assert res.severity == severity, (name, facts, res.summary)
        assert "no NVLink" in res.summary
        if severity == "warn":
            assert name in res.summary and res.subjects == ["GPU0", "GPU1"]
            assert res.confidence == "medium"
    one = machine(1, gpu_fields={"name": "NVIDIA H100 80GB HBM3"})
    assert result(one, "nvlink.state").severity not in ("warn", "fail")


def test_no_nvlink_facts_is_a_skip():
    cap = machine(2, kind="import")
    cap.topology.labels, cap.topology.links = [], []
    res = result(cap, "nvlink.state")
    assert res.severity == "skip"
    assert "nvidia-smi nvlink -s" in (res.needs or "")


def test_partial_facts_say_what_was_not_judged():
    cap = hgx(3, kind="import")
    cap.topology.labels, cap.topology.links = [], []
    cap.gpus[2].nvlinks = []
    res = result(cap, "nvlink.state")
    assert res.severity == "info"
    assert "GPU2" in res.summary


# ======================================================================== nvlink.errors


def with_errors(errors: dict[str, int], uptime_s: float | None = None) -> Capture:
    cap = hgx(2)
    for g in cap.gpus:
        g.nvlinks = links(18, errors={"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0})
    cap.gpus[1].nvlinks[3].errors.update(errors)
    cap.host.uptime_s = uptime_s
    return cap


def test_zero_errors_pass():
    res = result(with_errors({}), "nvlink.errors")
    assert res.severity == "pass"
    assert "cumulative" in res.summary


@pytest.mark.parametrize(
    ("errors", "uptime", "severity", "needle"),
    [
        ({"replay": 5}, None, "warn", "cumulative, no time window"),
        ({"recovery": 2}, 86400.0, "warn", "/min since boot"),  # 2 per day: below 1/min
        ({"replay": 120}, 60.0, "fail", "/min since boot"),  # >= 1/min on average
        ({"crc_flit": 10}, None, "warn", "CRC"),
        ({"crc_flit": 99 * 60}, 60.0, "warn", "CRC"),  # 99/s: below the 100/s limit
        ({"crc_data": 100 * 60}, 60.0, "fail", "CRC"),  # exactly 100/s fails
        ({"ecc_data": 3}, None, "info", "other NVLink error"),
        # Blackwell (NVML 219): errors FEC could not fix are judged, not "other" events.
        ({"effective_errors": 4}, None, "warn", "uncorrected by FEC"),
        ({"recovery_events": 120}, 60.0, "fail", "/min since boot"),  # NVML 215: recoveries
    ],
)
def test_nvlink_error_table(errors, uptime, severity, needle):
    res = result(with_errors(errors, uptime), "nvlink.errors")
    assert res.severity == severity, res.summary
    assert needle in res.summary
    assert res.subjects == ["GPU1"]


def test_error_remediation_gets_a_rate_by_resetting_counters():
    res = result(with_errors({"replay": 5}), "nvlink.errors")
    assert any("nvidia-smi nvlink -re" in step for step in res.remediation)


def test_counters_not_read_is_a_skip():
    res = result(hgx(2), "nvlink.errors")  # links without error counters
    assert res.severity == "skip"
    assert "nvidia-smi nvlink -e" in (res.needs or "")


def test_no_nvlink_facts_errors_skip():
    cap = machine(2, kind="import")
    cap.topology.labels, cap.topology.links = [], []
    assert result(cap, "nvlink.errors").severity == "skip"


# ======================================================================== nvlink.fabric


def fabric_box(
    state: str | None = "completed",
    status: str | None = "success",
    fm_active: bool | None = True,
    n: int = 8,
) -> Capture:
    cap = hgx(n)
    cap.driver.fabric_manager.active = fm_active
    for g in cap.gpus:
        g.fabric.state = state
        g.fabric.status = status
        g.fabric.clique_id = 0
        g.fabric.cluster_uuid = "00000000-0000-0000-0000-000000000000"
    return cap


def test_healthy_hgx_fabric_passes_with_clique_zero():
    # Single-node HGX H100: Completed/Success with clique 0 and a zero UUID is normal.
    res = result(fabric_box(), "nvlink.fabric")
    assert res.severity == "pass"
    assert "completed on 8 GPUs" in res.summary


def test_fabric_manager_down_on_an_nvswitch_box_fails():
    res = result(fabric_box(fm_active=False), "nvlink.fabric")
    assert res.severity == "fail"
    assert any("systemctl enable --now nvidia-fabricmanager" in s for s in res.remediation)


def test_fabric_manager_version_mismatch_fails():
    cap = fabric_box()
    cap.driver.fabric_manager.version = "535.104.05"
    cap.driver.driver_version = "535.129.03"
    res = result(cap, "nvlink.fabric")
    assert res.severity == "fail"
    assert "535.104.05" in res.summary


@pytest.mark.parametrize(
    ("state", "status", "severity"),
    [
        ("in_progress", None, "warn"),
        ("not_started", None, "fail"),
        ("completed", "Insufficient Resources", "fail"),
        ("completed", "N/A", "pass"),
    ],
)
def test_fabric_state_table(state, status, severity):
    res = result(fabric_box(state, status), "nvlink.fabric")
    assert res.severity == severity, res.summary


def test_fabric_findings_are_grouped_not_repeated_per_gpu():
    findings = nvlink_fabric(Context(fabric_box("not_started", None)))
    failed = [f for f in findings if f.severity == "fail"]
    assert len(failed) == 1
    assert len(failed[0].subjects) == 8


def test_fabric_health_bits_fail():
    cap = fabric_box()
    cap.gpus[4].fabric.health = ["degraded_bandwidth"]
    res = result(cap, "nvlink.fabric")
    assert res.severity == "fail"
    assert res.subjects == ["GPU4"]


def grace_tray(status: str = "success", clique: int = 0, cluster: str | None = None) -> Capture:
    cap = hgx(4, cpu_vendor="arm")
    cap.host.cpu_model = "Neoverse-V2 (NVIDIA Grace)"
    cap.driver.fabric_manager.active = False  # compute trays run IMEX, not the fabric manager
    for g in cap.gpus:
        g.nvlinks = links(18)
        g.fabric.state, g.fabric.status = "completed", status
        g.fabric.clique_id = clique
        g.fabric.cluster_uuid = cluster or "00000000-0000-0000-0000-000000000000"
    return cap


def test_gb200_insufficient_resources_fails():
    # pcie-query/gb200-fabric-insufficient-resources: Completed + Insufficient Resources.
    res = result(grace_tray("Insufficient Resources"), "nvlink.fabric")
    assert res.severity == "fail"
    assert "Insufficient Resources" in res.summary
    assert not any("enable --now nvidia-fabricmanager" in s for s in res.remediation)


def test_mnnvl_without_clique_fails_even_with_success():
    res = result(grace_tray("success", clique=0), "nvlink.fabric")
    assert res.severity == "fail"
    assert "clique" in res.summary


def test_mnnvl_with_clique_and_cluster_passes():
    res = result(
        grace_tray("success", 32766, "6f1c2b44-0000-4000-8000-00000000abcd"), "nvlink.fabric"
    )
    assert res.severity == "pass"


def test_a100_fabric_not_supported_uses_the_service_state():
    cap = fabric_box(state="not_supported", status=None, fm_active=True)
    assert result(cap, "nvlink.fabric").severity == "pass"
    cap.driver.fabric_manager.active = False
    assert result(cap, "nvlink.fabric").severity == "fail"
    cap.driver.fabric_manager.active = None
    res = result(cap, "nvlink.fabric")
    assert res.severity == "skip"
    assert "systemctl is-active nvidia-fabricmanager" in (res.needs or "")


def test_gpu_to_gpu_nvlink_is_not_an_nvswitch_system():
    cap = machine(2, link="NV12")
    for g in cap.gpus:
        g.nvlinks = links(12, remote="gpu")
    res = result(cap, "nvlink.fabric")
    assert res.severity == "skip"
    assert "not applicable" in res.summary


def test_matrix_only_full_nvlink_mesh_is_low_confidence_info():
    # topo/h100-4gpu-nv6-4nic-nccl-1617: 4 GPUs NV6 to each other = 18 links each, which a
    # direct mesh (HGX 4-GPU boards) can wire: NVSwitch or not is unknown.
    cap = hgx(4, nv="NV6", kind="import")
    for g in cap.gpus:
        g.nvlinks = []
    res = result(cap, "nvlink.fabric")
    assert (res.severity, res.confidence) == ("info", "low")
    assert res.needs


def test_matrix_only_mesh_beyond_a_gpus_links_is_called_an_nvswitch_system():
    # topo/a100x8-nv12-compacted-columns-ml-engineering: 8 GPUs NV12 to each other would need
    # 7 x 12 = 84 NVLinks per GPU as a direct mesh; no GPU has more than 18.
    cap = hgx(8, nv="NV12", kind="import")
    for g in cap.gpus:
        g.nvlinks = []
    res = result(cap, "nvlink.fabric")
    assert (res.severity, res.confidence) == ("info", "medium")
    assert "only NVSwitches can wire" in res.summary
    assert "84 NVLinks" in res.summary
    assert res.needs


# ========================================================================== robustness


def test_hostile_inputs_do_not_crash_the_checks():
    cap = hgx(3)
    cap.topology.links = [["X", "NV18"], ["NV18"]]  # ragged
    cap.gpus[0].nvlinks = [NvLink(link=0)]  # state unknown
    cap.gpus[1].nvlinks[0].errors = {"weird counter": 7}
    cap.gpus[2].fabric.state = "something_new"
    cap.gpus[2].fabric.cluster_uuid = "not-a-uuid"
    cap.host.uptime_s = 0.0
    report = run(cap, ReportSource(kind="synthetic"), only=["nvlink"], generated_at=STAMP)
    assert [c.id for c in report.checks] == ["nvlink.state", "nvlink.errors", "nvlink.fabric"]
    assert all(c.severity != "error" for c in report.checks), [
        (c.id, c.summary) for c in report.checks
    ]


def test_elided_link_list_is_partial_not_a_failure():
    # nvlink/a100-*-228: the paste stops after GPU2's first link ('......').
    cap = hgx(3, kind="import")
    cap.topology.labels, cap.topology.links = [], []
    cap.gpus[2].nvlinks = links(1)
    cap.gpus[2].mark_unavailable("nvlinks", "only 1 of its links were in the paste (elided)")
    res = result(cap, "nvlink.state")
    assert res.severity == "info"
    assert "GPU2" in res.summary


def test_links_with_unknown_far_ends_do_not_rule_out_nvswitch():
    # nvlink/h800-8links: `nvlink -s` shows rates only, not whether links reach a switch.
    cap = hgx(8, kind="import", nv="NV8")
    cap.topology.labels, cap.topology.links = [], []
    for g in cap.gpus:
        g.nvlinks = links(8, remote=None)  # type: ignore[arg-type]
    res = result(cap, "nvlink.fabric")
    assert (res.severity, res.confidence) == ("info", "low")
    assert "far ends" in res.summary


def test_partial_nvlink_mesh_is_not_an_nvswitch_fabric():
    cap = machine(4, link="SYS", pairs={(0, 1): "NV4", (2, 3): "NV4"}, kind="import")
    for g in cap.gpus:
        g.nvlinks = []
    res = result(cap, "nvlink.fabric")
    assert res.severity == "skip"
    assert "direct NVLink design" in res.summary


def test_links_that_all_reach_one_device_are_a_bridge_not_a_switch():
    # nvlink/h100-pcie-x2-bridge (`nvlink -R`): GPU0's 12 links all reach 0000:d5:00.0.
    cap = machine(2, link="NV12", gpu_fields={"name": "NVIDIA H100 PCIe"}, kind="import")
    for g, far in zip(cap.gpus, ("0000:d5:00.0", "0000:c2:00.0"), strict=True):
        g.nvlinks = links(12, total=18, remote=None, inactive=(4, 5, 10, 11, 16, 17))  # type: ignore[arg-type]
        for link in g.nvlinks:
            if link.state == "up":
                link.remote_bus_id = far
    res = result(cap, "nvlink.fabric")
    assert (res.severity, res.confidence) == ("skip", "medium")
    cap.gpus[0].nvlinks[1].remote_bus_id = "0000:e1:00.0"  # a second switch: no longer a bridge
    assert result(cap, "nvlink.fabric").severity == "info"


def test_unknown_matrix_cells_are_not_judged_as_missing_links():
    # topo/b200-8gpu-4numa: the cells between GPU5, GPU6 and GPU7 did not survive the paste.
    cap = hgx(8, kind="import")
    for g in cap.gpus:
        g.nvlinks = []
    for a in (5, 6, 7):
        for b in (5, 6, 7):
            if a != b:
                cap.topology.links[a][b] = None
    res = result(cap, "nvlink.state")
    assert res.severity == "info"
    assert "GPU5, GPU6, GPU7" in res.summary


_state = st.sampled_from(["up", "down", None])
_remote = st.sampled_from(["gpu", "switch", "ibmnpu", "unknown", None])
_cell = st.sampled_from(["NV18", "NV4", "NV1", "PIX", "SYS", "NODE", None])


@settings(max_examples=40, deadline=None)
@given(
    per_gpu=st.lists(
        st.lists(st.tuples(_state, _remote, st.integers(0, 10**6)), max_size=6),
        min_size=1,
        max_size=4,
    ),
    cells=st.lists(_cell, min_size=16, max_size=16),
    mig=st.booleans(),
    fabric=st.sampled_from(["completed", "in_progress", "not_started", "not_supported", None]),
    status=st.sampled_from(["success", "Insufficient Resources", "N/A", None]),
    fm=st.one_of(st.none(), st.booleans()),
)
def test_random_nvlink_facts_never_crash(per_gpu, cells, mig, fabric, status, fm):
    n = len(per_gpu)
    cap = hgx(n)
    cap.driver.fabric_manager.active = fm
    for a in range(n):
        for b in range(n):
            if a != b:
                cap.topology.links[a][b] = cells[a * 4 + b]
    for g, spec in zip(cap.gpus, per_gpu, strict=True):
        g.nvlinks = [
            NvLink(link=i, state=s, remote_type=r, errors={"replay": e})  # type: ignore[arg-type]
            for i, (s, r, e) in enumerate(spec)
        ]
        g.fabric.state, g.fabric.status = fabric, status
    cap.gpus[0].mig.enabled = mig
    report = run(cap, ReportSource(kind="synthetic"), only=["nvlink"], generated_at=STAMP)
    assert all(c.severity != "error" for c in report.checks), [
        (c.id, c.summary) for c in report.checks
    ]


def _bridged(name: str, link: str) -> Capture:
    cap = machine(2, link=link, gpu_fields={"name": name})
    for g in cap.gpus:
        g.nvlinks = []  # a paste with the topology only
    return cap


@pytest.mark.parametrize(
    ("name", "link", "partial"),
    [
        ("NVIDIA A100 80GB PCIe", "NV4", True),  # one of three bridges
        ("NVIDIA A100 80GB PCIe", "NV12", False),
        ("NVIDIA H100 PCIe", "NV12", False),
        ("NVIDIA H100 PCIe", "NV8", True),
        ("NVIDIA RTX A6000", "NV4", False),  # GA102 bridge: 4 links
        ("NVIDIA RTX A6000", "NV2", True),
        ("NVIDIA A100-SXM4-80GB", "NV4", False),  # SXM: a slice of a mesh is not judged
    ],
)
def test_a_bridge_with_fewer_links_than_its_model_carries_is_partial(
    name: str, link: str, partial: bool
) -> None:
    res = result(_bridged(name, link), "nvlink.state")
    assert (res.severity == "warn" and "partial NVLink" in res.summary) == partial, res.summary
    if partial:
        assert "0000:" in res.summary  # named by bus id

"""scaling.allreduce and scaling.efficiency.

All-reduce rows are taken from the real-output corpus (../shared/realdata/nccl-tests/...) and
the research notes, each labelled with its source. Machines are synthetic (tests/builders.py).
"""

from __future__ import annotations

import pytest

from pcidoc.doctor import run
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import load_checks
from pcidoc.doctor.runner import run_check
from pcidoc.model import (
    Capture,
    CheckResult,
    CollectiveMeasurement,
    CollectiveRow,
    ReportSource,
    ScalingMeasurement,
    ScalingPoint,
    TransferMeasurement,
    WorkloadEvidence,
)
from tests.builders import machine

MIB = 1024**2
GIB = 1024**3


def result(cap: Capture, check_id: str) -> CheckResult:
    return run_check(load_checks()[check_id], Context(cap))


def allreduce(rows: list[tuple[int, float]], **kw: object) -> CollectiveMeasurement:
    return CollectiveMeasurement(
        op="all_reduce",
        backend="nccl",
        tool="nccl-tests",
        rows=[CollectiveRow(size_bytes=s, busbw_gbps=b, wrong=0) for s, b in rows],
        **kw,  # type: ignore[arg-type]
    )


# ========================================================================= scaling.allreduce


def test_allreduce_skips_without_measurement() -> None:
    r = result(machine(2), "scaling.allreduce")
    assert r.severity == "skip"
    assert r.needs is not None
    assert "--probes quick" in r.needs


def test_wrong_results_fail() -> None:
    cap = machine(2, link="NV12")
    m = allreduce([(GIB, 230.0)], gpus=[0, 1], ranks=2)
    m.rows[0].wrong = 3
    cap.measurements.collectives = [m]
    r = result(cap, "scaling.allreduce")
    assert r.severity == "fail"
    assert "wrong results" in r.summary


# nccl-tests/h100-2node-allreduce-cliff-at-64mb-tagged-output-nccl-1453 (out-of-place busbw).
CLIFF_1453 = [
    (1 * MIB, 1.24),
    (2 * MIB, 1.73),
    (4 * MIB, 12.91),
    (8 * MIB, 16.20),
    (16 * MIB, 24.09),
    (32 * MIB, 29.50),
    (64 * MIB, 5.27),
    (128 * MIB, 5.22),
    (256 * MIB, 4.09),
    (512 * MIB, 5.31),
]


def test_busbw_cliff_is_a_large_message_path_problem() -> None:
    cap = machine(8, link="NV18", numa_nodes=2)
    cap.measurements.collectives = [allreduce(CLIFF_1453, ranks=16, nodes=2)]
    r = result(cap, "scaling.allreduce")
    assert r.severity == "fail"
    assert "collapses from 29.5 to 5.3 GB/s at 64.0 MiB and stays there" in r.summary
    assert "large-message path problem" in r.summary
    assert any("NCCL_PROTO=Simple" in step for step in r.remediation)


def test_busbw_dip_that_recovers_is_a_warning() -> None:
    cap = machine(2, link="NV12")
    rows = [(16 * MIB, 100.0), (32 * MIB, 40.0), (64 * MIB, 200.0), (GIB, 235.0)]
    cap.measurements.collectives = [allreduce(rows, gpus=[0, 1], ranks=2)]
    r = result(cap, "scaling.allreduce")
    assert r.severity == "warn"
    assert "collapses" in r.summary
    assert "stays there" not in r.summary


# nccl-tests/h100-a3mega-2node-16gpu-allreduce-338gbps-ztan (largest sizes, out-of-place).
ZTAN_338 = [(GIB, 297.86), (2 * GIB, 318.40), (4 * GIB, 330.58), (8 * GIB, 338.82)]


def test_healthy_two_node_run_is_network_bound_info() -> None:
    cap = machine(8, link="NV18", numa_nodes=2)
    cap.measurements.collectives = [allreduce(ZTAN_338, ranks=16, nodes=2, avg_busbw_gbps=70.742)]
    r = result(cap, "scaling.allreduce")
    assert r.severity == "info"
    assert "over 2 nodes" in r.summary
    assert "339 GB/s" in r.summary


def test_multi_node_is_inferred_from_ranks_beyond_local_gpus() -> None:
    cap = machine(8, link="NV18", numa_nodes=2)
    cap.measurements.collectives = [allreduce(ZTAN_338, ranks=16)]
    assert result(cap, "scaling.allreduce").severity == "info"


# nccl-tests/rtx2080ti-x2-pix-no-p2p-allreduce-4gbps-autodl: busbw plateaus at 4.00 GB/s.
NO_P2P_2080TI = [(64 * MIB, 3.99), (256 * MIB, 4.00), (GIB, 4.00)]


def test_no_p2p_shared_memory_path_is_a_warning_linked_to_p2p() -> None:
    cap = machine(2, link="PIX", gpu_fields={"name": "NVIDIA GeForce RTX 2080 Ti", "gen": 3})
    cap.p2p.matrices["pci"] = [["X", "NS"], ["NS", "X"]]
    cap.measurements.collectives = [allreduce(NO_P2P_2080TI, gpus=[0, 1], ranks=2)]
    r = result(cap, "scaling.allreduce")
    assert r.severity == "warn"  # 4 / 12 = 33 % of the Gen3 x16 model, but explained
    assert "33%" in r.summary
    assert "P2P is unavailable on GPU0-GPU1 (NS)" in r.summary
    assert any("p2p.capability" in step for step in r.remediation)


def test_unknown_link_uses_the_measured_pinned_h2d() -> None:
    # bandwidth/rtx2080ti-pinned-gen3-autodl: H2D 12.2 GB/s on the same machine.
    cap = machine(2, link="PIX", gpu_fields={"gen": None, "width": None})
    cap.p2p.matrices["pci"] = [["X", "NS"], ["NS", "X"]]
    cap.measurements.transfers = [
        TransferMeasurement(gpu=0, direction="h2d", memory="pinned", bandwidth_gbps=12.2)
    ]
    cap.measurements.collectives = [allreduce(NO_P2P_2080TI, gpus=[0, 1], ranks=2)]
    r = result(cap, "scaling.allreduce")
    assert (r.severity, r.confidence) == ("warn", "medium")
    assert any("measured pinned H2D" in str(e.subject) for e in r.evidence)


def nvswitch(n: int, link: str, version: str, speed: float) -> Capture:
    return machine(
        n, link=link, numa_nodes=2, gpu_fields={"nvlink_version": version, "nvlink_speed": speed}
    )


def test_nvls_busbw_above_the_wire_model_is_not_flagged() -> None:
    # research/checks.md §6: 8x H100 NVLS all-reduce peaks at ~480 GB/s busbw.
    cap = nvswitch(8, "NV18", "4.0", 26.562)
    cap.measurements.collectives = [
        allreduce([(4 * GIB, 470.0), (8 * GIB, 480.0)], gpus=list(range(8)), ranks=8)
    ]
    r = result(cap, "scaling.allreduce")
    assert r.severity == "pass"
    assert any("NVLS" in str(e.value) for e in r.evidence)


@pytest.mark.parametrize(
    ("busbw", "severity"),
    [
        (232.5, "pass"),
        (0.71 * 240, "pass"),
        (0.69 * 240, "warn"),
        (0.51 * 240, "warn"),
        (0.49 * 240, "fail"),
    ],
)
def test_a100_nvswitch_thresholds(busbw: float, severity: str) -> None:
    # nccl-tests#175 (research/checks.md §6): 8x A100 232.5 GB/s; model 12 x 20 = 240 GB/s.
    cap = nvswitch(8, "NV12", "3.0", 25.0)
    cap.measurements.collectives = [allreduce([(8 * GIB, busbw)], gpus=list(range(8)), ranks=8)]
    r = result(cap, "scaling.allreduce")
    assert r.severity == severity
    assert any(e.label == "link model" and e.value == pytest.approx(240.0) for e in r.evidence)


def test_bridged_h100_pcie_model_comes_from_links_not_names() -> None:
    # nccl-tests#194: 2x H100 PCIe with NVLink bridge measured ~116 GB/s; NCCL's model of 12
    # NVLink4 links is 12 x 20.6 = 247 GB/s.
    cap = machine(
        2,
        link="NV12",
        gpu_fields={"nvlink_version": "4.0", "nvlink_speed": 26.562, "name": "NVIDIA H100 PCIe"},
    )
    for g in cap.gpus:  # bridge links go to the peer GPU, not to an NVSwitch
        for link in g.nvlinks:
            link.remote_type = "gpu"
            link.remote_bus_id = cap.gpus[1 - g.index].bus_id
    cap.measurements.collectives = [allreduce([(4 * GIB, 116.26)], gpus=[0, 1], ranks=2)]
    r = result(cap, "scaling.allreduce")
    assert r.severity == "fail"
    assert any(e.label == "link model" and e.value == pytest.approx(247.2) for e in r.evidence)


def test_cross_socket_p2p_bound_by_socket_interconnect() -> None:
    # nccl-tests/rtx4090x8-pcie-sys-p2p-unlocked-allreduce-blog: 20.64 GB/s busbw at 128 MiB,
    # 8 GPUs, all SYS, 2x EPYC 7542, Gen4 x16; NCCL models AMD's socket link at 16 GB/s.
    cap = machine(
        8,
        link="SYS",
        numa_nodes=2,
        cpu_vendor="amd",
        gpu_fields={"gen": 4, "name": "NVIDIA GeForce RTX 4090"},
    )
    cap.host.cpu_model = "AMD EPYC 7542 32-Core Processor"
    cap.p2p.can_access_peer = [[True] * 8 for _ in range(8)]
    cap.measurements.collectives = [
        allreduce([(64 * MIB, 20.59), (128 * MIB, 20.64)], gpus=list(range(8)), ranks=8)
    ]
    r = result(cap, "scaling.allreduce")
    assert r.severity == "pass"
    assert any("socket interconnect 16 GB/s" in str(e.subject) for e in r.evidence)


def test_small_messages_are_not_judged() -> None:
    cap = nvswitch(8, "NV12", "3.0", 25.0)
    cap.measurements.collectives = [allreduce([(32 * MIB, 60.0)], gpus=list(range(8)), ranks=8)]
    r = result(cap, "scaling.allreduce")
    assert (r.severity, r.confidence) == ("info", "low")
    assert "too small" in r.summary


def test_nccl_tests_without_topology_is_info_low() -> None:
    # nccl-tests/rtx4090x8-pcie-sys-p2p-unlocked-allreduce-blog: 20.64 GB/s on 8 GPUs; the
    # paste has no links, so the level is not judged.
    cap = machine(8, kind="import", gpu_fields={"name": "NVIDIA GeForce RTX 4090"})
    cap.topology.labels, cap.topology.links = [], []
    cap.measurements.collectives = [
        allreduce([(64 * MIB, 20.59), (128 * MIB, 20.64)], gpus=list(range(8)), ranks=8)
    ]
    r = result(cap, "scaling.allreduce")
    assert (r.severity, r.confidence) == ("info", "low")
    assert "no link model" in r.summary


def test_unknown_links_still_judged_against_the_slowest_link_nccl_models() -> None:
    # nccl-tests/rtx2080ti-x2-pix-no-p2p-allreduce-4gbps-autodl alone: 4.0 GB/s, no topology,
    # no link facts. Even a Gen3 x8 or QPI hop (6 GB/s in NCCL's model) would carry more.
    cap = machine(2, kind="import")
    cap.gpus = []
    cap.topology.labels, cap.topology.links = [], []
    cap.measurements.collectives = [allreduce(NO_P2P_2080TI, ranks=2)]
    r = result(cap, "scaling.allreduce")
    assert (r.severity, r.confidence) == ("warn", "low")
    assert "slowest link NCCL models (6 GB/s)" in r.summary
    assert "likely causes: no P2P" in r.summary


def test_single_rank_all_reduce_is_not_judged_against_the_floor() -> None:
    # nccl-tests prints busbw 0 for one rank (2(n-1)/n = 0): nothing crossed a link.
    cap = machine(1, kind="import")
    cap.topology.labels, cap.topology.links = [], []
    cap.measurements.collectives = [allreduce([(GIB, 0.0)], gpus=[0], ranks=1)]
    assert result(cap, "scaling.allreduce").severity == "info"


def test_below_the_floor_names_consumer_gpus_as_the_likely_cause() -> None:
    cap = machine(2, kind="import", gpu_fields={"name": "NVIDIA GeForce RTX 2080 Ti"})
    cap.topology.labels, cap.topology.links = [], []
    cap.measurements.collectives = [allreduce(NO_P2P_2080TI, gpus=[0, 1], ranks=2)]
    r = result(cap, "scaling.allreduce")
    assert r.severity == "warn"
    assert r.subjects == ["GPU0", "GPU1"]
    assert "consumer GPUs" in r.summary
    assert "shared memory" in r.summary


def test_below_the_floor_with_p2p_refused_says_so() -> None:
    cap = machine(2, kind="import")
    cap.topology.labels, cap.topology.links = [], []
    cap.p2p.matrices["pci"] = [["X", "NS"], ["NS", "X"]]
    cap.measurements.collectives = [allreduce(NO_P2P_2080TI, gpus=[0, 1], ranks=2)]
    r = result(cap, "scaling.allreduce")
    assert r.severity == "warn"
    assert "P2P is unavailable on GPU0-GPU1" in r.summary


def test_gloo_is_functional_only() -> None:
    cap = machine(2)
    m = allreduce([(256 * MIB, 1.0)], ranks=2, gpus=[])
    m.backend = "gloo"
    cap.measurements.collectives = [m]
    assert result(cap, "scaling.allreduce").severity == "info"


# ======================================================================== scaling.efficiency


def ladder(effs: dict[int, float], base_ms: float = 100.0, **kw: object) -> ScalingMeasurement:
    points = [ScalingPoint(ranks=1, throughput_samples_per_s=320.0, step_time_ms=base_ms)]
    for n, e in effs.items():
        points.append(
            ScalingPoint(ranks=n, gpus=list(range(n)), throughput_samples_per_s=320.0 * n * e)
        )
    return ScalingMeasurement(backend="nccl", per_rank_batch=32, points=points, **kw)  # type: ignore[arg-type]


def test_efficiency_skips_without_data() -> None:
    r = result(machine(2), "scaling.efficiency")
    assert r.severity == "skip"
    assert r.needs is not None
    assert "--probes" in r.needs


@pytest.mark.parametrize(
    ("eff", "severity"),
    [(0.90, "pass"), (0.86, "pass"), (0.84, "warn"), (0.71, "warn"), (0.69, "fail")],
)
def test_efficiency_thresholds_on_nvlink(eff: float, severity: str) -> None:
    cap = nvswitch(8, "NV18", "4.0", 26.562)
    cap.measurements.scaling = [ladder({2: 0.97, 4: 0.95, 8: eff})]
    r = result(cap, "scaling.efficiency")
    assert r.severity == severity
    assert "slowest edge NV" in r.summary


@pytest.mark.parametrize(("eff", "severity"), [(0.6, "info"), (0.49, "fail"), (0.9, "pass")])
def test_efficiency_thresholds_on_pcie(eff: float, severity: str) -> None:
    cap = machine(4, link="PIX")
    cap.measurements.scaling = [ladder({4: eff})]
    r = result(cap, "scaling.efficiency")
    assert r.severity == severity
    assert "slowest edge PIX" in r.summary


def test_efficiency_quantifies_remedies_when_communication_bound() -> None:
    # 8 GPUs across sockets: busbw 20 GB/s, 2 GB of bf16 gradients (research §6), 200 ms of
    # compute per step -> t_comm ~175 ms + 76 buckets x 88 us, predicted E ~0.52.
    cap = machine(
        8,
        link="SYS",
        pairs={(a, b): "PIX" for a in range(4) for b in range(4) if a < b}
        | {(a, b): "PIX" for a in range(4, 8) for b in range(4, 8) if a < b},
        numa_nodes=2,
        gpu_fields={"gen": 4},
    )
    m = ladder(
        {8: 0.5},
        base_ms=200.0,
        allreduce_busbw_gbps=20.0,
        gradient_bytes=2 * 10**9,
        model_params=10**9,
    )
    cap.measurements.scaling = [m]
    r = result(cap, "scaling.efficiency")
    assert r.severity == "info"  # PCIe box: 0.5 <= E < 0.85
    assert "slowest edge SYS" in r.summary
    assert "predicts 52%" in r.summary
    steps = " ".join(r.remediation)
    assert "gradient accumulation over" in steps
    assert "DDP buckets of 100 MiB" in steps
    assert "placement on GPUs 0-7" not in steps
    assert any(
        e.label == "modelled communication per step" and 175 < float(e.value) < 185
        for e in r.evidence
    )


def test_efficiency_far_below_the_model_is_not_the_interconnect() -> None:
    cap = nvswitch(8, "NV18", "4.0", 26.562)
    cap.measurements.scaling = [
        ladder({8: 0.6}, base_ms=200.0, allreduce_busbw_gbps=480.0, gradient_bytes=2 * 10**9)
    ]
    r = result(cap, "scaling.efficiency")
    # The links deliver (NVLS busbw above the wire model): the loss is elsewhere (issue 9).
    assert r.severity == "warn"
    assert "not the interconnect" in r.summary
    notes = [e for e in r.evidence if e.label == "predicted E (no overlap)"]
    assert [e.value for e in notes] == ["95%"]  # 200 / (200 + 7.3 + 76 x 0.056) ms
    cap.measurements.scaling[0].points[-1].throughput_samples_per_s = 320.0 * 8 * 0.9
    assert result(cap, "scaling.efficiency").severity == "pass"


def test_gap_warning_when_efficiency_passes_nowhere_near_prediction() -> None:
    cap = machine(4, link="PIX")
    cap.measurements.scaling = [
        # 40 GB/s: most of the Gen5 x16 model (48), so only the gap is left to report.
        ladder({4: 0.55}, base_ms=200.0, allreduce_busbw_gbps=40.0, gradient_bytes=10**8)
    ]
    r = result(cap, "scaling.efficiency")
    assert r.severity == "warn"
    assert "not the interconnect" in r.summary
    assert any("transfer.pageable" in step for step in r.remediation)


def test_workload_exposed_nccl_share_warns_with_numbers() -> None:
    cap = machine(8, link="NV18")
    cap.measurements.workloads = [
        WorkloadEvidence(
            step_time_ms=400.0, nccl_exposed_share=0.4, nccl_time_share=0.55, source="rank0.json"
        )
    ]
    r = result(cap, "scaling.efficiency")
    assert r.severity == "warn"
    assert "40% of each step waits on NCCL" in r.summary
    assert "160.0 ms of 400.0 ms is exposed" in " ".join(r.remediation)


def test_ladder_without_baseline_is_info() -> None:
    cap = machine(2, link="NV12")
    cap.measurements.scaling = [
        ScalingMeasurement(points=[ScalingPoint(ranks=2, throughput_samples_per_s=600.0)])
    ]
    assert result(cap, "scaling.efficiency").severity == "info"


# ================================================================ engine: broken inputs


def test_a_broken_measurement_becomes_error_not_a_crash() -> None:
    cap = machine(2, link="PIX")
    broken = ScalingMeasurement.model_construct(points=None, backend="nccl")  # bypass validation
    cap.measurements.scaling = [broken]
    cap.measurements.collectives = [
        CollectiveMeasurement.model_construct(op="all_reduce", rows=[None])
    ]
    report = run(cap, ReportSource(kind="synthetic"), only=["scaling"], generated_at="t")
    by_id = {c.id: c for c in report.checks}
    assert by_id["scaling.efficiency"].severity == "error"
    assert by_id["scaling.allreduce"].severity == "error"
    assert "crashed" in by_id["scaling.efficiency"].summary


# ============================================= issue 9: the verdict judged against the links


def _probe_ladder(busbw: float, e8: float, compute_ms: float = 10.0) -> ScalingMeasurement:
    """A ladder shaped like the probe's (synthetic numbers): 1/2/4/8 ranks, ~201 MB of fp32
    gradients, ``compute_ms`` per step, all-reduce busbw at the gradient size per N."""
    e = {1: 1.0, 2: 1 - (1 - e8) / 3, 4: 1 - (1 - e8) * 2 / 3, 8: e8}
    points = [
        ScalingPoint(
            ranks=n,
            gpus=list(range(n)),
            throughput_samples_per_s=512 * n * e[n] / (compute_ms / 1000),
            step_time_ms=compute_ms / e[n],
            allreduce_busbw_gbps=None if n == 1 else busbw,
        )
        for n in (1, 2, 4, 8)
    ]
    return ScalingMeasurement(
        backend="nccl",
        model_params=50_331_648,
        gradient_bytes=201_326_592,
        per_rank_batch=512,
        points=points,
        allreduce_busbw_gbps=busbw,
        source="synthetic",
    )


def test_healthy_nvswitch_ladder_gets_no_warning_from_scaling() -> None:
    # 8x A100 SXM4 on NVSwitch: NCCL's model 12 x 20 = 240 GB/s; 230 GB/s is what such a box
    # reaches (nccl-tests#175: 232.5); 10 ms of compute, E(8) = 0.87.
    cap = nvswitch(8, "NV12", "3.0", 25.0)
    cap.measurements.scaling = [_probe_ladder(230.0, 0.87)]
    eff = result(cap, "scaling.efficiency")
    ar = result(cap, "scaling.allreduce")
    assert eff.severity not in ("warn", "fail"), eff.summary
    assert ar.severity not in ("warn", "fail"), ar.summary
    # E(N) for every N of the ladder, each next to what the links predict.
    labels = [e.label for e in eff.evidence]
    assert {"E(2)", "E(4)", "E(8)"} <= set(labels)
    assert any("links predict" in str(e.subject) for e in eff.evidence if e.label == "E(8)")


def test_same_ladder_at_20_gbps_is_flagged_by_both_checks() -> None:
    cap = nvswitch(8, "NV12", "3.0", 25.0)
    cap.measurements.scaling = [_probe_ladder(20.0, 0.36)]
    eff = result(cap, "scaling.efficiency")
    ar = result(cap, "scaling.allreduce")
    assert eff.severity in ("warn", "fail")
    assert ar.severity in ("warn", "fail")
    assert "slowest edge NV" in eff.summary
    assert "delivers less than the links should" in eff.summary
    # Even if E(N) looked fine, the busbw far below the links is not healthy.
    cap.measurements.scaling = [_probe_ladder(20.0, 0.87)]
    assert result(cap, "scaling.efficiency").severity in ("warn", "fail")


def test_healthy_dgx_h100_with_a_communication_heavy_workload_is_info_not_warn() -> None:
    # DGX H100: NCCL's model 18 x 20.6 = 370.8 GB/s; a healthy 360 GB/s; the probe's MLP
    # takes ~3 ms per step there, so E(8) ~0.68 is what the links predict (synthetic).
    cap = nvswitch(8, "NV18", "4.0", 26.562)
    cap.measurements.scaling = [_probe_ladder(360.0, 0.68, compute_ms=3.0)]
    r = result(cap, "scaling.efficiency")
    assert r.severity == "info", r.summary
    assert "communication-heavy" in r.summary
    assert any("gradient accumulation" in step for step in r.remediation)
    assert result(cap, "scaling.allreduce").severity == "pass"


def test_healthy_pcie_gen5_box_is_info_not_fail() -> None:
    # 8x PCIe Gen5 x16 under PCIe switches (PXB), healthy: busbw 40 GB/s of NCCL's 48 GB/s
    # model; with 5 ms of compute and 201 MB of gradients the α–β model predicts E(8) ~0.35,
    # which the old E-only thresholds called a failure (< 0.5) (synthetic numbers).
    cap = machine(8, link="PXB", gpu_fields={"gen": 5, "width": 16})
    cap.measurements.scaling = [_probe_ladder(40.0, 0.35, compute_ms=5.0)]
    r = result(cap, "scaling.efficiency")
    assert r.severity == "info", r.summary
    ar = result(cap, "scaling.allreduce")
    assert ar.severity == "pass", ar.summary


def test_imported_allreduce_without_link_facts_uses_the_gpu_model() -> None:
    # A paste that only names the GPUs (no PCIe gen/width in the capture): the link model's
    # A100 PCIe entry (Gen4 x16: NCCL model 24 GB/s) is the basis, marked as inferred.
    cap = machine(
        2, link="PIX", gpu_fields={"gen": None, "width": None, "name": "NVIDIA A100-PCIE-40GB"}
    )
    cap.measurements.collectives = [allreduce([(GIB, 8.0)], gpus=[0, 1], ranks=2)]
    r = result(cap, "scaling.allreduce")
    assert r.severity == "fail"
    assert any("inferred from the GPU model" in str(e.subject) for e in r.evidence)


def test_zero_bandwidth_transfer_does_not_crash_the_model() -> None:
    cap = machine(2, link="PIX", gpu_fields={"gen": None, "width": None, "name": "Unknown GPU"})
    cap.measurements.transfers = [
        TransferMeasurement(gpu=0, direction="h2d", memory="pinned", bandwidth_gbps=0.0)
    ]
    cap.measurements.collectives = [allreduce([(GIB, 8.0)], gpus=[0, 1], ranks=2)]
    assert result(cap, "scaling.allreduce").severity in ("info", "warn")

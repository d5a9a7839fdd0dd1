"""transfer.pinned, transfer.pageable and transfer.remote-numa.

Measured numbers come from the real-output corpus (../shared/realdata/bandwidth/...) and the
research notes; each literal names its source. Machines are synthetic (tests/builders.py).
"""

from __future__ import annotations

import pytest

from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import load_checks
from pcidoc.doctor.runner import run_check
from pcidoc.model import Capture, CheckResult, MemcpyKind, TransferMeasurement, WorkloadEvidence
from tests.builders import machine


def result(cap: Capture, check_id: str) -> CheckResult:
    return run_check(load_checks()[check_id], Context(cap))


def xfer(
    gpu: int, direction: str, gbps: float, memory: str = "pinned", **kw: object
) -> TransferMeasurement:
    return TransferMeasurement(
        gpu=gpu,
        direction=direction,
        memory=memory,  # type: ignore[arg-type]
        bandwidth_gbps=gbps,
        **kw,
    )  # type: ignore[arg-type]


def box(gen: int | None = 4, width: int | None = 16, **kw: object) -> Capture:
    return machine(1, gpu_fields={"gen": gen, "width": width, **kw})


# =========================================================================== transfer.pinned


def test_pinned_skips_without_measurement() -> None:
    r = result(box(), "transfer.pinned")
    assert r.severity == "skip"
    assert r.needs is not None
    assert "--probes quick" in r.needs


@pytest.mark.parametrize(
    ("share", "severity"),
    [(0.49, "fail"), (0.51, "warn"), (0.74, "warn"), (0.76, "pass")],
)
def test_pinned_thresholds_against_nccl_model(share: float, severity: str) -> None:
    cap = box(gen=4, width=16)  # NCCL model 24 GB/s
    cap.measurements.transfers = [xfer(0, "h2d", 24.0 * share)]
    r = result(cap, "transfer.pinned")
    assert r.severity == severity
    assert any(e.label == "NCCL model of the link" and e.value == 24.0 for e in r.evidence)
    assert any(e.label == "share of the raw link ceiling" for e in r.evidence)


def test_pinned_says_which_link_it_judged_against() -> None:
    cap = box(gen=4, width=16)
    cap.gpus[0].pstate = 8  # idle: current link not meaningful, maximum used instead
    cap.measurements.transfers = [xfer(0, "h2d", 25.7)]
    r = result(cap, "transfer.pinned")
    assert r.severity == "pass"
    assert r.confidence == "medium"
    assert any("maximum of GPU and slot" in e.label for e in r.evidence)


def test_pinned_under_load_link_below_max_links_to_pcie_link_speed() -> None:
    cap = box(gen=4, width=16)
    cap.measurements.transfers = [
        xfer(0, "h2d", 12.2, link_gen_under_load=3, link_width_under_load=16)
    ]
    r = result(cap, "transfer.pinned")
    assert r.severity == "warn"
    assert "trains at Gen3 x16 under load" in r.summary
    assert "pcie.link-speed" in r.summary


def test_healthy_gen3_x16_passes() -> None:
    # bandwidth/t4-aliyun-pinned-quick-cuda-demo: H2D 9.7, D2H 11.1 GB/s on Gen3 x16.
    cap = box(gen=3, width=16, name="Tesla T4")
    cap.measurements.transfers = [
        xfer(0, "h2d", 9.7, method="bandwidthTest"),
        xfer(0, "d2h", 11.1, method="bandwidthTest"),
    ]
    r = result(cap, "transfer.pinned")
    assert r.severity == "pass"


@pytest.mark.parametrize(
    ("gbps", "klass", "severity"),
    [
        (12.3, "Gen3-x16-class", "info"),  # bandwidth/a100-sxm4-40gb-pinned-12gbps-cuda-demo
        (9.6, "Gen3-x16-class", "info"),  # bandwidth/v100-sxm2-16gb-pinned-cuda-demo
        (25.7, "Gen4-x16-class", "info"),  # bandwidth/dgx-a100-pinned-vs-pageable
        (5.0, "below even the Gen3-x16 class", "warn"),
    ],
)
def test_pinned_unknown_link_is_classified(gbps: float, klass: str, severity: str) -> None:
    cap = box(gen=None, width=None)
    cap.gpus[0].name = "Some GPU"  # not in the link model: its own generation is unknown too
    cap.gpus[0].pcie.max_gen = cap.gpus[0].pcie.max_width = None
    cap.gpus[0].pcie.device_max_gen = cap.gpus[0].pcie.device_max_width = None
    cap.measurements.transfers = [xfer(0, "h2d", gbps, method="bandwidthTest")]
    r = result(cap, "transfer.pinned")
    assert (r.severity, r.confidence) == (severity, "low")
    assert klass in r.summary
    assert "nvidia-smi -q -d PCIE" in r.summary


def test_pinned_unknown_link_but_known_device_generation_warns() -> None:
    cap = box(gen=None, width=None)
    cap.gpus[0].pcie.max_gen = None
    cap.gpus[0].pcie.device_max_gen = 4
    cap.measurements.transfers = [xfer(0, "h2d", 12.3)]
    r = result(cap, "transfer.pinned")
    assert (r.severity, r.confidence) == ("warn", "medium")
    assert "supports Gen4" in r.summary


def test_pinned_unknown_link_reports_both_directions_of_a_gpu_once() -> None:
    # bandwidth/a100-sxm4-40gb-pinned-12gbps-cuda-demo: H2D 12.3 / D2H 13.2 GB/s, no link facts.
    cap = machine(1, kind="import")
    cap.gpus = []
    cap.measurements.transfers = [
        xfer(0, "h2d", 12.3, method="bandwidthTest"),
        xfer(0, "d2h", 13.2, method="bandwidthTest"),
    ]
    r = result(cap, "transfer.pinned")
    assert (r.severity, r.confidence) == ("info", "low")
    assert r.summary.startswith("GPU0 pinned H2D 12.3 / D2H 13.2 GB/s is Gen3-x16-class")
    assert "more)" not in r.summary


def test_pinned_imports_without_gpu_facts_are_classified() -> None:
    cap = machine(1, kind="import")
    cap.gpus = []
    cap.measurements.transfers = [xfer(0, "h2d", 12.2, method="bandwidthTest")]
    r = result(cap, "transfer.pinned")
    assert r.severity == "info"
    assert "Gen3-x16-class" in r.summary


def test_h2d_far_below_d2h_on_copy_engines_warns() -> None:
    # research notes: A100 PCIe 17.3 vs 24.6 GB/s (DIAGNOSIS-NOTES "Host bandwidth").
    cap = box(gen=4, width=16)
    cap.measurements.transfers = [
        xfer(0, "h2d", 17.3, method="cuda-events"),
        xfer(0, "d2h", 24.6, method="cuda-events"),
    ]
    r = result(cap, "transfer.pinned")
    assert r.severity == "warn"
    assert any("nvbandwidth" in step for step in r.remediation)  # the asymmetry finding


@pytest.mark.parametrize(("h2d", "severity"), [(20.9, "warn"), (21.1, "pass")])
def test_asymmetry_edge_with_both_directions_above_the_link_threshold(
    h2d: float, severity: str
) -> None:
    cap = box(gen=4, width=16)  # both directions pass the 0.75 x 24 = 18 GB/s bar
    cap.measurements.transfers = [xfer(0, "h2d", h2d), xfer(0, "d2h", 28.0)]
    r = result(cap, "transfer.pinned")
    assert r.severity == severity
    if severity == "warn":
        assert "H2D 20.9 GB/s is far below D2H 28.0 GB/s" in r.summary


def test_sm_copy_asymmetry_is_normal() -> None:
    # nvbandwidth#24 (research/probes.md §1.1): H100 SM H2D 35.2 vs D2H 52.8 GB/s, Gen5 x16.
    cap = box(gen=5, width=16)
    cap.measurements.transfers = [
        xfer(0, "h2d", 35.2, method="nvbandwidth-sm"),
        xfer(0, "d2h", 52.8, method="nvbandwidth-sm"),
    ]
    r = result(cap, "transfer.pinned")
    assert r.severity == "info"
    assert "SM copies are asymmetric" in r.summary


def test_vm_lowers_confidence_of_a_low_result() -> None:
    cap = machine(1, hypervisor=True, gpu_fields={"gen": 4, "width": 16})
    cap.measurements.transfers = [xfer(0, "h2d", 10.0)]
    r = result(cap, "transfer.pinned")
    assert (r.severity, r.confidence) == ("fail", "medium")
    assert "inside a VM" in r.summary


# ========================================================================= transfer.pageable


def test_pageable_skips_without_data() -> None:
    r = result(box(), "transfer.pageable")
    assert r.severity == "skip"
    assert r.needs is not None
    assert "profiler" in r.needs


def test_pageable_ratio_is_info() -> None:
    # bandwidth/dgx-a100-pinned-vs-pageable-vim-listchars-gengwg: 25.7/25.8 vs 10.0/10.8.
    cap = box()
    cap.measurements.transfers = [
        xfer(0, "h2d", 25.7),
        xfer(0, "d2h", 25.8),
        xfer(0, "h2d", 10.0, memory="pageable"),
        xfer(0, "d2h", 10.8, memory="pageable"),
    ]
    r = result(cap, "transfer.pageable")
    assert r.severity == "info"
    assert "2.6× pageable on GPU0 H2D" in r.summary


def trace(pageable_mib: float, pinned_mib: float, steps: int = 10) -> WorkloadEvidence:
    mib = 1024**2
    return WorkloadEvidence(
        steps=steps,
        step_time_ms=250.0,
        memcpy=[
            MemcpyKind(
                kind="Memcpy HtoD (Pageable -> Device)",
                direction="h2d",
                memory="pageable",
                count=steps,
                bytes=int(pageable_mib * mib * steps),
                time_us=8000.0 * steps,
            ),
            MemcpyKind(
                kind="Memcpy HtoD (Pinned -> Device)",
                direction="h2d",
                memory="pinned",
                count=steps,
                bytes=int(pinned_mib * mib * steps),
                time_us=1000.0 * steps,
            ),
        ],
        source="trace.json",
    )


def test_pageable_workload_share_warns_with_the_fix() -> None:
    cap = box()
    cap.measurements.transfers = [xfer(0, "h2d", 25.0)]
    cap.measurements.workloads = [trace(pageable_mib=64, pinned_mib=64)]
    r = result(cap, "transfer.pageable")
    assert r.severity == "warn"
    assert "64.0 MiB/step from pageable memory (50%" in r.summary
    assert "instead of 8.0 ms" in r.summary
    assert any("pin_memory=True" in step for step in r.remediation)
    assert any("--ulimit memlock=-1" in step for step in r.remediation)


@pytest.mark.parametrize(
    ("pageable", "pinned", "severity"),
    [(9.0, 81.0, "pass"), (11.0, 89.0, "warn"), (1.0, 0.5, "pass")],  # last: tiny copies
)
def test_pageable_workload_share_edge(pageable: float, pinned: float, severity: str) -> None:
    cap = box()
    cap.measurements.workloads = [trace(pageable_mib=pageable * 2, pinned_mib=pinned * 2)]
    assert result(cap, "transfer.pageable").severity == severity


# ====================================================================== transfer.remote-numa


def two_socket() -> Capture:
    return machine(2, numa_nodes=2, gpu_fields={"gen": 3, "width": 16})


def test_remote_numa_skips_without_paired_measurement() -> None:
    cap = two_socket()
    cap.measurements.transfers = [xfer(0, "h2d", 12.0, placement="local")]
    r = result(cap, "transfer.remote-numa")
    assert r.severity == "skip"


def test_remote_numa_single_node_is_not_applicable() -> None:
    r = result(machine(1, numa_nodes=1), "transfer.remote-numa")
    assert r.severity == "info"
    assert "single NUMA node" in r.summary


def test_remote_numa_gpus_on_node_1_are_not_a_single_node_host() -> None:
    # topo/a100-2gpu-slurm-slice-nv12-10nic-dask-cuda-1358: both GPUs on NUMA 3; topo -m lists
    # only that node, but node ids start at 0, so the host has several.
    cap = machine(2, numa_nodes=1, kind="import")
    for g in cap.gpus:
        g.numa_node = 3
    cap.host.numa_nodes[0].id = 3
    r = result(cap, "transfer.remote-numa")
    assert r.severity == "skip"


def test_remote_numa_import_of_node_0_only_is_not_proof_of_one_node() -> None:
    r = result(machine(2, numa_nodes=1, kind="import"), "transfer.remote-numa")
    assert r.severity == "skip"


@pytest.mark.parametrize(("ratio", "severity"), [(0.79, "warn"), (0.81, "pass")])
def test_remote_numa_edge(ratio: float, severity: str) -> None:
    cap = two_socket()
    cap.measurements.transfers = [
        xfer(0, "h2d", 12.0, placement="local"),
        xfer(0, "h2d", 12.0 * ratio, placement="remote"),
    ]
    assert result(cap, "transfer.remote-numa").severity == severity


def test_remote_numa_from_numactl_contexts() -> None:
    # research/checks.md §3 (gearshifft#82, P100): numactl -m0 -N0 12.15 vs -m1 -N1 3.78 H2D;
    # D2H 12.89 vs 2.54.
    cap = two_socket()
    cap.measurements.transfers = [
        xfer(0, "h2d", 12.15, host_numa_node=0, context="numactl -m0 -N0"),
        xfer(0, "h2d", 3.78, host_numa_node=1, context="numactl -m1 -N1"),
        xfer(0, "d2h", 12.89, host_numa_node=0, context="numactl -m0 -N0"),
        xfer(0, "d2h", 2.54, host_numa_node=1, context="numactl -m1 -N1"),
    ]
    r = result(cap, "transfer.remote-numa")
    assert r.severity == "warn"
    assert "31% of local" in r.summary or "20% of local" in r.summary
    assert any("numactl --cpunodebind=0 --membind=0" in step for step in r.remediation)
    assert any(e.value == "numactl -m1 -N1" for e in r.evidence)
    # The remote runs must not drag transfer.pinned down: they are excluded there.
    assert result(cap, "transfer.pinned").severity == "pass"


def test_transfer_is_judged_against_the_cards_own_pcie_generation_from_its_model() -> None:
    # A paste with only a bandwidthTest of an H100 (a Gen5 card): 25 GB/s is Gen4-x16-class.
    cap = machine(1, gpu_fields={"gen": None, "width": None, "name": "NVIDIA H100 80GB HBM3"})
    cap.measurements.transfers = [
        TransferMeasurement(gpu=0, direction="h2d", memory="pinned", bandwidth_gbps=25.0)
    ]
    r = result(cap, "transfer.pinned")
    assert (r.severity, r.confidence) == ("warn", "low")
    assert "supports Gen5" in r.summary
    # The same number on a Gen4 card is its class: not a warning.
    cap.gpus[0].name = "NVIDIA A100-SXM4-80GB"
    assert result(cap, "transfer.pinned").severity == "info"


def _bandwidth_test_under(binding: str, h2d: float) -> str:
    return f"""$ {binding} ./bandwidthTest --memory=pinned
[CUDA Bandwidth Test] - Starting...
Running on...

 Device 0: NVIDIA A100-SXM4-40GB
 Quick Mode

 Host to Device Bandwidth, 1 Device(s)
 PINNED Memory Transfers
   Transfer Size (Bytes)        Bandwidth(GB/s)
   32000000                     {h2d}

Result = PASS
"""


def test_runs_differing_only_in_placement_are_compared_without_the_gpus_numa_node() -> None:
    # One synthetic paste: the same bandwidthTest with the buffer on node 0, then node 1; the
    # GPU's own NUMA node is nowhere in it. The ratio is the finding.
    from pcidoc.collect.importers import import_texts

    text = _bandwidth_test_under("numactl -m 0 -N 0", 24.6) + _bandwidth_test_under(
        "numactl -m 1 -N 1", 8.1
    )
    cap = import_texts([("placements.txt", text)]).capture
    assert cap.gpus[0].numa_node is None
    r = result(cap, "transfer.remote-numa")
    assert (r.severity, r.subjects) == ("warn", ["GPU0"])
    assert "3.0× slower" in r.summary and "node 1 is remote" in r.summary


def test_placements_that_agree_pass() -> None:
    cap = box()
    cap.gpus[0].numa_node = None
    cap.measurements.transfers = [
        xfer(0, "h2d", 24.6, context="numactl -m 0 -N 0"),
        xfer(0, "h2d", 23.9, context="numactl -m 1 -N 1"),
    ]
    assert result(cap, "transfer.remote-numa").severity == "pass"

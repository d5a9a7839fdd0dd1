"""scaling.allreduce on broken inputs (../shared/bad-inputs families): never a crash.

busbw ``N/A`` at every size (nccl-na.txt) and a 0.0 GB/s transfer next to an all-reduce
(bw-zero.txt) used to crash the check (no result / ZeroDivisionError).
"""

from __future__ import annotations

from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import load_checks
from pcidoc.doctor.runner import run_check
from pcidoc.model import (
    Capture,
    CheckResult,
    CollectiveMeasurement,
    CollectiveRow,
    TransferMeasurement,
)
from tests.builders import machine

GIB = 1024**3


def result(cap: Capture) -> CheckResult:
    return run_check(load_checks()["scaling.allreduce"], Context(cap))


def test_busbw_na_at_every_size_is_info_not_an_error() -> None:
    cap = machine(2, link="PIX")
    cap.measurements.collectives = [
        CollectiveMeasurement(
            op="all_reduce",
            backend="nccl",
            tool="nccl-tests",
            ranks=2,
            rows=[CollectiveRow(size_bytes=s, busbw_gbps=None, wrong=0) for s in (8, GIB)],
        )
    ]
    r = result(cap)
    assert r.severity == "info"
    assert "N/A" in r.summary


def test_zero_gbps_transfer_is_not_a_link_model() -> None:
    cap = machine(2, link="PIX", gpu_fields={"gen": None, "width": None})
    cap.measurements.transfers = [
        TransferMeasurement(gpu=0, direction="h2d", memory="pinned", bandwidth_gbps=0.0)
    ]
    cap.measurements.collectives = [
        CollectiveMeasurement(
            op="all_reduce",
            backend="nccl",
            tool="nccl-tests",
            ranks=2,
            gpus=[0, 1],
            rows=[CollectiveRow(size_bytes=GIB, busbw_gbps=4.0, wrong=0)],
        )
    ]
    r = result(cap)
    assert r.severity != "error", r.summary


def test_peak_busbw_is_quoted_with_its_size_besides_the_largest() -> None:
    mib = 1024**2
    cap = machine(2, link="NV18")
    cap.measurements.collectives = [
        CollectiveMeasurement(
            op="all_reduce",
            backend="nccl",
            tool="nccl-tests",
            ranks=2,
            gpus=[0, 1],
            rows=[
                CollectiveRow(size_bytes=size, busbw_gbps=bw, wrong=0)
                for size, bw in ((64 * mib, 300.0), (256 * mib, 361.0), (GIB, 340.0))
            ],
        )
    ]
    r = result(cap)
    assert "peak 361 GB/s at 256.0 MiB" in r.summary
    peak = next(e for e in r.evidence if e.label == "peak busbw")
    assert (peak.value, peak.subject) == (361.0, "256.0 MiB")


def _named_only(n: int, busbw: float, name: str = "NVIDIA H100 80GB HBM3") -> Capture:
    # A paste with the nccl-tests table and the GPU names only: no topology, no NVLink facts.
    cap = machine(n, gpu_fields={"name": name})
    cap.topology.labels, cap.topology.links = [], []
    for g in cap.gpus:
        g.nvlinks = []
    cap.measurements.collectives = [
        CollectiveMeasurement(
            op="all_reduce",
            backend="nccl",
            tool="nccl-tests",
            ranks=n,
            gpus=list(range(n)),
            rows=[CollectiveRow(size_bytes=8 * GIB, busbw_gbps=busbw, wrong=0)],
        )
    ]
    return cap


def test_busbw_is_judged_against_links_inferred_from_the_gpu_model() -> None:
    # 8 H100 SXM: NVSwitch board, 18 links x NCCL's 20.6 GB/s = 370.8 GB/s.
    healthy = result(_named_only(8, 360.0))
    assert healthy.severity == "pass" and "inferred from the GPU model" in _all_text(healthy)
    low = result(_named_only(8, 120.0))
    assert low.severity in ("warn", "fail") and low.confidence == "medium"


def test_a_small_set_could_be_a_direct_mesh_so_nothing_is_inferred() -> None:
    # 4 GPUs may be an HGX 4-GPU mesh (NV6 per peer): 18 links per pair would overstate it.
    r = result(_named_only(4, 120.0))
    assert r.severity != "fail"
    assert "inferred from the GPU model" not in _all_text(r)


def _all_text(r: CheckResult) -> str:
    return " ".join([r.summary, *(e.text() for e in r.evidence)])

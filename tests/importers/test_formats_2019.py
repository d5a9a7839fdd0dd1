"""Format classes of real outputs that earlier rounds missed (issue 21 item 5): nccl-tests of
2019-2020, 1-rank jobs without launch lines, ``#wrong`` counts and single-size dips.

All inputs are small synthetic texts in the layouts those tools print (not measured numbers).
"""

from __future__ import annotations

from pcidoc.doctor import run
from pcidoc.model.capture import Capture
from pcidoc.model.report import CheckResult, ReportSource
from tests.importers.helpers import load


def result(cap: Capture, check_id: str) -> CheckResult:
    report = run(cap, ReportSource(kind="import", path="t"), generated_at="2000-01-01T00:00:00Z")
    found = report.check(check_id)
    assert found is not None
    return found


OLD_ALL_GATHER = """$ ./build/all_gather_perf -b 1M -e 128M -f 4 -g 4
# nThread: 1 nGpus: 4 minBytes 1048576 maxBytes 134217728 step: 4(factor) warmup iters: 5
#
# Using devices
#   Rank  0 Pid  29403 on     dgx1 device  0 [0x06] Tesla V100-SXM2-16GB
#   Rank  1 Pid  29403 on     dgx1 device  1 [0x07] Tesla V100-SXM2-16GB
#   Rank  2 Pid  29403 on     dgx1 device  2 [0x0a] Tesla V100-SXM2-16GB
#   Rank  3 Pid  29403 on     dgx1 device  3 [0x0b] Tesla V100-SXM2-16GB
#
#                                             out-of-place                       in-place
#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)             (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576         65536   float    35.12   29.86   22.39  0e+00    34.20   30.66   23.00  0e+00
    16777216       1048576   float   310.50   54.03   40.52  0e+00   305.10   54.99   41.24  0e+00
   134217728       8388608   float  2321.10   57.83   43.37  1e-07  2310.00   58.10   43.58  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 35.5
"""


def test_2019_output_without_group_redop_or_root() -> None:
    cap = load(OLD_ALL_GATHER)
    (m,) = cap.measurements.collectives
    assert (m.op, m.ranks, m.nodes, m.gpus) == ("all_gather", 4, 1, [0, 1, 2, 3])
    assert [r.size_bytes for r in m.rows if not r.in_place] == [1048576, 16777216, 134217728]
    assert m.rows[-2].busbw_gbps == 43.37
    # "error" is the largest deviation there, not a count: 1e-07 is no wrong-element count.
    assert m.rows[-2].wrong is None
    assert m.correct is True
    assert cap.gpu(3).name == "Tesla V100-SXM2-16GB"  # type: ignore[union-attr]
    (launch,) = cap.evidence.test_runs
    assert (launch.gpus_per_process, len(launch.ranks), launch.ranks[1].pid) == (4, 4, 29403)


def test_2019_broadcast_row_with_root_but_no_redop() -> None:
    text = (
        "$ ./build/broadcast_perf -b 8M -e 8M -g 2\n"
        "#       size         count    type    root     time   algbw   busbw  error     time"
        "   algbw   busbw  error\n"
        "     8388608       2097152   float       0   400.10   20.97   20.97  0e+00   401.00"
        "   20.92   20.92  0e+00\n"
    )
    (m,) = load(text).measurements.collectives
    assert (m.op, len(m.rows), m.rows[0].busbw_gbps) == ("broadcast", 2, 20.97)


def test_a_table_of_other_numbers_is_not_read_as_nccl_tests() -> None:
    # Without a redop column the type must be one nccl-tests prints.
    text = "      8388608       2097152   apples    400.10   20.97   20.97  0\n"
    cap_text = "$ nvidia-smi topo -m\n\tGPU0\tGPU1\nGPU0\t X \tNV1\nGPU1\tNV1\t X \n" + text
    assert load(cap_text).measurements.collectives == []


WRONG = """$ ./build/all_gather_perf -b 1M -e 64M -f 4 -g 2
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
     1048576        131072     float    none      -1    40.10   26.15   13.07      0    39.90   26.28   13.14      0
     4194304        524288     float    none      -1   150.20   27.92   13.96   1024   149.00   28.15   14.07      0
    67108864       8388608     float    none      -1  2400.00   27.96   13.98  65536  2390.00   28.08   14.04      0
"""  # noqa: E501


def test_wrong_results_of_any_collective_fail_with_the_count() -> None:
    cap = load(WRONG)
    (m,) = cap.measurements.collectives
    assert sum(r.wrong or 0 for r in m.rows) == 66560
    assert m.correct is False
    assert "66560 wrong result" in " ".join(cap.origin.sources[0].read)
    r = result(cap, "scaling.allreduce")
    assert r.severity == "fail"
    assert "66560 wrong results in the all-gather" in r.summary
    assert "data corruption in the collective; check P2P/IOMMU" in r.summary


def test_zero_wrong_results_do_not_fail() -> None:
    cap = load(WRONG.replace("   1024 ", "      0 ").replace("  65536 ", "      0 "))
    assert result(cap, "scaling.allreduce").severity == "skip"


ONE_RANK_ROWS = """#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
     1048576        262144     float     sum      -1    10.41  100.73    0.00      0     0.45  2330.1    0.00      0
     1048576        262144     float     sum      -1    10.52   99.68    0.00      0     0.46  2279.5    0.00      0
   268435456      67108864     float     sum      -1   560.20  479.17    0.00      0     0.46  583555    0.00      0
   268435456      67108864     float     sum      -1   561.00  478.49    0.00      0     0.45  596523    0.00      0
"""  # noqa: E501


def test_rows_duplicated_per_size_with_busbw_zero_are_one_rank_jobs() -> None:
    cap = load(ONE_RANK_ROWS)
    (launch,) = cap.evidence.test_runs
    assert (launch.duplicated_rows, launch.zero_busbw_rows) == (2, 4)
    assert launch.max_algbw_gbps == 596523
    r = result(cap, "nccl.tests-launch")
    assert r.severity == "fail"
    assert "ran as its own 1-rank job" in r.summary
    assert "above any GPU link" in r.summary
    allreduce = result(cap, "scaling.allreduce")
    assert allreduce.severity == "info"
    assert "1-rank job" in allreduce.summary


def test_busbw_zero_without_duplicates_is_not_called_a_one_rank_launch() -> None:
    lines = ONE_RANK_ROWS.splitlines()
    cap = load("\n".join([lines[0], lines[1], lines[3]]) + "\n")
    assert cap.evidence is None or cap.evidence.test_runs == []


def _curve(dip_gbps: float, before: float = 234.88) -> str:
    sizes = [1 << 20, 1 << 22, 1 << 24, 1 << 25, 1 << 26, 1 << 27, 1 << 28, 1 << 30]
    busbw = [61.17, 122.34, 225.84, before, dip_gbps, 239.68, 240.90, 240.90]
    rows = "".join(
        f"{s:>12} {s // 4:>12}  float  sum  -1  100.0  1.0  {b:.2f}  0  100.0  1.0  {b:.2f}  0\n"
        for s, b in zip(sizes, busbw, strict=True)
    )
    return "$ ./build/all_reduce_perf -b 1M -e 1G -f 2 -g 8\n" + rows


def test_single_size_dip_in_a_flat_curve_is_info() -> None:
    r = result(load(_curve(102.0)), "scaling.allreduce")
    dip = next(f for f in r.evidence if f.label == "busbw") if r.evidence else None
    assert dip is not None
    assert "dips from 235 to 102 GB/s at 64.0 MiB only" in r.summary
    assert "algorithm or protocol" in r.summary
    assert "collapses" not in r.summary


def test_a_dip_while_the_curve_still_climbs_is_not_called_a_switch() -> None:
    r = result(load(_curve(60.0, before=130.0)), "scaling.allreduce")
    assert "collapses" in r.summary
    assert "dips" not in r.summary


LSPCI_COLUMN_0 = """$ sudo lspci -vvv -s 41:00.0
41:00.0 3D controller: NVIDIA Corporation GA100 [A100 PCIe 40GB] (rev a1)
Subsystem: NVIDIA Corporation Device 145f
Capabilities: [68] Express (v2) Endpoint, MSI 00
LnkCap: Port #0, Speed 16GT/s, Width x16, ASPM not supported
LnkSta: Speed 8GT/s (downgraded), Width x16 (ok)
LnkCap2: Supported Link Speeds: 2.5-16GT/s, Crosslink- Retimer+ 2Retimers+ DRS-
LnkCtl2: Target Link Speed: 8GT/s, EnterCompliance- SpeedDis-
Kernel driver in use: nvidia
"""


def test_lspci_fragment_at_column_0_with_lnkcap2_and_lnkctl2() -> None:
    cap = load(LSPCI_COLUMN_0)
    (device,) = cap.evidence.lspci  # type: ignore[union-attr]
    assert device.bus_id == "0000:41:00.0"
    assert (device.lnkcap_gts, device.lnksta_gts, device.speed_downgraded) == (16.0, 8.0, True)
    assert (device.lnkcap2_gts, device.lnkctl2_target_gts) == (16.0, 8.0)
    r = result(cap, "nccl.lspci-link")
    assert r.severity == "warn"
    assert "target speed is set to 8 GT/s (LnkCtl2)" in r.summary


def test_lnkctl2_at_the_device_maximum_is_an_idle_downclock_only() -> None:
    cap = load(LSPCI_COLUMN_0.replace("Target Link Speed: 8GT/s", "Target Link Speed: 16GT/s"))
    r = result(cap, "nccl.lspci-link")
    assert r.severity == "info"
    assert "LnkCtl2" not in r.summary


def _rocm_showtopo(kind: str) -> str:
    head = "       GPU0         GPU1         GPU2\n"
    rows = "".join(
        f"GPU{i}   " + "  ".join("0" if i == j else kind for j in range(3)) + "\n" for i in range(3)
    )
    return (
        "$ rocm-smi --showtopo\n"
        "=============== Link Type between two GPUs ===============\n"
        + head
        + rows
        + "GPU[0]          : (Topology) Numa Node: 0\n"
        "============= End of ROCm SMI Log =============\n"
    )


def test_rocm_showtopo_all_pcie_is_an_amd_box_without_infinity_fabric() -> None:
    r = result(load(_rocm_showtopo("PCIE")), "nvlink.state")
    assert r.severity == "info"
    assert "AMD GPUs without Infinity Fabric: every GPU pair is joined by PCIe" in r.summary


def test_rocm_showtopo_all_xgmi_passes() -> None:
    r = result(load(_rocm_showtopo("XGMI")), "nvlink.state")
    assert r.severity == "pass"
    assert "Infinity Fabric (XGMI) between all 3 GPU pairs" in r.summary


FLATTENED = """GPU Topology:
\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity
GPU0\t X \tSYS\tSYS\tSYS\t0-47\t0
GPU1\tSYS\t X \tSYS\tSYS\t0-47\t0
GPU2\tSYS\tSYS\t X \tSYS\t0-47\t0
GPU3\tSYS\tSYS\tSYS\t X \t0-47\t0

# nThread 1 nGpus 4 minBytes 1073741824 maxBytes 4294967296
# Using devices
""" + "".join(
    f"#  Rank  {i} Group  0 Pid   4242 on     vm1 device  {i} [0x0{i}] NVIDIA A100-SXM4-80GB\n"
    for i in range(4)
)


def test_all_sys_on_one_numa_node_is_not_blamed_on_the_socket_link() -> None:
    rows = (
        "  4294967296    1073741824     float     sum      -1   900000    4.77    7.16      0 "
        "  900000    4.77    7.16      0\n"
    )
    cap = load("$ ./build/all_reduce_perf -b 4G -e 4G -g 4\n" + FLATTENED + rows)
    r = result(cap, "scaling.allreduce")
    assert r.confidence == "low"
    basis = next(e.subject for e in r.evidence if e.label == "link model")
    assert basis is not None and "hidden by a hypervisor" in basis
    assert "cross-socket" not in r.summary
    assert not any("CPU interconnect (SYS)" in step for step in r.remediation)
    assert result(cap, "numa.cross-socket").severity == "info"

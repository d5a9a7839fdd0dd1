"""nccl-tests *_perf parser."""

from __future__ import annotations

from tests.importers.helpers import load, warnings_of

SINGLE_NODE = (
    "# nThread 1 nGpus 4 minBytes 1024 maxBytes 4194304 step: 4(factor) warmup iters: 5 "
    "iters: 20 agg iters: 1 validation: 1 graph: 0\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid   4242 on     node7 device  0 [0000:1a:00] NVIDIA A100-SXM4-40GB\n"
    "#  Rank  1 Group  0 Pid   4242 on     node7 device  1 [0000:1b:00] NVIDIA A100-SXM4-40GB\n"
    "#  Rank  2 Group  0 Pid   4242 on     node7 device  2 [0000:3d:00] NVIDIA A100-SXM4-40GB\n"
    "#  Rank  3 Group  0 Pid   4242 on     node7 device  3 [0000:3e:00] NVIDIA A100-SXM4-40GB\n"
    "#\n"
    "#                                                              out-of-place                "
    "       in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
    "time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
    "(us)  (GB/s)  (GB/s)\n"
    "        1024            64     float    none      -1    20.10    0.05    0.04    N/A    "
    "19.90    0.05    0.04    N/A\n"
    "       16384          1024     float    none      -1    22.40    0.73    0.55    N/A    "
    "22.00    0.74    0.56    N/A\n"
    "      262144         16384     float    none      -1    40.00    6.55    4.92    N/A    "
    "39.50    6.64    4.98    N/A\n"
    "     4194304        262144     float    none      -1    60.00   69.91   52.43    N/A    "
    "61.00   68.76   51.57    N/A\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 14.637\n"
    "#\n"
)


def test_single_node_run_with_command() -> None:
    cap = load("$ ./build/all_gather_perf -b 1K -e 4M -f 16 -g 4\n" + SINGLE_NODE)
    (run,) = cap.measurements.collectives
    assert (run.op, run.tool, run.backend) == ("all_gather", "nccl-tests", "nccl")
    assert (run.ranks, run.nodes, run.gpus) == (4, 1, [0, 1, 2, 3])
    assert run.avg_busbw_gbps == 14.637
    assert run.correct is True
    assert len(run.rows) == 8
    out = [r for r in run.rows if not r.in_place]
    inp = [r for r in run.rows if r.in_place]
    assert [r.size_bytes for r in out] == [1024, 16384, 262144, 4194304]
    assert (out[-1].time_us, out[-1].algbw_gbps, out[-1].busbw_gbps, out[-1].wrong) == (
        60.0,
        69.91,
        52.43,
        None,
    )
    assert inp[-1].busbw_gbps == 51.57
    peak = run.peak_busbw()
    assert peak is not None
    assert peak.busbw_gbps == 52.43
    assert not peak.in_place
    assert cap.gpu(2).bus_id == "0000:3d:00.0"  # type: ignore[union-attr]
    assert cap.gpu(2).name == "NVIDIA A100-SXM4-40GB"  # type: ignore[union-attr]
    assert run.source == "import:t0.txt"
    assert cap.origin.warnings == []


def test_stripped_hashes_and_unknown_op_with_redop_none() -> None:
    stripped = "\n".join(line.lstrip("#") for line in SINGLE_NODE.splitlines())
    cap = load(stripped)
    (run,) = cap.measurements.collectives
    assert run.op == "unknown"
    assert run.ranks == 4
    assert "rule out all_reduce" in warnings_of(cap)


def test_unknown_op_defaults_to_all_reduce_with_warning() -> None:
    rows = (
        "     8388608       2097152     float     sum      -1    300.1   27.95   41.93      0    "
        "299.0   28.06   42.08      0\n"
    )
    cap = load(rows)
    (run,) = cap.measurements.collectives
    assert run.op == "all_reduce"
    assert run.correct is True
    assert "assumed all_reduce" in warnings_of(cap)


def test_tag_output_prefixes_are_removed() -> None:
    text = (
        "[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   "
        "busbw #wrong     time   algbw   busbw #wrong\n"
        "[0]      2097152        524288     float     sum      -1[0]    600.5    3.49    6.55      "
        "0[0]     610.0    3.44    6.45      0\n"
        "[0]      4194304       1048576     float     sum      -1[0]    900.0    4.66    8.74      "
        "0[0]     905.5    4.63    8.69      0\n"
    )
    cap = load("$ mpirun --tag-output -np 16 ./all_reduce_perf -b 2M -e 4M\n" + text)
    (run,) = cap.measurements.collectives
    assert run.op == "all_reduce"
    assert [r.busbw_gbps for r in run.rows] == [6.55, 6.45, 8.74, 8.69]
    assert cap.origin.warnings == []


def test_old_format_without_root_column() -> None:
    text = (
        "# nThread 1 nGpus 2 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20 "
        "validation: 1\n"
        "#\n"
        "#                                                 out-of-place"
        "                    in-place\n"
        "#       size         count    type   redop     time   algbw   busbw  error     time   "
        "algbw   busbw  error\n"
        "           8             2   float     sum    10.50    0.00    0.00  0e+00    10.40    "
        "0.00    0.00  0e+00\n"
        "          64            16   float     sum    10.90    0.01    0.01  1e-07    10.80    "
        "0.01    0.01  0e+00\n"
    )
    cap = load("$ ./all_reduce_perf -b 8 -e 64 -g 2\n" + text)
    (run,) = cap.measurements.collectives
    assert [r.size_bytes for r in run.rows] == [8, 8, 64, 64]
    assert [r.wrong for r in run.rows] == [0, 0, None, 0]
    assert run.correct is True


def test_multi_node_run_keeps_no_gpu_facts() -> None:
    text = (
        "#  Rank  0 Group  0 Pid  100 on nodeA device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n"
        "#  Rank  1 Group  0 Pid  101 on nodeB device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n"
        "    67108864      16777216     float     sum      -1    900.0   74.57  74.57      0    "
        "890.0   75.40   75.40      0\n"
    )
    cap = load("$ mpirun -np 2 ./all_reduce_perf\n" + text)
    (run,) = cap.measurements.collectives
    assert (run.ranks, run.nodes, run.gpus) == (2, 2, [])
    assert cap.gpus == []


def test_same_device_number_in_every_process() -> None:
    text = (
        "#  Rank  0 Group  0 Pid  100 on nodeA device  0 [0000:18:00] NVIDIA L4\n"
        "#  Rank  1 Group  0 Pid  101 on nodeA device  0 [0000:2a:00] NVIDIA L4\n"
        "        1024           256     float     sum      -1    15.00    0.07    0.07      0    "
        "14.90    0.07    0.07      0\n"
    )
    cap = load("$ ./all_reduce_perf\n" + text)
    assert cap.gpus == []
    assert "per-process CUDA_VISIBLE_DEVICES" in warnings_of(cap)


def test_two_runs_in_one_paste_and_wrong_values() -> None:
    bad = (
        SINGLE_NODE.replace("    N/A    \n", "")
        .replace("60.00   69.91   52.43    N/A", "60.00   69.91   52.43      3")
        .replace("# Out of bounds values : 0 OK", "# Out of bounds values : 3 FAILED")
    )
    cap = load("$ ./all_gather_perf -g 4\n" + SINGLE_NODE + "$ ./reduce_scatter_perf -g 4\n" + bad)
    first, second = cap.measurements.collectives
    assert (first.op, second.op) == ("all_gather", "reduce_scatter")
    assert second.correct is False

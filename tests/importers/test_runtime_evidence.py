# ruff: noqa: E501
"""Run-time evidence: NCCL RAS, the PyTorch NCCL watchdog and flight recorder, NCCL Inspector
and P2P data-integrity outputs. Small inputs (each test fails without its piece), then every
real file of ../shared/realdata-evidence/{nccl-ras,nccl-inspector,p2p-corruption} with the
diagnosis its note states (skipped when the folder is absent)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pcidoc.collect.importers import import_texts, scan
from pcidoc.doctor import run
from pcidoc.model.capture import Capture
from pcidoc.model.report import CheckResult, ReportSource
from tests.conftest import REALDATA, read_realdata

EVIDENCE = REALDATA.parent / "realdata-evidence"


def _import(text: str, name: str = "paste.txt") -> Capture:
    scan.RAISE_PARSER_ERRORS = True
    try:
        return import_texts([(name, text)]).capture
    finally:
        scan.RAISE_PARSER_ERRORS = False


def _check(capture: Capture, check_id: str) -> CheckResult:
    report = run(capture, ReportSource(kind="import"), generated_at="2026-01-01T00:00:00Z")
    result = report.check(check_id)
    assert result is not None
    return result


def _text(result: CheckResult) -> str:
    return " ".join([result.summary, *result.remediation, *(e.text() for e in result.evidence)])


# ------------------------------------------------------------------------- small inputs

RAS_BEHIND = """NCCL version 2.27.5 compiled with CUDA 12.8
Job summary
===========

  Nodes  Processes         GPUs  Processes     GPUs
(total)   per node  per process    (total)  (total)
      2          4            1          8        8

Communicators... (0.00s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         2         4         8         8   RUNNING  MISMATCH

Warnings
========

#0-0 (0123456789abcdef) MISMATCH
  Communicator ranks have different AllReduce operation counts
  7 ranks have launched up to operation 120
  Rank 5 has launched up to operation 119 -- GPU 1 managed by process 4242 on node nodeB
"""


def test_ras_text_mismatch_names_the_rank_behind_with_host_gpu_and_bus_id() -> None:
    log = "nodeB:4242:4242 [1] NCCL INFO comm 0x1 rank 5 nranks 8 cudaDev 1 busId 1c000 - Init COMPLETE\n"
    capture = _import(RAS_BEHIND + log)
    report = capture.evidence.nccl_ras[0]  # type: ignore[union-attr]
    [rank] = report.ranks
    assert (rank.rank, rank.gpu, rank.pid, rank.host, rank.state) == (5, 1, 4242, "nodeB", "behind")
    result = _check(capture, "nccl.ras")
    assert result.severity == "warn"
    assert "behind: rank 5 (GPU 1, bus 0000:1c:00.0, process 4242, on node nodeB)" in result.summary


def test_ras_text_minority_ahead_is_not_called_the_straggler() -> None:
    text = RAS_BEHIND.replace(
        "7 ranks have launched up to operation 120", "7 ranks have launched up to operation 118"
    )
    result = _check(_import(text), "nccl.ras")
    assert "are the ones AHEAD" in result.summary
    assert "7 ranks behind" in result.summary


def test_ras_json_dead_and_missing_ranks() -> None:
    data = {
        "nccl_version": "2.29.1",
        "communicators_count": 1,
        "communicators": [
            {
                "hash": "0xae94",
                "size": 3,
                "missing_ranks_count": 2,
                "ranks": [
                    {
                        "rank": 0,
                        "host": "10.0.0.1",
                        "pid": 11,
                        "cuda_dev": 0,
                        "nvml_dev": 0,
                        "collective_counts": {"AllReduce": 9},
                    },
                ],
                "missing_ranks": [
                    {
                        "rank": 1,
                        "host": "10.0.0.2",
                        "pid": 12,
                        "cuda_dev": 3,
                        "nvml_dev": 3,
                        "status": {"unresponsive": True, "considered_dead": False},
                    },
                    {
                        "rank": 2,
                        "host": "10.0.0.2",
                        "pid": 13,
                        "cuda_dev": 4,
                        "nvml_dev": 4,
                        "status": {"unresponsive": True, "considered_dead": True},
                    },
                ],
            }
        ],
        "ras": {"collection_time_sec": 0.0, "timeouts_count": 0},
    }
    capture = _import(json.dumps(data), "ras.json")
    states = {(r.rank, r.state, r.gpu, r.host) for r in capture.evidence.nccl_ras[0].ranks}  # type: ignore[union-attr]
    assert states == {(1, "unresponsive", 3, "10.0.0.2"), (2, "dead", 4, "10.0.0.2")}
    result = _check(capture, "nccl.ras")
    assert result.severity == "fail"
    assert "dead: rank 2 (GPU 4, process 13, on node 10.0.0.2)" in result.summary


def test_ras_text_network_section_names_the_missing_process() -> None:
    text = (
        "NCCL version 2.24.3 compiled with CUDA 12.6\n\nJob summary\n===========\n\n"
        "Gathering data about the RAS network (timeout 5s)... obtained a result in 5.01s\n"
        " Warning: missing data from 1 process (received from 7, expected 8)\n"
        "  The missing process:\n"
        "  Process 9123 on node gpu-17 managing GPU 6\n\n"
        "Communicators... (0.00s)\n=============\n"
    )
    capture = _import(text)
    [rank] = capture.evidence.nccl_ras[0].ranks  # type: ignore[union-attr]
    assert (rank.pid, rank.host, rank.gpu, rank.state) == (9123, "gpu-17", 6, "missing")
    result = _check(capture, "nccl.ras")
    assert result.severity == "fail" and "process 9123 (GPU 6, on node gpu-17)" in result.summary


WATCHDOG = """\
[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLGATHER, NumelIn=8, NumelOut=64, Timeout(ms)=1800000) ran for 1800042 milliseconds before timing out.
[rank0]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 0] Timeout at NCCL work: 42, last enqueued NCCL work: 42, last completed NCCL work: 41.
[rank3]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 3] Timeout at NCCL work: 41, last enqueued NCCL work: 41, last completed NCCL work: 40.
"""


def test_ras_json_pasted_after_a_prompt() -> None:
    data = {
        "nccl_version": "2.29.1",
        "communicators": [
            {
                "hash": "0x1",
                "size": 2,
                "ranks": [],
                "missing_ranks": [
                    {
                        "rank": 1,
                        "host": "h2",
                        "pid": 5,
                        "cuda_dev": 2,
                        "status": {"unresponsive": True, "considered_dead": False},
                    }
                ],
            }
        ],
    }
    text = "$ ncclras -f json\n" + json.dumps(data, indent=2) + "\n$ \n"
    capture = _import(text)
    [rank] = capture.evidence.nccl_ras[0].ranks  # type: ignore[union-attr]
    assert (rank.rank, rank.state, rank.gpu) == (1, "unresponsive", 2)


def test_watchdog_names_the_rank_that_never_enqueued_the_collective() -> None:
    capture = _import(WATCHDOG)
    by_rank = {w.rank: w for w in capture.evidence.nccl_watchdogs}  # type: ignore[union-attr]
    assert (by_rank[0].seq, by_rank[0].op, by_rank[0].last_completed) == (42, "ALLGATHER", 41)
    assert by_rank[3].last_enqueued == 41
    result = _check(capture, "nccl.watchdog")
    assert result.severity == "fail"
    assert "rank 3 never enqueued collective 42, which rank 0 wait" in result.summary


def test_watchdog_status_variants_of_newer_pytorch() -> None:
    text = (
        "[rank3]:[E227 16:30:43.526290891 ProcessGroupNCCL.cpp:1785] [PG ID 2 PG GUID 3 Rank 3] "
        "Exception (either an error or timeout) detected by watchdog at work: 32, last enqueued "
        "NCCL work: 32, last completed NCCL work: 31.\n"
        "[rank4]:[E703 15:37:17.178360488 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID "
        "0(default_pg) Rank 4] Received a dump signal due to a collective timeout from  rank 7 "
        "and we will try our best to dump the debug info. Last enqueued NCCL work: 30, last "
        "completed NCCL work: 30.This is most likely caused by incorrect usages of collectives\n"
    )
    capture = _import(text)
    got = {
        (w.rank, w.seq, w.last_enqueued, w.last_completed) for w in capture.evidence.nccl_watchdogs
    }  # type: ignore[union-attr]
    assert got == {(3, 32, 32, 31), (4, None, 30, 30)}
    result = _check(capture, "nccl.watchdog")
    assert result.severity == "fail"
    assert "rank 4 never enqueued collective 32" in result.summary


def test_watchdog_frozen_processes_and_periodic_status() -> None:
    frozen = (
        "[rank0]:[E ProcessGroupNCCL.cpp:1] [PG ID 0 PG GUID 0(default_pg) Rank 0] Received a "
        "dump signal due to a collective timeout from rank 1 and we will try our best to dump "
        "the debug info. Last enqueued NCCL work: -1, last completed NCCL work: -1.\n"
    )
    assert "frozen" in _check(_import(frozen), "nccl.watchdog").summary
    periodic = (
        "[rank0]:[I ProcessGroupNCCL.cpp:1] [PG 0 Rank 0] NCCL Work update periodically: last "
        "enqueued NCCL work: 5, last completed NCCL work: 5.\nNCCL version 2.21.5\n"
    )
    capture = import_texts([("p.txt", periodic)]).capture
    assert not (capture.evidence and capture.evidence.nccl_watchdogs)


def test_ras_ok_while_the_watchdog_timed_out_is_not_healthy() -> None:
    healthy = RAS_BEHIND.split("Warnings")[0].replace("RUNNING  MISMATCH", "RUNNING        OK")
    assert _check(_import(healthy), "nccl.ras").severity == "pass"
    result = _check(_import(healthy + "\n" + WATCHDOG), "nccl.ras")
    assert result.severity == "warn"
    assert "not healthy" in result.summary


def test_watchdog_rank_is_named_with_its_gpu_from_the_nccl_log() -> None:
    log = (
        "gpu-node-3:4242:4242 [2] NCCL INFO comm 0x1 rank 3 nranks 8 cudaDev 2 busId 3b000 - "
        "Init COMPLETE\n"
    )
    result = _check(_import(WATCHDOG + log), "nccl.watchdog")
    assert "rank 3 (GPU 2, bus 0000:3b:00.0, on node gpu-node-3) never enqueued" in result.summary


def test_ras_collection_timeouts_are_not_a_healthy_report() -> None:
    text = RAS_BEHIND.split("Warnings")[0].replace("RUNNING  MISMATCH", "RUNNING        OK")
    text += "Warnings\n========\n\nTIMEOUT\n  Encountered 3 communication timeouts while gathering communicator data\n"
    result = _check(_import(text), "nccl.ras")
    assert result.severity == "warn" and "timed out 3" in result.summary


def test_flight_recorder_dumps_name_the_rank_behind() -> None:
    def dump(rank: int, last: int) -> dict[str, Any]:
        return {
            "version": "2.4",
            "rank": rank,
            "entries": [
                {
                    "collective_seq_id": seq,
                    "profiling_name": "nccl:all_reduce",
                    "state": "completed" if seq < last else "scheduled",
                    "process_group": ["0", "default_pg"],
                }
                for seq in range(1, last + 1)
            ],
        }

    capture = _import(json.dumps([dump(0, 10), dump(1, 10), dump(2, 7)]), "fr.json")
    result = _check(capture, "nccl.watchdog")
    assert result.severity == "fail"
    assert "rank 2 at 7" in result.summary


def test_inspector_judges_large_messages_against_the_link_model_only() -> None:
    from tests.builders import machine

    def record(size: int, busbw: float) -> dict[str, Any]:
        return {
            "header": {"id": "0x1", "rank": 0, "n_ranks": 2, "nnodes": 1},
            "metadata": {"inspector_output_format_version": "v4.0", "hostname": "h"},
            "coll_perf": {
                "coll": "AllReduce",
                "coll_msg_size_bytes": size,
                "coll_exec_time_us": 10,
                "coll_busbw_gbs": busbw,
            },
        }

    lines = "\n".join(json.dumps(r) for r in (record(1 << 30, 3.0), record(4096, 0.01)))
    imported = _import(lines, "inspector.log")
    records = imported.evidence.inspector  # type: ignore[union-attr]
    assert [r.msg_size_bytes for r in records] == [1 << 30, 4096]
    capture = machine(2, link="NV12")
    capture.evidence = imported.evidence
    result = _check(capture, "nccl.inspector")
    assert result.severity == "fail"
    assert "AllReduce 1.0 GiB" in result.summary or "AllReduce 1.07 GB" in result.summary
    assert "4096" not in result.summary and "4 KiB" not in result.summary  # latency-bound
    assert _check(imported, "nccl.inspector").severity == "info"  # no link model: not judged


def test_inspector_p2p_json_record() -> None:
    record = {
        "header": {"id": "0x2", "rank": 1, "n_ranks": 2, "nnodes": 1, "comm_name": "PP 0"},
        "metadata": {"inspector_output_format_version": "v5.1", "hostname": "n1"},
        "p2p_perf": {
            "p2p": "Send",
            "p2p_sn": 3,
            "p2p_peer": 0,
            "p2p_msg_size_bytes": 1 << 29,
            "p2p_exec_time_us": 1154,
            "p2p_algobw_gbs": 465.0,
            "p2p_busbw_gbs": 465.0,
        },
    }
    [got] = _import(json.dumps(record), "p2p.json").evidence.inspector  # type: ignore[union-attr]
    assert (got.collective, got.p2p, got.busbw_gbps, got.comm) == ("Send", True, 465.0, "PP 0")


def test_inspector_prometheus_size_buckets() -> None:
    from pcidoc.collect.importers.nccl_inspector import size_bytes

    assert size_bytes("4-5GB") == 4_000_000_000
    assert size_bytes("512-513MB") == 512_000_000
    assert size_bytes("1KB") == 1000


def test_pytorch_session_peer_copy_zeros_with_staged_copy_right() -> None:
    session = """>>> import torch
>>> x = torch.tensor([3, 5], device=0)
>>> x.to(1)
tensor([0, 0], device='cuda:1')
>>> x.cpu().to(1) if False else x.to('cpu').to(1)
tensor([3, 5], device='cuda:1')
"""
    capture = _import(session)
    [item] = capture.evidence.p2p_integrity  # type: ignore[union-attr]
    assert (item.ok, item.staged_ok, item.dst) == (False, True, 1)
    result = _check(capture, "p2p.integrity")
    assert result.severity == "fail"
    assert "staged through the CPU arrived intact" in result.summary


def test_pytorch_comparison_of_data_moved_between_gpus() -> None:
    session = """>>> import torch
>>> a = torch.randn(1000, device="cuda:0")
>>> b = a.to("cuda:1")
>>> torch.equal(a.cpu(), b.cpu())
False
>>> torch.equal(a.cpu(), a.to("cpu").to("cuda:1").cpu())
True
"""
    [item] = _import(session).evidence.p2p_integrity  # type: ignore[union-attr]
    assert (item.ok, item.staged_ok) == (False, True)
    # A comparison that involves no GPU move is not evidence.
    plain = ">>> import torch\n>>> x = torch.ones(3)\n>>> torch.equal(x, x)\nTrue\n"
    capture = import_texts([("plain.txt", plain + "NCCL version 2.21.5\n")]).capture
    assert not (capture.evidence and capture.evidence.p2p_integrity)


def test_pytorch_outputs_that_are_not_plain_numbers_give_no_verdict() -> None:
    session = (
        ">>> import torch\n>>> m = torch.tensor([[1, 2], [3, 4]], device=0)\n>>> m.to(1)\n"
        "tensor([[1, 2],\n        [3, 4]], device='cuda:1')\n"
        ">>> b = torch.tensor([True, False], device=0)\n>>> b.to(1)\n"
        "tensor([ True, False], device='cuda:1')\nNCCL version 2.21.5\n"
    )
    capture = import_texts([("s.txt", session)]).capture
    assert not (capture.evidence and capture.evidence.p2p_integrity)


def test_pytorch_session_with_right_values_passes() -> None:
    capture = _import(
        ">>> x = torch.tensor([3, 5], device=0)\n>>> x.to(1)\ntensor([3, 5], device='cuda:1')\n"
    )
    assert _check(capture, "p2p.integrity").severity == "pass"


# -------------------------------------------------------------------------- real files

EXPECTED: dict[str, tuple[dict[str, set[str]], dict[str, str]]] = {
    "nccl-ras/ras-text-2node-10proc-outlier-node-incomplete-nocomm-255-missing-ras-bug-nccl-1762.txt": (
        {"nccl.ras": {"fail"}},
        {"nccl.ras": "process 60004"},
    ),
    "nccl-ras/ras-text-4node-32rank-allgather-mismatch-640-vs-641-ranks-12-13-nccl-1911.txt": (
        {"nccl.ras": {"warn"}},
        {"nccl.ras": "ahead"},
    ),
    "nccl-ras/watchdog-allreduce-seqnum7-timeout-2gpu-same-numa-p2p-use-cuda-memcpy-nccl-1509.txt": (
        {"nccl.watchdog": {"fail"}},
        {"nccl.watchdog": "ALLREDUCE SeqNum=7"},
    ),
    "nccl-inspector/inspector-json-v4.0-allreduce-16gib-8rank-1node-busbw-485-doc-example-nccl.txt": (
        {"nccl.inspector": {"pass"}},
        {},
    ),
    "nccl-inspector/inspector-json-v4.0-verbose-reducescatter-2gib-kernel-gpu-timing-doc-example-nccl.txt": (
        {"nccl.inspector": {"pass"}},
        {},
    ),
    "nccl-inspector/inspector-prometheus-v5.1-nvl72-tray-allreduce-678gbps-p2p-send-465gbps-doc-example-nccl.txt": (
        {"nccl.inspector": {"pass"}},
        {},
    ),
    "nccl-inspector/profiler-example-plugin-chrome-trace-allreduce-2gpu-net-proxy-events-doc-example-nccl.txt": (
        {"nccl.inspector": {"skip"}},
        {"nccl.inspector": "timings, not bandwidth"},
    ),
    "p2p-corruption/a100x2-pcie-separate-root-complexes-iommu-groups-shuffle-corrupt-16eib-alloc-rapidsmpf-1128.txt": (
        {"p2p.integrity": {"warn"}},
        {"p2p.integrity": "iommu"},
    ),
    "p2p-corruption/a6000-tensor-to-peer-gpu-zeros-host-staged-ok-iommu-off-fixed-pytorch-84803.txt": (
        {"p2p.integrity": {"fail"}},
        {"p2p.integrity": "staged through the cpu arrived intact"},
    ),
    "p2p-corruption/patched-p2p-simplep2p-test-passed-6.26gbps-after-vt-d-disabled-tinygrad-30.txt": (
        {"p2p.integrity": {"pass"}},
        {},
    ),
    "p2p-corruption/rtx4090x2-driver-525.60-tensor-to-cuda1-zeros-pytorch-106474.txt": (
        {"p2p.integrity": {"fail"}},
        {"p2p.integrity": "NCCL_P2P_DISABLE=1"},
    ),
    "p2p-corruption/rtx4090x2-patched-p2p-simplep2p-verification-error-nan-aikitoria-8.txt": (
        {"p2p.integrity": {"fail"}},
        {"p2p.integrity": "nan"},
    ),
}
KINDS = ("nccl-ras", "nccl-inspector", "p2p-corruption")
QUIET = ("nccl.ras", "nccl.watchdog", "nccl.inspector", "p2p.integrity")


def _files() -> list[str]:
    if not EVIDENCE.is_dir():
        return []
    return sorted(
        str(p.relative_to(EVIDENCE)) for kind in KINDS for p in (EVIDENCE / kind).glob("*.txt")
    )


@pytest.mark.parametrize("relpath", _files())
def test_runtime_evidence_file_gets_its_diagnosis(relpath: str) -> None:
    capture = _import(read_realdata("../realdata-evidence/" + relpath), relpath.split("/")[-1])
    report = run(
        capture, ReportSource(kind="import", path=relpath), generated_at="2026-01-01T00:00:00Z"
    )
    verdicts, words = EXPECTED.get(relpath, ({}, {}))
    for check_id in QUIET:  # the other run-time checks stay quiet on this file
        result = report.check(check_id)
        assert result is not None
        allowed = verdicts.get(check_id, {"skip"})
        assert result.severity in allowed, (relpath, check_id, result.severity, result.summary)
    for check_id, word in words.items():
        assert word.lower() in _text(report.check(check_id)).lower(), (relpath, check_id)  # type: ignore[arg-type]


def test_every_runtime_expectation_names_a_file() -> None:
    files = set(_files())
    if not files:
        pytest.skip("realdata-evidence not present")
    assert set(EXPECTED) == files


def test_redaction_removes_the_node_names_ras_prints() -> None:
    from pcidoc.collect.capture import redact_capture

    text = RAS_BEHIND.replace(
        "Warnings\n", "The outlier node:\n  Node nodeB running processes 4242\n\nWarnings\n"
    ).replace("nodeB", "gpu-node-7")
    capture = _import(text)
    assert capture.evidence.nccl_ras[0].outliers[0].host == "gpu-node-7"  # type: ignore[union-attr]
    assert "gpu-node-7" not in redact_capture(capture).model_dump_json()

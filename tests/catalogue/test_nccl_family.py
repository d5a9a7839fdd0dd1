"""The NCCL, InfiniBand verbs and GPUDirect RDMA families need more than their per-entry
examples: lines a structured reader owns when they carry NCCL's prefix and the catalogue matches
anywhere else (``reader_shape``), other names of a table's rows (``aliases``), every looked-up
value in a verdict's detail, markers inside other markers, and the checks that report them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pcidoc import catalogue
from pcidoc.collect.importers import import_texts
from pcidoc.doctor.runner import run
from pcidoc.model.report import ReportSource
from tests.catalogue.pasted import findings

SHM_BARE = "Error while creating shared memory segment /dev/shm/nccl-Xb2mO1 (size 9637888)"
SHM_NCCL = f"n1:5:5 [0] NCCL WARN {SHM_BARE}"
P2P_BARE = "Cuda failure 217 'peer access is not supported between these two devices'"


def test_a_line_the_nccl_log_reader_owns_is_left_to_it_when_it_has_nccls_prefix() -> None:
    assert catalogue.match_line(SHM_NCCL) is None
    bare = catalogue.match_line(SHM_BARE)
    assert bare is not None and not bare.mention
    assert bare.entry.id == "nccl.shm.segment-failed"
    # the same line after PyTorch's "Last error:" on the line before it
    scan = catalogue.scan(["Last error:", SHM_BARE])
    assert [h.id for h in scan.hits] == ["nccl.shm.segment-failed"]


@pytest.mark.parametrize(
    ("text", "check_id"),
    [(SHM_NCCL, "nccl.shm"), (f"n1:5:5 [0] NCCL WARN {P2P_BARE}", "nccl.transport")],
)
def test_an_owned_line_with_nccls_prefix_is_reported_once(text: str, check_id: str) -> None:
    found = findings(text, check_id)
    assert len([f for f in found if f[0] in ("warn", "fail")]) == 1, found


@pytest.mark.parametrize(
    ("text", "check_id"),
    # Without NCCL's prefix, CUDA's 217 is the CUDA family's line (any program prints it).
    [(SHM_BARE, "nccl.shm"), (P2P_BARE, "log.signatures")],
)
def test_an_owned_line_without_nccls_prefix_is_a_diagnosis_of_the_same_check(
    text: str, check_id: str
) -> None:
    ((severity, summary),) = findings(text, check_id)
    assert severity == "fail", summary


def test_a_row_is_found_by_its_aliases() -> None:
    assert catalogue.row("nccl_result", "2") is catalogue.row("nccl_result", "ncclSystemError")
    assert catalogue.row("nccl_result", "unhandled system error") is catalogue.row(
        "nccl_result", "2"
    )
    assert catalogue.row("ibv_wc_status", "transport retry counter exceeded") is (
        catalogue.row("ibv_wc_status", "12")
    )
    assert catalogue.row("nccl_result", "ncclNoSuchError") is None


def test_an_alias_that_names_two_rows_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text(
        '[tables.t]\n"1" = { name = "a", aliases = ["x"] }\n"2" = { name = "b", aliases = ["x"] }\n'
    )
    with pytest.raises(catalogue.CatalogueError, match="alias"):
        catalogue.catalogue(tmp_path)


def test_a_reader_shape_needs_a_reader(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text(
        '[[entry]]\nid = "x"\ntitle = "t"\nmarkers = ["m"]\npattern = "m"\nseverity = "warn"\n'
        'meaning = "m"\nfix = "f"\nsource = "s"\nreader_shape = "nccl"\n'
    )
    with pytest.raises(catalogue.CatalogueError, match="reader_shape"):
        catalogue.catalogue(tmp_path)


@pytest.mark.parametrize(
    ("line", "result"),
    [
        ("RuntimeError: NCCL Error 2: unhandled system error", "ncclSystemError"),
        ("ncclRemoteError: A call failed possibly due to a network error.", "ncclRemoteError"),
        (
            "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
            "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3",
            "ncclUnhandledCudaError",
        ),
    ],
)
def test_ncclresult_lines_name_the_result_code(line: str, result: str) -> None:
    (hit,) = catalogue.scan([line]).hits
    verdict = catalogue.judge(hit)
    assert verdict is not None and verdict.severity == "fail"
    assert verdict.detail.endswith(f"= {result}"), verdict.detail
    assert verdict.detail.count("=") == 1  # the code and the text name one row once


def test_a_pytorch_traceback_gives_the_result_and_the_last_error() -> None:
    text = (
        "[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
        "remote process exited or there was a network error, NCCL version 2.20.5\n"
        "[rank1]: ncclRemoteError: A call failed possibly due to a network error or a remote "
        "process exiting prematurely.\n"
        "[rank1]: Last error:\n"
        "[rank1]: socketProgress: Connection closed by remote peer gpu-node1<45074>\n"
    )
    hits = catalogue.scan(text.splitlines()).hits
    assert [h.id for h in hits] == [
        "nccl.result.error",
        "nccl.result.error",
        "nccl.net.connection-closed",
    ]
    assert hits[2].rank == 1
    assert [s for s, _ in findings(text, "nccl.network")] == ["warn"]
    assert "fail" in [s for s, _ in findings(text, "log.signatures")]


def test_a_line_with_a_specific_last_error_is_claimed_by_the_specific_entry() -> None:
    line = (
        "node1: Test NCCL failure common.cu:1279 'unhandled system error (run with NCCL_DEBUG=INFO "
        "for details) / Call to ibv_reg_mr failed with error Cannot allocate memory'"
    )
    (hit,) = catalogue.scan([line]).hits
    assert hit.id == "ibverbs.no-memory"


def test_every_looked_up_value_is_in_the_detail() -> None:
    line = (
        "n1:1:2 [0] NCCL WARN NET/IB: Got completion from peer 10.0.0.2<4567> with "
        "status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129 hca mlx5_3"
    )
    (hit,) = catalogue.scan([line]).hits
    assert hit.nic == "mlx5_3"
    verdict = catalogue.judge(hit)
    assert verdict is not None
    assert verdict.detail == "status 12 = IBV_WC_RETRY_EXC_ERR; vendor err 129 = 0x81"
    assert "retry counter exceeded" in verdict.meaning  # the first row's meaning


def test_a_marker_inside_another_marker_still_selects_its_entries() -> None:
    # "ibv_reg" (registration entries) and "ibv_" (the generic verbs entry) start at the same
    # place; "Failed to open lib" covers the start of "libnvidia-ml".
    hit = catalogue.match_line(
        "n1:1:1 [0] NCCL WARN Call to ibv_reg_mr failed with error Invalid argument"
    )
    assert hit is not None and hit.entry.id == "nccl.net-ib.verbs-call-failed"
    hit = catalogue.match_line("n1:1:1 [0] NCCL WARN Failed to open libnvidia-ml.so.1")
    assert hit is not None and hit.entry.id == "nccl.init.nvml-failed"


@pytest.mark.parametrize(
    "line",
    [
        "n1:5:5 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal "
        "implementation",
        "n1:5:5 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network "
        "plugin.",
        "n1:5:5 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0",
        "n1:5:5 [0] NCCL INFO NET/IB : No device found.",
        "n1:5:5 [0] NCCL INFO cudaDriverVersion 12020",
    ],
)
def test_routine_nccl_lines_never_alarm(line: str) -> None:
    scan = catalogue.scan([line])
    assert scan.hits and not scan.faults
    capture = import_texts([("paste.txt", line)]).capture
    report = run(capture, ReportSource(kind="import", path="paste.txt"), generated_at="x")
    assert report.worst not in ("warn", "fail"), [
        (c.id, c.summary) for c in report.checks if c.severity in ("warn", "fail")
    ]


def test_a_plugin_that_exists_but_misses_a_library_is_not_benign() -> None:
    line = (
        "n1:5:5 [0] NCCL INFO NET/Plugin : dlerror=libfabric.so.1: cannot open shared object "
        "file: No such file or directory No plugin found (libnccl-net.so), using internal "
        "implementation"
    )
    hit = catalogue.match_line(line)
    assert hit is not None and hit.entry.id == "nccl.plugin.load-failed"


def test_the_cause_leads_over_the_nccl_result_that_carries_it() -> None:
    # PyTorch prints the NCCL result first and the cause after "Last error:".
    text = (
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
        "cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"
        "ncclUnhandledCudaError: Call to CUDA function failed.\n"
        "Last error:\n"
        "Cuda failure 'peer access is not supported between these two devices'\n"
    )
    assert catalogue.entry("nccl.result.error").carrier  # type: ignore[union-attr]
    assert not catalogue.entry("cuda.peer-access-unsupported").carrier  # type: ignore[union-attr]
    found = findings(text, "log.signatures")
    assert [s for s, _ in found] == ["fail", "fail"]
    assert found[0][1].startswith("GPUs cannot reach each other's memory (CUDA 217")
    assert found[1][1].startswith("NCCL call failed")

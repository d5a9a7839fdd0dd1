"""The real hung and failed jobs of ../shared/realdata-evidence, explained with the rank their
threads concluded (each file's ``# note:`` header and INDEX.md say what was concluded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pcidoc.explain import explain_paths

EVIDENCE = Path(__file__).resolve().parents[2].parent / "shared" / "realdata-evidence"


def corpus(name: str) -> str:
    path = EVIDENCE / name
    if not path.is_file():
        pytest.skip("../shared/realdata-evidence is not beside this checkout")
    return str(path)


def test_ras_names_the_process_that_stopped_answering() -> None:
    # NCCL #1762: "trust the per-process INCOMPLETE line (process 60004 is not answering)":
    # rank 1, GPU 0 of process 60004 on node 10.4.109.13. Group #2's 255 missing ranks are
    # RAS's own bug and name no rank.
    result = explain_paths(
        [
            corpus(
                "nccl-ras/ras-text-2node-10proc-outlier-node-incomplete-nocomm-255-missing-ras-"
                "bug-nccl-1762.txt"
            )
        ]
    )
    culprit = result.culprit
    assert culprit is not None
    assert (culprit.rank, culprit.host, culprit.cause) == (1, "10.4.109.13", "hang")
    assert culprit.device == 0
    assert result.exit_code == 2


def test_ras_lists_the_ranks_ahead_not_the_stragglers() -> None:
    # NCCL #1911: 30 ranks launched AllGather up to 640, ranks 12 and 13 up to 641. "Ranks 12
    # and 13 are NOT the stragglers": the other 30 never launched 641, and RAS does not list
    # them. No single rank can be named, and never 12 or 13.
    result = explain_paths(
        [
            corpus(
                "nccl-ras/ras-text-4node-32rank-allgather-mismatch-640-vs-641-ranks-12-13-"
                "nccl-1911.txt"
            )
        ]
    )
    culprit = result.culprit
    assert culprit is not None and culprit.rank is None and culprit.cause == "hang"
    assert "30 rank(s) stopped at operation 640" in culprit.detail
    assert all(c["rank"] not in (12, 13) or c["cause"] != "hang" for c in result.candidates)
    assert result.exit_code == 1


def test_one_ranks_watchdog_names_the_stuck_collective() -> None:
    # NCCL #1509: rank 1's watchdog timed out on ALLREDUCE SeqNum=7 (last completed 6); only
    # its log was posted, so rank 0's side is unknown (said, with a low confidence).
    result = explain_paths(
        [
            corpus(
                "nccl-ras/watchdog-allreduce-seqnum7-timeout-2gpu-same-numa-p2p-use-cuda-"
                "memcpy-nccl-1509.txt"
            )
        ]
    )
    culprit = result.culprit
    assert culprit is not None and (culprit.rank, culprit.cause) == (1, "hang")
    assert culprit.collective == "all_reduce"
    assert "SeqNum=7" in culprit.detail and "last completed 6" in culprit.detail
    assert result.confidence <= 0.5
    assert any("rank(s) 0" in note for note in result.notes)
    assert result.evidence[0].ref.line == 4


def test_an_nccl_shared_memory_failure_is_a_transport_cause() -> None:
    # NCCL #290: posix_fallocate failed on /dev/shm in a docker container (64 MB default):
    # the WARN line's process is rank 1 (its Ring line "1[1b000] -> 2[3d000]").
    result = explain_paths(
        [
            corpus(
                "nccl-log/docker-4gpu-horovod-direct-shared-memory-posix-fallocate-no-space-"
                "dev-shm-nccl-290.txt"
            )
        ]
    )
    culprit = result.culprit
    assert culprit is not None
    assert (culprit.rank, culprit.host, culprit.cause) == (1, "gpu2-ru7", "transport")


def test_no_other_real_output_makes_a_culprit_up() -> None:
    """Every other file of the corpus is explained without an error, and names no culprit
    rank (none of them is a failed job with ranks)."""
    if not EVIDENCE.is_dir():
        pytest.skip("../shared/realdata-evidence is not beside this checkout")
    concluded = {"1762", "1911", "1509", "nccl-290"}
    for path in sorted(EVIDENCE.glob("*/*.txt")):
        if any(tag in path.name for tag in concluded):
            continue
        result = explain_paths([str(path)])
        named = result.culprit.rank if result.culprit else None
        assert named is None, (path.name, result.summary)

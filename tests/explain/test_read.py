"""Who wrote a line: per-rank files, torchrun's log folder, node folders, NCCL prefixes."""

from __future__ import annotations

from pathlib import Path

from pcidoc.explain.gather import gather
from pcidoc.explain.ranks import build_views


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_per_rank_files_and_torchruns_log_folder(tmp_path: Path) -> None:
    job = tmp_path / "job"
    # torchrun --log-dir: attempt_0/<local rank>/stderr.log, lines without any prefix.
    _write(
        job / "node-b7" / "logs" / "abc_1" / "attempt_0" / "1" / "stderr.log",
        "2026-01-05 10:00:00,100 INFO step 1/4 loss 0.2\n"
        "[rank5]: RuntimeError: Timed out waiting 3000ms for recv operation to complete\n",
    )
    _write(job / "node-b7" / "logs" / "rank_6.log", "2026-01-05 10:00:00,100 INFO step 2/4\n")
    views = build_views(gather([str(job)]))
    assert views[5].host == "node-b7" and views[5].local_rank == 1
    assert [e.kind for e in views[5].errors] == ["timeout"]
    assert views[5].steps.keys() == {1}  # the file's rank, from torch's [rank5]: in it
    assert views[6].host == "node-b7" and views[6].last_step == 2


def test_a_node_folder_that_is_not_a_host_name_is_not_taken_for_one(tmp_path: Path) -> None:
    _write(tmp_path / "job" / "logs" / "train.log", " 0: 2026-01-05 10:00:00,1 INFO step 1/2\n" * 5)
    views = build_views(gather([str(tmp_path / "job")]))
    assert views[0].host is None


def test_nccl_lines_give_the_device_and_bus_id(tmp_path: Path) -> None:
    _write(
        tmp_path / "nccl.log",
        "gpu-a01:4242:4300 [3] NCCL INFO comm 0x55d0 rank 3 nRanks 8 cudaDev 3 nvmlDev 3 "
        "busId 1c000 commId 0x1 - Init COMPLETE\n",
    )
    views = build_views(gather([str(tmp_path / "nccl.log")]))
    assert (views[3].host, views[3].device, views[3].bus_id) == ("gpu-a01", 3, "0000:1c:00.0")

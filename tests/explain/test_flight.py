"""Flight-recorder dumps: torch's real pickle and JSON read as plain data; a pickle that would
run code is refused before anything is loaded."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from pcidoc.errors import PcidocError
from pcidoc.explain.flight import load_pickle, read_dump

_MAKE_DUMPS = r"""
import os, sys, datetime
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[2], RANK="0", WORLD_SIZE="1",
                  TORCH_FR_BUFFER_SIZE="100")
import torch, torch.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
t = torch.ones(8)
dist.all_reduce(t); dist.all_reduce(t); dist.broadcast(t, 0)
c10d = torch._C._distributed_c10d
# The recorder marks a collective completed from another thread, after the call returned: wait
# (bounded) until it shows all three, so the dumps never catch the last one in flight.
import time
from pcidoc.explain.flight import read_dump
deadline = time.monotonic() + 60
while read_dump(c10d._dump_fr_trace_json(), "t.json")[0].last_completed != 3:
    if time.monotonic() > deadline:
        raise SystemExit("the flight recorder never marked the third collective completed")
    time.sleep(0.01)
open(os.path.join(sys.argv[1], "nccl_trace_rank_0"), "wb").write(c10d._dump_fr_trace())
open(os.path.join(sys.argv[1], "trace_rank_0.json"), "wb").write(c10d._dump_fr_trace_json())
dist.destroy_process_group()
"""


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pickle and a JSON dump written by torch's flight recorder (gloo, one rank)."""
    import socket

    pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("fr")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    subprocess.run(
        [sys.executable, "-c", _MAKE_DUMPS, str(folder), str(port)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return folder


def test_torchs_pickle_dump_is_read_as_plain_data(dumps: Path) -> None:
    ranks = read_dump((dumps / "nccl_trace_rank_0").read_bytes(), "nccl_trace_rank_0")
    assert len(ranks) == 1
    rank = ranks[0]
    assert rank.rank == 0  # from the file name: torch's dump does not say
    assert [(e["seq"], e["op"]) for e in rank.entries] == [
        (1, "all_reduce"),
        (2, "all_reduce"),
        (3, "broadcast"),
    ]
    assert rank.entries[0]["sizes"] == "[[8]]"
    assert rank.entries[0]["created_s"] > 1e9
    assert rank.last_enqueued == 3 and rank.last_completed == 3


def test_torchs_json_dump_gives_the_same_collectives(dumps: Path) -> None:
    # torch 2.13 writes pg_status numbers as strings in the JSON form.
    rank = read_dump((dumps / "trace_rank_0.json").read_bytes(), "trace_rank_0.json")[0]
    assert [e["op"] for e in rank.entries] == ["all_reduce", "all_reduce", "broadcast"]
    assert rank.last_enqueued == 3 and rank.last_completed == 3


class _Runs:
    """An object whose pickle calls os.system when loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        import os

        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_that_would_run_code_is_refused_unrun(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    payload = pickle.dumps({"entries": [_Runs(marker)], "version": "2.10"})
    with pytest.raises(PcidocError, match="refused"):
        read_dump(payload, "nccl_trace_rank_3")
    assert not marker.exists()
    # Even the loader alone, without the opcode check in front, resolves no global.
    with pytest.raises(PcidocError):
        load_pickle(pickle.dumps(_Runs(marker), protocol=0), "x")
    assert not marker.exists()


@pytest.mark.parametrize(
    "data",
    [b"\x80\x04\x95", b"\x80\x04K\x01", b"\x80" + b"\xff" * 32],
    ids=["truncated", "no-stop", "garbage"],
)
def test_damaged_pickles_are_one_line_errors(data: bytes) -> None:
    with pytest.raises(PcidocError, match=r"pickle|opcode"):
        read_dump(data, "dump")


def test_a_pickle_of_something_else_is_not_a_dump() -> None:
    with pytest.raises(PcidocError, match="not a flight-recorder dump"):
        read_dump(pickle.dumps({"hello": [1, 2, 3]}), "dump")

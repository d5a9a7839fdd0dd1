"""The line readers of ``pcidoc explain``: launcher prefixes, timestamps, what a line says.

The texts are as torch 2.13 (gloo), torchrun, srun, mpirun and Ray print them (taken from real
runs of tools/inject.py and from the real NCCL watchdog lines in the corpus)."""

from __future__ import annotations

import calendar

import pytest

from pcidoc.explain import lines as L

GLOO_TIMEOUT = (
    "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:"
    "78] Timed out waiting 3000ms for recv operation to complete"
)
GLOO_PEER = (
    "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
    "Connection closed by peer [127.0.0.1]:2954. This is typically caused by a remote worker "
    "crashing. Check the logs of the remote worker before reporting an error."
)
DETAIL = (
    "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
    "CollectiveFingerPrint(SequenceNumber=2, OpType=ALLREDUCE, TensorShape=[4], TensorDtypes="
    "Float, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu)), but Rank 1 is "
    "running collective: CollectiveFingerPrint(SequenceNumber=2, OpType=BROADCAST, TensorShape="
    "[4], TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu"
    ")).Collectives differ in the following aspects:   Op type: ALLREDUCEvs BROADCAST"
)


@pytest.mark.parametrize(
    ("lines", "style", "key"),
    [
        (["[default3]:hello"] * 5, "torchrun", ("local", 3)),
        ([" 3: hello", "12: x"] * 5, "srun", ("rank", 3)),
        (["[1234,5]<stderr>:hello"] * 5, "mpi", ("rank", 5)),
        (["(RayTrainWorker pid=42, ip=10.0.0.7) hello"] * 5, "ray", ("pid", (42, "10.0.0.7"))),
    ],
)
def test_each_launcher_prefix_is_recognised(
    lines: list[str], style: str, key: tuple[str, object]
) -> None:
    found = L.detect_style(lines)
    assert found is not None and found.name == style
    assert L.split_prefix(lines[0], found)[0] == key


def test_torchs_rank_prefix_is_not_a_launcher_prefix() -> None:
    # torch writes [rank3]: itself (global rank); only torchrun's [default3]: is a local rank.
    assert L.detect_style(["[rank3]: Traceback (most recent call last):"] * 9) is None
    assert L.torch_rank("[rank3]: Traceback") == (3, "Traceback")


def test_a_few_numbered_lines_are_not_srun_output() -> None:
    lines = ["1: first point", "2: second point", "some prose", "more prose", "and more"] * 3
    assert L.detect_style(lines) is None


def _epoch(y: int, mo: int, d: int, h: int, mi: int, s: int) -> float:
    return float(calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)))


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("2026-11-29 05:09:48,553 INFO step 3", _epoch(2026, 11, 29, 5, 9, 48) + 0.553),
        ("2026-11-29T05:09:48.5 kernel: x", _epoch(2026, 11, 29, 5, 9, 48) + 0.5),
        ("  time      : 2026-11-29_05:08:43", _epoch(2026, 11, 29, 5, 8, 43)),
        (
            "[E1129 05:10:00.223430115 ProcessGroupGloo.cpp:67] x",
            _epoch(2026, 11, 29, 5, 10, 0) + 0.22343,
        ),
        (
            "W1129 05:06:03.022000 7674 torch/distributed/run.py:874]",
            _epoch(2026, 11, 29, 5, 6, 3) + 0.022,
        ),
        ("step 3 done", None),
    ],
)
def test_timestamps(message: str, expected: float | None) -> None:
    got = L.stamp(message, 2026)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected, abs=1e-6)


def test_progress_reads_the_step_and_the_phases() -> None:
    reading = L.read_progress("step 3/10 loss 0.41 compute_ms 42.7 allreduce_ms 6.0")
    assert reading is not None
    assert reading.data == {"step": 3, "total": 10, "compute": 42.7, "comm": 6.0}
    deepspeed = L.read_progress("global_step=120, fwd: 10.0ms, bwd_allreduce: 0.5 s")
    assert deepspeed is not None and deepspeed.data["step"] == 120
    assert deepspeed.data["compute"] == 10.0 and deepspeed.data["comm"] == 500.0
    assert L.read_progress("error at step 3: timed out") is None
    assert L.read_progress("stepping down the learning rate") is None


def test_identity_needs_a_rank_and_something_more() -> None:
    reading = L.read_identity("rank 5/8 (local rank 1) on gpu-b02 pid 4242 backend gloo")
    assert reading is not None
    assert reading.data == {"rank": 5, "world": 8, "local_rank": 1, "host": "gpu-b02", "pid": 4242}
    kv = L.read_identity("RANK=3 LOCAL_RANK=0 WORLD_SIZE=16 hostname=node-7")
    assert kv is not None and kv.data["rank"] == 3 and kv.data["host"] == "node-7"
    assert kv.data["world"] == 16 and kv.data["local_rank"] == 0
    assert L.read_identity("local rank 1 is ready") is None  # no global rank
    assert L.read_identity("rank 2 says hello on the way") is None  # "the" is no host


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        (GLOO_TIMEOUT, "timeout"),
        (GLOO_PEER, "peer_lost"),
        ("[Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 3000 ms", "barrier_missing"),
        (
            "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, "
            "OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=600000) ran for 600089 "
            "milliseconds before timing out.",
            "timeout",
        ),
        (
            "what():  [enforce fail at pair.cc:456] op.preamble.length <= op.nbytes. 8 vs 4. "
            "Received data size doesn't match expected size. Is there a distributed collective "
            "mismatch in your code?",
            "mismatch",
        ),
        ("INFO step 4/10 loss 0.3", None),
    ],
)
def test_collective_errors(message: str, kind: str | None) -> None:
    reading = L.read_collective_error(message)
    assert (reading.kind if reading else None) == kind


def test_monitored_barrier_names_the_ranks() -> None:
    reading = L.read_collective_error(
        "[Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 3000 ms"
    )
    assert reading is not None and reading.data["ranks"] == [1, 3]


def test_fingerprints_keep_what_must_agree() -> None:
    reading = L.read_collective_error(DETAIL)
    assert reading is not None and reading.kind == "mismatch"
    prints = reading.data["fingerprints"]
    assert prints[0] == "OpType=ALLREDUCE, TensorShape=[4], TensorDtypes=Float"
    assert prints[1] == "OpType=BROADCAST, TensorShape=[4], TensorDtypes=Float"
    assert reading.data["seq"] == 2


@pytest.mark.parametrize(
    ("message", "kind", "data"),
    [
        (
            "E1129 05:08:43.498000 9891 torch/distributed/elastic/multiprocessing/api.py:1002] "
            "failed (exitcode: -9) local_rank: 1 (pid: 9902) of binary: /usr/bin/python3",
            "exit",
            {"code": -9, "local_rank": 1, "pid": 9902},
        ),
        (
            "W1129 05:08:43.298000 9891 torch/distributed/elastic/multiprocessing/api.py:1028] "
            "Sending process 9901 closing signal SIGTERM",
            "killed_by_launcher",
            {"pid": 9901},
        ),
        (
            "srun: error: gpu-a01: task 3: Killed",
            "exit",
            {"host": "gpu-a01", "ranks": [3], "code": -9},
        ),
        (
            "srun: error: gpu-a01: tasks 0-2,5: Exited with exit code 1",
            "exit",
            {"host": "gpu-a01", "ranks": [0, 1, 2, 5], "code": 1},
        ),
        (
            "mpirun noticed that process rank 1 with PID 19034 on node gpu-f11 exited on signal 9 "
            "(Killed).",
            "exit",
            {"ranks": [1], "pid": 19034, "host": "gpu-f11", "code": -9},
        ),
    ],
)
def test_launcher_lines(message: str, kind: str, data: dict[str, object]) -> None:
    reading = L.read_launcher(message)
    assert reading is not None and reading.kind == kind
    assert reading.data == data


def _feed(lines: list[str]) -> list[L.Reading]:
    state, out = None, []
    for line in lines:
        state, reading = L.traceback_step(state, line)
        if reading is not None:
            out.append(reading)
    return out


def test_a_traceback_says_which_collective_timed_out() -> None:
    readings = _feed(
        [
            "Traceback (most recent call last):",
            '  File "/job/train.py", line 52, in <module>',
            "    dist.all_reduce(flat)",
            '  File "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", '
            "line 3252, in all_reduce",
            "    work.wait()",
            GLOO_TIMEOUT,
        ]
    )
    assert [(r.kind, r.data["collective"]) for r in readings] == [("timeout", "all_reduce")]


def test_an_application_error_is_not_a_collective_one() -> None:
    readings = _feed(
        [
            "Traceback (most recent call last):",
            '  File "/job/train.py", line 40, in load',
            "    raise ValueError(msg)",
            "ValueError: corrupt record in shard 19",
        ]
    )
    assert [(r.kind, r.data["collective"]) for r in readings] == [("app_error", None)]
    assert readings[0].data["message"] == "corrupt record in shard 19"


def test_rays_error_for_a_dead_worker_process() -> None:
    block = [
        "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.",
        "\tclass_name: RayTrainWorker",
        "\tpid: 21701",
        "\tip: 10.20.17.11",
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR",
    ]
    assert L.ray_death_block(block) == [
        {"line": 0, "code": None, "death": "SYSTEM_ERROR", "pid": 21701, "host": "10.20.17.11"}
    ]


def test_torchruns_failure_summary_and_mpiruns_exit_block() -> None:
    summary = [
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-11-29_05:08:43",
        "  host      : node-a",
        "  rank      : 1 (local_rank: 1)",
        "  exitcode  : -9 (pid: 9902)",
    ]
    assert L.summary_block(summary) == [
        {"host": "node-a", "rank": 1, "local_rank": 1, "code": -9, "pid": 9902, "line": 5}
    ]
    block = ["  Process name: [[14482,1],3]", "  Exit code:    1"]
    assert L.mpi_exit_block(block) == [{"ranks": [3], "code": 1, "line": 1}]

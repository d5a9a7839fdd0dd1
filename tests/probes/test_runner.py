"""The subprocess runner: deadlines, Ctrl-C, cancellation, crashes, garbage, no orphans.

Each test starts a tiny child from :mod:`tests.fakes.testing_children` (no torch).
"""

from __future__ import annotations

import _thread
import os
import threading
import time

import pytest

from pcidoc.probes.runner import (
    ProbeProgress,
    ProbeSpec,
    SubprocessProbeRunner,
    group_members,
)

TEST_CHILD = "tests.fakes.testing_children"


def _spec(behaviour: str, deadline: float = 10.0, **params: object) -> ProbeSpec:
    return ProbeSpec(name=behaviour, params=dict(params), module=TEST_CHILD, deadline_s=deadline)


def _runner() -> SubprocessProbeRunner:
    return SubprocessProbeRunner(term_grace_s=0.5, kill_grace_s=2.0, poll_s=0.02)


def _assert_group_gone(pgid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


def _assert_pids_gone(pids: list[int]) -> None:
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_normal_result_and_progress() -> None:
    seen: list[ProbeProgress] = []
    runner = _runner()
    outcome = runner.run(_spec("ok"), on_progress=seen.append)
    assert outcome.ok, outcome.errors
    assert outcome.returncode == 0
    assert [r.kind for r in outcome.results] == ["transfer"]
    assert seen
    assert seen[0].fraction == 0.5
    assert seen[0].message == "half way"
    assert runner.last_pgid is not None
    _assert_group_gone(runner.last_pgid)


def test_deadline_kills_a_child_that_sleeps_forever() -> None:
    runner = _runner()
    start = time.monotonic()
    outcome = runner.run(_spec("sleep", deadline=0.8))
    elapsed = time.monotonic() - start
    assert outcome.error is not None
    assert outcome.error.kind == "timeout"
    assert outcome.error.message.startswith("timed out after 1 s")
    assert "started" in outcome.error.message  # the last progress step is named
    assert elapsed < 0.8 + 0.5 + 1.0  # deadline + SIGTERM grace + slack
    assert runner.last_pgid is not None
    _assert_group_gone(runner.last_pgid)


def test_child_ignoring_sigterm_is_killed() -> None:
    runner = _runner()
    outcome = runner.run(_spec("ignore_term", deadline=0.5))
    assert outcome.error is not None
    assert outcome.error.kind == "timeout"
    assert outcome.returncode is not None
    assert outcome.returncode < 0
    assert runner.last_pgid is not None
    _assert_group_gone(runner.last_pgid)


def test_cancel_event_stops_the_child() -> None:
    cancel = threading.Event()
    runner = _runner()
    outcome = runner.run(
        _spec("sleep", deadline=30), on_progress=lambda _p: cancel.set(), cancel=cancel
    )
    assert outcome.error is not None
    assert outcome.error.kind == "interrupted"
    assert runner.last_pgid is not None
    _assert_group_gone(runner.last_pgid)


def test_ctrl_c_cleans_up_then_propagates() -> None:
    """A KeyboardInterrupt raised in the waiting (main) thread, deterministically: the
    progress callback (reader thread) simulates the signal once the child is running."""
    runner = _runner()
    with pytest.raises(KeyboardInterrupt):
        runner.run(
            _spec("grandchildren", deadline=30), on_progress=lambda _p: _thread.interrupt_main()
        )
    assert runner.last_pgid is not None
    _assert_group_gone(runner.last_pgid)


def test_crash_reports_exit_status_and_stderr_tail() -> None:
    outcome = _runner().run(_spec("crash"))
    assert outcome.error is not None
    assert outcome.error.kind == "crash"
    assert "exited with status 3" in outcome.error.message
    assert "illegal memory access" in outcome.error.message
    assert outcome.stderr_tail[-1].startswith("RuntimeError")


def test_garbage_on_the_pipe_is_ignored() -> None:
    outcome = _runner().run(_spec("garbage"))
    assert outcome.ok, outcome.errors
    assert len(outcome.results) == 1
    assert outcome.garbage_lines == 5
    warnings = [m for level, m in outcome.logs if level == "warning"]
    assert len(warnings) == 5
    assert "not a probe message" in warnings[0]


def test_only_garbage_is_an_error() -> None:
    outcome = _runner().run(_spec("only_garbage"))
    assert outcome.error is not None
    assert "no result" in outcome.error.message
    assert "2 unreadable" in outcome.error.message


def test_child_error_message_is_kept() -> None:
    outcome = _runner().run(_spec("error"))
    assert outcome.error is not None
    assert outcome.error.kind == "unavailable"
    assert outcome.error.probe == "error"


def test_no_orphans_after_a_timeout() -> None:
    runner = _runner()
    outcome = runner.run(_spec("grandchildren", deadline=1.5, count=3))
    assert outcome.error is not None
    assert outcome.error.kind == "timeout"
    grandchildren = outcome.info["grandchildren"]
    assert len(grandchildren) == 3
    assert runner.last_pgid is not None
    assert group_members(runner.last_pgid, include_zombies=True) == []
    _assert_group_gone(runner.last_pgid)
    _assert_pids_gone(grandchildren)


def test_leftover_grandchildren_of_a_finished_child_are_ended() -> None:
    runner = _runner()
    outcome = runner.run(_spec("grandchildren_exit", count=2))
    assert outcome.ok, outcome.errors
    assert any("left processes behind" in m for _level, m in outcome.logs)
    assert runner.last_pgid is not None
    _assert_group_gone(runner.last_pgid)
    _assert_pids_gone(outcome.info["grandchildren"])


def test_deadline_formula() -> None:
    spec = ProbeSpec(name="x", expected_s=10, startup_s=30)
    assert spec.deadline == 50
    assert ProbeSpec(name="x", deadline_s=7).deadline == 7


def test_a_child_that_reported_everything_but_cannot_exit_is_ended_after_a_grace() -> None:
    """The child's device teardown hangs after its last message: the parent does not wait
    for the deadline (it would be a timeout error), and keeps what was measured."""
    runner = SubprocessProbeRunner(
        term_grace_s=0.5, kill_grace_s=2.0, poll_s=0.02, exit_grace_s=0.3
    )
    outcome = runner.run(_spec("end_then_hang", deadline=300))
    assert outcome.ok, outcome.errors
    assert [r.kind for r in outcome.results] == ["transfer"]
    assert any("had not exited" in message for level, message in outcome.logs)
    assert runner.last_pgid is not None
    _assert_group_gone(runner.last_pgid)


def test_a_probe_that_hit_a_hung_copy_leaves_without_its_normal_exit() -> None:
    """The real child entry point: a probe raises ProbeHung while a thread that a normal exit
    would wait for stands in for the CUDA teardown; the child reports and leaves at once, so
    even a parent that would wait long after the last message sees it exit (no timeout)."""
    runner = SubprocessProbeRunner(
        term_grace_s=0.5, kill_grace_s=2.0, poll_s=0.02, exit_grace_s=600
    )
    outcome = runner.run(_spec("probe_hung", deadline=120))
    assert [e.kind for e in outcome.errors] == ["error"], outcome.errors
    assert "hanging" in outcome.errors[0].message
    assert [r.kind for r in outcome.results] == ["transfer"]
    assert outcome.returncode == 1

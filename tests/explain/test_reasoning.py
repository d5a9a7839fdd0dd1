"""The attribution over a job's facts (pure functions): who stopped first, who merely waited,
mismatches with and without a majority, stragglers, clocks, and the join to the GPU."""

from __future__ import annotations

import random

from pcidoc.explain.facts import GpuInfo
from pcidoc.explain.reason import explain_facts
from tests.explain.builders import T0, ev, facts, flight, peer_lost, steps, timeout


def test_the_quiet_rank_stopped_first_and_the_others_waited() -> None:
    job = facts(steps(range(4), 4), timeout(0), timeout(1), timeout(3))
    result = explain_facts(job)
    assert result.culprit is not None
    assert (result.culprit.rank, result.culprit.cause) == (2, "hang")
    assert result.waiting == [0, 1, 3]
    assert result.exit_code == 2 and result.status == "fault"
    assert {r.rank: r.role for r in result.ranks} == {
        0: "waited",
        1: "waited",
        2: "culprit",
        3: "waited",
    }


def test_the_launchers_first_observed_failure_is_not_the_culprit() -> None:
    # torchrun's "Root Cause (first observed failure)" names the first rank to exit: a waiter
    # whose timeout fired first. The rank it terminated (-15) was the one still stuck.
    job = facts(
        steps(range(3), 5),
        timeout(0),
        timeout(1),
        ev("exit", None, rank=0, local_rank=0, code=1, pid=100, _summary=True),
        ev("exit", None, rank=2, local_rank=2, code=-15, pid=102, _summary=True),
    )
    result = explain_facts(job)
    assert result.culprit is not None and (result.culprit.rank, result.culprit.cause) == (2, "hang")


def test_a_killed_rank_died() -> None:
    job = facts(
        steps(range(3), 3), peer_lost(0), peer_lost(2), ev("exit", None, ranks=[1], code=-9)
    )
    result = explain_facts(job)
    assert result.culprit is not None and (result.culprit.rank, result.culprit.cause) == (1, "died")
    assert "signal 9" in result.culprit.detail


def test_a_rank_that_vanished_without_a_word_died_when_its_peers_lost_it_at_once() -> None:
    # No launcher line: the peers saw their connection closed, nobody timed out.
    job = facts(steps(range(3), 3), peer_lost(0), peer_lost(2))
    result = explain_facts(job)
    assert result.culprit is not None and (result.culprit.rank, result.culprit.cause) == (1, "died")


def test_a_launcher_that_saw_the_process_die_names_it_by_pid() -> None:
    # Ray prints the dead actor's pid and node, not its rank: the rank's own lines give it.
    job = facts(
        steps(range(3), 3),
        *[ev("identity", r, rank=r, pid=700 + r) for r in range(3)],
        peer_lost(0),
        ev("exit", None, pid=701, host="10.0.0.7", code=None, death="SYSTEM_ERROR"),
    )
    result = explain_facts(job)
    assert result.culprit is not None and (result.culprit.rank, result.culprit.cause) == (1, "died")
    assert "SYSTEM_ERROR" in result.culprit.detail


def test_an_abort_over_a_mismatched_message_is_not_a_death() -> None:
    job = facts(
        steps(range(3), 3),
        ev("mismatch", 0, collective="all_reduce"),
        ev("fatal", 0, what="terminate called after throwing an instance of 'gloo::EnforceNotMet'"),
        ev("exit", None, ranks=[0], code=-6),
        peer_lost(1),
    )
    result = explain_facts(job)
    assert result.culprit is None or result.culprit.rank != 0


def test_the_odd_collective_out_is_the_mismatch() -> None:
    job = facts(
        steps(range(4), 2), timeout(0), timeout(1), timeout(2), timeout(3, collective="broadcast")
    )
    result = explain_facts(job)
    assert result.culprit is not None and (result.culprit.rank, result.culprit.cause) == (
        3,
        "mismatch",
    )


def test_a_quiet_rank_does_not_hide_a_mismatch() -> None:
    # Rank 3 was ended by the launcher before it reported its own timeout.
    job = facts(
        steps(range(8), 6),
        *[timeout(r) for r in (0, 1, 2, 4, 5, 6)],
        timeout(7, collective="broadcast"),
    )
    result = explain_facts(job)
    assert result.culprit is not None and (result.culprit.rank, result.culprit.cause) == (
        7,
        "mismatch",
    )


def test_two_ranks_that_disagree_name_no_culprit() -> None:
    job = facts(steps(range(2), 2), timeout(0), timeout(1, collective="broadcast"))
    result = explain_facts(job)
    assert result.culprit is not None
    assert (result.culprit.rank, result.culprit.cause) == (None, "mismatch")
    assert result.exit_code == 1
    assert any("no majority" in note for note in result.notes)


def test_the_flight_recorder_history_tells_which_of_two_deviated() -> None:
    job = facts(
        steps(range(2), 2),
        timeout(0),
        timeout(1, collective="broadcast"),
        flights=[
            flight(0, ["all_reduce"] * 3),
            flight(1, ["all_reduce", "all_reduce", "broadcast"]),
        ],
    )
    result = explain_facts(job)
    assert result.culprit is not None and (result.culprit.rank, result.culprit.cause) == (
        1,
        "mismatch",
    )
    assert "#3" in result.culprit.detail


def test_torchs_fingerprints_are_a_majority_vote() -> None:
    a, b = "OpType=ALLREDUCE, TensorShape=[4]", "OpType=ALLREDUCE, TensorShape=[8]"
    job = facts(
        steps(range(3), 2),
        ev("mismatch", 0, fingerprints={0: a, 1: b}),
        ev("mismatch", 1, fingerprints={1: b, 0: a}),
        ev("mismatch", 2, fingerprints={2: a, 1: b}),
    )
    result = explain_facts(job)
    assert result.culprit is not None and (result.culprit.rank, result.culprit.cause) == (
        1,
        "mismatch",
    )


def test_the_watchdog_rank_behind_never_launched_the_collective() -> None:
    dogs = [
        ev("watchdog", r, seq=7, op="ALLREDUCE", last_enqueued=6 if r == 2 else 7, last_completed=6)
        for r in range(4)
    ]
    result = explain_facts(facts(steps(range(4), 2), *dogs))
    assert result.culprit is not None and (result.culprit.rank, result.culprit.cause) == (2, "hang")


def test_the_monitored_barrier_names_the_rank() -> None:
    job = facts(
        steps(range(4), 3),
        ev("barrier_missing", 0, ranks=[3]),
        timeout(1),
        timeout(2),
        ev("timeout", 3, collective="all_reduce"),  # it timed out too, later, in its own wait
    )
    result = explain_facts(job)
    assert result.culprit is not None and (result.culprit.rank, result.culprit.cause) == (3, "hang")


def test_a_straggler_is_slow_and_the_job_is_a_warning() -> None:
    result = explain_facts(facts(steps(range(4), 10, timing={1: 260.0})))
    assert result.culprit is not None and (result.culprit.rank, result.culprit.cause) == (1, "slow")
    assert result.exit_code == 1
    assert "220 ms" in result.culprit.detail


def test_a_straggler_from_the_last_two_steps_on() -> None:
    events = steps(range(4), 10)
    for event in events:
        if event.kind == "progress" and event.rank == 2 and event.data["step"] >= 9:
            event.data["compute"] = 240.0
        if event.kind == "progress" and event.rank == 2 and event.data["step"] == 2:
            event.data["compute"] = 100.0  # one noisy step long before: not the onset
    result = explain_facts(facts(events))
    assert result.culprit is not None and (result.culprit.rank, result.culprit.cause) == (2, "slow")
    assert result.first_anomaly is not None and "(9)" in result.first_anomaly.what


def test_noise_is_not_a_straggler() -> None:
    # A loaded machine: every step's compute jitters, and a few steps of random ranks take
    # up to 45 ms longer (a rank descheduled for a moment).
    rng = random.Random(7)
    events = steps(range(6), 10)
    for event in events:
        if event.kind == "progress":
            spike = 45.0 if rng.random() < 0.15 else 0.0
            event.data["compute"] = 40.0 + rng.uniform(-15.0, 25.0) + spike
    result = explain_facts(facts(events))
    assert result.culprit is None and result.status == "ok" and result.exit_code == 0


def test_a_healthy_run_names_no_culprit() -> None:
    result = explain_facts(facts(steps(range(8), 10)))
    assert result.culprit is None and result.exit_code == 0
    assert result.ranks_seen == 8 and result.summary.startswith("no fault found")


def test_clocks_are_aligned_on_the_steps_every_rank_ends_together() -> None:
    job = facts(steps(range(2), 6, host="n1"), steps(range(2, 4), 6, host="n2", skew=12.5))
    result = explain_facts(job)
    assert result.reference_host == "n1"
    assert result.clock_offsets == {"n1": 0.0, "n2": 12.5}


_GPUS = [
    GpuInfo(
        host="n2",
        index=i,
        bus_id=f"0000:{0x10 + i:02x}:00.0",
        name="GPU",
        ports=[f"0000:{0x80 + i:02x}:00.0", "0000:01:01.0"],
        source="cap.json (pcidoc capture)",
    )
    for i in range(4)
]


def _hang_on_n2(*kernel: object) -> object:
    return facts(
        steps(range(2), 4, host="n1"),
        steps(range(2, 4), 4, host="n2"),
        timeout(0, "n1"),
        timeout(1, "n1"),
        timeout(2, "n2"),
        *kernel,  # type: ignore[arg-type]
        gpus=_GPUS,
    )


def _xid(bus: str, when: float, code: int = 79) -> object:
    return ev("kernel", None, "n2", when, type="xid", bus_id=bus, code=code)


def test_an_xid_on_the_culprits_gpu_just_before_it_stopped_is_the_cause() -> None:
    stopped = T0 + 0.4
    result = explain_facts(_hang_on_n2(_xid("0000:13:00.0", stopped - 1.0)))
    culprit = result.culprit
    assert culprit is not None and (culprit.rank, culprit.cause) == (3, "xid")
    assert (culprit.host, culprit.local_rank, culprit.device, culprit.bus_id) == (
        "n2",
        3,
        3,
        "0000:13:00.0",
    )
    assert any(e.role == "hardware" for e in result.evidence)


def test_an_xid_naming_the_gpu_in_nvmls_form_is_the_same_gpu() -> None:
    """NVML writes an 8-digit domain and capitals (``00000000:13:00.0``); a kernel line names
    the same GPU as ``0000:13:00``: one normaliser joins them (model/busid.py)."""
    stopped = T0 + 0.4
    result = explain_facts(_hang_on_n2(_xid("00000000:13:00.0", stopped - 1.0)))
    culprit = result.culprit
    assert culprit is not None and (culprit.rank, culprit.cause) == (3, "xid")


def test_kernel_events_that_do_not_fit_are_not_the_cause() -> None:
    stopped = T0 + 0.4
    for event in (
        _xid("0000:13:00.0", stopped - 3 * 3600),  # hours before
        _xid("0000:12:00.0", stopped - 1.0),  # another rank's GPU
        _xid("0000:13:00.0", stopped - 1.0, code=13),  # the application's own fault
        ev(
            "kernel",
            None,
            "n2",
            stopped - 1,
            type="aer",
            bus_id="0000:01:01.0",
            severity="corrected",
        ),
    ):
        result = explain_facts(_hang_on_n2(event))
        assert result.culprit is not None and (result.culprit.rank, result.culprit.cause) == (
            3,
            "hang",
        ), event


def test_a_correctable_error_storm_on_the_upstream_port_is_a_link_cause() -> None:
    stopped = T0 + 0.4
    storm = [
        ev(
            "kernel",
            None,
            "n2",
            stopped - 2 + i * 0.1,
            type="aer",
            bus_id="0000:01:01.0",
            severity="corrected",
        )
        for i in range(4)
    ]
    result = explain_facts(_hang_on_n2(*storm))
    assert result.culprit is not None and (result.culprit.rank, result.culprit.cause) == (3, "link")
    assert "upstream PCIe port 0000:01:01.0" in result.culprit.detail


def test_nccl_transport_errors_name_the_cause() -> None:
    job = facts(
        steps(range(3), 3),
        timeout(0),
        timeout(2),
        ev("transport", 1, what="NET/IB : Got completion with error 12, opcode 0, vendor err 129"),
    )
    result = explain_facts(job)
    assert result.culprit is not None and (result.culprit.rank, result.culprit.cause) == (
        1,
        "transport",
    )


def test_a_missing_log_is_said_and_lowers_the_confidence() -> None:
    complete = explain_facts(facts(steps(range(4), 4, world=4), timeout(0), timeout(1), timeout(3)))
    partial = explain_facts(facts(steps([0, 1, 2], 4, world=4), timeout(0), timeout(1)))
    assert partial.culprit is not None and partial.culprit.rank == 2
    assert partial.confidence < complete.confidence
    assert any("rank(s) 3" in note for note in partial.notes)

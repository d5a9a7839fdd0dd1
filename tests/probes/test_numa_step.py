"""Remote NUMA is judged on the probe's NUMA step alone: its local and remote runs share the
allocator (cudaHostRegister of first-touched pages) and the copy count, unlike the plateau
(torch's pinned allocator, more copies). Synthetic numbers."""

from __future__ import annotations

from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import load_checks
from pcidoc.doctor.runner import run_check
from pcidoc.model.measurements import TransferMeasurement
from tests.builders import machine


def _t(gbps: float, placement: str, node: int, step: str) -> TransferMeasurement:
    return TransferMeasurement(
        gpu=0,
        direction="h2d",
        memory="pinned",
        placement=placement,  # type: ignore[arg-type]
        host_numa_node=node,
        bandwidth_gbps=gbps,
        source="probe",
        conditions={"step": step},
    )


def test_remote_numa_compares_the_numa_steps_local_and_remote_runs() -> None:
    cap = machine(2, numa_nodes=2)
    cap.measurements.transfers = [
        _t(25.0, "local", 0, "plateau"),  # the plateau: another allocator, more copies
        _t(20.0, "local", 0, "numa"),
        _t(17.0, "remote", 1, "numa"),
    ]
    result = run_check(load_checks()["transfer.remote-numa"], Context(cap))
    # 17 / 20 = 85 % (healthy); against the plateau it would read 68 % and warn.
    assert result.severity == "pass", result.summary
    assert "85%" in result.summary or any("85%" in str(e.value) for e in result.evidence)


def test_affinity_reports_the_cpus_the_container_allowed(monkeypatch) -> None:
    """A cpuset narrows sched_setaffinity silently: what was applied is read back."""
    import os

    from pcidoc.probes import cudautil

    allowed = {0, 1}
    state: dict[int, set[int]] = {}

    def setaffinity(tid: int, cpus: set[int]) -> None:
        narrowed = set(cpus) & allowed
        if not narrowed:
            raise OSError(22, "Invalid argument")
        state[tid] = narrowed

    monkeypatch.setattr(cudautil, "_online_cpus", lambda: {0, 1, 2, 3})
    monkeypatch.setattr(os, "sched_setaffinity", setaffinity)
    monkeypatch.setattr(os, "sched_getaffinity", lambda tid: state.get(tid, allowed))
    monkeypatch.setattr(os, "listdir", lambda path: ["0"])
    assert cudautil.set_process_affinity([1, 2, 3]) == [1]
    assert cudautil.set_process_affinity([2, 3]) is None

"""session.measure / plan_probes / probe_command with the fake runner (no processes, no GPU).

Every stream here is synthetic (tests.fakes.fake_probes); no number is a measurement.
"""

from __future__ import annotations

import io
import json
import math
import threading
from argparse import Namespace

import pytest

from pcidoc.model.facts import GpuProcess
from pcidoc.probes import console, params, preflight, session
from pcidoc.probes.runner import ProbeOutcome, ProbeSpec
from tests.builders import machine
from tests.fakes import fake_probes as fake
from tests.fakes.fake_probes import FakeProbeRunner

ENV_8 = {
    "cuda_available": True,
    "device_count": 8,
    "nccl_available": True,
    "gloo_available": True,
    "devices": [],
}


def _measure(cap, runner, **kwargs) -> list[str]:
    lines: list[str] = []
    kwargs.setdefault("live_processes", False)
    session.measure(cap, "quick", False, lines.append, runner=runner, **kwargs)
    return lines


# --------------------------------------------------------------------------------- planning


def test_plan_on_an_8_gpu_nvswitch_machine_fits_the_quick_budget() -> None:
    cap = machine(8, link="NV18", numa_nodes=2)
    plan = session.plan_probes(cap, "quick", False, ENV_8, cpu_count=64)
    assert [s.name for s in plan.specs] == ["transfer", "p2p", "collectives"]
    assert plan.errors == []
    # About a minute at the conservative Gen4-class rates the estimates assume (docs/probes.md);
    # the P2P probe also times capable pairs with peer access off since issue 9.
    assert plan.estimate_s < 65
    transfer = plan.specs[0]
    # quick: local-vs-remote NUMA on one GPU per node (GPUs 0-3 node 0, 4-7 node 1).
    assert transfer.params["numa_gpus"] == [0, 4]
    assert [g["cpus"] for g in transfer.params["gpus"]][:1] == ["0-47"]
    # Every GPU has a UUID: the child sees exactly these GPUs, in this order.
    assert transfer.env["CUDA_VISIBLE_DEVICES"].split(",")[0] == cap.gpus[0].uuid
    assert [g["ordinal"] for g in transfer.params["gpus"]] == list(range(8))
    collectives = plan.specs[2]
    assert collectives.params["backend"] == "nccl"
    assert collectives.params["members"]["4"] == [0, 1, 2, 3]
    assert collectives.params["gpus_by_count"]["2"] == [0, 1]
    for spec in plan.specs:
        assert spec.deadline == spec.expected_s * 2 + params.STARTUP_S[spec.name]


def test_full_mode_measures_numa_on_every_gpu() -> None:
    cap = machine(4, link="SYS", numa_nodes=2)
    plan = session.plan_probes(cap, "full", False, ENV_8)
    assert plan.specs[0].params["numa_gpus"] == [0, 1, 2, 3]
    single = machine(2, link="PIX", numa_nodes=1)
    assert session.plan_probes(single, "quick", False, ENV_8).specs[0].params["numa_gpus"] == []


def test_plan_without_cuda_runs_gloo_scaling_and_says_why_not_the_rest() -> None:
    cap = machine(0)
    reason = "no CUDA device visible to torch (torch 2.x+cpu is a CPU-only build)"
    env = {
        "cuda_available": False,
        "device_count": 0,
        "gloo_available": True,
        "no_cuda_reason": reason,
    }
    plan = session.plan_probes(cap, "quick", False, env, cpu_count=2)
    assert [s.name for s in plan.specs] == ["scaling"]
    assert plan.specs[0].params["backend"] == "gloo"
    assert plan.specs[0].params["members"] == {"1": [0], "2": [0, 1]}
    assert {(e.probe, e.kind, e.message) for e in plan.errors} == {
        ("transfer", "unavailable", reason),
        ("p2p", "unavailable", reason),
        ("allreduce", "unavailable", reason),
    }


def test_plan_refuses_busy_gpus_unless_forced() -> None:
    cap = machine(2, link="NV4")
    busy = [preflight.BusyProcess(4242, "python", [1])]
    refused = session.plan_probes(cap, "quick", False, ENV_8, busy=busy)
    assert refused.specs == []
    assert {e.probe for e in refused.errors} == set(session.GPU_PROBES)
    assert all(
        e.kind == "refused" and "pid 4242 (python) on GPU1" in e.message for e in refused.errors
    )
    forced = session.plan_probes(cap, "quick", True, ENV_8, busy=busy)
    assert [s.name for s in forced.specs] == ["transfer", "p2p", "collectives"]


def test_plan_skips_mig_gpus_and_single_gpu_has_no_pair_probes() -> None:
    cap = machine(2, link="NV4")
    cap.gpus[1].mig.enabled = True
    plan = session.plan_probes(cap, "quick", False, ENV_8)
    assert [s.name for s in plan.specs] == ["transfer"]
    assert any("MIG" in note for note in plan.notes)


def test_env_probe_sees_the_gpus_the_probes_will_use() -> None:
    cap = machine(3, link="NV4")
    cap.gpus[2].mig.enabled = True
    spec = session.env_spec(cap)
    assert spec.env["CUDA_VISIBLE_DEVICES"] == f"{cap.gpus[0].uuid},{cap.gpus[1].uuid}"
    assert session.env_spec().env == {}


def test_gpu_entries_without_uuids_match_bus_ids() -> None:
    cap = machine(2, link="PIX")
    for gpu in cap.gpus:
        gpu.uuid = None
    env = {
        "devices": [
            {"ordinal": 0, "bus_id": cap.gpus[1].bus_id},
            {"ordinal": 1, "bus_id": cap.gpus[0].bus_id},
        ],
        "cuda_device_order": "PCI_BUS_ID",
    }
    entries, child_env = session.gpu_entries(cap, [0, 1], env)
    # The probe child sees what the env probe saw (its bus ids decided the ordinals).
    assert child_env == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert [e["ordinal"] for e in entries] == [1, 0]


# ---------------------------------------------------------------------------------- measure


def test_measure_fills_the_capture_and_the_doctor_reads_it() -> None:
    cap = machine(8, link="NV18", numa_nodes=2)
    runner = FakeProbeRunner()
    lines = _measure(cap, runner)
    m = cap.measurements
    assert [s.name for s in runner.calls] == ["env", "transfer", "p2p", "collectives"]
    assert m.probe_errors == []
    assert {t.gpu for t in m.transfers} == set(range(8))
    assert {t.placement for t in m.transfers if t.host_numa_node is not None} >= {"local"}
    assert any(t.placement == "remote" for t in m.transfers)
    assert {(p.kind, p.p2p) for p in m.p2p} == {
        ("bandwidth", "enabled"),
        ("bandwidth", "staged"),
        ("latency", "enabled"),
    }
    assert len(m.p2p_verification) == 56
    assert [c.ranks for c in m.collectives] == [1, 2, 4, 8]
    assert m.collectives[1].gpus == [0, 1]
    [scaling] = m.scaling
    assert scaling.slowest_edge == "NV18"
    assert cap.p2p.can_access_peer is not None
    assert cap.p2p.can_access_peer[0][1] is True
    assert all(t.source == fake.SYNTHETIC_SOURCE for t in m.transfers)
    assert any("about" in line for line in lines)
    from pcidoc import doctor
    from pcidoc.model.report import ReportSource

    report = doctor.run(
        cap,
        ReportSource(kind="synthetic"),
        probes_requested=True,
        generated_at="2026-01-01T00:00:00Z",
    )
    by_id = {c.id: c for c in report.checks}
    for check_id in ("transfer.pinned", "p2p.fallback", "scaling.allreduce", "scaling.efficiency"):
        if check_id in by_id and by_id[check_id].summary != "the check returned no result":
            assert by_id[check_id].severity != "skip", by_id[check_id]


def test_measure_without_cuda_records_reasons_and_runs_gloo() -> None:
    cap = machine(0)
    runner = FakeProbeRunner(gpu_count=0)
    _measure(cap, runner)
    m = cap.measurements
    assert [s.name for s in runner.calls] == ["env", "scaling"]
    assert [s.backend for s in m.scaling] == ["gloo"]
    errors = {e.probe: e for e in m.probe_errors}
    assert set(errors) == {"transfer", "p2p", "allreduce"}
    assert all(
        e.kind == "unavailable" and "no CUDA device visible to torch" in e.message
        for e in errors.values()
    )


def test_measure_without_torch_names_the_install_hint() -> None:
    cap = machine(2, link="PIX")
    runner = FakeProbeRunner(streams={"env": fake.NO_TORCH_ENV_STREAM})
    lines = _measure(cap, runner)
    errors = cap.measurements.probe_errors
    assert {e.probe for e in errors} == set(session.GPU_PROBES)
    assert all(
        e.kind == "unavailable" and "pip install 'pcidoc[probes]'" in e.message for e in errors
    )
    assert [s.name for s in runner.calls] == ["env"]
    assert any("unavailable" in line for line in lines)
    from pcidoc import doctor
    from pcidoc.model.report import ReportSource

    report = doctor.run(
        cap,
        ReportSource(kind="synthetic"),
        probes_requested=True,
        generated_at="2026-01-01T00:00:00Z",
    )
    pinned = next(c for c in report.checks if c.id == "transfer.pinned")
    assert pinned.severity in ("skip", "error")


def test_measure_refuses_when_the_capture_shows_other_processes() -> None:
    cap = machine(2, link="NV4")
    cap.host.processes = [GpuProcess(pid=999_999, name="trainer", gpus=[0])]
    runner = FakeProbeRunner()
    lines = _measure(cap, runner)
    assert [s.name for s in runner.calls] == ["env"]
    assert all(e.kind == "refused" for e in cap.measurements.probe_errors)
    assert any("refused" in line and "pid 999999 (trainer) on GPU0" in line for line in lines)
    forced = machine(2, link="NV4")
    forced.host.processes = cap.host.processes
    runner = FakeProbeRunner()
    session.measure(forced, "quick", True, lambda _l: None, runner=runner, live_processes=False)
    assert [s.name for s in runner.calls] == ["env", "transfer", "p2p", "collectives"]


def test_cancel_stops_the_running_probe_and_skips_the_rest() -> None:
    cap = machine(2, link="NV4")
    cancel = threading.Event()
    runner = FakeProbeRunner(step_s=0.5, speed=50.0)

    def progress(line: str) -> None:
        if "probe transfer" in line and "starting" in line:
            cancel.set()

    session.measure(
        cap, "quick", False, progress, runner=runner, cancel=cancel, live_processes=False
    )
    kinds = {(e.probe, e.kind) for e in cap.measurements.probe_errors}
    assert ("transfer", "interrupted") in kinds
    assert ("p2p", "interrupted") in kinds
    assert ("allreduce", "interrupted") in kinds
    assert ("scaling", "interrupted") in kinds


def test_ctrl_c_propagates_after_recording() -> None:
    class InterruptingRunner(FakeProbeRunner):
        def run(self, spec, on_progress=None, cancel=None):  # type: ignore[override]
            if spec.name == "p2p":
                raise KeyboardInterrupt
            return super().run(spec, on_progress, cancel)

    cap = machine(2, link="NV4")
    with pytest.raises(KeyboardInterrupt):
        _measure(cap, InterruptingRunner())
    assert cap.measurements.transfers  # what finished before is kept
    assert {(e.probe, e.kind) for e in cap.measurements.probe_errors} == {
        ("p2p", "interrupted"),
        ("allreduce", "interrupted"),
        ("scaling", "interrupted"),
    }


def test_combined_collectives_errors_are_named_after_the_checks_probes() -> None:
    cap = machine(2, link="NV4")
    hang = {"collectives": fake.HANG_STREAM}
    runner = FakeProbeRunner(streams=hang, speed=math.inf)
    _measure(cap, runner)
    errors = {(e.probe, e.kind) for e in cap.measurements.probe_errors}
    assert errors == {("allreduce", "timeout"), ("scaling", "timeout")}


def test_progress_display_is_rate_limited() -> None:
    now = [0.0]
    lines: list[str] = []
    display = console.ProgressDisplay(lines.append, min_interval_s=1.0, clock=lambda: now[0])
    spec = ProbeSpec(name="p2p", label="p2p (GPUs 0-1)")
    display.start(spec, 12.0)
    callback = display.callback(spec)
    from pcidoc.probes.runner import ProbeProgress

    for i in range(10):
        now[0] = i * 0.3
        callback(ProbeProgress("p2p", i / 10, f"step {i}", now[0]))
    callback(ProbeProgress("p2p", 1.0, "done", 3.0))
    callback(ProbeProgress("p2p", 1.0, "done", 3.0))
    assert lines[0] == "pcidoc: probe p2p (GPUs 0-1): starting (about 12 s)"
    assert len(lines) == 1 + 2 + 1  # start, 2 rate-limited steps (t=1.2, 2.4), one "done"
    assert lines[-1].endswith("100% done")
    display.finish(spec, ProbeOutcome(probe="p2p", wall_s=3.0))
    assert "done in 3.0 s" in lines[-1]


# ----------------------------------------------------------------------------- pcidoc probe


def _args(name: str, **kw) -> Namespace:
    values = {
        "name": name,
        "gpus": None,
        "backend": None,
        "ranks": None,
        "mode": "quick",
        "json": False,
        "timeout": None,
        "force": False,
    }
    values.update(kw)
    return Namespace(**values)


def _probe(args: Namespace, cap, runner) -> tuple[int, dict | None, list[str]]:
    out = io.StringIO()
    lines: list[str] = []
    code = session.probe_command(args, lines.append, runner=runner, capture=cap, stdout=out)
    text = out.getvalue()
    return code, (json.loads(text) if text else None), lines


def test_probe_transfer_json_has_percent_of_ceiling() -> None:
    cap = machine(2, link="PIX")
    for gpu in cap.gpus:
        gpu.pcie.current_gen, gpu.pcie.max_gen = 4, 4
    code, doc, lines = _probe(_args("transfer", gpus="1"), cap, FakeProbeRunner())
    assert code == 0
    assert doc["schema"] == "pcidoc.probe/1"
    assert doc["ok"] is True
    pinned = [
        t
        for t in doc["measurements"]["transfers"]
        if t["memory"] == "pinned" and not t["bidirectional"]
    ]
    assert {t["gpu"] for t in pinned} == {1}
    h2d = next(t for t in pinned if t["direction"] == "h2d" and t["placement"] == "local")
    # The replayed stream reads no link under load: the capture's link is the basis.
    assert h2d["ceiling_link"] == "Gen4 x16 (at collection)"
    assert h2d["percent_of_ceiling"] == pytest.approx(100 * 24.6 / 31.5077, abs=0.1)
    assert h2d["percent_of_nccl_model"] == pytest.approx(102.5, abs=0.1)
    assert any("GPU1 h2d pinned local" in line and "% of Gen4 x16" in line for line in lines)


def test_probe_json_flag_suppresses_the_table() -> None:
    cap = machine(2, link="PIX")
    code, _doc, lines = _probe(_args("transfer", json=True), cap, FakeProbeRunner())
    assert code == 0
    assert not any("GB/s" in line for line in lines)


def test_probe_allreduce_and_scaling_show_busbw_and_efficiency() -> None:
    cap = machine(4, link="NV4")
    code, doc, lines = _probe(_args("allreduce", ranks="1,2,4"), cap, FakeProbeRunner())
    assert code == 0
    rows = {c["ranks"]: c["rows"] for c in doc["measurements"]["collectives"]}
    assert rows[1][0]["busbw_gbps"] is None
    assert rows[4][-1]["busbw_gbps"] == pytest.approx(18.0, rel=0.05)
    assert doc["params"]["backend"] == "nccl"
    # A 1-rank run prints its times but no (meaningless) algbw or busbw.
    one = lines.index(next(line for line in lines if "ranks=1 " in line))
    two = lines.index(next(line for line in lines if "ranks=2 " in line))
    assert any("one rank" in line for line in lines[one:two])
    assert not any("algbw" in line or "busbw" in line for line in lines[one:two])
    assert any("algbw" in line for line in lines[two:])
    code, doc, lines = _probe(_args("scaling"), cap, FakeProbeRunner())
    assert code == 0
    assert not any("None" in line for line in lines)
    assert any("slowest link between the GPUs used is NV4" in line for line in lines)
    points = doc["measurements"]["scaling"][0]["points"]
    assert [p["ranks"] for p in points] == [1, 2, 4]
    assert points[0]["efficiency"] == 1.0
    assert points[2]["efficiency"] == pytest.approx(0.81)


def test_probe_without_cuda() -> None:
    cap = machine(0)
    code, doc, lines = _probe(_args("transfer"), cap, FakeProbeRunner(gpu_count=0))
    assert code == 3
    assert doc["errors"][0]["kind"] == "unavailable"
    assert "no CUDA device visible to torch" in lines[-1]
    code, doc, lines = _probe(_args("allreduce"), cap, FakeProbeRunner(gpu_count=0))
    assert code == 0  # falls back to gloo on CPU, says so
    assert doc["params"]["backend"] == "gloo"
    assert any("with gloo on CPU" in line for line in lines)


def test_probe_bad_options_exit_3() -> None:
    cap = machine(2, link="PIX")
    assert _probe(_args("transfer", gpus="0,7"), cap, FakeProbeRunner())[0] == 3
    assert _probe(_args("transfer", gpus="x"), cap, FakeProbeRunner())[0] == 3
    assert _probe(_args("scaling", ranks="0,2"), cap, FakeProbeRunner())[0] == 3
    assert _probe(_args("p2p", gpus="0"), cap, FakeProbeRunner())[0] == 3


def test_probe_refusal_and_force() -> None:
    cap = machine(2, link="PIX")
    cap.host.processes = [GpuProcess(pid=999_998, name="jupyter", gpus=[1])]
    code, doc, lines = _probe(_args("p2p"), cap, FakeProbeRunner())
    assert code == 3
    assert doc["errors"][0]["kind"] == "refused"
    assert "--force" in lines[-1]
    assert _probe(_args("p2p", force=True), cap, FakeProbeRunner())[0] == 0


def test_probe_timeout_and_ctrl_c() -> None:
    cap = machine(2, link="PIX")
    runner = FakeProbeRunner(streams={"p2p": fake.HANG_STREAM}, speed=math.inf)
    code, doc, _lines = _probe(_args("p2p", timeout=5), cap, runner)
    assert code == 3
    assert doc["errors"][0] == {"probe": "p2p", "message": "timed out after 5 s", "kind": "timeout"}

    class Interrupt(FakeProbeRunner):
        def run(self, spec, on_progress=None, cancel=None):  # type: ignore[override]
            if spec.name == "p2p":
                raise KeyboardInterrupt
            return super().run(spec, on_progress, cancel)

    code, _doc, lines = _probe(_args("p2p"), cap, Interrupt())
    assert code == 130
    assert "interrupted" in lines[-1]

"""The probe orchestrator shared by the CLI and the TUI, the conditions each measurement keeps,
what survives a deadline or an interruption, and the probe command's option checks.

Streams are synthetic (tests.fakes.fake_probes); no number here is a measurement.
"""

from __future__ import annotations

import io
import json
from argparse import Namespace

import pytest

from pcidoc.collect.capture import dump_json
from pcidoc.model.capture import Capture
from pcidoc.model.measurements import (
    P2PMatrixMeasurement,
    ProbeError,
    ScalingMeasurement,
    ScalingPoint,
)
from pcidoc.probes import console, merge, session
from pcidoc.probes.runner import OutcomeBuilder, ProbeOutcome, ProbeSignalled, ProbeSpec
from tests.builders import machine
from tests.fakes.fake_probes import FakeProbeRunner
from tests.fakes.fake_probes import probe_args as _args


def _probe(args: Namespace, cap, runner) -> tuple[int, dict | None, list[str]]:
    out = io.StringIO()
    lines: list[str] = []
    code = console.probe_command(args, lines.append, runner=runner, capture=cap, stdout=out)
    text = out.getvalue()
    return code, (json.loads(text) if text else None), lines


# ------------------------------------------------------------------------- one orchestrator


def test_cli_measure_runs_through_the_probe_session(monkeypatch) -> None:
    seen: list[session.ProbeSession] = []
    original = session.ProbeSession.run

    def spy(self: session.ProbeSession) -> None:
        seen.append(self)
        original(self)

    monkeypatch.setattr(session.ProbeSession, "run", spy)
    cap = machine(2, link="NV4")
    lines: list[str] = []
    console.measure(
        cap, "quick", False, lines.append, runner=FakeProbeRunner(), live_processes=False
    )
    assert len(seen) == 1
    assert cap.measurements.transfers and cap.measurements.p2p
    assert any("checking torch and CUDA" in line for line in lines)


def test_session_reports_planned_started_progress_finished_ended_in_order() -> None:
    events: list[str] = []

    class Recorder(session.SessionListener):
        def env_started(self) -> None:
            events.append("env")

        def planned(self, plan: session.Plan) -> None:
            events.append("planned:" + ",".join(s.name for s in plan.specs))

        def started(self, spec: ProbeSpec) -> None:
            events.append("started:" + spec.name)

        def progress(self, spec: ProbeSpec, event) -> None:
            if not events[-1].startswith("progress:" + spec.name):
                events.append("progress:" + spec.name)

        def finished(self, spec: ProbeSpec, outcome: ProbeOutcome) -> None:
            events.append("finished:" + spec.name)

        def ended(self, cancelled: bool) -> None:
            events.append(f"ended:{cancelled}")

    cap = machine(2, link="NV4")
    session.ProbeSession(cap, "quick", Recorder(), runner=FakeProbeRunner(), busy_check=None).run()
    assert events[0] == "env"
    assert events[1] == "planned:transfer,p2p,collectives"
    assert events[2:5] == ["started:transfer", "progress:transfer", "finished:transfer"]
    assert events[-1] == "ended:False"


# ------------------------------------------------------------------ reproducible records


def test_capture_keeps_how_each_measurement_was_taken() -> None:
    cap = machine(2, link="NV4")
    console.measure(
        cap, "quick", False, lambda _l: None, runner=FakeProbeRunner(), live_processes=False
    )
    reloaded = Capture.model_validate_json(dump_json(cap))
    m = reloaded.measurements
    for record in [*m.transfers, *m.p2p, *m.collectives, *m.scaling]:
        assert record.conditions.get("mode") == "quick", record
        # The child's extra (here the fake stream's marker) is no longer dropped.
        assert record.conditions.get("synthetic") is True, record


def test_conditions_carry_versions_and_nccl_tuning_variables(monkeypatch) -> None:
    monkeypatch.setenv("NCCL_ALGO", "Ring")
    builder = OutcomeBuilder(ProbeSpec(name="allreduce", params={"mode": "full"}))
    builder.feed(
        json.dumps({"type": "info", "data": {"torch_version": "9.9", "nccl_version": "2.1.3"}})
    )
    builder.feed(
        json.dumps(
            {
                "type": "result",
                "kind": "collective",
                "measurement": {"ranks": 2, "rows": []},
                "extra": {"threads_per_rank": 4},
            }
        )
    )
    outcome = builder.finish()
    conditions = outcome.results[0].measurement.conditions
    assert conditions["mode"] == "full"
    assert conditions["torch_version"] == "9.9"
    assert conditions["nccl_version"] == "2.1.3"
    assert conditions["threads_per_rank"] == 4
    assert conditions["nccl_env"] == {"NCCL_ALGO": "Ring"}


def test_nccl_settings_that_change_bus_bandwidth_travel_with_the_collective() -> None:
    """NVLS off, SHM off, fewer channels, a topology file: the all-reduce's busbw holds under
    those settings only, so they are a field of the measurement and shown in the report."""
    from pcidoc.doctor.context import Context
    from pcidoc.doctor.registry import load_checks
    from pcidoc.doctor.runner import run_check

    settings = {
        "NCCL_NVLS_ENABLE": "0",
        "NCCL_SHM_DISABLE": "1",
        "NCCL_MAX_NCHANNELS": "2",
        "NCCL_BUFFSIZE": "1048576",
        "NCCL_TOPO_FILE": "/etc/nccl/topo.xml",
    }
    builder = OutcomeBuilder(ProbeSpec(name="allreduce", params={"mode": "quick"}))
    builder.feed(json.dumps({"type": "info", "data": {"nccl_env": settings}}))
    rows = [{"size_bytes": 2**30, "busbw_gbps": 40.0, "algbw_gbps": 20.0}]
    measurement = {"ranks": 2, "gpus": [0, 1], "backend": "nccl", "rows": rows}
    builder.feed(json.dumps({"type": "result", "kind": "collective", "measurement": measurement}))
    [result] = builder.finish().results
    assert result.measurement.nccl_env == settings
    cap = machine(2, link="NV4")
    cap.measurements.collectives = [result.measurement]
    check = run_check(load_checks()["scaling.allreduce"], Context(cap))
    shown = [e.value for e in check.evidence if e.label == "measured with NCCL settings"]
    assert shown and "NCCL_NVLS_ENABLE=0" in str(shown[0]) and "NCCL_SHM_DISABLE=1" in str(shown[0])


def test_the_child_reports_every_nccl_setting_that_changes_bus_bandwidth() -> None:
    from pcidoc.probes import protocol

    env = {"NCCL_NVLS_ENABLE": "0", "NCCL_MIN_NCHANNELS": "4", "NCCL_DEBUG": "INFO", "X": "1"}
    assert protocol.nccl_settings(env) == {"NCCL_NVLS_ENABLE": "0", "NCCL_MIN_NCHANNELS": "4"}


# ------------------------------------------------------------- results survive a deadline


def _cell_result(src: int, dst: int, value: float, gpus: list[int]) -> dict:
    values = [[None] * len(gpus) for _ in gpus]
    values[gpus.index(src)][gpus.index(dst)] = value
    return {
        "type": "result",
        "kind": "p2p",
        "measurement": {
            "kind": "bandwidth",
            "p2p": "enabled",
            "unit": "GB/s",
            "gpus": gpus,
            "values": values,
            "source": "probe",
        },
        "extra": {"copies_by_pair": {f"{src}->{dst}": 8}},
    }


def test_p2p_cells_emitted_per_pair_merge_and_a_timeout_names_the_rest() -> None:
    gpus = [0, 1, 2]
    builder = OutcomeBuilder(ProbeSpec(name="p2p", params={"mode": "quick"}))
    pairs = [[a, b] for a in gpus for b in gpus if a != b]
    builder.feed(json.dumps({"type": "info", "data": {"plan": {"pairs": pairs}}}))
    builder.feed(json.dumps(_cell_result(0, 1, 20.0, gpus)))
    builder.feed(json.dumps(_cell_result(0, 2, 21.0, gpus)))
    builder.add_error("timeout", "timed out after 60 s")
    outcome = builder.finish()
    matrices = [r.measurement for r in outcome.results]
    assert len(matrices) == 1
    matrix = matrices[0]
    assert isinstance(matrix, P2PMatrixMeasurement)
    assert matrix.value(0, 1) == 20.0 and matrix.value(0, 2) == 21.0
    assert matrix.value(1, 0) is None
    assert matrix.conditions["copies_by_pair"] == {"0->1": 8, "0->2": 8}
    message = outcome.errors[0].message
    assert "2 of 6 ordered pairs measured" in message
    assert "GPU1->GPU0" in message and "GPU0->GPU1" not in message


def test_scaling_ladder_emitted_per_rank_count_keeps_the_latest() -> None:
    def ladder(counts: list[int]) -> ScalingMeasurement:
        return ScalingMeasurement(
            backend="nccl",
            model_params=10,
            per_rank_batch=4,
            points=[ScalingPoint(ranks=n, throughput_samples_per_s=100.0 * n) for n in counts],
        )

    results = [("scaling", ladder([1])), ("scaling", ladder([1, 2])), ("transfer", object())]
    keep = merge.merge_results(results)
    assert keep == [1, 2]
    note = merge.not_measured({"plan": {"rank_counts": [1, 2, 4, 8]}}, [results[i] for i in keep])
    assert note == "timed out before rank count(s) 4, 8"


def test_a_timed_out_p2p_probe_leaves_its_pairs_in_the_capture() -> None:
    gpus = [0, 1]
    stream = [
        (0.0, {"type": "info", "data": {"plan": {"pairs": [[0, 1], [1, 0]]}}}),
        (0.0, _cell_result(0, 1, 20.0, gpus)),
        (10_000.0, _cell_result(1, 0, 20.0, gpus)),
    ]
    cap = machine(2, link="NV4")
    runner = FakeProbeRunner(streams={"p2p": stream}, speed=float("inf"))
    console.measure(cap, "quick", False, lambda _l: None, runner=runner, live_processes=False)
    enabled = [m for m in cap.measurements.p2p if m.p2p == "enabled"]
    assert enabled and enabled[0].value(0, 1) == 20.0
    errors = [e for e in cap.measurements.probe_errors if e.probe == "p2p"]
    assert errors and errors[0].kind == "timeout"
    assert "1 of 2 ordered pairs measured" in errors[0].message


# ------------------------------------------------------------------ interruption and options


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-5"])
def test_probe_timeout_must_be_a_positive_finite_number(value: str) -> None:
    code, doc, lines = _probe(
        _args("transfer", timeout=float(value)), machine(1), FakeProbeRunner()
    )
    assert code == 3
    assert doc is None
    assert len(lines) == 1 and lines[0].startswith("pcidoc: --timeout:")


def test_interrupted_probe_still_prints_one_json_document() -> None:
    class Interrupting(FakeProbeRunner):
        def run(self, spec, on_progress=None, cancel=None):  # type: ignore[override]
            if spec.name != "p2p":
                return super().run(spec, on_progress, cancel)
            exc = ProbeSignalled(15)
            partial = ProbeOutcome(probe="p2p")
            partial.errors.append(
                ProbeError(probe="p2p", message="interrupted by SIGTERM", kind="interrupted")
            )
            exc.outcome = partial  # type: ignore[attr-defined]
            raise exc

    code, doc, lines = _probe(_args("p2p"), machine(2, link="NV4"), Interrupting())
    assert code == 143
    assert doc is not None and doc["ok"] is False
    assert doc["interrupted"] == "SIGTERM"
    assert [e["kind"] for e in doc["errors"]] == ["interrupted"]
    assert any("interrupted by SIGTERM" in line for line in lines)


def test_ctrl_c_without_a_partial_outcome_is_reported_too() -> None:
    class CtrlC(FakeProbeRunner):
        def run(self, spec, on_progress=None, cancel=None):  # type: ignore[override]
            if spec.name == "env":
                return super().run(spec, on_progress, cancel)
            raise KeyboardInterrupt

    code, doc, _lines = _probe(_args("transfer"), machine(1), CtrlC())
    assert code == 130
    assert doc is not None and doc["errors"][0]["kind"] == "interrupted"


def test_no_cuda_gpu_is_said_before_torch_is_missing() -> None:
    stream = [
        (
            0.0,
            {
                "type": "error",
                "kind": "unavailable",
                "message": "torch is not installed: pip install 'pcidoc[probes]'",
            },
        ),
    ]
    empty = Capture.empty("live")
    code, doc, _lines = _probe(_args("transfer"), empty, FakeProbeRunner(streams={"env": stream}))
    assert code == 3
    message = doc["errors"][0]["message"]
    assert message.startswith("no CUDA GPU")
    assert "torch is not installed" in message
    cap = Capture.empty("live")
    console.measure(
        cap,
        "quick",
        False,
        lambda _l: None,
        runner=FakeProbeRunner(streams={"env": stream}),
        live_processes=False,
    )
    assert {e.message.split(" (")[0] for e in cap.measurements.probe_errors} == {
        "no CUDA GPU on this machine"
    }

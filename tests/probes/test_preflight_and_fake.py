"""Pre-flight refusal, the fake runner, the protocol and the link sampler."""

from __future__ import annotations

import json
import math
import os
import threading

import pytest

from pcidoc.model.facts import GpuProcess
from pcidoc.probes import preflight, protocol
from pcidoc.probes.linkstate import LinkSampler, read_sysfs_link
from pcidoc.probes.runner import OutcomeBuilder, ProbeSpec
from tests.builders import machine
from tests.fakes import fake_probes as fake
from tests.fakes.fake_probes import FakeProbeRunner

# ------------------------------------------------------------------------------ preflight


def test_busy_processes_from_capture_and_live_nvml() -> None:
    cap = machine(4, link="NV4")
    cap.host.processes = [
        GpuProcess(pid=101, name="python", gpus=[0, 2]),
        GpuProcess(pid=102, name="elsewhere", gpus=[3]),
        GpuProcess(pid=os.getpid(), name="me", gpus=[0]),
    ]
    busy = preflight.busy_processes(cap, [0, 1, 2], live={1: [103, os.getpid()], 3: [104]})
    assert [(b.pid, b.gpus) for b in busy] == [(101, [0, 2]), (103, [1])]
    message = preflight.refusal_message(busy)
    assert message.startswith(
        "other processes are using the GPUs: pid 101 (python) on GPU0, GPU2; pid 103"
    )
    assert "--force" in message
    assert "wrong numbers" in message
    assert preflight.busy_processes(cap, [1]) == []


def test_refusal_message_truncates() -> None:
    busy = [preflight.BusyProcess(i, None, [0]) for i in range(8)]
    assert "and 3 more" in preflight.refusal_message(busy)


def test_live_processes_without_nvml_is_none() -> None:
    # This test machine has no NVIDIA driver; where one exists the result is a dict.
    result = preflight.live_gpu_processes([0])
    assert result is None or isinstance(result, dict)


# ------------------------------------------------------------------------------- protocol


def test_protocol_round_trip_and_rejections() -> None:
    line = protocol.encode(protocol.progress("p2p", 1.7, "x"))
    assert protocol.decode(line)["fraction"] == 1.0
    with pytest.raises(protocol.ProtocolError):
        protocol.decode(b'{"type": "result", "kind": "nope", "measurement": {}}')
    with pytest.raises(protocol.ProtocolError):
        protocol.decode("[]")
    with pytest.raises(protocol.ProtocolError):
        protocol.decode("")
    with pytest.raises(ValueError):
        protocol.result("nope", {})
    assert protocol.error("weird", "m")["kind"] == "error"


def test_invalid_measurement_is_garbage_not_a_crash() -> None:
    builder = OutcomeBuilder(ProbeSpec(name="t"))
    bad = {"type": "result", "kind": "transfer", "measurement": {"gpu": "zero"}}
    builder.feed(json.dumps(bad))
    outcome = builder.finish()
    assert outcome.garbage_lines == 1
    assert outcome.results == []
    assert outcome.error is not None
    assert "no result" in outcome.error.message


# ---------------------------------------------------------------------------- fake runner


def test_fake_streams_are_marked_synthetic() -> None:
    spec = ProbeSpec(name="transfer", params={"gpus": [{"index": 0}]})
    outcome = FakeProbeRunner().run(spec)
    assert outcome.ok
    for result in outcome.results:
        assert result.measurement.source == fake.SYNTHETIC_SOURCE
        assert result.extra.get("synthetic") is True


def test_fake_garbage_stream() -> None:
    outcome = FakeProbeRunner(streams={"transfer": fake.GARBAGE_STREAM}).run(
        ProbeSpec(name="transfer")
    )
    assert outcome.ok
    assert len(outcome.results) == 1
    assert outcome.garbage_lines == 2


def test_fake_hang_times_out_in_virtual_time() -> None:
    slept: list[float] = []
    runner = FakeProbeRunner(streams={"p2p": fake.HANG_STREAM}, sleep=slept.append, speed=1e6)
    outcome = runner.run(ProbeSpec(name="p2p", deadline_s=40))
    assert outcome.error is not None
    assert outcome.error.kind == "timeout"
    assert outcome.error.message == "timed out after 40 s"
    assert sum(slept) < 0.01


def test_fake_cancel_while_waiting() -> None:
    cancel = threading.Event()
    timer = threading.Timer(0.05, cancel.set)
    timer.start()
    stream = [(0.0, protocol.progress("p2p", 0.1, "a")), (10.0, protocol.progress("p2p", 1, "b"))]
    outcome = FakeProbeRunner(streams={"p2p": stream}).run(ProbeSpec(name="p2p"), cancel=cancel)
    timer.join()
    assert outcome.error is not None
    assert outcome.error.kind == "interrupted"


def test_fake_timing_is_controllable() -> None:
    slept: list[float] = []
    stream = [(2.0, protocol.progress("x", 0.5, "a")), (4.0, protocol.progress("x", 1.0, "b"))]
    seen = []
    FakeProbeRunner(streams={"x": stream}, speed=2.0, sleep=slept.append).run(
        ProbeSpec(name="x"), on_progress=seen.append
    )
    assert slept == [1.0, 2.0]
    assert [p.message for p in seen] == ["a", "b"]


def test_fake_inf_speed_never_sleeps() -> None:
    runner = FakeProbeRunner(step_s=5.0, speed=math.inf, sleep=lambda _s: pytest.fail("slept"))
    assert runner.run(ProbeSpec(name="p2p", params={"gpus": [{"index": 0}, {"index": 1}]})).ok


# ------------------------------------------------------------------------------ linkstate


def test_link_sampler_reads_sysfs_and_keeps_the_best(tmp_path) -> None:
    dev = tmp_path / "bus" / "pci" / "devices" / "0000:18:00.0"
    dev.mkdir(parents=True)
    (dev / "current_link_speed").write_text("2.5 GT/s PCIe\n")
    (dev / "current_link_width").write_text("16\n")
    assert read_sysfs_link("0000:18:00.0", str(tmp_path)) == (1, 16)
    sampler = LinkSampler("0000:18:00.0", 0, sys_root=str(tmp_path), use_nvml=False)
    sampler.sample()
    (dev / "current_link_speed").write_text("16.0 GT/s PCIe\n")  # trained up under load
    sampler.sample()
    (dev / "current_link_speed").write_text("2.5 GT/s PCIe\n")  # idle again
    reading = sampler.stop()
    assert (reading.gen, reading.width, reading.samples) == (4, 16, 3)
    assert reading.source == "sysfs"
    assert read_sysfs_link(None) == (None, None)
    assert read_sysfs_link("0000:99:00.0", str(tmp_path)) == (None, None)


def test_link_sampler_thread_starts_and_stops(tmp_path) -> None:
    reading = (
        LinkSampler("0000:18:00.0", None, interval_s=0.001, sys_root=str(tmp_path), use_nvml=False)
        .start()
        .stop()
    )
    assert reading.gen is None
    assert reading.samples >= 1
    assert reading.source is None

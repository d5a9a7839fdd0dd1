"""``pcidoc watch`` keeps every link change of each GPU and its upstream port, counts
transitions per minute, exports them and lets ``pcie.link-flap`` judge them (fake NVML, fake
clock, fake sysfs port reader)."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from pcidoc.fleet.prom import write_prom
from pcidoc.watch.flaps import FlapRecorder, sysfs_port_link
from tests.watch.test_watch import FakeClock, _machine


def _step(watcher, fake, clock: FakeClock, change) -> None:  # type: ignore[no-untyped-def]
    clock.t += 10.0
    fake.advance(10.0)
    change()
    watcher.step()


def test_width_flaps_warn_and_are_exported(tmp_path: Path) -> None:
    clock = FakeClock()
    fake, watcher = _machine(tmp_path, clock)
    watcher.start()
    for width in (8, 16, 8, 16):
        _step(watcher, fake, clock, lambda w=width: setattr(fake.gpus[1], "pcie_current_width", w))
    counts = watcher.flaps.counts()
    assert counts["GPU1"][0] == 4 and counts["GPU0"][0] == 0
    assert counts["GPU1"][1] == 4 / (40 / 60)
    result = watcher.report.check("pcie.link-flap")  # type: ignore[union-attr]
    assert result.severity == "warn" and "width changed 4 time" in result.summary
    prom = tmp_path / "node.prom"
    write_prom(watcher.registry(clock.t), str(prom))
    samples = {
        (s.name, s.labels.get("device")): s.value
        for family in text_string_to_metric_families(prom.read_text())
        for s in family.samples
    }
    assert samples[("pcidoc_link_transitions", "GPU1")] == 4
    assert samples[("pcidoc_link_transitions", "GPU0")] == 0


def test_idle_generation_changes_are_power_saving_not_flaps(tmp_path: Path) -> None:
    clock = FakeClock()
    fake, watcher = _machine(tmp_path, clock)
    watcher.start()
    for gen in (1, 5, 1):
        _step(watcher, fake, clock, lambda g=gen: setattr(fake.gpus[0], "pcie_current_gen", g))
    assert watcher.flaps.counts()["GPU0"][0] == 3
    result = watcher.report.check("pcie.link-flap")  # type: ignore[union-attr]
    assert result.severity == "info" and "power saving" in result.summary


def test_upstream_port_changes_are_recorded(tmp_path: Path) -> None:
    readings = iter([(4, 16), (4, 16), (4, 8)])
    recorder = FlapRecorder(port_reader=lambda _bus: next(readings))
    assert recorder.read_port(0.0, "GPU0", "0000:00:01.0") is None
    assert recorder.read_port(10.0, "GPU0", "0000:00:01.0") is None
    assert recorder.read_port(20.0, "GPU0", "0000:00:01.0") == (4, 8)
    trace = recorder.history().traces[0]
    assert (trace.device, trace.kind, [s.width for s in trace.samples]) == (
        "GPU0 upstream",
        "port",
        [16, 8],
    )


def test_sysfs_port_link_reads_speed_and_width(tmp_path: Path) -> None:
    port = tmp_path / "0000:00:01.0"
    port.mkdir()
    (port / "current_link_speed").write_text("16.0 GT/s PCIe\n")
    (port / "current_link_width").write_text("8\n")
    assert sysfs_port_link("0000:00:01.0", root=str(tmp_path)) == (4, 8)
    assert sysfs_port_link("0000:00:02.0", root=str(tmp_path)) == (None, None)

"""``pcidoc watch`` over the fake NVML backend, on a fake clock."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pcidoc.cli.watch import watch_command
from pcidoc.collect.counters import CounterSampler
from pcidoc.collect.live import collect_live
from pcidoc.watch.watcher import Watcher, run_loop
from tests.fakes.fake_nvml import FakeNvmlBackend


class FakeClock:
    """Monotonic and wall time that move only when the loop sleeps."""

    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t

    def iso(self) -> str:
        return f"t+{self.t - 1000.0:g}s"


def _machine(tmp_path: Path, clock: FakeClock) -> tuple[FakeNvmlBackend, Watcher]:
    fake = FakeNvmlBackend.hgx(n=2, links=4, numa_nodes=1)
    fake.init()
    capture = collect_live(
        sys_root=str(tmp_path), proc_root=str(tmp_path), etc_root=str(tmp_path),
        backend=fake, environ={},
    )  # fmt: skip
    capture.host.hostname = "gpu-node-1"
    sampler = CounterSampler.for_capture(fake, capture, sys_root=str(tmp_path))
    sampler.clock = clock.monotonic
    return fake, Watcher(capture, sampler, clock.iso)


def test_changes_become_events_and_ctrl_c_exits_130(tmp_path: Path) -> None:
    clock = FakeClock()
    fake, watcher = _machine(tmp_path, clock)
    fake.gpus[0].pcie_tx_bytes_per_s = 12.6e9  # synthetic traffic: 20 % of Gen5 x16
    script = {
        1: lambda: setattr(fake.gpus[1], "pcie_current_width", 8),
        2: lambda: setattr(fake.gpus[0], "replay_count", fake.gpus[0].replay_count + 500),
        3: lambda: setattr(fake.gpus[0].nvlinks[2], "up", False),
        4: lambda: None,  # nothing changes: no event
    }
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock.t += seconds
        fake.advance(seconds)
        step = len(sleeps)
        if step in script:
            script[step]()
        else:
            raise KeyboardInterrupt

    events: list[dict] = []
    prom = tmp_path / "node.prom"
    code = run_loop(
        watcher, interval=5.0, sleep=sleep, unix_time=lambda: clock.t, emit=events.append,
        prom=str(prom),
    )  # fmt: skip
    assert code == 130
    assert sleeps == [5.0] * 5
    kinds = [e["event"] for e in events]
    assert kinds[0] == "started" and events[0]["gpus"] == 2 and events[0]["node"] == "gpu-node-1"
    link = next(e for e in events if e["event"] == "link_changed")
    assert (link["gpu"], link["before"], link["after"], link["downtrained"]) == (
        "GPU1",
        "Gen5 x16",
        "Gen5 x8",
        True,
    )
    assert link["time"] == "t+5s" and link["pstate"] == "P0"
    replays = next(e for e in events if e["event"] == "replays_grew")
    assert (replays["gpu"], replays["delta"], replays["per_s"]) == ("GPU0", 500, 100.0)
    down = next(e for e in events if e["event"] == "nvlink_down")
    assert (down["gpu"], down["link"], down["time"]) == ("GPU0", 2, "t+15s")
    changed = {(e["check"], e["after"]) for e in events if e["event"] == "check_changed"}
    assert ("pcie.link-speed", "fail") in changed or ("pcie.link-speed", "warn") in changed
    assert any(check == "nvlink.state" for check, _ in changed)
    # The quiet step added nothing: every event is at most t+15s.
    assert all(e["time"] != "t+20s" for e in events)
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(prom.read_text(encoding="utf-8"))
        for s in family.samples
    }
    assert samples[("pcidoc_watch_samples", (("node", "gpu-node-1"),))] == 5
    speed = samples[
        ("pcidoc_pcie_link_speed_ratio",
         (("bus_id", "0000:28:00.0"), ("gpu", "GPU1"), ("node", "gpu-node-1"), ("pstate", "P0")))
    ]  # fmt: skip
    assert speed == 0.5
    util = samples[
        ("pcidoc_pcie_link_utilisation_ratio",
         (("bus_id", "0000:18:00.0"), ("direction", "tx"), ("gpu", "GPU0"), ("node", "gpu-node-1")))
    ]  # fmt: skip
    assert util == 0.2


def test_count_stops_the_loop_with_0(tmp_path: Path) -> None:
    clock = FakeClock()
    _fake, watcher = _machine(tmp_path, clock)
    events: list[dict] = []

    def sleep(seconds: float) -> None:
        clock.t += seconds

    code = run_loop(
        watcher, interval=1.0, sleep=sleep, unix_time=lambda: clock.t, emit=events.append, count=3
    )
    assert code == 0 and [e["event"] for e in events] == ["started"]


def test_watch_command_writes_jsonl_and_prom(tmp_path: Path, monkeypatch, capsys) -> None:
    import pcidoc.collect.live as live

    real = live.collect_live
    monkeypatch.setattr(
        live, "collect_live",
        lambda backend: real(
            sys_root=str(tmp_path), proc_root=str(tmp_path), etc_root=str(tmp_path),
            backend=backend, environ={},
        ),
    )  # fmt: skip
    args = SimpleNamespace(
        interval=0.2, prom=str(tmp_path / "w.prom"), jsonl=str(tmp_path / "w.jsonl"), count=2
    )
    code = watch_command(args, lambda _m: None, backend_factory=lambda: FakeNvmlBackend.hgx(n=2))
    assert code == 0
    lines = (tmp_path / "w.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["event"] == "started"
    assert "pcidoc_worst_severity" in (tmp_path / "w.prom").read_text(encoding="utf-8")


def test_watch_without_gpus_is_one_line_error(tmp_path: Path, monkeypatch) -> None:
    from pcidoc.errors import PcidocError

    args = SimpleNamespace(interval=1.0, prom=None, jsonl=None, count=1)
    with pytest.raises(PcidocError, match="needs NVML"):
        watch_command(
            args, lambda _m: None,
            backend_factory=lambda: FakeNvmlBackend(init_error="LIBRARY_NOT_FOUND"),
        )  # fmt: skip
    with pytest.raises(PcidocError, match="--interval"):
        watch_command(SimpleNamespace(interval=0.01, prom=None, jsonl=None, count=1), print)


# ------------------------------------------------------------------ issue 30: signals

_CHILD = """
import os, signal, sys
from types import SimpleNamespace
import pcidoc.collect.live as live
from pcidoc.cli.watch import watch_command
from tests.fakes.fake_nvml import FakeNvmlBackend

root, mode = sys.argv[1], sys.argv[2]
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a shell, not as under xdist
real = live.collect_live
live.collect_live = lambda backend: real(
    sys_root=root, proc_root=root, etc_root=root, backend=backend, environ={}
)
args = SimpleNamespace(
    interval=0.2, prom=os.path.join(root, "w.prom"), jsonl=os.path.join(root, "w.jsonl"),
    count=None, ras_user=None,
)
if mode == "in-write":  # the signal arrives between the temporary file and the rename
    real_fsync = os.fsync

    def fsync(fd):
        os.kill(os.getpid(), signal.SIGTERM)
        real_fsync(fd)

    os.fsync = fsync
sys.exit(watch_command(
    args, lambda m: print(m, file=sys.stderr, flush=True),
    backend_factory=lambda: FakeNvmlBackend.hgx(n=2),
))
"""


def _watch_child(tmp_path: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )


@pytest.mark.parametrize(
    ("signum", "code", "name"),
    [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGHUP, 129, "SIGHUP"), (signal.SIGINT, 130, "")],
)
def test_a_signal_ends_watch_with_its_exit_code_and_one_line(
    tmp_path: Path, signum: int, code: int, name: str
) -> None:
    child = _watch_child(tmp_path, "loop")
    try:
        jsonl = tmp_path / "w.jsonl"
        # Wait for the first files (the condition); the bound only stops a hung child.
        for _ in range(6000):
            if jsonl.exists() and (tmp_path / "w.prom").exists():
                break
            assert child.poll() is None, child.stderr
            time.sleep(0.05)
        else:
            pytest.fail("watch wrote no first files (hung child)")
        child.send_signal(signum)
        _out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == code, err
    assert err.strip().splitlines()[-1] == ("pcidoc: interrupted" + (f" by {name}" if name else ""))
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.jsonl", "w.prom"]


def test_a_signal_during_the_prom_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    child = _watch_child(tmp_path, "in-write")
    try:
        _out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 143, err
    assert err.strip().splitlines()[-1] == "pcidoc: interrupted by SIGTERM"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.jsonl"]

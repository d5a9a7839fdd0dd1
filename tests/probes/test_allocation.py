"""The probes measure only the GPUs of the user's allocation (issue 20 item 6).

``CUDA_VISIBLE_DEVICES`` (indices or UUIDs), Slurm's ``SLURM_STEP_GPUS`` / ``SLURM_JOB_GPUS``
and the cgroup v1 device list restrict the GPUs; the child's ``CUDA_VISIBLE_DEVICES`` names only
those, and the output says which GPUs were used. Streams are synthetic (tests.fakes).
"""

from __future__ import annotations

import io
import json

from pcidoc.probes import allocation, console, session
from pcidoc.probes.allocation import GpuId
from tests.builders import machine
from tests.fakes.fake_probes import FakeProbeRunner
from tests.fakes.fake_probes import probe_args as _args

GPUS = [
    GpuId(0, "GPU-aaaa1111-0000", "0000:17:00.0"),
    GpuId(1, "GPU-bbbb2222-0000", "0000:3b:00.0"),
    GpuId(2, "GPU-cccc3333-0000", "0000:86:00.0"),
    GpuId(3, "GPU-dddd4444-0000", "0000:af:00.0"),
]


def _uuid(index: int) -> str:
    return f"GPU-{index:08d}-0000-0000-0000-000000000000"


# --------------------------------------------------------------------- CUDA_VISIBLE_DEVICES


def test_visible_devices_by_index_and_uuid() -> None:
    assert allocation.parse_visible_devices("2,0", GPUS) == ([2, 0], [])
    assert allocation.parse_visible_devices("GPU-bbbb2222-0000,3", GPUS)[0] == [1, 3]
    # A unique prefix is enough (as in CUDA), with or without "GPU-".
    assert allocation.parse_visible_devices("cccc", GPUS)[0] == [2]
    assert allocation.parse_visible_devices("GPU-DDDD", GPUS)[0] == [3]


def test_visible_devices_end_at_the_first_invalid_entry() -> None:
    for value, expected in (("1,7,2", [1]), ("0,-1,2", [0]), ("1,1,2", [1]), ("GPU-ffff,0", [])):
        indices, notes = allocation.parse_visible_devices(value, GPUS)
        assert indices == expected, value
        assert notes and "ends there" in notes[0]


def test_empty_visible_devices_allow_no_gpu_and_mig_entries_are_skipped() -> None:
    assert allocation.parse_visible_devices("", GPUS) == ([], [])
    indices, notes = allocation.parse_visible_devices("MIG-1234-5678,1", GPUS)
    assert indices == [1] and "MIG" in notes[0]


def test_visible_device_indices_are_cudas_order_resolved_by_the_child() -> None:
    """Without CUDA_DEVICE_ORDER=PCI_BUS_ID, CUDA numbers GPUs fastest first: "0" on a box
    with a slow GPU0 and a fast GPU1 is GPU1. The env probe (run with the user's variables)
    reports what it sees, and the allocation follows it."""
    found = allocation.current(GPUS, {"CUDA_VISIBLE_DEVICES": "0"}, driver_root="/nonexistent")
    assert found.resolve_in_child and found.indices == [0]  # provisional, PCI order
    child_saw = [{"ordinal": 0, "uuid": None, "bus_id": "0000:3B:00.0"}]
    resolved = allocation.resolve(found, GPUS, child_saw)
    assert resolved.indices == [1] and not resolved.resolve_in_child
    assert "as the probe child saw it: GPU1" in resolved.notes[-1]
    by_uuid = allocation.resolve(found, GPUS, [{"ordinal": 0, "uuid": "GPU-cccc3333-0000"}])
    assert by_uuid.indices == [2]
    blind = allocation.resolve(found, GPUS, [{"ordinal": 0, "uuid": None, "bus_id": None}])
    assert blind.indices == [0] and "could not name its GPUs" in blind.notes[-1]


def test_pci_bus_order_and_uuids_need_no_child() -> None:
    env = {"CUDA_VISIBLE_DEVICES": "2,0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    found = allocation.current(GPUS, env, driver_root="/nonexistent")
    assert (found.indices, found.resolve_in_child) == ([2, 0], False)
    found = allocation.current(GPUS, {"CUDA_VISIBLE_DEVICES": "GPU-cccc"}, driver_root="/x")
    assert (found.indices, found.resolve_in_child) == ([2], False)
    assert allocation.resolve(found, GPUS, []) is found


def test_visible_devices_win_over_slurm() -> None:
    env = {"CUDA_VISIBLE_DEVICES": "3", "SLURM_JOB_GPUS": "0,1"}
    found = allocation.current(GPUS, env, driver_root="/nonexistent", proc_root="/nonexistent")
    assert (found.indices, found.source) == ([3], "CUDA_VISIBLE_DEVICES")
    assert found.describe() == "CUDA_VISIBLE_DEVICES=3"


def test_no_restriction_without_any_source(tmp_path) -> None:
    found = allocation.current(GPUS, {}, driver_root=tmp_path, proc_root=tmp_path)
    assert found.indices is None and found.source is None and found.allows(3)


# ---------------------------------------------------------------------------- Slurm, cgroup


def _driver(tmp_path, minors: dict[int, str]):
    root = tmp_path / "gpus"
    for minor, bus in minors.items():
        entry = root / bus
        entry.mkdir(parents=True)
        (entry / "information").write_text(
            f"Model: \t\t NVIDIA H100\nDevice Minor: \t {minor}\nBus Location: \t {bus}\n"
        )
    return root


def test_slurm_ids_are_pci_order_indices_not_device_minors(tmp_path) -> None:
    """Slurm 21.08+ writes GPU indices in PCI bus order (gres_common.c), not /dev/nvidiaN
    minors: with minors 2,3,0,1, SLURM_JOB_GPUS=0,1 is GPUs 0 and 1, not 2 and 3."""
    driver = _driver(
        tmp_path, {2: "0000:17:00.0", 3: "0000:3b:00.0", 0: "0000:86:00.0", 1: "0000:af:00.0"}
    )
    found = allocation.current(
        GPUS, {"SLURM_JOB_GPUS": "0,1"}, driver_root=driver, proc_root=tmp_path
    )
    assert (found.indices, found.source, found.value) == ([0, 1], "SLURM_JOB_GPUS", "0,1")
    # The older reading is named, since the job cannot see which Slurm wrote the list.
    assert any("minor numbers, which would be GPU2, GPU3" in note for note in found.notes)
    env = {"SLURM_STEP_GPUS": "3,1", "SLURM_JOB_GPUS": "0-3"}
    found = allocation.current(GPUS, env, driver_root=driver, proc_root=tmp_path)
    assert (found.indices, found.source) == ([3, 1], "SLURM_STEP_GPUS")


def test_slurm_indices_follow_the_pci_bus_not_nvml_numbering(tmp_path) -> None:
    shuffled = [GpuId(0, None, "0000:86:00.0"), GpuId(1, None, "0000:17:00.0")]
    found = allocation.current(
        shuffled, {"SLURM_JOB_GPUS": "0"}, driver_root=tmp_path / "none", proc_root=tmp_path
    )
    assert found.indices == [1]  # index 0 is the GPU lowest on the bus


def test_slurm_ids_without_the_driver_files_say_what_could_not_be_checked(tmp_path) -> None:
    found = allocation.current(
        GPUS, {"SLURM_JOB_GPUS": "1,3"}, driver_root=tmp_path / "none", proc_root=tmp_path
    )
    assert found.indices == [1, 3]
    assert any("could not be checked" in note for note in found.notes)
    same = _driver(tmp_path, {i: g.bus_id for i, g in enumerate(GPUS)})
    found = allocation.current(
        GPUS, {"SLURM_JOB_GPUS": "1,3"}, driver_root=same, proc_root=tmp_path
    )
    assert found.indices == [1, 3] and found.notes == []  # both readings agree: nothing to say


def _cgroup(tmp_path, devices: str):
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text("12:memory:/job\n4:devices:/slurm/job_7\n")
    group = tmp_path / "cg" / "devices" / "slurm" / "job_7"
    group.mkdir(parents=True)
    (group / "devices.list").write_text(devices)
    return proc, tmp_path / "cg"


def test_cgroup_v1_device_list(tmp_path) -> None:
    proc, root = _cgroup(tmp_path, "c 195:255 rwm\nc 195:2 rwm\nc 195:0 rwm\nc 1:3 rwm\n")
    found = allocation.current(
        GPUS, {}, driver_root=tmp_path / "none", proc_root=proc, cgroup_root=root
    )
    assert (found.indices, found.source) == ([0, 2], "cgroup")


def test_cgroup_allowing_everything_restricts_nothing(tmp_path) -> None:
    proc, root = _cgroup(tmp_path, "a *:* rwm\n")
    found = allocation.current(
        GPUS, {}, driver_root=tmp_path / "none", proc_root=proc, cgroup_root=root
    )
    assert found.indices is None


# ----------------------------------------------------------------- the probes honour it


def test_session_probes_only_the_allocated_gpus(monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", f"{_uuid(2)},1")
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")  # "1" is then NVML's GPU1
    cap = machine(4)
    runner = FakeProbeRunner(gpu_count=2, speed=float("inf"))
    lines: list[str] = []
    console.measure(cap, "quick", False, lines.append, runner=runner, live_processes=False)
    visible = {spec.name: spec.env.get("CUDA_VISIBLE_DEVICES") for spec in runner.calls}
    # Every child, the env probe included, sees only GPUs 1 and 2 (never all four).
    assert visible["env"] == f"{_uuid(1)},{_uuid(2)}"
    assert visible["transfer"] == f"{_uuid(1)},{_uuid(2)}"
    transfer = next(spec for spec in runner.calls if spec.name == "transfer")
    assert [g["index"] for g in transfer.params["gpus"]] == [1, 2]
    assert {t.gpu for t in cap.measurements.transfers} == {1, 2}
    assert any("GPUs of this job: GPUs 1-2 (CUDA_VISIBLE_DEVICES=" in line for line in lines)
    # ... and which Python and torch measured.
    assert "pcidoc: probes run by /synthetic/bin/python3 (Python 3.11.0), torch synthetic" in lines
    conditions = cap.measurements.transfers[0].conditions
    assert conditions["allocation"]["gpus"] == [2, 1]


def test_probe_command_reports_the_gpus_it_used(monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,3")
    out = io.StringIO()
    runner = FakeProbeRunner(gpu_count=2, speed=float("inf"))
    code = console.probe_command(
        _args("transfer"), lambda _l: None, runner=runner, capture=machine(4), stdout=out
    )
    document = json.loads(out.getvalue())
    assert code == 0
    assert document["gpus_used"] == [0, 3]
    assert document["allocation"] == {
        "source": "CUDA_VISIBLE_DEVICES",
        "value": "0,3",
        "gpus": [0, 3],
    }
    assert runner.calls[-1].env["CUDA_VISIBLE_DEVICES"] == f"{_uuid(0)},{_uuid(3)}"


def test_probe_command_refuses_gpus_outside_the_allocation(monkeypatch) -> None:
    monkeypatch.setenv("SLURM_JOB_GPUS", "0,1")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(allocation, "driver_minors", lambda root="": {})
    lines: list[str] = []
    runner = FakeProbeRunner(gpu_count=4, speed=float("inf"))
    code = console.probe_command(
        _args("p2p", gpus="1,2"), lines.append, runner=runner, capture=machine(4)
    )
    assert code == 3
    assert runner.calls == []
    assert "outside this job's GPUs (SLURM_JOB_GPUS=0,1)" in lines[-1]


def test_probe_gpus_drops_gpus_outside_the_allocation() -> None:
    cap = machine(4)
    found = allocation.Allocation([3, 1], "CUDA_VISIBLE_DEVICES", "3,1")
    assert session.probe_gpus(cap, None, found) == ([1, 3], [])
    indices, notes = session.probe_gpus(cap, [0, 1], found)
    assert indices == [1] and "GPU0 skipped: outside this job's GPUs" in notes[0]

"""GPUs are named by UUID or bus id end to end: a lost GPU is left out without shifting the
others, and no plan has more ranks than GPUs a CUDA device is known for (issue 28 item 2).

Streams and machines are synthetic (tests.fakes, tests.builders).
"""

from __future__ import annotations

import os

import pytest

from pcidoc.probes import console, cudautil, envprobe, session
from pcidoc.probes.child import Emitter
from pcidoc.probes.runner import OutcomeBuilder, ProbeSpec, child_environment
from tests.builders import machine
from tests.fakes.fake_probes import FakeProbeRunner, synthetic_env

ENV = {"cuda_available": True, "nccl_available": True, "gloo_available": True}


def _lose_gpu1(cap, keep_uuids: bool = True):
    """GPU1 lost: NVML gave no UUID nor bus id; CUDA sees the 7 others."""
    lost = cap.gpus[1]
    lost.nvml_error, lost.uuid, lost.bus_id = "GPU_IS_LOST", None, None
    if not keep_uuids:
        for gpu in cap.gpus:
            gpu.uuid = None
    return cap


def _cuda_devices(cap, uuids: bool = False) -> list[dict]:
    """What the env probe reports: the healthy GPUs in PCI order, bus ids from CUDA."""
    healthy = [g for g in cap.gpus if not g.nvml_error]
    return [
        {"ordinal": k, "bus_id": g.bus_id.upper(), "uuid": g.uuid if uuids else None}
        for k, g in enumerate(healthy)
    ]


@pytest.mark.parametrize("keep_uuids", [True, False])
def test_a_lost_gpu_is_left_out_of_every_plan_and_shifts_nothing(keep_uuids: bool) -> None:
    cap = _lose_gpu1(machine(8, link="NV18"), keep_uuids)
    env = {
        **ENV,
        "device_count": 7,
        "devices": _cuda_devices(cap),
        "cuda_device_order": "PCI_BUS_ID",
    }
    plan = session.plan_probes(cap, "quick", False, env)
    assert [s.name for s in plan.specs] == ["transfer", "p2p", "collectives"]
    assert any(n.startswith("GPU1 left out: NVML error GPU_IS_LOST") for n in plan.notes)
    transfer, p2p, collectives = plan.specs
    for spec in (transfer, p2p):
        entries = spec.params["gpus"]
        assert [e["index"] for e in entries] == [0, 2, 3, 4, 5, 6, 7]
        if keep_uuids:  # every GPU left has a UUID: the child sees exactly those
            assert [e["ordinal"] for e in entries] == list(range(7))
            assert cap.gpus[1].uuid is None
            assert spec.env["CUDA_VISIBLE_DEVICES"].count("GPU-") == 7
        else:  # matched by the bus ids CUDA reported: GPU2 is CUDA device 1, not 2
            assert [e["ordinal"] for e in entries] == list(range(7))
            assert "CUDA_VISIBLE_DEVICES" not in spec.env
    world = collectives.params["world"]
    assert world <= 7
    assert 1 not in {g for v in collectives.params["gpus_by_count"].values() for g in v}
    assert max(int(k) for k in collectives.params["members"]) <= 7
    assert len(collectives.params["ordinals"]) == world
    assert set(collectives.params["ordinals"]) <= set(range(7))


def test_without_bus_ids_or_uuids_from_cuda_nothing_is_guessed() -> None:
    """CUDA sees 7 devices and names none of them; NVML has 8 GPUs, one lost: which CUDA
    device is which cannot be told, so no GPU is measured under a wrong name."""
    cap = _lose_gpu1(machine(8, link="NV18"), keep_uuids=False)
    devices = [{"ordinal": k, "bus_id": None, "uuid": None} for k in range(7)]
    env = {**ENV, "device_count": 7, "devices": devices, "cuda_device_order": "PCI_BUS_ID"}
    plan = session.plan_probes(cap, "quick", False, env)
    assert plan.specs == []
    assert {e.message for e in plan.errors} == {"no usable GPU to measure"}
    assert any("GPU2 left out: no CUDA device" in n for n in plan.notes)


def test_pci_position_only_where_nothing_can_shift_it() -> None:
    cap = machine(4, link="PIX")
    for gpu in cap.gpus:
        gpu.uuid = None
    blind = [{"ordinal": k, "bus_id": None, "uuid": None} for k in range(4)]
    env = {**ENV, "device_count": 4, "devices": blind, "cuda_device_order": "PCI_BUS_ID"}
    entries, child_env = session.gpu_entries(cap, [1, 3], env)
    assert [(e["index"], e["ordinal"]) for e in entries] == [(1, 1), (3, 3)]
    assert child_env == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    fastest_first = {**env, "cuda_device_order": None}
    assert session.gpu_entries(cap, [1, 3], fastest_first)[0] == []
    restricted = {**env, "cuda_visible_devices": "1,3"}
    assert session.gpu_entries(cap, [1, 3], restricted)[0] == []


def test_cuda_visible_devices_in_fastest_first_order_follow_the_child(monkeypatch) -> None:
    """CUDA_VISIBLE_DEVICES=0 without PCI_BUS_ID on a box whose fastest GPU is GPU1: the env
    probe runs with the user's variables, names the device by bus id, and GPU1 is measured."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    cap = machine(2, link="PHB")
    cap.gpus[0].name, cap.gpus[1].name = "NVIDIA GeForce RTX 3060", "NVIDIA GeForce RTX 4090"
    env_stream = synthetic_env(
        devices=[{"ordinal": 0, "bus_id": cap.gpus[1].bus_id.upper(), "uuid": None}],
        cuda_visible_devices="0",
        cuda_device_order=None,
    )
    runner = FakeProbeRunner({"env": env_stream}, speed=float("inf"))
    lines: list[str] = []
    console.measure(cap, "quick", False, lines.append, runner=runner, live_processes=False)
    env_call, transfer = runner.calls[0], runner.calls[1]
    assert env_call.name == "env" and env_call.env == {}  # the user's variables, untouched
    assert [g["index"] for g in transfer.params["gpus"]] == [1]
    assert transfer.env["CUDA_VISIBLE_DEVICES"] == cap.gpus[1].uuid
    assert {t.gpu for t in cap.measurements.transfers} == {1}
    assert any("as the probe child saw it: GPU1" in line for line in lines)


def test_the_users_cuda_device_order_never_survives_a_spec_that_names_its_order(
    monkeypatch,
) -> None:
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "FASTEST_FIRST")
    cap = machine(2, link="PIX")
    plan = session.plan_probes(cap, "quick", False, {**ENV, "device_count": 2, "devices": []})
    for spec in plan.specs:
        assert child_environment(spec.env)["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID", spec.name
    # A spec that says nothing leaves the user's choice alone (pcidoc adds no default).
    assert child_environment({})["CUDA_DEVICE_ORDER"] == "FASTEST_FIRST"


@pytest.mark.parametrize("old_torch", [False, True])
def test_env_probe_names_devices_by_bus_id_even_on_old_torch(
    old_torch: bool, tmp_path, monkeypatch
) -> None:
    """torch 2.4 and older have no ``pci_bus_id`` in device properties: the env probe asks
    CUDA (cudaDeviceGetPCIBusId on the runtime torch loaded)."""
    pytest.importorskip("torch")
    from tests.probes.fake_cuda import FakeLibcudart, FakeTorch, OldTorch

    fake = (OldTorch if old_torch else FakeTorch)(2)
    lib = FakeLibcudart(bus_ids=("0000:10:00.0", "0000:11:00.0"))
    monkeypatch.setattr(envprobe, "import_torch", lambda: fake)
    monkeypatch.setattr(cudautil, "find_cudart", lambda torch: (lib, "fake"))
    path = tmp_path / "stream.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        envprobe.run({}, Emitter(fd, "env"))
    finally:
        os.close(fd)
    builder = OutcomeBuilder(ProbeSpec(name="env"))
    for line in path.read_bytes().splitlines():
        builder.feed(line)
    info = builder.finish().info
    assert [d["bus_id"] for d in info["devices"]] == ["0000:10:00.0", "0000:11:00.0"]
    assert info["bus_id_source"] == ("cudaDeviceGetPCIBusId" if old_torch else "torch")
    assert "cuda_device_order" in info

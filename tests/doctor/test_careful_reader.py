"""Issue 30, "what a careful reader notices", in the doctor's words: numbers that belong to the
machine at hand (an A100 has 12 NVLinks, not 18), and the remedies a finding was missing."""

from __future__ import annotations

import pytest

from tests.builders import machine
from tests.doctor.test_nvlink import result


@pytest.mark.parametrize(
    ("name", "gpus", "link", "has"),
    [
        ("NVIDIA A100-SXM4-80GB", 8, "NV12", "the 12 of one NVIDIA A100-SXM4-80GB"),
        ("NVIDIA A800-SXM4-80GB", 8, "NV8", "the 8 of one NVIDIA A800-SXM4-80GB"),
        ("Tesla V100-SXM3-32GB", 16, "NV6", "the 6 of one Tesla V100-SXM3-32GB"),
        ("NVIDIA H100 80GB HBM3", 8, "NV18", "the 18 of one NVIDIA H100 80GB HBM3"),
        ("Some Future GPU", 8, "NV4", "the 18 any GPU has"),
    ],
)
def test_a_mesh_only_nvswitches_can_wire_names_the_links_this_gpu_has(
    name: str, gpus: int, link: str, has: str
) -> None:
    cap = machine(gpus, link=link, gpu_fields={"name": name})
    for gpu in cap.gpus:
        gpu.nvlinks = []  # a paste of the matrix: the count comes from the GPU model
    summary = result(cap, "nvlink.fabric").summary
    assert f"more than {has})" in summary, summary


def _nic_box(gpus: int, nics: int, near: str = "PIX") -> object:
    """``gpus`` GPUs and ``nics`` NICs; GPU i is ``near`` to NIC (i * nics // gpus)."""
    labels = [f"NIC{k}" for k in range(nics)]
    near_links = {(i, f"NIC{i * nics // gpus}"): near for i in range(gpus)}
    return machine(gpus, link="NV18", nics=labels, nic_links=near_links, nic_default="SYS")


@pytest.mark.parametrize(
    ("gpus", "nics", "words"),
    [
        (8, 8, ", 1:1 PIX)"),
        (8, 2, ", 4 GPUs share each)"),
        (12, 3, ", 4 GPUs share each)"),
        (16, 8, ", 2 GPUs share each)"),
    ],
)
def test_nic_sharing_is_said_as_it_is(gpus: int, nics: int, words: str) -> None:
    """ "every GPU has a PCIe-local NIC (... 1:1 PIX)" was said where 4 GPUs share each NIC."""
    summary = result(_nic_box(gpus, nics), "numa.nic-affinity").summary
    assert summary.startswith("every GPU has a PCIe-local NIC") and summary.endswith(words), summary
    if nics < gpus:
        assert "1:1" not in summary


def test_long_lists_say_how_many_more() -> None:
    res = result(_nic_box(12, 12), "numa.nic-affinity")
    assert len(res.evidence) == 9 and res.evidence[-1].text() == (
        "nearest NIC not listed: 4 more GPUs"
    )
    box = _nic_box(12, 12)
    for nic in box.nics:  # type: ignore[attr-defined]
        nic.name = f"mlx5_{nic.label[3:]}"
    inventory = result(box, "nccl.nic-inventory")
    assert "mlx5_7 and 4 more" in inventory.summary, inventory.summary


def test_a_command_lists_every_rail_nic_not_the_first_eight() -> None:
    labels = [f"NIC{k}" for k in range(20)]
    box = machine(4, nics=labels, nic_links={(k % 4, f"NIC{k}"): "PIX" for k in range(10)})
    for nic in box.nics:
        nic.name = f"mlx5_{nic.label[3:]}"
    res = result(box, "nccl.nic-inventory")
    assert "mlx5_7 and 2 more" in res.summary, res.summary
    rails = ",".join(f"mlx5_{k}" for k in range(10))
    assert any(f"NCCL_IB_HCA={rails}`" in line for line in res.remediation), res.remediation


@pytest.mark.parametrize("rows", [[(1024**3, 120.0)], []], ids=["judged", "no-busbw"])
def test_an_unknown_rank_count_is_said_in_words(rows: list[tuple[int, float]]) -> None:
    """A pasted nccl-tests table without its header: "all-reduce on ? ranks" read as a typo."""
    from tests.doctor.test_scaling import allreduce

    cap = machine(4, link="NV12")
    cap.topology.labels, cap.topology.links = [], []
    measurement = allreduce(rows)
    if not rows:
        from pcidoc.model import CollectiveRow

        measurement.rows = [CollectiveRow(size_bytes=1024**3, busbw_gbps=None, wrong=0)]
    cap.measurements.collectives = [measurement]
    res = result(cap, "scaling.allreduce")
    text = " ".join([res.summary, *(f.summary for f in res.findings)])
    assert "?" not in text and "an unknown number of ranks" in text, text


def test_a_gpus_audio_function_is_not_listed_as_another_device() -> None:
    """A GPU and its HDMI audio function (same bus and device, function 1) both fail recovery:
    one card, said once."""
    from pcidoc.collect.importers import import_texts

    log = (
        "[  +0.000004] pcieport 0000:00:03.0: AER: Uncorrected (Fatal) error received: "
        "0000:00:03.0\n"
        "[  +0.000004] pcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
        "type=Transaction Layer, (Requester ID)\n"
        "[  +0.000844] nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)\n"
        "[  +0.000010] snd_hda_intel 0000:03:00.1: AER: can't recover (no error_detected "
        "callback)\n"
        "[  +0.000300] pcieport 0000:00:03.0: AER: device recovery failed\n"
    )
    cap = import_texts([("dmesg.txt", log)]).capture
    res = result(cap, "kernel.aer")
    assert "GPU at 0000:03:00.0 (and its function .1)" in res.summary, res.summary
    assert "0000:03:00.1" not in res.summary and "0000:03:00.1" not in res.subjects


@pytest.mark.parametrize(
    ("gpu", "banner"),
    [
        ("NVIDIA H100 80GB HBM3", "NCCL version 2.18.3+cuda12.2"),
        (None, "NCCL version 2.21.5+cuda12.4"),
        ("NVIDIA GeForce RTX 4090", "NCCL version 2.19.3+cuda12.3"),
    ],
)
def test_a_version_that_was_read_is_never_a_skip(gpu: str | None, banner: str) -> None:
    """`nccl.version` said "skip" (no input) while its line printed the version it read."""
    from pcidoc.collect.importers import import_texts

    text = banner + "\n" + (f"GPU 0: {gpu} (UUID: GPU-1)\n" if gpu else "")
    cap = import_texts([("nccl.log", text)]).capture
    res = result(cap, "nccl.version")
    version = banner.split()[2].split("+")[0]
    assert version in res.summary and res.severity == "info", (res.severity, res.summary)
    assert "not judged" in res.summary


# ------------------------------------------------------------------ remedies that were missing


@pytest.mark.parametrize(
    ("bar1", "said"),
    [(None, "not in this capture"), (256 * 2**20, "Enable Resizable BAR"), (64 * 2**30, None)],
    ids=["unknown", "small", "large"],
)
def test_p2p_slower_than_staging_points_at_resizable_bar(
    bar1: int | None, said: str | None
) -> None:
    from tests.doctor.test_p2p import codes, matrix, pair_matrix

    cap = codes(machine(2, link="PXB"), "OK")
    for gpu in cap.gpus:
        gpu.bar1_total_bytes = bar1
    cap.measurements.p2p = [
        matrix("bandwidth", "enabled", pair_matrix(2, 8.0)),
        matrix("bandwidth", "disabled", pair_matrix(2, 20.0)),
    ]
    res = result(cap, "p2p.fallback")
    steps = " ".join(res.remediation)
    if said is None:
        assert "Resizable BAR" not in steps
    else:
        assert said in steps and "Above 4G Decoding" in steps, steps


def _fabric_box(name: str, n: int, state: str) -> object:
    from pcidoc.model.facts import NvLink

    cap = machine(n, link="NV18", gpu_fields={"name": name})
    for gpu in cap.gpus:
        gpu.nvlinks = [NvLink(link=k, state="up", remote_type="switch") for k in range(18)]
        gpu.fabric.state = state
        gpu.fabric.status = "Success" if state == "completed" else None
    return cap


@pytest.mark.parametrize("name", ["NVIDIA GB200", "NVIDIA GB300"])
def test_a_gb200_fabric_failure_points_at_imex_and_the_switch_trays(name: str) -> None:
    cap = _fabric_box(name, 4, "not_started")
    res = result(cap, "nvlink.fabric")
    assert res.severity == "fail"
    steps = " ".join(res.remediation)
    assert "nvidia-imex" in steps and "switch tray" in steps
    assert "nvidia-fabricmanager" not in steps  # runs on the switch trays, not on this node


def test_a_single_node_nvswitch_fabric_failure_points_at_the_fabric_manager() -> None:
    res = result(_fabric_box("NVIDIA H100 80GB HBM3", 8, "not_started"), "nvlink.fabric")
    steps = " ".join(res.remediation)
    assert res.severity == "fail" and "nvidia-fabricmanager" in steps
    assert "imex" not in steps


_WATCHDOG = (
    "[rank1]:[E1103 08:17:39.512000 2981 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, "
    "NumelOut=1, Timeout(ms)=600000) ran for 600032 milliseconds before timing out.\n"
)


@pytest.mark.parametrize(
    ("link", "expected"),
    [("PIX", "GPU0-GPU1, GPU0-GPU2"), ("PXB", "share a PCIe switch"), ("NV12", None), (None, "If")],
)
def test_a_hang_on_gpus_behind_one_switch_points_at_acs_and_vtd(
    link: str | None, expected: str | None
) -> None:
    from pcidoc.collect.importers import import_texts

    evidence = import_texts([("train.err", _WATCHDOG)]).capture.evidence
    cap = machine(4, link=link or "SYS")
    if link is None:
        cap.topology.labels, cap.topology.links = [], []
    cap.evidence = evidence
    res = result(cap, "nccl.watchdog")
    assert res.severity == "fail", res.summary
    steps = " ".join(res.remediation)
    if expected is None:
        assert "VT-d" not in steps
    else:
        assert expected in steps and "VT-d" in steps and "ACS" in steps, steps

"""nvidia-smi nvlink -s / -R / -e / -info and nvidia-smi -L."""

from __future__ import annotations

from tests.importers.helpers import load, warnings_of

STATUS = (
    "$ nvidia-smi nvlink -s\n"
    "GPU 0: NVIDIA H200 (UUID: GPU-bbbbbbbb-0000-0000-0000-000000000000)\n"
    "         Link 0: 26.562 GB/s\n"
    "         Link 1: <inactive>\n"
    "         Link 2: 26.562 GB/s\n"
    "GPU 1: NVIDIA H200 (UUID: GPU-bbbbbbbb-0000-0000-0000-000000000001)\n"
    "         Link 0: 26.562 GB/s\n"
    "         Link 1: 26.562 GB/s\n"
    "         Link 2: 26.562 GB/s\n"
)


def test_status_links_states_and_rates() -> None:
    cap = load(STATUS)
    gpu0 = cap.gpu(0)
    assert gpu0 is not None
    assert gpu0.name == "NVIDIA H200"
    assert gpu0.uuid == "GPU-bbbbbbbb-0000-0000-0000-000000000000"
    assert [(n.link, n.state, n.speed_gbps) for n in gpu0.nvlinks] == [
        (0, "up", 26.562),
        (1, "down", None),
        (2, "up", 26.562),
    ]
    assert cap.origin.sources[0].formats == ["nvidia-smi-nvlink"]
    assert "5 up, 1 inactive" in cap.origin.sources[0].read[0]
    assert "no imported output lists every GPU" in cap.unavailable["gpus"]


def test_old_tab_indented_format_with_integer_rate_and_elision() -> None:
    text = (
        "GPU 0: Tesla V100-SXM2-32GB (UUID: GPU-cccccccc-0000-0000-0000-000000000000)\n"
        "\t Link 0: 25 GB/s\n"
        "\t Link 1: 25 GB/s\n"
        "\t Link 2: 25 GB/s\n"
        "GPU 1: Tesla V100-SXM2-32GB (UUID: GPU-cccccccc-0000-0000-0000-000000000001)\n"
        "\t Link 0: 25 GB/s\n"
        "......\n"
    )
    cap = load(text)
    assert [n.speed_gbps for n in cap.gpu(0).nvlinks] == [25.0, 25.0, 25.0]  # type: ignore[union-attr]
    gpu1 = cap.gpu(1)
    assert gpu1 is not None
    assert len(gpu1.nvlinks) == 1
    assert gpu1.why("nvlinks") == "only 1 of its links were in the paste (elided)"
    assert "GPU1 shows 1 of 3 links (kept as partial)" in warnings_of(cap)
    assert cap.gpu(2) is None


def test_elision_between_gpus_keeps_only_the_gpus_shown() -> None:
    text = STATUS.replace("GPU 1:", "...\nGPU 5:")
    cap = load(text)
    assert [g.index for g in cap.gpus] == [0, 5]
    assert "GPUs after GPU0 are elided" in warnings_of(cap)


def test_remote_ends_become_gpu_links_when_the_bus_id_is_a_gpu() -> None:
    remote = (
        "$ nvidia-smi nvlink -R\n"
        "GPU 0: NVIDIA A800 80GB PCIe (UUID: GPU-dddddddd-0000-0000-0000-000000000000)\n"
        "         Link 0: Remote Device 00000000:81:00.0: Link 0\n"
        "         Link 1: Remote Device 00000000:81:00.0: Link 1\n"
        "GPU 1: NVIDIA A800 80GB PCIe (UUID: GPU-dddddddd-0000-0000-0000-000000000001)\n"
        "         Link 0: Remote Device 00000000:41:00.0: Link 0\n"
        "         Link 1: Remote Device 00000000:41:00.0: Link 1\n"
    )
    devices = (
        "Device: 0, NVIDIA A800 80GB PCIe, pciBusID: 41, pciDeviceID: 0, pciDomainID:0\n"
        "Device: 1, NVIDIA A800 80GB PCIe, pciBusID: 81, pciDeviceID: 0, pciDomainID:0\n"
    )
    alone = load(remote)
    assert alone.gpu(0).nvlinks[0].remote_type is None  # type: ignore[union-attr]
    assert alone.gpu(0).nvlinks[0].state == "up"  # type: ignore[union-attr]
    cap = load(remote, devices)
    link = cap.gpu(0).nvlinks[1]  # type: ignore[union-attr]
    assert link.remote_bus_id == "0000:81:00.0"
    assert link.remote_link == 1
    assert link.remote_type == "gpu"


def test_remote_entries_numbered_over_active_links_are_mapped() -> None:
    remote = (
        "$ nvidia-smi nvlink -R\n"
        "GPU 0: NVIDIA H100 NVL (UUID: GPU-eeeeeeee-0000-0000-0000-000000000000)\n"
        "         Link 0: Remote Device 00000000:B1:00.0: Link 0\n"
        "         Link 1: Remote Device 00000000:B1:00.0: Link 2\n"
    )
    status = (
        "$ nvidia-smi nvlink -s\n"
        "GPU 0: NVIDIA H100 NVL (UUID: GPU-eeeeeeee-0000-0000-0000-000000000000)\n"
        "         Link 0: 26.562 GB/s\n"
        "         Link 1: <inactive>\n"
        "         Link 2: 26.562 GB/s\n"
    )
    cap = load(remote + status)
    links = {n.link: n for n in cap.gpu(0).nvlinks}  # type: ignore[union-attr]
    assert links[1].state == "down"
    assert links[1].remote_bus_id is None
    assert links[2].remote_link == 2
    assert links[2].remote_bus_id == "0000:b1:00.0"
    assert "numbers only the active links" in warnings_of(cap)


def test_error_counters() -> None:
    text = (
        "$ nvidia-smi nvlink -e\n"
        "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-ffffffff-0000-0000-0000-000000000000)\n"
        "         Link 0: Replay Errors: 3\n"
        "         Link 0: Recovery Errors: 1\n"
        "         Link 0: CRC Errors: 0\n"
    )
    cap = load(text)
    assert cap.gpu(0).nvlinks[0].errors == {"replay": 3, "recovery": 1, "crc_flit": 0}  # type: ignore[union-attr]


def test_info_section_is_read_past() -> None:
    text = STATUS + (
        "\n$ nvidia-smi nvlink -info\n"
        "GPU 0: NVIDIA H200 (UUID: GPU-bbbbbbbb-0000-0000-0000-000000000000)\n"
        "         NVLE: disabled\n"
        "         Firmware Version:\n"
        "             MSE: 1:2:3\n"
    )
    cap = load(text)
    assert cap.origin.sources[0].formats == ["nvidia-smi-nvlink"]
    assert len(cap.gpu(0).nvlinks) == 3  # type: ignore[union-attr]
    assert "gpus" in cap.unavailable


def test_gpu_list_enumerates_all_gpus() -> None:
    text = (
        "$ nvidia-smi -L\n"
        "GPU 0: NVIDIA L40S (UUID: GPU-12345678-0000-0000-0000-000000000000)\n"
        "GPU 1: NVIDIA L40S (UUID: GPU-12345678-0000-0000-0000-000000000001)\n"
    )
    cap = load(text)
    assert cap.origin.sources[0].formats == ["nvidia-smi-list"]
    assert [g.name for g in cap.gpus] == ["NVIDIA L40S", "NVIDIA L40S"]
    assert "gpus" not in cap.unavailable

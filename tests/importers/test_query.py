"""nvidia-smi -q parser."""

from __future__ import annotations

from tests.importers.helpers import load, warnings_of


def _block(bus: str, name: str, uuid: str, gen: str, host_max: str, width: str) -> str:
    return (
        f"GPU {bus}\n"
        f"    Product Name                          : {name}\n"
        "    Product Architecture                  : Hopper\n"
        "    Persistence Mode                      : Enabled\n"
        "    MIG Mode\n"
        "        Current                           : Enabled\n"
        "        Pending                           : Disabled\n"
        "    Serial Number                         : 9990000000001\n"
        f"    GPU UUID                              : {uuid}\n"
        "    GPU Virtualization Mode\n"
        "        Virtualization Mode               : VGPU\n"
        "    PCI\n"
        f"        Bus Id                            : {bus}\n"
        "        GPU Link Info\n"
        "            PCIe Generation\n"
        "                Max                       : 5\n"
        f"                Current                   : {gen}\n"
        "                Device Current            : 1\n"
        "                Device Max                : 5\n"
        f"                Host Max                  : {host_max}\n"
        "            Link Width\n"
        "                Max                       : 16x\n"
        f"                Current                   : {width}\n"
        "        Replays Since Reset               : 7\n"
        "        Replay Number Rollovers           : 1\n"
        "        Tx Throughput                     : 2500 KB/s\n"
        "        Rx Throughput                     : 1 MB/s\n"
        "    Performance State                     : P8\n"
        "    BAR1 Memory Usage\n"
        "        Total                             : 128 GiB\n"
        "        Used                              : 1 MiB\n"
        "    Clocks\n"
        "        Max                               : 999 MHz\n"
        "    Fabric\n"
        "        State                             : In Progress\n"
        "        Status                            : N/A\n"
        "        CliqueId                          : 3\n"
        "        ClusterUUID                       : 11111111-2222-3333-4444-555555555555\n"
    )


FULL = (
    "==============NVSMI LOG==============\n"
    "\n"
    "Timestamp                                 : Mon Jan  1 00:00:00 2024\n"
    "Driver Version                            : 550.54.15\n"
    "CUDA Version                              : 12.4\n"
    "\n"
    "Attached GPUs                             : 2\n"
    + _block(
        "00000000:1B:00.0",
        "NVIDIA H100 80GB HBM3",
        "GPU-aaaaaaaa-0000-0000-0000-000000000001",
        "1",
        "5",
        "16x",
    )
    + "\n"
    + _block(
        "00000000:9C:00.0",
        "NVIDIA H100 80GB HBM3",
        "GPU-aaaaaaaa-0000-0000-0000-000000000002",
        "4",
        "N/A",
        "8x",
    )
)


def test_full_query_of_all_gpus() -> None:
    cap = load("$ nvidia-smi -q\n" + FULL)
    assert [g.index for g in cap.gpus] == [0, 1]
    assert cap.driver.driver_version == "550.54.15"
    assert cap.driver.cuda_driver_version == "12.4"
    assert "gpus" not in cap.unavailable
    gpu0, gpu1 = cap.gpu(0), cap.gpu(1)
    assert gpu0 is not None
    assert gpu1 is not None
    assert gpu0.bus_id == "0000:1b:00.0"
    assert gpu1.bus_id == "0000:9c:00.0"
    assert gpu0.name == "NVIDIA H100 80GB HBM3"
    assert gpu0.architecture == "Hopper"
    assert gpu0.serial == "9990000000001"
    assert gpu0.uuid == "GPU-aaaaaaaa-0000-0000-0000-000000000001"
    assert gpu0.persistence_mode is True
    assert gpu0.mig.enabled is True
    assert gpu0.mig.pending is False
    assert gpu0.virtualization_mode == "vgpu"
    assert (gpu0.pcie.max_gen, gpu0.pcie.current_gen) == (5, 1)
    assert (gpu0.pcie.device_max_gen, gpu0.pcie.host_max_gen) == (5, 5)
    assert (gpu0.pcie.max_width, gpu0.pcie.current_width) == (16, 16)
    assert gpu1.pcie.current_width == 8
    assert gpu1.pcie.host_max_gen is None
    assert gpu1.pcie.why("host_max_gen") == "N/A in nvidia-smi -q"
    assert gpu0.replay_count == 7
    assert gpu0.replay_rollover_count == 1
    assert gpu0.tx_bytes_per_s == 2.5e6
    assert gpu0.rx_bytes_per_s == 1e6
    assert gpu0.pstate == 8
    assert gpu0.bar1_total_bytes == 128 * 2**30
    assert gpu0.fabric.state == "in_progress"
    assert gpu0.fabric.status is None
    assert gpu0.fabric.clique_id == 3
    assert gpu0.fabric.cluster_uuid == "11111111-2222-3333-4444-555555555555"
    assert cap.origin.warnings == []


def test_dash_i_selects_the_index() -> None:
    text = FULL.split("\n\nGPU 00000000:9C")[0]
    cap = load("root@h:~# nvidia-smi -i 3 -q\n" + text)
    assert [g.index for g in cap.gpus] == [3]
    assert cap.gpu(3).bus_id == "0000:1b:00.0"  # type: ignore[union-attr]
    assert cap.unavailable["gpus"] == (
        "nvidia-smi -q reports 2 attached GPUs; the imported text describes only GPU3"
    )


def test_partial_paste_without_dash_i_is_block_order_and_flagged() -> None:
    text = FULL.split("\n\nGPU 00000000:9C")[0]
    cap = load(text)
    assert [g.index for g in cap.gpus] == [0]
    assert "1 of 2 attached GPUs in the paste and no '-i N' visible" in warnings_of(cap)
    assert "only GPU0" in cap.unavailable["gpus"]


def test_uncertain_index_is_matched_by_bus_id() -> None:
    only_second = "Attached GPUs                             : 2\n" + _block(
        "00000000:9C:00.0",
        "NVIDIA H100 80GB HBM3",
        "GPU-aaaaaaaa-0000-0000-0000-000000000002",
        "4",
        "5",
        "16x",
    )
    p2p_test = (
        "Device: 0, NVIDIA H100 80GB HBM3, pciBusID: 1b, pciDeviceID: 0, pciDomainID:0\n"
        "Device: 1, NVIDIA H100 80GB HBM3, pciBusID: 9c, pciDeviceID: 0, pciDomainID:0\n"
        "Device=0 CAN Access Peer Device=1\n"
        "Device=1 CAN Access Peer Device=0\n"
    )
    cap = load(only_second, p2p_test)
    gpu1 = cap.gpu(1)
    assert gpu1 is not None
    assert gpu1.uuid == "GPU-aaaaaaaa-0000-0000-0000-000000000002"
    assert cap.gpu(0).uuid is None  # type: ignore[union-attr]
    assert "is GPU1 according to another output" in warnings_of(cap)


def test_stray_blank_lines_and_other_indentation() -> None:
    text = (
        "Attached GPUs : 1\n"
        "GPU 00000000:41:00.0\n"
        "\tProduct Name : NVIDIA RTX A6000\n"
        "\tPCI\n"
        "\t\tGPU Link Info\n"
        "\t\t\tPCIe Generation\n"
        "\t\t\t\tMax : 4\n"
        "\n"
        "\t\t\t\tCurrent : 1\n"
        "\t\t\tLink Width\n"
        "\n"
        "\t\t\t\tMax : 16x\n"
        "\t\t\t\tCurrent : 4x\n"
        "\t\tReplays Since Reset : 12\n"
    )
    cap = load(text)
    gpu = cap.gpu(0)
    assert gpu is not None
    assert gpu.name == "NVIDIA RTX A6000"
    assert (gpu.pcie.max_gen, gpu.pcie.current_gen) == (4, 1)
    assert (gpu.pcie.max_width, gpu.pcie.current_width) == (16, 4)
    assert gpu.replay_count == 12
    assert gpu.bus_id == "0000:41:00.0"


def test_bare_fabric_snippet_is_attributed_to_gpu0_with_a_warning() -> None:
    text = (
        "Fabric\n"
        "    State                             : Completed\n"
        "    Status                            : Fabric Manager Error\n"
        "    CliqueId                          : 0\n"
        "    ClusterUUID                       : 00000000-0000-0000-0000-000000000000\n"
    )
    cap = load(text)
    gpu = cap.gpu(0)
    assert gpu is not None
    assert gpu.fabric.state == "completed"
    assert gpu.fabric.status == "Fabric Manager Error"
    assert gpu.fabric.clique_id == 0
    assert "without its 'GPU <bus id>' heading; attributed to GPU0" in warnings_of(cap)


def test_query_followed_by_another_command() -> None:
    text = (
        "$ nvidia-smi -q -d PCIE\n"
        "Attached GPUs                             : 1\n"
        "GPU 00000000:05:00.0\n"
        "    PCI\n"
        "        GPU Link Info\n"
        "            PCIe Generation\n"
        "                Max                       : 3\n"
        "                Current                   : 3\n"
        "$ nvidia-smi topo -m\n"
        "        GPU0    CPU Affinity\n"
        "GPU0     X      0-3\n"
    )
    cap = load(text)
    assert cap.gpu(0).pcie.current_gen == 3  # type: ignore[union-attr]
    assert cap.topology.labels == ["GPU0"]
    assert cap.origin.sources[0].formats == ["nvidia-smi-query", "nvidia-smi-topo"]

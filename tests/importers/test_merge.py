"""Several outputs of one machine merge into one capture."""

from __future__ import annotations

from tests.importers.helpers import load, warnings_of

TOPO = (
    "$ nvidia-smi topo -m\n"
    "        GPU0    GPU1    NIC0    CPU Affinity    NUMA Affinity   GPU NUMA ID\n"
    "GPU0     X      NV12    PXB     0-23    0               N/A\n"
    "GPU1    NV12     X      SYS     24-47   1               N/A\n"
    "NIC0    PXB     SYS      X\n"
)
LEGEND = "NIC Legend:\n\n  NIC0: mlx5_3\n"
QUERY = (
    "$ nvidia-smi -q -i 1\n"
    "Driver Version                            : 535.104.05\n"
    "CUDA Version                              : 12.2\n"
    "Attached GPUs                             : 2\n"
    "GPU 00000000:B2:00.0\n"
    "    Product Name                          : NVIDIA A800-SXM4-80GB\n"
    "    PCI\n"
    "        GPU Link Info\n"
    "            PCIe Generation\n"
    "                Max                       : 4\n"
    "                Current                   : 4\n"
)
DEVICES = (
    "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\n"
    "Device: 0, NVIDIA A800-SXM4-80GB, pciBusID: 31, pciDeviceID: 0, pciDomainID:0\n"
    "Device: 1, NVIDIA A800-SXM4-80GB, pciBusID: b2, pciDeviceID: 0, pciDomainID:0\n"
    "Device=0 CAN Access Peer Device=1\n"
    "Device=1 CAN Access Peer Device=0\n"
)


def test_outputs_of_one_machine_merge_by_index() -> None:
    cap = load(TOPO, QUERY, DEVICES, names=["topo.txt", "q.txt", "p2p.txt"])
    assert [g.index for g in cap.gpus] == [0, 1]
    gpu1 = cap.gpu(1)
    assert gpu1 is not None
    assert gpu1.bus_id == "0000:b2:00.0"
    assert gpu1.numa_node == 1
    assert gpu1.pcie.current_gen == 4
    assert gpu1.name == "NVIDIA A800-SXM4-80GB"
    assert cap.gpu(0).bus_id == "0000:31:00.0"  # type: ignore[union-attr]
    assert cap.driver.driver_version == "535.104.05"
    assert cap.p2p.can_access_peer == [[None, True], [True, None]]
    assert [s.path for s in cap.origin.sources] == ["topo.txt", "q.txt", "p2p.txt"]
    assert [s.formats for s in cap.origin.sources] == [
        ["nvidia-smi-topo"],
        ["nvidia-smi-query"],
        ["p2pBandwidthLatencyTest"],
    ]
    assert cap.unavailable == {}
    assert cap.origin.warnings == []


def test_disagreements_keep_the_first_and_warn() -> None:
    other = DEVICES.replace("pciBusID: b2", "pciBusID: b3").replace(
        "Device: 0, NVIDIA A800-SXM4-80GB", "Device: 0, NVIDIA A100-SXM4-80GB"
    )
    cap = load(QUERY, DEVICES, other, names=["q.txt", "a.txt", "b.txt"])
    warnings = warnings_of(cap)
    assert "GPU1 bus_id: '0000:b2:00.0' (q.txt (nvidia-smi -q)) vs '0000:b3:00.0'" in warnings
    assert "GPU0 name: 'NVIDIA A800-SXM4-80GB' (a.txt (p2pBandwidthLatencyTest)) vs" in warnings
    assert cap.gpu(1).bus_id == "0000:b2:00.0"  # type: ignore[union-attr]
    assert cap.gpu(0).name == "NVIDIA A800-SXM4-80GB"  # type: ignore[union-attr]


def test_gpu_count_mismatch_is_reported() -> None:
    eight = "\n".join(
        f"Device: {i}, NVIDIA A800-SXM4-80GB, pciBusID: {0x10 + i:x}, pciDeviceID: 0, pciDomainID:0"
        for i in range(8)
    )
    cap = load(TOPO, "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\n" + eight)
    assert len(cap.gpus) == 8
    assert "GPU count differs between outputs" in warnings_of(cap)
    assert "t0.txt (topo -m): 2" in warnings_of(cap)


def test_subset_sources_do_not_invent_gpus() -> None:
    bandwidth = (
        " Device 3: NVIDIA A800-SXM4-80GB\n"
        " Host to Device Bandwidth, 1 Device(s)\n"
        " PINNED Memory Transfers\n"
        "   Transfer Size (Bytes)        Bandwidth(GB/s)\n"
        "   32000000                     24.1\n"
    )
    cap = load(bandwidth)
    assert [g.index for g in cap.gpus] == [3]
    assert cap.unavailable["gpus"] == (
        "no imported output lists every GPU of the machine; known from the text: GPU3"
    )
    assert cap.topology.labels == []
    assert "topology" in cap.unavailable


def test_nic_legend_from_another_file_and_legend_gaps() -> None:
    cap = load(TOPO, LEGEND)
    assert cap.nic("NIC0").name == "mlx5_3"  # type: ignore[union-attr]
    two_nics = TOPO.replace("NIC0    CPU", "NIC0    NIC1    CPU").replace(
        "PXB     0-23", "PXB     SYS     0-23"
    )
    cap = load(two_nics, LEGEND)
    assert "no name for NIC1" in warnings_of(cap)
    assert cap.nic("NIC1").why("name") == "not in the pasted NIC legend"  # type: ignore[union-attr]


def test_second_topology_that_differs() -> None:
    changed = TOPO.replace("NV12     X", "NV6      X").replace("X      NV12", "X      NV6")
    cap = load(TOPO, changed)
    assert cap.topology.link("GPU0", "GPU1") == "NV12"
    assert "a second topology matrix that differs; kept the first" in warnings_of(cap)


def test_p2p_capabilities_from_two_files_combine() -> None:
    read = "$ nvidia-smi topo -p2p r\n        GPU0    GPU1\n GPU0   X       OK\n GPU1   OK      X\n"
    nvlink = read.replace("-p2p r", "-p2p n").replace("OK", "NS")
    cap = load(read, nvlink)
    assert cap.p2p.status("read", 0, 1) == "OK"
    assert cap.p2p.status("nvlink", 0, 1) == "NS"


def test_driver_versions_that_disagree() -> None:
    other = QUERY.replace("535.104.05", "550.54.14")
    cap = load(QUERY, other)
    assert cap.driver.driver_version == "535.104.05"
    assert "driver version: 535.104.05 (t0.txt) vs 550.54.14 (t1.txt); kept the first" in (
        warnings_of(cap)
    )


def test_hostname_is_never_taken_from_prompts() -> None:
    cap = load(
        "root@secret-host-17:~# " + TOPO.split("\n", 1)[1].join(["nvidia-smi topo -m\n", ""])
    )
    assert cap.host.hostname is None
    assert cap.host.why("hostname") == "not taken from pasted prompts (often redacted)"


def test_read_lines_and_warnings_count_in_english_on_every_real_paste() -> None:
    """'1 host in the prefixes', '2 devices': no '(s)' in what an import says it read."""
    from pcidoc.collect.importers import import_texts
    from pcidoc.errors import PcidocError
    from tests.conftest import realdata_dir

    shared = realdata_dir().parent
    files = sorted(
        p for root in ("realdata", "realdata-evidence") for p in (shared / root).rglob("*.txt")
    )
    assert len(files) > 50
    seen = 0
    for path in files:
        text = "".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[3:])
        try:
            capture = import_texts([(path.name, text)]).capture
        except PcidocError:  # an unrecognised paste is another test's business
            continue
        for source in capture.origin.sources:
            lines = [*source.read, *source.warnings]
            seen += len(lines)
            assert not [line for line in lines if "(s)" in line], (path.name, lines)
    assert seen > 100

"""cuda-samples p2pBandwidthLatencyTest parser."""

from __future__ import annotations

import pytest

from pcidoc.model.capture import Capture
from pcidoc.model.measurements import P2PMatrixMeasurement
from tests.importers.helpers import load, warnings_of

OUTPUT = (
    "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\n"
    "Device: 0, NVIDIA L40S, pciBusID: 3b, pciDeviceID: 0, pciDomainID:0\n"
    "Device: 1, NVIDIA L40S, pciBusID: 5e, pciDeviceID: 0, pciDomainID:0\n"
    "Device: 2, NVIDIA L40S, pciBusID: d8, pciDeviceID: 0, pciDomainID:1\n"
    "Device=0 CAN Access Peer Device=1\n"
    "Device=0 CANNOT Access Peer Device=2\n"
    "Device=1 CAN Access Peer Device=0\n"
    "Device=1 CANNOT Access Peer Device=2\n"
    "Device=2 CANNOT Access Peer Device=0\n"
    "Device=2 CANNOT Access Peer Device=1\n"
    "\n"
    "***NOTE: In case a device doesn't have P2P access to other one, it falls back to normal "
    "memcopy procedure.\n"
    "So you can see lesser Bandwidth (GB/s) and unstable Latency (us) in those cases.\n"
    "\n"
    "P2P Connectivity Matrix\n"
    "     D\\D     0     1     2\n"
    "     0       1     1     0\n"
    "     1       1     1     0\n"
    "     2       0     0     1\n"
    "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n"
    "   D\\D     0      1      2 \n"
    "     0 700.10  19.50  18.25 \n"
    "     1  19.60 701.20  18.30 \n"
    "     2  18.20  18.40 699.90 \n"
    "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n"
    "   D\\D     0      1      2 \n"
    "     0 702.00  24.75  18.10 \n"
    "     1  24.80 700.00  18.15 \n"
    "     2  18.05  18.20 701.00 \n"
    "Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n"
    "   D\\D     0      1      2 \n"
    "     0 705.00  30.10  29.90 \n"
    "     1  30.20 706.00  29.80 \n"
    "     2  29.70  29.60 704.00 \n"
    "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)\n"
    "   D\\D     0      1      2 \n"
    "     0 706.00  48.50  29.90 \n"
    "     1  48.40 705.00  29.70 \n"
    "     2  29.60  29.50 703.00 \n"
    "P2P=Disabled Latency Matrix (us)\n"
    "   GPU     0      1      2 \n"
    "     0   1.90  11.20  12.30 \n"
    "     1  11.10   1.80  12.40 \n"
    "     2  12.20  12.10   1.85 \n"
    "\n"
    "   CPU     0      1      2 \n"
    "     0   2.50   6.10   6.40 \n"
    "     1   6.00   2.40   6.30 \n"
    "     2   6.20   6.35   2.45 \n"
    "P2P=Enabled Latency (P2P Writes) Matrix (us)\n"
    "   GPU     0      1      2 \n"
    "     0   1.90   1.40  12.30 \n"
    "     1   1.45   1.80  12.40 \n"
    "     2  12.20  12.10   1.85 \n"
    "\n"
    "   CPU     0      1      2 \n"
    "     0   2.50   1.70   6.40 \n"
    "     1   1.75   2.40   6.30 \n"
    "     2   6.20   6.35   2.45 \n"
    "\n"
    "NOTE: The CUDA Samples are not meant for performance measurements. Results may vary when "
    "GPU Boost is enabled.\n"
)


def _one(cap: Capture, **want: object) -> P2PMatrixMeasurement:
    found = [m for m in cap.measurements.p2p if all(getattr(m, k) == v for k, v in want.items())]
    assert len(found) == 1, found
    return found[0]


def test_full_output() -> None:
    cap = load("user@ws:~/cuda-samples/bin$ ./p2pBandwidthLatencyTest\n" + OUTPUT)
    assert [(g.index, g.name, g.bus_id) for g in cap.gpus] == [
        (0, "NVIDIA L40S", "0000:3b:00.0"),
        (1, "NVIDIA L40S", "0000:5e:00.0"),
        (2, "NVIDIA L40S", "0001:d8:00.0"),
    ]
    assert cap.p2p.gpus == [0, 1, 2]
    assert cap.p2p.can_access_peer == [
        [None, True, False],
        [True, None, False],
        [False, False, None],
    ]
    assert len(cap.measurements.p2p) == 8
    uni_off = _one(cap, kind="bandwidth", bidirectional=False, p2p="disabled")
    assert uni_off.value(0, 1) == 19.5
    assert uni_off.access is None
    assert uni_off.method == "ce"
    assert uni_off.unit == "GB/s"
    assert uni_off.source == "import:t0.txt"
    uni_on = _one(cap, kind="bandwidth", bidirectional=False, p2p="enabled")
    assert uni_on.access == "write"
    assert uni_on.value(1, 0) == 24.8
    bi_on = _one(cap, kind="bandwidth", bidirectional=True, p2p="enabled")
    assert bi_on.value(0, 1) == 48.5
    lat_gpu = _one(cap, kind="latency", p2p="disabled", latency_side="gpu")
    lat_cpu = _one(cap, kind="latency", p2p="disabled", latency_side="cpu")
    assert lat_gpu.value(0, 2) == 12.3
    assert lat_gpu.unit == "us"
    assert lat_cpu.value(2, 1) == 6.35
    assert _one(cap, kind="latency", p2p="enabled", latency_side="gpu").value(0, 1) == 1.4
    assert cap.origin.warnings == []
    assert "gpus" not in cap.unavailable
    read = cap.origin.sources[0].read[0]
    assert read == (
        "p2pBandwidthLatencyTest: 3 GPUs, 4 bandwidth + 4 latency matrices; peer access 2/6 pairs"
    )


def test_sm_copy_note_and_reads_matrix_without_device_list() -> None:
    text = (
        "# With --sm_copy\n"
        "Unidirectional P2P=Enabled Bandwidth (P2P Reads) Matrix (GB/s)\n"
        "   D\\D     0      1\n"
        "     0 900.00  11.50\n"
        "     1  11.40 901.00\n"
    )
    cap = load(text)
    m = _one(cap, p2p="enabled")
    assert (m.method, m.access) == ("sm", "read")
    assert m.value(0, 1) == 11.5
    assert [g.index for g in cap.gpus] == [0, 1]


def test_connectivity_matrix_fills_peer_access_when_no_device_lines() -> None:
    text = (
        "P2P Connectivity Matrix\n"
        "     D\\D     0     1\n"
        "     0       1     0\n"
        "     1       0     1\n"
        "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n"
        "   D\\D     0      1\n"
        "     0 500.00   6.00\n"
        "     1   6.10 500.00\n"
    )
    cap = load(text)
    assert cap.p2p.can_access_peer == [[None, False], [False, None]]


def test_truncated_matrix_keeps_complete_rows() -> None:
    text = (
        "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n"
        "   D\\D     0      1      2\n"
        "     0 800.00  20.00  21.00\n"
        "     1  20.50 800.00\n"
    )
    cap = load(text)
    m = _one(cap, p2p="disabled")
    assert m.values[0] == [800.0, 20.0, 21.0]
    assert m.values[1] == [None, None, None]
    assert "matrix truncated; imported 1 complete rows of 3" in warnings_of(cap)


@pytest.mark.parametrize("flag", ["--sm_copy", "--p2p_read --sm_copy"])
def test_sm_copy_from_the_command(flag: str) -> None:
    text = f"$ ./p2pBandwidthLatencyTest {flag}\n" + OUTPUT
    cap = load(text)
    assert {m.method for m in cap.measurements.p2p} == {"sm"}


def test_two_runs_in_one_paste() -> None:
    cap = load(
        "$ ./p2pBandwidthLatencyTest\n"
        + OUTPUT
        + "$ ./p2pBandwidthLatencyTest --sm_copy\n"
        + OUTPUT
    )
    assert len(cap.measurements.p2p) == 16
    assert sorted({m.method for m in cap.measurements.p2p}) == ["ce", "sm"]
    assert cap.origin.sources[0].formats == ["p2pBandwidthLatencyTest"]

"""nvbandwidth parser."""

from __future__ import annotations

import pytest

from tests.importers.helpers import load, warnings_of

HEADER = (
    "nvbandwidth Version: v0.7\n"
    "Built from Git version: v0.7\n"
    "\n"
    "CUDA Runtime Version: 12040\n"
    "CUDA Driver Version: 12050\n"
    "Driver Version: 555.42.06\n"
    "\n"
    "Device 0: NVIDIA H100 80GB HBM3 (00000000:19:00)\n"
    "Device 1: NVIDIA H100 80GB HBM3 (00000000:3B:00)\n"
    "\n"
)
H2D = (
    "Running host_to_device_memcpy_ce.\n"
    "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n"
    "           0         1\n"
    " 0     55.21     54.87\n"
    "\n"
    "SUM host_to_device_memcpy_ce 110.08\n"
    "\n"
)
D2H_BIDIR_SM = (
    "Running device_to_host_bidirectional_memcpy_sm.\n"
    "memcpy SM CPU(row) <- GPU(column) bandwidth (GB/s)\n"
    "           0         1\n"
    " 0     40.10     N/A\n"
    "\n"
)
D2D_READ = (
    "Running device_to_device_memcpy_read_ce.\n"
    "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)\n"
    "           0         1\n"
    " 0       N/A    370.00\n"
    " 1    360.00       N/A\n"
    "\n"
    "SUM device_to_device_memcpy_read_ce 730.00\n"
)
D2D_WRITE_BIDIR = (
    "Running device_to_device_bidirectional_memcpy_write_sm.\n"
    "memcpy SM GPU(row) -> GPU(column) bandwidth (GB/s)\n"
    "           0         1\n"
    " 0       N/A    701.50\n"
    " 1    699.50       N/A\n"
)
LATENCY = (
    "Running device_to_device_latency_sm.\n"
    "memory latency SM GPU(row) <-> GPU(column) (ns)\n"
    "           0         1\n"
    " 0       N/A    850.00\n"
    " 1    900.00       N/A\n"
)
ALL_TO_HOST = (
    "Running all_to_host_memcpy_ce.\n"
    "memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)\n"
    "           0         1\n"
    " 0     30.00     30.10\n"
)


def test_versions_devices_and_host_copies() -> None:
    cap = load("$ ./nvbandwidth -b 256 -t host_to_device_memcpy_ce\n" + HEADER + H2D)
    assert cap.driver.driver_version == "555.42.06"
    assert cap.driver.cuda_driver_version == "12.5"
    assert cap.origin.tool_versions == {"nvbandwidth": "v0.7", "cuda-runtime": "12.4"}
    assert [(g.index, g.bus_id) for g in cap.gpus] == [(0, "0000:19:00.0"), (1, "0000:3b:00.0")]
    transfers = sorted(cap.measurements.transfers, key=lambda t: t.gpu)
    assert [(t.gpu, t.direction, t.memory, t.bandwidth_gbps) for t in transfers] == [
        (0, "h2d", "pinned", 55.21),
        (1, "h2d", "pinned", 54.87),
    ]
    assert {t.method for t in transfers} == {"nvbandwidth-ce"}
    assert {t.size_bytes for t in transfers} == {256 * 2**20}
    assert cap.origin.warnings == []


def test_bidirectional_sm_and_na_cells() -> None:
    cap = load(HEADER + D2H_BIDIR_SM)
    (only,) = cap.measurements.transfers
    assert (only.gpu, only.direction, only.bidirectional, only.method) == (
        0,
        "d2h",
        True,
        "nvbandwidth-sm",
    )
    assert only.bandwidth_gbps == 40.1
    assert only.size_bytes is None


def test_device_to_device_matrices_are_oriented_source_to_destination() -> None:
    cap = load(HEADER + D2D_READ + "\n" + D2D_WRITE_BIDIR)
    read, write = cap.measurements.p2p
    assert (read.access, read.method, read.bidirectional, read.p2p) == (
        "read",
        "ce",
        False,
        "enabled",
    )
    # "GPU(row) <- GPU(column)": row 0 received 370 GB/s from GPU1, so GPU1 -> GPU0 is 370.
    assert read.value(1, 0) == 370.0
    assert read.value(0, 1) == 360.0
    assert read.value(0, 0) is None
    assert (write.access, write.method, write.bidirectional) == ("write", "sm", True)
    assert write.value(0, 1) == 701.5


def test_latency_in_nanoseconds_becomes_microseconds() -> None:
    cap = load(HEADER + LATENCY)
    (m,) = cap.measurements.p2p
    assert (m.kind, m.unit, m.latency_side, m.method) == ("latency", "us", "gpu", "sm")
    assert m.value(0, 1) == pytest.approx(0.85)


def test_concurrent_and_waived_tests_are_listed_not_imported() -> None:
    waived = "Running device_to_device_memcpy_write_ce.\nWaived. \n\n"
    cap = load(HEADER + ALL_TO_HOST + "\n" + waived + H2D)
    assert len(cap.measurements.transfers) == 2
    read = cap.origin.sources[0].read[0]
    assert "all_to_host_memcpy_ce (not imported" in read
    assert "device_to_device_memcpy_write_ce waived" in read


def test_test_without_matrix_warns() -> None:
    cap = load(HEADER + "Running host_to_device_memcpy_sm.\n")
    assert "host_to_device_memcpy_sm has no result matrix" in warnings_of(cap)


def test_output_without_the_version_line() -> None:
    headless = HEADER.split("\n", 3)[3]
    cap = load(headless + H2D)
    assert cap.driver.driver_version == "555.42.06"
    assert [g.bus_id for g in cap.gpus] == ["0000:19:00.0", "0000:3b:00.0"]
    assert len(cap.measurements.transfers) == 2

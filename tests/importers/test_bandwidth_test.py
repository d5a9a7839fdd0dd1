"""cuda-samples bandwidthTest parser."""

from __future__ import annotations

import pytest

from pcidoc.model.capture import Capture
from pcidoc.model.measurements import TransferMeasurement
from tests.importers.helpers import load, warnings_of


def run(device: str = " Device 1: NVIDIA RTX 6000 Ada Generation", sep: str = "\t\t\t") -> str:
    return (
        "[CUDA Bandwidth Test] - Starting...\n"
        "Running on...\n"
        "\n"
        f"{device}\n"
        " Quick Mode\n"
        "\n"
        " Host to Device Bandwidth, 1 Device(s)\n"
        " PINNED Memory Transfers\n"
        "   Transfer Size (Bytes)\tBandwidth(GB/s)\n"
        f"   32000000{sep}24.6\n"
        "\n"
        " Device to Host Bandwidth, 1 Device(s)\n"
        " PINNED Memory Transfers\n"
        "   Transfer Size (Bytes)\tBandwidth(GB/s)\n"
        f"   32000000{sep}26.3\n"
        "\n"
        " Device to Device Bandwidth, 1 Device(s)\n"
        " PINNED Memory Transfers\n"
        "   Transfer Size (Bytes)\tBandwidth(GB/s)\n"
        f"   32000000{sep}812.4\n"
        "\n"
        "Result = PASS\n"
    )


def _one(cap: Capture, **want: object) -> TransferMeasurement:
    found = [
        m for m in cap.measurements.transfers if all(getattr(m, k) == v for k, v in want.items())
    ]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("sep", ["\t\t\t", "                     ", ">>--->---", ">---"])
def test_quick_mode_any_whitespace(sep: str) -> None:
    cap = load("$ ./bandwidthTest --device=1\n" + run(sep=sep))
    h2d = _one(cap, direction="h2d")
    assert (h2d.gpu, h2d.memory, h2d.bandwidth_gbps, h2d.size_bytes) == (
        1,
        "pinned",
        24.6,
        32000000,
    )
    assert h2d.method == "bandwidthTest"
    assert h2d.source == "import:t0.txt"
    assert h2d.placement is None
    assert h2d.context is None
    assert _one(cap, direction="d2h").bandwidth_gbps == 26.3
    d2d = _one(cap, direction="d2d")
    assert (d2d.memory, d2d.bandwidth_gbps) == ("device", 812.4)
    assert cap.gpu(1).name == "NVIDIA RTX 6000 Ada Generation"  # type: ignore[union-attr]
    assert cap.gpu(0) is None
    assert cap.origin.warnings == []


def test_pageable_run_and_two_runs_in_one_paste() -> None:
    pageable = run().replace("PINNED", "PAGEABLE").replace("24.6", "9.1").replace("26.3", "8.8")
    cap = load(
        "$ ./bandwidthTest --memory=pinned\n" + run() + "\n"
        "$ ./bandwidthTest --memory=pageable\n" + pageable
    )
    assert _one(cap, direction="h2d", memory="pinned").bandwidth_gbps == 24.6
    assert _one(cap, direction="h2d", memory="pageable").bandwidth_gbps == 9.1
    assert len(cap.origin.sources[0].read) == 2


def test_old_megabytes_range_mode_is_a_converted_sweep() -> None:
    text = (
        "[bandwidthTest] - Starting...\n"
        "Running on...\n"
        "\n"
        " Device 0: Tesla K80\n"
        " Range Mode\n"
        "\n"
        " Host to Device Bandwidth, 1 Device(s)\n"
        " PAGEABLE Memory Transfers\n"
        "   Transfer Size (Bytes)\tBandwidth(MB/s)\n"
        "   1024\t\t\t\t500.0\n"
        "   2048\t\t\t\t1000.0\n"
        "   4096\t\t\t\t2000.0\n"
        "\n"
        "Result = PASS\n"
    )
    cap = load(text)
    m = _one(cap, direction="h2d")
    assert m.memory == "pageable"
    assert m.size_bytes == 4096
    assert m.bandwidth_gbps == pytest.approx(2000.0 * 1.024e-3)
    assert [p.size_bytes for p in m.sweep] == [1024, 2048, 4096]
    assert m.sweep[0].bandwidth_gbps == pytest.approx(0.512)
    assert "MB/s converted" in cap.origin.sources[0].read[0]


def test_numactl_context_and_placement_from_the_topology() -> None:
    topo = (
        "        GPU0    GPU1    CPU Affinity    NUMA Affinity\n"
        "GPU0     X      SYS     0-7     0\n"
        "GPU1    SYS      X      8-15    1\n"
    )
    local = "$ numactl -m1 -N1 ./bandwidthTest --device=1\n" + run()
    remote = "$ numactl --membind=0 --cpunodebind=0 ./bandwidthTest --device=1\n" + run()
    cap = load(topo, local, remote)
    placements = sorted(
        (m.context, m.placement, m.host_numa_node)
        for m in cap.measurements.transfers
        if m.direction == "h2d"
    )
    assert placements == [
        ("numactl --membind=0 --cpunodebind=0", "remote", 0),
        ("numactl -m1 -N1", "local", 1),
    ]
    alone = load(local)
    m = next(t for t in alone.measurements.transfers if t.direction == "h2d")
    assert (m.context, m.placement) == ("numactl -m1 -N1", None)
    assert "placement left unset" in warnings_of(alone)


def test_all_devices_sum_is_skipped() -> None:
    text = run(" Device 0: NVIDIA A40\n Device 1: NVIDIA A40").replace("1 Device(s)", "2 Device(s)")
    cap = load("$ ./bandwidthTest --device=all\n" + text)
    assert cap.measurements.transfers == []
    assert "sum over 2 devices" in warnings_of(cap)


def test_csv_output() -> None:
    text = (
        "bandwidthTest-H2D-Pinned, Bandwidth = 12.1 GB/s, Time = 0.00264 s, "
        "Size = 32000000 bytes, NumDevsUsed = 1\n"
        "bandwidthTest-D2H-Paged, Bandwidth = 6543.2 MB/s, Time = 0.00500 s, "
        "Size = 32000000 bytes, NumDevsUsed = 1\n"
    )
    cap = load(text)
    assert _one(cap, direction="h2d").bandwidth_gbps == 12.1
    d2h = _one(cap, direction="d2h")
    assert d2h.memory == "pageable"
    assert d2h.bandwidth_gbps == pytest.approx(6543.2 * 1.024e-3)
    assert "assumed GPU0" in warnings_of(cap)

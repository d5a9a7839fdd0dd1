"""Text cleaning, command recognition and small value parsers."""

from __future__ import annotations

import pytest

from pcidoc.collect.importers.text import (
    command_in,
    label_span,
    normalize_bus_id,
    option_value,
    prepare,
    to_float,
    to_int,
)


@pytest.mark.parametrize(
    ("line", "command"),
    [
        ("root@gpu-07:~# nvidia-smi topo -m", "nvidia-smi topo -m"),
        ("$ nvidia-smi topo -p2p r", "nvidia-smi topo -p2p r"),
        ("$nvidia-smi -q", "nvidia-smi -q"),
        (
            "(venv) me@h:~/src$ ./bandwidthTest --memory=pageable",
            "./bandwidthTest --memory=pageable",
        ),
        ("-[10:41 PM]-./p2pBandwidthLatencyTest", "./p2pBandwidthLatencyTest"),
        ("[bench]$ sudo nvidia-smi nvlink -s", "nvidia-smi nvlink -s"),
        ("# ./build/all_reduce_perf -b 8 -e 1G -g 8", "./build/all_reduce_perf -b 8 -e 1G -g 8"),
        ("NCCL_DEBUG=INFO ./all_gather_perf -g 2", "./all_gather_perf -g 2"),
        ("$ numactl -m0 -N0 ./bandwidthTest", "numactl -m0 -N0 ./bandwidthTest"),
        ("host:/opt/cuda/bandwidthTest$ ./bandwidthTest", "./bandwidthTest"),
        ("user@box:~/p2pBandwidthLatencyTest/build# nvidia-smi -L", "nvidia-smi -L"),
        ("nvidia-smi topo -m", "nvidia-smi topo -m"),
    ],
)
def test_command_lines(line: str, command: str) -> None:
    assert command_in(line) == command


@pytest.mark.parametrize(
    "line",
    [
        "nvbandwidth Version: v0.8",
        "[CUDA Bandwidth Test] - Starting...",
        "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]",
        "Then I ran nvidia-smi topo -m and saw SYS everywhere",
        "host:/tmp/cuda-samples/bandwidthTest$",
        "Running host_to_device_memcpy_ce.",
        "SUM host_to_device_memcpy_ce 110.08",
    ],
)
def test_not_command_lines(line: str) -> None:
    assert command_in(line) is None


def test_prepare_removes_packaging() -> None:
    text = (
        "```console\r\n"
        "> $ ./bandwidthTest\r\n"
        ">    32000000>>--->---25.7\r\n"
        "~~~\r\n"
        "\u00a0GPU0\u200b\tX\n"
    )
    doc = prepare(text, "x.txt")
    assert doc.lines[0] == ""
    assert doc.commands[1] == "./bandwidthTest"
    assert doc.lines[2].split() == ["32000000", "25.7"]
    assert doc.lines[3] == ""
    assert doc.lines[4] == " GPU0\tX"


def test_prepare_strips_mpi_tags_only_in_tagged_text() -> None:
    tagged = prepare("[0]   1024   256   float   sum   -1[0]   5.0\n", "a")
    assert tagged.lines[0].split() == ["1024", "256", "float", "sum", "-1", "5.0"]
    plain = prepare("note [1] is a footnote\n", "b")
    assert plain.lines[0] == "note [1] is a footnote"


def test_prepare_joins_continued_commands_and_splits_glued_headers() -> None:
    doc = prepare("$ mpirun -np 2 \\\n   ./all_reduce_perf -g 1\nok\n", "c")
    assert doc.commands[0] == "mpirun -np 2 ./all_reduce_perf -g 1"
    assert doc.lines[-2:] == ["ok", ""]
    glued = prepare("nvidia-smi topo -m     GPU0    GPU1    CPU Affinity\n", "d")
    assert glued.commands[0] == "nvidia-smi topo -m"
    assert glued.lines[1].split() == ["GPU0", "GPU1", "CPU", "Affinity"]


@pytest.mark.parametrize(
    ("text", "bus"),
    [
        ("00000000:2F:00.0", "0000:2f:00.0"),
        ("0000:2f:00.0", "0000:2f:00.0"),
        ("00000000:99:00", "0000:99:00.0"),
        ("[0000:04:00]", "0000:04:00.0"),
        ("1b:00.1", "0000:1b:00.1"),
        ("00010000:01:00.0", "10000:01:00.0"),  # a VMD domain, as /sys names it
        ("0x01", None),
        ("GPU0", None),
        ("0000:04:20.0", None),
    ],
)
def test_bus_ids(text: str, bus: str | None) -> None:
    assert normalize_bus_id(text) == bus


def test_numbers_are_finite_only() -> None:
    assert to_float("12.5") == 12.5
    assert to_float("1e-06") == 1e-06
    for bad in ("inf", "nan", "-inf", "1e999", "12,5", "", "N/A"):
        assert to_float(bad) is None
    assert to_int("-1") == -1
    assert to_int("1.0") is None


def test_options() -> None:
    command = "numactl -m1 -N 1 ./bandwidthTest --memory=pageable --device 2 -i0"
    assert option_value(command, "-m", "--membind") == "1"
    assert option_value(command, "-N") == "1"
    assert option_value(command, "--memory") == "pageable"
    assert option_value(command, "--device") == "2"
    assert option_value(command, "-i") == "0"
    assert option_value("nvidia-smi nvlink -info", "-i") is None


def test_label_span() -> None:
    assert label_span(["GPU5", "GPU6", "GPU7", "NIC0", "NIC1"]) == "GPU5-GPU7, NIC0, NIC1"
    assert label_span(["mlx5_0", "mlx5_1", "mlx5_2"]) == "mlx5_0-mlx5_2"


def test_terminal_colour_codes_are_removed() -> None:
    doc = prepare("\x1b[01;32mroot@gpu\x1b[00m:~# nvidia-smi -L\n\x1b[1mGPU 0: X\x1b[0m\n", "e")
    assert doc.commands[0] == "nvidia-smi -L"
    assert doc.lines[1] == "GPU 0: X"

"""Evidence is a log line, not a word: the packaging of a line and the prose rule."""

from __future__ import annotations

import pytest

from pcidoc.catalogue.lines import code_spans, messages, prose_before, read_line


@pytest.mark.parametrize(
    ("text", "kinds", "message"),
    [
        (
            "node1:2345:2400 [3] NCCL WARN NET/IB : Got completion",
            ["nccl"],
            "NET/IB : Got completion",
        ),
        (
            "<redacted>:924:924 [5] NCCL INFO cudaDriverVersion 12010",
            ["nccl"],
            "cudaDriverVersion 12010",
        ),
        ("gpu2:2143:2561 [1] include/shm.h:28 NCCL WARN Call to x", ["nccl"], "Call to x"),
        (
            "Sep 19 16:18:02 bubz kernel: [68183.615790] pcieport 0000:00:03.1: AER: x",
            ["kernel", "time", "time", "kernel", "device"],
            "AER: x",
        ),
        (
            "[ 1234.5678] NVRM: Xid (PCI:0000:3b:00): 79",
            ["time", "kernel"],
            "NVRM: Xid (PCI:0000:3b:00): 79",
        ),
        ("NVRM: Xid (PCI:0000:3b:00): 79", ["kernel"], "NVRM: Xid (PCI:0000:3b:00): 79"),
        (
            "[rank3]:[E1029 12:00:00.123456 12345 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog x",
            ["rank", "level", "rank"],
            "Watchdog x",
        ),
        (
            "RuntimeError: CUDA error: an illegal memory access",
            ["exception"],
            "CUDA error: an illegal memory access",
        ),
        (
            "(RayWorkerWrapper pid=1234, ip=10.0.0.5) ERROR 01-01 12:00:00 worker.py:12] Error x",
            ["rank", "level"],
            "Error x",
        ),
        (
            "2024-05-01T12:00:00Z host nv-fabricmanager[123]: [ERROR] request failed",
            ["time", "level"],
            "request failed",
        ),
        ("3: node7:1:2 [1] NCCL WARN Cuda failure 217", ["rank", "nccl"], "Cuda failure 217"),
        (
            "[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028",
            ["time", "level"],
            "detected NVSwitch non-fatal error 12028",
        ),
        (
            "11月 15 14:15:47 leon nv-fabricmanager[4177]: request to query NVSwitch",
            ["time"],
            "request to query NVSwitch",
        ),
        (
            "[E728 15:01:59.561275187 socket.cpp:1028] [c10d] The client socket has timed out",
            ["level"],
            "[c10d] The client socket has timed out",
        ),
        ("[1,3]<stderr>:node7:1:2 [1] NCCL WARN x", ["rank", "nccl"], "x"),
        (
            "I read this can happen: GPU has fallen off the bus.",
            [],
            "I read this can happen: GPU has fallen off the bus.",
        ),
    ],
)
def test_packaging_is_stripped(text: str, kinds: list[str], message: str) -> None:
    line = read_line(text)
    assert line.kinds == kinds
    assert line.message == message


def test_what_the_packaging_names() -> None:
    nccl = read_line("3: node7:11:22 [1] NCCL WARN x")
    assert (nccl.rank, nccl.host, nccl.cuda_dev) == (3, "node7", 1)
    kernel = read_line("Sep 19 16:18:02 bubz kernel: nvidia 0000:3b:00.0: x")
    assert (kernel.host, kernel.bus_id, kernel.program) == ("bubz", "0000:3b:00.0", "kernel")


def test_header_lines_are_comments() -> None:
    assert read_line("# note: the GPU has fallen off the bus").comment
    assert not read_line("NVRM: GPU has fallen off the bus").comment


@pytest.mark.parametrize(
    ("text", "signature", "prose"),
    [
        ("I read this can happen: GPU has fallen off the bus", "GPU has", True),
        ("My training crashed with this error: Cuda failure 217", "Cuda failure", True),
        (
            "ncclUnhandledCudaError: Call to CUDA function failed. Last error: Cuda failure 217",
            "Cuda failure",
            False,
        ),
        (
            "NCCL error in: /opt/ProcessGroupNCCL.cpp:1275, unhandled system error",
            "unhandled",
            False,
        ),
        ("[Rank 3] Watchdog caught collective operation timeout", "Watchdog", False),
        ("Error executing method", "Error", False),
    ],
)
def test_prose_before_the_signature(text: str, signature: str, prose: bool) -> None:
    assert prose_before(text, text.index(signature)) is prose


def test_inline_code_spans_are_lines() -> None:
    text = "When I run it I get `NCCL WARN NET/IB : Got completion with error 12` every time"
    assert code_spans(text) == ["NCCL WARN NET/IB : Got completion with error 12"]
    assert code_spans("no code here") == []


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("nvidia-smi outputs the following error: Unable to determine the device handle", True),
        ("and the job fails with: 'NCCL error in: x.cpp:12, unhandled system error'", True),
        ("I read this can happen: Unable to determine the device handle", False),
        ("Unable to determine the device handle", False),
    ],
)
def test_a_message_quoted_after_a_colon(text: str, quoted: bool) -> None:
    from pcidoc.catalogue.lines import quoted_at

    start = max(text.find("Unable"), text.find("NCCL error"))
    assert quoted_at(text, start) is quoted


@pytest.mark.parametrize("month", ["jan.", "déc.", "Sep", "mars", "11月"])
def test_syslog_months_of_other_locales(month: str) -> None:
    line = read_line(f"{month} 29 20:50:17 kevin kernel: pcieport 0000:00:1c.5: AER: x")
    assert "kernel" in line.kinds and line.host == "kevin" and line.message == "AER: x"


@pytest.mark.parametrize(
    ("text", "host", "kernel"),
    [
        (
            "192.168.11.119: kern: warning: [2026-04-22T21:30:51.494604223Z]: NVRM: Xid "
            "(PCI:0000:0b:00): 119, pid=1, name=x, Timeout",
            "192.168.11.119",
            "NVRM: Xid",
        ),
        ("19:14:43  NVRM: Xid (PCI:0000:1a:00): 13, Graphics Exception", None, "NVRM: Xid"),
        ("node7: [ 12.3] nvidia 0000:3b:00.0: x", "node7", "nvidia 0000:3b"),
    ],
)
def test_where_a_kernel_message_starts_after_unknown_packaging(
    text: str, host: str | None, kernel: str
) -> None:
    line = read_line(text)
    assert line.host == host
    assert line.kernel_at is not None and text[line.kernel_at :].startswith(kernel)


@pytest.mark.parametrize(
    "text",
    [
        "DMAR-IR: Enabled IRQ remapping in x2apic mode",
        "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal",
        "pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded",
    ],
)
def test_a_tag_is_no_host(text: str) -> None:
    assert read_line(text).host is None


def test_short_spans_do_not_shift_the_pairs_after_them() -> None:
    text = (
        "I see `nvidia_peermem` in lsmod, no `dmesg` line about `peermem`, and NCCL shows: "
        "`INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'`."
    )
    assert code_spans(text) == [
        "nvidia_peermem",
        "INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'",
    ]


COLLAPSED = (
    "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out. Due to the "
    "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted data. "
    "[E ProcessGroupNCCL.cpp:460] To avoid data inconsistency, we are taking the entire process "
    "down. terminate called after throwing an instance of 'std::runtime_error' what(): NCCL "
    "error: remote process exited or there was a network error, NCCL version 2.14.3 "
    "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
    "prematurely. Last error: NET/IB : Got completion from peer 10.1.2.3<39138> with error 12, "
    "opcode 0, len 0, vendor err 129"
)  # a log pasted onto one line (synthetic, in PyTorch's and NCCL's formats)


def test_a_log_collapsed_onto_one_line_is_cut_into_its_messages() -> None:
    pieces = messages(COLLAPSED)
    assert [p.split()[0] for p in pieces] == ["[E", "[E", "what():", "Last"]
    assert pieces[-1].startswith("Last error: NET/IB : Got completion")
    assert "".join(pieces).replace(" ", "") == COLLAPSED.replace(" ", "")


@pytest.mark.parametrize(
    "text",
    [
        "n1:2345:2400 [3] NCCL WARN NET/IB : Got completion from peer 10.1.2.3<39872> error 12",
        "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out.",
        "I do not know what the error means, please help",
        "",
    ],
)
def test_a_line_with_one_message_stays_whole(text: str) -> None:
    assert messages(text) == [text]


def test_each_message_of_a_collapsed_line_is_matched() -> None:
    from pcidoc import catalogue

    ids = [hit.id for hit in catalogue.scan([COLLAPSED]).hits]
    assert "nccl.net-ib.completion-error" in ids and "torch.watchdog.operations-failed" in ids


def test_an_indented_continuation_line_of_a_kernel_message_is_a_kernel_line() -> None:
    """journalctl and dmesg indent the lines a message continues on (the driver's multi-line
    NVRM messages)."""
    line = read_line("                 NVRM: installed in this system requires use of the open")
    assert "kernel" in line.kinds and line.message.startswith("NVRM:")

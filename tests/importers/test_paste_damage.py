"""Pastes damaged on their way into a thread still import, and nothing is dropped silently.

Editor line numbers, ``> `` quote prefixes (also over tagged mpirun output), CRLF, tabs, an
nvbandwidth matrix without its ``Running <test>.`` banner or with a header that lost its
alignment. Each transformation is applied to real outputs of ../shared/realdata at test time.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from pcidoc.collect.importers import import_texts
from pcidoc.collect.importers.text import strip_line_numbers
from pcidoc.doctor import run
from pcidoc.model.capture import Capture
from pcidoc.model.report import ReportSource
from tests.conftest import read_realdata


def numbered(fmt: str) -> Callable[[str], str]:
    """Prefix every line with its 1-based number in ``fmt`` (``"{n:>4} "``)."""
    return lambda t: "\n".join(fmt.format(n=i + 1) + line for i, line in enumerate(t.split("\n")))


DAMAGE: dict[str, Callable[[str], str]] = {
    "vim line numbers": numbered("{n:>4} "),
    "cat -n": numbered("{n:>6}\t"),
    "colon numbers": numbered("{n}: "),
    "quote prefix": lambda t: "\n".join("> " + line for line in t.split("\n")),
    "CRLF": lambda t: t.replace("\n", "\r\n"),
    "tabs": lambda t: re.sub(r"(?<=\S) {2,}(?=\S)", "\t", t),
}

FILES = [
    "topo/a100-sxm4-80gb-x8-nv12-4nic-all-sys-distserve-3.txt",
    "p2p-bandwidth/rtx4090x8-sys-no-p2p-stock-driver-blog.txt",
    "nccl-tests/h100-2node-allreduce-cliff-at-64mb-tagged-output-nccl-1453.txt",
    "bandwidth/nvbandwidth-a100-h2d-sm-25gbps-nvbandwidth-42.txt",
    "pcie-query/h800-q-gen5-x16-llm-action.txt",
]


def signature(cap: Capture) -> tuple[object, ...]:
    m = cap.measurements
    return (
        len(cap.gpus),
        cap.topology.links,
        [(x.kind, x.p2p, x.values) for x in m.p2p],
        [(t.gpu, t.direction, t.bandwidth_gbps) for t in m.transfers],
        [[(r.size_bytes, r.busbw_gbps) for r in c.rows] for c in m.collectives],
        [(g.pcie.current_gen, g.pcie.current_width) for g in cap.gpus],
    )


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("relpath", FILES)
def test_damaged_paste_reads_like_the_original(relpath: str, damage: str) -> None:
    text = read_realdata(relpath)
    original = signature(import_texts([("x.txt", text)]).capture)
    damaged = signature(import_texts([("x.txt", DAMAGE[damage](text))]).capture)
    assert damaged == original


def test_a_matrix_whose_rows_start_at_index_0_keeps_its_row_numbers() -> None:
    rows = [f"     {i} " + " ".join("20.00" for _ in range(8)) for i in range(8)]
    assert strip_line_numbers(rows) == rows


NVB = "bandwidth/nvbandwidth-a100-h2d-sm-25gbps-nvbandwidth-42.txt"


def test_nvbandwidth_without_running_banner_takes_the_name_from_the_sum_line() -> None:
    text = "\n".join(line for line in read_realdata(NVB).split("\n") if "Running" not in line)
    cap = import_texts([("nvb.txt", text)]).capture
    assert [(t.gpu, t.direction, t.bandwidth_gbps) for t in cap.measurements.transfers] == [
        (0, "h2d", 25.13)
    ]


def test_nvbandwidth_header_that_lost_its_alignment_still_reads() -> None:
    lines = [line for line in read_realdata(NVB).split("\n") if "Running" not in line]
    text = "\n".join("0" if line.strip() == "0" else line for line in lines)
    cap = import_texts([("nvb.txt", text)]).capture
    assert len(cap.measurements.transfers) == 1


def test_an_unnamed_nvbandwidth_matrix_is_named_in_the_warnings() -> None:
    text = "\n".join(
        line
        for line in read_realdata(NVB).split("\n")
        if "Running" not in line and not line.startswith("SUM")
    )
    result = import_texts([("nvb.txt", text)])
    assert not result.capture.measurements.transfers
    assert any("without its test name" in w and "memcpy SM" in w for w in result.warnings)


def test_nvml_health_never_claims_nvidia_smi_ran_on_an_nvbandwidth_paste() -> None:
    cap = import_texts([("nvb.txt", read_realdata(NVB))]).capture
    report = run(cap, ReportSource(kind="import"), only=["nvml.health"], generated_at="t")
    result = report.checks[0]
    assert "nvidia-smi worked" not in result.summary
    assert "without nvidia-smi output" in result.summary and "nvbandwidth" in result.summary

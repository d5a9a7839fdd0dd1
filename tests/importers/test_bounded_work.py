"""Bounded work on hostile pastes (issue 30): reading is linear in the lines of a paste, totals
are bounded, and a bad value is skipped with a warning while the rest is kept.

Work is counted, not timed: the readers fetch lines by index (``doc.lines[i]``), and a text
whose lines count those fetches tells how many times each line was looked at. A reader that
rescans a run of blank lines from each of its lines reads 8 times more lines for a run 8 times
longer *per line of it*; a linear one reads about 8 times more in all.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pcidoc.collect.import_formats import TEXT, readers
from pcidoc.collect.importers import import_texts, scan
from pcidoc.collect.importers.fragment import Context
from pcidoc.collect.importers.nccl_topo_xml import MAX_NVLINKS_PER_GPU, MAX_NVLINKS_TOTAL
from pcidoc.collect.importers.text import prepare
from tests.conftest import SHARED


class _CountingLines(list):  # type: ignore[type-arg]
    """A list of lines that counts the lines fetched by index or slice."""

    fetched = 0

    def __getitem__(self, key: Any) -> Any:
        item = super().__getitem__(key)
        _CountingLines.fetched += len(item) if isinstance(key, slice) else 1
        return item


def _lines_fetched(text: str) -> int:
    """Lines the scanner, the section parsers and the whole-text readers fetch from ``text``."""
    doc = prepare(text, "paste.txt")
    doc.lines = _CountingLines(doc.lines)
    _CountingLines.fetched = 0
    scan.scan(doc, "paste.txt")
    for _, reader in readers(TEXT):
        _, read = reader.functions()
        read(doc, Context(file="paste.txt"))  # type: ignore[operator]
    return _CountingLines.fetched


def _one_file_per_folder() -> list[str]:
    found = []
    for folder in ("realdata", "realdata-evidence"):
        root = SHARED / folder
        if not root.is_dir():
            continue
        for sub in sorted(p for p in root.iterdir() if p.is_dir()):
            files = sorted(p for p in sub.iterdir() if p.is_file() and p.suffix != ".md")
            found += [str(files[0].relative_to(SHARED))] if files else []
    return found


@pytest.mark.parametrize("relpath", _one_file_per_folder() or ["-"])
def test_reading_is_linear_in_a_run_of_blank_lines_anywhere(relpath: str) -> None:
    if relpath == "-":
        pytest.skip("the corpus ../shared is not beside this checkout")
    lines = (SHARED / relpath).read_text(encoding="utf-8", errors="replace").split("\n")
    for at in sorted({3, len(lines) // 2, max(3, len(lines) - 3)}):
        small, large = (
            _lines_fetched("\n".join(lines[:at] + [""] * run + lines[at:])) for run in (500, 4000)
        )
        # 3,500 more blank lines: linear reading fetches a few times 3,500 more lines; a reader
        # that rescans the run from each of its lines fetches millions more.
        assert large - small < 40 * 3500, (relpath, at, small, large)


def test_a_p2p_matrix_with_20000_blank_lines_is_read_once() -> None:
    head = (
        "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\n"
        "Device: 0, NVIDIA A100-SXM4-80GB, pciBusID: 7, pciDeviceID: 0, pciDomainID:0\n"
        "Device: 1, NVIDIA A100-SXM4-80GB, pciBusID: b, pciDeviceID: 0, pciDomainID:0\n"
        "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n"
    )
    rows = "   D\\D     0      1\n     0 1520.10  18.47\n     1  18.51 1519.93\n"
    text = head + "\n" * 20_000 + rows
    # Each reader walks the text once (some take it as a slice): a few dozen fetches a line;
    # rescanning the blank run from each of its lines was 2·10^8.
    assert _lines_fetched(text) < 50 * 20_000
    capture = import_texts([("p2p.txt", text)]).capture
    assert capture.measurements.p2p[0].values[0][1] == pytest.approx(18.47)


def _topology(gpus: int, links: int) -> str:
    parts = ['<system version="1">', '<cpu numaid="0" arch="x86_64" vendor="AuthenticAMD">']
    for index in range(gpus):
        bus = f"0000:{index // 32 + 1:02x}:{index % 32:02x}.0"
        peer = (index + 1) % gpus
        target = f"0000:{peer // 32 + 1:02x}:{peer % 32:02x}.0"
        parts.append(f'<pci busid="{bus}" class="0x030200"><gpu dev="{index}" sm="90">')
        parts += [f'<nvlink target="{target}" count="1" tclass="0x030200"/>'] * links
        parts.append("</gpu></pci>")
    return "\n".join([*parts, "</cpu></system>"]) + "\n"


@pytest.mark.parametrize(("gpus", "links"), [(200, 64), (700, 18), (170, 100)])
def test_nccl_topology_nvlinks_are_bounded_in_total(gpus: int, links: int) -> None:
    result = import_texts([("topo.xml", _topology(gpus, links))])
    counts = [len(gpu.nvlinks) for gpu in result.capture.gpus]
    assert len(counts) == gpus
    assert max(counts) <= MAX_NVLINKS_PER_GPU
    assert sum(counts) == min(MAX_NVLINKS_TOTAL, gpus * min(links, MAX_NVLINKS_PER_GPU))
    if gpus * links > MAX_NVLINKS_TOTAL:
        assert any(f"more than {MAX_NVLINKS_TOTAL} NVLinks" in w for w in result.warnings)
        assert "nvlinks" in result.capture.gpus[-1].unavailable


_XID = "[ 51{n}.000001] NVRM: Xid (PCI:0000:3b:00): {code}, pid={pid}, name=python, text.\n"


@pytest.mark.parametrize("pid", ["9" * 40, "²", "4194305", "99999999999999999999", "١٢٣"])
def test_a_pid_no_process_has_keeps_the_real_xids(pid: str) -> None:
    text = _XID.format(n=0, code=79, pid=pid) + "".join(
        _XID.format(n=i, code=79, pid=1000 + i) for i in range(1, 4)
    )
    result = import_texts([("kern.log", text)])
    xids = result.capture.evidence.kernel_logs[0].xids
    assert [x.pid for x in xids] == [None, 1001, 1002, 1003]
    assert any("no process id" in w for w in result.warnings), result.warnings


def test_an_xid_code_out_of_range_skips_its_line_only() -> None:
    text = _XID.format(n=0, code="7" * 5000, pid=1) + _XID.format(n=1, code=79, pid=2)
    result = import_texts([("kern.log", text)])
    assert [x.code for x in result.capture.evidence.kernel_logs[0].xids] == [79]
    assert any("value out of range skipped" in w for w in result.warnings), result.warnings


@pytest.mark.parametrize("size", [1, 4096, 200_000])
def test_a_nul_block_is_read_around_with_a_warning(size: int) -> None:
    head = "".join(_XID.format(n=i, code=79, pid=100 + i) for i in range(2))
    tail = "".join(_XID.format(n=i, code=48, pid=100 + i) for i in range(2, 4))
    result = import_texts([("kern.log", head + "\x00" * size + tail)])
    assert [x.code for x in result.capture.evidence.kernel_logs[0].xids] == [79, 79, 48, 48]
    assert any(f"{size:,} NUL byte" in w for w in result.warnings), result.warnings


_INSPECTOR = {
    "header": {"id": "0x7f", "rank": 2, "n_ranks": 8, "nnodes": 1},
    "metadata": {"inspector_output_format_version": "v4.0", "hostname": "h"},
    "coll_perf": {
        "coll": "AllReduce",
        "coll_sn": 1,
        "coll_msg_size_bytes": 17179869184,
        "coll_exec_time_us": 61974,
        "coll_algobw_gbs": 277.2,
        "coll_busbw_gbs": 485.1,
    },
}


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ("coll_perf", "coll_msg_size_bytes"),
        ("coll_perf", "coll_busbw_gbs"),
        ("coll_perf", "coll_exec_time_us"),
        ("header", "n_ranks"),
    ],
)
@pytest.mark.parametrize("digits", [400, 5000])
@pytest.mark.parametrize("preamble", ["", "# source: a paste\n"])
def test_a_huge_number_in_an_inspector_record_keeps_the_record(
    section: str, key: str, digits: int, preamble: str
) -> None:
    text = json.dumps(_INSPECTOR, indent=2).replace(
        json.dumps(_INSPECTOR[section][key]), "9" * digits, 1
    )
    result = import_texts([("inspector.json", preamble + text)])
    record = result.capture.evidence.inspector[0]
    assert record.collective == "AllReduce" and record.rank == 2
    assert any("out of range" in w for w in result.warnings), result.warnings


def test_a_huge_prometheus_size_bucket_keeps_the_sample() -> None:
    text = (
        'nccl_bus_bandwidth_gbs{collective="AllReduce",message_size="'
        + "9" * 400
        + '-5GB",nranks="8"} 678.2\n'
        'nccl_bus_bandwidth_gbs{collective="AllReduce",message_size="4-5GB",nranks="8"} 1e999\n'
    )
    result = import_texts([("inspector.prom", text)])
    records = result.capture.evidence.inspector
    assert [r.busbw_gbps for r in records] == [678.2, None]
    assert records[0].msg_size_bytes is None and records[1].msg_size_bytes == 4_000_000_000


@pytest.mark.parametrize(
    "text",
    [
        "   D\\D     0      1\n     0 1520.10  18.47\n" + "9" * 5000 + "  1.0 2.0\n",
        "Device " + "9" * 5000 + ": NVIDIA A100 (00000000:07:00)\nDevice 0: NVIDIA A100 "
        "(00000000:07:00)\n",
    ],
    ids=["p2pBandwidthLatencyTest row", "nvbandwidth device"],
)
def test_a_section_line_out_of_range_is_skipped_and_named(text: str) -> None:
    head = {
        "p2pBandwidthLatencyTest row": "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n",
        "nvbandwidth device": "nvbandwidth Version: v0.6\n",
    }
    name = "p2pBandwidthLatencyTest" if text.startswith("   D") else "nvbandwidth"
    intro = head["p2pBandwidthLatencyTest row" if name.startswith("p2p") else "nvbandwidth device"]
    result = import_texts([("x.txt", intro + text)])
    assert any(f"{name}: 1 line with a value out of range" in w for w in result.warnings), (
        result.warnings
    )

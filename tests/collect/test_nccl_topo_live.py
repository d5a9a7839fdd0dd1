"""A machine's NCCL_TOPO_FILE is read during collection and judged against the GPUs it has; the
nccl-topo writer works from a collected capture."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from pcidoc.collect.importers import import_texts
from pcidoc.collect.live import collect_live
from pcidoc.collect.nccl_topo import write_topology
from pcidoc.doctor import run
from pcidoc.model.report import ReportSource
from tests.collect.conftest import GPU0, GPU1, GPU2, GPU3, Box
from tests.collect.test_live import _box_backend


def _collect(box: Box, environ: dict[str, str]):  # type: ignore[no-untyped-def]
    return collect_live(
        sys_root=str(box.sys),
        proc_root=str(box.proc),
        etc_root=str(box.etc),
        backend=_box_backend(),
        environ=environ,
        fs_root=str(box.fs),
    )


def _topo_file(tmp_path: Path, buses: list[str]) -> str:
    pcis = "".join(f'<pci busid="{b}" class="0x030200"/>' for b in buses)
    path = tmp_path / "topo.xml"
    path.write_text(
        f'<system version="1"><cpu numaid="0" arch="x86_64" vendor="AuthenticAMD">{pcis}'
        "</cpu></system>"
    )
    return str(path)


def _topo_check(capture):  # type: ignore[no-untyped-def]
    report = run(
        capture,
        ReportSource(kind="live"),
        only=["nccl.topo-file"],
        generated_at="2026-01-01T00:00:00Z",
    )
    return report.checks[0]


def test_topo_file_of_another_machine_is_reported(box: Box, tmp_path: Path) -> None:
    path = _topo_file(tmp_path, [GPU0, "0000:ee:00.0"])
    capture = _collect(box, {"NCCL_TOPO_FILE": path})
    assert capture.evidence is not None and capture.evidence.topo_file_env == path
    result = _topo_check(capture)
    assert result.severity == "warn" and "does not match" in result.summary


def test_matching_topo_file_passes(box: Box, tmp_path: Path) -> None:
    path = _topo_file(tmp_path, [GPU0, GPU1, GPU2, GPU3])
    result = _topo_check(_collect(box, {"NCCL_TOPO_FILE": path}))
    assert result.severity == "pass"


def test_unreadable_topo_file_is_reported(box: Box, tmp_path: Path) -> None:
    capture = _collect(box, {"NCCL_TOPO_FILE": str(tmp_path / "missing.xml")})
    result = _topo_check(capture)
    assert result.severity == "warn" and "cannot be used" in result.summary


def test_no_topo_file_no_evidence(box: Box) -> None:
    assert _collect(box, {}).evidence is None


def test_writer_round_trips_a_collected_machine(box: Box) -> None:
    capture = _collect(box, {})
    text, _ = write_topology(capture, arch="x86_64", vendor="AuthenticAMD")
    assert all(c.get("arch") and c.get("vendor") for c in ET.fromstring(text).iter("cpu"))
    back = import_texts([("topo.xml", text)]).capture
    assert [g.bus_id for g in back.gpus] == [g.bus_id for g in capture.gpus]
    labels = [g.label for g in capture.gpus]
    for a in labels:
        for b in labels:
            assert back.topology.link(a, b) == capture.topology.link(a, b), (a, b)
    assert [len(g.nvlinks) for g in back.gpus] == [len(g.nvlinks) for g in capture.gpus]


def test_a_topo_file_that_is_a_fifo_device_folder_or_huge_is_refused_without_hanging(
    tmp_path: Path,
) -> None:
    """`NCCL_TOPO_FILE` naming a FIFO without a writer hung `check`. In a child with a
    deadline, so that a regression fails instead of hanging the suite."""
    import os
    import subprocess
    import sys

    fifo = tmp_path / "topo.xml"
    os.mkfifo(fifo)
    huge = tmp_path / "huge.xml"
    with huge.open("wb") as handle:
        handle.truncate(5 * 2**20)  # sparse: costs nothing
    code = (
        "import sys\n"
        "from pcidoc.collect.nccl_topo import attach_topo_file\n"
        "from pcidoc.samples import load_sample\n"
        "for path in sys.argv[1:]:\n"
        "    cap = load_sample('h100-pcie-nvlink-bridge')\n"
        "    attach_topo_file(cap, {'NCCL_TOPO_FILE': path})\n"
        "    print(cap.evidence.topo_file_error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(fifo), "/dev/zero", str(huge), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.splitlines() == [
        "it is a named pipe (FIFO); not read",
        "it is a character device; not read",
        "it is larger than 4 MiB; not read",
        "it is a directory; not read",
    ], done.stderr

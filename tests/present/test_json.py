"""JSON presenters: report_json, topology_json, and render_report_file by extension."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pcidoc.errors import PcidocError
from pcidoc.model import Report
from pcidoc.present import render_report_file
from pcidoc.present.json import TOPOLOGY_SCHEMA, report_json, topology_dict, topology_json
from tests.builders import machine
from tests.present.fixtures import small_report

ROOT = Path(__file__).resolve().parents[2]


def test_report_json_round_trips_and_keeps_key_order() -> None:
    report = small_report()
    text = report_json(report)
    assert text.endswith("}\n")
    data = json.loads(text)
    assert list(data)[:4] == ["schema", "pcidoc_version", "generated_at", "source"]
    assert data["schema"] == "pcidoc.report/1"
    assert data["machine"]["schema"] == "pcidoc.capture/1"
    assert "schema_" not in text
    assert [c["id"] for c in data["checks"]] == [c.id for c in report.checks]
    assert data["summary"] == {"pass": 1, "info": 1, "warn": 1, "fail": 1, "skip": 2, "error": 1}
    assert Report.model_validate(data) == report
    assert text.startswith('{\n  "schema": "pcidoc.report/1",\n')


def test_report_json_is_stable() -> None:
    assert report_json(small_report()) == report_json(small_report())


def test_topology_json_shape() -> None:
    cap = machine(2, link="NV4", nics=["NIC0"], nic_links={(0, "NIC0"): "PIX"})
    data = json.loads(topology_json(cap))
    assert list(data) == ["schema", "labels", "links", "gpus", "nics", "source"]
    assert data["schema"] == TOPOLOGY_SCHEMA == "pcidoc.topology/1"
    assert data["labels"] == ["GPU0", "GPU1", "NIC0"]
    assert data["links"] == [["X", "NV4", "PIX"], ["NV4", "X", "SYS"], ["PIX", "SYS", "X"]]
    assert data["gpus"][1] == {
        "index": 1,
        "name": "NVIDIA H100 80GB HBM3",
        "bus_id": "0000:28:00.0",
        "numa_node": 0,
        "numa_affinity": "0",
        "cpu_affinity": "0-47",
    }
    assert data["nics"] == [{"label": "NIC0", "name": "mlx5_0", "bus_id": None, "numa_node": None}]
    assert data["source"] == "synthetic"


def test_topology_json_layout_one_row_per_line() -> None:
    text = topology_json(machine(2, link="NV4"))
    assert text == (
        "{\n"
        '  "schema": "pcidoc.topology/1",\n'
        '  "labels": ["GPU0", "GPU1"],\n'
        '  "links": [\n'
        '    ["X", "NV4"],\n'
        '    ["NV4", "X"]\n'
        "  ],\n"
        '  "gpus": [\n'
        '    {"index": 0, "name": "NVIDIA H100 80GB HBM3", "bus_id": "0000:18:00.0", '
        '"numa_node": 0, "numa_affinity": "0", "cpu_affinity": "0-47"},\n'
        '    {"index": 1, "name": "NVIDIA H100 80GB HBM3", "bus_id": "0000:28:00.0", '
        '"numa_node": 0, "numa_affinity": "0", "cpu_affinity": "0-47"}\n'
        "  ],\n"
        '  "nics": [],\n'
        '  "source": "synthetic"\n'
        "}\n"
    )


def test_topology_json_unknown_cells_are_null_and_unicode_kept() -> None:
    cap = machine(2, link="PHB")
    cap.topology.links[0][1] = None
    cap.gpus[0].name = "GPU «ü»"
    text = topology_json(cap)
    assert json.loads(text)["links"][0] == ["X", None]
    assert "«ü»" in text


def test_topology_json_of_empty_capture() -> None:
    from pcidoc.model import Capture

    data = json.loads(topology_json(Capture.empty("import")))
    assert data["labels"] == []
    assert data["links"] == []
    assert data["gpus"] == []


def test_topology_dict_reads_the_capture() -> None:
    cap = machine(4, link="NV4", nics=["NIC0"])
    data = topology_dict(cap)
    assert [gpu["index"] for gpu in data["gpus"]] == [0, 1, 2, 3]
    assert data["nics"][0]["label"] == "NIC0"
    assert data["links"] == cap.topology.links and data["links"] is not cap.topology.links


def test_topology_json_72_gpus_timing() -> None:
    cap = machine(72, link="NV18", nics=[f"NIC{i}" for i in range(18)], numa_nodes=2)
    start = time.perf_counter()
    text = topology_json(cap)
    elapsed = time.perf_counter() - start
    print(f"\ntopology_json on 72 GPUs + 18 NICs: {elapsed * 1000:.2f} ms, {len(text)} bytes")
    data = json.loads(text)
    assert len(data["labels"]) == 90
    assert len(data["links"]) == 90
    assert text.count("\n") == 1 + 6 + 90 + 2 + 72 + 2 + 18 + 2 - 2


def test_json_presenter_imports_neither_rich_nor_pydantic_models() -> None:
    code = (
        "import sys\n"
        "import pcidoc.present.json\n"
        "print('LEAKED=' + ','.join(m for m in ('rich', 'textual', 'torch', "
        "'pcidoc.model.capture') if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert proc.stdout.strip() == "LEAKED="


@pytest.mark.parametrize(
    ("name", "start"),
    [
        ("report.json", '{\n  "schema": "pcidoc.report/1"'),
        ("REPORT.JSON", '{\n  "schema": "pcidoc.report/1"'),
        ("report.md", "# pcidoc report: testhost — FAIL"),
        ("out/report.html", "<!DOCTYPE html>"),
        ("report.htm", "<!DOCTYPE html>"),
    ],
)
def test_render_report_file_by_extension(name: str, start: str) -> None:
    assert render_report_file(small_report(), name).startswith(start)


@pytest.mark.parametrize("name", ["report.txt", "report", "report.md.bak"])
def test_render_report_file_unknown_extension(name: str) -> None:
    with pytest.raises(PcidocError, match="unknown report format"):
        render_report_file(small_report(), name)

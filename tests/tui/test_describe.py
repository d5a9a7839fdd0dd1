"""The TUI's words and grids, without an app: badges, the matrix in each colour mode, ceilings."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from pcidoc.doctor import run
from pcidoc.model.counters import GpuRates
from pcidoc.model.linkmodel import pair_ceiling
from pcidoc.model.report import ReportSource
from pcidoc.model.units import format_gbps
from pcidoc.samples.synthetic import synthetic_16
from pcidoc.tui.matrix_grid import build_grid
from pcidoc.tui.panes.doctor import check_line
from pcidoc.tui.panes.topology import describe_cell
from pcidoc.tui.widgets.machine_header import header_text, source_badge, worst_line
from tests.builders import machine
from tests.tui.machines import acs_machine, acs_source

STAMP = "2026-01-01T00:00:00Z"


def _text(renderable: object) -> str:
    console = Console(width=300, file=io.StringIO(), color_system=None, record=True)
    console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize(
    ("source", "kind", "expected"),
    [
        (ReportSource(kind="live"), "live", "LIVE"),
        (ReportSource(kind="capture", path="/tmp/box.json"), "live", "CAPTURE box.json"),
        (ReportSource(kind="import", path="/x/topo.json"), "import", "IMPORT topo.json"),
        (ReportSource(kind="demo", name="a100"), "import", "DEMO a100"),
        (
            ReportSource(kind="demo", name="synthetic-16gpu"),
            "synthetic",
            "DEMO synthetic-16gpu · SYNTHETIC",
        ),
        (ReportSource(kind="synthetic", path="s.json"), "synthetic", "SYNTHETIC s.json"),
    ],
)
def test_source_badge(source: ReportSource, kind: str, expected: str) -> None:
    capture = machine(1)
    capture.origin.kind = kind  # type: ignore[assignment]
    assert source_badge(source, capture)[0] == expected


def test_header_names_host_gpus_versions_and_worst() -> None:
    capture = acs_machine()
    report = run(capture, acs_source(), generated_at="2026-01-01T00:00:00Z")
    text = header_text(capture, acs_source(), report).plain
    assert "CAPTURE acs-box.json" in text and "acs-box" in text and "4 × NVIDIA L40S" in text
    assert "driver 550.54.15 · CUDA 12.4" in text and "FAIL" in text
    worst = worst_line(report).plain
    assert report.sorted_checks()[0].id in worst
    assert "`" not in worst  # backticks become highlighting
    line = check_line(report.sorted_checks()[0]).plain
    assert line.startswith("✗ fail")


def test_class_grid_uses_topo_codes_and_a_short_legend() -> None:
    grid = build_grid(synthetic_16())
    assert grid.labels[:2] == ["GPU0", "GPU1"] and "NIC0" in grid.labels
    assert grid.cells[0][1].text == "NV12" and grid.cells[0][1].code == "N"
    assert grid.cells[0][0].text == "X"
    shown = [entry[0] for entry in grid.legend]
    assert shown[0] == "NV12" and "SYS" in shown
    hidden = build_grid(synthetic_16(), show_nics=False)
    assert all(label.startswith("GPU") for label in hidden.labels)


def test_bandwidth_grid_says_how_to_measure_when_nothing_was() -> None:
    grid = build_grid(synthetic_16(), mode="bandwidth")
    assert "run the probes" in grid.note
    assert {cell.text for row in grid.cells for cell in row} <= {"X", "·"}


def test_traffic_grid_static_and_live() -> None:
    capture = machine(2, link="NV4")
    capture.gpus[0].tx_bytes_per_s = 31.5e9 * 0.5
    static = build_grid(capture, mode="traffic")
    assert "static" in static.note
    assert static.cells[0][0].text == "25%"  # Gen5 x16 is 63 GB/s raw per direction
    for nv in capture.gpus[0].nvlinks:  # a bridged pair: the links reach GPU1 directly
        nv.remote_type = "gpu"
        nv.remote_bus_id = capture.gpus[1].bus_id
    rates = {
        0: GpuRates(0, 50.4, 1.0, 0, 0, 5, 16, {0: 10.0, 1: 10.0, 2: 5.0, 3: 5.0}, {}, {}),
        1: GpuRates(1, 0.0, 0.0, 0, 0, 5, 16, {}, {}, {}),
    }
    live = build_grid(capture, mode="traffic", rates=rates)
    assert "static" not in live.note
    assert live.cells[0][0].text == "80%"
    assert live.cells[0][1].text == "30"
    assert live.cells[1][1].text == "0%"


def test_the_pair_detail_states_the_link_models_ceiling() -> None:
    capture = machine(2, link="NV18")
    ceiling = pair_ceiling(capture, 0, 1, "NV18")
    assert ceiling.gbps == pytest.approx(18 * 25.0)
    assert "18 × NVLink 4.0" in ceiling.basis
    said = f"ceiling: {format_gbps(ceiling.gbps)} per direction = {ceiling.basis}"
    assert said in _text(describe_cell(capture, "GPU0", "GPU1"))
    capture.gpus[1].pcie.current_gen, capture.gpus[1].pcie.current_width = 4, 8
    pcie = pair_ceiling(capture, 0, 1, "PIX")
    assert pcie.gbps == pytest.approx(15.75, abs=0.01) and "Gen4 x8" in pcie.basis
    assert pair_ceiling(capture, 0, 5, "PIX").gbps is None


def test_pair_detail_without_facts_says_what_is_missing() -> None:
    capture = machine(2, link="PHB")
    capture.p2p.matrices = {}
    capture.unavailable["p2p"] = "no nvidia-smi topo -p2p output imported"
    text = _text(describe_cell(capture, "GPU0", "GPU1"))
    assert "through the CPU's root complex" in text or "host bridge" in text
    assert "no nvidia-smi topo -p2p output imported" in text
    assert "no P2P copy measured for this pair" in text
    assert "path not in this capture" in text


def test_wording_of_the_pair_detail() -> None:
    """Latency rows say latency, the PCIe capability is named and explained, and an NVLink pair's
    P2P traffic is not said to turn around at a PCIe switch."""
    from pcidoc.samples import load_sample

    capture = load_sample("autodl-2080ti-2gpu")
    text = describe_cell(capture, "GPU0", "GPU1").plain
    latency = [line for line in text.splitlines() if "µs" in line]
    assert latency and all("latency" in line for line in latency)
    assert "pci NS" not in text and "PCIe NS" in text and "P2P over PCIe" in text
    assert "press p" not in text

    # synthetic-16gpu: NVSwitch pairs whose PCIe paths share a switch.
    nvlinked = load_sample("synthetic-16gpu")
    link = nvlinked.topology.link("GPU0", "GPU1")
    assert link is not None and link.startswith("NV")
    detail = describe_cell(nvlinked, "GPU0", "GPU1").plain
    assert "turns around" not in detail
    assert "takes NVLink" in detail


def test_nothing_wrong_offers_p_only_on_this_machine() -> None:
    from pcidoc import doctor
    from pcidoc.model.report import ReportSource
    from pcidoc.samples import load_sample

    capture = load_sample("h100-pcie-nvlink-bridge")  # its worst finding is info
    demo = doctor.run(capture, ReportSource(kind="demo", name="x"), generated_at=STAMP)
    live = doctor.run(capture, ReportSource(kind="live"), generated_at=STAMP)
    assert "nothing wrong found" in worst_line(demo).plain
    assert "p to measure" not in worst_line(demo).plain
    assert "p to measure" in worst_line(live).plain


def test_gpu_processes_show_their_cpu_placement_against_the_gpus_numa_node() -> None:
    from pcidoc.model.facts import GpuProcess, NumaNode
    from pcidoc.tui.panes.host import host_detail, process_placement
    from tests.tui.machines import acs_machine

    capture = acs_machine()
    capture.host.numa_nodes = [NumaNode(id=0, cpus="0-7"), NumaNode(id=1, cpus="8-15")]
    for gpu in capture.gpus:
        gpu.numa_node = 0 if gpu.index < 2 else 1
    local = GpuProcess(pid=101, name="train.py", gpus=[0], cpu_affinity="0-3")
    remote = GpuProcess(pid=202, name="infer", gpus=[2], cpu_affinity="0-7")
    spans = GpuProcess(pid=303, name="python", gpus=[1], cpu_affinity="0-15")
    blind = GpuProcess(pid=404, gpus=[0])
    capture.host.processes = [remote, local, spans, blind]
    assert process_placement(capture, local)[0].startswith("local: CPUs on node 0")
    assert process_placement(capture, remote)[0] == "REMOTE: CPUs on node 0, GPUs on node 1"
    assert process_placement(capture, spans)[0].startswith("spans nodes 0-1 (not pinned)")
    assert process_placement(capture, blind)[0].startswith("unknown")
    text = host_detail(capture, "x").plain
    section = text[text.index("GPU processes") :]
    lines = [line for line in section.splitlines()[1:5]]
    assert [line.split()[0] for line in lines] == ["101", "404", "303", "202"]  # by GPU, pid
    assert "REMOTE" in lines[-1] and "GPU2" in lines[-1] and "train.py" in lines[0]


def test_a_capture_without_processes_says_so() -> None:
    from pcidoc.samples import load_sample
    from pcidoc.tui.panes.host import host_detail

    text = host_detail(load_sample("synthetic-16gpu"), "x").plain
    assert "GPU processes" in text and "not in this capture" in text.split("GPU processes")[1]


def test_the_header_breaks_only_between_phrases() -> None:
    from pcidoc import doctor
    from pcidoc.model.report import ReportSource
    from pcidoc.samples import load_sample

    capture = load_sample("synthetic-16gpu")
    source = ReportSource(kind="demo", name="synthetic-16gpu")
    report = doctor.run(capture, source, generated_at=STAMP)
    one_line = header_text(capture, source, report).plain
    verdict = one_line[one_line.index("worst: ") :]
    assert verdict == "worst: ✗ FAIL (2 fail)"
    for width in (60, 80, 100, 120):
        lines = header_text(capture, source, report, width=width).plain.splitlines()
        assert all(len(line) <= width for line in lines), (width, lines)
        assert verdict in lines[-1] and sum(verdict in line for line in lines) == 1
        assert "driver 570.00.00 · CUDA 12.8" in " ".join(lines).replace("\n", " ")


def test_checks_waiting_for_probes_count_only_measuring_checks_missing_input() -> None:
    from pcidoc.model.report import CheckResult, Report
    from pcidoc.tui.panes.topology import attention_text, probe_checks_waiting

    cap = machine(2, link="NV4")
    report = run(cap, ReportSource(kind="demo"), [], [], generated_at="2026-01-01T00:00:00Z")
    checks = [
        # a probe check with no measurement: counted
        CheckResult(id="transfer.pinned", title="t", severity="skip", summary="s", needs="probes"),
        # a probe check that does not apply (one GPU): not counted
        CheckResult(id="scaling.efficiency", title="t", severity="skip", summary="n/a"),
        # a facts check missing its input: not a measurement
        CheckResult(id="pcie.errors", title="t", severity="skip", summary="s", needs="sysfs"),
        CheckResult(id="nccl.version", title="t", severity="skip", summary="s", needs="a log"),
    ]
    only_skips = Report.model_validate({**report.model_dump(), "checks": checks})
    assert probe_checks_waiting(only_skips) == 1
    assert "1 check needs measurements:" in attention_text(only_skips).plain

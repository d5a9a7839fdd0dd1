"""Markdown presenter: structure, escaping, compact matrix, measurements and origin."""

from __future__ import annotations

import re

from pcidoc.present.markdown import escape_text, inline, render_markdown
from tests.builders import machine
from tests.present.fixtures import measured_report, small_report


def test_title_and_header() -> None:
    md = render_markdown(small_report())
    lines = md.splitlines()
    assert lines[0] == "# pcidoc report: testhost — FAIL"
    assert (
        "**1 fail · 1 error · 1 warn · 1 info · 1 pass · 2 skip (7 checks)**; exit code 2 "
        "(at least one check failed)." in lines
    )
    assert "- **Source:** capture: h100-synthetic.json (synthetic data)" in lines
    assert "- **pcidoc:** 0.0.0-test, report generated 2024-05-01T12:00:00Z" in lines
    assert "- **Versions:** driver 550.54.15, CUDA 12.4" in lines


def test_findings_table_worst_first() -> None:
    md = render_markdown(small_report())
    findings = md.split("## Findings\n\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in findings.splitlines() if line.startswith("| ")]
    assert rows[0] == "| Severity | Check | Summary |"
    ids = [re.search(r"`([a-z0-9.-]+)`", row).group(1) for row in rows if "`" in row]  # type: ignore[union-attr]
    assert ids == [
        "p2p.acs-iommu",
        "scaling.allreduce",
        "pcie.link-speed",
        "numa.nic-affinity",
        "nvml.health",
        "transfer.pinned",
        "transfer.pageable",
    ]
    assert rows[2].startswith("| ✗ fail | [`p2p.acs-iommu`](#check-p2p.acs-iommu) |")
    assert rows[-1].startswith("| - skip |")


def test_details_blocks() -> None:
    md = render_markdown(small_report())
    # 7 checks + the fold of the passed/skipped rows + the fold of their details
    assert md.count("<details") == 9
    assert md.count("</details>") == 9
    assert (
        '<details open><summary><a name="check-p2p.acs-iommu"></a>✗ <b>p2p.acs-iommu</b> '
        "(fail): ACS Request Redirect on at bridge 0000:41:00.0 between GPU2 and GPU3</summary>"
        in md
    )
    assert (
        '<details open><summary><a name="check-pcie.link-speed"></a>! <b>pcie.link-speed</b>' in md
    )
    assert (
        '<details><summary><a name="check-numa.nic-affinity"></a>i <b>numa.nic-affinity</b>' in md
    )
    block = md.split("<b>pcie.link-speed</b>", 1)[1].split("</details>", 1)[0]
    assert "**PCIe link speed**. Confidence: medium." in block
    assert "- GPU2: pinned H2D: 3.1 GB/s" in block
    assert "1. Reseat GPU2 or move it to another slot; check `nvidia-smi -q -i 2 -d PCIE`." in block
    assert "2. Check the BIOS PCIe speed setting for the slot." in block
    # GitHub renders Markdown inside <details> only after a blank line.
    assert "</summary>\n\n" in md


def test_topology_section_full_table() -> None:
    md = render_markdown(small_report())
    topo = md.split("## Topology\n\n", 1)[1]
    header = topo.splitlines()[0]
    assert header.startswith("|  | GPU0 | GPU1 |")
    assert header.endswith("| CPU Affinity | NUMA |")
    assert (
        "| **GPU0** | X | NV18 | NV18 | NV18 | NV18 | NV18 | NV18 | NV18 | PIX | SYS | SYS | SYS "
        "| 0-47 | 0 |" in topo
    )
    assert "- **NV18**: a bonded set of 18 NVLinks" in topo
    assert "NICs: NIC0 = mlx5_0, NIC1 = mlx5_1, NIC2 = mlx5_2, NIC3 = mlx5_3" in topo
    assert "- all 8 GPUs are NV18 to each other (full mesh through NVSwitch)" in topo


def test_topology_section_compact_for_big_machines() -> None:
    report = small_report(machine(72, link="NV18", nics=["NIC0", "NIC1"], numa_nodes=2))
    md = render_markdown(report)
    topo = md.split("## Topology\n\n", 1)[1].split("\n## ", 1)[0]
    assert topo.startswith("74 devices: one character per pair (key below).\n\n```text\n")
    block = topo.split("```text\n", 1)[1].split("```", 1)[0]
    assert all(len(line) <= 120 for line in block.splitlines())
    assert "GPU0   XNNNNNNN" in block
    # GPU2 and GPU3 are named by the failing check: marked after their label, and listed.
    assert "GPU2 ✗ NNXNNNNN" in block
    assert "- ✗ [`p2p.acs-iommu`](#check-p2p.acs-iommu) (fail): GPU2, GPU3" in topo
    assert "| GPUs 0-35 | 0 | 0-47 |" in topo
    assert "- `N` **NV18**: a bonded set of 18 NVLinks" in topo
    assert "| **GPU0** |" not in md


def test_measurements_and_origin() -> None:
    md = render_markdown(measured_report())
    assert "- **Source:** import: topo.txt" in md
    assert "| GPU0 | H2D | pinned | — | 256.0 MiB | 53.2 GB/s | cuda-events |" in md
    # numbers right-aligned
    assert "| --- | --- | --- | --- | ---: | ---: | --- |" in md
    assert "### GPU ↔ GPU bandwidth (GB/s), P2P enabled, CE" in md
    assert "| **GPU1** | 370.5 | 1500.0 | 370.5 |" in md
    assert "| all_reduce | nccl | 8 | 410 GB/s | 1.0 GiB | 380 GB/s | — | nccl-tests |" in md
    assert "| 8 | 720.0 | 90 % | — |" in md
    assert "- p2p (timeout): deadline of 60 s passed" in md
    origin = md.split("## Origin\n\n", 1)[1]
    assert "- Imported `topo.txt` (nvidia-smi-topo)" in origin
    assert "  - warning: NIC rows after NIC3 were cut off" in origin
    # capture text: shown, but GitHub must not turn it into a link on its own
    assert "  - from: https&#58;//github.com/example/issue/1" in origin


def test_no_measurements_section_without_data() -> None:
    assert "## Measurements" not in render_markdown(small_report())


def test_escaping_of_capture_strings() -> None:
    cap = small_report().machine
    cap.gpus[0].name = "<script>alert(1)</script> | *x*"
    cap.host.hostname = "evil<b>host</b>"
    report = small_report(cap)
    report.checks[0].summary = "GPU0 <img src=x onerror=alert(1)> has `cmd | grep x` issue"
    md = render_markdown(report)
    assert "<script>" not in md
    assert "<img" not in md
    assert "<b>host" not in md
    assert "&lt;script&gt;alert(1)&lt;/script&gt; \\| \\*x\\*" in md
    assert "# pcidoc report: evil&lt;b&gt;host&lt;/b&gt; — FAIL" in md
    # In the findings table the pipe inside code is escaped so the row keeps its columns.
    row = next(line for line in md.splitlines() if "[`nvml.health`]" in line)
    assert row.count(" | ") == 2
    assert "`cmd \\| grep x`" in row
    # Inside <summary> (HTML) the same text becomes entities and <code>.
    assert "<code>cmd | grep x</code>" in md


def test_inline_helpers() -> None:
    assert escape_text("mlx5_0 and _x_") == "mlx5_0 and \\_x\\_"
    assert inline("run `a|b` now\nplease", table=True) == "run `a\\|b` now please"
    assert inline("unmatched ` tick") == "unmatched \\` tick"


def test_deterministic() -> None:
    assert render_markdown(measured_report()) == render_markdown(measured_report())

"""Shared report content (:mod:`pcidoc.present._sections`): same facts in Markdown and HTML."""

from __future__ import annotations

from pcidoc.model import OriginSource
from pcidoc.model.measurements import MemcpyKind, WorkloadEvidence
from pcidoc.present._sections import Bullets, Code, Heading, measurement_blocks, origin_blocks
from pcidoc.present.html import render_html
from pcidoc.present.markdown import render_markdown
from tests.present.fixtures import measured_report, small_report


def test_no_measurements_no_blocks() -> None:
    assert measurement_blocks(small_report().machine.measurements) == []


def test_origin_blocks_keep_paths_as_code() -> None:
    blocks = origin_blocks(measured_report().machine)
    assert blocks[0] == Heading("Origin", level=2)
    bullets = blocks[1]
    assert isinstance(bullets, Bullets)
    imported = [item for item in bullets.items if isinstance(item.text, tuple)]
    assert imported[0].text == ("Imported ", Code("topo.txt"), " (nvidia-smi-topo)")
    assert [child.text for child in imported[0].children][-1].startswith("from: ")


def test_workload_summary_is_the_same_in_both_formats() -> None:
    report = small_report()
    report.machine.measurements.workloads = [
        WorkloadEvidence(
            steps=5,
            nccl_time_share=0.2,
            nccl_exposed_share=0.1,
            source="trace.json",
            memcpy=[
                MemcpyKind(
                    kind="Memcpy HtoD",
                    direction="h2d",
                    memory="pageable",
                    count=3,
                    bytes=2048,
                    time_us=1500.0,
                )
            ],
        )
    ]
    line = "Profiler trace trace.json: 5 steps, NCCL 20 % of step, exposed NCCL 10 %"
    copies = "Memcpy HtoD: 3 copies, 2.0 KiB, 1.5 ms"
    assert f"- {line}\n  - {copies}" in render_markdown(report)
    assert f"<ul><li>{line}<ul><li>{copies}</li></ul></li></ul>" in render_html(report)


def test_pasted_source_path_is_escaped_in_both_formats() -> None:
    report = measured_report()
    report.machine.origin.sources.append(OriginSource(path="<script>x</script>`.txt"))
    page = render_html(report)
    assert "<li>Imported <code>&lt;script&gt;x&lt;/script&gt;`.txt</code></li>" in page
    assert "<script>x" not in page
    assert "- Imported `<script>x</script>'.txt`\n" in render_markdown(report)

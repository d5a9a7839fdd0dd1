"""What a forwarded report must get right: order, folding, big matrices, print, phone, colours."""

from __future__ import annotations

import colorsys
import re
from pathlib import Path

import pytest
from rich.color import Color
from rich.style import Style

from pcidoc.model import CheckResult, Evidence, P2PMatrixMeasurement
from pcidoc.present._common import DOCS_BASE_URL, docs_link, evidence_text
from pcidoc.present.html import LINK_COLOURS, SEVERITY_COLOURS, render_html
from pcidoc.present.markdown import render_markdown
from pcidoc.present.text import CELL_STYLES, SEVERITY_STYLES
from tests.builders import machine, square
from tests.present.fixtures import measured_report, small_report

ROOT = Path(__file__).resolve().parents[2]


def _rgb(hex_colour: str) -> tuple[float, float, float]:
    value = hex_colour.lstrip("#")
    r, g, b = (int(value[i : i + 2], 16) / 255 for i in (0, 2, 4))
    return r, g, b


def _distance(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    return sum((x - y) ** 2 for x, y in zip(a, b, strict=True)) ** 0.5


def _saturation(rgb: tuple[float, float, float]) -> float:
    return colorsys.rgb_to_hls(*rgb)[2]


def _hue_degrees(rgb: tuple[float, float, float]) -> float:
    return colorsys.rgb_to_hls(*rgb)[0] * 360


# ------------------------------------------------------------------------------ order


@pytest.mark.parametrize("render", [render_markdown, render_html])
def test_what_to_do_first_precedes_the_details(render) -> None:  # type: ignore[no-untyped-def]
    text = render(small_report())
    first = text.index("What to do first")
    for later in ("Findings", "Details", "Topology"):
        assert first < text.index(later), later
    section = text[first : text.index("Machine", first)]
    # every failing, erroring and warning check, worst first, each with its first step
    ids = re.findall(r"(p2p\.acs-iommu|scaling\.allreduce|pcie\.link-speed)", section)
    assert ids[0] == "p2p.acs-iommu" and ids[-1] == "pcie.link-speed"
    assert "sudo setpci -s 41:00.0 ECAP_ACS+0x6.w=0000" in section
    assert "nvml.health" not in section  # a pass is not an action


@pytest.mark.parametrize("render", [render_markdown, render_html])
def test_healthy_machine_says_nothing_to_fix(render) -> None:  # type: ignore[no-untyped-def]
    report = small_report()
    report.checks = [c for c in report.checks if c.severity in ("pass", "skip", "info")]
    report.worst = "info"
    text = render(report)
    assert "Nothing to fix" in text
    assert text.index("Nothing to fix") < text.index("Findings")


def test_passes_and_skips_fold_into_one_line_with_counts() -> None:
    page = render_html(small_report())
    findings = page.split("<h2>Findings</h2>", 1)[1].split("<h2>", 1)[0]
    visible, folded = findings.split('<details class="group"', 1)
    assert "nvml.health" not in visible and "transfer.pinned" not in visible
    assert "pcie.link-speed" in visible and "numa.nic-affinity" in visible
    summary = folded.split("</summary>", 1)[0]
    assert "1 passed" in summary and "2 skipped" in summary
    assert "nvml.health" in folded and "transfer.pageable" in folded
    md = render_markdown(small_report())
    assert "<details><summary>✓ 1 passed · - 2 skipped (click to show)</summary>" in md


def test_findings_link_to_their_details_and_docs_are_absolute() -> None:
    page = render_html(small_report())
    for check_id in re.findall(r'<a href="#check-([a-z0-9.-]+)">', page):
        assert f'id="check-{check_id}"' in page, check_id
    md = render_markdown(small_report())
    for check_id in re.findall(r"\]\(#check-([a-z0-9.-]+)\)", md):
        assert f'<a name="check-{check_id}"></a>' in md, check_id


def test_docs_link_is_the_published_url() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    published = re.search(r'^Documentation = "([^"]+)"', pyproject, re.M)
    assert published is not None
    assert published.group(1) == DOCS_BASE_URL
    url = docs_link("docs/checks.md#p2p.acs-iommu")
    assert url == f"{DOCS_BASE_URL}/checks.md#p2p.acs-iommu"
    assert docs_link("https://example.org/x") == "https://example.org/x"
    assert docs_link(None) is None
    report = small_report()
    report.checks[0].docs_url = "docs/checks.md#nvml.health"
    assert f'href="{DOCS_BASE_URL}/checks.md#nvml.health"' in render_html(report)
    assert f"]({DOCS_BASE_URL}/checks.md#nvml.health)" in render_markdown(report)
    assert "Docs: docs/checks.md" not in render_markdown(report)


def test_no_literal_backticks_in_rendered_html_text() -> None:
    report = small_report()
    page = render_html(report)
    body = page.split("<body>", 1)[1]
    text = re.sub(r"<code>.*?</code>", "", body, flags=re.S)
    text = re.sub(r"<script>.*?</script>", "", text, flags=re.S)
    assert "`" not in text


def test_check_ids_do_not_break_and_numbers_align_right() -> None:
    page = render_html(measured_report())
    assert ".cid { white-space: nowrap; }" in page
    assert '<code class="cid">p2p.acs-iommu</code>' in page
    assert '<td class="num">53.2 GB/s</td>' in page
    assert '<th class="num">Bandwidth</th>' in page
    # a column of words stays left-aligned
    assert "<td>pinned</td>" in page


def test_count_units_agree_with_their_number() -> None:
    assert evidence_text(Evidence(label="NVLinks down", value=1, unit="links")) == (
        "NVLinks down: 1 link"
    )
    assert evidence_text(Evidence(label="NVLinks down", value=2, unit="links")) == (
        "NVLinks down: 2 links"
    )
    assert evidence_text(Evidence(label="rate", value=1.0, unit="GB/s")) == "rate: 1 GB/s"
    report = small_report()
    report.checks.append(
        CheckResult(
            id="nvlink.state",
            title="NVLink state",
            severity="fail",
            summary="GPU1 has a link down",
            evidence=[Evidence(label="NVLinks down", value=1, unit="links", subject="GPU1")],
        )
    )
    for text in (render_html(report), render_markdown(report)):
        assert "GPU1: NVLinks down: 1 link" in text
        assert "1 links" not in text


def test_measured_matrix_names_the_pair_that_stands_out() -> None:
    report = measured_report()
    values = square(3, 370.5, diag=1500.0)
    values[1][2] = 12.25
    values[2][0] = 380.0
    latency = square(3, 2.5, diag=0.0)
    latency[0][2] = 9.75
    report.machine.measurements.p2p = [
        P2PMatrixMeasurement(
            kind="bandwidth",
            p2p="enabled",
            unit="GB/s",
            gpus=[0, 1, 2],
            values=values,
            source="nvbandwidth.txt",
        ),
        P2PMatrixMeasurement(
            kind="latency",
            p2p="enabled",
            unit="us",
            gpus=[0, 1, 2],
            values=latency,
            source="nvbandwidth.txt",
        ),
    ]
    md = render_markdown(report)
    assert (
        "Slowest pair: GPU1→GPU2 12.2 GB/s; fastest: GPU2→GPU0 380.0 GB/s; "
        "median of the 6 pairs 370.5 GB/s." in md
    )
    assert "Slowest to answer: GPU0→GPU2 9.75 us; quickest: " in md
    # the source is said once for the section, not once per matrix
    assert md.count("nvbandwidth.txt") == 1
    assert "Source of the GPU ↔ GPU matrices: nvbandwidth.txt" in md
    assert "All 6 pairs measured 370.5 GB/s." in render_markdown(measured_report())


# ------------------------------------------------------------------------------ big machines


def _subject_report(n: int, subjects: list[str], severity: str = "warn"):  # type: ignore[no-untyped-def]
    report = small_report(machine(n, link="NV18", nics=["NIC0", "NIC1"], numa_nodes=2))
    report.checks = [
        CheckResult(
            id="pcie.errors",
            title="PCIe errors",
            severity=severity,  # type: ignore[arg-type]
            summary="replays on one GPU",
            subjects=subjects,
        ),
        *[c for c in report.checks if c.severity in ("pass", "skip")],
    ]
    report.worst = severity  # type: ignore[assignment]
    return report


def test_compact_grid_above_twenty_devices_with_sticky_labels_legend_and_marks() -> None:
    page = render_html(_subject_report(72, ["GPU41", "GPU3-GPU5"]))
    assert '<div class="gridwrap"><table class="grid"' in page
    assert '<table class="matrix' not in page
    css = page.split("<style>", 1)[1].split("</style>", 1)[0]
    assert re.search(r"\.grid thead th \{ position: sticky;", css)
    assert re.search(r"\.grid th\.row \{ position: sticky; left: 0;", css)
    assert '<table class="legend">' in page
    assert "N = NV18" in page
    # the device and the pair named by the warning are marked; nothing else is
    assert '<th class="row mk-warn"' in page and ">GPU41 <span" in page
    assert page.count('<th class="row mk-') == 1
    assert page.count(" mk mk-warn") == 2  # GPU3-GPU5 and GPU5-GPU3
    assert 'title="GPU3–GPU5: NV18 (warn: pcie.errors)"' in page
    md = render_markdown(_subject_report(72, ["GPU41", "GPU3-GPU5"]))
    assert re.search(r"^GPU41! ", md, re.M)
    assert "- ! [`pcie.errors`](#check-pcie.errors) (warn): GPU41, GPU3-GPU5" in md
    # 20 devices still get the full table
    page20 = render_html(_subject_report(18, ["GPU1"]))
    assert '<table class="matrix full"' in page20 and 'class="grid"' not in page20


def test_print_styles() -> None:
    page = render_html(_subject_report(72, ["GPU41"]))
    print_css = page.split("@media print {", 1)[1]
    # the finding is not split across pages, headings stay with what follows
    assert "details.finding, .first li, tr { break-inside: avoid; }" in print_css
    assert "h2 { break-after: avoid; }" in print_css
    # the grid is laid flat and sized by its column count so that it fits the page
    assert ".gridwrap { overflow: visible; max-height: none;" in print_css
    assert "calc(560px / var(--cols" in print_css
    cols = re.search(r'<table class="grid" style="--cols: (\d+)"', page)
    assert cols is not None and int(cols.group(1)) >= 75  # 72 GPUs, 2 NICs, a gap, the labels
    # passing details stay closed: nothing opens every block before printing
    assert "beforeprint" not in page
    assert re.search(r'<details class="finding" id="check-nvml.health">', page)
    assert not re.search(r"<details open[^>]*id=\"check-(nvml.health|transfer)", page)
    assert "a.docs::after" in print_css  # the docs URL is printed next to its link


def test_phone_width_styles() -> None:
    page = render_html(small_report())
    phone = page.split("@media (max-width: 640px) {", 1)[1].split("@media print", 1)[0]
    # the findings table becomes one card per finding instead of overflowing sideways
    assert "table.findings, table.findings tbody, table.findings tr, table.findings td {" in phone
    assert "display: block;" in phone
    # long tokens (CUDA_VISIBLE_DEVICES/CUDA_DEVICE_ORDER) wrap
    assert "overflow-wrap: anywhere" in page.split("@media", 1)[0]
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert '<table class="findings">' in page


# ------------------------------------------------------------------------------ colours


def test_link_class_colours_are_not_severity_colours_in_html() -> None:
    severities = [_rgb(c) for c in SEVERITY_COLOURS.values()]
    for name, (background, _) in LINK_COLOURS.items():
        rgb = _rgb(background)
        assert _saturation(rgb) < 0.35, f"{name} is not muted"
        for sev in severities:
            assert _distance(rgb, sev) > 0.25, (name, background)
    # and the page's CSS uses them
    page = render_html(small_report())
    for name, (background, _) in LINK_COLOURS.items():
        assert f".c-{name} {{ background: {background};" in page
    assert ".c-sys { background: #b3261e" not in page


def test_link_class_colours_are_not_severity_colours_in_the_terminal_and_tui() -> None:
    def colour(style: str) -> tuple[float, float, float] | None:
        parsed = Style.parse(style).color
        if parsed is None:
            return None
        triplet = parsed.get_truecolor()
        return triplet.red / 255, triplet.green / 255, triplet.blue / 255

    severities = [c for c in (colour(s) for s in SEVERITY_STYLES.values()) if c]
    assert severities
    for name, style in CELL_STYLES.items():
        rgb = colour(style)
        if rgb is None:
            continue  # dim default colour: self and unknown
        assert Color.parse(style.split()[-1]).triplet is not None, "an exact colour, not ANSI"
        assert _saturation(rgb) < 0.5, f"{name} is not muted"
        hue = _hue_degrees(rgb)
        assert not (hue < 50 or hue > 330), f"{name} looks red/orange/yellow"
        assert not (80 < hue < 160 and _saturation(rgb) > 0.2), f"{name} looks green"
        for sev in severities:
            assert _distance(rgb, sev) > 0.25, (name, style)


def test_demo_badge_does_not_outshine_the_verdict() -> None:
    from pcidoc.tui.widgets.machine_header import BADGE_STYLES

    demo = Style.parse(BADGE_STYLES["demo"])
    assert not demo.bold
    fail = Style.parse(SEVERITY_STYLES["fail"])
    assert fail.bold
    assert demo.bgcolor is not None and demo.bgcolor.triplet is not None
    triplet = demo.bgcolor.triplet
    assert _saturation((triplet.red / 255, triplet.green / 255, triplet.blue / 255)) < 0.35


# ------------------------------------------------------------------------------ inert reports

SHARED = ROOT.parent / "shared" / "bad-inputs"


def _hostile_report():  # type: ignore[no-untyped-def]
    evil = (
        "GPU0\n```\n\n[Click to fix your GPUs](http://evil.example/x.sh) "
        "<img src=https://evil.example/track.png>\n\n```text"
    )
    report = _subject_report(24, ["GPU3"])
    cap = report.machine
    cap.topology.labels[0] = evil
    cap.gpus[0].name = evil
    cap.host.hostname = evil
    cap.nics[0].name = evil
    cap.host.environment = {"NCCL_DEBUG": evil}  # type: ignore[assignment]
    report.checks[0].summary = f"summary {evil} `{evil}`"
    report.checks[0].evidence = [Evidence(label=evil, value=evil, subject=evil)]
    report.checks[0].remediation = [f"run `{evil}` then {evil}"]
    return report, evil


def _markdown_outside_code(md: str) -> list[str]:
    """Lines of ``md`` that GitHub parses as Markdown (outside fenced blocks)."""
    out: list[str] = []
    fence: str | None = None
    for line in md.splitlines():
        match = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if fence is None and match:
            fence = match.group(1)
            continue
        if fence is not None:
            if re.match(rf"^ {{0,3}}{fence[0]}{{{len(fence)},}}\s*$", line):
                fence = None
            continue
        out.append(line)
    assert fence is None, "a fenced block was left open"
    return out


def _without_code_spans(line: str) -> str:
    """``line`` without its code spans (CommonMark: a run of n backticks closes at the next
    run of exactly n; an unmatched run is literal)."""
    runs = [(m.start(), m.end()) for m in re.finditer(r"(?<!\\)`+", line)]
    out, pos, i = [], 0, 0
    while i < len(runs):
        start, end = runs[i]
        size = end - start
        close = next((j for j in range(i + 1, len(runs)) if runs[j][1] - runs[j][0] == size), None)
        if close is None:
            i += 1
            continue
        out.append(line[pos:start])
        pos = runs[close][1]
        i = close + 1
    out.append(line[pos:])
    return "".join(out)


def _markdown_text(md: str) -> str:
    """What GitHub parses as Markdown inline text: outside fences, HTML blocks and code spans."""
    lines = []
    for line in _markdown_outside_code(md):
        if line.startswith(("<details", "</details")):
            continue  # an HTML block: its content is not parsed as Markdown
        lines.append(_without_code_spans(line))
    return "\n".join(lines)


def _links_outside_code(md: str) -> list[str]:
    """Link targets GitHub would render."""
    return re.findall(r"(?<!\\)\]\(([^)]*)\)", _markdown_text(md))


def test_markdown_stays_inert_with_hostile_labels() -> None:
    report, _ = _hostile_report()
    md = render_markdown(report)
    outside = "\n".join(_markdown_outside_code(md))
    plain = _markdown_text(md)
    assert "<img" not in plain
    for target in _links_outside_code(md):
        assert target.startswith(("#check-", DOCS_BASE_URL)), target
    assert "http://evil" not in plain  # defanged: GitHub does not autolink it
    # no line outside the grid's fence starts a fence of its own
    assert not re.search(r"^ {0,3}```", outside, re.M)
    # inside the grid fence, the label is one line with its control characters visible
    grid = md.split("devices: one character per pair", 1)[1]
    assert "GPU0\\x0a" in grid


def test_markdown_fence_longer_than_any_backtick_run() -> None:
    report = small_report(machine(24, link="NV18"))
    report.machine.topology.labels[1] = "GPU1````````"
    md = render_markdown(report)
    assert "`````````text" in md  # nine backticks: one more than the label's run
    assert _markdown_outside_code(md)


def test_html_escapes_hostile_text_everywhere() -> None:
    report, _ = _hostile_report()
    page = render_html(report)
    assert "<img" not in page
    assert 'href="http://evil' not in page
    assert "&lt;img src=https://evil.example/track.png&gt;" in page
    # attribute values are escaped too: a quote cannot end the title attribute
    report.machine.topology.labels[1] = 'GPU1" onmouseover="alert(1)'
    page = render_html(report)
    assert 'onmouseover="alert' not in page
    assert "GPU1&quot; onmouseover=&quot;alert(1)" in page


@pytest.mark.skipif(not (SHARED / "fence.json").exists(), reason="shared/bad-inputs not present")
def test_fence_capture_from_shared_bad_inputs() -> None:
    from pcidoc.collect.capture import load_capture
    from pcidoc.doctor import run as run_doctor
    from pcidoc.model import ReportSource

    capture = load_capture(SHARED / "fence.json")
    report = run_doctor(
        capture,
        ReportSource(kind="capture", path="fence.json"),
        generated_at="2026-01-01T00:00:00Z",
    )
    md = render_markdown(report)
    plain = _markdown_text(md)
    assert "<img" not in plain
    for target in _links_outside_code(md):
        assert target.startswith(("#check-", DOCS_BASE_URL)), target
    assert "http://evil" not in plain
    page = render_html(report)
    assert "<img" not in page and 'href="http://evil' not in page


def test_reports_doc_shows_each_format_with_small_images() -> None:
    doc = (ROOT / "docs" / "reports.md").read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]*\]\((img/[^)]+)\)", doc)
    for name in ("terminal", "markdown", "html", "html-phone", "print"):
        assert f"img/report-{name}.png" in images, name
    for image in images:
        path = ROOT / "docs" / image
        assert path.is_file(), image
        assert path.stat().st_size < 200_000, image


@pytest.mark.parametrize("render", [render_markdown, render_html])
def test_control_characters_are_written_as_visible_escapes(render) -> None:  # type: ignore[no-untyped-def]
    # as in shared/bad-inputs/esc-query.txt: an OSC title, an OSC 52 clipboard write, a DCS
    hostile = "H800 \x1b]0;pwned\x1b\\ \x1b]52;c;cHduZWQ=\x07 \x1bP+q\x1b\\ \u202egnp.exe"
    report = small_report(machine(24, link="NV18"))
    report.machine.gpus[0].name = hostile
    report.machine.topology.labels[3] = "GPU3\x1b[2J"
    report.checks[0].summary = f"name `{hostile}` here"
    report.checks[0].evidence = [Evidence(label="name", value=hostile, subject="GPU0")]
    text = render(report)
    controls = [ch for ch in text if ch not in "\n" and (ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0)]
    assert controls == []
    assert "\u202e" not in text
    assert "x1b" in text and "u202e" in text  # shown, not dropped


@pytest.mark.parametrize("render", [render_markdown, render_html])
def test_what_to_do_first_stays_short(render) -> None:  # type: ignore[no-untyped-def]
    report = small_report()
    report.checks += [
        CheckResult(id=f"pcie.errors-{n}", title="t", severity="warn", summary=f"warning {n}")
        for n in range(8)
    ]
    text = render(report)
    section = text[text.index("What to do first") : text.index("Machine")]
    assert "… and 6 more findings below." in section  # 3 + 8 = 11 findings, 5 listed
    # worst first, then in the report's order (the small report's own warn comes first)
    assert "warning 1" in section and "warning 2" not in section

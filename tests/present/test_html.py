"""HTML presenter: a self-contained, escaped, colour-coded page."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import ClassVar

from pcidoc.present.html import render_html
from tests.builders import machine
from tests.present.fixtures import measured_report, small_report


class _Collector(HTMLParser):
    """Collects tags, attributes and script bodies; fails on unbalanced structure."""

    VOID: ClassVar[set[str]] = {"meta", "br", "img", "link", "hr", "input"}

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        assert self.stack, f"unbalanced </{tag}>"
        assert self.stack[-1] == tag, f"unbalanced </{tag}> in {self.stack}"
        self.stack.pop()
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)


def parse(page: str) -> _Collector:
    collector = _Collector()
    collector.feed(page)
    collector.close()
    assert collector.stack == []
    return collector


def test_self_contained_document() -> None:
    page = render_html(measured_report())
    assert page.startswith('<!DOCTYPE html>\n<html lang="en">')
    assert page.endswith("</html>\n")
    parsed = parse(page)
    for tag, attrs in parsed.tags:
        assert "src" not in attrs, tag
        if tag == "link":
            raise AssertionError("external stylesheet")
        for name, value in attrs.items():
            if tag == "a" and name == "href" and "docs" in (attrs.get("class") or ""):
                continue  # a link the reader may follow, never loaded by the page
            assert not (value or "").startswith(("http:", "https:", "//")), (tag, attrs)
    assert "<style>" in page
    assert len(parsed.scripts) == 1
    assert "@media print" in page


def test_title_findings_and_details() -> None:
    page = render_html(small_report())
    assert "<title>pcidoc report: testhost (FAIL)</title>" in page
    assert '<span class="verdict sev-fail">FAIL</span>' in page
    findings = page.split("<h2>Findings</h2>", 1)[1].split("<h2>", 1)[0]
    # The passed and skipped rows once more, for paper only (it cannot open the fold).
    findings, printed = findings.split('<div class="print-only">', 1)
    assert printed.count("<tr>") == findings.split('id="passed"', 1)[1].count("<tr>")
    ids = re.findall(
        r'<td><a href="#check-[a-z0-9.-]+"><code class="cid">([a-z0-9.-]+)</code>', findings
    )
    assert ids == [
        "p2p.acs-iommu",
        "scaling.allreduce",
        "pcie.link-speed",
        "numa.nic-affinity",
        "nvml.health",
        "transfer.pinned",
        "transfer.pageable",
    ]
    assert '<span class="sev sev-fail">✗ fail</span>' in findings
    # 7 checks + the two folds (passed/skipped rows, their details)
    assert page.count("<details") == 9
    assert '<details open class="finding" id="check-p2p.acs-iommu">' in page
    assert '<details class="finding" id="check-nvml.health">' in page
    assert "<li>GPU2: pinned H2D: 3.1 GB/s</li>" in page
    assert (
        "<li>Disable ACS redirect: <code>sudo setpci -s 41:00.0 ECAP_ACS+0x6.w=0000</code>.</li>"
        in page
    )


def test_matrix_is_colour_coded() -> None:
    cap = machine(
        4,
        link="SYS",
        pairs={(0, 1): "NV12", (0, 2): "NV4", (1, 2): "PIX", (2, 3): "PHB", (1, 3): "NODE"},
    )
    cap.topology.links[0][3] = None
    page = render_html(small_report(cap))
    assert '<td class="c-nv-hi" title="GPU0–GPU1: NV12">NV12</td>' in page, page
    assert '<td class="c-nv-lo" title="GPU0–GPU2: NV4">NV4</td>' in page
    assert '<td class="c-pix" title="GPU1–GPU2: PIX">PIX</td>' in page
    assert '<td class="c-phb" title="GPU2–GPU3: PHB">PHB</td>' in page
    assert '<td class="c-node" title="GPU1–GPU3: NODE">NODE</td>' in page
    assert '<td class="c-sys" title="GPU3–GPU0: SYS">SYS</td>' in page
    assert '<td class="c-unknown" title="GPU0–GPU3: ?">?</td>' in page
    assert '<td class="c-self" title="GPU0–GPU0: X">X</td>' in page
    for style in ("c-nv-hi", "c-pix", "c-sys", "c-node", "c-phb"):
        assert f".{style} {{" in page


def test_compact_matrix_for_many_gpus() -> None:
    page = render_html(small_report(machine(32, link="NV18")))
    assert '<table class="grid"' in page
    assert '<td class="c-nv-hi" title="GPU0–GPU1: NV18">N</td>' in page
    assert "<td>GPUs 0-31</td>" in page
    small = render_html(small_report(machine(20, link="NV18")))
    assert '<table class="grid"' not in small and '<table class="matrix full"' in small


def test_every_capture_string_is_escaped() -> None:
    cap = small_report().machine
    evil = '<script>alert("x")</script>'
    cap.host.hostname = evil
    cap.gpus[0].name = evil
    cap.gpus[0].cpu_affinity = evil
    cap.nics[0].name = evil
    cap.topology.labels[0] = evil
    cap.origin.note = evil
    report = small_report(cap)
    report.checks[0].summary = f"summary {evil} `{evil}`"
    report.checks[1].evidence[0].label = evil
    report.checks[1].remediation[0] = f'<a href="javascript:alert(1)">x</a> `{evil}`'
    page = render_html(report)
    parsed = parse(page)
    assert len(parsed.scripts) == 1  # only our own helper
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    # The only links are pcidoc's own: to a check's details or to the published docs.
    for tag, attrs in parsed.tags:
        if tag == "a":
            href = attrs.get("href") or ""
            assert href.startswith(("#check-", "https://github.com/pcidoc/pcidoc/")), attrs


def test_measurements_and_origin_sections() -> None:
    page = render_html(measured_report())
    assert "<h3>Host ↔ device transfers</h3>" in page
    assert '<td class="num">53.2 GB/s</td>' in page
    assert "<h3>GPU ↔ GPU bandwidth (GB/s), P2P enabled, CE</h3>" in page
    assert '<td class="num">410 GB/s</td>' in page
    assert "<li>p2p (timeout): deadline of 60 s passed</li>" in page
    assert "<li>Imported <code>topo.txt</code> (nvidia-smi-topo)<ul>" in page
    assert "<li>from: https://github.com/example/issue/1</li>" in page


def test_deterministic() -> None:
    assert render_html(measured_report()) == render_html(measured_report())


# ------------------------------------------------- issue 30: what a printed report shows

from html.parser import HTMLParser  # noqa: E402


class _PrintView(HTMLParser):
    """The text a printer shows: hidden are ``details.group`` (paper cannot open a fold), a
    ``.hint``, and what a closed ``details`` holds besides its summary."""

    VOID = frozenset({"br", "meta", "link", "img", "col", "wbr", "hr", "input"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, bool, bool]] = []  # (tag, a closed details, hidden)
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID:
            return
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        parent_tag, parent_closed, hidden = self.stack[-1] if self.stack else ("", False, False)
        hidden = hidden or "hint" in classes or (tag == "details" and "group" in classes)
        hidden = hidden or (parent_tag == "details" and parent_closed and tag != "summary")
        self.stack.append((tag, tag == "details" and "open" not in a, hidden))

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if not (self.stack and self.stack[-1][2]):
            self.text.append(data)


def test_a_printed_report_shows_the_passes_and_no_hover_hint() -> None:
    from pcidoc.doctor import run
    from pcidoc.model.report import ReportSource
    from pcidoc.present.html import render_html
    from pcidoc.samples import load_sample

    for name in ("synthetic-72gpu", "h100-pcie-nvlink-bridge"):
        report = run(load_sample(name), ReportSource(kind="demo", name=name), generated_at="t")
        page = render_html(report)
        css = page[page.index("@media print") :]
        assert (
            ".print-only { display: block; }" in css and "details.group { display: none; }" in css
        )
        view = _PrintView()
        view.feed(page)
        printed = "".join(view.text)
        passes = [c.id for c in report.checks if c.severity == "pass"]
        assert passes and all(check_id in printed for check_id in passes), name
        assert "Hover" not in printed and "hover" not in printed

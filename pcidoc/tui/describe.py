"""Words and numbers the TUI shows, built from a capture or a report (no widgets here).

Each function returns a :class:`rich.text.Text` (or plain data) so that the panes only place
them on screen and tests can read them without running an app. Strings that come from a
capture (GPU names, NIC names, pasted text) are appended as plain text, never parsed as markup.
The colours are those of ``pcidoc topo`` / ``pcidoc check`` (:mod:`pcidoc.present.text`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from pcidoc._record import record
from pcidoc.model import linkmodel
from pcidoc.model.capture import Capture
from pcidoc.model.facts import P2P_CAPS, P2P_CODES, Gpu, GpuProcess, Host, Nic, PcieHop
from pcidoc.model.links import meaning
from pcidoc.model.measurements import P2PMatrixMeasurement
from pcidoc.model.report import CheckResult, Report, ReportSource
from pcidoc.model.units import format_bytes, format_gbps, link_label
from pcidoc.present._common import (
    MARKS,
    UNNAMED_MODEL,
    docs_link,
    evidence_text,
    gpu_models,
    gpu_name,
    hostname,
    severity_counts,
    split_code,
)
from pcidoc.present.text import CELL_STYLES, CODE_STYLE, SEVERITY_STYLES

if TYPE_CHECKING:
    from pcidoc.model.report import FindingNote

__all__ = [
    "CELL_STYLES",
    "MARKS",
    "SEVERITY_STYLES",
    "Ceiling",
    "check_detail",
    "check_line",
    "describe_cell",
    "header_text",
    "host_detail",
    "inline",
    "measured_p2p",
    "path_ceiling",
    "source_badge",
    "worst_line",
]

BADGE_STYLES: dict[str, str] = {
    "live": "bold black on green",
    "capture": "bold black on cyan",
    "import": "bold black on cyan",
    "demo": "#e6e8ec on #4a5263",
    "synthetic": "bold white on blue",
}
"""Style of the source badge in the header, by source kind."""

ROLE_NAMES: dict[str, str] = {
    "root_port": "root port",
    "switch_downstream": "switch down",
    "switch_upstream": "switch up",
    "bridge": "bridge",
    "other": "port",
}

_ACS_SHORT = (
    ("source_validation", "SrcValid"),
    ("translation_blocking", "TransBlk"),
    ("request_redirect", "ReqRedir"),
    ("completion_redirect", "CmpltRedir"),
    ("upstream_forwarding", "UpstreamFwd"),
    ("egress_control", "EgressCtrl"),
    ("direct_translated", "DirectTrans"),
)


# ------------------------------------------------------------------------------- helpers


def inline(text: str, style: str = "") -> Text:
    """Text with `backtick` spans shown as highlighted commands (backticks dropped)."""
    out = Text(style=style)
    for piece, is_code in split_code(text):
        out.append(piece, style=CODE_STYLE if is_code else "")
    return out


def _kv(out: Text, key: str, value: str | Text, key_width: int = 16) -> None:
    out.append(f"{key:<{key_width}}", style="bold")
    if isinstance(value, Text):
        out.append_text(value)
    else:
        out.append(value)
    out.append("\n")


def _dim(text: str) -> Text:
    return Text(text, style="dim")


def _yes_no(value: bool | None, unknown: str = "unknown") -> str:
    if value is None:
        return unknown
    return "yes" if value else "no"


# -------------------------------------------------------------------------------- header


def source_badge(source: ReportSource | None, capture: Capture | None) -> tuple[str, str]:
    """Short label and style of where the machine on display comes from.

    ``LIVE``, ``CAPTURE file.json``, ``IMPORT file.json``, ``DEMO name`` (``· SYNTHETIC`` when
    the sample is synthetic) or ``SYNTHETIC``.
    """
    if source is None:
        return "…", "dim"
    detail = source.name or (os.path.basename(source.path) if source.path else "")
    label = source.kind.upper() + (f" {detail}" if detail else "")
    synthetic = capture is not None and capture.origin.kind == "synthetic"
    if source.kind == "demo" and synthetic:
        label += " · SYNTHETIC"
    return label, BADGE_STYLES.get(source.kind, "bold reverse")


def _versions(capture: Capture) -> str:
    driver = capture.driver
    parts = []
    if driver.driver_version:
        parts.append(f"driver {driver.driver_version}")
    if driver.cuda_driver_version:
        parts.append(f"CUDA {driver.cuda_driver_version}")
    return " · ".join(parts)


def _models(capture: Capture) -> Text:
    """GPU count and models; GPUs no source in the capture names are said to be so (a pasted
    topology matrix has no model names), not called "unknown GPU"."""
    models = gpu_models(capture)
    head, said, tail = models.partition(f" {UNNAMED_MODEL}")
    text = Text(head)
    if said:
        text.append(said, style="dim")
    text.append(tail)
    return text


def header_text(
    capture: Capture | None,
    source: ReportSource | None,
    report: Report | None,
    status: str | None = None,
    width: int | None = None,
    max_lines: int | None = None,
) -> Text:
    """The header line: source badge, host, GPU count and models, versions, worst severity.

    With ``width``, the phrases are packed into lines of at most ``width`` cells and a line
    breaks only between phrases ("worst: ✗ FAIL (2 fail)" is never split), unless one phrase
    alone is wider. With ``max_lines`` too, the versions are left out when they would push the
    worst severity past that many lines.
    """
    phrases: list[tuple[Text, str]] = []
    """Each phrase and the separator in front of it."""
    first = Text()
    label, style = source_badge(source, capture)
    first.append(f" {label} ", style=style)
    if capture is None:
        first.append(" ")
        first.append(status or "collecting this machine's facts…", style="italic")
        return first
    # An import rarely knows its host name: the source badge already names the machine.
    if capture.host.hostname or capture.origin.kind != "import":
        phrases.append((first, ""))
        phrases.append((Text(hostname(capture), style="bold"), " "))
        phrases.append((_models(capture), " · "))
    else:
        phrases.append((first, ""))
        phrases.append((_models(capture), " "))
    versions = _versions(capture)
    if versions:
        phrases.append((Text(versions), " · "))
    verdict = Text()
    if report is None:
        verdict.append(status or "diagnosing…", style="italic")
    else:
        worst = report.worst
        verdict.append("worst: ", style="dim")
        verdict.append(f"{MARKS[worst]} {worst.upper()}", style=SEVERITY_STYLES[worst])
        counts = [
            f"{n} {sev}" for sev, n in severity_counts(report) if sev in ("fail", "error", "warn")
        ]
        if counts:
            verdict.append(f" ({', '.join(counts)})", style="dim")
    phrases.append((verdict, "  "))
    out, lines = _pack(phrases, width)
    if max_lines is not None and lines > max_lines and versions:
        # The verdict must stay on screen (the header shows max_lines lines): the driver and
        # CUDA versions give way first (the Host pane and exports still have them).
        out, lines = _pack([p for p in phrases if p[0].plain != versions], width)
    return out


def _pack(phrases: list[tuple[Text, str]], width: int | None) -> tuple[Text, int]:
    """Phrases joined by their separators, broken between phrases at ``width``; the text and
    its number of lines."""
    out = Text(no_wrap=False)
    used = 0
    lines = 1
    for position, (phrase, separator) in enumerate(phrases):
        size = phrase.cell_len
        if position and width is not None and used + len(separator) + size > width:
            out.append("\n ")  # continuation lines start under the badge's text
            used = 1
            lines += 1
        elif position:
            out.append(separator, style="dim")
            used += len(separator)
        out.append_text(phrase)
        used += size
    return out, lines


def probe_checks_waiting(report: Report) -> int:
    """Checks that measure (``needs="probe"``) and skipped for want of a measurement; a check
    that does not apply (one GPU, no NVLink) says so without naming a missing input."""
    from pcidoc.doctor.registry import load_checks

    specs = load_checks()
    return sum(
        1
        for c in report.checks
        if c.severity == "skip"
        and c.needs
        and (spec := specs.get(c.id)) is not None
        and spec.needs == "probe"
    )


def attention_text(report: Report | None, limit: int = 6) -> Text:
    """What is wrong, worst first (fail, error, warn), one entry per check, for the first screen."""
    out = Text()
    if report is None:
        out.append("diagnosing…", style="dim")
        return out
    attention = [c for c in report.sorted_checks() if c.severity in ("fail", "error", "warn")]
    out.append("What is wrong", style="bold")
    out.append("  (w or 3: evidence and fix)\n", style="dim")
    if not attention:
        out.append(
            f"{MARKS['pass']} nothing: no check failed or warned", style=SEVERITY_STYLES["pass"]
        )
        skipped = probe_checks_waiting(report)
        if skipped:
            out.append(
                f"\n{skipped} check{'s need' if skipped != 1 else ' needs'} measurements: "
                "p runs the probes on a live machine",
                style="dim",
            )
        return out
    for pos, check in enumerate(attention[:limit]):
        if pos:
            out.append("\n")
        out.append(f"{MARKS[check.severity]} ", style=SEVERITY_STYLES[check.severity])
        out.append(check.id, style="bold")
        out.append(" ")
        out.append_text(inline(check.summary))
    if len(attention) > limit:
        out.append(f"\n… and {len(attention) - limit} more", style="dim")
    return out


def worst_line(report: Report | None) -> Text:
    """One line naming the worst finding and where to read it (``w``)."""
    out = Text(no_wrap=True, overflow="ellipsis")
    if report is None:
        return out
    attention = [c for c in report.sorted_checks() if c.severity in ("fail", "error", "warn")]
    if not attention:
        out.append(" ✓ nothing wrong found", style=SEVERITY_STYLES["pass"])
        # p measures only the machine pcidoc runs on: offer it only there.
        live = report.source.kind == "live"
        out.append(" — press w for the checks" + (", p to measure" if live else ""), style="dim")
        return out
    check = attention[0]
    out.append(" w ", style="bold reverse")
    out.append(" worst: ", style="dim")
    out.append(f"{MARKS[check.severity]} {check.id} ", style=SEVERITY_STYLES[check.severity])
    out.append_text(inline(check.summary))
    return out


# ------------------------------------------------------------------------------- doctor


def check_line(check: CheckResult) -> Text:
    """One row of the check list: mark, severity, id and the summary (cut to one line)."""
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append(
        f"{MARKS[check.severity]} {check.severity:<5} ", style=SEVERITY_STYLES[check.severity]
    )
    out.append(f"{check.id:<22} ", style="bold")
    out.append_text(inline(check.summary, "dim" if check.severity in ("pass", "skip") else ""))
    return out


def _hanging(rows: list[tuple[Text, Text]]) -> Table:
    """Two columns so that wrapped lines stay indented under their text, not under the mark."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, justify="right")
    grid.add_column(ratio=1, overflow="fold")
    for mark, text in rows:
        grid.add_row(mark, text)
    return grid


def _findings_part(findings: Sequence[FindingNote]) -> Table:
    rows = []
    for finding in findings:
        mark = Text(f" {MARKS[finding.severity]}", style=SEVERITY_STYLES[finding.severity])
        line = inline(finding.summary)
        if finding.subjects:
            line.append(f"  ({', '.join(finding.subjects[:4])}", style="dim")
            more = len(finding.subjects) - 4
            line.append(f", +{more})" if more > 0 else ")", style="dim")
        rows.append((mark, line))
    return _hanging(rows)


def check_detail(check: CheckResult) -> Group:
    """Everything about one check: summary, every finding when it has several (its summary
    shows only the worst, "+N more"), evidence with units, numbered remediation."""
    head = Text()
    head.append(
        f"{MARKS[check.severity]} {check.severity.upper()}", style=SEVERITY_STYLES[check.severity]
    )
    head.append("  ")
    head.append(check.id, style="bold")
    head.append(f" — {check.title}\n")
    head.append(f"confidence {check.confidence}", style="dim")
    if check.subjects:
        head.append(f" · about {', '.join(check.subjects[:8])}", style="dim")
        if len(check.subjects) > 8:
            head.append(f" +{len(check.subjects) - 8} more", style="dim")
    head.append("\n")
    parts: list[RenderableType] = [head, inline(check.summary)]
    notable = [f for f in check.findings if f.severity not in ("pass", "skip")]
    if len(notable) > 1:
        parts.append(Text(f"\nFindings ({len(notable)})", style="bold"))
        parts.append(_findings_part(notable))
    if check.needs:
        needs = Text("\nNeeds  ", style="bold")
        needs.append_text(inline(check.needs))
        parts.append(needs)
    if check.evidence:
        parts.append(Text("\nEvidence", style="bold"))
        parts.append(
            _hanging([(Text(" •"), inline(evidence_text(item))) for item in check.evidence])
        )
    if check.remediation:
        parts.append(Text("\nWhat to do", style="bold"))
        parts.append(
            _hanging(
                [
                    (Text(f" {n}.", style="bold"), inline(step))
                    for n, step in enumerate(check.remediation, 1)
                ]
            )
        )
    if check.docs_url:
        docs = Text("\nDocs  ", style="bold")
        docs.append(docs_link(check.docs_url) or "", style="underline")
        parts.append(docs)
    return Group(*parts)


# --------------------------------------------------------------------- links and ceilings


@record(frozen=True)
class Ceiling:
    """The per-direction ceiling of the path between two GPUs, and how it was derived."""

    gbps: float
    basis: str
    """``12 × NVLink 3.0 at 25 GB/s`` or ``PCIe Gen4 x16 (raw, after line coding)``."""


def gpu_pcie_ceiling(gpu: Gpu) -> tuple[float | None, str]:
    """Raw per-direction ceiling of a GPU's PCIe link and its label (from the link model)."""
    ceiling = linkmodel.gpu_pcie_ceiling(gpu)
    gen, width = (gpu.pcie.current_gen, gpu.pcie.current_width)
    if not (gen and width):
        gen, width = gpu.pcie.max_gen, gpu.pcie.max_width
    if ceiling.provenance == "model":
        model = linkmodel.gpu_model_of(gpu)
        gen, width = (model.pcie_gen, model.pcie_width) if model else (gen, width)
    return ceiling.gbps, link_label(gen, width)


def path_ceiling(capture: Capture, a: int, b: int, link: str | None) -> Ceiling | None:
    """Ceiling of the path GPU ``a`` → GPU ``b`` for its link class, or ``None`` if unknown.

    The same ceiling the doctor uses (:func:`pcidoc.model.linkmodel.pair_ceiling`): NVLink =
    links × the per-link rate (capture, else the GPU model); PCIe = the slower GPU link, raw.
    """
    ceiling = linkmodel.pair_ceiling(capture, a, b, link)
    if ceiling.gbps is None:
        return None
    return Ceiling(ceiling.gbps, ceiling.basis)


def _matrix_name(m: P2PMatrixMeasurement) -> str:
    parts = [f"P2P {m.p2p}"]
    if m.bidirectional:
        parts.append("bidirectional")
    if m.access:
        parts.append(m.access)
    if m.method:
        parts.append(m.method.upper())
    if m.kind == "latency":
        parts.append("latency")
        if m.latency_side:
            parts.append(f"{m.latency_side}-timed")
    return " ".join(parts)


def measured_p2p(capture: Capture, a: int, b: int) -> list[tuple[P2PMatrixMeasurement, float]]:
    """Every P2P matrix measurement with a value for ``a`` → ``b`` (bandwidth first)."""
    found = []
    for m in capture.measurements.p2p:
        value = m.value(a, b)
        if value is not None:
            found.append((m, value))
    found.sort(key=lambda item: (item[0].kind != "bandwidth", item[0].p2p != "enabled"))
    return found


def best_p2p_bandwidth(capture: Capture) -> P2PMatrixMeasurement | None:
    """The matrix the bandwidth colour mode shows: unidirectional, P2P enabled, bandwidth."""
    candidates = [
        m for m in capture.measurements.p2p if m.kind == "bandwidth" and m.p2p == "enabled"
    ]
    candidates.sort(key=lambda m: (m.bidirectional, m.access not in ("write", None)))
    return candidates[0] if candidates else None


# --------------------------------------------------------------------------- cell detail


def _gpu_index(label: str) -> int | None:
    if label.startswith("GPU") and label[3:].isdecimal():
        return int(label[3:])
    return None


def _link_state(
    gen: int | None, width: int | None, max_gen: int | None, max_width: int | None
) -> Text:
    """``Gen4 x16 (max)`` or, in yellow, ``Gen3 x8 of Gen4 x16`` when below the maximum."""
    now = link_label(gen, width)
    if max_gen is None and max_width is None:
        return Text(now)
    below = (gen or 0) < (max_gen or 0) or (width or 0) < (max_width or 0)
    if below:
        return Text(f"{now} of {link_label(max_gen, max_width)}", style="yellow")
    return Text(f"{now} (max)")


def _acs_text(hop: PcieHop) -> Text:
    """ACS in the words that matter for P2P: redirect on (and which bits), off, or unknown."""
    if hop.acs is not None:
        acs = hop.acs
        redirect = [
            name
            for name, on in (
                ("ReqRedir", acs.request_redirect),
                ("CmpltRedir", acs.completion_redirect),
                ("EgressCtrl", acs.egress_control),
            )
            if on
        ]
        if redirect:
            return Text(f"ACS redirect ({'+ '.join(redirect)}+)", style="bold red")
        if acs.raw:
            return Text("ACS on, no redirect", style="green")
        return Text("ACS off", style="green")
    if hop.acs_capable is False:
        return Text("no ACS", style="dim")
    reason = hop.why("acs") or hop.why("acs_capable") or "not read"
    return Text(f"ACS {reason}", style="dim")


def _hop_line(hop: PcieHop, turn: bool) -> Text:
    out = Text("   ↑ ")
    out.append(hop.bus_id, style="bold" if turn else "")
    out.append(f" {ROLE_NAMES.get(hop.role or '', 'port')}")
    if hop.current_gen or hop.current_width:
        out.append(" · ", style="dim")
        out.append_text(_link_state(hop.current_gen, hop.current_width, hop.max_gen, hop.max_width))
    out.append(" · ", style="dim")
    out.append_text(_acs_text(hop))
    aer = [
        f"{name} {value}"
        for name, value in (
            ("AER corr", hop.aer_correctable),
            ("nonfatal", hop.aer_nonfatal),
            ("fatal", hop.aer_fatal),
        )
        if value
    ]
    if aer:
        out.append(" · " + ", ".join(aer), style="yellow")
    if turn:
        out.append(" ← first shared port", style="bold cyan")
    return out


def _device_path(label: str, path: Sequence[PcieHop], turn: str | None) -> Text:
    out = Text()
    if not path:
        out.append(f"   (PCIe path of {label} not in this capture)", style="dim")
        return out
    for pos, hop in enumerate(path):
        if pos:
            out.append("\n")
        out.append_text(_hop_line(hop, hop.bus_id == turn))
    return out


def _gpu_link_text(gpu: Gpu) -> Text:
    pcie = gpu.pcie
    if pcie.current_gen is None and pcie.current_width is None:
        return Text("link not in this capture", style="dim")
    out = _link_state(pcie.current_gen, pcie.current_width, pcie.max_gen, pcie.max_width)
    if out.style == "yellow":
        idle = gpu.pstate not in (None, 0)
        out.append(" (idle: may be power saving)" if idle else " (below max)")
    return out


def _device_head(capture: Capture, label: str) -> Text:
    out = Text()
    index = _gpu_index(label)
    if index is not None:
        gpu = capture.gpu(index)
        out.append(label, style="bold")
        if gpu is None:
            out.append("  (no facts)", style="dim")
            return out
        out.append(f"  {gpu.bus_id or 'bus id unknown'}  ")
        out.append_text(_gpu_link_text(gpu))
        return out
    nic = capture.nic(label)
    out.append(label, style="bold")
    if nic is not None:
        bits = [b for b in (nic.name, nic.kind, nic.bus_id) if b]
        out.append("  " + "  ".join(bits))
    return out


def _paths(
    capture: Capture, labels: Sequence[str], heads: bool = True, link: str | None = None
) -> Text:
    paths: list[tuple[str, list[PcieHop]]] = []
    for label in labels:
        index = _gpu_index(label)
        dev: Gpu | Nic | None = capture.gpu(index) if index is not None else capture.nic(label)
        paths.append((label, list(getattr(dev, "path", []) or [])))
    turn: PcieHop | None = None
    if len(paths) == 2:
        other = {h.bus_id for h in paths[1][1]}
        turn = next((h for h in paths[0][1] if h.bus_id in other), None)
    out = Text()
    out.append("PCIe path (nearest port first)\n", style="bold")
    for pos, (label, path) in enumerate(paths):
        if pos:
            out.append("\n")
        if heads:
            out.append_text(_device_head(capture, label))
            if not path:
                out.append(" · path not in this capture", style="dim")
                continue
            out.append("\n")
        out.append_text(_device_path(label, path, turn.bus_id if turn else None))
    if turn is not None:
        below = [
            h for _, path in paths for h in path[: [x.bus_id for x in path].index(turn.bus_id)]
        ]
        if any(h.acs is not None and h.acs.redirects_p2p for h in below):
            out.append(
                f"\n   P2P could turn around at {turn.bus_id}, but ACS redirect below it sends it "
                "up to the root complex (and through the IOMMU).",
                style="bold red",
            )
        elif link is not None and link.upper().startswith("NV"):
            # NVLink carries this pair's P2P traffic; the PCIe ports only join the trees.
            out.append(
                f"\n   Their PCIe paths meet at {turn.bus_id}; P2P traffic between them takes "
                f"NVLink ({link}), not PCIe.",
                style="dim",
            )
        else:
            out.append(f"\n   P2P traffic over PCIe turns around at {turn.bus_id}.", style="dim")
    return out


P2P_CAP_WORDS: dict[str, str] = {"nvlink": "NVLink", "pci": "PCIe"}
"""How the P2P capabilities of ``nvidia-smi topo -p2p r|w|n|a|p`` are named on screen."""


def p2p_refused(capture: Capture, a: int, b: int) -> bool:
    """The driver refuses P2P between GPUs ``a`` and ``b`` (every known ``topo -p2p`` code of
    the pair says so, or ``cudaDeviceCanAccessPeer`` is no): a "P2P enabled" copy between
    them was staged through host memory, so its bandwidth is not a share of the P2P path."""
    p2p = capture.p2p
    codes = [p2p.status(cap, a, b) for cap in P2P_CAPS]
    known = [code for code in codes if code not in (None, "X", "U")]
    if known and "OK" not in known:
        return True
    access = p2p.can_access_peer
    if access is not None and a in p2p.gpus and b in p2p.gpus:
        i, j = p2p.gpus.index(a), p2p.gpus.index(b)
        row = access[i] if i < len(access) else []
        return j < len(row) and row[j] is False
    return False


def _p2p_status(capture: Capture, a: int, b: int) -> Text:
    out = Text()
    out.append("P2P status (nvidia-smi topo -p2p)\n", style="bold")
    codes = {cap: capture.p2p.status(cap, a, b) for cap in P2P_CAPS}
    known = {cap: code for cap, code in codes.items() if code is not None}
    if not known:
        reason = capture.unavailable.get("p2p") or "not in this capture"
        out.append(f"   {reason}", style="dim")
    else:
        out.append("   ")
        for pos, (cap, code) in enumerate(known.items()):
            if pos:
                out.append(" · ", style="dim")
            out.append(f"{P2P_CAP_WORDS.get(cap, cap)} ")
            out.append(code, style="green" if code == "OK" else "bold red")
        for code in sorted({c for c in known.values() if c not in ("OK", "X")}):
            out.append(f"\n   {code}: {P2P_CODES.get(code, 'unknown code')}")
        if "pci" in known:
            out.append(
                "\n   PCIe = P2P over PCIe (-p2p p); read/write/atomics = over any link",
                style="dim",
            )
    access = capture.p2p.can_access_peer
    if access is not None and a in capture.p2p.gpus and b in capture.p2p.gpus:
        i, j = capture.p2p.gpus.index(a), capture.p2p.gpus.index(b)
        try:
            value = access[i][j]
        except IndexError:
            value = None
        if value is not None:
            out.append(f"\n   cudaDeviceCanAccessPeer: {'yes' if value else 'no'}")
    return out


def _measured(capture: Capture, a: int, b: int, link: str | None) -> Text:
    out = Text()
    out.append("Measured\n", style="bold")
    found = measured_p2p(capture, a, b)
    ceiling = path_ceiling(capture, a, b, link)
    refused = p2p_refused(capture, a, b)
    if not found:
        out.append("   no P2P copy measured for this pair", style="dim")
        if not capture.measurements.p2p:
            out.append(
                " (the probes measure it: p in pcidoc on the GPU machine, or "
                "`pcidoc check --probes quick` there)",
                style="dim",
            )
    width = max((len(_matrix_name(m)) for m, _ in found), default=0) + 2
    for pos, (m, value) in enumerate(found):
        if pos:
            out.append("\n")
        out.append(f"   {_matrix_name(m):<{width}}")
        if m.kind == "bandwidth":
            out.append(format_gbps(value), style="bold")
            if m.p2p == "enabled" and refused:
                out.append("  staged through host memory: the driver refuses P2P here", "dim")
            elif ceiling is not None and m.p2p == "enabled":
                # A bidirectional value is the sum of both directions: compare with 2 × ceiling.
                share = value / (ceiling.gbps * (2 if m.bidirectional else 1)) * 100
                style = "green" if share >= 70 else ("yellow" if share >= 40 else "red")
                basis = "both directions' ceilings" if m.bidirectional else "ceiling"
                out.append(f"  {share:.0f}% of {basis}", style=style)
        else:
            out.append(f"{value:.2f} µs", style="bold")
        if m.source and m.source.startswith("synthetic"):
            out.append("  synthetic", style="bright_blue")
    out.append("\n   ceiling: ", style="dim")
    if ceiling is None:
        out.append("unknown (link rate not in this capture)", style="dim")
    else:
        out.append(f"{format_gbps(ceiling.gbps)} per direction = {ceiling.basis}", style="dim")
    return out


def _gpu_detail(capture: Capture, gpu: Gpu) -> Text:
    out = Text()
    out.append(f"{gpu.label}  ", style="bold")
    out.append(gpu_name(capture, gpu) or "unknown GPU")
    out.append("\n")
    _kv(out, "bus id", gpu.bus_id or "unknown")
    if gpu.architecture:
        _kv(out, "architecture", gpu.architecture)
    _kv(
        out,
        "NUMA node",
        gpu.numa_affinity or ("unknown" if gpu.numa_node is None else str(gpu.numa_node)),
    )
    _kv(out, "local CPUs", gpu.cpu_affinity or "unknown")
    _kv(out, "PCIe link", _gpu_link_text(gpu))
    if gpu.pstate is not None:
        _kv(out, "P-state", f"P{gpu.pstate}")
    counters = []
    if gpu.replay_count is not None:
        counters.append(f"{gpu.replay_count} replays")
    if gpu.aer_correctable is not None:
        counters.append(f"{gpu.aer_correctable} AER correctable")
    if counters:
        _kv(out, "PCIe errors", ", ".join(counters) + " (since boot)")
    if gpu.nvlinks:
        _kv(out, "NVLinks", _nvlinks_text(capture, gpu))
    if gpu.fabric.state:
        _kv(
            out,
            "fabric",
            f"{gpu.fabric.state}" + (f" ({gpu.fabric.status})" if gpu.fabric.status else ""),
        )
    if gpu.mig.enabled:
        _kv(out, "MIG", "enabled")
    if gpu.iommu_group_type:
        _kv(out, "IOMMU group", gpu.iommu_group_type)
    if gpu.nvml_error:
        _kv(out, "NVML error", Text(gpu.nvml_error, style="bold red"))
    out.append("\n")
    out.append_text(_paths(capture, [gpu.label], heads=False))
    return out


def _nvlinks_text(capture: Capture, gpu: Gpu) -> str:
    """``12 of 12 up, 6 more not wired (NVLink 4.0 · 25 GB/s each)``: the counts and the
    nominal rate of the link model, as the Links pane and the doctor say them."""
    from pcidoc.model.linkmodel import nvlink_per_link, unwired_nvlinks

    up = sum(1 for nv in gpu.nvlinks if nv.state == "up")
    unwired = unwired_nvlinks(capture, gpu).count
    rate, version, _, _ = nvlink_per_link(gpu)
    extra = " · ".join(
        x
        for x in (f"NVLink {version}" if version else "", f"{rate:g} GB/s each" if rate else "")
        if x
    )
    text = f"{up} of {len(gpu.nvlinks) - unwired} up"
    if unwired:
        text += f", {unwired} more not wired in this design"
    return text + (f" ({extra})" if extra else "")


def _nic_detail(capture: Capture, nic: Nic) -> Text:
    out = Text()
    out.append(f"{nic.label}  ", style="bold")
    out.append(nic.name or "unnamed NIC")
    out.append("\n")
    _kv(out, "bus id", nic.bus_id or "unknown")
    _kv(out, "link layer", nic.kind or "unknown")
    _kv(out, "NUMA node", "unknown" if nic.numa_node is None else str(nic.numa_node))
    if nic.netdevs:
        _kv(out, "netdevs", ", ".join(nic.netdevs))
    out.append("\n")
    out.append_text(_paths(capture, [nic.label], heads=False))
    return out


def describe_cell(capture: Capture, row: str, col: str) -> Text:
    """Detail of one matrix cell: a device (diagonal) or the pair ``row`` ↔ ``col``."""
    if row == col:
        index = _gpu_index(row)
        gpu = capture.gpu(index) if index is not None else None
        if gpu is not None:
            return _gpu_detail(capture, gpu)
        nic = capture.nic(row)
        if nic is not None:
            return _nic_detail(capture, nic)
        return Text(f"{row}: no facts in this capture", style="dim")
    link = capture.topology.link(row, col)
    out = Text()
    out.append(f"{row} ↔ {col}  ", style="bold")
    style = "dim"
    if link is not None:
        from pcidoc.present._matrix import MatrixView

        style = CELL_STYLES[MatrixView(capture).style(link)]
    out.append(link or "?", style=style)
    out.append("\n")
    out.append(meaning(link))
    out.append("\n\n")
    a, b = _gpu_index(row), _gpu_index(col)
    if a is not None and b is not None:
        out.append_text(_p2p_status(capture, a, b))
        out.append("\n\n")
        out.append_text(_measured(capture, a, b, link))
        out.append("\n\n")
    out.append_text(_paths(capture, [row, col], link=link))
    return out


# ---------------------------------------------------------------------------------- host


def link_changes(capture: Capture | None) -> str:
    """``GPU1 4×, GPU0 upstream 1×`` from the capture's link histories ('' when none)."""
    if capture is None or capture.evidence is None:
        return ""
    counts: dict[str, int] = {}
    for history in capture.evidence.link_histories:
        for trace in history.traces:
            counts[trace.device] = counts.get(trace.device, 0) + trace.transitions()
    if not counts:
        return ""
    changed = [f"{device} {n}×" for device, n in counts.items() if n]
    return ", ".join(changed[:8]) if changed else f"none in {len(counts)} link(s)"


def live_link_changes(
    capture: Capture, changes: Mapping[int, tuple[int, int]], minutes: float | None
) -> str:
    """``GPU3 width 2×, gen 5× in 12 min`` from the live link changes counted per GPU index
    ('' when none: the Links pane then says nothing about them)."""
    parts = []
    for index, (gen, width) in sorted(changes.items()):
        gpu = capture.gpu(index)
        label = gpu.label if gpu is not None else f"GPU{index}"
        said = [f"{what} {n}×" for what, n in (("width", width), ("gen", gen)) if n]
        if said:
            parts.append(f"{label} {', '.join(said)}")
    if not parts:
        return ""
    shown = "; ".join(parts[:8]) + (f"; +{len(parts) - 8} GPUs" if len(parts) > 8 else "")
    if minutes is not None:
        shown += f" in {minutes:.0f} min" if minutes >= 1 else " in under a minute"
    return shown


def _kernel_device(capture: Capture, bus: str | None) -> str:
    if bus is None:
        return "address not printed"
    for gpu in capture.gpus:
        if gpu.bus_id and gpu.bus_id.lower() == bus:
            return f"{gpu.label} ({bus})"
    return bus


def kernel_events(capture: Capture) -> Text:
    """The kernel log's events per device (Host pane): Xid codes, AER, IOMMU faults."""
    out = Text()
    logs = capture.evidence.kernel_logs if capture.evidence is not None else []
    if not logs:
        return out
    out.append("\nKernel log\n", style="bold")
    per: dict[str, list[str]] = {}
    for log in logs:
        if not log.read:
            _kv(out, "not read", Text(log.unreadable or "unknown reason", style="yellow"))
            continue
        _kv(out, "read", f"{log.lines} line(s) from {log.source or 'the log'}")
        if log.firmware_first:
            _kv(out, "AER", Text("handled by firmware: a clean log proves little", "yellow"))
        kinds = (
            [(e.bus_id, f"Xid {e.code}") for e in log.xids]
            + [(e.bus_id, "fallen off the bus") for e in log.fallen_off_bus]
            + [(e.bus_id, f"AER {e.severity}") for e in log.aer]
            + [(e.bus_id, f"{e.iommu} fault") for e in log.iommu_faults]
            + [(e.bus_id, "bandwidth notice") for e in log.link_notices]
        )
        for bus, kind in kinds:
            per.setdefault(_kernel_device(capture, bus), []).append(kind)
    for device, names in per.items():
        counted = ", ".join(f"{k} ×{names.count(k)}" for k in dict.fromkeys(names))
        _kv(out, "", Text(f"{device}: {counted}", style="red" if "Xid" in counted else ""))
    if not per and any(log.read for log in logs):
        _kv(out, "events", "no Xid, AER or IOMMU fault")
    return out


def host_detail(capture: Capture, title: str, why_no_gpus: str | None = None) -> Text:
    """Host facts: name, kernel, CPU, sockets, NUMA, IOMMU, virtualization, NCCL environment."""
    host = capture.host
    out = Text()
    out.append(title + "\n", style="bold underline")
    if why_no_gpus:
        out.append("\n")
        _kv(out, "why no GPUs", Text(why_no_gpus, style="yellow"))
        if capture.driver.nvidia_pci_devices is not None:
            count = capture.driver.nvidia_pci_devices
            _kv(out, "", Text(f"NVIDIA devices on the PCI bus: {count}", style="dim"))
    out.append("\n")
    _kv(out, "hostname", hostname(capture))
    _kv(out, "kernel", host.kernel or "unknown")
    if host.os:
        _kv(out, "OS", host.os)
    _cpu_lines(out, host)
    _kv(out, "IOMMU", _iommu_text(host))
    _kv(out, "virtualization", _virtualization_text(host))
    if host.numa_balancing is not None:
        _kv(out, "NUMA balancing", "on" if host.numa_balancing else "off")
    gd = host.gpudirect
    if gd.nvidia_peermem is not None or gd.nv_peer_mem is not None:
        _kv(out, "GPUDirect RDMA", f"nvidia_peermem {_yes_no(gd.nvidia_peermem)}")
    _kv(out, "privileged", _yes_no(host.privileged))
    live = capture.origin.kind == "live"
    _environment_lines(out, host.environment, live)
    out.append("\n")
    if live:
        driver = capture.driver
        _kv(
            out,
            "NVML",
            "available" if driver.nvml_available else (driver.nvml_error or "not available"),
        )
    versions = _versions(capture)
    if versions:
        _kv(out, "versions", versions)
    _origin_lines(out, capture)
    out.append_text(process_lines(capture))
    out.append_text(kernel_events(capture))
    gaps = [f"{key}: {why}" for key, why in capture.unavailable.items() if key != "gpus"]
    if gaps or capture.origin.warnings:
        out.append("\nNot known\n", style="bold")
        for line in [*gaps, *capture.origin.warnings]:
            out.append(f"  • {line}\n", style="dim")
    out.rstrip()
    return out


def _cpu_lines(out: Text, host: Host) -> None:
    cpu = host.cpu_model or "unknown"
    if host.logical_cpus:
        cpu += f" ({host.logical_cpus} logical CPUs)"
    _kv(out, "CPU", cpu)
    _kv(out, "sockets", "unknown" if host.sockets is None else str(host.sockets))
    if not host.numa_nodes:
        _kv(out, "NUMA nodes", host.why("numa_nodes") or "unknown")
        return
    _kv(out, "NUMA nodes", str(len(host.numa_nodes)))
    for node in host.numa_nodes:
        line = f"node {node.id}: CPUs {node.cpus or 'unknown'}"
        if node.distances:
            line += f" · distances {' '.join(map(str, node.distances))}"
        _kv(out, "", line)


def _iommu_text(host: Host) -> str:
    iommu = host.iommu
    text = "unknown" if iommu.enabled is None else ("on" if iommu.enabled else "off")
    if iommu.vendor:
        text += f" ({iommu.vendor})"
    if iommu.default_domain_type:
        text += f", GPU groups {iommu.default_domain_type}"
    if iommu.kernel_args:
        text += f", kernel args {' '.join(iommu.kernel_args)}"
    return text


def _virtualization_text(host: Host) -> str:
    virt = host.virtualization
    parts = []
    if virt.hypervisor is not None:
        parts.append(f"VM ({virt.vendor or 'hypervisor'})" if virt.hypervisor else "bare metal")
    if virt.container:
        parts.append(f"container: {virt.container}")
    if virt.confidential_compute:
        parts.append("confidential computing on")
    return ", ".join(parts) or "unknown"


def _environment_lines(out: Text, env: Mapping[str, str], live: bool) -> None:
    if env:
        _kv(out, "NCCL env", "")
        for key in sorted(env):
            out.append(f"  {key}={env[key]}\n")
    elif live:
        _kv(out, "NCCL env", "no NCCL_* / CUDA_VISIBLE_DEVICES variables set")
    else:
        _kv(out, "NCCL env", "not in this capture")


_SOURCES_SHOWN = 6
"""Source files named under ``origin`` (the rest are counted)."""


def _origin_lines(out: Text, capture: Capture) -> None:
    origin = capture.origin
    if origin.kind == "live":
        return
    what = {
        "import": "imported from pasted tool outputs",
        "synthetic": "SYNTHETIC: not a real machine",
    }
    _kv(out, "origin", what.get(origin.kind, origin.kind))
    if origin.note:
        _kv(out, "", origin.note)
    for source in origin.sources[:_SOURCES_SHOWN]:
        line = os.path.basename(source.path)
        if source.citation:
            line += f" — {source.citation}"
        _kv(out, "", line)
    more = len(origin.sources) - _SOURCES_SHOWN
    if more > 0:
        _kv(out, "", Text(f"and {more} more source file{'s' if more > 1 else ''}", style="dim"))


def process_placement(capture: Capture, process: GpuProcess) -> tuple[str, str]:
    """Where a GPU process's CPUs are against its GPUs' NUMA nodes: ``(verdict, style)``.

    ``local`` when every allowed CPU is on the GPUs' node(s); ``REMOTE`` when none is; ``spans``
    when the process may run on other nodes too (not pinned); ``unknown`` without the facts.
    """
    from pcidoc.model.cpulist import format_cpulist, parse_cpulist

    gpu_nodes = {
        g.numa_node
        for i in process.gpus
        if (g := capture.gpu(i)) is not None and g.numa_node is not None and g.numa_node >= 0
    }
    allowed = parse_cpulist(process.cpu_affinity)
    node_cpus = {
        node.id: cpus
        for node in capture.host.numa_nodes
        if (cpus := parse_cpulist(node.cpus)) is not None
    }
    if not gpu_nodes or not allowed or not node_cpus:
        return "unknown (no NUMA facts for its CPUs or GPUs)", "dim"
    cpu_nodes = sorted(n for n, cpus in node_cpus.items() if cpus & allowed)
    nodes = format_cpulist(cpu_nodes) or "?"
    gpus = format_cpulist(sorted(gpu_nodes)) or "?"
    if set(cpu_nodes) <= gpu_nodes:
        return f"local: CPUs on node {nodes}, GPUs on node {gpus}", "green"
    if not set(cpu_nodes) & gpu_nodes:
        return f"REMOTE: CPUs on node {nodes}, GPUs on node {gpus}", "bold red"
    return f"spans nodes {nodes} (not pinned); GPUs on node {gpus}", "yellow"


def process_lines(capture: Capture) -> Text:
    """The GPU processes: pid, name, GPUs, memory and CPU placement against the GPUs' NUMA."""
    host = capture.host
    out = Text()
    out.append("\nGPU processes\n", style="bold")
    if not host.processes:
        why = host.why("processes")
        if capture.origin.kind == "live":
            out.append(f"  {why or 'none using the GPUs now'}\n", style="dim")
        else:
            out.append(f"  {why or 'not in this capture'}\n", style="dim")
        return out
    for process in sorted(host.processes, key=lambda p: (p.gpus[:1], p.pid)):
        out.append(f"  {process.pid:>7}  ", style="bold")
        out.append(f"{(process.name or '?')[:20]:<20}  ")
        gpus = ",".join(f"GPU{i}" for i in process.gpus) or "?"
        out.append(f"{gpus:<12}  ")
        memory = process.used_memory_bytes
        out.append(f"{'' if memory is None else format_bytes(memory):>9}  ", style="dim")
        out.append(f"CPUs {process.cpu_affinity or '?'}  ")
        verdict, style = process_placement(capture, process)
        out.append(verdict, style=style)
        out.append("\n")
    return out


def bullet_lines(lines: Iterable[str], style: str = "") -> Text:
    """Lines as a bulleted block."""
    out = Text()
    for pos, line in enumerate(lines):
        if pos:
            out.append("\n")
        out.append(" • ")
        out.append(line, style=style)
    return out

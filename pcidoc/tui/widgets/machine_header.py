"""The header: where the machine comes from, what it is, and how bad it looks.

Its words (:func:`header_text`, :func:`worst_line`) are built here from a capture and a report,
without an app, so tests read them directly.
"""

from __future__ import annotations

import os

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from pcidoc.model.capture import Capture
from pcidoc.model.report import Report, ReportSource
from pcidoc.present._common import MARKS, UNNAMED_MODEL, gpu_models, hostname, severity_counts
from pcidoc.present.text import SEVERITY_STYLES
from pcidoc.tui.panes.common import driver_versions, inline

BADGE_STYLES: dict[str, str] = {
    "live": "bold black on green",
    "capture": "bold black on cyan",
    "import": "bold black on cyan",
    "demo": "#e6e8ec on #4a5263",
    "synthetic": "bold white on blue",
}
"""Style of the source badge in the header, by source kind."""


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
    versions = driver_versions(capture)
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


HEADER_LINES = 2
"""Lines of the machine line (``#header-machine``'s ``max-height`` in pcidoc.tcss)."""


class MachineHeader(Vertical):
    """Two lines: source badge · host · GPUs · versions · worst severity; the worst finding."""

    def compose(self) -> ComposeResult:
        yield Static(header_text(None, None, None), id="header-machine")
        yield Static("", id="header-worst")

    def show(
        self,
        capture: Capture | None,
        source: ReportSource | None,
        report: Report | None,
        status: str | None = None,
    ) -> None:
        """Show a machine (``None`` while collecting) and its report (``None`` while diagnosing)."""
        self._shown = (capture, source, report, status)
        self._draw()
        self.query_one("#header-worst", Static).update(worst_line(report))

    _shown: tuple[Capture | None, ReportSource | None, Report | None, str | None] = (
        None,
        None,
        None,
        None,
    )

    def _draw(self) -> None:
        line = self.query_one("#header-machine", Static)
        # Lines break between phrases, never inside one (the Static has 1 cell of padding).
        width = max(20, self.size.width - 1) if self.size.width else None
        line.update(header_text(*self._shown, width=width, max_lines=HEADER_LINES))

    def on_resize(self) -> None:
        """Pack the header's phrases again for the new width."""
        self._draw()

"""Terminal output with rich: the topology matrix (``pcidoc topo``) and the report (``check``).

Every string that comes from a capture (GPU names, NIC names, paths, pasted text) is printed as
a :class:`rich.text.Text`, never parsed as console markup, so ``[red]`` in a pasted name prints
literally. Colour follows the usual rules: none when stdout is not a terminal or ``NO_COLOR`` is
set; marks and words carry the meaning on their own.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TextIO

from rich.cells import cell_len
from rich.columns import Columns
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from pcidoc.model.capture import Capture
from pcidoc.model.report import CheckResult, Report, ReportSource
from pcidoc.present._common import (
    ASCII_MARKS,
    EXIT_MEANINGS,
    MARKS,
    MAX_FIRST,
    attention,
    docs_link,
    evidence_text,
    exit_code,
    findings_of,
    gpu_models,
    machine_title,
    severity_counts,
    source_text,
    split_code,
    versions_text,
)
from pcidoc.present._matrix import MatrixView, gpu_set

DEFAULT_WIDTH = 100
"""Console width when stdout is not a terminal (and ``COLUMNS`` is not set)."""

CELL_STYLES: dict[str, str] = {
    "self": "dim",
    "nv-hi": "bold #8a9fcc",
    "nv-mid": "#8a99bd",
    "nv-lo": "#8792ad",
    "pix": "#aaaeb6",
    "pxb": "#9ea2aa",
    "phb": "#92969e",
    "node": "#868a92",
    "sys": "#7b7f86",
    "unknown": "dim",
}
"""Rich style of each matrix cell style name (see :mod:`pcidoc.present._matrix`).

Link classes are not verdicts: they get their own muted scale, slate blue for NVLink (bold for
the matrix's best) and greys for PCIe, dimmer the farther the path, so that red, yellow and
green keep meaning fail, warn and pass (:data:`SEVERITY_STYLES`). A test keeps the two apart.
"""

SEVERITY_STYLES: dict[str, str] = {
    "fail": "bold red",
    "error": "bold magenta",
    "warn": "bold yellow",
    "info": "cyan",
    "pass": "green",
    "skip": "dim",
}
"""Rich style of each severity."""

CODE_STYLE = "bold cyan"
"""Style of `inline code` (commands) in summaries and remediation."""


_MAX_SKIP_ROWS = 2
"""Beyond this many skipped checks the short report folds them into one row of ids."""


# ------------------------------------------------------------------------------ console


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


class _Console(Console):
    """A rich console that reports a closed pipe to its caller instead of exiting.

    rich's default ends the process with exit code 1 when the reader of a pipe goes away
    (``pcidoc check | head -3``), which would replace the verdict's exit code. Here stdout is
    pointed at ``/dev/null`` (so the interpreter's last flush cannot fail either) and
    :class:`BrokenPipeError` propagates; the CLI then exits with the code it was going to.
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise BrokenPipeError("the reader of stdout went away")


def make_console(
    file: TextIO | None = None,
    *,
    width: int | None = None,
    force_terminal: bool | None = None,
) -> Console:
    """A console for pcidoc's terminal output (stdout by default).

    Colour is off when the stream is not a terminal or ``NO_COLOR`` is set (rich's own rules).
    The width is the terminal's; when the stream is not a terminal it is ``COLUMNS`` if set,
    else 100, so piped output is stable. On a stream that cannot encode UTF-8 the severity
    marks become ASCII, pcidoc's typography its ASCII look-alike (``·`` ``-``, ``×`` ``x``, see
    :mod:`pcidoc.present.ascii_fallback`) and any other unencodable character ``?``.

    Args:
        file: Stream to write to (default ``sys.stdout``).
        width: Force a width (tests).
        force_terminal: Force terminal behaviour (tests of colour output).

    Returns:
        A configured :class:`rich.console.Console`.
    """
    stream = file if file is not None else sys.stdout
    encoding = (getattr(stream, "encoding", None) or "utf-8").lower()
    if not encoding.startswith("utf") and hasattr(stream, "reconfigure"):
        # A non-UTF-8 terminal (LANG=...ISO-8859-1): readable ASCII for pcidoc's typography
        # ("8 x NVIDIA H800 - driver 535") and "?" for anything else it cannot encode, rather
        # than failing; severity marks switch to ASCII on their own (see _marks).
        from pcidoc.present.ascii_fallback import register

        stream.reconfigure(errors=register())
    if width is None and not force_terminal and not _isatty(stream):
        columns = os.environ.get("COLUMNS", "")
        width = int(columns) if _ascii_number(columns) and int(columns) > 0 else DEFAULT_WIDTH
    # rich reads COLUMNS/LINES itself and fails on values such as "²": hide unusable ones.
    environ = {
        key: value
        for key, value in os.environ.items()
        if key not in ("COLUMNS", "LINES") or _ascii_number(value)
    }
    return _Console(
        _environ=environ,
        file=stream,
        width=width,
        force_terminal=force_terminal,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=False,
    )


def _ascii_number(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) < 7


def _print_trimmed(console: Console, renderable: RenderableType) -> None:
    """Print a table without the trailing blanks rich pads its lines with."""
    for line in console.render_lines(renderable, console.options, pad=False):
        text = Text()
        for segment in line:
            if not segment.control:
                text.append(segment.text, style=segment.style)
        text.rstrip()
        console.print(text, no_wrap=True, overflow="ignore", crop=False)


def _marks(console: Console) -> dict[str, str]:
    return MARKS if console.encoding.lower().startswith("utf") else ASCII_MARKS


def _has_colour(console: Console) -> bool:
    return console.color_system is not None and not console.no_color


def _inline(text: str, style: str = "", backticks: bool = True) -> Text:
    """Text with `backtick` spans shown as code.

    The backticks stay when ``backticks`` is true (plain output, where they are the only
    thing that shows where a command starts and ends).
    """
    out = Text(style=style)
    for piece, is_code in split_code(text):
        if is_code:
            out.append(f"`{piece}`" if backticks else piece, style=CODE_STYLE)
        else:
            out.append(piece)
    return out


def _sep() -> Text:
    return Text(" · ", style="dim")


class _Joined:
    """Parts joined by `` · `` that wrap between parts, never inside one that fits a line
    ("8 × NVIDIA A100-SXM4-80GB" stays whole); a part wider than the line wraps on its own."""

    def __init__(self, parts: Iterable[Text | str]) -> None:
        self.parts = [part if isinstance(part, Text) else Text(part) for part in parts]

    def lines(self, width: int) -> list[Text]:
        lines: list[Text] = []
        line = Text()
        for part in self.parts:
            if line and line.cell_len + len(" · ") + part.cell_len > width:
                lines.append(line)
                line = Text()
            if line:
                line.append_text(_sep())
            line.append_text(part)
        if line:
            lines.append(line)
        return lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.lines(options.max_width)


def _join(parts: Iterable[Text | str]) -> _Joined:
    return _Joined(parts)


def _machine_line(capture: Capture) -> _Joined:
    parts: list[Text | str] = [Text(machine_title(capture), style="bold"), gpu_models(capture)]
    if versions_text(capture):
        parts.append(versions_text(capture))
    return _join(parts)


# ----------------------------------------------------------------------------- topology


def _full_table(view: MatrixView) -> Table:
    table = Table(box=None, pad_edge=False, padding=(0, 1), header_style="bold")
    table.add_column("", style="bold", no_wrap=True)
    for label in view.labels:
        table.add_column(label, justify="center", no_wrap=True)
    affinity = view.has_affinity
    if affinity:
        table.add_column("CPU Affinity", no_wrap=True)
        table.add_column("NUMA", justify="center", no_wrap=True)
    for pos, row in enumerate(view.rows):
        cells = [Text(view.text(c), style=CELL_STYLES[view.style(c)]) for c in row.cells]
        extra = [Text(row.cpu_affinity or ""), Text(row.numa or "")] if affinity else []
        if pos and row.kind != view.rows[pos - 1].kind:
            table.add_row()  # a blank line between the GPU rows and the NIC rows
        table.add_row(Text(row.label), *cells, *extra)
    return table


def natural_width(view: MatrixView) -> int:
    """Width of the full matrix table (:func:`_full_table`) without wrapping, in cells.

    Computed directly rather than with rich's measurement, which is slow on 90 x 90 tables.
    """
    widths = [max((cell_len(label) for label in view.labels), default=0)]
    for j, label in enumerate(view.labels):
        cells = (cell_len(view.text(row.cells[j])) for row in view.rows)
        widths.append(max(cell_len(label), *cells))
    if view.has_affinity:
        widths.append(
            max([len("CPU Affinity"), *(cell_len(r.cpu_affinity or "") for r in view.rows)])
        )
        widths.append(max([len("NUMA"), *(cell_len(r.numa or "") for r in view.rows)]))
    return sum(widths) + 2 * (len(widths) - 1)


def _compact_matrix(view: MatrixView, width: int) -> list[Text]:
    label_width = max(len(label) for label in view.labels)
    lines: list[Text] = [
        Text(
            "The matrix is wider than this terminal: one character per pair (key below).",
            style="dim",
        )
    ]
    for number, block in enumerate(view.compact_blocks(width, label_width)):
        if number:
            lines.append(Text(""))
        for header in view.compact_header(block):
            lines.append(Text(" " * (label_width + 1) + header, style="bold"))
        for row in view.rows:
            line = Text(row.label.ljust(label_width) + " ", style="bold")
            for col in block.columns:
                if col is None:
                    line.append(" ")
                else:
                    cell = row.cells[col]
                    line.append(view.code(cell), style=CELL_STYLES[view.style(cell)])
            lines.append(line)
    return lines


def _affinity_grid(view: MatrixView) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(no_wrap=True)
    grid.add_column()
    for members, numa, cpus in view.affinity_groups():
        grid.add_row(Text(gpu_set(members)), Text(f"NUMA {numa}"), Text(f"CPUs {cpus}"))
    return grid


def _legend(view: MatrixView, compact: bool) -> Table:
    grid = Table.grid(padding=(0, 2))
    if compact:
        grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1)
    for entry in view.legend():
        style = CELL_STYLES[entry.style]
        shown = "" if compact and entry.cls == "X" else entry.cls
        cells = [Text(shown, style=style), Text(entry.meaning)]
        if compact:
            cells.insert(0, Text(entry.code, style=style))
        grid.add_row(*cells)
    return grid


def _bullets(lines: Iterable[Text], marks: dict[str, str]) -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1)
    bullet = "•" if marks is MARKS else "*"
    for line in lines:
        grid.add_row(Text(f" {bullet}"), line)
    return grid


def render_topology(
    capture: Capture,
    console: Console,
    source: ReportSource | None = None,
    notes: list[str] | None = None,
) -> None:
    """Print the topology matrix with legend, NIC legend and the notable facts ``notes`` (computed
    by the doctor: :func:`pcidoc.doctor.topology_notes.topology_notes`).

    The matrix is coloured by link class on its own muted scale (slate blue for NVLink, bold for
    the most links; greys for PCIe, dimmer the farther the path; unknown dim ``?``). When it is
    wider than the console it is printed in a compact one-character-per-cell form, split into
    column blocks if needed, so it never wraps.

    Args:
        capture: The machine.
        console: Where to print (see :func:`make_console`).
        source: Where the machine came from, for the header line.
    """
    marks = _marks(console)
    view = MatrixView(capture)
    header = _machine_line(capture)
    detail = [f"source: {source_text(source, capture)}"]
    if view.source:
        detail.append(f"matrix from {view.source}")
    console.print(header)
    console.print(_join(detail), style="dim")
    console.print()
    notes = notes or []
    if not view.labels:
        reason = capture.unavailable.get("topology") or capture.unavailable.get("gpus")
        if not reason and not capture.gpus:
            reason = "no GPUs"
        console.print(
            Text(f"No topology matrix in this capture{f': {reason}' if reason else ''}.", "yellow")
        )
        hint = "To see one: `pcidoc topo --demo`, or `pcidoc topo --from FILE` with a capture "
        hint += "taken on a GPU machine (`pcidoc capture`)."
        console.print(_inline(hint, "dim", backticks=not _has_colour(console)))
        # The doctor's note says the same thing: once is enough.
        notes = [n for n in notes if not n.startswith("no topology matrix")]
        if notes:
            console.print()
            console.print(Text("Notable", style="bold"))
            _print_trimmed(console, _bullets(map(Text, notes), marks))
        return
    compact = natural_width(view) > console.width
    if compact:
        for line in _compact_matrix(view, console.width):
            console.print(line, no_wrap=True, overflow="ignore", crop=False)
        if view.has_affinity:
            console.print()
            console.print(Text("CPU and NUMA affinity", style="bold"))
            _print_trimmed(console, _affinity_grid(view))
    else:
        _print_trimmed(console, _full_table(view))
    console.print()
    console.print(Text("Legend", style="bold"))
    _print_trimmed(console, _legend(view, compact))
    if view.nic_names:
        console.print()
        console.print(Text("NICs", style="bold"))
        names = [Text(f"{label}  {name}") for label, name in view.nic_names]
        _print_trimmed(console, Columns(names, padding=(0, 4)))
    if notes:
        console.print()
        console.print(Text("Notable", style="bold"))
        _print_trimmed(console, _bullets(map(Text, notes), marks))


# ------------------------------------------------------------------------------- report


def _severity_cell(severity: str, marks: dict[str, str]) -> Text:
    return Text(f"{marks[severity]} {severity}", style=SEVERITY_STYLES[severity])


def _check_grid(report: Report, marks: dict[str, str], ticks: bool, verbose: bool) -> Table:
    """One row per check; long summaries wrap in their column (never cut)."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column(ratio=1, overflow="fold")
    checks = report.sorted_checks()
    skipped = [c for c in checks if c.severity == "skip"]
    fold = not verbose and len(skipped) > _MAX_SKIP_ROWS
    for check in checks:
        if fold and check.severity == "skip":
            continue
        style = "dim" if check.severity in ("skip", "pass") else ""
        # Never cut with "…": a log of `pcidoc check | cat` must hold every word.
        summary = _inline(check.summary, style, ticks)
        grid.add_row(_severity_cell(check.severity, marks), Text(check.id), summary)
    if fold:
        summary = _inline("no input: " + _grouped_ids([c.id for c in skipped]), "dim", ticks)
        grid.add_row(_severity_cell("skip", marks), Text(f"{len(skipped)} checks"), summary)
    return grid


def _grouped_ids(ids: list[str]) -> str:
    """Check ids by topic, each topic once: ``env×2, nccl×10, p2p.acs-iommu`` (a topic with
    one id keeps the full id; ``--verbose`` names every check)."""
    topics: dict[str, list[str]] = {}
    for check_id in ids:
        topics.setdefault(check_id.split(".", 1)[0], []).append(check_id)
    parts = [
        members[0] if len(members) == 1 else f"{topic}×{len(members)}"
        for topic, members in sorted(topics.items())
    ]
    return ", ".join(parts)


def _summary_text(report: Report, marks: dict[str, str]) -> Text:
    out = Text("Summary: ", style="bold")
    counts = severity_counts(report)
    if not counts:
        out.append("no checks ran")
    for i, (severity, count) in enumerate(counts):
        if i:
            out.append_text(_sep())
        out.append(f"{count} {severity}", style=SEVERITY_STYLES[severity])
    total = len(report.checks)
    out.append(f"  ({total} {'check' if total == 1 else 'checks'})", style="dim")
    return out


def _hanging(items: list[tuple[str, Text]]) -> Table:
    """Marked items (``  •``, ``  1.``) whose wrapped lines stay under their text."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1)
    for mark, text in items:
        grid.add_row(Text(mark), text)
    return grid


def _check_detail(check: CheckResult, marks: dict[str, str], ticks: bool) -> Group:
    head = _severity_cell(check.severity, marks)
    head.append(" ")
    head.append(check.id, style="bold")
    head.append(f" — {check.title}")
    head.append(f"  (confidence {check.confidence})", style="dim")
    body: list[Text | Table] = [_inline(check.summary, backticks=ticks)]
    bullet = "  •" if marks is MARKS else "  *"
    findings = findings_of(check)
    if findings:
        body.append(Text(f"Findings ({len(findings)})", style="bold"))
        body.append(
            _hanging(
                [(bullet, _inline(f"{sev}: {text}", backticks=ticks)) for sev, text in findings]
            )
        )
    if check.evidence:
        body.append(Text("Evidence", style="bold"))
        body.append(_hanging([(bullet, Text(evidence_text(item))) for item in check.evidence]))
    if check.remediation:
        body.append(Text("What to do", style="bold"))
        steps = [
            (f"  {number}.", _inline(step, backticks=ticks))
            for number, step in enumerate(check.remediation, 1)
        ]
        body.append(_hanging(steps))
    if check.needs:
        line = Text("Needs: ", style="bold")
        line.append_text(_inline(check.needs, backticks=ticks))
        body.append(line)
    if check.subjects:
        body.append(Text(f"Subjects: {', '.join(check.subjects)}", style="dim"))
    if check.docs_url:
        body.append(Text(f"Docs: {docs_link(check.docs_url)}", style="dim"))
    return Group(head, Padding(Group(*body), (0, 0, 0, 4)))


_MAX_IMPORT_WARNINGS = 3


def _print_import_warnings(console: Console, capture: Capture, verbose: bool) -> None:
    """What the import of pasted outputs warned (outputs of different machines mixed, a cut
    paste): the verdicts below stand on what was read."""
    warnings = capture.origin.warnings
    if not warnings:
        return
    shown = warnings if verbose else warnings[:_MAX_IMPORT_WARNINGS]
    for warning in shown:
        console.print(Text(f"import warning: {warning}", style="yellow"), overflow="fold")
    if len(warnings) > len(shown):
        console.print(
            Text(f"… and {len(warnings) - len(shown)} more import warnings (--verbose)", "dim")
        )
    console.print()


def _print_next_inputs(console: Console, report: Report, ticks: bool) -> None:
    """When most checks had no input: the outputs to paste next, and why."""
    if not report.next_inputs:
        return
    console.print()
    console.print(Text("Paste next (most checks had no input)", style="bold"))
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1, overflow="fold")
    for number, item in enumerate(report.next_inputs, 1):
        more = len(item.checks)
        grid.add_row(
            f"{number}.",
            _inline(
                f"`{item.command}`: {item.why}; lets {more} more "
                f"{'check' if more == 1 else 'checks'} judge",
                backticks=ticks,
            ),
        )
    _print_trimmed(console, grid)


def render_report(report: Report, console: Console, verbose: bool = False) -> None:
    """Print a report for a person at a terminal.

    Short form (a screenful): a header (machine, source, pcidoc version, time), one line per
    check worst first with a severity mark (✗ fail, ● error, ! warn, i info, ✓ pass, - skip;
    pass and skip summaries are cut to one line), the summary line, the
    first remediation step of the worst findings, how many checks were skipped, and a footer
    with the exit code's meaning and hints. ``verbose`` adds, for every check, the evidence, every
    remediation step, what a skipped check needs and the confidence.

    Args:
        report: The report.
        console: Where to print (see :func:`make_console`).
        verbose: Show evidence and all remediation of every check.
    """
    marks = _marks(console)
    ticks = not _has_colour(console)
    capture = report.machine
    console.print(_machine_line(capture))
    console.print(
        _join(
            [
                f"source: {source_text(report.source, capture)}",
                f"pcidoc {report.pcidoc_version}",
                report.generated_at,
            ]
        ),
        style="dim",
    )
    console.print()
    _print_import_warnings(console, capture, verbose)
    if report.checks:
        _print_trimmed(console, _check_grid(report, marks, ticks, verbose))
        console.print()
    console.print(_summary_text(report, marks))

    if verbose:
        for check in report.sorted_checks():
            console.print()
            _print_trimmed(console, _check_detail(check, marks, ticks))
    else:
        worst = [c for c in attention(report) if c.remediation]
        if worst:
            console.print()
            console.print(Text("What to do first", style="bold"))
            grid = Table.grid(padding=(0, 2))
            grid.add_column(no_wrap=True)
            grid.add_column(no_wrap=True, style="bold")
            grid.add_column(ratio=1, overflow="fold")
            for check in worst[:MAX_FIRST]:
                step = _inline(check.remediation[0], backticks=ticks)
                grid.add_row(
                    Text(marks[check.severity], style=SEVERITY_STYLES[check.severity]),
                    Text(check.id),
                    step,
                )
            _print_trimmed(console, grid)
            if len(worst) > MAX_FIRST:
                console.print(
                    Text(f"  … and {len(worst) - MAX_FIRST} more (see --verbose)", style="dim")
                )
        _print_next_inputs(console, report, ticks)
        skipped = [c for c in report.checks if c.severity == "skip"]
        if 0 < len(skipped) <= _MAX_SKIP_ROWS:
            console.print()
            noun = "check was" if len(skipped) == 1 else "checks were"
            console.print(
                _inline(
                    f"{len(skipped)} {noun} skipped for lack of input; "
                    "`pcidoc check --verbose` says what each needs.",
                    "dim",
                    ticks,
                )
            )

    code = exit_code(report)
    console.print()
    footer = Text(
        f"Exit code {code}: {EXIT_MEANINGS.get(code, 'see docs/usage.md')}.",
        style="bold" if code else "",
    )
    if not verbose:
        footer.append(" ")
        footer.append_text(
            _inline("Evidence and every step: `pcidoc check --verbose`", "dim", ticks)
        )
    console.print(footer)
    console.print(_inline("Share it: `pcidoc check -o report.md` (or .html, .json)", "dim", ticks))

"""The explanation of a failed job (``pcidoc --explain PATH``): the verdict on top, every rank
in a table (the culprit first), and below it the highlighted rank's way to its GPU, the
evidence, the timeline or what to do.

The explanation is computed before the app starts (:func:`pcidoc.cli.tui.run_explain_tui`),
so this screen only renders a :class:`~pcidoc.explain.verdict.Explanation`, as the fleet screen
renders a fleet report. Everything from the job's files was cleaned where it was read and is
shown as plain text.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Static

from pcidoc.explain.render import chain_line, moment_line
from pcidoc.explain.verdict import Explanation, RankRow
from pcidoc.sanitize import clean_line
from pcidoc.tui._textual_private import CrashHookedApp

_ROLE_STYLE = {
    "culprit": "bold red",
    "waited": "yellow",
    "quiet": "cyan",
    "ok": "green",
    "no log": "dim",
}
_STATUS_STYLE = {"fault": "bold red", "warn": "yellow", "ok": "green"}
VIEWS = ("evidence", "timeline", "actions")


class ExplainScreen(Screen[None]):
    """One job's explanation: ranks table and a detail pane (e / t / a switch it)."""

    DEFAULT_CSS = """
    ExplainScreen #explain-title, ExplainScreen #explain-culprit { padding: 0 1; }
    ExplainScreen #explain-ranks { height: 1fr; min-height: 5; }
    ExplainScreen #explain-detail { height: 1fr; padding: 0 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "show('evidence')", "Evidence"),
        Binding("t", "show('timeline')", "Timeline"),
        Binding("a", "show('actions')", "What to do"),
        Binding("q,escape", "app.quit", "Quit"),
    ]

    def __init__(self, result: Explanation, source: str = "") -> None:
        super().__init__()
        self.result = result
        self.source = source
        self.view = "evidence"
        self.rows: list[RankRow] = sorted(
            result.ranks, key=lambda r: (r.role != "culprit", r.role == "no log", r.rank)
        )

    def compose(self) -> ComposeResult:
        result = self.result
        title = Text(f"{result.status.upper()} ", style=_STATUS_STYLE.get(result.status, ""))
        title.append(clean_line(result.summary), style="bold")
        if self.source:
            title.append(f"  ({clean_line(self.source)})", style="dim")
        culprit = Text()
        if result.culprit is not None:
            culprit.append("cause ", style="dim")
            culprit.append(result.culprit.cause, style="bold")
            culprit.append(f"  confidence {result.confidence:.2f}", style="dim")
            if result.culprit.detail:
                culprit.append("\n" + clean_line(result.culprit.detail))
        with Vertical(id="explain-box"):
            yield Static(title, id="explain-title")
            yield Static(culprit, id="explain-culprit")
            table: DataTable[Any] = DataTable(
                id="explain-ranks", cursor_type="row", zebra_stripes=True
            )
            yield table
            with VerticalScroll(id="explain-detail"):
                yield Static(Text(""), id="explain-detail-text")
            yield Static(
                Text(
                    "e evidence · t timeline · a what to do · arrows pick a rank · q quits",
                    style="dim",
                )
            )

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("rank", "host", "role", "last step", "error", "exit")
        for row in self.rows:
            table.add_row(
                str(row.rank),
                clean_line(row.host or "?"),
                Text(row.role, style=_ROLE_STYLE.get(row.role, "")),
                "" if row.last_step is None else str(row.last_step),
                clean_line(row.error or ""),
                "" if row.exit_code is None else str(row.exit_code),
                key=str(row.rank),
            )
        table.focus()
        self._render_detail(self.rows[0] if self.rows else None)

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        row = self.rows[event.cursor_row] if 0 <= event.cursor_row < len(self.rows) else None
        self._render_detail(row)

    def action_show(self, view: str) -> None:
        """Switch the detail pane (evidence, timeline, what to do)."""
        if view in VIEWS:
            self.view = view
            table = self.query_one(DataTable)
            row = table.cursor_row
            self._render_detail(self.rows[row] if 0 <= row < len(self.rows) else None)

    def _render_detail(self, row: RankRow | None) -> None:
        text = Text()
        if row is not None:
            link = next((c for c in self.result.chain if c.rank == row.rank), None)
            if link is not None:
                text.append("to its GPU: ", style="bold")
                text.append(chain_line(link).strip() + "\n")
                for missing in link.missing:
                    text.append("  not established: " + clean_line(missing) + "\n", style="dim")
        text.append(f"\n{self.view}\n", style="bold underline")
        for line in self._lines(row):
            text.append(line + "\n")
        self.query_one("#explain-detail-text", Static).update(text)

    def _lines(self, row: RankRow | None) -> list[str]:
        result = self.result
        if self.view == "timeline":
            moments = [m for m in result.timeline if row is None or m.rank in (row.rank, None)]
            return [moment_line(m).strip() for m in moments[:200]] or ["(nothing timed)"]
        if self.view == "actions":
            lines = [f"- {clean_line(a)}" for a in result.actions]
            lines += ["", "collect next time:"] + [f"- {clean_line(c)}" for c in result.collect]
            return lines + [f"note: {clean_line(n)}" for n in result.notes]
        mine = [e for e in result.evidence if row is None or e.rank == row.rank or e.rank is None]
        return [
            clean_line(f"[{e.role}] {e.ref.where()}: {e.ref.text}")[:400] for e in mine[:40]
        ] or ["(no evidence line for this rank)"]


class ExplainApp(CrashHookedApp):
    """A small app around :class:`ExplainScreen` (``pcidoc --explain PATH``)."""

    TITLE = "pcidoc explain"

    def __init__(self, result: Explanation, source: str = "") -> None:
        super().__init__()
        self.result = result
        self.source = source
        self.crash: BaseException | None = None
        self.crash_log: Any = None

    def on_mount(self) -> None:
        self.push_screen(ExplainScreen(self.result, self.source))

    def internal_error(self, error: Exception) -> None:
        """As the main TUI: the traceback goes to a log file, one line to the terminal."""
        if self.crash is None:
            from pcidoc.tui.app import write_crash_log

            self.crash = error
            self.crash_log = write_crash_log(error)

    def print_traceback(self) -> bool:
        """Only when the traceback could not be logged."""
        return self.crash_log is None


def run_explain_app(result: Explanation, source: str = "") -> int:
    """Run the explanation screen; an internal error raises
    :class:`~pcidoc.tui.TuiCrashed` (one line, exit 3)."""
    from pcidoc.tui import TuiCrashed

    app = ExplainApp(result, source)
    code = app.run()
    if app.crash is not None:
        where = f"traceback in {app.crash_log}" if app.crash_log else "no traceback saved"
        raise TuiCrashed(
            f"internal error in the TUI: {type(app.crash).__name__}: {app.crash} ({where})"
        )
    return int(code or 0)

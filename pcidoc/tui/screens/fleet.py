"""The fleet screen of ``pcidoc --fleet DIR``: every node worst first, outliers marked, what
differs from the peer group; enter opens the node's capture in the usual panes, escape there
comes back here. The list is the top: escape here does nothing (it once re-opened the node last
shown, a step forward where escape means back); enter on that node, where the cursor stays,
shows it again without reloading it.

The fleet report is computed before the app starts (:func:`run_fleet_tui`), so this screen only
renders a :class:`~pcidoc.model.fleet.FleetReport`.
"""

from __future__ import annotations

from datetime import timezone
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.await_complete import AwaitComplete
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Static

from pcidoc.fleet.render import peer_status
from pcidoc.model.fleet import FleetNode, FleetReport
from pcidoc.model.units import plurals
from pcidoc.sanitize import clean_line

if TYPE_CHECKING:
    from pcidoc.tui.app import PcidocApp


async def _nothing() -> None:
    return None


_STYLE = {
    "fail": "bold red",
    "error": "bold magenta",
    "warn": "yellow",
    "info": "cyan",
    "pass": "green",
    "skip": "dim",
}


class FleetScreen(Screen[str | None]):
    """Nodes worst first; returns the chosen node's file path (``None``: back to the node on
    display)."""

    DEFAULT_CSS = """
    FleetScreen #fleet-nodes { height: 1fr; }
    FleetScreen #fleet-detail { height: auto; max-height: 12; padding: 0 1; }
    FleetScreen #fleet-title, FleetScreen #fleet-shared, FleetScreen #fleet-unreadable {
        padding: 0 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "export", "Export the fleet report"),
        Binding("q", "app.quit", "Quit"),
        # The panes' keys act on the node behind this screen: not while the fleet is shown.
        Binding("1,2,3,4,w,p,P,x,s,b,o,c,n,f,slash", "ignore", show=False),
    ]

    dismissed = False
    """True once the node list was left (later calls do nothing)."""

    def __init__(self, report: FleetReport, current: str | None = None) -> None:
        super().__init__()
        self.report = report
        self.current = current
        """Path of the node on display behind this screen, if any."""
        self.paths: list[str] = [node.path for node in report.nodes]

    def compose(self) -> ComposeResult:
        s = self.report.summary
        title = Text("Fleet: ", style="bold")
        title.append(
            plurals(
                f"{s.get('nodes', 0)} node(s), {len(self.report.groups)} group(s), "
                f"{s.get('outliers', 0)} outlier(s), {s.get('excluded', 0)} to exclude"
            )
        )
        if s.get("unreadable"):
            title.append(plurals(f", {s['unreadable']} unreadable file(s)"), style="red")
        with Vertical(id="fleet-box"):
            yield Static(title, id="fleet-title")
            shared = Text()
            for finding in self.report.fleet_findings[:3]:
                shared.append("fleet-wide ", style="dim")
                shared.append(f"{finding.severity.upper()} ", style=_STYLE[finding.severity])
                shared.append(f"{finding.id}: {finding.summary}\n")
            yield Static(shared, id="fleet-shared")
            if self.report.unreadable:
                # "1 unreadable file" alone leaves the user guessing which and why.
                skipped = Text()
                for bad in self.report.unreadable[:3]:
                    skipped.append("skipped ", style="red")
                    skipped.append(f"{clean_line(bad.text())}\n")
                more = len(self.report.unreadable) - 3
                if more > 0:
                    skipped.append(
                        plurals(f"+{more} more unreadable file(s): pcidoc fleet DIR lists them\n"),
                        style="dim",
                    )
                yield Static(skipped, id="fleet-unreadable")
            table: DataTable[Any] = DataTable(
                id="fleet-nodes", cursor_type="row", zebra_stripes=True
            )
            yield table
            yield Static(Text(""), id="fleet-detail")
            yield Static(
                Text(
                    "* outlier  ! exclude · enter opens the node · e exports · ? keys · q quits",
                    style="dim",
                )
            )

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(" ", "node", "worst", "group", "what differs from its peers")
        excluded = {e.name for e in self.report.exclude}
        for node in self.report.nodes:
            mark = ("!" if node.name in excluded else "") + ("*" if node.outlier else "")
            table.add_row(
                Text(mark or " ", style="bold red" if mark else ""),
                Text(node.name, style="bold" if node.outlier else ""),
                Text(node.worst.upper(), style=_STYLE[node.worst]),
                node.group,
                peer_status(self.report, node),
                key=node.path,
            )
        if self.current in self.paths:
            table.move_cursor(row=self.paths.index(self.current))
        table.focus()

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Show everything that differs for the node under the cursor."""
        node = self.node_at(event.cursor_row)
        detail = Text()
        if node is not None:
            reason = next((e.reason for e in self.report.exclude if e.name == node.name), None)
            detail.append(f"{node.name}", style="bold")
            detail.append(f"  {node.worst.upper()}", style=_STYLE[node.worst])
            detail.append(f"  group {node.group}  {clean_line(node.path)}\n", style="dim")
            if reason:
                detail.append("exclude: ", style="bold red")
                detail.append(reason + "\n")
            for difference in node.differs:
                detail.append("differs: ", style="bold" if difference.degrades else "dim")
                detail.append(difference.text + "\n")
            if not node.differs:
                detail.append(peer_status(self.report, node) + "\n", style="dim")
        self.query_one("#fleet-detail", Static).update(detail)

    def node_at(self, row: int) -> FleetNode | None:
        """The node shown in table row ``row``."""
        return self.report.nodes[row] if 0 <= row < len(self.report.nodes) else None

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        path = str(event.row_key.value)
        # The node on display: back to it as it is (no reload); another node: open it.
        self.dismiss(None if path == self.current else path)

    def dismiss(self, result: str | None = None) -> AwaitComplete:
        """Leave the node list once: a second Enter that reaches it while it is leaving
        (Textual pops the screen on top at each call) must not pop the main screen."""
        if self.dismissed or self.app.screen is not self:
            return AwaitComplete(_nothing())
        self.dismissed = True
        return super().dismiss(result)

    def action_export(self) -> None:
        """Ask for a path, then write the fleet report (Markdown, HTML, JSON)."""
        from pcidoc.tui.screens.export import FLEET_FILES, ExportScreen

        app: PcidocApp = self.app  # type: ignore[assignment]
        stamp = app.services.now().astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        default = f"pcidoc-fleet-{stamp}"

        def chosen(base: str | None) -> None:
            if base:
                app.write_fleet_export(self.report, base, default)

        app.push_screen(
            ExportScreen(
                app.export_retry.pop("fleet", "") or default,
                str(app.options.export_dir),
                what=FLEET_FILES,
                suffixes=(".md", ".html", ".json"),
                title="Export the fleet report",
            ),
            chosen,
        )

    def action_ignore(self) -> None:
        """Swallow the panes' keys while the node list is on screen."""


def show_fleet(app: PcidocApp) -> None:
    """Push the fleet screen; the chosen node opens in the usual panes."""
    report = getattr(app, "fleet", None)
    if report is None or isinstance(app.screen, FleetScreen):
        return
    current = app.source.path if app.source is not None else None

    def chosen(path: str | None) -> None:
        if path is None:
            return
        from pcidoc.collect.capture import load_capture
        from pcidoc.errors import PcidocError
        from pcidoc.model.report import ReportSource
        from pcidoc.tui.messages import FactsCollected

        try:
            capture = load_capture(path)
        except PcidocError as exc:
            app.notify(exc.message, severity="error")
            app.call_after_refresh(lambda: show_fleet(app))
            return
        source = ReportSource.for_file(path, capture.origin.kind)
        app.post_message(FactsCollected(capture, source))
        app.load_machine(capture, source, live=False)

    app.push_screen(FleetScreen(report, current), chosen)


def run_fleet_tui(report: FleetReport, interval: float = 1.0) -> int:
    """Run the TUI on a fleet report (``pcidoc --fleet DIR``); an internal error raises
    :class:`~pcidoc.tui.TuiCrashed` (one line, exit 3), as ``pcidoc`` alone does."""
    from pcidoc.tui import run_app
    from pcidoc.tui.app import make_app
    from pcidoc.tui.services import TuiOptions, TuiServices

    # Every node is a capture file: nothing to collect live, no NVML session to open.
    app = make_app(
        fleet=report,
        services=TuiServices(),
        options=TuiOptions(interval=interval, demo_fallback=False),
    )
    return run_app(app)

"""The Doctor pane: every check worst first, the selected check's evidence and fix, probes."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Container, Horizontal, VerticalScroll
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from pcidoc.model.report import CheckResult, Report
from pcidoc.tui.describe import check_detail, check_line
from pcidoc.tui.widgets.probe_panel import ProbePanel


class DoctorPane(Container):
    """Check list (worst first) beside or above the selected check's detail."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.report: Report | None = None
        self.checks: list[CheckResult] = []

    def on_resize(self) -> None:
        """Side by side from 120 columns, stacked below."""
        self.set_class(self.size.width >= 120, "-wide")

    def compose(self) -> ComposeResult:
        yield ProbePanel(id="probe-panel")
        with Horizontal(id="doctor-body"):
            yield OptionList(id="checks")
            with VerticalScroll(id="check-detail"):
                yield Static(Text("diagnosing…", style="dim"), id="check-text")

    def on_mount(self) -> None:
        self.query_one(ProbePanel).display = False

    @property
    def probes(self) -> ProbePanel:
        """The probe progress panel."""
        return self.query_one(ProbePanel)

    @property
    def selected(self) -> CheckResult | None:
        """The highlighted check."""
        options = self.query_one("#checks", OptionList)
        index = options.highlighted
        if index is None or index >= len(self.checks):
            return None
        return self.checks[index]

    def show_report(self, report: Report | None) -> None:
        """Show a report's checks, keeping the selected check when it is still there."""
        previous = self.selected.id if self.selected else None
        self.report = report
        options = self.query_one("#checks", OptionList)
        options.clear_options()
        if report is None:
            self.checks = []
            self.query_one("#check-text", Static).update(Text("diagnosing…", style="dim"))
            return
        self.checks = report.sorted_checks()
        options.add_options([Option(check_line(c), id=c.id) for c in self.checks])
        ids = [c.id for c in self.checks]
        index = ids.index(previous) if previous in ids else 0
        if self.checks:
            options.highlighted = index
        self._show(self.selected)

    def select(self, check_id: str) -> None:
        """Highlight one check."""
        ids = [c.id for c in self.checks]
        if check_id in ids:
            self.query_one("#checks", OptionList).highlighted = ids.index(check_id)
            self._show(self.selected)

    def select_worst(self) -> None:
        """Highlight the worst check (the first of the list)."""
        if self.checks:
            self.select(self.checks[0].id)

    def _show(self, check: CheckResult | None) -> None:
        text = self.query_one("#check-text", Static)
        text.update(check_detail(check) if check else Text("no checks", style="dim"))
        self.query_one("#check-detail", VerticalScroll).scroll_home(animate=False)

    @on(OptionList.OptionHighlighted, "#checks")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._show(self.selected)

"""The Doctor pane: every check worst first, the selected check's evidence and fix, probes.

Like the process lists of nvitop/nvtop, the list can be narrowed: ``f`` hides the checks that
passed or were skipped, ``/`` searches ids, titles and summaries (escape clears), and Enter on a
finding jumps to its GPU or GPU pair in the Topology pane.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from pcidoc.model.report import CheckResult, Report
from pcidoc.tui.panes.doctor import check_detail, check_line
from pcidoc.tui.widgets.probe_panel import ProbePanel

_PAIR = re.compile(r"^((?:GPU|NIC)\d+)-((?:GPU|NIC)\d+)$")
_DEVICE = re.compile(r"^(?:GPU|NIC)\d+$")


def jump_target(check: CheckResult) -> tuple[str, str] | None:
    """The matrix cell of a finding: its first GPU pair, else its first device (diagonal)."""
    device: tuple[str, str] | None = None
    for subject in check.subjects:
        pair = _PAIR.match(subject)
        if pair:
            return pair.group(1), pair.group(2)
        if device is None and _DEVICE.match(subject):
            device = (subject, subject)
    return device


class CheckList(OptionList):
    """The list of checks; Enter jumps to the finding (a click only selects it)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "jump", "Jump to its GPU/pair", show=False),
    ]

    @dataclass
    class JumpRequested(Message):
        """Enter on a check: show its subject in the Topology pane."""

        check: CheckResult

    def action_jump(self) -> None:
        """Ask the app to show the highlighted check's GPU or pair."""
        pane = next((a for a in self.ancestors if isinstance(a, DoctorPane)), None)
        if pane is not None and pane.selected is not None:
            self.post_message(self.JumpRequested(pane.selected))


class DoctorPane(Container):
    """Check list (worst first) beside or above the selected check's detail."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "toggle_passed", "Hide pass/skip", show=False),
        Binding("slash", "search", "Search", show=False),
        Binding("escape", "clear_search", "Clear search", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.report: Report | None = None
        self.checks: list[CheckResult] = []
        """The checks on display (after the filter and the search)."""
        self.hide_passed = False
        """``f``: show only the checks that found something (info and worse)."""
        self.search = ""
        """``/``: only the checks whose id, title or summary contain this (any case)."""

    def on_resize(self) -> None:
        """Side by side from 120 columns, stacked below."""
        self.set_class(self.size.width >= 120, "-wide")

    def compose(self) -> ComposeResult:
        yield ProbePanel(id="probe-panel")
        yield Input(placeholder="search checks (escape clears)", id="check-search")
        yield Static(id="check-filter")
        with Horizontal(id="doctor-body"):
            yield CheckList(id="checks")
            with VerticalScroll(id="check-detail"):
                yield Static(Text("diagnosing…", style="dim"), id="check-text")

    def on_mount(self) -> None:
        self.query_one(ProbePanel).display = False
        self.query_one("#check-search", Input).display = False
        self.query_one("#check-filter", Static).display = False

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
        self.report = report
        self._fill()

    def _visible(self, report: Report) -> list[CheckResult]:
        checks = report.sorted_checks()
        if self.hide_passed:
            checks = [c for c in checks if c.severity not in ("pass", "skip")]
        needle = self.search.strip().lower()
        if needle:
            checks = [
                c
                for c in checks
                if needle in c.id.lower()
                or needle in c.title.lower()
                or needle in c.summary.lower()
            ]
        return checks

    def _fill(self) -> None:
        previous = self.selected.id if self.selected else None
        report = self.report
        options = self.query_one("#checks", OptionList)
        options.clear_options()
        if report is None:
            self.checks = []
            self._show_filter(0)
            self.query_one("#check-text", Static).update(Text("diagnosing…", style="dim"))
            return
        self.checks = self._visible(report)
        options.add_options([Option(check_line(c), id=c.id) for c in self.checks])
        ids = [c.id for c in self.checks]
        index = ids.index(previous) if previous in ids else 0
        if self.checks:
            options.highlighted = index
        self._show_filter(len(report.checks))
        self._show(self.selected)

    def _show_filter(self, total: int) -> None:
        line = self.query_one("#check-filter", Static)
        active = self.hide_passed or bool(self.search.strip())
        line.display = active
        if not active:
            return
        text = Text(f" showing {len(self.checks)} of {total} checks", style="bold")
        if self.hide_passed:
            text.append(" · pass/skip hidden (f shows them)", style="dim")
        if self.search.strip():
            text.append(f" · matching {self.search.strip()!r} (escape clears)", style="dim")
        line.update(text)

    def select(self, check_id: str) -> None:
        """Highlight one check (clearing the filter and search if they hide it)."""
        if check_id not in [c.id for c in self.checks] and (self.hide_passed or self.search):
            self.hide_passed = False
            self._set_search("")
            self._fill()
        ids = [c.id for c in self.checks]
        if check_id in ids:
            self.query_one("#checks", OptionList).highlighted = ids.index(check_id)
            self._show(self.selected)

    def select_worst(self) -> None:
        """Highlight the worst check (the first of the list)."""
        if self.report is not None:
            checks = self.report.sorted_checks()
            if checks:
                self.select(checks[0].id)

    def _show(self, check: CheckResult | None) -> None:
        text = self.query_one("#check-text", Static)
        if check is not None:
            text.update(check_detail(check))
        elif self.report is not None and self.report.checks:
            ways = []
            if self.search.strip():
                ways.append("escape clears the search")
            if self.hide_passed:
                ways.append("f shows the passed and skipped checks")
            text.update(Text("no check matches: " + " · ".join(ways or ["no checks"]), style="dim"))
        else:
            text.update(Text("no checks", style="dim"))
        self.query_one("#check-detail", VerticalScroll).scroll_home(animate=False)

    # ----------------------------------------------------------------------- actions

    def action_toggle_passed(self) -> None:
        """Hide or show the checks that passed or were skipped."""
        self.hide_passed = not self.hide_passed
        self._fill()

    def action_search(self) -> None:
        """Open the search field."""
        field = self.query_one("#check-search", Input)
        field.display = True
        self.screen.set_focus(field)

    def action_clear_search(self) -> None:
        """Clear and close the search field; back to the list."""
        field = self.query_one("#check-search", Input)
        if not field.display and not self.search:
            return
        self._set_search("")
        field.display = False
        self._fill()
        self.query_one("#checks", OptionList).focus()

    def _set_search(self, value: str) -> None:
        self.search = value
        field = self.query_one("#check-search", Input)
        if field.value != value:
            with field.prevent(Input.Changed):
                field.value = value

    @on(Input.Changed, "#check-search")
    def _search_changed(self, event: Input.Changed) -> None:
        self.search = event.value
        self._fill()

    @on(Input.Submitted, "#check-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        self.query_one("#checks", OptionList).focus()

    @on(OptionList.OptionHighlighted, "#checks")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._show(self.selected)

"""The main screen: header, optional no-GPU banner, four panes in tabs, and the key footer.

The panes come from one table (:data:`pcidoc.tui.panes.PANES`): their containers, tabs,
widgets, focus and keys here, each pane's binding in its module (``pcidoc.tui.panes.<id>``).
They are bound to the app's reactive state (:class:`pcidoc.tui.app.PcidocApp`'s
``displayed``, ``report``, ``counters``, ``this_machine``, ``no_gpu_reason``, ``status`` and
``probes_running``): each pane (and the key bar) watches the values it shows, through
Textual's ``watch``, from the moment it is mounted (a lazy pane opened later shows the current
state at once) until it is removed. The app's handlers only set the state; no code pushes data
into a pane by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.app import ComposeResult
from textual.containers import Container
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import ContentSwitcher

from pcidoc.tui.panes import PANE_BY_ID, PANES
from pcidoc.tui.widgets.key_bar import KeyBar, KeyHint
from pcidoc.tui.widgets.machine_header import MachineHeader
from pcidoc.tui.widgets.no_gpu_banner import NoGpuBanner
from pcidoc.tui.widgets.pane_tabs import PaneTabs
from pcidoc.tui.widgets.topology_pane import TopologyPane

if TYPE_CHECKING:
    from pcidoc.tui.app import PcidocApp
    from pcidoc.tui.state import Displayed
    from pcidoc.tui.widgets.doctor_pane import DoctorPane
    from pcidoc.tui.widgets.host_pane import HostPane
    from pcidoc.tui.widgets.links_pane import LinksPane

COMMON_KEYS: list[KeyHint] = [
    ("?", "Help", "app.help"),
    ("w", "Worst", "app.worst"),
    ("p", "Probes", "app.probes('quick')"),
    ("e", "Export", "app.export"),
    ("q", "Quit", "app.quit"),
    ("s", "Samples", "app.samples"),
]
FLEET_KEY: KeyHint = ("esc", "Fleet", "app.fleet")
"""``pcidoc --fleet DIR``: escape goes back to the node list."""
CANCEL_KEY: KeyHint = ("x", "Cancel probes", "app.cancel_probes")


class MainScreen(Screen[None]):
    """Everything the app shows, each pane bound to the part of the app's state it renders."""

    def compose(self) -> ComposeResult:
        yield MachineHeader(id="header")
        yield NoGpuBanner("", id="banner")
        yield PaneTabs(tuple((pane.id, pane.tab) for pane in PANES), id="tabs")
        with ContentSwitcher(id="panes", initial=PANES[0].id):
            for pane in PANES:
                if pane.lazy:
                    # Built when first opened: none of its widgets is on the first screen.
                    yield Container(id=pane.id)
                    continue
                with Container(id=pane.id):
                    yield pane.widget_class()(id=pane.widget_id)
        yield KeyBar(id="footer")

    def on_mount(self) -> None:
        self.query_one(NoGpuBanner).display = False
        self.query_one(PaneTabs).show(self.active_pane)
        # The key bar offers x (cancel) exactly while probes run.
        self.query_one(KeyBar).watch(self.state, "probes_running", self.show_keys)
        self._bind_header(self.header)
        self._bind_banner(self.banner)
        for pane in PANES:
            if not pane.lazy:
                pane.module().bind(self, self.query_one(f"#{pane.widget_id}"))

    def on_resize(self) -> None:
        """A small terminal (under 30 rows) gives the no-GPU banner two rows, not four."""
        self.banner.set_class(self.size.height < 30, "-short")

    def show_keys(self) -> None:
        """The key bar for the pane on display (and ``x`` while probes run)."""
        pane = self.active_pane
        hints: list[KeyHint] = [
            (key.key, key.label, f"app.pane_key('{key.key}')") for key in PANE_BY_ID[pane].keys
        ]
        if self.state.probes_running:
            hints.append(CANCEL_KEY)
        if self.state.fleet is not None:
            hints.append(FLEET_KEY)
        self.query_one(KeyBar).show(hints + COMMON_KEYS)

    @property
    def header(self) -> MachineHeader:
        """The header."""
        return self.query_one(MachineHeader)

    @property
    def banner(self) -> NoGpuBanner:
        """The no-GPU banner."""
        return self.query_one(NoGpuBanner)

    @property
    def topology(self) -> TopologyPane:
        """The Topology pane."""
        return self.query_one(TopologyPane)

    @property
    def links(self) -> LinksPane:
        """The Links pane (once opened)."""
        return cast("LinksPane", self.query_one("#links-pane"))

    @property
    def doctor(self) -> DoctorPane:
        """The Doctor pane (once opened)."""
        return cast("DoctorPane", self.query_one("#doctor-pane"))

    @property
    def host(self) -> HostPane:
        """The Host pane (once opened)."""
        return cast("HostPane", self.query_one("#host-pane"))

    @property
    def active_pane(self) -> str:
        """Id of the pane on display."""
        return str(self.query_one(ContentSwitcher).current)

    def pane(self, name: str) -> Widget | None:
        """A pane's widget, or ``None`` while it has never been opened."""
        found = self.query(f"#{name}-pane")
        return found.first() if found else None

    async def ensure_pane(self, name: str) -> bool:
        """Mount a lazy pane, bound to the app's state (so it shows the current state at once);
        True when it was mounted just now."""
        pane = PANE_BY_ID.get(name)
        if pane is None or not pane.lazy or self.pane(name) is not None:
            return False
        widget = pane.widget_class()(id=pane.widget_id)
        await self.query_one(f"#panes > #{name}").mount(widget)
        pane.module().bind(self, widget)
        return True

    def activate(self, pane: str) -> None:
        """Switch the tabs to a pane and focus its main widget (the pane catches up with the
        state first: a stale matrix is redrawn)."""
        widget = self.pane(pane)
        if widget is not None:
            PANE_BY_ID[pane].module().shown(self, widget)
        self.query_one(ContentSwitcher).current = pane
        self.query_one(PaneTabs).show(pane)
        self.focus_pane(pane)

    def focus_pane(self, pane: str) -> None:
        """Focus the main widget of a pane."""
        found = self.query(PANE_BY_ID[pane].focus)
        if found:
            found.first().focus()

    # ------------------------------------------------------------------ bindings

    @property
    def state(self) -> PcidocApp:
        """The app, whose reactive attributes are the state the panes show."""
        return cast("PcidocApp", self.app)

    def _bind_header(self, header: MachineHeader) -> None:
        state = self.state

        def draw() -> None:
            displayed, report = state.displayed, state.report
            capture = report.machine if report is not None else None
            if capture is None and displayed is not None:
                capture = displayed.capture
            source = displayed.source if displayed is not None else None
            header.show(capture, source, report, state.status)

        header.watch(state, "displayed", draw)
        header.watch(state, "report", draw, init=False)
        header.watch(state, "status", draw, init=False)

    def _bind_banner(self, banner: NoGpuBanner) -> None:
        state = self.state

        def draw(displayed: Displayed | None) -> None:
            if displayed is None:
                return  # nothing on display yet: the banner stays as composed (hidden)
            reason = state.no_gpu_reason if displayed.fallback else None
            banner.show(reason, displayed.source.name)

        banner.watch(state, "displayed", draw)
        banner.watch(state, "no_gpu_reason", lambda: draw(state.displayed), init=False)

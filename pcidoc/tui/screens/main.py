"""The main screen: header, optional no-GPU banner, four panes in tabs, and the key footer.

The panes are bound to the app's reactive state (:class:`pcidoc.tui.app.PcidocApp`'s
``displayed``, ``report``, ``counters``, ``this_machine``, ``no_gpu_reason``, ``status`` and
``probes_running``): each pane (and the key bar) watches the values it shows, through
Textual's ``watch``, from the moment it is mounted (a lazy pane opened later shows the current
state at once) until it is removed. The app's handlers only set the state; no code pushes data
into a pane by name.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING, Any, cast

from textual.app import ComposeResult
from textual.containers import Container
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import ContentSwitcher

from pcidoc.tui.widgets.key_bar import KeyBar, KeyHint
from pcidoc.tui.widgets.machine_header import MachineHeader
from pcidoc.tui.widgets.no_gpu_banner import NoGpuBanner
from pcidoc.tui.widgets.pane_tabs import PaneTabs
from pcidoc.tui.widgets.topology_pane import TopologyPane

if TYPE_CHECKING:
    from pcidoc.model.report import Report
    from pcidoc.tui.app import PcidocApp
    from pcidoc.tui.state import Counters, Displayed
    from pcidoc.tui.widgets.doctor_pane import DoctorPane
    from pcidoc.tui.widgets.host_pane import HostPane
    from pcidoc.tui.widgets.links_pane import LinksPane

PANES: tuple[tuple[str, str], ...] = (
    ("topology", "1 Topology"),
    ("links", "2 Links"),
    ("doctor", "3 Doctor"),
    ("host", "4 Host"),
)
"""Pane ids and tab labels, in key order."""

COMMON_KEYS: list[KeyHint] = [
    ("?", "Help", "app.help"),
    ("w", "Worst", "app.worst"),
    ("p", "Probes", "app.probes('quick')"),
    ("e", "Export", "app.export"),
    ("q", "Quit", "app.quit"),
    ("s", "Samples", "app.samples"),
]
PANE_KEYS: dict[str, list[KeyHint]] = {
    "topology": [("c", "Colour", "app.pane_key('c')"), ("n", "NICs", "app.pane_key('n')")],
    "links": [("o", "Sort", "app.pane_key('o')")],
    "doctor": [("f", "Filter", "app.pane_key('f')"), ("/", "Search", "app.pane_key('/')")],
}
"""The keys of each pane (the key bar shows them before the common ones)."""
FLEET_KEY: KeyHint = ("esc", "Fleet", "app.fleet")
"""``pcidoc --fleet DIR``: escape goes back to the node list."""
CANCEL_KEY: KeyHint = ("x", "Cancel probes", "app.cancel_probes")


LAZY_PANES: dict[str, tuple[str, str]] = {
    "links": ("pcidoc.tui.widgets.links_pane", "LinksPane"),
    "doctor": ("pcidoc.tui.widgets.doctor_pane", "DoctorPane"),
    "host": ("pcidoc.tui.widgets.host_pane", "HostPane"),
}
"""Panes mounted the first time they are opened (the Topology pane is the first screen), by
module and class: their modules load then too, not before the first screen."""


class MainScreen(Screen[None]):
    """Everything the app shows, each pane bound to the part of the app's state it renders."""

    def __init__(self) -> None:
        super().__init__()
        self.topology_stale = False
        """The matrix lags behind the state (a report or rates arrived while another pane was
        on display): it is redrawn when the Topology pane is opened, not on every report a
        probe run produces (a hidden 72-GPU matrix is not worth a UI pause)."""

    def compose(self) -> ComposeResult:
        yield MachineHeader(id="header")
        yield NoGpuBanner("", id="banner")
        yield PaneTabs(PANES, id="tabs")
        with ContentSwitcher(id="panes", initial="topology"):
            with Container(id="topology"):
                yield TopologyPane(id="topology-pane")
            # Built when first opened: a quarter of the widgets, none of them on the first screen.
            for pane, _label in PANES[1:]:
                yield Container(id=pane)
        yield KeyBar(id="footer")

    def on_mount(self) -> None:
        self.query_one(NoGpuBanner).display = False
        self.query_one(PaneTabs).show(self.active_pane)
        # The key bar offers x (cancel) exactly while probes run.
        self.query_one(KeyBar).watch(self.state, "probes_running", self.show_keys)
        self._bind_header(self.header)
        self._bind_banner(self.banner)
        self._bind_topology(self.topology)

    def on_resize(self) -> None:
        """A small terminal (under 30 rows) gives the no-GPU banner two rows, not four."""
        self.banner.set_class(self.size.height < 30, "-short")

    def show_keys(self) -> None:
        """The key bar for the pane on display (and ``x`` while probes run)."""
        pane = self.active_pane
        hints = list(PANE_KEYS.get(pane, []))
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
        if name not in LAZY_PANES or self.pane(name) is not None:
            return False
        module, cls = LAZY_PANES[name]
        pane = getattr(import_module(module), cls)(id=f"{name}-pane")
        await self.query_one(f"#panes > #{name}").mount(pane)
        binders: dict[str, Callable[[Any], None]] = {
            "links": self._bind_links,
            "doctor": self._bind_doctor,
            "host": self._bind_host,
        }
        binders[name](pane)
        return True

    def activate(self, pane: str) -> None:
        """Switch the tabs to a pane and focus its main widget (a stale matrix is redrawn
        first)."""
        if pane == "topology" and self.topology_stale:
            self._redraw_topology()
        self.query_one(ContentSwitcher).current = pane
        self.query_one(PaneTabs).show(pane)
        self.focus_pane(pane)

    def focus_pane(self, pane: str) -> None:
        """Focus the main widget of a pane."""
        targets = {
            "topology": "#matrix",
            "links": "#gpu-table",
            "doctor": "#checks",
            "host": "#host-pane",
        }
        found = self.query(targets[pane])
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

    def _bind_topology(self, topology: TopologyPane) -> None:
        state = self.state

        def machine(displayed: Displayed | None) -> None:
            if displayed is None:
                return  # the matrix keeps its first placeholder
            topology.replay = displayed.replay
            capture = displayed.capture
            if capture is None:
                topology.show_capture(None)
                return
            from pcidoc.doctor.topology_notes import topology_notes

            topology.show_capture(capture, topology_notes(capture))

        def report(old: Report | None, new: Report | None) -> None:
            topology.show_report(new)
            if old is not None and new is not None:
                # A later report of the same machine (probes measured): its capture carries
                # the measurements the matrix colours by. Not the first: it has the facts.
                self._topology_changed()

        def counters(value: Counters | None) -> None:
            displayed = state.displayed
            if value is None or value.rates is None:
                return
            if displayed is not None and displayed.replay is not None:
                # A replayed SYNTHETIC trace stays in the Links pane, which labels it; the
                # matrix's traffic colours show only counters read from GPUs.
                return
            if self.active_pane == "topology":
                topology.show_rates(value.rates)
            else:
                self.topology_stale = True

        # Bound at mount, before anything is on display: the composed pane is the empty state.
        topology.watch(state, "displayed", machine)
        topology.watch(state, "report", report, init=False)
        topology.watch(state, "counters", counters, init=False)

    def _topology_changed(self) -> None:
        if self.active_pane == "topology":
            self.topology.show_capture(self.state.capture)
        else:
            self.topology_stale = True

    def _redraw_topology(self) -> None:
        """Bring a stale matrix up to the state: the latest rates and the latest capture."""
        self.topology_stale = False
        state = self.state
        displayed = state.displayed
        real = displayed is None or displayed.replay is None
        self.topology.show_rates((state.rates or None) if real else None)
        self.topology.show_capture(state.capture)

    def _bind_links(self, links: LinksPane) -> None:
        state = self.state

        def machine(displayed: Displayed | None) -> None:
            if displayed is None:
                links.show_capture(None, False, None)
                return
            links.show_capture(
                displayed.capture,
                displayed.moving_counters,
                displayed.interval,
                replay=displayed.replay,
            )

        def counters(value: Counters | None) -> None:
            if value is not None:
                links.show_sample(value.sample, value.rates or {}, value.link_changes, value.since)

        links.watch(state, "displayed", machine)
        links.watch(state, "counters", counters)

    def _bind_doctor(self, doctor: DoctorPane) -> None:
        doctor.watch(self.state, "report", doctor.show_report)

    def _bind_host(self, host: HostPane) -> None:
        state = self.state

        def draw() -> None:
            displayed = state.displayed
            title = "Host of the machine on display"
            if displayed is not None and displayed.source.kind != "live":
                title += f" ({displayed.source.describe()})"
            capture = displayed.capture if displayed is not None else None
            host.show(state.this_machine, capture, title, state.no_gpu_reason)

        host.watch(state, "displayed", draw)
        host.watch(state, "this_machine", draw, init=False)
        host.watch(state, "no_gpu_reason", draw, init=False)

"""The main screen: header, optional no-GPU banner, four panes in tabs, and the key footer."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import TabbedContent, TabPane

from pcidoc.tui.widgets.doctor_pane import DoctorPane
from pcidoc.tui.widgets.host_pane import HostPane
from pcidoc.tui.widgets.key_bar import KeyBar, KeyHint
from pcidoc.tui.widgets.links_pane import LinksPane
from pcidoc.tui.widgets.machine_header import MachineHeader
from pcidoc.tui.widgets.no_gpu_banner import NoGpuBanner
from pcidoc.tui.widgets.topology_pane import TopologyPane

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
    "topology": [("c", "Colour", "app.topology_key('c')"), ("n", "NICs", "app.topology_key('n')")],
}
CANCEL_KEY: KeyHint = ("x", "Cancel probes", "app.cancel_probes")


LAZY_PANES: dict[str, type[Widget]] = {
    "links": LinksPane,
    "doctor": DoctorPane,
    "host": HostPane,
}
"""Panes mounted the first time they are opened (the Topology pane is the first screen)."""


class MainScreen(Screen[None]):
    """Everything the app shows; the app feeds it data through the panes' ``show_*`` methods."""

    def compose(self) -> ComposeResult:
        yield MachineHeader(id="header")
        yield NoGpuBanner("", id="banner")
        with TabbedContent(id="panes", initial="topology"):
            with TabPane(PANES[0][1], id="topology"):
                yield TopologyPane(id="topology-pane")
            # Built when first opened: a quarter of the widgets, none of them on the first screen.
            for pane, label in PANES[1:]:
                yield TabPane(label, id=pane)
        yield KeyBar(id="footer")

    def on_mount(self) -> None:
        self.query_one(NoGpuBanner).display = False
        self.show_keys()

    def show_keys(self, probes_running: bool = False) -> None:
        """The key bar for the pane on display."""
        pane = self.active_pane
        hints = list(PANE_KEYS.get(pane, []))
        if probes_running:
            hints.append(CANCEL_KEY)
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
        """The Links pane."""
        return self.query_one(LinksPane)

    @property
    def doctor(self) -> DoctorPane:
        """The Doctor pane."""
        return self.query_one(DoctorPane)

    @property
    def host(self) -> HostPane:
        """The Host pane."""
        return self.query_one(HostPane)

    @property
    def active_pane(self) -> str:
        """Id of the pane on display."""
        return str(self.query_one(TabbedContent).active)

    def pane(self, name: str) -> Widget | None:
        """A pane's widget, or ``None`` while it has never been opened."""
        found = self.query(f"#{name}-pane")
        return found.first() if found else None

    async def ensure_pane(self, name: str) -> bool:
        """Mount a lazy pane; True when it was mounted just now (and needs its data)."""
        if name not in LAZY_PANES or self.pane(name) is not None:
            return False
        await self.query_one(f"TabPane#{name}", TabPane).mount(LAZY_PANES[name](id=f"{name}-pane"))
        return True

    def activate(self, pane: str) -> None:
        """Switch the tabs to a pane and focus its main widget."""
        self.query_one(TabbedContent).active = pane
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

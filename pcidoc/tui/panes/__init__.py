"""The panes of the main screen, in one table: everything keyed by a pane comes from :data:`PANES`.

A pane is a row of :data:`PANES`: its id, number key and title (the tabs, the app's ``1``-``4``
bindings, the help's "Everywhere" line), the widget that shows it (mounted the first time the
pane opens, unless it is the first screen), the widget focused when it opens, the keys the key
bar offers on it (and the widget action each one runs when clicked) and its section of the help.

Its text and its binding to the app's state live in the module of the same name in this package
(``pcidoc.tui.panes.<id>``: ``bind(screen, widget)`` once the widget is mounted, ``shown(screen,
widget)`` each time it comes on display), its widget in :mod:`pcidoc.tui.widgets`. This module
imports nothing of them: a pane's modules load when it first opens. To add a pane: a row here,
a ``panes/<id>.py`` with ``bind`` and ``shown``, a widget, and a container rule in pcidoc.tcss.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast

if TYPE_CHECKING:
    from textual.widget import Widget

    from pcidoc.tui.screens.main import MainScreen


class PaneKey(NamedTuple):
    """A key of one pane, as the key bar offers it."""

    key: str
    """The key as typed and shown (``c``, ``/``)."""
    label: str
    """Its word in the key bar."""
    action: str
    """The pane widget's action it runs (``cycle_colour``: ``action_cycle_colour``), also when
    its hint is clicked in the key bar."""


class PaneModule(Protocol):
    """What ``pcidoc.tui.panes.<id>`` provides besides the pane's text."""

    def bind(self, screen: MainScreen, widget: Any) -> None:
        """Bind the pane's widget to the app's state (it shows the current state at once)."""

    def shown(self, screen: MainScreen, widget: Any) -> None:
        """The pane is about to come on display."""


class Pane(NamedTuple):
    """One pane of the main screen."""

    id: str
    """``topology``: the id of its container (``#topology``); its widget is ``#topology-pane``."""
    number: str
    """The key that opens it, also its tab's number."""
    title: str
    widget: tuple[str, str]
    """Module and class of the widget that shows it."""
    focus: str
    """Selector of the widget focused when the pane opens."""
    lazy: bool = True
    """Mounted the first time it opens (not on the first screen)."""
    keys: tuple[PaneKey, ...] = ()
    """The keys the key bar offers on this pane (before the common ones)."""
    help: tuple[tuple[str, str], ...] = ()
    """Its section of the help: ``(keys, what they do)``; none for a pane without keys."""

    @property
    def tab(self) -> str:
        """Its tab's label: ``1 Topology``."""
        return f"{self.number} {self.title}"

    @property
    def widget_id(self) -> str:
        """The id of its widget."""
        return f"{self.id}-pane"

    def widget_class(self) -> type[Widget]:
        """The widget class (its module is imported now)."""
        module, name = self.widget
        return cast("type[Widget]", getattr(import_module(module), name))

    def module(self) -> PaneModule:
        """``pcidoc.tui.panes.<id>``: the pane's text, ``bind`` and ``shown``."""
        return cast(PaneModule, import_module(f"{__name__}.{self.id}"))

    def key(self, key: str) -> PaneKey | None:
        """The key bar's key ``key`` of this pane, if it has one."""
        return next((k for k in self.keys if k.key == key), None)


PANES: tuple[Pane, ...] = (
    Pane(
        "topology",
        "1",
        "Topology",
        ("pcidoc.tui.widgets.topology_pane", "TopologyPane"),
        "#matrix",
        lazy=False,
        keys=(PaneKey("c", "Colour", "cycle_colour"), PaneKey("n", "NICs", "toggle_nics")),
        help=(
            ("arrows hjkl", "move the cell cursor (or click a cell)"),
            ("home end", "first / last column of the row"),
            ("pgup pgdn", "eight rows up / down"),
            ("c", "colour: link class → measured P2P bandwidth → live traffic"),
            ("n", "show / hide the NICs"),
        ),
    ),
    Pane(
        "links",
        "2",
        "Links",
        ("pcidoc.tui.widgets.links_pane", "LinksPane"),
        "#gpu-table",
        keys=(PaneKey("o", "Sort", "cycle_sort"),),
        help=(
            ("up down", "select a GPU (its NVLinks and history chart below)"),
            ("tab", "to the NVLink table; up/down selects the link drawn in the chart"),
            ("o", "sort the GPUs: GPU order → most replays → busiest first"),
        ),
    ),
    Pane(
        "doctor",
        "3",
        "Doctor",
        ("pcidoc.tui.widgets.doctor_pane", "DoctorPane"),
        "#checks",
        keys=(PaneKey("f", "Filter", "toggle_passed"), PaneKey("/", "Search", "search")),
        help=(
            ("up down", "select a check (worst first); its evidence and fix on the side"),
            ("enter", "jump to the finding's GPU or GPU pair in the Topology pane"),
            ("f", "hide / show the checks that passed or were skipped"),
            ("/", "search the checks (id, title, summary); escape clears"),
            ("tab", "to the detail, then pgup/pgdn to scroll it"),
        ),
    ),
    Pane(
        "host",
        "4",
        "Host",
        ("pcidoc.tui.widgets.host_pane", "HostPane"),
        "#host-pane",
    ),
)
"""The panes, in key order; the first is the first screen."""

PANE_BY_ID: dict[str, Pane] = {pane.id: pane for pane in PANES}


def pane_help() -> list[tuple[str, list[tuple[str, str]]]]:
    """The help's lines for the panes: the line of the number keys (for the "Everywhere"
    section first) and a section per pane with keys of its own."""
    numbers = " ".join(pane.number for pane in PANES)
    titles = ", ".join(pane.title for pane in PANES)
    return [
        ("Everywhere", [(numbers, f"{titles} panes (or click the tabs)")]),
        *((f"{pane.title} pane", list(pane.help)) for pane in PANES if pane.help),
    ]


__all__ = ["PANES", "PANE_BY_ID", "Pane", "PaneKey", "PaneModule", "pane_help"]

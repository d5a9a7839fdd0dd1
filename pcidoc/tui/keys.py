"""Every key of the TUI, in the words the help screen and docs/tui.md use.

The help screen is generated from :data:`KEY_HELP` and lists only the sections of the screen it
was opened from (:func:`help_sections`): the node list of ``pcidoc --fleet DIR`` has keys of
its own, and the panes' keys do nothing there. A test checks that every binding of the app, its
panes and its dialogs appears here, so the help cannot fall behind the code.
"""

from __future__ import annotations

from pcidoc.tui.panes import pane_help

_NUMBERS, *_PANE_SECTIONS = pane_help()

KEY_HELP: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "Everywhere",
        [
            *_NUMBERS[1],
            ("w", "jump to the worst finding (Doctor pane)"),
            ("p", "run the quick probes (live GPU machine)"),
            ("P", "run the full probes (a few minutes)"),
            ("x", "cancel the running probes (ends their processes)"),
            ("e", "export the report: Markdown, HTML, JSON + SVG screenshot"),
            ("s", "open another sample machine (demo picker)"),
            ("b", "hide / show the no-GPU banner"),
            ("? F1", "this help"),
            ("tab shift+tab", "move between the parts of a pane"),
            ("q ctrl+c", "quit (stops the sampler, cancels probes)"),
        ],
    ),
    *_PANE_SECTIONS,
    (
        "Fleet",
        [
            ("escape", "from a node's panes, back to the node list"),
        ],
    ),
    (
        "Dialogs",
        [
            ("enter", "confirm (export, open sample)"),
            ("y", "export: replace the files already there (enter goes back to the name)"),
            ("escape", "close without doing anything (q too in the sample picker and help)"),
        ],
    ),
]
"""Sections of ``(keys, what they do)`` of the main screen; the number keys' line and each
pane's section come from the pane table (:data:`pcidoc.tui.panes.PANES`)."""

FLEET_HELP: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "Fleet node list (pcidoc --fleet DIR)",
        [
            ("up down", "select a node: what differs from its peers shows below"),
            ("enter", "open the node under the cursor in the usual panes"),
            ("e", "export the fleet report: Markdown, HTML, JSON"),
            ("? F1", "this help"),
            ("q ctrl+c", "quit"),
        ],
    ),
    (
        "Dialogs",
        [
            ("enter", "confirm (export)"),
            ("escape", "close without doing anything (q too in the help)"),
        ],
    ),
]
"""Sections of the fleet's node list: only the keys that work there."""


def help_sections(screen: str, fleet: bool = False) -> list[tuple[str, list[tuple[str, str]]]]:
    """The sections of :data:`KEY_HELP` (``screen="main"``) or :data:`FLEET_HELP`
    (``"fleet"``) that apply: the Fleet section of the panes only under ``pcidoc --fleet``."""
    if screen == "fleet":
        return FLEET_HELP
    return [(name, keys) for name, keys in KEY_HELP if fleet or name != "Fleet"]


def all_keys() -> set[str]:
    """Every single key named in :data:`KEY_HELP` (``"home end"`` counts as two)."""
    keys: set[str] = set()
    for _, entries in KEY_HELP + FLEET_HELP:
        for names, _ in entries:
            for name in names.split():
                if name == "arrows":
                    keys.update({"up", "down", "left", "right"})
                elif name == "hjkl":
                    keys.update({"h", "j", "k", "l"})
                else:
                    keys.add(name)
    return keys

"""Every key of the TUI, in the words the help screen and docs/tui.md use.

The help screen is generated from :data:`KEY_HELP` and lists only the sections of the screen it
was opened from (:func:`help_sections`): the node list of ``pcidoc --fleet DIR`` has keys of
its own, and the panes' keys do nothing there. A test checks that every binding of the app, its
panes and its dialogs appears here, so the help cannot fall behind the code.
"""

from __future__ import annotations

KEY_HELP: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "Everywhere",
        [
            ("1 2 3 4", "Topology, Links, Doctor, Host panes (or click the tabs)"),
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
    (
        "Topology pane",
        [
            ("arrows hjkl", "move the cell cursor (or click a cell)"),
            ("home end", "first / last column of the row"),
            ("pgup pgdn", "eight rows up / down"),
            ("c", "colour: link class → measured P2P bandwidth → live traffic"),
            ("n", "show / hide the NICs"),
        ],
    ),
    (
        "Links pane",
        [
            ("up down", "select a GPU (its NVLinks and history chart below)"),
            ("tab", "to the NVLink table; up/down selects the link drawn in the chart"),
            ("o", "sort the GPUs: GPU order → most replays → busiest first"),
        ],
    ),
    (
        "Doctor pane",
        [
            ("up down", "select a check (worst first); its evidence and fix on the side"),
            ("enter", "jump to the finding's GPU or GPU pair in the Topology pane"),
            ("f", "hide / show the checks that passed or were skipped"),
            ("/", "search the checks (id, title, summary); escape clears"),
            ("tab", "to the detail, then pgup/pgdn to scroll it"),
        ],
    ),
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
"""Sections of ``(keys, what they do)`` of the main screen (the panes)."""

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

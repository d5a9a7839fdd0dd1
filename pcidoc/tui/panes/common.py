"""What the text of several panes shares: highlighted commands, key/value lines, versions.

The text of each pane lives with the pane (:mod:`pcidoc.tui.panes`); this module holds only
the few pieces more than one of them (or the header) uses. Strings that come from a capture are
appended as plain text, never parsed as markup.
"""

from __future__ import annotations

from rich.text import Text

from pcidoc.model.capture import Capture
from pcidoc.present._common import split_code
from pcidoc.present.text import CODE_STYLE


def inline(text: str, style: str = "") -> Text:
    """Text with `backtick` spans shown as highlighted commands (backticks dropped)."""
    out = Text(style=style)
    for piece, is_code in split_code(text):
        out.append(piece, style=CODE_STYLE if is_code else "")
    return out


def kv(out: Text, key: str, value: str | Text, key_width: int = 16) -> None:
    """Append one ``key  value`` line (the key bold, in a column ``key_width`` wide)."""
    out.append(f"{key:<{key_width}}", style="bold")
    if isinstance(value, Text):
        out.append_text(value)
    else:
        out.append(value)
    out.append("\n")


def driver_versions(capture: Capture) -> str:
    """``driver 550.54 · CUDA 12.4`` (the parts the capture has; '' when none)."""
    driver = capture.driver
    parts = []
    if driver.driver_version:
        parts.append(f"driver {driver.driver_version}")
    if driver.cuda_driver_version:
        parts.append(f"CUDA {driver.cuda_driver_version}")
    return " · ".join(parts)


__all__ = ["driver_versions", "inline", "kv"]

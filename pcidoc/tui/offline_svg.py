"""The exported screenshot (``PATH.svg``) works offline: no font fetched from the network.

Rich writes its SVG with ``@font-face`` rules that load Fira Code from a CDN when the font is not
installed. A machine without network access (most GPU nodes) then drew the picture in another
font than the one its columns were measured with, and a viewer that fetched it told a third
party that a report was opened. The export keeps only the locally installed fonts and a stack of
common monospace system fonts, whose cell widths match the terminal's closely enough.
"""

from __future__ import annotations

import re

MONOSPACE_STACK = (
    '"Fira Code", ui-monospace, "DejaVu Sans Mono", "Liberation Mono", Menlo, Consolas, monospace'
)
"""Fira Code where it is installed, else a system monospace font."""

_REMOTE_SOURCE = re.compile(r",?\s*url\([^)]*\)\s*format\([^)]*\)|,?\s*url\([^)]*\)")
_FAMILY = re.compile(r"font-family:\s*Fira Code,\s*monospace;")


def offline_svg(svg: str) -> str:
    """``svg`` without any remote font source, with a system monospace font stack."""
    svg = _REMOTE_SOURCE.sub("", svg)
    return _FAMILY.sub(f"font-family: {MONOSPACE_STACK};", svg)


__all__ = ["MONOSPACE_STACK", "offline_svg"]

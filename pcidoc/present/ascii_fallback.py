"""Readable ASCII for pcidoc's own typography on a stream that cannot encode it.

An ASCII or Latin-1 terminal (``LANG=...ISO-8859-1``, ``PYTHONIOENCODING=ascii``) cannot show
``·``, ``×`` or ``↔``; printing ``?`` in their place turns ``8 × NVIDIA H800 · driver 535`` into
``8 ? NVIDIA H800 ? driver 535``. The ``pcidoc-ascii`` codec error handler writes ``8 x NVIDIA
H800 - driver 535`` instead, and ``?`` for any other character the stream cannot take.
"""

from __future__ import annotations

import codecs

HANDLER = "pcidoc-ascii"
"""Name of the codec error handler (``stream.reconfigure(errors=HANDLER)``)."""

FALLBACKS = {
    "·": "-",
    "×": "x",
    "↔": "<->",
    "→": "->",
    "←": "<-",
    "≤": "<=",
    "≥": ">=",
    "≈": "~",
    "±": "+/-",
    "…": "...",
    "–": "-",
    "—": "-",
    "•": "*",
    "✓": "ok",
    "µ": "u",
    "²": "2",
    "α": "alpha",
    "β": "beta",
    "\u00a0": " ",
}


def _fallback(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    chunk = error.object[error.start : error.end]
    return "".join(FALLBACKS.get(char, "?") for char in chunk), error.end


def register() -> str:
    """Register the handler once; returns its name."""
    try:
        codecs.lookup_error(HANDLER)
    except LookupError:
        codecs.register_error(HANDLER, _fallback)
    return HANDLER

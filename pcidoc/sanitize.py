"""Remove terminal control sequences from text that comes from outside pcidoc.

Pasted outputs, capture files, file names, process names and environment variables can carry
escape sequences that a terminal would execute: retitle the window or tmux pane (OSC 0/2),
write the clipboard (OSC 52), reset the terminal (``ESC c``), switch character sets
(``ESC ( 0``), query it (DCS), hide text (``CR``, backspace) or reorder it (Unicode bidi
overrides). pcidoc removes them **once, where the text enters**:

* :func:`clean_text` for a pasted text as a whole (keeps newlines and tabs);
* :func:`clean_line` for one value that must stay on one line (a GPU name, a file name);
* :func:`clean_data` for parsed JSON (captures, reports, profiler traces): every string,
  keys included, is cleaned as one line.

What is removed (ECMA-48 and xterm's control sequences, in 7-bit and 8-bit form):

* CSI ``ESC [`` / ``0x9b`` ... final byte (colours, cursor moves, queries);
* OSC ``ESC ]`` / ``0x9d``, DCS ``ESC P`` / ``0x90``, SOS ``ESC X`` / ``0x98``, PM ``ESC ^`` /
  ``0x9e`` and APC ``ESC _`` / ``0x9f`` strings up to BEL, ``ESC \\`` or ``0x9c`` (or the end of
  the line when unterminated);
* every other escape (``ESC c``, ``ESC 7``, ``ESC ( 0``, ``ESC # 8``...), a lone ``ESC``;
* C0 controls except tab and newline, DEL, C1 controls ``U+0080``-``U+009F``;
* Unicode bidirectional embedding/override/isolate controls (``U+202A``-``U+202E``,
  ``U+2066``-``U+2069``, ``U+200E``, ``U+200F``, ``U+061C``).

Clean text is then rendered as text (never as Rich console markup) by the presenters.
"""

from __future__ import annotations

import re

from pcidoc._lazyre import lazy

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "clean_data",
    "clean_line",
    "clean_text",
    "has_controls",
    "json_bytes_are_clean",
    "json_text_is_clean",
]

_SEQUENCE = lazy(
    # CSI: parameters, intermediates, final byte (missing when the text was cut).
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    # OSC, DCS, SOS, PM, APC strings, ended by BEL, ST (ESC \ or 0x9c) or the end of the line.
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    # Any other escape: intermediates then a final byte (ESC c, ESC 7, ESC ( 0, ESC # 8).
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
    # Remaining C0 controls (not tab/newline), DEL, C1 controls, bidi controls.
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
_LINE_BREAKS = lazy(r"[\t\n\u2028\u2029]")
# In JSON text, what could decode to a character clean_line changes: the escapes of C0/C1
# controls, DEL, tab/newline/CR/backspace/form feed, bidi controls and line separators, and
# those characters written raw (raw C0 controls can only be whitespace outside strings: JSON
# forbids them inside). A match may be a false alarm (an escaped backslash before "u0000"),
# never a miss.
_UNCLEAN_ESCAPE_PATTERN = (
    r"\\(?:[bfnrt]|u(?:00[01][0-9a-fA-F]|007[fF]|00[89][0-9a-fA-F]|061[cC]|200[eEfF]"
    r"|202[89a-eA-E]|206[6-9]))"
)
_JSON_UNCLEAN_ESCAPE = lazy(_UNCLEAN_ESCAPE_PATTERN)
_unclean_escape_bytes: re.Pattern[bytes] | None = None  # the same, for bytes; compiled on use
_RAW_UNCLEAN = lazy(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
    r"\u2028\u2029]"
)
_ASCII_CLEAN = bytes(range(0x20, 0x7F)) + b"\t\n\r"


def json_text_is_clean(text: str) -> bool:
    """True when no string of the JSON document ``text`` can hold anything :func:`clean_data`
    would change, so the parsed data need not be walked. Typical captures are ASCII without
    escapes: two C-speed passes over the text instead of a visit of every string."""
    if "\\" in text and _JSON_UNCLEAN_ESCAPE.search(text) is not None:
        return False
    if text.isascii():
        return not text.encode("ascii").translate(None, _ASCII_CLEAN)
    return _RAW_UNCLEAN.search(text) is None


def json_bytes_are_clean(data: bytes) -> bool:
    """:func:`json_text_is_clean` for a file not decoded yet: True when ``data`` is ASCII and
    holds nothing to clean. False for any other byte (the caller decodes the text and asks
    :func:`json_text_is_clean`), so an ASCII file, the usual capture, is never decoded or
    re-encoded on its way to the parser."""
    if not data.isascii() or data.translate(None, _ASCII_CLEAN):
        return False
    global _unclean_escape_bytes
    if b"\\" not in data:
        return True
    if _unclean_escape_bytes is None:
        _unclean_escape_bytes = re.compile(_UNCLEAN_ESCAPE_PATTERN.encode("ascii"))
    return _unclean_escape_bytes.search(data) is None


def has_controls(text: str) -> bool:
    """True when ``text`` holds anything :func:`clean_text` would remove."""
    return _SEQUENCE.search(text) is not None


def clean_text(text: str) -> str:
    """Remove control sequences from a multi-line text; keeps newlines and tabs.

    Windows line ends (``CR LF``) become ``LF``; any other carriage return is removed (it would
    let a line overwrite what was printed before it).
    """
    if text.isprintable():
        return text
    text = _no_surrogates(text)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return _SEQUENCE.sub("", text)


def clean_line(text: str) -> str:
    """Remove control sequences from a one-line value; line breaks and tabs become spaces.

    A file name's bytes that are not UTF-8 (which Python keeps as lone surrogates, and no UTF-8
    file or terminal can hold) become U+FFFD."""
    if text.isprintable():
        return text
    text = _SEQUENCE.sub("", _no_surrogates(text).replace("\r\n", " "))
    return _LINE_BREAKS.sub(" ", text)


def _no_surrogates(text: str) -> str:
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:  # b"\x9b" read as "\udc9b": back to the byte, then its replacement character
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def clean_data(node: Any) -> Any:
    """Clean every string (keys included) of parsed JSON with :func:`clean_line`.

    Returns the same object when nothing needed cleaning, otherwise a cleaned copy of the
    containers on the way to what changed.
    """
    if isinstance(node, str):
        return node if node.isprintable() else clean_line(node)
    if isinstance(node, list):
        return _clean_list(node)
    if isinstance(node, dict):
        return _clean_dict(node)
    return node


def _clean_list(node: list[Any]) -> list[Any]:
    out: list[Any] | None = None
    for pos, item in enumerate(node):
        if isinstance(item, str) and item.isprintable():
            continue
        if isinstance(item, (int, float, bool)) or item is None:
            continue
        cleaned = clean_data(item)
        if cleaned is not item:
            if out is None:
                out = list(node)
            out[pos] = cleaned
    return node if out is None else out


def _clean_dict(node: dict[Any, Any]) -> dict[Any, Any]:
    out: dict[Any, Any] | None = None
    for key, value in node.items():
        new_key = clean_data(key) if isinstance(key, str) else key
        new_value = value
        if not (isinstance(value, str) and value.isprintable()) and isinstance(
            value, (str, list, dict)
        ):
            new_value = clean_data(value)
        if new_key is not key or new_value is not value:
            if out is None:
                out = _copied_before(node, key)
            out[new_key] = new_value
        elif out is not None:
            out[new_key] = new_value
    return node if out is None else out


def _copied_before(node: dict[Any, Any], stop: Any) -> dict[Any, Any]:
    """The items of ``node`` before the key ``stop`` (unchanged), in order."""
    out: dict[Any, Any] = {}
    for k, v in node.items():
        if k is stop:
            break
        out[k] = v
    return out

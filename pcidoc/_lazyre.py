"""Regular expressions compiled on first use.

A module that knows many patterns but needs few of them in one run (the importer's formats,
redaction, terminal-control cleaning) keeps its import cheap: ``re.compile`` costs 10-300 µs a
pattern, and start-up is measured in tens of milliseconds (docs/performance.md).

A pattern that starts with plain characters (``H100 (\\d+GB )?PCIE``, ``\\bMI250X``) cannot match
a text without them, so a text that lacks them gets "no match" without compiling the pattern: the
GPU model table tries ~45 name patterns in order, and compiling them all cost ~5 ms of every
``pcidoc check`` on a GPU whose pattern comes late.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

_SPECIAL = frozenset("\\.^$*+?{}[]|()")
_OPTIONAL_NEXT = frozenset("*?{")


def required_text(pattern: str, flags: int = 0) -> str:
    """Plain characters every match of ``pattern`` contains ("" when none can be told cheaply).

    The characters before the pattern's first special one, once leading ``^``, ``\\A`` and
    ``\\b`` (which match no character) are skipped; the last of them is dropped when a
    quantifier that allows zero (``*``, ``?``, ``{``) follows it. Patterns with flags or with
    ``|`` anywhere get "" (no shortcut).
    """
    if flags or not isinstance(pattern, str) or "|" in pattern:
        return ""
    start = 0
    while True:
        if pattern.startswith("^", start):
            start += 1
        elif pattern.startswith(("\\A", "\\b"), start):
            start += 2
        else:
            break
    end = start
    while end < len(pattern) and pattern[end] not in _SPECIAL:
        end += 1
    if end < len(pattern) and pattern[end] in _OPTIONAL_NEXT:
        end -= 1
    return pattern[start:end] if end > start else ""


class LazyPattern:
    """A regular expression compiled on first use; the ``re.Pattern`` methods pcidoc calls.

    A text without the pattern's :func:`required_text` gets "no match" without compiling it.
    """

    __slots__ = ("_compiled", "_flags", "_pattern", "_required")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._pattern = pattern
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None
        self._required = required_text(pattern, flags)

    def _cannot_match(self, text: str) -> bool:
        return self._compiled is None and bool(self._required) and self._required not in text

    @property
    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern."""
        if self._compiled is None:
            self._compiled = re.compile(self._pattern, self._flags)
        return self._compiled

    def match(self, text: str) -> re.Match[str] | None:
        """``re.Pattern.match``."""
        if self._cannot_match(text):
            return None
        return self.compiled.match(text)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        """``re.Pattern.fullmatch``."""
        if self._cannot_match(text):
            return None
        return self.compiled.fullmatch(text)

    def search(self, text: str) -> re.Match[str] | None:
        """``re.Pattern.search``."""
        if self._cannot_match(text):
            return None
        return self.compiled.search(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """``re.Pattern.finditer``."""
        if self._cannot_match(text):
            return iter(())
        return self.compiled.finditer(text)

    def findall(self, text: str) -> list[Any]:
        """``re.Pattern.findall``."""
        if self._cannot_match(text):
            return []
        return self.compiled.findall(text)

    def sub(self, replacement: str | Callable[[re.Match[str]], str], text: str) -> str:
        """``re.Pattern.sub``."""
        if self._cannot_match(text):
            return text
        return self.compiled.sub(replacement, text)


_CREATED: list[tuple[str, LazyPattern]] = []
"""Every pattern made by :func:`lazy`, with the module that made it (tests walk them)."""


def lazy(pattern: str, flags: int = 0) -> LazyPattern:
    """A :class:`LazyPattern` (drop-in for ``re.compile``).

    The pattern is also recorded with the name of the calling module, so tests can check every
    pattern a package uses (``tests/importers/test_regex_linear.py`` feeds each one long runs
    of whitespace and long tokens).
    """
    made = LazyPattern(pattern, flags)
    _CREATED.append((sys._getframe(1).f_globals.get("__name__", "?"), made))
    return made


def created(prefix: str = "") -> list[tuple[str, LazyPattern]]:
    """``(module name, pattern)`` of every :func:`lazy` pattern made by a module whose name
    starts with ``prefix``, in the order they were made."""
    return [(module, made) for module, made in _CREATED if module.startswith(prefix)]


def source(made: LazyPattern) -> tuple[str, int]:
    """The pattern text and flags of a :class:`LazyPattern` (without compiling it)."""
    return made._pattern, made._flags

"""Regular expressions compiled on first use.

A module that knows many patterns but needs few of them in one run (the importer's formats,
redaction, terminal-control cleaning) keeps its import cheap: ``re.compile`` costs 10-300 µs a
pattern, and start-up is measured in tens of milliseconds (docs/performance.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any


class LazyPattern:
    """A regular expression compiled on first use; the ``re.Pattern`` methods pcidoc calls."""

    __slots__ = ("_compiled", "_flags", "_pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._pattern = pattern
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern."""
        if self._compiled is None:
            self._compiled = re.compile(self._pattern, self._flags)
        return self._compiled

    def match(self, text: str) -> re.Match[str] | None:
        """``re.Pattern.match``."""
        return self.compiled.match(text)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        """``re.Pattern.fullmatch``."""
        return self.compiled.fullmatch(text)

    def search(self, text: str) -> re.Match[str] | None:
        """``re.Pattern.search``."""
        return self.compiled.search(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """``re.Pattern.finditer``."""
        return self.compiled.finditer(text)

    def findall(self, text: str) -> list[Any]:
        """``re.Pattern.findall``."""
        return self.compiled.findall(text)

    def sub(self, replacement: str | Callable[[re.Match[str]], str], text: str) -> str:
        """``re.Pattern.sub``."""
        return self.compiled.sub(replacement, text)


def lazy(pattern: str, flags: int = 0) -> LazyPattern:
    """A :class:`LazyPattern` (drop-in for ``re.compile``)."""
    return LazyPattern(pattern, flags)

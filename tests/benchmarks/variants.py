#!/usr/bin/env python3
"""Source trees of pcidoc without one of its start-up helpers, for ``ab.py``: prints the paths.

Usage::

    .venv/bin/python tests/benchmarks/variants.py /tmp/pcidoc-variants [--commit HEAD]
    .venv/bin/python tests/benchmarks/ab.py --before /tmp/pcidoc-variants/base \\
        --tree recache=/tmp/pcidoc-variants/recache --tree eager=/tmp/pcidoc-variants/eager \\
        --tree dataclasses=/tmp/pcidoc-variants/dataclasses --tui --rounds 15

Each tree is ``git archive`` of the commit's ``pcidoc/`` and ``tests/benchmarks/`` (the repository
is only read), with one edit:

* ``base``: none.
* ``recache``: every :func:`pcidoc._lazyre.lazy` pattern goes through ``re``'s own cache at each
  call, as ``re.search(PATTERN, text)`` at the call site would (compiled on first use, then a
  cache look-up per call; no "lacks the leading text" shortcut).
* ``eager``: every pattern is compiled when it is made, as a module-level ``re.compile`` is.
* ``dataclasses``: :func:`pcidoc._record.record` and ``field`` are ``dataclasses.dataclass`` and
  ``dataclasses.field``.

The edits are for measuring only; the trees pass no tests of their own helpers.
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_RECACHE = '''

class _ReCache(LazyPattern):
    """Variant: ``re``'s own cache at every call."""

    __slots__ = ()

    @property
    def compiled(self) -> re.Pattern[str]:
        return re.compile(self._pattern, self._flags)

    def _cannot_match(self, text: str) -> bool:
        return False


LazyPattern = _ReCache  # type: ignore[misc]
'''

_EAGER = '''

class _Eager(LazyPattern):
    """Variant: compiled when made."""

    __slots__ = ()

    def __init__(self, pattern: str, flags: int = 0) -> None:
        super().__init__(pattern, flags)
        self._compiled = re.compile(pattern, flags)


LazyPattern = _Eager  # type: ignore[misc]
'''

_DATACLASSES = """

from dataclasses import dataclass as record  # noqa: E402
from dataclasses import field  # noqa: E402
from dataclasses import fields as _fields  # noqa: E402


def field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in _fields(cls))  # type: ignore[arg-type]
"""

EDITS = {
    "base": None,
    "recache": ("pcidoc/_lazyre.py", _RECACHE),
    "eager": ("pcidoc/_lazyre.py", _EAGER),
    "dataclasses": ("pcidoc/_record.py", _DATACLASSES),
}


def make(folder: Path, commit: str) -> dict[str, Path]:
    """Write every variant tree under ``folder`` (replacing files already there)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", commit, "pcidoc", "tests/benchmarks"],
        capture_output=True,
        check=True,
    ).stdout
    made: dict[str, Path] = {}
    for name, edit in EDITS.items():
        tree = folder / name
        tree.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tree, filter="data")
        if edit is not None:
            path, text = edit
            with (tree / path).open("a", encoding="utf-8") as handle:
                handle.write(text)
        made[name] = tree
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--commit", default="HEAD")
    args = parser.parse_args()
    for name, tree in make(args.folder, args.commit).items():
        print(f"{name}={tree}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

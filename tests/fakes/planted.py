"""A folder another user has prepared for root: modules that must never be imported from it.

``plant(folder)`` writes a ``pcidoc/`` package, ``torch.py``, ``json.py``, ``runpy.py`` and a
``multiprocessing/`` package that each leave a marker file when imported (and then fail), and
an executable ``python3`` that leaves one when run. The tests run pcidoc's children with this
folder as the current folder and check that no marker appears.
"""

from __future__ import annotations

from pathlib import Path

MODULES = ("pcidoc/__init__.py", "torch.py", "json.py", "runpy.py", "multiprocessing/__init__.py")


def plant(folder: Path) -> Path:
    """Fill ``folder`` with the trap; returns the marker folder (empty while nothing ran)."""
    markers = folder / "ran"
    markers.mkdir(parents=True)
    for index, name in enumerate(MODULES):
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"open({str(markers / f'module{index}')!r}, 'w').write({name!r})\n"
            "raise SystemExit('planted module imported')\n"
        )
    script = folder / "python3"
    script.write_text(f"#!/bin/sh\necho python3 > {markers / 'python3'}\nexit 0\n")
    script.chmod(0o755)
    return markers


def ran(markers: Path) -> list[str]:
    """What of the trap ran (file contents of the markers)."""
    return sorted(p.read_text() for p in markers.iterdir())

"""Bundled sample machines for ``pcidoc --demo`` and ``pcidoc samples``.

Each real sample is a capture built with ``pcidoc import`` from the outputs of ONE real machine
posted publicly (``origin.sources`` cite the thread); the synthetic ones are generated for scale
tests and say so. ``index.json`` lists them; ``tools/build_samples.py`` rebuilds everything and
marks as default the real sample with the most to diagnose.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pcidoc.errors import PcidocError
from pcidoc.model.capture import Capture, SampleInfo
from pcidoc.model.compiled import core

DATA_DIR = Path(__file__).resolve().parent / "data"
INDEX_FILE = DATA_DIR / "index.json"


@lru_cache(maxsize=1)
def _index() -> list[dict[str, object]]:
    try:
        # The models' JSON parser (loaded anyway to read the sample): not the json module.
        entries = core().from_json(INDEX_FILE.read_bytes())
    except (OSError, ValueError) as exc:  # a broken install, not user input
        raise PcidocError(f"bundled samples are missing or damaged ({INDEX_FILE}: {exc})") from None
    return list(entries)


def list_samples() -> list[SampleInfo]:
    """The bundled samples, real ones first."""
    return [
        SampleInfo(name=str(e["name"]), title=str(e["title"]), summary=e.get("summary"))  # type: ignore[arg-type]
        for e in _index()
    ]


def sample_names() -> list[str]:
    """Names accepted by ``--demo``."""
    return [str(e["name"]) for e in _index()]


def default_demo() -> str:
    """The sample ``--demo`` opens without a name: the real one with the most to diagnose."""
    for entry in _index():
        if entry.get("default"):
            return str(entry["name"])
    return str(_index()[0]["name"])


def sample_path(name: str) -> Path:
    """File of the sample called ``name``.

    Raises:
        PcidocError: no such sample (the message lists the names).
    """
    for entry in _index():
        if entry["name"] == name:
            return DATA_DIR / str(entry["file"])
    raise PcidocError(f"--demo {name}: no such sample; choose one of: {', '.join(sample_names())}")


def load_sample(name: str) -> Capture:
    """Load a bundled sample capture by name."""
    from pcidoc.collect.capture import load_capture

    return load_capture(sample_path(name))

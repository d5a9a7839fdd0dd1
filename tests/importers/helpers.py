"""Helpers shared by the importer tests."""

from __future__ import annotations

from pcidoc.collect.importers import import_texts
from pcidoc.model.capture import Capture


def load(*texts: str, names: list[str] | None = None) -> Capture:
    """Import snippets as files ``t0.txt, t1.txt...`` (or ``names``); checks the JSON round trip."""
    labels = names or [f"t{i}.txt" for i in range(len(texts))]
    capture = import_texts(list(zip(labels, texts, strict=True))).capture
    again = Capture.model_validate_json(capture.model_dump_json(by_alias=True))
    assert again == capture
    return capture


def warnings_of(capture: Capture) -> str:
    """All warnings of a capture as one searchable string."""
    return "\n".join(capture.origin.warnings)

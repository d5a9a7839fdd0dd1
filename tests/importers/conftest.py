"""Importer tests see parser bugs as exceptions (in production they become warnings)."""

from __future__ import annotations

import pytest

from pcidoc.collect.importers import scan


@pytest.fixture(autouse=True)
def _strict_parsers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan, "RAISE_PARSER_ERRORS", True)

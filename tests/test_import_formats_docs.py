"""One list of import formats: the importer's table, ``pcidoc import --help``, the README and
docs/import.md name the same format ids (issue 22: the help listed fewer than the README)."""

from __future__ import annotations

import re
from pathlib import Path

from pcidoc.cli import build_parser
from pcidoc.collect.import_formats import SUPPORTED_FORMATS
from pcidoc.collect.importers import SUPPORTED_FORMATS as IMPORTER_FORMATS

ROOT = Path(__file__).resolve().parents[1]


def _import_help() -> str:
    parser = build_parser("import")
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices["import"].format_help()  # type: ignore[attr-defined, no-any-return]


def test_importer_uses_the_one_table() -> None:
    assert IMPORTER_FORMATS is SUPPORTED_FORMATS


def test_import_help_lists_every_format() -> None:
    text = _import_help()
    missing = [
        fmt for fmt in SUPPORTED_FORMATS if not re.search(rf"^  {re.escape(fmt)}\s", text, re.M)
    ]
    assert not missing, missing


def test_readme_lists_every_format_and_no_other() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("`pcidoc import` reads")
    listed = re.findall(r"`([\w-]+)`", readme[start : readme.index("\n\n", start)])
    assert [f for f in listed if f not in ("pcidoc",)] == [*SUPPORTED_FORMATS]


def test_import_doc_table_has_a_row_per_format() -> None:
    doc = (ROOT / "docs" / "import.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `([\w-]+)` \|", doc, re.M))
    assert set(SUPPORTED_FORMATS) <= rows, set(SUPPORTED_FORMATS) - rows

"""The one table of formats (issue 27 item 4): every reader it names exists and has the face
of its kind, and what is derived from it (the scan order, the whole-text and JSON readers, the
merge names, the help) follows it. docs/catalogue.md ("Adding a format") says how a format is
added; these tests are what keeps a new row honest."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from pcidoc.collect import import_formats
from pcidoc.collect.import_formats import FORMATS, JSON, KINDS, SECTION, TEXT, readers
from pcidoc.collect.importers import _parse_text, import_texts, scan
from pcidoc.collect.importers.merge import SHORT_NAMES
from pcidoc.model.evidence import ImportedEvidence
from tests.conftest import SHARED

ROOT = Path(__file__).resolve().parents[2]
PARAMETERS = {
    SECTION: (["doc", "index", "ctx"], ["doc", "start", "ctx"]),
    TEXT: (None, ["doc", "ctx"]),
    JSON: (["data"], ["data", "ctx"]),
}
"""The face of each kind: detector and parser parameters (None: no detector)."""


def test_ids_are_unique_and_every_format_is_read_or_made() -> None:
    ids = [fmt.id for fmt in FORMATS]
    assert len(ids) == len(set(ids))
    for fmt in FORMATS:
        assert fmt.title and fmt.short
        assert bool(fmt.readers) != bool(fmt.made_by), fmt.id
        if fmt.made_by:
            assert fmt.made_by in ids


@pytest.mark.parametrize(
    ("fmt", "reader"), [(f.id, r) for f in FORMATS for r in f.readers], ids=repr
)
def test_every_reader_resolves_to_functions_of_its_kind(fmt: str, reader: object) -> None:
    assert reader.kind in KINDS  # type: ignore[attr-defined]
    detector, parser = reader.functions()  # type: ignore[attr-defined]
    wanted_detector, wanted_parser = PARAMETERS[reader.kind]  # type: ignore[attr-defined]
    assert list(inspect.signature(parser).parameters)[:2] == wanted_parser[:2], fmt
    if wanted_detector is None:
        assert detector is None, fmt
    else:
        assert list(inspect.signature(detector).parameters) == wanted_detector, fmt


def test_the_scanner_tries_the_section_formats_in_table_order() -> None:
    assert [fmt for fmt, _, _ in scan.PARSERS] == [fmt for fmt, _ in readers(SECTION)]
    assert [(d, p) for _, d, p in scan.PARSERS] == [r.functions() for _, r in readers(SECTION)]


def test_merge_names_and_the_help_list_come_from_the_table() -> None:
    assert SHORT_NAMES is import_formats.SHORT_NAMES
    assert list(SHORT_NAMES) == [fmt.id for fmt in FORMATS]
    assert list(import_formats.SUPPORTED_FORMATS.items()) == [(f.id, f.title) for f in FORMATS]


def test_evidence_fields_named_in_the_table_exist_and_cover_the_model() -> None:
    fields = set(ImportedEvidence.model_fields)
    named = {name for fmt in FORMATS for name in fmt.evidence}
    assert named <= fields, named - fields
    live_only = {"topo_file_env", "topo_file_error"}
    assert fields - named == live_only


def _corpus() -> list[Path]:
    return sorted(
        p
        for folder in ("realdata", "realdata-evidence")
        if (SHARED / folder).is_dir()
        for p in (SHARED / folder).rglob("*")
        if p.is_file() and p.suffix != ".md"
    )


def test_fragments_fill_only_the_evidence_their_format_names() -> None:
    files = _corpus()
    if not files:
        pytest.skip("the corpus ../shared is not beside this checkout")
    declared = {fmt.id: set(fmt.evidence) for fmt in FORMATS}
    made_by = {fmt.id: fmt.made_by for fmt in FORMATS if fmt.made_by}
    seen: set[str] = set()
    for path in files:
        result = _parse_text(str(path), path.read_text(encoding="utf-8", errors="replace"))
        for frag in result.fragments:
            assert frag.fmt in declared, (path.name, frag.fmt)
            filled = {
                name
                for name, value in frag.evidence
                if value and name not in ("topo_file_env", "topo_file_error")
            }
            owner = made_by.get(frag.fmt, frag.fmt)
            assert filled <= declared[frag.fmt] | declared[owner], (path.name, frag.fmt, filled)
            seen.add(frag.fmt)
    assert len(seen) >= 20, sorted(seen)


def test_the_help_table_loads_no_importer() -> None:
    code = (
        "import sys\n"
        "from pcidoc.collect.import_formats import SUPPORTED_FORMATS, FORMATS\n"
        "assert len(SUPPORTED_FORMATS) == len(FORMATS)\n"
        "print(sorted(m for m in sys.modules if m.startswith('pcidoc.collect.importers')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_a_reader_that_fails_loses_only_its_own_format(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(doc: object, ctx: object) -> list[object]:
        raise RuntimeError("a bug")

    reader = next(r for fmt, r in readers(TEXT) if fmt == "nccl-log")
    monkeypatch.setattr(scan, "RAISE_PARSER_ERRORS", False)
    monkeypatch.setattr(reader, "_resolved", (None, broken))
    text = (
        "h:1:2 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n"
        "[ 12.3] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.\n"
    )
    result = import_texts([("paste.txt", text)])
    assert "kernel-log" in result.capture.origin.sources[0].formats
    assert "nccl-log" not in result.capture.origin.sources[0].formats
    assert any("NCCL log: could not be read (RuntimeError)" in w for w in result.warnings)

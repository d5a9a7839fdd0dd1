"""Every catalogue entry matches its example lines and not its counter-examples (issue 27: a
test per entry), and the catalogue is what docs/catalogue.md says it is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pcidoc import catalogue
from pcidoc.catalogue.lines import read_line
from pcidoc.collect.importers import import_texts
from pcidoc.doctor.registry import CHECK_IDS
from pcidoc.doctor.runner import run
from pcidoc.model.report import ReportSource

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = catalogue.catalogue().entries
IDS = [entry.id for entry in ENTRIES]


def _entry(entry_id: str) -> catalogue.Entry:
    found = catalogue.entry(entry_id)
    assert found is not None
    return found


def diagnose(text: str, only: str | None = None) -> dict[str, tuple[str, str]]:
    """check id -> (severity, summary) of a pasted text."""
    capture = import_texts([("paste.txt", text)]).capture
    report = run(
        capture,
        ReportSource(kind="import", path="paste.txt"),
        only=[only] if only else [],
        generated_at="2000-01-01T00:00:00Z",
    )
    return {c.id: (c.severity, c.summary) for c in report.checks}


def test_the_catalogue_has_entries_of_every_family_file() -> None:
    families = {path.stem for path in catalogue.DATA.glob("*.toml")}
    assert families <= {entry.family for entry in ENTRIES}
    assert len(IDS) == len(set(IDS))


@pytest.mark.parametrize("entry_id", IDS)
def test_entry_is_complete(entry_id: str) -> None:
    entry = _entry(entry_id)
    assert entry.check in CHECK_IDS
    assert entry.examples, "an entry needs a line that must match"
    assert entry.not_examples, "an entry needs a line that must not match"
    assert entry.source.strip() and entry.meaning.strip() and entry.fix.strip()
    assert entry.example_source, "say where the example comes from (a thread, or synthetic)"
    assert all(marker.strip() for marker in entry.markers)
    assert entry.confidence in catalogue.CONFIDENCES


@pytest.mark.parametrize("entry_id", IDS)
def test_examples_match_and_counter_examples_do_not(entry_id: str) -> None:
    entry = _entry(entry_id)
    for example in entry.examples:
        assert any(marker in example for marker in entry.markers), example
        assert entry.pattern.search(example), f"the pattern does not find {example!r}"
        if not _owned_by_reader(entry, example):
            hit = catalogue.match_line(example)
            assert hit is not None and not hit.mention, f"{example!r} is not read as evidence"
            assert hit.entry.id == entry.id, f"{example!r} is claimed by {hit.entry.id}"
        elif not entry.benign:
            severity, summary = diagnose(example, entry.check)[entry.check]
            assert severity not in ("pass", "skip"), (example, severity, summary)
    for counter in entry.not_examples:
        hit = catalogue.match_line(counter)
        assert hit is None or hit.mention or hit.entry.id != entry.id, counter


def _owned_by_reader(entry: catalogue.Entry, example: str) -> bool:
    """Whether a structured reader, not the catalogue, reads ``example`` (an entry with a
    ``reader_shape`` leaves only lines of that shape to its reader)."""
    if entry.reader is None:
        return False
    return entry.reader_shape is None or read_line(example).shaped(entry.reader_shape)


def _matched_examples(entry: catalogue.Entry) -> list[str]:
    return [example for example in entry.examples if not _owned_by_reader(entry, example)]


@pytest.mark.parametrize(
    "entry_id", [e.id for e in ENTRIES if _matched_examples(e) and not e.benign]
)
def test_each_example_alone_is_a_diagnosis(entry_id: str) -> None:
    """An error line alone is a diagnosis: reported by the entry's check, not "nothing
    recognised"."""
    entry = _entry(entry_id)
    severity, summary = diagnose(_matched_examples(entry)[0], entry.check)[entry.check]
    expected = {"fail": "fail", "warn": "warn", "info": "info"}
    assert severity in (expected[entry.severity], "warn", "fail", "info"), summary
    assert entry.title in summary


def test_lookup_gives_the_name_and_the_rows_severity() -> None:
    hit = catalogue.scan(
        ["n1:1:2 [0] NCCL WARN NET/IB : Got completion from peer 1.2.3.4<5> with error 12, "
         "opcode 0, len 0, vendor err 129 (Recv)"]
    ).hits[0]  # fmt: skip
    verdict = catalogue.judge(hit)
    assert verdict is not None
    assert verdict.detail == "status 12 = IBV_WC_RETRY_EXC_ERR; vendor err 129 = 0x81"
    assert "retry counter exceeded" in verdict.meaning
    assert verdict.severity == "fail"
    flushed = catalogue.scan(["NCCL WARN NET/IB : Got completion with error 5, opcode 1"]).hits[0]
    assert catalogue.judge(flushed).severity == "warn"  # type: ignore[union-attr]


def test_identical_lines_are_counted_once_with_their_first_line_number() -> None:
    line = "n1:1:2 [0] NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory"
    scan = catalogue.scan(["hello", line, line, "n2:1:2 [0] NCCL WARN Call to ibv_reg_mr failed"])
    assert [(h.line, h.count, h.host) for h in scan.hits] == [(2, 2, "n1"), (4, 1, "n2")]


def test_docs_table_is_fresh() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "catalogue_table.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_broken_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text('[[entry]]\nid = "x"\ntitle = "t"\n')
    with pytest.raises(catalogue.CatalogueError, match="missing"):
        catalogue.catalogue(tmp_path)

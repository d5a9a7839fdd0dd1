"""Engine features the CUDA, NVML and fabric families need: ``not_shape`` (a line another
family's program printed is not this entry's evidence, nor a mention), lookups by a row's other
spellings, and markers that overlap between entries."""

from __future__ import annotations

from pathlib import Path

import pytest

from pcidoc import catalogue

ENTRY = """
[[entry]]
id = "{id}"
title = "t"
markers = [{markers}]
pattern = '''{pattern}'''
severity = "fail"
meaning = "m"
fix = "f"
source = "s"
{extra}
"""


def folder(tmp_path: Path, *entries: str) -> catalogue.Catalogue:
    (tmp_path / "x.toml").write_text("".join(entries))
    return catalogue.catalogue(tmp_path)


def test_not_shape_leaves_the_line_to_its_own_family(tmp_path: Path) -> None:
    cat = folder(
        tmp_path,
        ENTRY.format(id="a.cuda", markers='"out of memory"', pattern="out of memory",
                     extra='not_shape = "nccl"'),
    )  # fmt: skip
    assert (
        catalogue.match_line("n1:1:9 [0] NCCL WARN Cuda failure 'out of memory'", cat=cat) is None
    )
    plain = catalogue.match_line("RuntimeError: CUDA error: out of memory", cat=cat)
    assert plain is not None and not plain.mention


def test_not_shape_must_be_a_packaging(tmp_path: Path) -> None:
    with pytest.raises(catalogue.CatalogueError, match="not one of the allowed values"):
        folder(
            tmp_path,
            ENTRY.format(id="a.b", markers='"x"', pattern="x", extra='not_shape = "message"'),
        )


def test_overlapping_markers_of_two_entries_both_count(tmp_path: Path) -> None:
    cat = folder(
        tmp_path,
        ENTRY.format(id="a.long", markers='"an illegal memory access was encountered"',
                     pattern="NEVER", extra=""),
        ENTRY.format(id="a.short", markers='"illegal memory access"',
                     pattern="illegal memory access", extra=""),
        ENTRY.format(id="a.overlap", markers='"access was encountered now"',
                     pattern="encountered now", extra=""),
    )  # fmt: skip
    hit = catalogue.match_line("CUDA error: an illegal memory access was encountered", cat=cat)
    assert hit is not None and hit.entry.id == "a.short"
    hit = catalogue.match_line("x: an illegal memory access was encountered now", cat=cat)
    assert hit is not None and hit.entry.id in ("a.short", "a.overlap")
    found = catalogue._candidates(cat, "an illegal memory access was encountered now")
    assert {e.id for e in found} == {"a.long", "a.short", "a.overlap"}


def test_a_lookup_finds_a_row_by_its_other_spellings() -> None:
    rows = catalogue.table("nvml_return")
    assert catalogue.lookup("nvml_return", "15") == ("15", rows["15"])
    assert catalogue.lookup("nvml_return", "NVMLError_GpuIsLost") == ("15", rows["15"])
    assert catalogue.lookup("nvml_return", "gpu is lost.") == ("15", rows["15"])
    assert catalogue.lookup("nvml_return", "Unknown") is None


def test_carrier_is_true_or_false(tmp_path: Path) -> None:
    cases = (("true", True), ("false", True), ('"yes"', False), ("1", False))
    for n, (value, ok) in enumerate(cases):
        entry = ENTRY.format(id="a.b", markers='"x"', pattern="x", extra=f"carrier = {value}")
        (tmp_path / str(n)).mkdir()
        if ok:
            assert folder(tmp_path / str(n), entry).entries[0].carrier is (value == "true")
        else:
            with pytest.raises(catalogue.CatalogueError, match="carrier is true or false"):
                folder(tmp_path / str(n), entry)

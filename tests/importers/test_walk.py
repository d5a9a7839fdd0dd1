"""The one line walker of the importers (pcidoc/collect/importers/walk.py)."""

from __future__ import annotations

from typing import Any

from pcidoc.collect.importers.text import Doc
from pcidoc.collect.importers.walk import LAST, Walker, each_line, first_line


def _doc(*lines: str, commands: dict[int, str] | None = None) -> Doc:
    marks = [None] * len(lines)
    for index, command in (commands or {}).items():
        marks[index] = command  # type: ignore[call-overload]
    return Doc(name="x", lines=list(lines), commands=marks)


def _word(seen: list[str], line: str, index: int) -> Any:
    if line == "end":
        return None
    if line == "last":
        return LAST
    if not line.isalpha():
        return False
    seen.append(line)
    return True


def test_a_section_ends_at_a_line_no_handler_claims_a_command_or_too_many_blanks() -> None:
    doc = _doc("a", "b", "", "c", "1", "d")
    seen: list[str] = []
    assert Walker(blank_lines=1).walk(doc, 0, seen, (_word,)) == 4 and seen == ["a", "b", "c"]
    seen = []
    assert Walker().walk(doc, 0, seen, (_word,)) == 2 and seen == ["a", "b"]
    doc = _doc("a", "b", "c", commands={1: "nvidia-smi"})
    seen = []
    assert Walker().walk(doc, 0, seen, (_word,)) == 1
    seen = []
    Walker(commands="read").walk(doc, 0, seen, (_word,))
    assert seen == ["a", "b", "c"]


def test_answers_end_the_section_before_or_after_the_line() -> None:
    seen: list[str] = []
    assert Walker().walk(_doc("a", "end", "b"), 0, seen, (_word,)) == 1
    assert Walker().walk(_doc("a", "last", "b"), 0, seen, (_word,)) == 2


def test_after_blank_lines_the_section_goes_on_only_where_resume_says() -> None:
    doc = _doc("a", "", "", "b", "", "c")
    seen: list[str] = []

    def only_after_two(state: object, index: int, blanks: int) -> bool:
        return blanks == 2

    assert Walker(blank_lines=None, resume=only_after_two).walk(doc, 0, seen, (_word,)) == 4
    assert seen == ["a", "b"]


def test_whole_text_walks_pass_over_other_lines_and_stop_where_asked() -> None:
    doc = _doc("a", "1", "", "b", "2", "c")
    seen: list[str] = []
    each_line(doc, seen, _word, start=1, stop=5)
    assert seen == ["b"]
    assert first_line(doc, str.isdigit) == 1 and first_line(doc, str.isdigit, limit=1) is None


def test_a_value_out_of_range_skips_its_line_and_is_named_once() -> None:
    def number(total: list[int], line: str, index: int) -> bool:
        total.append(int(line))  # raises past 4,300 digits
        return True

    lines = ["1", "9" * 5000, "2", *(["9" * 5000] * 7), "3"]
    total: list[int] = []
    walker = each_line(_doc(*lines), total, number)
    assert total == [1, 2, 3]
    note = walker.bad_values_note("fmt")
    assert note == (
        "fmt: 8 line(s) with a value out of range skipped (line 2, 4, 5, 6, 7 and 3 more); "
        "the rest was read"
    )
    assert Walker().bad_values_note("fmt") is None

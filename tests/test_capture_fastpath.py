"""Loading a capture in one step (``pydantic_core`` parses and validates the text) must give what
the strict path gives (``json.loads`` with NaN/overflow refused, schema checks, validation), and
must step aside for every text the strict path refuses or treats differently."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from pcidoc.cli import main
from pcidoc.collect.capture import (
    _parse_json,
    _strings_parsed,
    _strings_written,
    _validate_current_capture,
    capture_from_data,
    dump_json,
    load_capture,
)
from pcidoc.errors import PcidocError
from pcidoc.samples import sample_names, sample_path
from tests.builders import machine
from tests.conftest import CORPUS_MISSING

ROOT = Path(__file__).resolve().parent.parent
REALDATA = ROOT.parent / "shared" / "realdata"


def _strict(text: str) -> Any:
    """The strict path's capture, or its error message."""
    try:
        return capture_from_data(_parse_json(text, "x.json"), "x.json")
    except PcidocError as exc:
        return str(exc)


def _assert_same(text: str) -> bool:
    """Whether the one-step path took ``text``; fails when it took it and differs."""
    fast = _validate_current_capture(text)
    if text.isascii():  # an ASCII file reaches the one-step path as its bytes
        from_bytes = _validate_current_capture(text.encode("ascii"))
        assert (from_bytes is None) == (fast is None)
        assert from_bytes == fast
    if fast is None:
        return False
    strict = _strict(text)
    assert not isinstance(strict, str), f"one-step path accepted what strict refuses: {strict}"
    assert fast == strict
    assert fast.model_fields_set == strict.model_fields_set
    assert dump_json(fast) == dump_json(strict)
    return True


@pytest.mark.parametrize("name", sample_names())
def test_every_bundled_sample_loads_in_one_step_and_equal(name: str) -> None:
    text = sample_path(name).read_text(encoding="utf-8")
    assert _assert_same(text)
    assert load_capture(sample_path(name)) == _strict(text)


def test_imported_real_machines_load_in_one_step_and_equal(tmp_path: Path) -> None:
    files = sorted(p for p in REALDATA.rglob("*.txt"))[:40]
    if not files:
        pytest.skip(CORPUS_MISSING)
    taken = 0
    for i, source in enumerate(files):
        target = tmp_path / f"{i}.json"
        if main(["import", str(source), "-o", str(target)]) != 0:
            continue
        taken += _assert_same(target.read_text(encoding="utf-8"))
    assert taken >= len(files) // 2


# Raw JSON tokens put where a value was (json.dumps cannot write most of them).
_TOKENS = [
    "1e400",
    "-1E+0400",
    "2e308",
    "1" + "0" * 250 + "e99",
    "1" + "0" * 400,
    "NaN",
    "-Infinity",
    "Infinity",
    "1e-400",
    "0.1",
    "-0.0",
    "12345678901234567890123",
    "1.5",
    "7",
    "true",
    "null",
    '"x"',
    '"\\ud800"',
    '"NVIDIA H100"',
    "[]",
    "{}",
    '"pcidoc.capture/2"',
    '"pcidoc.report/1"',
    '"2023-11-14T22:13:20Z"',
    '"SYS"',
    '"NV12"',
    "-1",
    '"16.0 GT/s"',
    '"1"',
    "1.0",
    '"a\\"b"',
    '"ends in a backslash \\\\"',
    '"\\\\\\"q\\\\"',
    '"\\u0022"',
]


def _leaves(node: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _leaves(v, (*path, k))] + [path]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _leaves(v, (*path, i))] + [path]
    return [path]


def _set(node: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    node[path[0]] = _set(node[path[0]], path[1:], value)
    return node


def _mutated(base: dict, rng: random.Random) -> str:
    data = json.loads(json.dumps(base))
    marks = {}
    for n in range(rng.randint(1, 3)):
        path = rng.choice(_leaves(data))
        action = rng.random()
        if action < 0.15 and path:
            parent = data
            for part in path[:-1]:
                parent = parent[part]
            del parent[path[-1]]
            continue
        mark = f"@@{n}@@"
        marks[f'"{mark}"'] = rng.choice(_TOKENS)
        data = _set(data, path, mark)
    text = json.dumps(data, indent=rng.choice([None, 2]))
    for mark, token in marks.items():
        text = text.replace(mark, token)
    return text


def test_random_damage_never_lets_the_one_step_path_differ() -> None:
    base = json.loads(dump_json(machine(2, link="NV4", nics=["NIC0"], numa_nodes=2)))
    rng = random.Random(20261124)
    taken = refused = 0
    for _ in range(1500):
        text = _mutated(base, rng)
        if _assert_same(text):
            taken += 1
        elif isinstance(_strict(text), str):
            refused += 1
    # Both outcomes were exercised: accepted damage (a valid other value) and refused damage.
    assert taken > 100 and refused > 100


@pytest.mark.parametrize(
    "token", ["1e400", "1E+309", "2e0308", "1" + "0" * 250 + "e99", "NaN", "-Infinity"]
)
def test_numbers_the_strict_parser_refuses_are_left_to_it(token: str) -> None:
    text = dump_json(machine(1)).replace('"name": "', f'"spare": {token}, "name": "', 1)
    assert _validate_current_capture(text) is None
    assert "not a JSON number" in _strict(text)


def test_a_file_without_a_schema_tag_is_not_taken_as_a_capture() -> None:
    data = json.loads(dump_json(machine(1)))
    del data["schema"]
    text = json.dumps(data)
    assert _validate_current_capture(text) is None
    assert _strict(text) == 'x.json: not a pcidoc capture (no "schema" field)'


def test_numbers_that_only_look_large_keep_the_one_step_path() -> None:
    # A GPU's UUID holds "3e534"; a string may hold "1e400": neither is a number.
    text = dump_json(machine(1)).replace('"name": "', '"name": "1e400 GPU-9d1e534a-3e5340 ', 1)
    assert _assert_same(text)
    for token in ("1e400", "-2.5E+0309", "1" + "0" * 220 + ".5e98"):
        for shape in ('{"a":%s}', '{"a": %s}', "[%s]", "[0,%s]", '{"b": [0,\n  %s]}'):
            assert _strings_parsed(json.loads(shape % token)) == -1, (shape, token)


def _strings_in(node: Any) -> int:
    if isinstance(node, dict):
        return len(node) + sum(_strings_in(v) for v in node.values())
    if isinstance(node, list):
        return sum(_strings_in(v) for v in node)
    return isinstance(node, str)


def test_strings_are_counted_alike_in_the_text_and_in_the_parsed_data() -> None:
    rng = random.Random(29)
    pieces = ['"', "\\", ":", " ", "a", "\u00e9", "\n", "{", ",", "\\\\"]
    for _ in range(400):
        words = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 6))) for _ in range(6)]
        data = {words[0]: [words[1], {words[2]: words[3]}, 1.5], words[4]: None, "k": words[5]}
        for text in (json.dumps(data), json.dumps(data, indent=2, ensure_ascii=False)):
            parsed = json.loads(text)
            assert _strings_written(text) == _strings_parsed(parsed) == _strings_in(parsed), text
            assert _strings_written(text.encode("utf-8")) == _strings_in(parsed)


@pytest.mark.parametrize("spacing", ["", " ", "\n  ", "\t"])
def test_a_repeated_key_never_takes_the_one_step_path(spacing: str) -> None:
    text = dump_json(machine(1))
    for key in ('"gpus":', '"index":', '"name":'):
        value = '"x\\\\ y\\" z"' if key == '"name":' else "[]"
        twice = text.replace(key, f"{key[:-1]}{spacing}: {value}, {key[:-1]}{spacing}:", 1)
        assert twice != text
        assert _validate_current_capture(twice) is None
        assert "appears twice" in _strict(twice)

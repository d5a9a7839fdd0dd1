"""``pcidoc._lazyre``: patterns compiled on first use, and "no match" without compiling when a
text lacks the plain characters every match contains."""

from __future__ import annotations

import gc
import importlib
import pkgutil
import random
import re

import pytest

import pcidoc
from pcidoc._lazyre import LazyPattern, lazy, required_text


@pytest.mark.parametrize(
    ("pattern", "flags", "required"),
    [
        ("H100 (\\d+GB )?PCIE", 0, "H100 "),
        ("\\bMI250X", 0, "MI250X"),
        ("MI250\\b", 0, "MI250"),
        ("\\bT4\\b", 0, "T4"),
        ("^RTX [68]000$", 0, "RTX "),
        ("V100S? PCIE", 0, "V100"),  # the S may be absent
        ("ab*c", 0, "a"),
        ("ab{0,2}c", 0, "a"),
        ("ab+c", 0, "ab"),  # b at least once
        ("GH200", 0, "GH200"),
        ("a|b", 0, ""),  # alternation anywhere: no shortcut
        ("(?:x|y)z", 0, ""),
        ("(?i)h100", 0, ""),  # starts with a group
        ("h100", re.IGNORECASE, ""),  # flags: no shortcut
        ("^\\s*#", 0, ""),
        ("x?", 0, ""),
        ("", 0, ""),
        ("\\\\path", 0, ""),  # starts with an escape
        ("ab\\d+", 0, "ab"),
        ("ab.c", 0, "ab"),
    ],
)
def test_required_text(pattern: str, flags: int, required: str) -> None:
    assert required_text(pattern, flags) == required


def test_a_text_without_the_required_characters_is_answered_without_compiling() -> None:
    pattern = LazyPattern("H100 (\\d+GB )?PCIE")
    assert pattern.search("GB200") is None
    assert pattern.match("GB200") is None
    assert pattern.findall("GB200") == []
    assert list(pattern.finditer("GB200")) == []
    assert pattern.sub("-", "GB200") == "GB200"
    assert pattern._compiled is None  # nothing compiled yet
    found = pattern.search("NVIDIA H100 80GB PCIE")
    assert found is not None and found.group(0) == "H100 80GB PCIE"
    assert pattern._compiled is not None


def _package_patterns() -> list[LazyPattern]:
    """Every LazyPattern pcidoc's modules define (its TUI and probes included)."""
    for info in pkgutil.walk_packages(pcidoc.__path__, "pcidoc."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional dependency (textual, torch) is missing
            continue
    return [obj for obj in gc.get_objects() if type(obj) is LazyPattern]


def _texts(patterns: list[LazyPattern]) -> list[str]:
    """Texts that hold, lack, or nearly hold each pattern's required characters."""
    rng = random.Random(7)
    texts = ["", "NVIDIA H100 80GB HBM3", "H100 PCIE", "GB200", "RTX 6000", "T4", "V100 PCIE"]
    for pattern in patterns:
        literal = pattern._required
        if literal:
            texts += [literal, f"x {literal} y", literal[:-1], literal.lower(), literal + literal]
            cut = rng.randrange(len(literal))
            texts.append(literal[:cut] + " " + literal[cut:])
    return texts


def test_the_shortcut_answers_as_the_compiled_pattern_for_every_pattern_in_pcidoc() -> None:
    patterns = _package_patterns()
    with_shortcut = [p for p in patterns if p._required]
    assert len(with_shortcut) >= 40, "the GPU model table's name patterns are among them"
    texts = _texts(patterns)
    for pattern in with_shortcut:
        compiled = re.compile(pattern._pattern, pattern._flags)
        for text in texts:
            fresh = LazyPattern(pattern._pattern, pattern._flags)
            got = fresh.search(text)
            want = compiled.search(text)
            assert (got and got.span()) == (want and want.span()), (pattern._pattern, text)
            assert bool(LazyPattern(pattern._pattern).match(text)) == bool(compiled.match(text))
            assert LazyPattern(pattern._pattern).findall(text) == compiled.findall(text)
            assert LazyPattern(pattern._pattern).sub("#", text) == compiled.sub("#", text)


def test_lazy_is_a_lazy_pattern() -> None:
    pattern = lazy("ab+c")
    assert isinstance(pattern, LazyPattern)
    assert pattern.fullmatch("abbc") is not None
    assert pattern.fullmatch("xabbc") is None


def test_lazy_records_the_module_that_made_each_pattern() -> None:
    from pcidoc import _lazyre

    made = lazy(r"recorded\s+here")
    mine = [p for module, p in _lazyre.created(__name__) if module == __name__]
    assert made in mine
    assert _lazyre.source(made) == (r"recorded\s+here", 0)
    assert all(
        module.startswith("pcidoc.collect") for module, _ in _lazyre.created("pcidoc.collect")
    )

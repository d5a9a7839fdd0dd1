"""Every pattern of ``pcidoc explain`` runs in linear time: the importers' check
(``tests/importers/regex_child.py``: inputs built from each pattern's own prefixes, CPU time of
a long run compared with short runs in one process, no clock read) over the explain modules."""

from __future__ import annotations

from tests.importers.test_regex_linear import _child

MODULES = [f"pcidoc.explain.{name}" for name in ("lines", "read", "gather", "flight", "hardware")]


def test_every_explain_pattern_is_linear() -> None:
    found, tried = _child(*MODULES)
    assert not found, "\n".join(f"{f['name']}: {f['pattern']!r} on {f['input']}" for f in found)
    assert tried > 30, "fewer patterns than explain holds: the collection broke"

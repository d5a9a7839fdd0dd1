"""Child process of ``test_regex_linear.py``: feed every pattern of one importer module long
runs of blanks and long tokens, each pattern under its own CPU-time limit.

Run as ``python -m tests.importers.regex_child LIMIT_S MODULE...``. Before each pattern it prints
the pattern's name and sets the soft ``RLIMIT_CPU`` to the CPU time used so far plus LIMIT_S:
a pattern that backtracks quadratically on these inputs (100,000 characters: ~10^10 steps)
is killed by SIGXCPU, deterministically, while a linear one needs milliseconds. No wall clock
is read.
"""

from __future__ import annotations

import importlib
import re
import resource
import sys
from collections.abc import Iterator

from pcidoc import _lazyre

N = 100_000
"""Length of each run: a quadratic pattern needs ~N²/2 = 5·10^9 steps on it."""

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z ]{2,40}")


def patterns(module_name: str) -> list[tuple[str, re.Pattern[str]]]:
    """Every pattern the module made with :func:`pcidoc._lazyre.lazy` or keeps at module level
    (also inside tuples, lists and dicts there), compiled."""
    module = importlib.import_module(module_name)
    found: dict[int, tuple[str, re.Pattern[str]]] = {}
    for name, value in vars(module).items():
        values = value if isinstance(value, (tuple, list)) else [value]
        if isinstance(value, dict):
            values = [*value.keys(), *value.values()]
        for item in values:
            if isinstance(item, _lazyre.LazyPattern):
                found.setdefault(id(item), (name, item.compiled))
            elif isinstance(item, re.Pattern):
                found.setdefault(id(item), (name, item))
    for pos, (owner, made) in enumerate(_lazyre.created(module_name)):
        if owner == module_name:
            pattern, _ = _lazyre.source(made)
            found.setdefault(id(made), (f"lazy #{pos}: {pattern[:70]}", made.compiled))
    return list(found.values())


def literal(pattern: re.Pattern[str]) -> str:
    """The longest plain words of the pattern (``Avg bus bandwidth``), so inputs reach past
    its first literal."""
    words = sorted(_WORD_RE.findall(pattern.pattern), key=len, reverse=True)
    return words[0] if words else ""


def inputs(word: str) -> Iterator[str]:
    """Bounded combinations of long runs with the pattern's own words."""
    half = N // 2
    runs = (" " * N, "a" * N, "0" * N, "a-" * half, "0:" * half, "a " * half, "[0]" * (N // 3))
    for run in runs:
        yield run
        yield f"{word}{run}x"
        yield f"# {run} {word}"
        yield f"{word} a{run}b"
        yield f"<a{run}"


def main(limit_s: int, module_names: list[str]) -> int:
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    for module_name, name, pattern in (
        (module, name, pattern) for module in module_names for name, pattern in patterns(module)
    ):
        print(f"{module_name}: {name}", flush=True)
        used = resource.getrusage(resource.RUSAGE_SELF)
        spent = int(used.ru_utime + used.ru_stime) + 1
        soft = spent + limit_s
        resource.setrlimit(resource.RLIMIT_CPU, (soft if hard < 0 else min(soft, hard), hard))
        word = literal(pattern)
        for text in inputs(word):
            pattern.search(text)
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), sys.argv[2:]))

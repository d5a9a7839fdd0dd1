r"""Child process of ``test_regex_linear.py``: every pattern of the importers and the failure
catalogue, fed inputs built from the pattern's own text, must take time linear in their length.

Run as ``python -m tests.importers.regex_child [--plain] [--only TEXT] [--part I/N]
SOURCE...``; a source is
a module name (its :func:`pcidoc._lazyre.lazy` and module-level patterns) or ``catalogue`` (the
pattern and severity rules of every catalogue entry). It prints one JSON line per pattern that
is not linear, then ``done N`` (N: patterns tried).

**Inputs.** A pattern is parsed (``re._parser``) and, for every repetition in it, the text that
leads to that repetition is built from the pattern itself: its literal prefix (``NCCL INFO``,
``LnkSta:``, ``Rank``), a shortest match of every element before the repetition and the first
branch of each alternation on the way (every branch is walked). That prefix is followed by a
long run of what the repetition accepts (its shortest match, and single characters of each kind
it accepts: blank, letter, digit, punctuation), then a character that ends the run. Each such
family is tried as ``prefix + run`` (one long run where the real prefix leads to it) and as
``(prefix + unit)`` repeated (a new start of the pattern at every unit); the pattern's shortest
match repeated, and plain runs of blanks, letters, digits and mixed tokens, are tried too.
The run is also tried after one match of the repetition (``via a`` then blanks: a token
followed by blanks reaches ``(.+?)\s*$`` where blanks alone are taken by an earlier ``\s+``).
A backtracking pattern goes quadratic on one of these when its own prefixes lead into an
ambiguous repetition: the prefixes are what ordinary runs without them miss (issue 30).

**Measure.** Every family is run at two lengths, 1,000 and 100,000 characters (``finditer``
over the whole text, so a pattern searched line by line and one matched at each position are
both covered). Linear work grows 100-fold between them, quadratic work 10,000-fold. The short
run's CPU time (best of three, in this process) sizes the long run's limit: 1,000 times it, at
least :data:`FLOOR_S`. A linear pattern stays 10 times below that limit, a quadratic one goes
10 times over it, and the long run is stopped by a CPU-time timer (``ITIMER_PROF``; the regex
engine checks signals as it runs) at the limit rather than run to its end. Both runs are CPU
time of this process, so a busy machine changes neither side of the ratio; the floor keeps the
timer's tick well below the limit.
"""

from __future__ import annotations

import importlib
import json
import re
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any

from pcidoc import _lazyre

try:  # Python 3.11+
    from re import _constants as sre_c
    from re import _parser as sre_p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as sre_c  # type: ignore[no-redef]
    import sre_parse as sre_p  # type: ignore[no-redef]

SHORT = 400
LONG = 40_000
"""Characters of the two runs of every family (linear: x100 the work, quadratic: x10,000)."""
FACTOR = 10
"""The long run may take this many times the CPU time of the short run repeated to the same
length (linear: the same time; quadratic: 100 times it)."""
FLOOR_S = 0.1
"""Least limit of a long run: 25 timer ticks at 250 Hz. Linear runs take milliseconds; a
quadratic run is 8·10^8 steps, 0.4 s at 2 steps per nanosecond (no machine runs the regex
engine faster)."""
CAP_S = 1.0
"""Most a long run may take, and the batch of short runs: 25 µs a character, more than any
linear pattern needs (a bounded token of 253 takes about 1 µs)."""
_UNBOUNDED = 1_000
r"""Repetitions allowed this many times or more are tried with long runs; a bounded one
(``\S{1,200}``) costs at most its bound at each start, which the plain runs cover."""

_CANDIDATES = " \tax0Z_-:./,;[](){}<>=#@%\"'|+*!?&$~\\\n\x01é"
"""Characters a run may be made of, in order of preference."""
_KINDS = (" \t\n", "axZé_", "0", "-:./,;[](){}<>=#@%\"'|+*!?&$~\\\x01")
"""One run character of each kind that a repetition accepts."""
_STOP = ("\x01", "\n")
"""What ends a run: a character no pattern expects, a line end."""
_REPEATS = (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None))
_CATEGORY_CLASS = {
    sre_c.CATEGORY_DIGIT: r"\d",
    sre_c.CATEGORY_NOT_DIGIT: r"\D",
    sre_c.CATEGORY_SPACE: r"\s",
    sre_c.CATEGORY_NOT_SPACE: r"\S",
    sre_c.CATEGORY_WORD: r"\w",
    sre_c.CATEGORY_NOT_WORD: r"\W",
}
_PLAIN_RUNS = (" ", "a", "0", "a-", "0:", "[0]")
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z ]{2,40}")


# ------------------------------------------------------------------------------ patterns


def module_patterns(module_name: str) -> list[tuple[str, re.Pattern[str]]]:
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
                found.setdefault(id(item), (f"{module_name}.{name}", item.compiled))
            elif isinstance(item, re.Pattern):
                found.setdefault(id(item), (f"{module_name}.{name}", item))
    for pos, (owner, made) in enumerate(_lazyre.created(module_name)):
        if owner == module_name:
            pattern, _ = _lazyre.source(made)
            found.setdefault(
                id(made), (f"{module_name} lazy #{pos}: {pattern[:60]}", made.compiled)
            )
    return list(found.values())


def catalogue_patterns() -> list[tuple[str, re.Pattern[str]]]:
    """The pattern and the severity rules of every catalogue entry, and its marker pattern."""
    from pcidoc import catalogue

    cat = catalogue.catalogue()
    found = [(f"catalogue {e.id}", e.pattern.compiled) for e in cat.entries]
    for entry in cat.entries:
        found += [(f"catalogue {entry.id} when", rule.compiled) for rule, _ in entry.when]
    if cat.markers is not None:
        found.append(("catalogue markers", cat.markers))
    return found


def patterns(source: str) -> list[tuple[str, re.Pattern[str]]]:
    """The patterns of one source (a module name, or ``catalogue``)."""
    return catalogue_patterns() if source == "catalogue" else module_patterns(source)


# ------------------------------------------------------------------------------- inputs


def _char_class(items: list[tuple[Any, Any]]) -> str:
    parts = []
    for op, av in items:
        if op is sre_c.NEGATE:
            parts.insert(0, "^")
        elif op is sre_c.LITERAL:
            parts.append(re.escape(chr(av)))
        elif op is sre_c.RANGE:
            parts.append(f"{re.escape(chr(av[0]))}-{re.escape(chr(av[1]))}")
        elif op is sre_c.CATEGORY:
            parts.append(_CATEGORY_CLASS.get(av, ""))
    return "[" + "".join(parts) + "]" if parts and parts != ["^"] else "(?!)"


def _single(op: Any, av: Any, flags: int) -> re.Pattern[str] | None:
    """A one-character pattern equivalent to the node, or None when it is not one."""
    if op is sre_c.LITERAL:
        return re.compile(re.escape(chr(av)), flags)
    if op is sre_c.NOT_LITERAL:
        return re.compile(f"[^{re.escape(chr(av))}]", flags)
    if op is sre_c.ANY:
        return re.compile(".", flags)
    if op is sre_c.IN:
        return re.compile(_char_class(av), flags)
    return None


class _Builder:
    """Shortest matches and the run families of one parsed pattern."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.flags = pattern.flags & (re.IGNORECASE | re.DOTALL | re.ASCII)
        self.tree = sre_p.parse(pattern.pattern, pattern.flags)
        self.groups: dict[int, str] = {}

    def accepted(self, op: Any, av: Any) -> str:
        """The candidate characters a one-character node accepts (a literal: itself)."""
        if op is sre_c.LITERAL:
            return chr(av)
        single = _single(op, av, self.flags)
        return "" if single is None else "".join(c for c in _CANDIDATES if single.fullmatch(c))

    def first_chars(self, sub: Any) -> str:
        """Characters that can start a match of ``sub`` (its first one-character node)."""
        for op, av in sub.data:
            if op in _REPEATS:
                return self.first_chars(av[2])
            if op is sre_c.SUBPATTERN:
                return self.first_chars(av[3])
            if op is sre_c.BRANCH:
                return "".join(dict.fromkeys("".join(self.first_chars(b) for b in av[1])))
            if op in (sre_c.AT, sre_c.ASSERT, sre_c.ASSERT_NOT):
                continue
            return self.accepted(op, av)
        return ""

    def shortest(self, sub: Any) -> str:
        """A short text that ``sub`` matches (first branch, fewest repetitions)."""
        return "".join(self.node(op, av) for op, av in sub.data)

    def node(self, op: Any, av: Any) -> str:
        if op in (sre_c.LITERAL, sre_c.NOT_LITERAL, sre_c.ANY, sre_c.IN):
            return (self.accepted(op, av) or "a")[0]
        if op is sre_c.BRANCH:
            return self.shortest(av[1][0])
        if op is sre_c.SUBPATTERN:
            text = self.shortest(av[3])
            if av[0] is not None:
                self.groups[av[0]] = text
            return text
        if op in _REPEATS:
            return self.shortest(av[2]) * av[0]
        if op is sre_c.GROUPREF:
            return self.groups.get(av, "")
        if op is sre_c.GROUPREF_EXISTS:
            return self.shortest(av[1])
        if op is sre_c.ASSERT and av[0] == 1:
            return self.shortest(av[1])[:1]
        if op is getattr(sre_c, "ATOMIC_GROUP", None):
            return self.shortest(av)
        return ""  # anchors, lookbehinds, negative lookarounds

    def leads(self, sub: Any, prefix: str) -> Iterator[tuple[str, Any]]:
        """``(text that leads to it, body)`` of every repetition, every branch walked."""
        for op, av in sub.data:
            if op is sre_c.BRANCH:
                for alternative in av[1]:
                    yield from self.leads(alternative, prefix)
            elif op is sre_c.SUBPATTERN:
                yield from self.leads(av[3], prefix)
            elif op in _REPEATS:
                if av[1] >= _UNBOUNDED:
                    yield prefix, av[2]
                yield from self.leads(av[2], prefix)
            elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT) or op is sre_c.GROUPREF_EXISTS:
                yield from self.leads(av[1], prefix)
            prefix += self.node(op, av)

    def units(self, body: Any) -> list[str]:
        """What a run of ``body`` is made of: its shortest match and one character of each
        kind it can start with."""
        found = [self.shortest(body)]
        starts = self.first_chars(body)
        for kind in _KINDS:
            found += [c for c in starts if c in kind][:1]
        return [u for u in dict.fromkeys(found) if u]


def _fill(head: str, unit: str, tail: str, length: int) -> str:
    count = max(1, (length - len(head) - len(tail)) // len(unit))
    return head + unit * count + tail


def plain_runs(pattern: re.Pattern[str]) -> list[tuple[str, str, str]]:
    """Runs of blanks, letters, digits and mixed tokens, alone and after the pattern's longest
    plain words (what the linearity test fed before issue 30)."""
    words = sorted(_WORD_RE.findall(pattern.pattern), key=len, reverse=True)[:1]
    found: list[tuple[str, str, str]] = []
    for run in _PLAIN_RUNS:
        found += [("", run, "x"), *((w, run, "x") for w in words)]
    return found


def families(pattern: re.Pattern[str]) -> list[tuple[str, str, str]]:
    """``(head, unit, tail)`` triples: the text ``head + unit * k + tail`` for any length."""
    builder = _Builder(pattern)
    whole = builder.shortest(builder.tree)
    found: list[tuple[str, str, str]] = []
    for prefix, body in builder.leads(builder.tree, ""):
        units = builder.units(body)
        for unit in units:
            found += [(prefix, unit, stop) for stop in _STOP]
            found.append(("", prefix + unit, "\x01"))
            # After one match of another kind: the run goes on past the repetition's start
            # (``via a`` then blanks reaches ``(.+?)\s*$``: blanks alone were taken by the
            # ``\s+`` before it).
            found += [(prefix + other, unit, "\x01") for other in units if other != unit]
    if whole:
        found += [("", whole, ""), ("", whole + " ", "\x01"), ("", whole + "\n", "")]
    found += plain_runs(pattern)
    return list(dict.fromkeys(found))


# -------------------------------------------------------------------------------- measure


class _OverLimit(Exception):
    """Raised by the CPU-time timer inside a run."""


def _on_timer(_signum: int, _frame: object) -> None:
    raise _OverLimit


def cpu_time(pattern: re.Pattern[str], text: str, limit_s: float) -> float | None:
    """CPU seconds of ``finditer`` over ``text``; None when it ran past ``limit_s``."""
    return batch_time(pattern, text, 1, limit_s)


def batch_time(pattern: re.Pattern[str], text: str, times: int, limit_s: float) -> float | None:
    """CPU seconds of ``finditer`` over ``text``, ``times`` times; None past ``limit_s``."""
    signal.setitimer(signal.ITIMER_PROF, limit_s)
    start = time.process_time()
    try:
        for _ in range(times):
            for _ in pattern.finditer(text):
                pass
    except _OverLimit:
        return None
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    return time.process_time() - start


def verdict(pattern: re.Pattern[str], family: tuple[str, str, str]) -> dict[str, Any] | None:
    """None when the family runs in linear time; else what was seen."""
    head, unit, tail = family
    long = _fill(head, unit, tail, LONG)
    if cpu_time(pattern, long, FLOOR_S) is not None:
        return None  # the common case: far below any limit
    short = _fill(head, unit, tail, SHORT)
    batch = batch_time(pattern, short, LONG // SHORT, CAP_S)
    if batch is None:
        return {"batch_s": f">{CAP_S}", "limit_s": CAP_S}
    limit = max(FLOOR_S, min(CAP_S, FACTOR * batch))
    if cpu_time(pattern, long, limit) is not None:
        return None
    return {"batch_s": round(batch, 4), "limit_s": round(limit, 3)}


def check(name: str, pattern: re.Pattern[str], plain: bool = False) -> dict[str, Any] | None:
    """The first family on which ``pattern`` is not linear, or None."""
    for family in plain_runs(pattern) if plain else families(pattern):
        seen = verdict(pattern, family)
        if seen is not None:
            head, unit, tail = family
            return {
                "name": name,
                "pattern": pattern.pattern[:300],
                "input": f"{head[:60]!r} + {unit[:40]!r} * k + {tail!r}",
                **seen,
            }
    return None


def main(argv: list[str]) -> int:
    """``[--plain] [--only TEXT] [--part I/N] SOURCE...``: ``--plain`` tries the plain runs only
    (no input built from the pattern), ``--only`` the patterns whose name holds TEXT,
    ``--part`` every N-th pattern from the I-th (to share the work between processes)."""
    plain = "--plain" in argv
    argv = [a for a in argv if a != "--plain"]
    only = None
    if argv[:1] == ["--only"]:
        only, argv = argv[1], argv[2:]
    part, parts = 0, 1
    if argv[:1] == ["--part"]:
        part, parts = (int(x) for x in argv[1].split("/"))
        argv = argv[2:]
    signal.signal(signal.SIGPROF, _on_timer)
    tried = 0
    every = [(name, pattern) for source in argv for name, pattern in patterns(source)]
    for number, (name, pattern) in enumerate(every):
        if number % parts != part or (only is not None and only not in name):
            continue
        tried += 1
        found = check(name, pattern, plain)
        if found is not None:
            print(json.dumps(found), flush=True)
    print(f"done {tried}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

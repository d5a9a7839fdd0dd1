"""Cleaning of pasted text, shell command recognition and small value parsers.

Pasted outputs arrive wrapped in whatever the author's medium added: markdown fences and
``> `` quoting, terminal colour codes, shell prompts (``root@host:~# cmd``, ``$ cmd``,
``-[09:00 AM]-cmd``), mpirun ``--tag-output`` prefixes (``[0]``), tabs shown by vim's ``list``
mode (``>---``), Windows line ends and non-breaking spaces. :func:`prepare` removes that
packaging once, so each format parser sees plain lines, and marks which lines are shell commands
(the context of the output after them).
"""

from __future__ import annotations

import math
from itertools import pairwise

# The importers' patterns are compiled on first use; they take ``lazy`` from here.
from pcidoc._lazyre import LazyPattern as LazyPattern
from pcidoc._lazyre import lazy as lazy
from pcidoc._record import field, record
from pcidoc.catalogue.lines import code_spans
from pcidoc.model.busid import normalize_bus_id as normalize_bus_id

# --------------------------------------------------------------------------- value parsers

_NUMBER_RE = lazy(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")


_NUMBER_CHARS = frozenset("0123456789.eE+-")
BUS_ID = r"(?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]"
"""A PCI bus id as the tools print it (``0000:3b:00.0``, ``3b:00.0``; NVML's 8-digit domain), for
patterns to embed (``rf"...{BUS_ID}..."``)."""
_DIGITS = frozenset("0123456789")


def to_float(token: str | None) -> float | None:
    """Parse a finite decimal number (``"12.3"``, ``"1e-06"``); ``None`` for anything else.

    Unlike :func:`float` this never accepts ``inf``/``nan`` spellings, underscores or non-ASCII
    digits, so a parsed value always serialises to JSON. Tables of numbers call this for every
    cell: plain characters are checked first, the pattern only for what passes.
    """
    if token is None:
        return None
    token = token.strip()
    if not token or len(token) > 400 or not _NUMBER_CHARS.issuperset(token):
        return None
    if not _NUMBER_RE.match(token):
        return None
    value = float(token)
    return value if math.isfinite(value) else None


def to_int(token: str | None) -> int | None:
    """Parse a decimal integer; ``None`` for anything else."""
    if token is None:
        return None
    token = token.strip()
    digits = token[1:] if token[:1] in ("+", "-") else token
    if not digits or len(token) > 30 or not _DIGITS.issuperset(digits):
        return None
    return int(token)


JSON_INT_LIMIT = 2**63 - 1
"""The largest integer a JSON value of a tool's output holds (a 64-bit counter)."""


def json_int(value: object) -> int | None:
    """An integer of a parsed JSON document, or None (not an integer, a bool, or beyond 64
    bits: one 400-digit number must not stand for a count)."""
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > JSON_INT_LIMIT:
        return None
    return value


def json_float(value: object) -> float | None:
    """A finite number of a parsed JSON document, or None (an integer too large for a float
    is none either)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def json_integer(text: str) -> int | float:
    """``parse_int`` of the JSON decoders of pastes: an integer of more than 400 digits is read
    as infinite (a value out of range, which :func:`json_int` and :func:`json_float` refuse)
    instead of failing the whole document (Python refuses ``int()`` beyond 4,300 digits)."""
    return int(text) if len(text) <= 400 else math.inf


def named(noun: str, labels: list[str], verb: str = "") -> str:
    """``row GPU3`` / ``rows GPU1-GPU3`` (and ``has``/``have`` for ``verb="have"``): a noun
    counted by the labels that follow it, which a plural rule cannot see."""
    many = len(labels) > 1
    text = f"{noun}{'s' if many else ''} {label_span(labels)}"
    if verb:
        text += " " + (verb if many else {"have": "has", "are": "is"}.get(verb, verb + "s"))
    return text


def label_span(labels: list[str]) -> str:
    """Compact a list of labels: ``GPU5, GPU6, GPU7, NIC0`` -> ``GPU5-GPU7, NIC0``."""
    out: list[str] = []
    run: list[tuple[str, int]] = []

    def flush() -> None:
        if not run:
            return
        if len(run) >= 3:
            out.append(f"{run[0][0]}{run[0][1]}-{run[-1][0]}{run[-1][1]}")
        else:
            out.extend(f"{p}{n}" for p, n in run)
        run.clear()

    for label in labels:
        prefix = label.rstrip("0123456789")
        digits = label[len(prefix) :]
        if not digits or not digits.isascii() or len(digits) > 30:
            flush()
            out.append(label)
            continue
        number = int(digits)
        if run and run[-1][0] == prefix and run[-1][1] + 1 == number:
            run.append((prefix, number))
        else:
            flush()
            run.append((prefix, number))
    flush()
    return ", ".join(out)


def comment_body(line: str) -> str:
    """``line`` without its leading blanks and one ``#`` with the blanks after it.

    nccl-tests writes its headers as ``#  nThread 1 ...``; pastes keep or lose the ``#`` and the
    indentation. Stripping them here, in linear time, keeps ``^\\s*#?\\s*`` out of the patterns:
    that prefix backtracks quadratically on a long run of blanks (issue 23).
    """
    body = line.lstrip()
    if body.startswith("#"):
        body = body[1:].lstrip()
    return body


def shorten(text: str, limit: int = 60) -> str:
    """Quote-safe short excerpt of a line for warnings."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ------------------------------------------------------------------------- text cleaning

_FENCE_RE = lazy(r"^\s*(?:```|~~~)")
_QUOTE_RE = lazy(r"^ {0,3}(?:>(?: |$))+")
_LISTCHARS_RE = lazy(r"(?<!>)>+-+(?:>+-+)*")
_TAG_START_RE = lazy(r"^\s*\[\d+(?:,\d+)?\](?:<std(?:out|err)>:)?")
_ANSI_RE = lazy(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*\x07")
_TAG_RE = lazy(r"\[\d+(?:,\d+)?\](?:<std(?:out|err)>:)?")
_INVISIBLE = str.maketrans(
    {"\u00a0": " ", "\u2007": " ", "\u202f": " ", "\u200b": None, "\ufeff": None, "\r": None}
)

# A tool name starts a path token (``./all_reduce_perf``, ``/usr/bin/nvidia-smi``): the match
# may only begin where no path character precedes (or after a ``-[time]-`` prompt), so a long
# token is walked once, not once per character (issue 23: quadratic patterns).
_TOOL_RE = lazy(
    r"(?:(?<![\w.~/-])|(?<=\]-))(?P<tool>(?:/|[\w.~][\w.~-]*/)*"
    r"(?:nvidia-smi|p2pBandwidthLatencyTest|bandwidthTest|nvbandwidth|"
    r"[a-z0-9]+(?:_[a-z0-9]+)*_perf(?:_mpi)?|numactl|mpirun|mpiexec|srun|taskset|torchrun))"
    r"(?:\.exe)?(?=\s|$)(?!\s+[Vv]ersion\b)(?!\s*:)"
)
_TOOL_NAMES = (
    "nvidia-smi",
    "andwidth",  # p2pBandwidthLatencyTest, bandwidthTest, nvbandwidth
    "_perf",
    "numactl",
    "mpirun",
    "mpiexec",
    "srun",
    "taskset",
    "torchrun",
)
"""Every tool name of ``_TOOL_RE`` contains one of these: a line without them is no command."""
_PREFIX_OK_RE = lazy(
    r"^(?:.{0,300}?[$#>%\]]\s*|\s*-\[[^\]]*\]-\s*|\s*)"
    r"(?:(?:sudo|time|env|nohup|exec|command)\s+(?:-\S+\s+)*|[A-Za-z_]\w*=\S*\s+)*$"
)
_GLUED_HEADER_RE = lazy(r"(?<!\s)\s{2,}(?=GPU\d)")


@record
class Doc:
    """One text after cleaning: lines, and the shell command found on each command line."""

    name: str
    lines: list[str]
    commands: list[str | None] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    """The line of the pasted text each line comes from (1-based; empty: the index + 1)."""

    def number(self, index: int) -> int:
        """The pasted text's line number of line ``index``."""
        return self.numbers[index] if index < len(self.numbers) else index + 1

    def is_command(self, index: int) -> bool:
        """True when line ``index`` is a shell command line."""
        return self.commands[index] is not None


def command_in(line: str) -> str | None:
    """The shell command on ``line`` (prompt removed), or ``None`` when it is not a command.

    A command line is a known tool name (``nvidia-smi``, ``./bandwidthTest``, ``all_reduce_perf``,
    ``numactl``, ``mpirun``...) preceded by nothing, a shell prompt or ``sudo``/``VAR=value``.
    """
    if len(line) > 1000 or not any(name in line for name in _TOOL_NAMES):
        return None
    for match in _TOOL_RE.finditer(line):
        prefix = line[: match.start()]
        if len(prefix) > 300 or not _PREFIX_OK_RE.match(prefix):
            continue
        return line[match.start() :].strip()
    return None


def _clean_line(raw: str, tagged: bool) -> str:
    line = raw.translate(_INVISIBLE)
    if "\x1b" in line:
        line = _ANSI_RE.sub("", line)
    if ">-" in line:
        line = _LISTCHARS_RE.sub("\t", line)
    if _FENCE_RE.match(line):
        return ""
    if line.lstrip().startswith(">"):
        line = _QUOTE_RE.sub("", line)
    if tagged and _TAG_START_RE.match(line):
        line = _TAG_RE.sub(" ", line)
    return line.rstrip()


_LINENO_RE = lazy(r"^\s*(\d{1,7})(?:[:|]\s?|\t| |$)")
_LETTER_RE = lazy(r"[A-Za-z]")


def strip_line_numbers(lines: list[str]) -> list[str]:
    """Remove editor/``cat -n`` line numbers (``"  12 text"``, ``"12: text"``, ``"12 | text"``).

    Only when nearly every non-empty line carries one, they count up by one, and the text after
    them has some words (a bare matrix whose rows start with a GPU index 0, 1, 2... is numbers
    only, and starts at 0: it is left alone).
    """
    nonempty = [line for line in lines if line.strip()]
    if len(nonempty) < 5:
        return lines
    matches = [_LINENO_RE.match(line) for line in lines]
    numbered = [(m, line) for m, line in zip(matches, lines, strict=True) if m and line.strip()]
    if len(numbered) < 0.95 * len(nonempty):
        return lines
    numbers = [int(m.group(1)) for m, _ in numbered]
    steps = sum(1 for x, y in pairwise(numbers) if y == x + 1)
    if numbers[0] == 0 or steps < 0.9 * (len(numbers) - 1):
        return lines
    worded = sum(1 for m, line in numbered if _LETTER_RE.search(line[m.end() :]))
    if worded < 0.05 * len(numbered):
        return lines
    return [line[m.end() :] if m else line for m, line in zip(matches, lines, strict=True)]


def prepare(text: str, name: str) -> Doc:
    """Clean a pasted text and mark its shell command lines.

    Args:
        text: The text as read from the file.
        name: File name, used in messages.

    Returns:
        A :class:`Doc` whose ``lines`` are the cleaned lines (same count or more: a prompt glued
        to a ``topo -m`` header is split in two) and ``commands`` the command on each line.
    """
    raw_lines = strip_line_numbers(text.replace("\r\n", "\n").split("\n"))
    # mpirun --tag-output: judged on 200 lines from the first that may carry a tag ('[', or
    # '> [' quoted), wherever the output starts after prose or a log.
    first = next((i for i, line in enumerate(raw_lines) if line.lstrip(" >")[:1] == "["), 0)
    window = raw_lines[first : first + 200]
    tagged = any(_TAG_START_RE.match(_QUOTE_RE.sub("", line)) for line in window)
    lines: list[str] = []
    commands: list[str | None] = []
    numbers: list[int] = []
    index = 0
    total = len(raw_lines)
    while index < total:
        line = _clean_line(raw_lines[index], tagged)
        index += 1
        spans = _quoted_spans(line)
        if len(spans) == 1 and line.strip() == f"`{spans[0]}`":
            line, spans = spans[0], []  # a line that is one code span: the span is the line
        command = command_in(line) if line else None
        if command is None:
            lines.append(line)
            commands.append(None)
            numbers.append(index)
            # A sentence quoting a log line in an inline code span (`NCCL WARN ...`): the span
            # is a line of its own for every reader (the sentence stays a sentence).
            for span in spans:
                lines.append(span)
                commands.append(None)
                numbers.append(index)
            continue
        # Shell line continuations: `mpirun ... \` + following lines.
        while command.endswith("\\") and index < total:
            command = command[:-1].rstrip() + " " + _clean_line(raw_lines[index], tagged).strip()
            index += 1
        glued = _GLUED_HEADER_RE.search(command)
        rest = ""
        if glued and command.startswith("nvidia-smi"):
            command, rest = command[: glued.start()].strip(), command[glued.end() :]
        lines.append(line)
        commands.append(command)
        numbers.append(index)
        if rest:
            lines.append("        " + rest)
            commands.append(None)
            numbers.append(index)
    return Doc(name=name, lines=lines, commands=commands, numbers=numbers)


def _quoted_spans(line: str) -> list[str]:
    """The inline code spans of a line (at most 8, of 8 characters or more)."""
    return code_spans(line) if "`" in line else []


# ------------------------------------------------------------------- command-line options


def option_value(command: str | None, *names: str) -> str | None:
    """Value of a command-line option (``-i 0``, ``-i0``, ``--id=0``, ``--memory pageable``)."""
    if not command:
        return None
    tokens = command.split()
    for pos, token in enumerate(tokens):
        for name in names:
            if token == name and pos + 1 < len(tokens):
                return tokens[pos + 1]
            if name.startswith("--") and token.startswith(name + "="):
                return token[len(name) + 1 :]
            if not name.startswith("--") and len(name) == 2 and token.startswith(name):
                rest = token[2:]
                if rest.startswith("="):
                    return rest[1:]
                if rest[:1].isdecimal():
                    return rest
    return None


def has_flag(command: str | None, *names: str) -> bool:
    """True when one of the flags appears as a token of ``command``."""
    if not command:
        return False
    tokens = set(command.split())
    return any(name in tokens for name in names)

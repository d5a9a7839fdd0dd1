"""The failure catalogue: what known error lines mean, as reviewed data with sources.

Each family of failures is one TOML file in ``pcidoc/catalogue/data/`` (NCCL, InfiniBand
verbs, CUDA, PyTorch distributed, Xid, AER, IOMMU, NVML and nvidia-smi, fabric manager and IMEX,
GPUDirect RDMA, known-benign lines). An entry says which lines it matches (literal markers, a
linear-time pattern, the shape of the line that prints it), what it means, the likely causes in
order, how severe it is (fixed, by a looked-up value, or by a word of the line), what the named
groups of its pattern bind to (bus id, GPU, rank, host, NIC and port, NVLink), what to do, the
check that reports it and the public source it rests on; and a line that must match and one
that must not, which the tests run (docs/catalogue.md tells how to add one).

:func:`scan` applies the catalogue to every line of a paste, whatever else the paste holds:
a line that matches an entry *and* is shaped like that entry's source
(:mod:`pcidoc.catalogue.lines`) is a :class:`~pcidoc.model.evidence.SignatureHit`; one that
matches inside a sentence is a mention (context, never an event). Entries owned by a
structured reader (``reader = "kernel-log"``: the Xid, AER and IOMMU readers keep bus ids, pids
and multi-line state) are knowledge for that reader's checks, not matched here; with a
``reader_shape`` the reader owns only lines of that shape (NCCL's own ``NCCL WARN`` lines, which
the nccl-log reader records), and the same text anywhere else (after PyTorch's ``Last error:``,
quoted alone) is matched here.

The layer sits between the collectors and the model: importers scan with it, checks read what
an entry means from it; it imports only the model, ``_lazyre`` and ``_record``.
"""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

from pcidoc._lazyre import LazyPattern, lazy
from pcidoc._record import field, record
from pcidoc.catalogue.lines import (
    MESSAGE,
    SHAPES,
    Line,
    messages,
    prose_before,
    quoted_at,
    read_line,
)
from pcidoc.model.busid import normalize_bus_id
from pcidoc.model.evidence import SignatureHit

DATA = Path(__file__).resolve().parent / "data"
SEVERITIES = ("benign", "info", "warn", "fail")
"""``benign``: a known line that is no fault (never a finding, it only marks the line known)."""
CONFIDENCES = ("high", "medium", "low")
SUBJECT_GROUPS = ("bus", "gpu", "rank", "host", "nic", "port", "link")
"""Named groups of a pattern that bind the hit to a subject (all others are values)."""
MAX_HITS = 2000
MAX_MENTIONS = 20
MAX_VALUE = 200
MAX_LINE = 4000
"""Characters of one line that are read (a longer line is cut there)."""

_ENTRY_KEYS = frozenset(
    {
        "id", "title", "shape", "not_shape", "markers", "pattern", "flags", "severity", "when",
        "lookup",
        "meaning", "causes", "fix", "check", "source", "reader", "confidence", "example",
        "example_source", "not_example", "examples", "reader_shape", "carrier",
    }
)  # fmt: skip
_REQUIRED = ("id", "title", "markers", "pattern", "severity", "meaning", "fix", "source")


class CatalogueError(ValueError):
    """A catalogue file is not what the schema of docs/catalogue.md says."""


@record(frozen=True)
class Entry:
    """One failure signature (see docs/catalogue.md for every field)."""

    id: str
    family: str
    title: str
    shapes: tuple[str, ...]
    markers: tuple[str, ...]
    pattern: LazyPattern
    severity: str
    meaning: str
    fix: str
    source: str
    check: str = "log.signatures"
    causes: tuple[str, ...] = ()
    when: tuple[tuple[LazyPattern, str], ...] = ()
    lookup: tuple[tuple[str, str], ...] = ()
    """(group, table): the group's value is looked up in the table for a name, a meaning and
    possibly a severity."""
    reader: str | None = None
    reader_shape: str | None = None
    """With ``reader``: the reader owns only lines of this shape (they are claimed and left to
    it); other lines the pattern finds are hits of this entry."""
    not_shapes: tuple[str, ...] = ()
    """Packaging that excludes a line (``nccl``: a line NCCL printed belongs to NCCL's own
    entries, even when its message would match)."""
    confidence: str = "high"
    carrier: bool = False
    """The line reports a failure whose cause another line of the same log names (an NCCL
    result code after NCCL's own warning, torchrun's summary of a failed worker): the findings
    of specific entries come first
    (:func:`pcidoc.doctor.signatures.signature_findings`)."""
    examples: tuple[str, ...] = ()
    not_examples: tuple[str, ...] = ()
    example_source: str = ""

    @property
    def benign(self) -> bool:
        """A known line that is no fault."""
        return self.severity == "benign"


@record
class Catalogue:
    """Every entry in match order (known-benign entries first), the tables and the marker
    index."""

    entries: list[Entry]
    tables: dict[str, dict[str, dict[str, Any]]]
    aliases: dict[str, dict[str, str]] = field(default_factory=dict)
    """Table -> another name of a row (a row's ``aliases``) -> the row's key."""
    by_id: dict[str, Entry] = field(default_factory=dict)
    by_marker: dict[str, list[Entry]] = field(default_factory=dict)
    markers: re.Pattern[str] | None = None
    """Every marker, as one trie pattern (the longest marker at a position)."""
    prefixes: dict[str, list[str]] = field(default_factory=dict)
    """Marker -> the shorter markers it starts with (``ibv_reg`` -> ``ibv_``): at one position
    the trie finds only the longest."""
    rank: dict[str, int] = field(default_factory=dict)
    """Entry id -> its place in :attr:`entries`."""


@record
class Hit:
    """A line that matched an entry, before it becomes a model record."""

    entry: Entry
    line: Line
    values: dict[str, str]
    number: int
    mention: bool = False


# ----------------------------------------------------------------------------- loading


def _load_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, ValueError) as exc:
        raise CatalogueError(f"{path.name}: {exc}") from None


def _strings(value: Any, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise CatalogueError(f"{where}: {key} must be a string or a list of strings")


def _flags(raw: dict[str, Any], where: str) -> int:
    flags = 0
    for name in _strings(raw.get("flags", []), "flags", where):
        if name not in ("IGNORECASE",):
            raise CatalogueError(f"{where}: unknown flag {name!r}")
        flags |= re.IGNORECASE
    return flags


def _flag(raw: dict[str, Any], key: str, where: str) -> bool:
    value = raw.get(key, False)
    if not isinstance(value, bool):
        raise CatalogueError(f"{where}: {key} is true or false")
    return value


def _entry(raw: dict[str, Any], family: str, where: str) -> Entry:
    unknown = set(raw) - _ENTRY_KEYS
    missing = [key for key in _REQUIRED if key not in raw]
    if unknown or missing:
        raise CatalogueError(f"{where}: unknown keys {sorted(unknown)}, missing {missing}")
    where = f"{where} ({raw['id']})"
    shapes = _strings(raw.get("shape", MESSAGE), "shape", where)
    not_shapes = _strings(raw.get("not_shape", []), "not_shape", where)
    if (
        raw["severity"] not in SEVERITIES
        or not set(shapes) <= set(SHAPES)
        or not set(not_shapes) <= set(SHAPES) - {MESSAGE}
    ):
        raise CatalogueError(f"{where}: severity or shape is not one of the allowed values")
    flags = _flags(raw, where)
    reader_shape = raw.get("reader_shape")
    if reader_shape is not None and (reader_shape not in SHAPES or raw.get("reader") is None):
        raise CatalogueError(f"{where}: reader_shape needs a reader and one of {SHAPES}")
    when = tuple((lazy(rule["pattern"], flags), rule["severity"]) for rule in raw.get("when", []))
    examples = _strings(raw.get("example", []), "example", where) + tuple(
        _strings(raw.get("examples", []), "examples", where)
    )
    return Entry(
        id=raw["id"],
        family=family,
        title=raw["title"],
        shapes=shapes,
        markers=_strings(raw["markers"], "markers", where),
        pattern=lazy(raw["pattern"], flags),
        severity=raw["severity"],
        meaning=raw["meaning"],
        fix=raw["fix"],
        source=raw["source"],
        check=raw.get("check", "log.signatures"),
        causes=_strings(raw.get("causes", []), "causes", where),
        when=when,
        lookup=tuple(sorted(raw.get("lookup", {}).items())),
        reader=raw.get("reader"),
        reader_shape=reader_shape,
        not_shapes=not_shapes,
        confidence=raw.get("confidence", "high"),
        carrier=_flag(raw, "carrier", where),
        examples=examples,
        not_examples=_strings(raw.get("not_example", []), "not_example", where),
        example_source=raw.get("example_source", ""),
    )


def _family(path: Path, catalogue: Catalogue) -> None:
    data = _load_toml(path)
    family = data.get("family", path.stem)
    for number, raw in enumerate(data.get("entry", []), 1):
        entry = _entry(raw, family, f"{path.name} entry {number}")
        if entry.id in catalogue.by_id:
            raise CatalogueError(f"{path.name}: entry id {entry.id!r} is used twice")
        catalogue.by_id[entry.id] = entry
        catalogue.entries.append(entry)
    for name, rows in data.get("tables", {}).items():
        if name in catalogue.tables:
            raise CatalogueError(f"{path.name}: table {name!r} is defined twice")
        catalogue.tables[name] = rows
        catalogue.aliases[name] = _aliases(rows, f"{path.name} table {name}")


def _aliases(rows: dict[str, dict[str, Any]], where: str) -> dict[str, str]:
    """Other names of a table's rows (``aliases = ["ncclSystemError", ...]``) -> row key."""
    found: dict[str, str] = {}
    for key, row in rows.items():
        for alias in _strings(row.get("aliases", []), "aliases", f"{where} row {key}"):
            if alias in rows or found.setdefault(alias, key) != key:
                raise CatalogueError(f"{where}: alias {alias!r} names two rows")
    return found


@cache
def catalogue(folder: Path = DATA) -> Catalogue:
    """The catalogue of ``folder`` (read once per process)."""
    found = Catalogue(entries=[], tables={})
    for path in sorted(folder.glob("*.toml")):
        _family(path, found)
    found.entries.sort(key=lambda entry: not entry.benign)  # stable: file order otherwise
    for entry in found.entries:
        for _, table in entry.lookup:
            if table not in found.tables:
                raise CatalogueError(f"{entry.id}: lookup table {table!r} does not exist")
        # Every entry is indexed: one a structured reader owns claims its lines (nothing else
        # reports them) and still tells a sentence that mentions it.
        for marker in entry.markers:
            found.by_marker.setdefault(marker, []).append(entry)
    if found.by_marker:
        found.markers = re.compile(_trie(list(found.by_marker)))
    found.prefixes = {
        marker: [other for other in found.by_marker if other != marker and marker.startswith(other)]
        for marker in found.by_marker
    }
    found.rank = {e.id: i for i, e in enumerate(found.entries)}
    return found


def _trie(words: list[str]) -> str:
    """One regular expression for many literal words, as a trie: at each position the engine
    follows one branch per character instead of trying every word (hundreds of markers)."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def branch(node: dict[str, Any]) -> str:
        alternatives = [
            re.escape(char) + branch(child) for char, child in sorted(node.items()) if char
        ]
        if not alternatives:
            return ""
        body = (
            "(?:" + "|".join(alternatives) + ")"
            if len(alternatives) > 1 or "" in node
            else alternatives[0]
        )
        return body + ("?" if "" in node else "")

    return branch(root)


def entry(entry_id: str) -> Entry | None:
    """The entry ``entry_id`` of the bundled catalogue, or None (an id a newer or older
    pcidoc wrote into a capture)."""
    return catalogue().by_id.get(entry_id)


def table(name: str) -> dict[str, dict[str, Any]]:
    """A lookup table of the bundled catalogue (``xid``, ``ibv_wc_status``...)."""
    return catalogue().tables.get(name, {})


ALIAS_FIELDS = ("name", "names", "message")
"""Fields of a table row that are other spellings of its key: an error code is printed as its
number, its symbol (``cudaErrorTooManyPeers``, ``CUDA_ERROR_TOO_MANY_PEERS``) or its message
(``peer mapping resources exhausted``), and a lookup finds the row by any of them (as by the
row's ``aliases``, which the catalogue checks name one row each)."""


def _spelling(text: str) -> str:
    return " ".join(text.split()).rstrip(".").casefold()


@cache
def _spellings(name: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for key, row_ in table(name).items():
        for field_name in ALIAS_FIELDS:
            value = row_.get(field_name)
            for alias in [value] if isinstance(value, str) else value or []:
                found.setdefault(_spelling(alias), key)
    return found


def lookup(name: str, value: str) -> tuple[str, dict[str, Any]] | None:
    """(key, row) of table ``name`` for ``value``: its key, one of its ``aliases``, or another
    spelling of it (:data:`ALIAS_FIELDS`); None when the table has no such row."""
    rows = table(name)
    key = value if value in rows else catalogue().aliases.get(name, {}).get(value)
    if key is None:
        key = _spellings(name).get(_spelling(value))
    return (key, rows[key]) if key is not None and key in rows else None


def row(name: str, value: str) -> dict[str, Any] | None:
    """The row of table ``name`` for ``value`` (:func:`lookup`)."""
    found = lookup(name, value)
    return found[1] if found is not None else None


# ----------------------------------------------------------------------------- matching


def _candidates(cat: Catalogue, text: str) -> list[Entry]:
    if cat.markers is None:
        return []
    # Markers overlap ("ibv_" in "ibv_reg", "Failed to open lib" over "libnvidia-ml"): the search
    # resumes one character after each marker found, and a marker brings those it starts with.
    seen: set[str] = set()
    found = cat.markers.search(text)
    while found is not None:
        seen.add(found.group())
        seen.update(cat.prefixes[found.group()])
        found = cat.markers.search(text, found.start() + 1)
    entries: dict[str, Entry] = {}
    for marker in seen:
        for candidate in cat.by_marker[marker]:
            entries.setdefault(candidate.id, candidate)
    return sorted(entries.values(), key=lambda e: cat.rank[e.id])


def _values(match: re.Match[str]) -> dict[str, str]:
    return {
        name: value.strip()[:MAX_VALUE]
        for name, value in match.groupdict().items()
        if value is not None and value.strip()
    }


def _shaped(entry: Entry, line: Line, match: re.Match[str]) -> bool:
    for shape in entry.shapes:
        if shape == MESSAGE:
            start = match.start()
            if not prose_before(line.message, start) or quoted_at(line.message, start):
                return True
        elif line.shaped(shape):
            return True
    return False


def match_line(text: str, number: int = 0, cat: Catalogue | None = None) -> Hit | None:
    """The first entry ``text`` matches, as evidence or (``mention=True``) as a mention in a
    sentence; None when it matches no entry, or an entry whose lines a structured reader owns
    (``reader``: the kernel-log reader's Xid lines, for instance)."""
    cat = catalogue() if cat is None else cat
    text = text[:MAX_LINE]
    candidates = _candidates(cat, text)
    if not candidates:
        return None
    line = read_line(text)
    if line.comment:
        return None
    mention: Hit | None = None
    for candidate in candidates:
        if any(line.shaped(shape) for shape in candidate.not_shapes):
            continue  # another family's line (neither evidence nor a mention for this entry)
        found = candidate.pattern.search(line.message)
        if found is None:
            continue
        if candidate.reader_shape is not None and line.shaped(candidate.reader_shape):
            return None  # the structured reader's line: claimed, reported by its check
        if _shaped(candidate, line, found):
            if candidate.reader is not None and candidate.reader_shape is None:
                return None  # a structured reader owns this line (it reads more than one line)
            return Hit(candidate, line, _values(found), number)
        mention = mention or Hit(candidate, line, _values(found), number, mention=True)
    return mention


# ----------------------------------------------------------------------------- scanning


def _to_int(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdecimal() and len(value) < 10 else None


def _record(hit: Hit, source: str | None) -> SignatureHit:
    values = dict(hit.values)
    subject = {name: values.pop(name) for name in SUBJECT_GROUPS if name in values}
    line = hit.line
    return SignatureHit(
        id=hit.entry.id,
        quote=_quote(line.text),
        file=source,
        line=hit.number or None,
        values=values,
        host=subject.get("host") or line.host,
        rank=_to_int(subject.get("rank")) if "rank" in subject else line.rank,
        cuda_dev=line.cuda_dev,
        bus_id=normalize_bus_id(subject.get("bus") or line.bus_id),
        gpu=_to_int(subject.get("gpu")),
        nic=subject.get("nic"),
        port=_to_int(subject.get("port")),
        link=_to_int(subject.get("link")),
    )


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:299] + "…"


@record
class Scan:
    """What :func:`scan` found in one text."""

    hits: list[SignatureHit] = field(default_factory=list)
    mentions: list[SignatureHit] = field(default_factory=list)
    dropped: int = 0
    """Hits past :data:`MAX_HITS` (counted, not kept)."""

    @property
    def faults(self) -> list[SignatureHit]:
        """The hits of entries that are not known-benign."""
        return [h for h in self.hits if not _is_benign(h.id)]


def _is_benign(entry_id: str) -> bool:
    found = entry(entry_id)
    return found is not None and found.benign


def _key(hit: SignatureHit) -> tuple[Any, ...]:
    return (
        hit.id, hit.host, hit.rank, hit.cuda_dev, hit.bus_id, hit.gpu, hit.nic, hit.port,
        hit.link, tuple(sorted(hit.values.items())),
    )  # fmt: skip


def scan(lines: list[str], source: str | None = None, numbers: list[int] | None = None) -> Scan:
    """Match every line of a paste against the catalogue (``numbers``: each line's number in
    the pasted text, when cleaning moved lines; else the position + 1).

    Identical hits (same entry, subject and values) are counted on the first; at most
    :data:`MAX_HITS` distinct hits and :data:`MAX_MENTIONS` mentions are kept.
    """
    cat = catalogue()
    found = Scan()
    index: dict[tuple[Any, ...], SignatureHit] = {}
    for position, text in enumerate(lines):
        number = numbers[position] if numbers and position < len(numbers) else position + 1
        for message in messages(text):
            hit = match_line(message, number, cat)
            if hit is not None:
                _count(found, index, _record(hit, source), hit.mention)
    return found


def _count(
    found: Scan, index: dict[tuple[Any, ...], SignatureHit], record_: SignatureHit, mention: bool
) -> None:
    """Keep one hit of :func:`scan` (identical hits counted on the first)."""
    if mention:
        if len(found.mentions) < MAX_MENTIONS:
            found.mentions.append(record_)
        return
    key = _key(record_)
    if key in index:
        index[key].count += 1
    elif len(found.hits) < MAX_HITS:
        index[key] = record_
        found.hits.append(record_)
    else:
        found.dropped += 1


# ----------------------------------------------------------------------------- judging


@record(frozen=True)
class Verdict:
    """What one hit means: the entry, its severity and what a looked-up value adds."""

    entry: Entry
    severity: str
    detail: str = ""
    """``status 12 = IBV_WC_RETRY_EXC_ERR`` (each looked-up value and its name)."""
    meaning: str = ""
    """The looked-up value's meaning, else the entry's."""


def judge(hit: SignatureHit) -> Verdict | None:
    """The verdict on one hit by the bundled catalogue (None for an unknown id).

    Severity, first that applies: a ``when`` rule whose pattern the line matches, the
    looked-up value's own severity (the first lookup that finds a row), the entry's severity.
    The meaning is the first found row's; the detail names every row found once.
    """
    found = entry(hit.id)
    if found is None:
        return None
    severity = found.severity
    meaning = found.meaning
    details: list[str] = []
    rows: list[dict[str, Any]] = []
    for group, table_name in found.lookup:
        value = hit.values.get(group)
        looked_up = lookup(table_name, value) if value is not None else None
        if looked_up is None or any(looked_up[1] is seen for seen in rows):
            continue
        key, looked = looked_up
        if not rows:
            meaning = looked.get("meaning", meaning)
            severity = looked.get("severity", severity)
        rows.append(looked)
        label = f"{group.replace('_', ' ')} " if key == value else ""
        details.append(f"{label}{key} = {looked.get('name', '?')}")
    detail = "; ".join(details)
    for pattern, rule_severity in found.when:
        if pattern.search(hit.quote or ""):
            severity = rule_severity
            break
    return Verdict(found, severity, detail, meaning)

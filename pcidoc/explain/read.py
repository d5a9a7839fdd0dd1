"""Reading a job's files as they lie: folders walked (bounded), each file recognised by its
content, text files read line by line (:mod:`pcidoc.explain.lines`), what pcidoc already reads
one file at a time (NCCL logs, RAS, watchdog timeouts, kernel logs, Inspector) taken from
:func:`pcidoc.collect.importers.import_texts`, flight-recorder dumps read without unpickling
anything but plain data (:mod:`pcidoc.explain.flight`), pcidoc captures loaded for the GPUs'
bus ids.

Everything read is outside text: sizes, file counts and time are bounded, and every line is
cleaned of terminal control sequences before it is kept (:mod:`pcidoc.sanitize`).
"""

from __future__ import annotations

import os
import re
import stat
from collections import Counter
from pathlib import Path
from typing import Any

from pcidoc._record import field, record
from pcidoc.errors import PcidocError
from pcidoc.explain import lines as L
from pcidoc.explain.facts import Event, JobFacts, Ref, Unread
from pcidoc.sanitize import clean_line

MAX_FILES = 4000
"""Files read at most (the rest are named as skipped)."""
MAX_FILE_BYTES = 64 * 2**20
MAX_TOTAL_BYTES = 512 * 2**20
MAX_DEPTH = 8
MAX_LINES = 2_000_000
"""Lines of one file that are read."""
MAX_LINE_CHARS = 4096
"""Characters of a line the readers look at (a log line is shorter; a 64 MiB line without a
newline is not a log)."""
TIME_BUDGET_S = 120.0
"""Reading stops (and says so) after this long."""
_SKIP_SUFFIXES = frozenset({".py", ".pyc", ".so", ".png", ".jpg", ".gif", ".pdf", ".zip", ".tar"})


@record
class Source:
    """A file to read, with the host its folder names (if any) and its name for messages."""

    path: str
    label: str
    folder_host: str | None = None


@record
class Budget:
    """What is left to read."""

    deadline: float
    files: int = MAX_FILES
    bytes_left: int = MAX_TOTAL_BYTES
    stopped: str | None = None


# ------------------------------------------------------------------------------- walking


def _hostlike_folder(name: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*", name)) and (
        any(c.isdigit() for c in name) or "-" in name
    )


def _walk(root: str, facts: JobFacts, budget: Budget) -> list[Source]:
    """Regular files under ``root`` (not following links to folders), bounded."""
    out: list[Source] = []
    base = os.path.basename(os.path.normpath(root))
    stack: list[tuple[str, int, str | None]] = [(root, 0, None)]
    while stack:
        folder, depth, host = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            facts.unread.append(Unread(clean_line(folder), f"cannot list ({exc.strerror})"))
            continue
        sub: list[tuple[str, int, str | None]] = []
        for entry in entries:
            if len(out) >= budget.files:
                budget.stopped = f"more than {MAX_FILES} files: read the first {MAX_FILES}"
                return out
            if entry.name.startswith("."):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < MAX_DEPTH:
                        child_host = host
                        if depth == 0 and _hostlike_folder(entry.name):
                            child_host = clean_line(entry.name)
                        sub.append((entry.path, depth + 1, child_host))
                    continue
                regular = entry.is_file(follow_symlinks=True)
            except OSError:
                continue
            label = clean_line(os.path.join(base, os.path.relpath(entry.path, root)))
            if not regular:
                facts.unread.append(Unread(label, "not a regular file"))
                continue
            if Path(entry.name).suffix.lower() in _SKIP_SUFFIXES:
                continue
            out.append(Source(entry.path, label, host))
        stack.extend(reversed(sub))
    return out


def sources(paths: list[str], facts: JobFacts, budget: Budget) -> list[Source]:
    """The files named by ``paths`` (files, or folders walked)."""
    out: list[Source] = []
    for path in paths:
        try:
            info = os.stat(path)
        except OSError as exc:
            facts.unread.append(Unread(clean_line(path), f"cannot read ({exc.strerror or exc})"))
            continue
        if stat.S_ISDIR(info.st_mode):
            out.extend(_walk(path, facts, budget))
        else:
            out.append(Source(path, clean_line(path), None))
    return out


def read_bytes(path: str, limit: int) -> bytes:
    """At most ``limit`` bytes of a regular file (FIFOs and devices refused: never blocks)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise PcidocError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PcidocError(f"{path}: not a regular file")
        if info.st_size > limit:
            raise PcidocError(f"{path}: larger than {limit // 2**20} MiB")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise PcidocError(f"{path}: larger than {limit // 2**20} MiB")
        return b"".join(chunks)
    finally:
        os.close(fd)


# ----------------------------------------------------------------------------- one file


@record
class Stream:
    """What a file's lines with one prefix say about who wrote them."""

    key: tuple[str, Any]
    ranks: Counter[int] = field(default_factory=Counter)
    host: str | None = None
    local_rank: int | None = None
    pid: int | None = None


_FILE_RANK = re.compile(r"(?i)(?:^|[^a-z])rank[_-]?(\d{1,6})(?![\d])")
_TORCHRUN_DIR = re.compile(r"attempt_\d+[/\\](\d{1,4})[/\\](?:stdout|stderr|error)\.(?:log|json)$")


def _file_identity(label: str) -> tuple[int | None, int | None]:
    """(rank, local rank) a file's path names: ``rank_3.log``; torchrun's
    ``attempt_0/3/stderr.log`` (a local rank)."""
    torchrun = _TORCHRUN_DIR.search(label)
    if torchrun:
        return None, int(torchrun.group(1))
    match = _FILE_RANK.search(os.path.basename(label))
    return (int(match.group(1)) if match else None), None


class TextScanner:
    """Reads one text file into events."""

    def __init__(self, source: Source, year: int) -> None:
        self.source, self.year = source, year
        self.events: list[Event] = []
        self.streams: dict[tuple[str, Any], Stream] = {}
        self.tracebacks: dict[tuple[str, Any], L.Traceback | None] = {}

    def scan(self, text: str) -> list[Event]:
        lines = text.split("\n", MAX_LINES)[:MAX_LINES]
        style = L.detect_style(lines)
        rank_of_file, local_of_file = _file_identity(self.source.label)
        for index, raw in enumerate(lines):
            raw = raw[:MAX_LINE_CHARS]
            if not raw.strip():
                continue
            key, rest = L.split_prefix(raw, style)
            if key is None:
                key = ("launcher", None) if style is not None else ("file", None)
            self._line(index, raw, key, rest)
        self._blocks(lines)
        self._resolve(rank_of_file, local_of_file)
        return self.events

    def _stream(self, key: tuple[str, Any]) -> Stream:
        stream = self.streams.get(key)
        if stream is None:
            stream = self.streams[key] = Stream(key)
            if key[0] == "pid":
                stream.pid, stream.host = key[1][0], key[1][1]
            elif key[0] == "local":
                stream.local_rank = key[1]
        return stream

    def _ref(self, index: int, raw: str) -> Ref:
        return Ref(self.source.label, index + 1, clean_line(raw.strip())[:300])

    def _line(self, index: int, raw: str, key: tuple[str, Any], rest: str) -> None:
        stream = self._stream(key)
        trank, message = L.torch_rank(rest)
        if trank is not None:
            stream.ranks[trank] += 1
        when = L.stamp(message, self.year)
        previous = self.tracebacks.get(key)
        if previous is not None and (when is not None or previous.frames > 500):
            previous = None  # a log line (or a runaway): that traceback was cut
        state, reading = L.traceback_step(previous, message)
        self.tracebacks[key] = state
        if reading is None and state is None:
            reading = next((r for r in (f(message) for f in L.READERS) if r is not None), None)
        if reading is None:
            return
        if reading.kind == "identity":
            self._identity(stream, reading.data)
        data = dict(reading.data)
        data["_stream"] = key
        data["_msg"] = message.strip()[:300]
        self.events.append(
            Event(reading.kind, self._ref(index, raw), rank=trank, time=when, data=data)
        )

    def _identity(self, stream: Stream, data: dict[str, Any]) -> None:
        stream.ranks[data["rank"]] += 5
        stream.host = data.get("host") or stream.host
        if data.get("local_rank") is not None:
            stream.local_rank = data["local_rank"]
        if data.get("pid") is not None and stream.pid is None:
            stream.pid = data["pid"]

    def _blocks(self, lines: list[str]) -> None:
        """Multi-line launcher reports (torchrun's failure summary, mpirun's exit block)."""
        clean = [L.split_prefix(line, None)[1] for line in lines]
        for entry in L.summary_block(clean):
            index = entry.pop("line")
            self.events.append(
                Event("exit", self._ref(index, lines[index]), data=dict(entry, _summary=True))
            )
        for entry in [*L.mpi_exit_block(clean), *L.ray_death_block(clean)]:
            index = entry.pop("line")
            self.events.append(Event("exit", self._ref(index, lines[index]), data=entry))

    def _resolve(self, rank_of_file: int | None, local_of_file: int | None) -> None:
        """Give every event of a rank's stream its global rank and host."""
        for event in self.events:
            key = event.data.get("_stream")
            stream = self.streams.get(key) if key is not None else None
            if stream is None or key is None:
                event.host = event.host or self.source.folder_host
                continue
            if key == ("file", None):
                if rank_of_file is not None:
                    stream.ranks[rank_of_file] += 100
                if local_of_file is not None:
                    stream.local_rank = local_of_file
            rank = None
            if key[0] == "rank":
                rank = key[1]
            elif stream.ranks:
                rank = stream.ranks.most_common(1)[0][0]
            if event.rank is None and key[0] != "launcher":
                event.rank = rank
            event.host = stream.host or self.source.folder_host
            if stream.local_rank is not None and key[0] != "launcher":
                event.data.setdefault("local_rank", stream.local_rank)
            if stream.pid is not None and key[0] != "launcher":
                event.data.setdefault("pid", stream.pid)

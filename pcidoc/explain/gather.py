"""Gather a job's facts from its files: :func:`gather` is the collector of ``pcidoc explain``.

Each file is read once (bounded) and recognised by its content: a flight-recorder dump (pickle
or JSON), a pcidoc capture or report (the GPUs' bus ids), an NCCL RAS JSON report, or text.
Text is read line by line for what a job's logs say (:mod:`pcidoc.explain.read`) and handed to
pcidoc's importer (:func:`pcidoc.collect.importers.import_texts`) for what it already reads one
file at a time: NCCL INFO/WARN lines (ranks, bus ids, transports), RAS reports, watchdog
timeouts, kernel logs.
"""

from __future__ import annotations

import calendar
import json
import re
import time
from collections import Counter
from datetime import datetime
from typing import Any

from pcidoc.errors import PcidocError
from pcidoc.explain import read as R
from pcidoc.explain.facts import Event, GpuInfo, JobFacts, Ref, Unread
from pcidoc.explain.flight import read_dump
from pcidoc.explain.lines import find_year, stamp
from pcidoc.fileio import decode_text
from pcidoc.sanitize import clean_line, clean_text

_IMPORT_MARKERS = (
    "NCCL",
    "kernel",
    "Xid",
    "NVRM",
    "AER",
    "DMAR",
    "AMD-Vi",
    "IO_PAGE_FAULT",
    "SMMU",
    "pcieport",
    "PCIe Bus Error",
    "fallen off",
    "WorkNCCL",
    "Communicators",
    "Job summary",
    "nvidia-nvlink",
)
"""A text holding none of these has nothing for the importer's run-time readers."""


def _decode(data: bytes, label: str) -> str:
    return clean_text(decode_text(data, label))


def _classify(data: bytes) -> str:
    if data[:1] == b"\x80":
        return "pickle"
    head = data[:4096].lstrip()
    if head[:1] in (b"{", b"["):
        return "json"
    if b"\x00" in data[:65536] and data[:2] not in (b"\xff\xfe", b"\xfe\xff"):
        return "binary"
    return "text"


class Gatherer:
    """Walks the inputs and turns each file into facts."""

    def __init__(self, budget_s: float = R.TIME_BUDGET_S) -> None:
        self.facts = JobFacts()
        self.budget = R.Budget(deadline=time.monotonic() + budget_s)
        self.texts: list[tuple[R.Source, str]] = []

    def run(self, paths: list[str]) -> JobFacts:
        for source in R.sources(paths, self.facts, self.budget):
            if time.monotonic() > self.budget.deadline:
                self.budget.stopped = f"reading took longer than {R.TIME_BUDGET_S:.0f} s"
                self.facts.unread.append(Unread(source.label, "not read (time budget spent)"))
                continue
            self._file(source)
        year = self._year()
        for source, text in self.texts:
            if time.monotonic() > self.budget.deadline:
                self.budget.stopped = f"reading took longer than {R.TIME_BUDGET_S:.0f} s"
                self.facts.unread.append(Unread(source.label, "not read (time budget spent)"))
                continue
            self._text(source, text, year)
        if self.budget.stopped:
            self.facts.notes.append(self.budget.stopped)
        return self.facts

    def _year(self) -> int:
        years: Counter[int] = Counter()
        for _, text in self.texts:
            found = find_year(text[:200_000])
            if found:
                years[found] += 1
        return years.most_common(1)[0][0] if years else datetime.now().year

    def _file(self, source: R.Source) -> None:
        try:
            data = R.read_bytes(source.path, min(R.MAX_FILE_BYTES, self.budget.bytes_left))
        except PcidocError as exc:
            self.facts.unread.append(Unread(source.label, _reason(exc, source.path)))
            return
        self.budget.bytes_left -= len(data)
        kind = _classify(data)
        try:
            if kind == "pickle":
                self._flight(source, data)
            elif kind == "json":
                self._json(source, data)
            elif kind == "text":
                self.texts.append((source, _decode(data, source.label)))
                self.facts.files_read.append(source.label)
            else:
                self.facts.unread.append(Unread(source.label, "binary data"))
        except PcidocError as exc:
            self.facts.unread.append(Unread(source.label, _reason(exc, source.label)))

    def _flight(self, source: R.Source, data: bytes) -> None:
        for rank in read_dump(data, source.label):
            rank.host = source.folder_host
            self.facts.flights.append(rank)
        self.facts.files_read.append(source.label)

    def _json(self, source: R.Source, data: bytes) -> None:
        try:
            value = json.loads(data.decode("utf-8", errors="replace"))
        except (ValueError, RecursionError):
            self.texts.append((source, _decode(data, source.label)))
            self.facts.files_read.append(source.label)
            return
        schema = value.get("schema") if isinstance(value, dict) else None
        if schema in ("pcidoc.capture/1", "pcidoc.report/1"):
            self._capture(source, value)
            return
        try:
            self._flight(source, data)
            return
        except PcidocError:
            pass
        self.texts.append((source, _decode(data, source.label)))
        self.facts.files_read.append(source.label)

    def _capture(self, source: R.Source, value: Any) -> None:
        from pcidoc.collect.capture import capture_from_data

        capture = capture_from_data(value, source.label)
        host = capture.host.hostname or source.folder_host or source.label
        for gpu in capture.gpus:
            self.facts.gpus.append(
                GpuInfo(
                    host=clean_line(host),
                    index=gpu.index,
                    bus_id=gpu.bus_id,
                    name=gpu.name,
                    ports=[hop.bus_id for hop in gpu.path],
                    source=f"{source.label} (pcidoc capture)",
                )
            )
        self.facts.files_read.append(source.label)
        self._note_host(host)

    def _note_host(self, host: str | None) -> None:
        if host and host not in self.facts.hosts:
            self.facts.hosts.append(host)

    def _text(self, source: R.Source, text: str, year: int) -> None:
        events = R.TextScanner(source, year).scan(text)
        self.facts.events.extend(events)
        self._note_host(source.folder_host)
        if any(marker in text for marker in _IMPORT_MARKERS):
            self._imported(source, text, year)

    def _imported(self, source: R.Source, text: str, year: int) -> None:
        from pcidoc.collect.importers import import_texts

        try:
            result = import_texts([(source.label, text)])
        except PcidocError:
            return
        except Exception as exc:  # a reader's bug must not lose the job
            self.facts.notes.append(
                f"{source.label}: the importer failed ({exc.__class__.__name__}); its NCCL/RAS/"
                "kernel lines were not read"
            )
            return
        evidence = result.capture.evidence
        if evidence is None:
            return
        lines = text.split("\n", R.MAX_LINES)[: R.MAX_LINES]
        finder = _QuoteFinder(source.label, lines)
        adapters = (_nccl, _watchdogs, _ras, _kernel)
        for adapt in adapters:
            for event_or_gpu in adapt(evidence, source, finder, year):
                if isinstance(event_or_gpu, GpuInfo):
                    self.facts.gpus.append(event_or_gpu)
                    self._note_host(event_or_gpu.host)
                else:
                    self.facts.events.append(event_or_gpu)
                    self._note_host(event_or_gpu.host)


def _reason(exc: PcidocError, path: str) -> str:
    message = exc.message
    return message[len(path) + 2 :] if message.startswith(path + ": ") else message


class _QuoteFinder:
    """The line a quoted fact came from (importers keep the line's text, not its number)."""

    def stamp_before(self, ref: Ref | None, year: int) -> float | None:
        """The time of a kernel message's first line: a multi-line message's continuation
        lines carry no time of their own (at most 8 lines back)."""
        if ref is None or ref.line <= 0:
            return None
        for index in range(ref.line - 1, max(-1, ref.line - 9), -1):
            line = self.lines[index]
            if not line[:1].isspace():
                return kernel_clock(line[:40], year) or stamp(line, year)
        return None

    def __init__(self, label: str, lines: list[str]) -> None:
        self.label, self.lines = label, lines
        self.found: dict[str, int] = {}

    def ref(self, quote: str | None) -> Ref | None:
        if not quote:
            return None
        needle = quote.strip().strip("`")[:120]
        if needle in self.found:
            index = self.found[needle]
        else:
            index = next((i for i, line in enumerate(self.lines) if needle in line), -1)
            self.found[needle] = index
        if index < 0:
            return Ref(self.label, 0, clean_line(quote)[:300])
        return Ref(self.label, index + 1, clean_line(self.lines[index].strip())[:300])


_NCCL_PREFIX = re.compile(
    r"(?:^|\s)([^\s:\[\]]+):(\d{1,12}):\d{1,12} \[(\d{1,4})\] (?:\S+ )?NCCL (?:WARN|INFO)"
)
_TRANSPORT = re.compile(
    r"(?i)NET/IB|NET/Socket|ibv_|Got completion with error|transport|/dev/shm|posix_fallocate"
    r"|\bSHM\b|\bP2P\b|Cuda failure|unhandled (?:system|cuda) error|remote process exited"
    r"|connection closed|Connection reset|NET/\w+ : |Call to \w+ failed"
)


def _nccl(evidence: Any, source: R.Source, finder: _QuoteFinder, year: int) -> list[Any]:
    out: list[Any] = []
    for log in evidence.nccl_logs:
        dev_rank: dict[tuple[str | None, int], int] = {}
        for rank in log.ranks:
            host = rank.host or source.folder_host
            ref = finder.ref(rank.quote)
            data = {
                "rank": rank.rank,
                "world": rank.nranks,
                "device": rank.cuda_dev,
                "bus_id": rank.bus_id,
                "source": "nccl",
            }
            out.append(Event("identity", ref, rank=rank.rank, host=host, data=data))
            if rank.cuda_dev is not None:
                dev_rank[(host, rank.cuda_dev)] = rank.rank
        for connection in log.connections:
            prefix = _NCCL_PREFIX.search(connection.quote or "")
            if prefix is not None:
                key = (prefix.group(1), int(prefix.group(3)))
                dev_rank.setdefault(key, connection.src_rank)
        for quoted in [*log.warnings, *log.shm_errors]:
            # NCCL's WARN lines only: INFO lines about a transport it did not choose (P2P
            # disabled, no IB device) describe a fallback, not a failure.
            if not quoted.quote or "WARN" not in quoted.quote:
                continue
            if not _TRANSPORT.search(quoted.quote):
                continue
            ref = finder.ref(quoted.quote)
            prefix = _NCCL_PREFIX.search(quoted.quote)
            host = prefix.group(1) if prefix else source.folder_host
            rank_no = dev_rank.get((host, int(prefix.group(3)))) if prefix else None
            when = stamp(ref.text, year) if ref else None
            out.append(
                Event(
                    "transport",
                    ref,
                    rank=rank_no,
                    host=host,
                    time=when,
                    data={"what": quoted.quote[:200]},
                )
            )
    return out


def _watchdogs(evidence: Any, source: R.Source, finder: _QuoteFinder, year: int) -> list[Any]:
    out: list[Any] = []
    for dog in evidence.nccl_watchdogs:
        ref = finder.ref(dog.quote)
        data = {
            "seq": dog.seq,
            "op": dog.op,
            "last_enqueued": dog.last_enqueued,
            "last_completed": dog.last_completed,
            "timeout_ms": dog.timeout_ms,
            "ran_ms": dog.ran_ms,
        }
        when = stamp(_after_prefixes(ref.text), year) if ref else None
        out.append(
            Event(
                "watchdog",
                ref,
                rank=dog.rank,
                host=dog.host or source.folder_host,
                time=when,
                data=data,
            )
        )
    return out


def _after_prefixes(text: str) -> str:
    from pcidoc.explain.lines import STYLES, torch_rank

    for style in STYLES:
        match = style.pattern.match(text)
        if match:
            text = text[match.end() :]
            break
    return torch_rank(text.lstrip("`"))[1]


def _ras(evidence: Any, source: R.Source, finder: _QuoteFinder, year: int) -> list[Any]:
    out: list[Any] = []
    for report in evidence.nccl_ras:
        groups = [
            {"ranks": g.ranks, "ops": g.ops, "collective": g.collective} for g in report.counts
        ]
        for rank in report.ranks:
            data = {
                "state": rank.state,
                "ops": rank.ops,
                "device": rank.gpu,
                "pid": rank.pid,
                "groups": groups,
                "comm": rank.comm,
            }
            out.append(
                Event("ras", finder.ref(rank.quote), rank=rank.rank, host=rank.host, data=data)
            )
        if not report.ranks and groups:
            out.append(Event("ras", None, data={"state": "counts", "groups": groups}))
    return out


_SYSLOG_CLOCK = re.compile(r"^([A-Z][a-z]{2})\s+(\d{1,2})\s+(\d\d):(\d\d):(\d\d)")
_DMESG_T = re.compile(
    r"^[A-Z][a-z]{2}\s+([A-Z][a-z]{2})\s+(\d{1,2})\s+(\d\d):(\d\d):(\d\d)\s+(\d{4})"
)
_MONTHS = {m: i for i, m in enumerate(calendar.month_abbr) if m}


def kernel_clock(clock: str | None, year: int) -> float | None:
    """Seconds of a kernel line's own time text (ISO, syslog without a year, ``dmesg -T``)."""
    if not clock:
        return None
    when = stamp(clock, year)
    if when is not None:
        return when
    for pattern in (_DMESG_T, _SYSLOG_CLOCK):
        match = pattern.match(clock.strip())
        if match:
            mon, day, hh, mm, ss = match.groups()[:5]
            use = int(match.group(6)) if pattern is _DMESG_T else year
            if mon not in _MONTHS:
                return None
            try:
                return float(
                    calendar.timegm((use, _MONTHS[mon], int(day), int(hh), int(mm), int(ss)))
                )
            except (ValueError, OverflowError):
                return None
    return None


_KERNEL_KINDS = (
    ("xids", "xid"),
    ("fallen_off_bus", "fallen_off_bus"),
    ("aer", "aer"),
    ("aer_recovery", "aer_recovery"),
    ("iommu_faults", "iommu"),
    ("link_notices", "link_notice"),
    ("nvlink", "nvlink"),
)


def _kernel(evidence: Any, source: R.Source, finder: _QuoteFinder, year: int) -> list[Any]:
    out: list[Any] = []
    for log in evidence.kernel_logs:
        host = log.hosts[0] if len(log.hosts) == 1 else source.folder_host
        for attr, kind in _KERNEL_KINDS:
            for item in getattr(log, attr):
                data: dict[str, Any] = {"type": kind, "bus_id": item.bus_id}
                for name in ("code", "severity", "outcome", "iommu", "text", "link", "port"):
                    value = getattr(item, name, None)
                    if value is not None:
                        data[name] = value
                ref = finder.ref(item.quote)
                when = kernel_clock(item.clock, year) or finder.stamp_before(ref, year)
                out.append(Event("kernel", ref, host=host, time=when, data=data))
    return out


def gather(paths: list[str], budget_s: float = R.TIME_BUDGET_S) -> JobFacts:
    """Read a job's files (folders walked) into :class:`JobFacts`."""
    return Gatherer(budget_s).run(paths)

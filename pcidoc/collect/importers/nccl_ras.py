"""NCCL at run time: RAS status reports (``ncclras`` text and ``-f json``), PyTorch's
ProcessGroupNCCL watchdog timeouts and flight-recorder dumps (JSON).

RAS text (NCCL 2.24+) is a sequence of sections (``Job summary``, ``Communicators``, ``Errors``,
``Warnings``); inside ``Errors``/``Warnings`` each block starts with a keyword (``INCOMPLETE``,
``DEAD``, ``TIMEOUT``) or a communicator (``#0-0 (hash) MISMATCH``) and lists the ranks or
processes concerned. A ``Rank N -- GPU g managed by process p on node h`` line belongs to the
last ``N ranks have launched up to operation X`` line before it: those ranks are behind or
ahead of the others by comparing the counts (RAS prints the minority, which may be the ranks
that are ahead, not the stalled ones).
"""

from __future__ import annotations

from typing import Any

from pcidoc._lazyre import lazy
from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.text import Doc, json_int
from pcidoc.collect.importers.walk import BAD_VALUES, each_line, first_line
from pcidoc.model.runtime import (
    FlightEntry,
    FlightRecorderDump,
    NcclRasReport,
    NcclWatchdog,
    RasComm,
    RasCountGroup,
    RasOutlier,
    RasRank,
)

FORMAT_RAS = "nccl-ras"
FORMAT_WATCHDOG = "nccl-watchdog"
FORMAT_FLIGHT = "flight-recorder"

_VERSION_RE = lazy(r"NCCL version (\d+\.\d+\.\d+)")
_COMM_HEAD_RE = lazy(r"^#(\d+-\d+)\s+\(([0-9a-fA-F]+)\)\s+([A-Z_,]+)\s*$")
_GROUP_ROW_RE = lazy(
    r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+([\d-]+)\s+(\d+)\s+(\d+)\s+([A-Z_]+)\s+([A-Z_,]+)\s*$"
)
_COUNT_RE = lazy(r"^\s*(\d+) ranks? (?:have|has) (?:launched up to operation (\d+)|not launched)")
_DIFFERENT_RE = lazy(r"different (\w+ )?operation counts")
_RANK_RE = lazy(
    r"^\s*Rank (\d+)(?: has launched up to operation (\d+)| has not launched any operations"
    r"| has status (\w+)| reported (.{1,300}?))?\s+--\s+(?:GPU (\d+)(?: \(NVML (\d+)\))?"
    r" managed by process (\d+) on node (\S+)|\[process information not found\])"
)
_PROCESS_RE = lazy(r"^\s*Process (\d+) on node (\S+) managing GPUs? ([\d, ()NVML]+)")
_MISSING_RE = lazy(r"Missing communicator data from (\d+) (job process|rank)")
_DEAD_RE = lazy(r"(?<!\d)(\d+) job process(?:es are| is) considered dead")
_TIMEOUT_RE = lazy(r"Encountered (\d+) communication timeout")
_NET_MISSING_RE = lazy(r"missing data from (\d+) process")
_OUTLIER_RE = lazy(r"^\s*Node (\S+) running process")
_TOTALS_RE = lazy(r"^\s*(\d+)\s+(\d+)\s+(\d+)(?:\s+(\d+)\s+(\d+))?\s*$")

_BLOCK_STATES = {"INCOMPLETE": "missing", "DEAD": "dead", "ERROR": "error", "MISMATCH": "status"}


def _ras_title(line: str) -> bool:
    return "Comm" in line or "Job summary" in line


def looks_like_ras(doc: Doc) -> bool:
    """True when the text holds a RAS report (its section titles, within 5,000 lines of the
    first one: whatever comes before the report does not hide it)."""
    first = first_line(doc, _ras_title) or 0
    head = [line for line in doc.lines[first : first + 5000] if _ras_title(line)]
    has_comms = any(line.startswith("Communicators...") for line in head)
    has_table = any(line.lstrip().startswith("Group     Comms") for line in head)
    return has_comms or (has_table and any("Job summary" in line for line in head))


class _Reader:
    """State while walking a RAS text report."""

    def __init__(self, source: str) -> None:
        self.report = NcclRasReport(source=source, fmt="text")
        self.section = ""
        self.block: str | None = None
        """The current error block: a keyword or a communicator id."""
        self.block_state = "missing"
        self.group: RasCountGroup | None = None
        self.totals_next = False

    def line(self, raw: str) -> None:
        stripped = raw.strip()
        if not stripped or set(stripped) == {"="}:
            return
        if self._section(stripped):
            return
        for step in (self._version, self._summary, self._block_head, self._counts, self._rank):
            if step(raw, stripped):
                return
        self._numbers(stripped)

    def _section(self, stripped: str) -> bool:
        for title in ("Job summary", "Communicators", "Errors", "Warnings"):
            if stripped.startswith(title):
                self.section = title
                self.block = None
                self.group = None
                return True
        if stripped.startswith("The outlier node"):
            self.section = "outliers"
            return True
        if stripped.startswith("Gathering data about the RAS network"):
            self.section = "network"
            self.block = None
            lost = _NET_MISSING_RE.search(stripped)
            if lost:
                self.report.missing_processes = max(
                    self.report.missing_processes, int(lost.group(1))
                )
            return True
        return False

    def _version(self, raw: str, stripped: str) -> bool:
        match = _VERSION_RE.search(stripped)
        if match and self.report.version is None:
            self.report.version = match.group(1)
            return True
        return False

    def _summary(self, raw: str, stripped: str) -> bool:
        if self.section == "outliers":
            match = _OUTLIER_RE.match(raw)
            if match:
                self.report.outliers.append(RasOutlier(host=match.group(1), quote=stripped))
                return True
        if self.section == "Job summary":
            if stripped.startswith("(total)"):
                self.totals_next = True
                return True
            match = _TOTALS_RE.match(raw)
            if match and self.totals_next:
                self._totals(match.groups())
                self.totals_next = False
                return True
        if self.section == "Communicators":
            match = _GROUP_ROW_RE.match(raw)
            if match:
                group, _comms, _nodes, _rpn, per_comm, _in_group, status, errors = match.groups()
                self.report.comms.append(
                    RasComm(
                        ident=f"group {group}",
                        status=status,
                        errors=errors.split(","),
                        ranks=int(per_comm),
                        quote=stripped,
                    )
                )
                return True
        return False

    def _totals(self, groups: tuple[str | None, ...]) -> None:
        values = [int(g) for g in groups if g is not None]
        if len(values) == 5:  # nodes, processes per node, GPUs per process, processes, GPUs
            self.report.nodes, _, _, self.report.processes, self.report.gpus = values
        elif len(values) == 3:  # nodes, processes, GPUs (totals table of a mixed job)
            self.report.nodes, self.report.processes, self.report.gpus = values

    def _block_head(self, raw: str, stripped: str) -> bool:
        if self.section not in ("Errors", "Warnings"):
            return False
        match = _COMM_HEAD_RE.match(stripped)
        if match:
            ident, _hash, errors = match.groups()
            self.block = "#" + ident
            self.block_state = _BLOCK_STATES.get(errors.split(",")[0], "status")
            self.group = None
            self.report.comms.append(
                RasComm(ident=self.block, errors=errors.split(","), quote=stripped)
            )
            return True
        if stripped in ("INCOMPLETE", "DEAD", "TIMEOUT"):
            self.block = stripped
            self.block_state = _BLOCK_STATES.get(stripped, "missing")
            self.group = None
            return True
        return self._block_facts(stripped)

    def _block_facts(self, stripped: str) -> bool:
        for pattern, action in (
            (_MISSING_RE, self._missing),
            (_DEAD_RE, self._dead),
            (_TIMEOUT_RE, self._timeouts),
        ):
            match = pattern.search(stripped)
            if match:
                action(match)
                return True
        if _DIFFERENT_RE.search(stripped):
            self.block_state = "counts"
            word = _DIFFERENT_RE.search(stripped).group(1)  # type: ignore[union-attr]
            self._collective = word.strip() if word else None
            return True
        return False

    def _missing(self, match: Any) -> None:
        count = int(match.group(1))
        if match.group(2) == "job process":
            self.report.missing_processes = max(self.report.missing_processes, count)
            return
        comm = self._comm(self.block)
        if comm is not None:
            comm.missing = count

    def _dead(self, match: Any) -> None:
        self.report.dead_processes = max(self.report.dead_processes, int(match.group(1)))

    def _timeouts(self, match: Any) -> None:
        self.report.timeouts = max(self.report.timeouts, int(match.group(1)))

    def _comm(self, ident: str | None) -> RasComm | None:
        for comm in self.report.comms:
            if comm.ident == ident:
                return comm
        return None

    def _counts(self, raw: str, stripped: str) -> bool:
        match = _COUNT_RE.match(raw)
        if not match or self.section not in ("Errors", "Warnings"):
            return False
        self.group = RasCountGroup(
            comm=self.block,
            collective=getattr(self, "_collective", None),
            ranks=int(match.group(1)),
            ops=int(match.group(2) or 0),
        )
        self.report.counts.append(self.group)
        return True

    def _rank(self, raw: str, stripped: str) -> bool:
        match = _RANK_RE.match(raw)
        if match:
            rank, ops, status, reported, gpu, nvml, pid, host = match.groups()
            state = self.block_state
            if ops is not None or "not launched" in stripped:
                state = "counts"
            entry = RasRank(
                rank=int(rank),
                comm=self.block,
                gpu=_int(gpu),
                nvml_dev=_int(nvml) if nvml else _int(gpu),
                pid=_int(pid),
                host=host,
                state=state,
                quote=stripped,
            )
            if state == "counts":
                entry.ops = int(ops) if ops is not None else self._group_ops(stripped)
                if " has " in stripped and entry.ops is not None:
                    # A group of one: RAS prints its count on the rank line only.
                    self.report.counts.append(
                        RasCountGroup(
                            comm=self.block,
                            collective=getattr(self, "_collective", None),
                            ranks=1,
                            ops=entry.ops,
                        )
                    )
            elif reported:
                entry.state = "error"
            elif status:
                entry.state = "status"
            self.report.ranks.append(entry)
            return True
        lost = _NET_MISSING_RE.search(stripped)
        if lost and self.section == "network":
            self.report.missing_processes = max(self.report.missing_processes, int(lost.group(1)))
            return True
        match = _PROCESS_RE.match(raw)
        if match and self.section in ("Errors", "Warnings", "Communicators", "network"):
            pid, host, gpus = match.groups()
            first = _int(gpus.split(",")[0].split("(")[0].strip())
            state = "dead" if self.block == "DEAD" else "missing"
            self.report.ranks.append(
                RasRank(pid=int(pid), host=host, gpu=first, state=state, quote=stripped)
            )
            return True
        return False

    def _group_ops(self, stripped: str) -> int | None:
        if "has not launched" in stripped:
            return 0
        return self.group.ops if self.group is not None else None

    def _numbers(self, stripped: str) -> None:
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _judge_counts(report: NcclRasReport) -> None:
    """Rank lines inside a count mismatch: behind or ahead of the other ranks."""
    by_comm: dict[str | None, list[RasCountGroup]] = {}
    for group in report.counts:
        by_comm.setdefault(group.comm, []).append(group)
    for entry in report.ranks:
        if entry.state != "counts":
            continue
        groups = by_comm.get(entry.comm, [])
        others = [g.ops for g in groups if g.ops != entry.ops]
        if entry.ops is None or not others:
            entry.state = "status"
        elif entry.ops < max(others):
            entry.state = "behind"
        else:
            entry.state = "ahead"


def _plausibility(report: NcclRasReport) -> None:
    """Numbers a sound report cannot hold (RAS bugs seen in the field)."""
    total = report.gpus or report.processes
    for comm in report.comms:
        if total and comm.missing and comm.missing > total:
            report.implausible.append(
                f"{comm.ident}: {comm.missing} missing ranks in a job of {total} GPUs"
            )


def _ras_line(reader: _Reader, raw: str, index: int) -> bool:
    reader.line(raw)
    return True


def parse_ras_text(doc: Doc, source: str, notes: list[str] | None = None) -> NcclRasReport:
    """The RAS report in a text (see the module docstring): 20,000 lines from where it starts
    (the version lines just before its first section title). ``notes`` receives a warning
    about lines whose values are out of range (skipped)."""
    reader = _Reader(source)
    start = max(0, (first_line(doc, _ras_title) or 0) - 20)
    walker = each_line(doc, reader, _ras_line, start=start, stop=start + 20000)
    report = reader.report
    note = walker.bad_values_note(FORMAT_RAS)
    if note and notes is not None:
        notes.append(note)
    _judge_counts(report)
    _plausibility(report)
    return report


# ------------------------------------------------------------------------------- JSON


def looks_like_ras_json(data: Any) -> bool:
    """True for the object ``ncclras -f json`` prints."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("communicators"), list)
        and ("nccl_version" in data or "communicators_count" in data)
    )


def _json_rank(item: dict[str, Any], comm: str, state: str) -> RasRank:
    return RasRank(
        rank=_as_int(item.get("rank")),
        comm=comm,
        gpu=_as_int(item.get("cuda_dev")),
        nvml_dev=_as_int(item.get("nvml_dev")),
        pid=_as_int(item.get("pid")),
        host=str(item["host"]) if item.get("host") is not None else None,
        state=state,
    )


def _as_int(value: Any) -> int | None:
    return json_int(value)


def _json_comm(report: NcclRasReport, comm: dict[str, Any]) -> None:
    ident = str(comm.get("hash") or f"#{len(report.comms)}")
    ranks = [r for r in comm.get("ranks") or [] if isinstance(r, dict)]
    missing = [r for r in comm.get("missing_ranks") or [] if isinstance(r, dict)]
    errors = []
    for item in missing:
        status = item.get("status") if isinstance(item.get("status"), dict) else {}
        state = "dead" if status.get("considered_dead") else "missing"
        if state == "missing" and status.get("unresponsive"):
            state = "unresponsive"
        report.ranks.append(_json_rank(item, ident, state))
    for item in ranks:
        status = item.get("status") if isinstance(item.get("status"), dict) else {}
        if status.get("async_error") or status.get("abort_flag"):
            report.ranks.append(_json_rank(item, ident, "error"))
            errors.append("ERROR")
    _json_counts(report, ident, ranks)
    if missing:
        errors.insert(0, "INCOMPLETE")
    if any(c.comm == ident for c in report.counts):
        errors.append("MISMATCH")
    report.comms.append(
        RasComm(
            ident=ident,
            status="RUNNING",
            errors=errors or ["OK"],
            ranks=_as_int(comm.get("size")),
            missing=_as_int(comm.get("missing_ranks_count")) or len(missing) or None,
        )
    )


def _json_counts(report: NcclRasReport, ident: str, ranks: list[dict[str, Any]]) -> None:
    """Per collective type, the ranks whose count differs from the others'."""
    names = {
        n
        for r in ranks
        if isinstance(r.get("collective_counts"), dict)
        for n in r["collective_counts"]
    }
    for name in sorted(names):
        counts = {
            i: c
            for i, r in enumerate(ranks)
            if isinstance(r.get("collective_counts"), dict)
            and isinstance(c := r["collective_counts"].get(name), int)
        }
        values = sorted(set(counts.values()))
        if len(values) < 2:
            continue
        top = max(values)
        for value in values:
            members = [i for i, c in counts.items() if c == value]
            report.counts.append(
                RasCountGroup(comm=ident, collective=name, ranks=len(members), ops=value)
            )
            state = "ahead" if value == top else "behind"
            for i in members:
                entry = _json_rank(ranks[i], ident, state)
                entry.ops = value
                report.ranks.append(entry)


def parse_ras_json(data: dict[str, Any], source: str) -> NcclRasReport:
    """The report ``ncclras -f json`` printed."""
    report = NcclRasReport(source=source, fmt="json")
    version = data.get("nccl_version")
    report.version = str(version) if version is not None else None
    for comm in data["communicators"]:
        if isinstance(comm, dict):
            _json_comm(report, comm)
    ras = data.get("ras") if isinstance(data.get("ras"), dict) else {}
    report.timeouts = _as_int(ras.get("timeouts_count")) or 0
    hosts = {r.host for r in report.ranks if r.host}
    report.nodes = len(hosts) or None
    return report


def summary_ras(report: NcclRasReport) -> str:
    """One line for ``origin.sources[].read``."""
    states: dict[str, int] = {}
    for rank in report.ranks:
        states[rank.state] = states.get(rank.state, 0) + 1
    named = ", ".join(f"{n} {s}" for s, n in sorted(states.items()))
    return (
        f"NCCL RAS report ({report.fmt}"
        + (f", NCCL {report.version}" if report.version else "")
        + f"): {len(report.comms)} communicator line(s)"
        + (f"; ranks/processes named: {named}" if named else "")
    )


# --------------------------------------------------------------------------- watchdog

_WORK_RE = lazy(
    r"WorkNCCL\(SeqNum=(\d+), OpType=(\w+)(?:, NumelIn=(-?\d+), NumelOut=(-?\d+))?"
    r"(?:, Timeout\(ms\)=(\d+))?\) ran for (\d+) milliseconds before timing out"
)
_LAST_RE = lazy(
    r"(?i)(?:at (?:NCCL )?work: (\d+), )?last enqueued (?:NCCL )?work: (-?\d+), "
    r"last completed (?:NCCL )?work: (-?\d+)"
)
_STUCK_RE = lazy(r"watchdog got stuck for (\d+) seconds")
_DUMP_FROM_RE = lazy(r"collective timeout from\s+rank (\d+)")
_SIGNALS = (
    "before timing out",
    "detected by watchdog",
    "Received a dump signal",
    "watchdog got stuck",
)
_RANK_TAG_RE = lazy(r"\[(?:PG (?:ID )?(\S+)(?: PG GUID \S+)? )?Rank (\d+)\]")
_RANK_PREFIX_RE = lazy(r"\[rank(\d+)\]")
_HOST_PREFIX_RE = lazy(r"^([A-Za-z0-9][\w.-]*): \[")


def _rank_of(line: str) -> tuple[int | None, str | None]:
    tag = _RANK_TAG_RE.search(line)
    if tag:
        return int(tag.group(2)), tag.group(1)
    prefix = _RANK_PREFIX_RE.search(line)
    return (int(prefix.group(1)) if prefix else None), None


class _Watch:
    """Watchdog facts per (rank, process group) while walking the lines."""

    def __init__(self) -> None:
        self.found: dict[tuple[int | None, str | None], NcclWatchdog] = {}
        self.by_rank: dict[int | None, NcclWatchdog] = {}

    def entry(self, rank: int | None, pg: str | None, raw: str) -> NcclWatchdog:
        entry = self.found.get((rank, pg))
        if entry is None:
            other = self.by_rank.get(rank)
            if other is not None and (pg is None or other.pg in (None, pg)):
                entry = other
        if entry is None:
            entry = NcclWatchdog(rank=rank, pg=pg, quote=raw.strip().strip("`")[:300])
            self.found[(rank, pg)] = entry
            self.by_rank.setdefault(rank, entry)
        if entry.pg is None and pg is not None:
            entry.pg = pg
        return entry

    def line(self, raw: str) -> None:
        rank, pg = _rank_of(raw)
        match = _WORK_RE.search(raw)
        if match:
            entry = self.entry(rank, pg, raw)
            if entry.op is None:
                seq, op, n_in, n_out, timeout, ran = match.groups()
                entry.seq, entry.op, entry.ran_ms = int(seq), op, int(ran)
                entry.numel_in, entry.numel_out = _int(n_in), _int(n_out)
                entry.timeout_ms = _int(timeout)
                entry.quote = raw.strip().strip("`")[:300]
                host = _HOST_PREFIX_RE.match(raw.strip("` "))
                if host and not host.group(1).startswith("rank"):
                    entry.host = host.group(1)
            return
        last = _LAST_RE.search(raw)
        if last and "periodically" not in raw:
            entry = self.entry(rank, pg, raw)
            seq, enqueued, completed = last.groups()
            entry.seq = entry.seq if entry.seq is not None else _int(seq)
            entry.last_enqueued, entry.last_completed = int(enqueued), int(completed)
            return
        stuck = _STUCK_RE.search(raw)
        if stuck:
            entry = self.entry(rank, pg, raw)
            entry.op = entry.op or "watchdog stuck"
            entry.ran_ms = entry.ran_ms or int(stuck.group(1)) * 1000


def extract_watchdogs(doc: Doc) -> list[NcclWatchdog]:
    """Every rank's watchdog timeout and status in the text (one entry per rank and process
    group): ``WorkNCCL(...) ran for ... before timing out``, the ``last enqueued/completed
    NCCL work`` status lines printed on a timeout or a dump signal, a stuck watchdog. Periodic
    status lines of a healthy job are not timeouts: read only when a timeout signal exists."""
    lines = [raw for raw in doc.lines[:200000] if "ork" in raw or "watchdog" in raw]
    if not any(signal in raw for raw in lines for signal in _SIGNALS):
        return []
    watch = _Watch()
    for raw in lines:
        try:
            watch.line(raw)
        except BAD_VALUES:
            continue  # a number out of range: the line says nothing usable
    return list(watch.found.values())


def summary_watchdogs(items: list[NcclWatchdog]) -> str:
    """One line for ``origin.sources[].read``."""
    ranks = sorted({w.rank for w in items if w.rank is not None})
    ops = sorted({f"{w.op} SeqNum={w.seq}" for w in items if w.op})
    return (
        f"PyTorch NCCL watchdog: {len(items)} timeout(s)"
        + (f" on rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}" if ranks else "")
        + (f" ({'; '.join(ops[:3])})" if ops else "")
    )


# --------------------------------------------------------------------- flight recorder


def looks_like_flight_recorder(data: Any) -> bool:
    """True for a flight-recorder dump as JSON (``entries`` with collective sequence ids)."""
    if isinstance(data, list):
        return bool(data) and all(looks_like_flight_recorder(d) for d in data[:64])
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        return False
    first = next((e for e in data["entries"] if isinstance(e, dict)), None)
    return (
        first is not None
        and ("collective_seq_id" in first or "profiling_name" in first or "record_id" in first)
    ) or isinstance(data.get("pg_status"), dict)


def _fr_rank(data: dict[str, Any], index: int) -> int | None:
    for key in ("rank", "global_rank"):
        if json_int(data.get(key)) is not None:
            return int(data[key])
    return index


def _fr_dump(data: dict[str, Any], index: int) -> list[FlightEntry]:
    rank = _fr_rank(data, index)
    per_pg: dict[str, FlightEntry] = {}
    for entry in data.get("entries") or []:
        if not isinstance(entry, dict) or entry.get("is_p2p"):
            continue
        pg = entry.get("process_group")
        name = str(pg[0]) if isinstance(pg, list) and pg else str(entry.get("pg_id", "0"))
        seq = _as_int(entry.get("collective_seq_id"))
        current = per_pg.setdefault(name, FlightEntry(rank=rank, pg=name))
        op = str(entry.get("profiling_name") or "").removeprefix("nccl:") or None
        state = entry.get("state")
        if seq is None:
            continue
        if state == "completed" and (current.last_completed or -1) < seq:
            current.last_completed = seq
        if state in ("started", "completed") and (current.last_started or -1) < seq:
            current.last_started = seq
        if (current.last_enqueued or -1) < seq:
            current.last_enqueued = seq
            current.seq, current.op, current.state = seq, op, str(state) if state else None
    status = data.get("pg_status")
    if isinstance(status, dict):
        for name, values in status.items():
            if not isinstance(values, dict):
                continue
            current = per_pg.setdefault(str(name), FlightEntry(rank=rank, pg=str(name)))
            current.last_enqueued = _as_int(values.get("last_enqueued_collective"))
            current.last_started = _as_int(values.get("last_started_collective"))
            current.last_completed = _as_int(values.get("last_completed_collective"))
    return list(per_pg.values())


def parse_flight_recorder(data: Any, source: str) -> FlightRecorderDump:
    """The last collective of every rank and process group in the dump(s)."""
    dumps = data if isinstance(data, list) else [data]
    result = FlightRecorderDump(source=source)
    for index, dump in enumerate(dumps):
        if not isinstance(dump, dict):
            continue
        if result.version is None and dump.get("version") is not None:
            result.version = str(dump["version"])
        result.entries += len(dump.get("entries") or [])
        result.ranks.extend(_fr_dump(dump, index if len(dumps) > 1 else _rank_hint(source)))
    return result


def _rank_hint(source: str) -> int | None:
    import re

    match = re.search(r"rank[_-]?(\d+)", source)
    return int(match.group(1)) if match else None


def summary_flight(dump: FlightRecorderDump) -> str:
    """One line for ``origin.sources[].read``."""
    return (
        f"PyTorch flight recorder: {dump.entries} entries, "
        f"{len({(r.rank, r.pg) for r in dump.ranks})} record(s) of a rank and process group"
    )


# ----------------------------------------------------------------------- the importer's face


def read_ras(doc: Doc, ctx: Context) -> list[Fragment]:
    """A RAS text report, or else the RAS JSON reports and flight-recorder dumps pasted among
    other lines (a prompt, a command, prose): each top-level object is tried on its own."""
    if looks_like_ras(doc):
        report = parse_ras_text(doc, ctx.file, ctx.warnings)
        return [_ras_fragment(report)]
    from pcidoc.collect.importers.nccl_inspector import json_objects

    head = "\n".join(doc.lines[:200000])
    if '"communicators"' not in head and '"collective_seq_id"' not in head:
        return []
    found = []
    for value in json_objects(head, limit=64):
        if looks_like_ras_json(value):
            found.append(ras_json_fragment(value, ctx))
        elif looks_like_flight_recorder(value):
            found.append(flight_fragment(value, ctx))
    return found


def _ras_fragment(report: NcclRasReport) -> Fragment:
    frag = Fragment(FORMAT_RAS)
    frag.evidence.nccl_ras.append(report)
    frag.read.append(summary_ras(report))
    if report.version:
        frag.tool_versions["nccl"] = report.version
    return frag


def ras_json_fragment(data: Any, ctx: Context) -> Fragment:
    """The fragment of a RAS JSON report (``ncclras -f json``)."""
    return _ras_fragment(parse_ras_json(data, ctx.file))


def flight_fragment(data: Any, ctx: Context) -> Fragment:
    """The fragment of a flight-recorder dump."""
    dump = parse_flight_recorder(data, ctx.file)
    frag = Fragment(FORMAT_FLIGHT)
    frag.evidence.flight_records.append(dump)
    frag.read.append(summary_flight(dump))
    return frag


def read_watchdogs(doc: Doc, ctx: Context) -> list[Fragment]:
    """Every ProcessGroupNCCL watchdog line of ``doc``, in one fragment."""
    watchdogs = extract_watchdogs(doc)
    if not watchdogs:
        return []
    frag = Fragment(FORMAT_WATCHDOG)
    frag.evidence.nccl_watchdogs.extend(watchdogs)
    frag.read.append(summary_watchdogs(watchdogs))
    return [frag]

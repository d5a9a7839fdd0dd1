"""NCCL Inspector output (the profiler plugin of NCCL 2.28+): per-collective bus bandwidth as
JSON records (``header``/``metadata``/``coll_perf``, one per collective and communicator,
pretty-printed or one per line) or Prometheus textfile samples
(``nccl_bus_bandwidth_gbs{...} 678.2``); and NCCL's example profiler plugin trace (Chrome
trace events), which carries timings but no bandwidth.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pcidoc._lazyre import lazy
from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.text import Doc, json_float, json_integer, to_float, to_int
from pcidoc.model.runtime import InspectorRecord, ProfilerTrace

FORMAT_INSPECTOR = "nccl-inspector"
MAX_JSON_FAILURES = 200
"""Start positions tried without a decodable object before a text is given up on (a damaged
document would otherwise be re-read from every brace)."""
FORMAT_TRACE = "nccl-profiler-trace"

_PROM_RE = lazy(
    r"^\s*(nccl_(?:p2p_)?bus_bandwidth_gbs|nccl_(?:p2p|collective)_exec_time_microseconds)"
    r"\{([^}]*)\}\s+([-+0-9.eE]+|NaN)"
)
_LABEL_RE = lazy(r'(?<!\w)(\w+)="((?:[^"\\]|\\.)*)"')
_SIZE_RE = lazy(r"^\s*(\d+(?:\.\d+)?)\s*(?:-\s*\d+(?:\.\d+)?\s*)?([KMGT]?i?B)\s*$")
_UNITS = {
    "B": 1,
    "KB": 1e3,
    "MB": 1e6,
    "GB": 1e9,
    "TB": 1e12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}
_TRACE_RE = lazy(r'^\s*\{\s*["\u201c]name["\u201d]\s*:\s*"([^"]+)",\s*"cat"\s*:\s*"([A-Z_]+)"')
_TRACE_ARGS_RE = lazy(r'"(Count|Datatype|Algorithm|Protocol|nChannels)"\s*:\s*"?([\w.]+)"?')


# ----------------------------------------------------------------------- the importer's face


def _records_fragment(records: list[InspectorRecord], values: _Values) -> Fragment:
    frag = Fragment(FORMAT_INSPECTOR)
    frag.evidence.inspector.extend(records)
    frag.read.append(summary(records))
    note = values.note()
    if note:
        frag.warn(note)
    return frag


def read_records(doc: Doc, ctx: Context) -> list[Fragment]:
    """Inspector records among the lines of ``doc`` (Prometheus samples, or JSON records)."""
    values = _Values()
    records = parse_prometheus(doc, values) or parse_json_lines(doc, values)
    return [_records_fragment(records, values)] if records else []


def json_fragment(data: Any, ctx: Context) -> Fragment | None:
    """The records of an Inspector JSON document (None when it holds none)."""
    values = _Values()
    records = parse_json(data, values)
    return _records_fragment(records, values) if records else None


def read_trace(doc: Doc, ctx: Context) -> list[Fragment]:
    """The example profiler plugin's trace in ``doc``, as a fragment."""
    trace = parse_trace(doc, ctx.file)
    if trace is None:
        return []
    frag = Fragment(FORMAT_TRACE)
    frag.evidence.profiler_traces.append(trace)
    frag.read.append(summary_trace(trace))
    return [frag]


# ------------------------------------------------------------------------------- JSON


def _record(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(
        data.get("coll_perf") or data.get("p2p_perf"), dict
    )


def looks_like_inspector(data: Any) -> bool:
    """One record, or a list of records, of Inspector JSON."""
    if isinstance(data, list):
        return bool(data) and any(_record(d) for d in data[:64])
    return _record(data)


class _Values:
    """Reads a record's numbers; counts those out of range (left unknown, the record kept)."""

    def __init__(self) -> None:
        self.out_of_range = 0

    def number(self, value: Any) -> float | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        number = json_float(value)  # None: an integer of hundreds of digits, inf, NaN
        if number is None or abs(number) > _MAX_VALUE:
            self.out_of_range += 1
            return None
        return number

    def printed(self, text: str) -> float | None:
        """A number as a Prometheus sample prints it (``NaN``: unknown)."""
        if text == "NaN":
            return None
        number = to_float(text)
        return self.number(math.inf if number is None else number)

    def integer(self, value: Any) -> int | None:
        number = self.number(value)
        return int(number) if number is not None else None

    def note(self) -> str | None:
        if not self.out_of_range:
            return None
        return (
            f"nccl-inspector: {self.out_of_range} value(s) out of range left unknown; the "
            "records were kept"
        )


_MAX_VALUE = 1e18
"""Larger than any size in bytes, time in microseconds or count an Inspector record holds."""


def parse_record(data: dict[str, Any], values: _Values | None = None) -> InspectorRecord | None:
    """One ``coll_perf`` (or ``p2p_perf``) record."""
    values = values or _Values()
    header = data.get("header") if isinstance(data.get("header"), dict) else {}
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    perf = data.get("coll_perf") if isinstance(data.get("coll_perf"), dict) else None
    p2p = perf is None
    if perf is None:
        perf = data["p2p_perf"]
    name = perf.get("coll") or perf.get("p2p") or perf.get("p2p_operation")
    if not isinstance(name, str):
        return None
    prefix = "p2p" if p2p else "coll"
    return InspectorRecord(
        fmt="json",
        version=str(meta.get("inspector_output_format_version") or "") or None,
        collective=name,
        p2p=p2p,
        msg_size_bytes=values.integer(perf.get(f"{prefix}_msg_size_bytes")),
        busbw_gbps=values.number(perf.get(f"{prefix}_busbw_gbs")),
        algbw_gbps=values.number(perf.get(f"{prefix}_algobw_gbs")),
        exec_time_us=values.number(perf.get(f"{prefix}_exec_time_us")),
        nranks=values.integer(header.get("n_ranks")),
        nnodes=values.integer(header.get("nnodes")),
        rank=values.integer(header.get("rank")),
        host=str(meta["hostname"]) if meta.get("hostname") else None,
        comm=str(header.get("comm_name") or header.get("id") or "") or None,
    )


def parse_json(data: Any, values: _Values | None = None) -> list[InspectorRecord]:
    """Every record of an Inspector JSON value."""
    values = values or _Values()
    items = data if isinstance(data, list) else [data]
    return [r for item in items if _record(item) and (r := parse_record(item, values)) is not None]


def json_objects(text: str, limit: int = 10000) -> list[Any]:
    """Every top-level JSON object in a text (pretty-printed, one per line, or between other
    lines), decoded one by one; what does not decode is skipped."""
    decoder = json.JSONDecoder(parse_int=json_integer)
    found: list[Any] = []
    failures = 0
    index = text.find("{")
    while 0 <= index < len(text) and len(found) < limit and failures < MAX_JSON_FAILURES:
        try:
            value, end = decoder.raw_decode(text, index)
        except (ValueError, RecursionError):
            failures += 1
            index = text.find("{", index + 1)
            continue
        found.append(value)
        index = text.find("{", end)
    return found


def parse_json_lines(doc: Doc, values: _Values | None = None) -> list[InspectorRecord]:
    """Records written one per line (the plugin's ``.log`` files) or pretty-printed and
    concatenated, possibly between other lines."""
    text = "\n".join(doc.lines[:200000])
    if '"coll_perf"' not in text and '"p2p_perf"' not in text:
        return []
    return [r for value in json_objects(text) for r in parse_json(value, values)]


# ------------------------------------------------------------------------ Prometheus


def size_bytes(label: str | None) -> int | None:
    """Lower end of a size bucket label (``4-5GB`` -> 4e9, ``512-513MB`` -> 512e6); None for
    another label or a size out of range."""
    if not label:
        return None
    match = _SIZE_RE.match(label)
    if not match:
        return None
    unit = _UNITS.get(match.group(2).upper())
    number = to_float(match.group(1))
    if not unit or number is None or number * unit > _MAX_VALUE:
        return None
    return int(number * unit)


def parse_prometheus(doc: Doc, values: _Values | None = None) -> list[InspectorRecord]:
    """Samples of the Inspector's Prometheus textfile, one record per label set."""
    values = values or _Values()
    records: dict[tuple[tuple[str, str], ...], InspectorRecord] = {}
    for raw in doc.lines[:200000]:
        if "nccl_" not in raw:
            continue
        match = _PROM_RE.match(raw)
        if not match:
            continue
        metric, labels_text, value_text = match.groups()
        labels = dict(_LABEL_RE.findall(labels_text))
        key = tuple(sorted(labels.items()))
        p2p = metric.startswith("nccl_p2p")
        record = records.get(key)
        if record is None:
            record = records[key] = _prom_record(labels, p2p)
        value = values.printed(value_text)
        if metric.endswith("bandwidth_gbs"):
            record.busbw_gbps = value
        else:
            record.exec_time_us = value
    return list(records.values())


def _prom_record(labels: dict[str, str], p2p: bool) -> InspectorRecord:
    size = labels.get("message_size")
    return InspectorRecord(
        fmt="prometheus",
        version=labels.get("version"),
        collective=labels.get("p2p_operation" if p2p else "collective") or "unknown",
        p2p=p2p,
        msg_size_bytes=size_bytes(size),
        msg_size_label=size,
        nranks=_int_text(labels.get("nranks")),
        nnodes=_int_text(labels.get("n_nodes")),
        host=labels.get("node"),
        gpu=labels.get("gpu"),
        comm=labels.get("comm_name"),
        algo_proto=labels.get("algo_proto"),
    )


def _int_text(text: str | None) -> int | None:
    return to_int(text) if text else None


def summary(records: list[InspectorRecord]) -> str:
    """One line for ``origin.sources[].read``."""
    best = max((r.busbw_gbps or 0 for r in records), default=0)
    kinds = sorted({r.collective for r in records})
    return (
        f"NCCL Inspector ({records[0].fmt}): {len(records)} record(s) of "
        f"{', '.join(kinds[:5])}; highest bus bandwidth {best:g} GB/s"
    )


# ----------------------------------------------------------------- profiler plugin trace


def parse_trace(doc: Doc, source: str) -> ProfilerTrace | None:
    """The example profiler plugin's trace: events by category, collectives with their
    algorithm (read line by line: the plugin writes values JSON cannot parse)."""
    trace = ProfilerTrace(source=source)
    categories: set[str] = set()
    for raw in doc.lines[:200000]:
        if '"cat"' not in raw:
            continue
        match = _TRACE_RE.match(raw)
        if not match:
            continue
        trace.events += 1
        name, cat = match.groups()
        categories.add(cat)
        if cat == "COLL" and '"ph": "b"' in raw:
            args = dict(_TRACE_ARGS_RE.findall(raw))
            detail = " ".join(
                x
                for x in (
                    f"count={args['Count']}" if "Count" in args else "",
                    args.get("Datatype", ""),
                    "/".join(v for v in (args.get("Algorithm"), args.get("Protocol")) if v),
                )
                if x
            )
            trace.collectives.append(f"{name} {detail}".strip())
    if trace.events < 3 or not categories & {"COLL", "PROXY", "NET", "GROUP_API", "KERNEL_LAUNCH"}:
        return None
    return trace


def summary_trace(trace: ProfilerTrace) -> str:
    """One line for ``origin.sources[].read``."""
    return (
        f"NCCL profiler plugin trace: {trace.events} event(s), "
        f"{len(trace.collectives)} collective(s) (timings only, no bandwidth figure)"
    )

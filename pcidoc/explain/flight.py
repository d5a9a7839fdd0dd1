"""PyTorch flight-recorder dumps, read without trusting them.

torch writes a dump as a pickle (``TORCH_NCCL_DEBUG_INFO_TEMP_FILE`` / ``TORCH_FR_DUMP_TEMP_FILE``,
default ``/tmp/nccl_trace_rank_<R>``) or, on request, as JSON. A pickle can run any code when it
is loaded by an ordinary unpickler, so here it is first checked opcode by opcode (only the
opcodes that build plain containers, numbers and strings are accepted: no ``GLOBAL``,
``REDUCE``, ``BUILD``, ``INST``, ``OBJ``, ``NEWOBJ`` or extensions), then loaded by an
unpickler that refuses every global. torch's own dumps need nothing else.

:func:`flight_rank` keeps, per rank, every collective the dump recorded (sequence number,
operation, state, creation time, sizes) — the importer's
:func:`~pcidoc.collect.importers.nccl_ras.parse_flight_recorder` keeps only the last one per
process group, and the history is what tells a mismatched or late collective.
"""

from __future__ import annotations

import io
import json
import pickle
import pickletools
import re
from typing import Any

from pcidoc.errors import PcidocError
from pcidoc.explain.facts import FlightRank, Ref
from pcidoc.sanitize import clean_data

MAX_ENTRIES = 100_000
"""Collective entries kept per dump."""

_PLAIN_OPCODES = frozenset(
    {
        "PROTO",
        "FRAME",
        "STOP",
        "MARK",
        "POP",
        "POP_MARK",
        "DUP",
        "NONE",
        "NEWTRUE",
        "NEWFALSE",
        "INT",
        "BININT",
        "BININT1",
        "BININT2",
        "LONG",
        "LONG1",
        "LONG4",
        "FLOAT",
        "BINFLOAT",
        "STRING",
        "BINSTRING",
        "SHORT_BINSTRING",
        "BINBYTES",
        "SHORT_BINBYTES",
        "BINBYTES8",
        "UNICODE",
        "SHORT_BINUNICODE",
        "BINUNICODE",
        "BINUNICODE8",
        "EMPTY_LIST",
        "APPEND",
        "APPENDS",
        "LIST",
        "EMPTY_TUPLE",
        "TUPLE",
        "TUPLE1",
        "TUPLE2",
        "TUPLE3",
        "EMPTY_DICT",
        "DICT",
        "SETITEM",
        "SETITEMS",
        "EMPTY_SET",
        "ADDITEMS",
        "FROZENSET",
        "GET",
        "BINGET",
        "LONG_BINGET",
        "PUT",
        "BINPUT",
        "LONG_BINPUT",
        "MEMOIZE",
    }
)


class _PlainUnpickler(pickle.Unpickler):
    """An unpickler that resolves no global at all (plain containers only)."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"global {module}.{name} refused")


def load_pickle(data: bytes, label: str) -> Any:
    """Plain data of a pickle, or PcidocError when it holds anything else (or is damaged)."""
    try:
        for opcode, _, _ in pickletools.genops(data):
            if opcode.name not in _PLAIN_OPCODES:
                raise PcidocError(f"{label}: pickle opcode {opcode.name} refused (not plain data)")
        return _PlainUnpickler(io.BytesIO(data)).load()
    except PcidocError:
        raise
    except (pickle.UnpicklingError, ValueError, EOFError, TypeError, RecursionError) as exc:
        raise PcidocError(f"{label}: not a readable pickle ({exc.__class__.__name__})") from None
    except MemoryError:
        raise PcidocError(f"{label}: pickle too large to read") from None


def looks_like_dump(data: Any) -> bool:
    """A flight-recorder dump: ``entries`` of collectives, or ``pg_status``."""
    if not isinstance(data, dict):
        return False
    entries = data.get("entries")
    if isinstance(entries, list) and entries:
        first = entries[0]
        return isinstance(first, dict) and (
            "collective_seq_id" in first or "profiling_name" in first
        )
    return isinstance(data.get("pg_status"), dict) and "version" in data


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,19}", value.strip()):
        return int(value)
    return None


def _entry(raw: dict[str, Any]) -> dict[str, Any] | None:
    seq = _int(raw.get("collective_seq_id"))
    if raw.get("is_p2p") or seq is None or seq <= 0:
        return None
    op = str(raw.get("profiling_name") or "")
    op = op.split(":", 1)[1] if ":" in op else op
    created = _int(raw.get("time_created_ns"))
    group = raw.get("process_group")
    pg = str(group[0]) if isinstance(group, (list, tuple)) and group else str(raw.get("pg_id", "0"))
    sizes = raw.get("input_sizes")
    return {
        "seq": seq,
        "op": op[:60] or None,
        "state": str(raw.get("state") or "")[:20] or None,
        "created_s": created / 1e9 if created else None,
        "sizes": json.dumps(sizes)[:200] if isinstance(sizes, list) else None,
        "pg": pg[:40],
    }


def _rank_hint(label: str) -> int | None:
    match = re.search(r"rank[_-]?(\d{1,6})(?!\d)", label.rsplit("/", 1)[-1])
    return int(match.group(1)) if match else None


def flight_rank(data: dict[str, Any], label: str) -> FlightRank:
    """One rank's dump: its collectives of the default process group, oldest first."""
    data = clean_data(data)
    rank = _int(data.get("rank"))
    if rank is None:
        rank = _rank_hint(label)
    entries = [
        e
        for e in (
            _entry(r) for r in (data.get("entries") or [])[:MAX_ENTRIES] if isinstance(r, dict)
        )
        if e is not None
    ]
    pgs = sorted({e["pg"] for e in entries})
    main = "0" if "0" in pgs else (pgs[0] if pgs else "0")
    entries = sorted((e for e in entries if e["pg"] == main), key=lambda e: e["seq"])
    status = data.get("pg_status")
    enqueued = completed = None
    if isinstance(status, dict) and isinstance(status.get(main), dict):
        enqueued = _int(status[main].get("last_enqueued_collective"))
        completed = _int(status[main].get("last_completed_collective"))
    if enqueued is None and entries:
        enqueued = entries[-1]["seq"]
    return FlightRank(
        rank=rank,
        ref=Ref(label, 0, f"flight recorder: {len(entries)} collectives"),
        entries=entries,
        last_enqueued=enqueued,
        last_completed=completed,
    )


def read_dump(data: bytes, label: str) -> list[FlightRank]:
    """The ranks of a dump file (pickle or JSON; a JSON list holds one dump per rank)."""
    head = data[:1]
    if head == b"\x80":
        value = load_pickle(data, label)
    else:
        try:
            value = json.loads(data.decode("utf-8", errors="replace"))
        except (ValueError, RecursionError):
            raise PcidocError(f"{label}: not a flight-recorder dump") from None
    dumps = value if isinstance(value, list) else [value]
    out = [flight_rank(d, label) for d in dumps[:4096] if looks_like_dump(d)]
    if not out:
        raise PcidocError(f"{label}: not a flight-recorder dump")
    if len(out) > 1:
        for index, rank in enumerate(out):
            if rank.rank is None:
                rank.rank = index
    return out

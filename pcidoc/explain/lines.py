"""Reading a job's console and rank logs line by line: who wrote each line (the launcher's
prefix), when (its timestamp), and what it says (a table of small readers).

Launcher prefixes (one style per file, found by counting):

* ``torchrun --tee``: ``[default3]:`` (the local rank; the role name may differ);
* ``srun -l`` / ``--label``: `` 3: `` (the task id, which is the rank);
* ``mpirun --tag-output``: ``[1,3]<stderr>:`` (the rank);
* Ray: ``(RayTrainWorker pid=4242, ip=10.0.0.7)`` (the process and its node);
* torch's own ``[rank3]:`` in front of a rank's tracebacks and C++ log lines (the global rank),
  wherever the launcher's prefix left it.

Messages are read by :data:`READERS` (progress lines, collective timeouts, peers that went
away, mismatched collectives, monitored-barrier reports, launcher exit lines...) and by a small
traceback reader that keeps, per stream, the collective a rank was in when it raised.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from typing import Any

from pcidoc._record import field, record

COLLECTIVES = frozenset(
    {
        "all_reduce",
        "allreduce",
        "broadcast",
        "barrier",
        "monitored_barrier",
        "all_gather",
        "all_gather_into_tensor",
        "all_gather_object",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "reduce",
        "gather",
        "scatter",
        "all_to_all",
        "all_to_all_single",
        "send",
        "recv",
        "isend",
        "irecv",
        "batch_isend_irecv",
        "broadcast_object_list",
    }
)
"""torch.distributed functions whose frame in a traceback says which collective a rank was in."""

# ------------------------------------------------------------------------------ prefixes


@record
class Style:
    """A launcher's line prefix: the pattern and what its groups mean."""

    name: str
    pattern: re.Pattern[str]
    share: float
    """Part of a file's lines that must carry it for the file to be in this style."""


STYLES = (
    Style("mpi", re.compile(r"^\[(\d+),(\d+)\]<(?:stdout|stderr|stddiag)>:\s?"), 0.2),
    Style("ray", re.compile(r"^\((\w+) pid=(\d+)(?:, ip=([\w.:-]+))?\)\s?"), 0.2),
    Style("torchrun", re.compile(r"^\[(?!rank\d)([A-Za-z_][\w-]{0,40}?)(\d{1,6})\]:"), 0.2),
    Style("srun", re.compile(r"^\s{0,4}(\d{1,5}): "), 0.5),
)
PREFIX_PATTERNS = tuple(style.pattern for style in STYLES)
_TORCH_RANK = re.compile(r"^\[rank(\d+)\]:\s?")


def detect_style(lines: list[str]) -> Style | None:
    """The launcher style of a file: the prefix most of its first lines carry, or None."""
    sample = [line for line in lines[:3000] if line.strip()]
    if not sample:
        return None
    best: tuple[int, Style] | None = None
    for style in STYLES:
        count = sum(1 for line in sample if style.pattern.match(line))
        if count >= max(3, style.share * len(sample)) and (best is None or count > best[0]):
            best = (count, style)
    return best[1] if best else None


def split_prefix(line: str, style: Style | None) -> tuple[tuple[str, Any] | None, str]:
    """(stream key, the rest of the line). Keys: ``("rank", r)``, ``("local", l)``,
    ``("pid", (pid, ip))``; None for a line without the file's prefix (the launcher's own)."""
    if style is None:
        return None, line
    match = style.pattern.match(line)
    if match is None:
        return None, line
    rest = line[match.end() :]
    if style.name == "mpi":
        return ("rank", int(match.group(2))), rest
    if style.name == "ray":
        return ("pid", (int(match.group(2)), match.group(3))), rest
    if style.name == "torchrun":
        return ("local", int(match.group(2))), rest
    return ("rank", int(match.group(1))), rest


def torch_rank(message: str) -> tuple[int | None, str]:
    """torch's own ``[rank3]:`` prefix: (global rank, the rest)."""
    match = _TORCH_RANK.match(message)
    if match is None:
        return None, message
    return int(match.group(1)), message[match.end() :]


# ---------------------------------------------------------------------------- timestamps

_ISO = re.compile(
    r"(?<!\d)(\d{4})-(\d\d)-(\d\d)[ T_](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(?![\d])"
)
_GLOG = re.compile(r"^\[?[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?\b")
_YEAR = re.compile(r"(?<!\d)(20\d\d)-\d\d-\d\d[ T_]\d\d:\d\d")


def find_year(text: str) -> int | None:
    """The year of the first ``YYYY-MM-DD hh:mm`` stamp in the text."""
    match = _YEAR.search(text)
    return int(match.group(1)) if match else None


def _seconds(parts: tuple[int, int, int, int, int, int], frac: str | None) -> float | None:
    try:
        base = calendar.timegm((*parts, 0, 0, 0))
    except (ValueError, OverflowError):
        return None
    return base + (float("0." + frac) if frac else 0.0)


def stamp(message: str, year: int) -> float | None:
    """Seconds of the timestamp a message starts with (its first 64 characters), or None.

    ``2026-11-29 05:09:48,553`` (Python logging), ISO 8601, ``2026-11-29_05:08:43``
    (torchrun's summary) and glog's ``E1129 05:10:00.223430`` (no year: ``year``)."""
    head = message[:64]
    match = _GLOG.match(head.lstrip())
    if match:
        mon, day, hh, mm, ss, frac = match.groups()
        return _seconds((year, int(mon), int(day), int(hh), int(mm), int(ss)), frac)
    match = _ISO.search(head)
    if match and match.start() < 24:
        y, mon, day, hh, mm, ss, frac = match.groups()
        return _seconds((int(y), int(mon), int(day), int(hh), int(mm), int(ss)), frac)
    return None


# ------------------------------------------------------------------------------- readers


@record
class Reading:
    """What a reader found in a message: the kind of event and its data."""

    kind: str
    data: dict[str, Any] = field(default_factory=dict)


_STEP = re.compile(
    r"(?i)(?<![\w/])(?:global[_ ]step|step|iter(?:ation)?)\b[\s:=#]*(\d{1,9})"
    r"(?:\s*(?:/|of)\s*(\d{1,9}))?"
)
_TIMING = re.compile(
    r"(?<![A-Za-z0-9_])([A-Za-z][A-Za-z0-9_]{0,40})[ \t:=]{1,3}(\d{1,9}(?:\.\d{1,6})?) ?(ms|s)?\b"
)
_COMM_WORDS = (
    "allreduce",
    "all_reduce",
    "reduce",
    "comm",
    "sync",
    "wait",
    "collective",
    "nccl",
    "gloo",
    "barrier",
    "allgather",
    "all_gather",
    "scatter",
)
_COMPUTE_WORDS = ("compute", "fwd", "forward", "bwd", "backward", "data", "load", "optim")
_ERROR_WORDS = re.compile(r"(?i)error|exception|traceback|timed out|timeout|failed")


def _timings(message: str) -> dict[str, float]:
    """``compute_ms 42.7 allreduce_ms 6.0`` → {"compute": 42.7, "comm": 6.0} (milliseconds)."""
    out: dict[str, float] = {}
    for match in _TIMING.finditer(message):
        name, value, unit = match.groups()
        lowered = name.lower()
        for suffix in ("_ms", "_s"):
            if lowered.endswith(suffix) and unit is None:
                lowered, unit = lowered[: -len(suffix)], suffix[1:]
        if unit is None:
            continue
        ms = float(value) * (1000.0 if unit.lower() == "s" else 1.0)
        if any(word in lowered for word in _COMM_WORDS):
            out["comm"] = out.get("comm", 0.0) + ms
        elif any(word in lowered for word in _COMPUTE_WORDS):
            out["compute"] = out.get("compute", 0.0) + ms
    return out


def read_progress(message: str) -> Reading | None:
    """A training step the rank completed (``step 3/10 loss ...``)."""
    if _ERROR_WORDS.search(message):
        return None
    match = _STEP.search(message)
    if match is None:
        return None
    data: dict[str, Any] = {"step": int(match.group(1))}
    if match.group(2):
        data["total"] = int(match.group(2))
    data.update(_timings(message[match.end() :]))
    return Reading("progress", data)


_IDENTITY_RANK = re.compile(
    r"(?i)(?<![\w-])(?:global[_ ])?rank[\s:=]*(\d{1,6})(?:\s*(?:/|of)\s*(\d{1,6}))?"
)
_IDENTITY_LOCAL = re.compile(r"(?i)\blocal[_ ]rank[\s:=]*(\d{1,4})")
_IDENTITY_HOST = re.compile(
    r"(?i)(?:\bon\s+(?:host\s+|node\s+)?|\bhost(?:name)?[\s:=]+|\bnode[\s:=]+)"
    r"([A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*)"
)
_IDENTITY_PID = re.compile(r"(?i)\bpid[\s:=]*(\d{1,9})")
_IDENTITY_WORLD = re.compile(r"(?i)\bworld[_ ]size[\s:=]*(\d{1,6})")


def _hostlike(name: str) -> bool:
    return any(c.isdigit() for c in name) or "-" in name or "." in name


def read_identity(message: str) -> Reading | None:
    """A rank saying who and where it is (``rank 3/8 (local rank 1) on gpu-a02 pid 4242``):
    needs a rank and at least one of host, local rank, pid or world size."""
    if "rank" not in message.lower() or _ERROR_WORDS.search(message):
        return None
    rank = _IDENTITY_RANK.search(message)
    if rank is None or "local" in message[max(0, rank.start() - 7) : rank.start()].lower():
        locals_ = list(_IDENTITY_RANK.finditer(message))
        rank = next(
            (m for m in locals_ if "local" not in message[max(0, m.start() - 7) : m.start()]),
            None,
        )
    if rank is None:
        return None
    data: dict[str, Any] = {"rank": int(rank.group(1))}
    if rank.group(2):
        data["world"] = int(rank.group(2))
    local = _IDENTITY_LOCAL.search(message)
    if local:
        data["local_rank"] = int(local.group(1))
    host = _IDENTITY_HOST.search(message)
    if host and _hostlike(host.group(1)):
        data["host"] = host.group(1)
    pid = _IDENTITY_PID.search(message)
    if pid:
        data["pid"] = int(pid.group(1))
    world = _IDENTITY_WORLD.search(message)
    if world:
        data["world"] = int(world.group(1))
    if len(data) < 2:
        return None
    return Reading("identity", data)


_TIMEOUT = re.compile(
    r"(?i)Timed out waiting \d+\s*ms for (?:recv|send)|Watchdog caught collective operation timeout"
    r"|ran for \d+ milliseconds before timing out|collective operation timeout"
    r"|Timeout at NCCL work|Socket Timeout|operation timed out|timed out after \d+"
)
_PEER_LOST = re.compile(
    r"(?i)Connection closed by peer|Connection reset by peer|Broken pipe|remote process exited"
    r"|peer (?:closed|reset|died|disconnected)|ncclRemoteError|Connection refused"
)
_BARRIER = re.compile(r"(?i)Ranks? ([\d, ]+?) failed to pass monitoredBarrier")
_FINGER = re.compile(
    r"Rank (\d+) is running collective: CollectiveFingerPrint\((.{0,1000}?)\)\)?, "
    r"but Rank (\d+) is running collective: CollectiveFingerPrint\((.*)"
)
_SIZE_MISMATCH = re.compile(
    r"(?i)Received data size doesn't match expected size|collective mismatch"
    r"|Detected mismatch between collectives"
)
_FIELD = re.compile(r"(SequenceNumber|OpType|TensorShape|TensorDtypes)=(\[[^\]]*\]|[^,)]+)")


def _fingerprint(text: str) -> str:
    """The parts of a CollectiveFingerPrint that must agree between ranks."""
    fields = dict(_FIELD.findall(text))
    return ", ".join(
        f"{k}={fields[k]}" for k in ("OpType", "TensorShape", "TensorDtypes") if k in fields
    )


def read_collective_error(message: str) -> Reading | None:
    """A rank reporting a collective that failed: timed out, lost its peer, mismatched."""
    finger = _FINGER.search(message)
    if finger:
        seq = dict(_FIELD.findall(finger.group(2))).get("SequenceNumber")
        return Reading(
            "mismatch",
            {
                "fingerprints": {
                    int(finger.group(1)): _fingerprint(finger.group(2)),
                    int(finger.group(3)): _fingerprint(finger.group(4)),
                },
                "seq": int(seq) if seq and seq.isdigit() else None,
            },
        )
    barrier = _BARRIER.search(message)
    if barrier:
        named = [int(x) for x in re.findall(r"\d+", barrier.group(1))]
        return Reading("barrier_missing", {"ranks": named})
    if _SIZE_MISMATCH.search(message):
        return Reading("mismatch", {})
    if _TIMEOUT.search(message):
        return Reading("timeout", {})
    if _PEER_LOST.search(message):
        return Reading("peer_lost", {})
    return None


_FATAL = re.compile(
    r"(?i)^(?:Fatal Python error: (\w[\w ]*)|Segmentation fault|Bus error|Killed$"
    r"|terminate called after throwing an instance of '?([\w:]+))"
)


def read_fatal(message: str) -> Reading | None:
    """The process itself saying it is going down (a segfault, a C++ abort)."""
    match = _FATAL.match(message.strip())
    if match is None:
        return None
    return Reading("fatal", {"what": message.strip()[:120]})


_TORCHRUN_FAILED = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\)")
_TORCHRUN_SIGTERM = re.compile(r"Sending process (\d+) closing signal (SIG\w+)")
_SRUN = re.compile(r"^srun: error: (\S+): tasks? ([\d,\-\[\] ]+): (.+)$")
_MPI_SIGNAL = re.compile(
    r"process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+)(?: \((\w[\w ]*)\))?"
)
_MPI_NAME = re.compile(r"Process name: \[\[\d+,\d+\],(\d+)\]")
_MPI_CODE = re.compile(r"^\s*Exit code:\s+(-?\d+)")
_SUMMARY_RANK = re.compile(r"^\s*rank\s*:\s*(\d+) \(local_rank: (\d+)\)")
_SUMMARY_CODE = re.compile(r"^\s*exitcode\s*:\s*(-?\d+) \(pid: (\d+)\)")
_SUMMARY_HOST = re.compile(r"^\s*host\s*:\s*(\S+)")
_SIGNAL_WORDS = {
    "Killed": -9,
    "Segmentation fault": -11,
    "Terminated": -15,
    "Aborted": -6,
    "Bus error": -7,
}


def _task_list(text: str) -> list[int]:
    out: list[int] = []
    for part in re.findall(r"\d+(?:-\d+)?", text):
        low, _, high = part.partition("-")
        out.extend(range(int(low), int(high or low) + 1))
    return out[:4096]


def read_launcher(message: str) -> Reading | None:
    """A launcher's line about a rank's end (torchrun's agent, srun, mpirun)."""
    match = _TORCHRUN_FAILED.search(message)
    if match:
        return Reading(
            "exit",
            {
                "code": int(match.group(1)),
                "local_rank": int(match.group(2)),
                "pid": int(match.group(3)),
            },
        )
    match = _TORCHRUN_SIGTERM.search(message)
    if match:
        return Reading("killed_by_launcher", {"pid": int(match.group(1))})
    match = _SRUN.match(message.strip())
    if match:
        what = match.group(3).strip()
        code = _SIGNAL_WORDS.get(what)
        exited = re.search(r"exit code (-?\d+)", what)
        if exited:
            code = int(exited.group(1))
        return Reading(
            "exit", {"host": match.group(1), "ranks": _task_list(match.group(2)), "code": code}
        )
    match = _MPI_SIGNAL.search(message)
    if match:
        return Reading(
            "exit",
            {
                "ranks": [int(match.group(1))],
                "pid": int(match.group(2)),
                "host": match.group(3),
                "code": -int(match.group(4)),
            },
        )
    if "CANCELLED AT" in message and "STEP" in message:
        host = re.search(r" ON (\S+) CANCELLED", message)
        return Reading("killed_by_launcher", {"host": host.group(1) if host else None})
    return None


READERS: tuple[Callable[[str], Reading | None], ...] = (
    read_launcher,
    read_collective_error,
    read_fatal,
    read_progress,
    read_identity,
)
"""Message readers, first match wins."""


# ----------------------------------------------------------------------------- tracebacks

_FRAME = re.compile(r'^\s*File "([^"]*)", line (\d+), in (\S+)')
_RAISED = re.compile(
    r"^([A-Za-z_][\w.]{0,200}?(?:Error|Exception|Exit|Interrupt|Failure|Timeout)\w{0,40})"
    r"(?::\s?(.*))?$"
)


@record
class Traceback:
    """A Python traceback being read on one stream."""

    collective: str | None = None
    frames: int = 0


def traceback_step(
    state: Traceback | None, message: str
) -> tuple[Traceback | None, Reading | None]:
    """Feed one message of a stream to its traceback reader: (new state, a reading when the
    traceback ended with the raised exception)."""
    stripped = message.strip()
    if stripped.startswith("Traceback (most recent call last)"):
        return Traceback(), None
    if state is None:
        return None, None
    frame = _FRAME.match(message)
    if frame:
        state.frames += 1
        name = frame.group(3)
        if name in COLLECTIVES and "distributed" in frame.group(1):
            state.collective = name
        return state, None
    raised = _RAISED.match(stripped) if not message.startswith((" ", "\t")) else None
    if raised is None:
        return state, None
    text = raised.group(2) or ""
    error = read_collective_error(text)
    data: dict[str, Any] = {"exception": raised.group(1), "collective": state.collective}
    if error is not None:
        data.update(error.data)
        return None, Reading(error.kind, data)
    if state.collective is not None:
        return None, Reading("timeout" if "timeout" in text.lower() else "peer_lost", data)
    data["message"] = text[:200]
    return None, Reading("app_error", data)


def summary_block(lines: list[str]) -> list[dict[str, Any]]:
    """torchrun's failure summary (``rank : 1 (local_rank: 1)`` / ``exitcode : -9 (pid: ..)`` /
    ``host : node``) as one entry per failed rank, with the index of its ``exitcode`` line."""
    out: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    for index, line in enumerate(lines):
        host = _SUMMARY_HOST.match(line)
        if host:
            current["host"] = host.group(1)
            continue
        rank = _SUMMARY_RANK.match(line)
        if rank:
            current.update(rank=int(rank.group(1)), local_rank=int(rank.group(2)))
            continue
        code = _SUMMARY_CODE.match(line)
        if code and "rank" in current:
            current.update(code=int(code.group(1)), pid=int(code.group(2)), line=index)
            out.append(current)
            current = {}
    return out


_RAY_DIED = re.compile(r"RayActorError: The actor died unexpectedly")
_RAY_FIELD = re.compile(r"^\s*(pid|ip):\s*(\S+)")
_RAY_EXIT = re.compile(r"Worker exit type: (\w+)")


def ray_death_block(lines: list[str]) -> list[dict[str, Any]]:
    """Ray's error for an actor whose worker process died (``RayActorError: The actor died
    unexpectedly``, then its ``pid:`` and ``ip:``, then the exit type)."""
    out = []
    for index, line in enumerate(lines):
        if not _RAY_DIED.search(line):
            continue
        entry: dict[str, Any] = {"line": index, "code": None, "death": "died"}
        for offset in range(1, 10):
            if index + offset >= len(lines):
                break
            field_ = _RAY_FIELD.match(lines[index + offset])
            if field_ and field_.group(1) == "pid" and field_.group(2).isdigit():
                entry["pid"] = int(field_.group(2))
            elif field_ and field_.group(1) == "ip":
                entry["host"] = field_.group(2)
            exit_type = _RAY_EXIT.search(lines[index + offset])
            if exit_type:
                entry["death"] = exit_type.group(1)
                break
        if "pid" in entry:
            out.append(entry)
    return out


def mpi_exit_block(lines: list[str]) -> list[dict[str, Any]]:
    """mpirun's ``Process name: [[jobid,1],rank]`` / ``Exit code: N`` block."""
    out = []
    for index, line in enumerate(lines):
        name = _MPI_NAME.search(line)
        if not name:
            continue
        for offset in range(1, 4):
            if index + offset < len(lines):
                code = _MPI_CODE.match(lines[index + offset])
                if code:
                    out.append(
                        {
                            "ranks": [int(name.group(1))],
                            "code": int(code.group(1)),
                            "line": index + offset,
                        }
                    )
                    break
    return out

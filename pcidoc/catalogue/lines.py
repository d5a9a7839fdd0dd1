"""What a pasted line is: its packaging (launcher, time, level, NCCL, kernel prefixes) and its
message, and whether it reads as a log line or as a sentence.

Evidence is a log line, not a word. A line counts as evidence of a failure only when it is
shaped like the output that prints that failure: a kernel line (a dmesg stamp, a syslog or
journal ``kernel:`` prefix, a driver's ``nvidia 0000:3b:00.0:`` or ``NVRM:`` tag), an NCCL line
(``host:pid:tid [dev] NCCL WARN``), or a message that starts where a program's message starts
(after a launcher's rank prefix, a time stamp, a log level, an exception's name). A sentence
that mentions the same words ("I read that GPU has fallen off the bus") is a *mention*: at most
context, never an event. Markdown quoting and fences are removed before this module sees a line
(:func:`pcidoc.collect.importers.text.prepare`); an inline code span inside a sentence
(`` `NCCL WARN ...` ``) is a quoted line of its own (:func:`code_spans`).

Every pattern here is anchored at the start of what is left of the line, with bounded tokens,
so a line is read in linear time.
"""

from __future__ import annotations

from itertools import pairwise

from pcidoc._lazyre import lazy
from pcidoc._record import field, record

KERNEL = "kernel"
NCCL = "nccl"
MESSAGE = "message"
SHAPES = (KERNEL, NCCL, MESSAGE)
"""The shapes a catalogue entry may ask for."""

PROSE_RUN = 3
"""Plain words in a row before a match that make the text before it a sentence."""

# ------------------------------------------------------------------------- packaging layers
# Launchers: torchrun/elastic (``[rank3]:``, ``[default3]:``), torch's own ``[Rank 3]``, Slurm
# ``srun -l`` (``3: ``), Ray (``(RayWorkerWrapper pid=123, ip=10.0.0.1)``, ``(pid=123)``),
# mpirun ``--tag-output`` (``[1,3]<stderr>:``).
_RANK_RE = lazy(
    r"^\s*(?:\[(?:rank|default|Rank\s?)(?P<rank>\d{1,6})\]:?|(?P<slurm>\d{1,6}):(?=\s)"
    r"|\[\d{1,6},(?P<mpi>\d{1,6})\](?:<std(?:out|err)>)?:"
    r"|\((?:[\w.-]{1,80}\s+)?pid=\d{1,10}(?:,\s*ip=[\w.:-]{1,64})?\)(?:\s*\[[^\]]{0,80}\])?)\s*"
)
# Time stamps: ISO (``2024-01-01T12:00:00.123Z``, ``2024-01-01 12:00:00,123``, bracketed),
# syslog (``Sep 19 16:18:02 host prog[123]:``, or with the month as another locale's journalctl
# prints it: ``jan. 29 20:50:17``, ``déc. 3``, ``11月 15 14:15:47``), dmesg (``[  12.345678]``,
# ``[+0.000844]``,
# ``[Mon Jan  1 12:00:00 2024]``, ``[Nov27 10:11]``), the own log files of nv-fabricmanager and
# nvidia-imex (``[Feb 27 2025 15:10:02]``).
_ISO_RE = lazy(
    r"^\s*\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\]?:?"
    r"(?:\s+(?P<host>[\w.-]{1,253})\s+(?P<prog>[\w./-]{1,64})(?:\[\d{1,10}\])?:(?=\s))?\s*"
)
_SYSLOG_RE = lazy(
    r"^\s*(?:[^\W\d_]{3,5}\.?|\d{1,2}[月월])\s{1,2}\d{1,2}\s\d\d:\d\d:\d\d(?:\.\d{1,9})?\s+"
    r"(?P<host>[\w.-]{1,253})"
    r"\s+(?P<prog>[\w./-]{1,64})(?:\[\d{1,10}\])?:\s*"
)
# A time of day alone (``19:15:34  NVRM: ...``, a log viewer's column), and the host a parallel
# shell or a log shipper puts first on a line (``node7: ``, ``192.168.11.119: ``: a name with a
# digit, then a colon and a blank).
_CLOCK_RE = lazy(r"^\s*\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\s+")
_HOST_RE = lazy(r"^\s*(?P<host>(?=[\w.-]{0,252}\d)[A-Za-z0-9][\w.-]{0,252}):\s")
_DAEMON_TIME_RE = lazy(r"^\s*\[[A-Z][a-z]{2}\s\d{1,2}\s\d{4}\s\d\d:\d\d:\d\d\]\s*")
_DMESG_RE = lazy(
    r"^\s*\[(?:\s*(?:\+\s*)?\d{1,10}[.,]\d{1,9}|[A-Z][a-z]{2}\s[A-Z][a-z]{2}\s{1,2}\d{1,2}\s"
    r"\d\d:\d\d:\d\d\s\d{4}|[A-Z][a-z]{2}\s?\d{1,2}\s\d\d:\d\d)\]\s*"
)
# Log levels: glog (``E1029 12:00:00.123456 12345 file.cc:12]``), torch's c10
# (``[E ProcessGroupNCCL.cpp:1234]``, ``[E1029 12:00:00.123 ProcessGroupNCCL.cpp:567]``; newer
# torch drops the month's leading zero: ``[E728 15:01:59.561275187 socket.cpp:1028]``),
# vLLM (``ERROR 01-01 12:00:00 [file.py:12]``), Python logging (``ERROR:root:``,
# ``- ERROR -``), DeepSpeed (``[INFO] [launch.py:12:main]``), nv-fabricmanager and nvidia-imex
# (``[ERROR] [tid 123]``), plain (``ERROR:``, ``[WARN]``).
_LEVEL_WORDS = r"(?:CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG|NOTICE|error|warning)"
_C10_PREFIX = (
    r"\[[EWIF](?:\d{3,4}\s\d\d:\d\d:\d\d\.\d{1,9}(?:\s+\d{1,10})?)?\s+[\w./-]{1,120}:\d{1,7}\]"
)
"""torch's c10 prefix (``[E ProcessGroupNCCL.cpp:1234]``, ``[E1029 12:00:00.123 socket.cpp:5]``)."""
_LEVEL_RE = lazy(
    r"^\s*(?:[EWIF]\d{3,4}\s\d\d:\d\d:\d\d\.\d{1,9}\s+\d{1,10}\s+[\w./-]{1,120}:\d{1,7}\]"
    r"|"
    + _C10_PREFIX
    + r"|"
    + _LEVEL_WORDS
    + r"\s\d\d-\d\d\s\d\d:\d\d:\d\d(?:\.\d{1,9})?\s+\[?[\w./-]{1,120}:\d{1,7}\]"
    r"|\[" + _LEVEL_WORDS + r"\](?:\s*\[[\w./-]{1,120}:\d{1,7}(?::[\w<>]{1,80})?\]"
    r"|\s*\[tid\s\d{1,10}\])?"
    r"|-\s" + _LEVEL_WORDS + r"\s-"
    r"|" + _LEVEL_WORDS + r":(?:[\w.]{1,80}:)?(?=\s|$)"
    r"|" + _LEVEL_WORDS + r"(?=\s))\s*"
)
# NCCL: ``host:pid:tid [dev] NCCL WARN message`` (what precedes the tag may also be a source
# location or nothing; NCCL's [dev] is the CUDA device, not the rank).
_NCCL_TAG = r"(?P<host>[\w.<>-]{1,253}):\d{1,10}:\d{1,10}\s+\[(?P<dev>\d{1,6})\]\s+"
"""NCCL's ``host:pid:tid [dev] `` before its ``NCCL`` level word."""
_NCCL_RE = lazy(
    r"^\s*(?:" + _NCCL_TAG + r")?"
    r"(?:[\w./-]{1,120}:\d{1,7}\s+)?NCCL\s(?P<level>INFO|WARN|TRACE|ERROR|ABORT)\b\s*"
)
# The kernel: ``kernel:`` / ``kernel[0]:`` tags, ``dmesg -x`` facilities, and a driver's device
# prefix (``nvidia 0000:3b:00.0:``, ``pcieport 0000:00:01.0:``, ``mlx5_core 0000:17:00.1:``).
_KERNEL_TAG_RE = lazy(
    r"^\s*(?:kernel(?:\[\d{1,10}\])?:|(?:kern|user|daemon)\s*:\s*[a-z]{3,7}\s*:)\s*"
)
_DEVICE_RE = lazy(
    r"^(?P<driver>[\w.-]{1,40})\s+(?P<bus>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}"
    r"\.[0-7]):\s*"
)
KERNEL_SUBSYSTEMS = (
    "NVRM:", "DMAR:", "DMAR-IR:", "AMD-Vi:", "iommu:", "pci_bus", "pcieport", "nvidia-nvswitch",
    "nvidia-nvlink", "nvidia-peermem", "nvidia-uvm", "nv_peer_mem", "mlx5_core", "mlx5_ib",
    "arm-smmu", "ACPI", "EDAC", "mce:", "[Hardware Error]", "{1}[Hardware Error]", "pci ",
    "PCI:", "nvidia:", "nvidia-modeset", "nvidia_uvm", "NVLink", "nvidia ",
)  # fmt: skip
"""Kernel messages whose own first word says where they come from (no device prefix)."""
_EXCEPTION_RE = lazy(
    r"^\s*(?:[A-Za-z_]\w{0,60}\.){0,8}[A-Z]\w{0,60}(?:Error|Exception|Warning|Failure|Abort)"
    r"(?:\([^)]{0,80}\))?:\s+"
)
_PLAIN_WORD_RE = lazy(r"[A-Za-z][a-z]*[.,;!?]?")
MIN_SPAN = 8
"""Characters an inline code span needs to be read as a quoted line."""


@record
class Line:
    """One line of a paste, read.

    Attributes:
        text: The line as cleaned by the importer.
        message: What the program printed, without the packaging.
        kinds: The packaging found, outermost first (``rank``, ``time``, ``level``, ``nccl``,
            ``kernel``, ``device``, ``exception``).
        host: The host a prefix named (syslog, NCCL, ISO journal line).
        rank: The rank a launcher prefix named.
        cuda_dev: The CUDA device NCCL's prefix named.
        bus_id: The PCI address a kernel driver prefix named (not normalised).
        program: The program a syslog/journal prefix named (``kernel``, ``nv-fabricmanager``).
        comment: A ``#`` line: a header, a comment, a Markdown heading; never evidence.
        kernel_at: See the attribute.
    """

    text: str
    message: str
    kinds: list[str] = field(default_factory=list)
    host: str | None = None
    rank: int | None = None
    cuda_dev: int | None = None
    bus_id: str | None = None
    program: str | None = None
    comment: bool = False
    kernel_at: int | None = None
    """Where a kernel message (a driver's device prefix or a subsystem tag such as ``NVRM:``)
    starts in :attr:`text`, after whatever packaging came before it."""

    def shaped(self, shape: str) -> bool:
        """Whether the line carries the packaging ``shape`` asks for (see :data:`SHAPES`);
        ``message`` asks for none (the match position decides, :func:`prose_before`)."""
        if shape == KERNEL:
            return KERNEL in self.kinds or "device" in self.kinds
        if shape == NCCL:
            return NCCL in self.kinds
        return shape == MESSAGE


def _strip_rank(line: Line, rest: str) -> str | None:
    match = _RANK_RE.match(rest)
    if not match or match.end() == 0:
        return None
    number = match["rank"] or match["slurm"] or match["mpi"]
    if number is not None and line.rank is None:
        line.rank = int(number)
    line.kinds.append("rank")
    return rest[match.end() :]


def _strip_host(line: Line, rest: str) -> str | None:
    if line.kinds or rest.lstrip().startswith(KERNEL_SUBSYSTEMS):
        return None  # only first on the line, and never a kernel tag (``nvidia-nvswitch0:``)
    match = _HOST_RE.match(rest)
    if match is None:
        return None
    line.host = line.host or match["host"]
    line.kinds.append("host")
    return rest[match.end() :]


def _strip_time(line: Line, rest: str) -> str | None:
    for pattern in (_ISO_RE, _SYSLOG_RE, _DAEMON_TIME_RE, _CLOCK_RE):
        match = pattern.match(rest)
        if match and match.end():
            groups = match.groupdict()
            if groups.get("host"):
                line.host = line.host or groups["host"]
                line.program = groups["prog"]
                if groups["prog"] == "kernel" or groups["prog"].startswith("kernel["):
                    line.kinds.append(KERNEL)
            line.kinds.append("time")
            return rest[match.end() :]
    match = _DMESG_RE.match(rest)
    if match:
        line.kinds.extend(("time", KERNEL))
        return rest[match.end() :]
    return None


def _strip_level(line: Line, rest: str) -> str | None:
    match = _LEVEL_RE.match(rest)
    if not match or match.end() == 0:
        return None
    line.kinds.append("level")
    return rest[match.end() :]


def _strip_nccl(line: Line, rest: str) -> str | None:
    if "NCCL" not in rest[:400]:
        return None
    match = _NCCL_RE.match(rest)
    if not match:
        return None
    if match["host"]:
        line.host = line.host or match["host"]
        line.cuda_dev = int(match["dev"])
    line.kinds.append(NCCL)
    return rest[match.end() :]


def _strip_kernel(line: Line, rest: str) -> str | None:
    match = _KERNEL_TAG_RE.match(rest)
    if match:
        line.kinds.append(KERNEL)
        return rest[match.end() :]
    return None


def _strip_device(line: Line, rest: str) -> str | None:
    match = _DEVICE_RE.match(rest)
    if match:
        line.kinds.append("device")
        line.bus_id = line.bus_id or match["bus"]
        return rest[match.end() :]
    # dmesg and journalctl indent a message's continuation lines (``      NVRM: ...``).
    if rest.lstrip().startswith(KERNEL_SUBSYSTEMS) and KERNEL not in line.kinds:
        line.kinds.append(KERNEL)
    return None


def _strip_exception(line: Line, rest: str) -> str | None:
    match = _EXCEPTION_RE.match(rest)
    if match:
        line.kinds.append("exception")
        return rest[match.end() :]
    return None


_LAYERS = (
    _strip_rank,
    _strip_time,
    _strip_level,
    _strip_nccl,
    _strip_kernel,
    _strip_device,
    _strip_host,
)
_MAX_LAYERS = 8


def read_line(text: str) -> Line:
    """Split ``text`` into its packaging and its message."""
    line = Line(text=text, message=text.strip())
    if line.message.startswith("#"):
        line.comment = True
        return line
    rest = text
    for _ in range(_MAX_LAYERS):
        if line.kernel_at is None and (
            rest.lstrip().startswith(KERNEL_SUBSYSTEMS) or _DEVICE_RE.match(rest.lstrip())
        ):
            line.kernel_at = len(text) - len(rest.lstrip())
        for layer in _LAYERS:
            stripped = layer(line, rest)
            if stripped is not None:
                rest = stripped
                break
        else:
            break
    # An exception's name opens the message it carries (``RuntimeError: CUDA error: ...``);
    # what follows is the message a signature starts at.
    stripped = _strip_exception(line, rest)
    line.message = (stripped if stripped is not None else rest).strip()
    return line


# Where a program's message starts inside a line that holds several (a log pasted collapsed
# onto one line): torch's c10/glog prefix (``[E ProcessGroupNCCL.cpp:460]``,
# ``[E1029 12:00:00.123 socket.cpp:567]``), NCCL's host:pid:tid tag, a C++ exception's
# ``what():`` and NCCL's ``Last error:`` (the message of the call that failed).
_MESSAGE_START_RE = lazy(
    r"(?<=\s)(?:" + _C10_PREFIX + r"|" + _NCCL_TAG + r"NCCL\s|what\(\):\s|Last error:\s)"
)
MAX_MESSAGES = 16
"""Messages one line is cut into at most (the rest stays with the last)."""


def messages(text: str) -> list[str]:
    """The program messages a line holds: the line itself, or, for a log pasted collapsed
    onto one line, its pieces cut where a message starts (:data:`_MESSAGE_START_RE`), so
    that each is read as a line of its own (its packaging, whether a sentence comes before
    it)."""
    starts = [m.start() for m in _MESSAGE_START_RE.finditer(text)][: MAX_MESSAGES - 1]
    if not starts:
        return [text]
    bounds = [0, *starts, len(text)]
    pieces = [text[a:b].strip() for a, b in pairwise(bounds)]
    return [piece for piece in pieces if piece]


def prose_before(text: str, end: int) -> bool:
    """Whether ``text[:end]`` holds a sentence: :data:`PROSE_RUN` plain words in a row (words
    of letters only, not all capitals: ``NCCL``, ``WARN`` and ``error:`` are not prose; a word
    that ends a clause, ``failed.``, ends the run after it)."""
    run = 0
    for token in text[:end].split():
        plain = _PLAIN_WORD_RE.fullmatch(token) is not None and not (
            len(token) > 1 and token.isupper()
        )
        run = run + 1 if plain else 0
        if run >= PROSE_RUN:
            return True
        if token[-1] in ".;!?":
            run = 0
    return False


QUOTE_WORDS = frozenset(
    {
        "error", "errors", "message", "messages", "following", "output", "outputs", "says",
        "said", "shows", "showed", "prints", "printed", "reports", "reported", "returns",
        "returned", "logs", "log", "dmesg", "get", "got", "gets", "getting", "see", "saw",
        "seeing", "with", "fails", "failed",
    }
)  # fmt: skip
"""Words that, right before a colon, introduce a quoted message ("nvidia-smi outputs the
following error: Unable to determine ..."); after any other word a colon is prose."""


def quoted_at(text: str, start: int) -> bool:
    """Whether the signature at ``text[start:]`` is a message a sentence quotes after a colon
    (``... the following error: Unable to determine the device handle ...``)."""
    before = text[:start].rstrip().rstrip("\"'“”‘’`").rstrip()
    if not before.endswith(":"):
        return False
    words = before[:-1].split()
    # "the following error:" is a sentence quoting; "CUDA error:" is a program's own prefix.
    return (
        len(words) >= 2
        and words[-1].lower() in QUOTE_WORDS
        and _PLAIN_WORD_RE.fullmatch(words[-2]) is not None
        and not words[-2].isupper()
    )


def code_spans(text: str) -> list[str]:
    """The inline code spans of a sentence (`` `...` ``): each is a quoted line of its own.

    Backticks pair from the left (every odd piece between them is code), so a short span
    (`` `dmesg` ``) never shifts the pairs after it; spans under 8 characters (a word, a file
    name) are no lines, and at most 8 are kept."""
    if "`" not in text:
        return []
    pieces = text[:20000].split("`")
    if len(pieces) % 2 == 0:
        pieces = pieces[:-1]  # an unclosed backtick at the end opens nothing
    spans = [piece.strip() for piece in pieces[1::2]]
    return [span for span in spans if len(span) >= MIN_SPAN][:8]

"""NCCL's own ``NCCL_DEBUG=INFO`` log, every era from 2.4 to 2.2x.

NCCL lines are found anywhere in a paste (they interleave with nccl-tests tables, training
output and each other), so this reader walks the whole text rather than one section. A line is
an NCCL line when it holds ``NCCL INFO``/``NCCL WARN``/``NCCL TRACE`` (or NCCL's ``NCCL version``
banner); what comes before that word may be NCCL's own ``host:pid:tid [dev]`` prefix, a source
location (``transport/net_ib.cc:148``), a CI timestamp, an mpirun tag or nothing at all.

Read: the version and CUDA driver version, ranks (``comm ... rank r nranks n cudaDev d busId
b``), nodes, the transport of every ``Channel``/``Ring`` connection (``via P2P/IPC/read``,
``via SHM/direct/direct``, ``via NET/IB/0/GDRDMA``, 2.4's ``via direct shared memory``), the
network used and its NICs (``NET/IB : Using [0]mlx5_0:1/RoCE [RO]``, grouped lists
``[0]={[0] mlx5_2:1/RoCE, ...}``), a loaded network plugin (``P2P plugin IBext_v8``), settings
taken from the environment, GPUDirect RDMA refusals, P2P refusals, IB devices NCCL could not
use, shared-memory errors and every ``NCCL WARN``. Unknown NCCL lines are counted, not errors.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import pairwise

from pcidoc._record import field, record
from pcidoc.catalogue.lines import prose_before
from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.text import Doc, lazy
from pcidoc.collect.importers.walk import each_line
from pcidoc.model.busid import bus_from_nccl as bus_from_nccl
from pcidoc.model.evidence import NcclConnection, NcclLog, NcclNic, NcclRank, Quoted

FORMAT = "nccl-log"

_TAG_RE = lazy(r"\bNCCL\s+(INFO|WARN|TRACE|ERROR)\b\s?(.*)$")
_BANNER_RE = lazy(r"\bNCCL version\s+(\d+\.\d+\.\d+)")
_TOKEN_RE = lazy(r"\S+")
_HOST_PID_TID_RE = lazy(r"(?<![^\s:\[\]])([^\s:\[\]]+):\d{1,12}:\d{1,12}$")
_DEV_RE = lazy(r"\[\d{1,6}\]")
_VERSION_RE = lazy(r"^NCCL version\s+(\d+\.\d+\.\d+)")
_DRIVER_RE = lazy(r"^cudaDriverVersion\s+(\d+)")
_BOOTSTRAP_RE = lazy(r"^Bootstrap\s*:\s*Using\s*(?:\[\d+\]\s*)?([\w.:-]+?):")
_PLUGIN_RE = lazy(
    r"^(?:P2P plugin|NET/Plugin\s*:\s*Loaded (?:net|collnet) plugin|Using (?:net|network) "
    r"plugin)\s*(?::\s*)?(\S(?:.*\S)?)\s*$",
    re.IGNORECASE,
)
_NETWORK_RE = lazy(r"^Using network\s+(\S.*)$")
_NET_NAME_RE = lazy(r"^[\w.\- ]+$")
_IB_ENTRY_RE = lazy(r"\[(\d+)\]\s*([\w.\-]+):(\d+)/(IB|RoCE|\w+)")
_SOCK_ENTRY_RE = lazy(
    r"(?:\[(\d{1,4})\]\s{0,4}|(?<![\w.\-]))([\w.\-]{1,40}):([0-9A-Fa-f.:]{2,60}(?:%[\w.-]{1,40})?)<"
)
_LIST_ONLY_RE = lazy(
    r"^\s*(?:(?:\[\d{1,4}\])?[\w.\-]{1,40}:[0-9A-Fa-f.:]{2,60}(?:%[\w.-]{1,40})?<\d{1,3}>\s*)"
    r"{1,64}$"
)
"""A line that is only entries of a ``NET/... : Using`` list (a list wrapped one per line)."""
_BARE_NET_RE = lazy(r"^\s*(?:(INFO|WARN)\s+)?(NET/\w{1,20}\s*:\s*Using\b.*)$")
"""A ``NET/<net> : Using ...`` message quoted without NCCL's prefix and tag."""
_ENV_RE = lazy(r"^(NCCL_\w+|CUDA_\w+)\s+set by environment to\s+(.*)$")
_GDR_OFF_RE = lazy(r"GPU Direct RDMA Disabled for (?:HCA|GPU)", re.IGNORECASE)
_P2P_OFF_RE = lazy(
    r"P2P is disabled between connected GPUs|Could not enable P2P between|"
    r"peer access is not supported between these two devices"
)
_IB_BAD_RE = lazy(
    r"NET/IB\w*\s*:\s*No device found|Unable to open device|ibv_open_device failed|"
    r"ibv_get_device_list failed|NET/IB\w*\s*:\s*Got async event"
)
_SHM_RE = lazy(
    r"posix_fallocate failed|failed to extend /dev/shm|No space left on device|"
    r"Error while creating shared memory segment|/dev/shm/nccl-",
    re.IGNORECASE,
)
_COMM_RE = lazy(
    r"\bcomm\s+0x[0-9a-fA-F]+\s+rank\s+(\d+)\s+n[Rr]anks\s+(\d+)"
    r"(?:\s+cudaDev\s+(\d+))?(?:\s+nvmlDev\s+\d+)?(?:\s+busId\s+([0-9a-fA-F]+))?"
    r"(?:\s+nNodes\s+(\d+))?"
)
_CONN_RE = lazy(
    r"^(?:Channel|Ring)\s+(\d+)(?:/\d+)?\s*:\s*(\d+)(?:\[([0-9a-fA-F]+)\])?\s*->\s*(\d+)"
    r"(?:\[([0-9a-fA-F]+)\])?(?:\s*\[(send|receive)\])?\s+via\s+(\S(?:.*\S)?)\s*$"
)


_CONTROL = dict.fromkeys([*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0)])


def clean(text: str) -> str:
    """``text`` without control characters (a quote must never steer the user's terminal)."""
    return text.translate(_CONTROL)


def _quote(line: str) -> str:
    line = " ".join(clean(line).split())
    return line if len(line) <= 300 else line[:299] + "…"


def _driver(number: str) -> str | None:
    try:
        value = int(number)
    except ValueError:
        return None
    if value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def nccl_prefix(before: str) -> tuple[str, int] | None:
    """NCCL's ``host:pid:tid [dev]`` prefix in the text before the ``NCCL INFO`` tag: the host
    and where the prefix starts, or None.

    Read token by token (split on blanks, the host the part after the last ``:``, ``[`` or
    ``]`` of its token), never with one pattern searched over the whole text: that searched a
    long token once per character (issue 23: a 40 KB token took 10 s).
    """
    tokens = [(m.start(), m.group()) for m in _TOKEN_RE.finditer(before)]
    for (at, token), (_, after) in pairwise(tokens):
        if not after.startswith("[") or not _DEV_RE.match(after) or token.count(":") < 2:
            continue
        head = token[-300:]  # a host name has at most 253 characters
        match = _HOST_PID_TID_RE.search(head)
        if match:
            return match.group(1), at + len(token) - len(head) + match.start()
    return None


def _net_using(message: str) -> tuple[str, str] | None:
    """``NET/IB : Using [0]mlx5_0:1/IB ...``: the network name and the list after Using."""
    if not message.startswith("NET/"):
        return None
    name, sep, rest = message[4:].partition(":")
    rest = rest.lstrip()
    if not sep or not rest.startswith("Using") or not _NET_NAME_RE.match(name):
        return None
    return name.strip(), rest[len("Using") :].strip()


def detect_any(doc: Doc) -> bool:
    """True when the text holds at least one NCCL log line."""
    return any(_TAG_RE.search(line) or _BANNER_RE.search(line) for line in doc.lines)


def read(doc: Doc, ctx: Context) -> list[Fragment]:
    """The importer's face: the NCCL log of ``doc`` as a fragment (none without NCCL lines)."""
    log, warnings = extract(doc, ctx.file)
    ctx.warnings.extend(warnings)
    if log is None:
        return []
    frag = Fragment(FORMAT)
    frag.evidence.nccl_logs.append(log)
    frag.read.append(summary(log))
    if log.version:
        frag.tool_versions["nccl"] = log.version
    return [frag]


@record
class _Reading:
    """One pass over a text's NCCL lines."""

    log: NcclLog
    unknown: int = 0
    hosts: list[str] = field(default_factory=list)
    seen_ranks: dict[tuple[str | None, int], NcclRank] = field(default_factory=dict)
    seen_conn: set[tuple] = field(default_factory=set)
    seen_lines: set[tuple[str | None, str]] = field(default_factory=set)
    """(host, message) of the refusal lines kept: another rank's copy is the same fact."""
    wrapped: tuple[str, str] | None = None
    """(network, quote) of a ``NET/... : Using`` line whose list may go on in the next lines."""


def _continued(reading: _Reading, raw: str) -> bool:
    """A line that goes on the list of the ``NET/... : Using`` line before it (a list wrapped
    one entry per line); any other line ends the list."""
    if reading.wrapped is not None and _LIST_ONLY_RE.match(raw):
        _nics(reading.log, reading.wrapped[0], raw, reading.wrapped[1])
        return True
    reading.wrapped = None
    return False


def _bare_net(reading: _Reading, raw: str) -> bool:
    """``NET/Socket : Using ...`` quoted without NCCL's prefix (``INFO NET/Socket : Using``)."""
    match = _BARE_NET_RE.match(raw)
    using = _net_using(match.group(2).strip()) if match else None
    if using is None:
        return False
    quote = _quote(raw)
    reading.log.lines += 1
    _nics(reading.log, *using, quote)
    reading.wrapped = (using[0], quote)
    return True


def _nccl_line(reading: _Reading, raw: str, index: int) -> bool:
    """One line of the text (the walker's handler): an NCCL line is read, others looked past."""
    log = reading.log
    if _continued(reading, raw):
        return True
    match = _TAG_RE.search(raw)
    if match is None and _bare_net(reading, raw):
        return True
    if match is None or raw.lstrip().startswith("#") or prose_before(raw, match.start()):
        # Not an NCCL line: a header, or a sentence that mentions "NCCL WARN" (issue 27).
        banner = _BANNER_RE.search(raw) if match is None else None
        if banner and ("cuda" in raw.lower() or raw.strip().startswith("NCCL version")):
            log.version = log.version or banner.group(1)
            log.lines += 1
        return True
    log.lines += 1
    level, message = match.group(1), match.group(2).strip()
    prefix = nccl_prefix(raw[: match.start()])
    host = prefix[0] if prefix else None
    if host and host not in reading.hosts:
        reading.hosts.append(host)
    quote = _quote(raw[prefix[1] :] if prefix else raw)
    if level in ("WARN", "ERROR") and len(log.warnings) < 50:
        log.warnings.append(Quoted(quote=quote))
    known = _read_message(reading, message, host, quote)
    using = _net_using(message)
    if using is not None:
        reading.wrapped = (using[0], quote)
    if not known and level == "INFO":
        reading.unknown += 1
    return True


def extract(doc: Doc, source: str) -> tuple[NcclLog | None, list[str]]:
    """Read every NCCL line of ``doc``.

    Returns:
        The log (None when the text has no NCCL line) and warnings.
    """
    reading = _Reading(NcclLog(source=source))
    walker = each_line(doc, reading, _nccl_line)
    log = reading.log
    warnings = [note for note in [walker.bad_values_note(FORMAT)] if note]
    if log.lines == 0:
        return None, warnings
    _socket_network(log)
    log.hosts = reading.hosts
    log.ranks = sorted(reading.seen_ranks.values(), key=lambda r: (r.host or "", r.rank))
    if log.nranks is None:
        counts = {r.nranks for r in log.ranks if r.nranks}
        if len(counts) == 1:
            log.nranks = counts.pop()
    errors_only = len(log.warnings) >= log.lines  # an error paste, not a cut log
    if (
        log.lines
        and not errors_only
        and not (log.version or log.connections or log.ranks or log.env or log.network)
    ):
        warnings.append(
            f"nccl-log: {log.lines} NCCL line(s) but no version, rank, transport or network "
            "line among them (the paste may be cut short)"
        )
    return log, warnings


def _socket_network(log: NcclLog) -> None:
    """NCCL <= 2.5 prints no ``Using network`` line: a ``NET/Socket : Using <if>`` list with no
    IB device in use (``NET/IB : No device found``) is the socket (TCP) network."""
    if log.network is None and log.socket_nics and not log.ib_nics and not log.net_plugin:
        log.network = "Socket"
        if log.socket_quote:
            log.networks.append(Quoted(quote=log.socket_quote))


@record
class _Line:
    """One NCCL message being read, with what the log has seen so far."""

    message: str
    host: str | None
    quote: str
    reading: _Reading

    @property
    def log(self) -> NcclLog:
        return self.reading.log


_MAX_QUOTES = 50
"""Quoted lines kept per kind (a log of a thousand ranks repeats each one per rank)."""


def _keep(quotes: list[Quoted], quote: str) -> bool:
    if len(quotes) < _MAX_QUOTES:
        quotes.append(Quoted(quote=quote))
    return True


def _on_version(line: _Line) -> bool:
    match = _VERSION_RE.match(line.message) or _BANNER_RE.search(line.message)
    if match:
        line.log.version = line.log.version or match.group(1)
    return match is not None


def _on_driver(line: _Line) -> bool:
    match = _DRIVER_RE.match(line.message)
    if match:
        line.log.cuda_driver_version = line.log.cuda_driver_version or _driver(match.group(1))
    return match is not None


def _on_connection(line: _Line) -> bool:
    match = _CONN_RE.match(line.message)
    if match:
        _connection(line.log, match, line.host, line.quote, line.reading.seen_conn)
    return match is not None


def _on_comm(line: _Line) -> bool:
    match = _COMM_RE.search(line.message)
    if match is None:
        return False
    log = line.log
    rank, nranks = int(match.group(1)), int(match.group(2))
    log.nranks = log.nranks or nranks
    if match.group(5):
        log.nnodes = log.nnodes or int(match.group(5))
    seen_ranks = line.reading.seen_ranks
    entry = seen_ranks.get((line.host, rank))
    if entry is None and len(seen_ranks) >= 65536:
        return True
    if entry is None:
        entry = seen_ranks[(line.host, rank)] = NcclRank(
            rank=rank, nranks=nranks, host=line.host, quote=line.quote
        )
    if match.group(3) is not None:
        entry.cuda_dev = int(match.group(3))
    if match.group(4):
        entry.bus_id = bus_from_nccl(match.group(4))
    return True


def _on_env(line: _Line) -> bool:
    match = _ENV_RE.match(line.message)
    if match:
        # The value without its closing '.' (as printed: "NCCL_IB_HCA set by environment to
        # mlx5_0."); stripped in Python: a lazy group before '\.?\s*$' backtracked over
        # trailing blanks once per character.
        value = match.group(2).rstrip()
        name, value = match.group(1), clean(value[:-1] if value.endswith(".") else value).strip()
        line.log.env.setdefault(name, value)
        line.log.env_quotes.setdefault(name, line.quote)
    return match is not None


def _on_refusal(line: _Line) -> bool:
    """GPUDirect RDMA and P2P refusals, unusable IB devices, /dev/shm errors. A message is kept
    once per host: every rank of a host prints it for the same HCA, GPU pair or segment (a log
    of 16 ranks says "GPU Direct RDMA Disabled for HCA 0" 16 times about one HCA)."""
    log, message = line.log, line.message
    for pattern, quotes in (
        (_GDR_OFF_RE, log.gdr_disabled),
        (_P2P_OFF_RE, log.p2p_refused),
        (_IB_BAD_RE, log.ib_unusable),
        (_SHM_RE, log.shm_errors),
    ):
        if pattern.search(message):
            key = (line.host, " ".join(message.split()))
            if key not in line.reading.seen_lines:
                line.reading.seen_lines.add(key)
                _keep(quotes, line.quote)
            return True
    return False


def _on_network(line: _Line) -> bool:
    log = line.log
    match = _NETWORK_RE.match(line.message)
    if match:
        log.network = clean(match.group(1)).strip()
        return _keep(log.networks, line.quote)
    match = _PLUGIN_RE.match(line.message)
    if match:
        log.net_plugin = clean(match.group(1))
        log.net_plugin_quote = line.quote
        return True
    using = _net_using(line.message)
    if using:
        _nics(log, *using, line.quote)
        return True
    match = _BOOTSTRAP_RE.match(line.message)
    if match:
        log.bootstrap_if = log.bootstrap_if or match.group(1)
    return match is not None


_READERS: tuple[Callable[[_Line], bool], ...] = (
    _on_version,
    _on_driver,
    _on_connection,
    _on_comm,
    _on_env,
    _on_refusal,
    _on_network,
)
"""What an NCCL message may be, in the order it is tried."""


def _read_message(reading: _Reading, message: str, host: str | None, quote: str) -> bool:
    """Fold one NCCL message into the log; False when nothing in it is known."""
    line = _Line(message, host, quote, reading)
    return any(reader(line) for reader in _READERS)


def _nics(log: NcclLog, network: str, rest: str, quote: str) -> None:
    if network.lower().startswith("socket"):
        log.socket_quote = log.socket_quote or quote
        for m in _SOCK_ENTRY_RE.finditer(rest):
            if not any(n.name == m.group(2) for n in log.socket_nics):
                index = int(m.group(1)) if m.group(1) else len(log.socket_nics)
                log.socket_nics.append(NcclNic(index=index, name=m.group(2), address=m.group(3)))
        return
    for m in _IB_ENTRY_RE.finditer(rest):
        name = m.group(2)
        if any(n.name == name for n in log.ib_nics):
            continue
        layer = m.group(4)
        log.ib_nics.append(
            NcclNic(
                index=int(m.group(1)),
                name=name,
                port=int(m.group(3)),
                link_layer=layer if layer in ("IB", "RoCE") else None,
            )
        )


def _connection(
    log: NcclLog, match: re.Match[str], host: str | None, quote: str, seen: set[tuple]
) -> None:
    detail = clean(match.group(7))
    lowered = detail.lower()
    parts = [p.strip() for p in detail.split("/")]
    if lowered.startswith("direct shared memory") or parts[0].upper() == "SHM":
        transport = "SHM"
    elif parts[0].upper() in ("P2P", "NET", "COLLNET", "NVLS"):
        transport = parts[0].upper()
    elif lowered.startswith("direct pointer") or lowered.startswith("p2p"):
        transport = "P2P"
    else:
        transport = parts[0]
    network = nic = gdr = None
    if transport in ("NET", "COLLNET") and len(parts) > 1:
        network = parts[1]
        index = re.match(r"^(\d+)", parts[2]) if len(parts) > 2 else None
        if index:  # "3", or "0(4)" when PXN routes through another GPU's NIC
            nic = int(index.group(1))
        gdr = any(p.upper() == "GDRDMA" for p in parts[2:])
    key = (host, match.group(1), match.group(2), match.group(4), match.group(6), detail)
    if key in seen:
        return
    seen.add(key)
    if len(log.connections) >= 5000:
        return
    log.connections.append(
        NcclConnection(
            channel=int(match.group(1)),
            src_rank=int(match.group(2)),
            dst_rank=int(match.group(4)),
            src_dev=match.group(3),
            dst_dev=match.group(5),
            host=host,
            transport=transport,
            detail=detail,
            network=network,
            nic_index=nic,
            gdr=gdr,
            direction=match.group(6),
            quote=quote,
        )
    )


def summary(log: NcclLog) -> str:
    """One line for ``origin.sources[].read``."""
    parts = ["NCCL log"]
    if log.version:
        parts.append(f"version {log.version}")
    if log.nranks:
        parts.append(f"{log.nranks} ranks")
    if log.hosts:
        parts.append(f"{len(log.hosts)} host(s) in the prefixes")
    if log.connections:
        kinds = sorted({c.transport for c in log.connections})
        parts.append(f"{len(log.connections)} connections ({', '.join(kinds)})")
    if log.network:
        parts.append(f"network {log.network}")
    return ", ".join(parts)

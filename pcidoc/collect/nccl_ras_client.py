"""A read-only client of NCCL's RAS service, for ``pcidoc watch``.

An NCCL job (2.24+) listens for RAS clients on ``localhost:28028`` (``NCCL_RAS_ADDR``). The
protocol is lines of text (NCCL's ``ncclras`` client, ``src/ras/client.cc``): the client sends
``CLIENT PROTOCOL 2`` and reads ``SERVER PROTOCOL n``; optionally ``TIMEOUT s`` and
``SET FORMAT json`` (2.28.7+), each answered ``OK``; then ``STATUS``, after which the server
writes the report and closes the connection. Nothing is changed in the job.

Every read and write has a short timeout and the whole query a deadline: a hung job must not
hang ``watch``. A refused connection (no NCCL job on the node) is not an error.

Any local user can listen on the port before a job does (it is not privileged), so the reply is
believed only from a listener owned by root, by the user running ``watch`` or by a user named
with ``--ras-user``: once connected, the owner of the other end of the connection is read from
``/proc/net/tcp`` and ``tcp6`` (the uid of a socket is its creator's, and an accepted socket
carries its listener's), before anything is sent. Another owner, or one that cannot be read, is
reported and nothing is read. The reply itself is untrusted input: at most 4 MiB within the
deadline, JSON nested too deeply is unreadable (not an error of pcidoc's), and control
sequences are removed (host names reach event lines and the checks' text) before it is parsed.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

from pcidoc._record import field, record

RAS_PORT = 28028
PROTOCOL = 2
MAX_REPLY_BYTES = 4 * 1024 * 1024


@record
class RasQuery:
    """The outcome of one query: the report text (JSON or text) or why there is none."""

    text: str | None = None
    fmt: str = "text"
    error: str | None = None
    refused: bool = False
    """True when nothing listened on the port (no NCCL job with RAS on this node)."""
    listener_uid: int | None = None
    """The uid that owns the listening end (None when it could not be read)."""


def _endpoint(text: str) -> tuple[str, int]:
    """``0100007F:6D3C`` of ``/proc/net/tcp`` (or its 128-bit form in ``tcp6``) as an address
    and a port; IPv4-mapped IPv6 addresses as IPv4."""
    host, _, port = text.partition(":")
    raw = bytes.fromhex(host)
    if sys.byteorder == "little":  # the kernel prints each 32-bit word in host order
        raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    if len(raw) == 4:
        address = socket.inet_ntop(socket.AF_INET, raw)
    else:
        address = socket.inet_ntop(socket.AF_INET6, raw)
        if address.startswith("::ffff:") and "." in address:
            address = address[len("::ffff:") :]
    return address, int(port, 16)


def _plain(address: tuple[Any, ...]) -> tuple[str, int]:
    host = str(address[0])
    return (host[len("::ffff:") :] if host.startswith("::ffff:") else host), int(address[1])


def _socket_lines(proc_root: str) -> Iterable[list[str]]:
    for table in ("tcp", "tcp6"):
        try:
            with open(os.path.join(proc_root, "net", table), encoding="ascii") as handle:
                next(handle, None)  # the header
                for line in handle:
                    yield line.split()
        except (OSError, UnicodeDecodeError):
            continue


def peer_uid(sock: socket.socket, proc_root: str = "/proc") -> tuple[int | None, str]:
    """The uid owning the other end of a TCP connection on this host, and ``""``; or None and
    why it cannot be told. Read from ``/proc/net/tcp`` and ``tcp6``: the entry whose local end
    is our peer and whose remote end is us (the server's accepted socket, which carries its
    listener's owner)."""
    try:
        ours, theirs = _plain(sock.getsockname()), _plain(sock.getpeername())
    except OSError as exc:
        return None, f"the connection closed ({exc.strerror or exc})"
    for fields in _socket_lines(proc_root):
        if len(fields) < 8:
            continue
        try:
            if _endpoint(fields[1]) == theirs and _endpoint(fields[2]) == ours:
                return int(fields[7]), ""
        except ValueError:
            continue
    return None, f"no entry for {theirs[0]}:{theirs[1]} in {proc_root}/net/tcp or tcp6"


def trusted_uids(extra: Iterable[int] = ()) -> frozenset[int]:
    """The owners whose RAS listener ``watch`` believes: root, the user running it, and
    ``extra`` (``--ras-user``)."""
    return frozenset({0, os.geteuid(), *extra})


class _Line:
    """Line reads on a socket with a deadline."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.deadline = deadline
        self.buffer = b""

    def _recv(self) -> bytes:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("RAS query deadline passed")
        self.sock.settimeout(left)
        return self.sock.recv(65536)

    def line(self) -> str:
        while b"\n" not in self.buffer:
            chunk = self._recv()
            if not chunk:
                break
            self.buffer += chunk
            if len(self.buffer) > MAX_REPLY_BYTES:
                raise ValueError("RAS reply too long")
        head, _, self.buffer = self.buffer.partition(b"\n")
        return head.decode("utf-8", "replace").strip()

    def rest(self) -> str:
        data = self.buffer
        while len(data) <= MAX_REPLY_BYTES:
            chunk = self._recv()
            if not chunk:
                break
            data += chunk
        return data[:MAX_REPLY_BYTES].decode("utf-8", "replace")


def _ask(sock: socket.socket, reader: _Line, command: str) -> str:
    sock.sendall(command.encode() + b"\n")
    return reader.line()


def _owner_refusal(uid: int | None, why: str, where: str) -> str:
    if uid is None:
        return f"cannot tell who listens on {where} ({why}); its reply is not read"
    try:
        import pwd

        name = f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        name = f"uid {uid}"
    return (
        f"{where} is held by {name}, not root or the user running pcidoc; its reply is not "
        f"read (any local user can listen there first: name the job's user with --ras-user)"
    )


def query_ras(
    host: str = "127.0.0.1",
    port: int = RAS_PORT,
    timeout_s: float = 5.0,
    fmt: str = "json",
    trusted: frozenset[int] | None = None,
    proc_root: str = "/proc",
) -> RasQuery:
    """Ask the NCCL job's RAS service for its status (read-only), once its listener's owner
    is known to be in ``trusted`` (default :func:`trusted_uids`)."""
    deadline = time.monotonic() + timeout_s
    try:
        sock = socket.create_connection((host, port), timeout=min(1.0, timeout_s))
    except ConnectionRefusedError:
        return RasQuery(refused=True, error=f"nothing listens on {host}:{port}")
    except OSError as exc:
        return RasQuery(error=f"{host}:{port}: {exc.strerror or exc}")
    try:
        uid, why = peer_uid(sock, proc_root)
        if uid is None or uid not in (trusted_uids() if trusted is None else trusted):
            return RasQuery(error=_owner_refusal(uid, why, f"{host}:{port}"), listener_uid=uid)
        reader = _Line(sock, deadline)
        answer = _ask(sock, reader, f"CLIENT PROTOCOL {PROTOCOL}")
        if not answer.upper().startswith("SERVER PROTOCOL"):
            return RasQuery(error=f"not an NCCL RAS service ({answer[:60]!r})")
        # RAS waits up to this long for other processes; stay well inside our deadline.
        _ask(sock, reader, f"TIMEOUT {max(1, int(timeout_s / 2))}")
        used = "text"
        if fmt == "json" and _ask(sock, reader, "SET FORMAT json").upper() == "OK":
            used = "json"
        sock.sendall(b"STATUS\n")
        return RasQuery(text=reader.rest(), fmt=used, listener_uid=uid)
    except (OSError, TimeoutError, ValueError) as exc:
        return RasQuery(error=f"RAS query failed: {exc}")
    finally:
        sock.close()


def parse_reply(query: RasQuery, source: str) -> Any:
    """The :class:`~pcidoc.model.runtime.NcclRasReport` of a reply, or None."""
    from pcidoc.collect.importers import nccl_ras
    from pcidoc.collect.importers.text import Doc
    from pcidoc.sanitize import clean_data, clean_text

    if not query.text:
        return None
    if query.fmt == "json":
        try:
            data = clean_data(json.loads(query.text))
        except (ValueError, RecursionError):  # not JSON, a huge integer, nested too deeply
            data = None
        if nccl_ras.looks_like_ras_json(data):
            return nccl_ras.parse_ras_json(data, source)
    doc = Doc(name=source, lines=clean_text(query.text).splitlines())
    if nccl_ras.looks_like_ras(doc):
        return nccl_ras.parse_ras_text(doc, source)
    return None


@record
class RasWatch:
    """``pcidoc watch``'s RAS poller: queries every ``period_s`` and puts the report into the
    capture's evidence (so ``nccl.ras`` judges it), emitting an ``nccl_ras`` event when the
    ranks it names change."""

    host: str = "127.0.0.1"
    port: int = RAS_PORT
    timeout_s: float = 5.0
    period_s: float = 30.0
    clock: Callable[[], float] | None = None
    """Monotonic seconds (``time.monotonic`` when None; tests pass a fake clock)."""
    trusted: frozenset[int] | None = None
    """Owners whose listener is believed (default :func:`trusted_uids`: root and this user)."""
    proc_root: str = "/proc"
    last_query: float | None = None
    named: tuple[tuple[str, str], ...] = ()
    seen_job: bool = False
    notes: list[str] = field(default_factory=list)

    def poll(self, capture: Any, event: Callable[..., dict[str, Any]]) -> list[dict[str, Any]]:
        """Query when due; the events this caused (none when no job listens)."""
        now = (self.clock or time.monotonic)()
        if self.last_query is not None and now - self.last_query < self.period_s:
            return []
        self.last_query = now
        query = query_ras(
            self.host, self.port, self.timeout_s, trusted=self.trusted, proc_root=self.proc_root
        )
        if query.refused:
            return []
        report = parse_reply(query, f"ras:{self.host}:{self.port}")
        if report is None:
            message = query.error or "unreadable RAS reply"
            if message in self.notes:
                return []
            self.notes = [*self.notes[-49:], message]  # bounded: a reply chooses the text
            return [event("nccl_ras_error", error=message)]
        self._store(capture, report)
        named = tuple(
            sorted(
                (r.state, f"rank {r.rank}" if r.rank is not None else f"pid {r.pid}")
                for r in report.ranks
            )
        )
        first, self.seen_job = not self.seen_job, True
        if named == self.named and not first:
            return []
        self.named = named
        return [
            event(
                "nccl_ras",
                format=report.fmt,
                ranks=[
                    {"state": r.state, "rank": r.rank, "gpu": r.gpu, "pid": r.pid, "host": r.host}
                    for r in report.ranks
                ],
            )
        ]

    @staticmethod
    def _store(capture: Any, report: Any) -> None:
        from pcidoc.model.evidence import ImportedEvidence

        if capture.evidence is None:
            capture.evidence = ImportedEvidence()
        kept = [r for r in capture.evidence.nccl_ras if not (r.source or "").startswith("ras:")]
        capture.evidence.nccl_ras = [*kept, report]

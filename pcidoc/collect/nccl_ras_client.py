"""A read-only client of NCCL's RAS service, for ``pcidoc watch``.

An NCCL job (2.24+) listens for RAS clients on ``localhost:28028`` (``NCCL_RAS_ADDR``). The
protocol is lines of text (NCCL's ``ncclras`` client, ``src/ras/client.cc``): the client sends
``CLIENT PROTOCOL 2`` and reads ``SERVER PROTOCOL n``; optionally ``TIMEOUT s`` and
``SET FORMAT json`` (2.28.7+), each answered ``OK``; then ``STATUS``, after which the server
writes the report and closes the connection. Nothing is changed in the job.

Every read and write has a short timeout and the whole query a deadline: a hung job must not
hang ``watch``. A refused connection (no NCCL job on the node) is not an error.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
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


def query_ras(
    host: str = "127.0.0.1",
    port: int = RAS_PORT,
    timeout_s: float = 5.0,
    fmt: str = "json",
) -> RasQuery:
    """Ask the NCCL job's RAS service for its status (read-only)."""
    deadline = time.monotonic() + timeout_s
    try:
        sock = socket.create_connection((host, port), timeout=min(1.0, timeout_s))
    except ConnectionRefusedError:
        return RasQuery(refused=True, error=f"nothing listens on {host}:{port}")
    except OSError as exc:
        return RasQuery(error=f"{host}:{port}: {exc.strerror or exc}")
    try:
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
        return RasQuery(text=reader.rest(), fmt=used)
    except (OSError, TimeoutError, ValueError) as exc:
        return RasQuery(error=f"RAS query failed: {exc}")
    finally:
        sock.close()


def parse_reply(query: RasQuery, source: str) -> Any:
    """The :class:`~pcidoc.model.runtime.NcclRasReport` of a reply, or None."""
    from pcidoc.collect.importers import nccl_ras
    from pcidoc.collect.importers.text import Doc

    if not query.text:
        return None
    if query.fmt == "json":
        try:
            data = json.loads(query.text)
        except ValueError:
            data = None
        if nccl_ras.looks_like_ras_json(data):
            return nccl_ras.parse_ras_json(data, source)
    doc = Doc(name=source, lines=query.text.splitlines())
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
        query = query_ras(self.host, self.port, self.timeout_s)
        if query.refused:
            return []
        report = parse_reply(query, f"ras:{self.host}:{self.port}")
        if report is None:
            message = query.error or "unreadable RAS reply"
            if message in self.notes:
                return []
            self.notes.append(message)
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

"""``pcidoc watch`` queries NCCL RAS on the node read-only: a loopback fake RAS service (bounded
lifetime) answers the protocol of NCCL's ``ncclras`` client."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

from pcidoc.collect.nccl_ras_client import RasWatch, parse_reply, query_ras
from tests.fleet.test_watch import FakeClock, _machine

REPORT = {
    "nccl_version": "2.29.1",
    "communicators_count": 1,
    "communicators": [
        {
            "hash": "0xae94",
            "size": 2,
            "missing_ranks_count": 1,
            "ranks": [{"rank": 0, "host": "127.0.0.1", "pid": 10, "cuda_dev": 0, "nvml_dev": 0}],
            "missing_ranks": [
                {
                    "rank": 1,
                    "host": "127.0.0.1",
                    "pid": 11,
                    "cuda_dev": 1,
                    "nvml_dev": 1,
                    "status": {"unresponsive": True, "considered_dead": True},
                },
            ],
        }
    ],
}


class FakeRas:
    """Serves ``connections`` RAS clients on 127.0.0.1, then stops (5 s at most each)."""

    def __init__(self, reply: str, json_ok: bool = True, connections: int = 1) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(5.0)
        self.port = self.server.getsockname()[1]
        self.reply, self.json_ok, self.connections = reply, json_ok, connections
        self.commands: list[str] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            for _ in range(self.connections):
                conn, _addr = self.server.accept()
                with conn:
                    conn.settimeout(5.0)
                    self._session(conn.makefile("rwb"))
        except OSError:
            pass
        finally:
            self.server.close()

    def _session(self, stream) -> None:  # type: ignore[no-untyped-def]
        for raw in stream:
            command = raw.decode().strip()
            self.commands.append(command)
            if command.startswith("CLIENT PROTOCOL"):
                stream.write(b"SERVER PROTOCOL 2\n")
            elif command.startswith("TIMEOUT"):
                stream.write(b"OK\n")
            elif command == "SET FORMAT json":
                stream.write(b"OK\n" if self.json_ok else b"ERROR: Unknown command SET\n")
            elif command == "STATUS":
                stream.write(self.reply.encode())
                stream.flush()
                return
            stream.flush()

    def close(self) -> None:
        self.thread.join(timeout=10.0)


def test_query_speaks_the_ras_protocol_and_reads_json() -> None:
    fake = FakeRas(json.dumps(REPORT))
    try:
        query = query_ras("127.0.0.1", fake.port, timeout_s=5.0)
    finally:
        fake.close()
    assert fake.commands[0] == "CLIENT PROTOCOL 2"
    assert fake.commands[-1] == "STATUS"
    assert query.fmt == "json" and query.error is None
    report = parse_reply(query, "ras:test")
    assert [(r.rank, r.state, r.gpu) for r in report.ranks] == [(1, "dead", 1)]


def test_older_nccl_without_json_falls_back_to_text() -> None:
    text = (
        "NCCL version 2.26.2 compiled with CUDA 12.6\n\nCommunicators... (0.00s)\n=============\n\n"
        "Errors\n======\n\nDEAD\n  1 job process is considered dead (unreachable via the RAS "
        "network)\n  Process 77 on node 10.0.0.9 managing GPU 3\n"
    )
    fake = FakeRas(text, json_ok=False)
    try:
        query = query_ras("127.0.0.1", fake.port, timeout_s=5.0)
    finally:
        fake.close()
    report = parse_reply(query, "ras:test")
    assert query.fmt == "text"
    assert [(r.pid, r.state, r.gpu, r.host) for r in report.ranks] == [(77, "dead", 3, "10.0.0.9")]


def test_nothing_listening_is_quiet() -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    query = query_ras("127.0.0.1", port, timeout_s=1.0)
    assert query.refused and query.text is None


def test_watch_puts_the_ras_report_into_its_diagnosis(tmp_path: Path) -> None:
    clock = FakeClock()
    _nvml, watcher = _machine(tmp_path, clock)
    server = FakeRas(json.dumps(REPORT), connections=1)
    try:
        watcher.ras = RasWatch(
            port=server.port, timeout_s=5.0, period_s=30.0, clock=clock.monotonic
        )
        watcher.start()
        events = watcher.step()
    finally:
        server.close()
    ras = [e for e in events if e["event"] == "nccl_ras"]
    assert ras and ras[0]["ranks"][0]["state"] == "dead"
    changed = [e for e in events if e["event"] == "check_changed" and e["check"] == "nccl.ras"]
    assert changed and changed[0]["after"] == "fail"
    # Not due again within the period: no second query.
    queried_at = watcher.ras.last_query
    clock.t += 1.0
    assert all(e["event"] != "nccl_ras" for e in watcher.step())
    assert watcher.ras.last_query == queried_at

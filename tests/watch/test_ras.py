"""``pcidoc watch`` queries NCCL RAS on the node read-only: a loopback fake RAS service (bounded
lifetime) answers the protocol of NCCL's ``ncclras`` client."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

from pcidoc.collect.nccl_ras_client import RasWatch, parse_reply, query_ras
from tests.watch.test_watch import FakeClock, _machine

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


# ------------------------------------------- issue 30: who listens, and what it may send

import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402

from pcidoc.cli.watch import ras_users  # noqa: E402
from pcidoc.collect.nccl_ras_client import RasQuery, peer_uid  # noqa: E402
from pcidoc.errors import PcidocError  # noqa: E402

ROOT = os.geteuid() == 0


def _proc_entry(local: tuple[str, int], remote: tuple[str, int], uid: int) -> str:
    def hexed(address: tuple[str, int]) -> str:
        raw = socket.inet_aton(address[0])
        return f"{(raw[::-1] if sys.byteorder == 'little' else raw).hex().upper()}:{address[1]:04X}"

    times = "00000000:00000000 00:00000000 00000000"
    return f"   0: {hexed(local)} {hexed(remote)} 01 {times}  {uid}  0 123 1\n"


def test_the_listener_owner_is_read_from_proc_net_tcp(tmp_path: Path) -> None:
    """The uid of the server's end of our connection, as /proc/net/tcp lists it."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
        try:
            ours, theirs = client.getsockname(), client.getpeername()
            net = tmp_path / "net"
            net.mkdir()
            (net / "tcp").write_text(
                "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt"
                "   uid  timeout inode\n"
                + _proc_entry(theirs, (ours[0], ours[1] + 1), 999)  # another connection
                + _proc_entry(theirs, ours, 4321)
                + _proc_entry(ours, theirs, 0)  # our own end
            )
            assert peer_uid(client, str(tmp_path)) == (4321, "")
            assert peer_uid(client, str(tmp_path / "nowhere"))[0] is None
            if os.path.exists("/proc/net/tcp"):
                assert peer_uid(client) == (os.geteuid(), "")
        finally:
            client.close()
            accepted.close()


def test_a_listener_whose_owner_cannot_be_told_is_not_read(tmp_path: Path) -> None:
    fake = FakeRas(json.dumps(REPORT))
    try:
        query = query_ras("127.0.0.1", fake.port, timeout_s=5.0, proc_root=str(tmp_path))
    finally:
        fake.server.close()
        fake.close()
    assert query.text is None and "cannot tell who listens" in (query.error or "")
    assert fake.commands == []  # nothing was sent


_FOREIGN = """
import json, os, sys
from tests.watch.test_ras import REPORT, FakeRas
os.setgid(65534)
os.setuid(65534)  # the listening socket is made by this user
fake = FakeRas(json.dumps(REPORT), connections=2)
print(fake.port, flush=True)
fake.close()
"""


@pytest.mark.skipif(not ROOT, reason="listening as another user needs root")
def test_a_listener_of_another_user_is_not_believed() -> None:
    """Any local user can listen on the RAS port before a job does and feed root's monitor
    fake failures: only root's, the watching user's and --ras-user's listeners are read."""
    child = subprocess.Popen(
        [sys.executable, "-c", _FOREIGN],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())
        refused = query_ras("127.0.0.1", port, timeout_s=5.0)
        believed = query_ras("127.0.0.1", port, timeout_s=5.0, trusted=frozenset({0, 65534}))
        child.wait(timeout=30)
    finally:
        child.kill()
    assert refused.text is None and refused.listener_uid == 65534
    assert "uid 65534" in (refused.error or "") and "--ras-user" in (refused.error or "")
    assert believed.listener_uid == 65534 and believed.text and believed.error is None


def test_a_deeply_nested_reply_is_unreadable_not_an_internal_error(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert parse_reply(RasQuery(text=deep, fmt="json"), "ras:test") is None
    nested = '{"communicators": [], "nccl_version": ' + "[" * 990 + "]" * 990 + "}"
    parse_reply(RasQuery(text=nested, fmt="json"), "ras:test")  # no exception either way
    clock = FakeClock()
    _nvml, watcher = _machine(tmp_path, clock)
    server = FakeRas(deep)
    try:
        watcher.ras = RasWatch(port=server.port, timeout_s=5.0, clock=clock.monotonic)
        watcher.start()
        events = watcher.step()
    finally:
        server.close()
    (error,) = [e for e in events if e["event"] == "nccl_ras_error"]
    assert "unreadable" in error["error"]


def test_host_names_in_a_reply_are_cleaned_before_they_reach_events(tmp_path: Path) -> None:
    hostile = json.loads(json.dumps(REPORT))
    evil = "node\x1b]0;pwned\x07-7\r\nfake_metric 1"
    for rank in hostile["communicators"][0]["missing_ranks"]:
        rank["host"] = evil
    report = parse_reply(RasQuery(text=json.dumps(hostile), fmt="json"), "ras:test")
    assert [r.host for r in report.ranks] == ["node-7 fake_metric 1"]
    text = (
        "NCCL version 2.26.2 compiled with CUDA 12.6\n\nCommunicators... (0.00s)\n"
        "=============\n\nErrors\n======\n\nDEAD\n"
        "  1 job process is considered dead (unreachable via the RAS network)\n"
        "  Process 77 on node 10.0.0.9\x1b[2J\x1b]52;c;cHduZWQ=\x07 managing GPU 3\n"
    )
    report = parse_reply(RasQuery(text=text, fmt="text"), "ras:test")
    assert [r.host for r in report.ranks] == ["10.0.0.9"]
    clock = FakeClock()
    _nvml, watcher = _machine(tmp_path, clock)
    server = FakeRas(json.dumps(hostile))
    try:
        watcher.ras = RasWatch(port=server.port, timeout_s=5.0, clock=clock.monotonic)
        watcher.start()
        events = watcher.step()
    finally:
        server.close()
    (ras,) = [e for e in events if e["event"] == "nccl_ras"]
    assert all("\x1b" not in str(r["host"]) and "\n" not in str(r["host"]) for r in ras["ranks"])
    assert watcher.report is not None
    (check,) = [c for c in watcher.report.checks if c.id == "nccl.ras"]
    dumped = check.model_dump_json()
    assert (
        "node-7 fake_metric 1" in dumped
        and "\\u001b" not in dumped
        and "pwned\\u0007" not in dumped
    )


def test_ras_users_are_names_or_uids() -> None:
    assert ras_users(["root", "4321"]) == frozenset({0, 4321})
    assert ras_users(None) == frozenset()
    with pytest.raises(PcidocError, match="no such user"):
        ras_users(["no-such-user-pcidoc"])

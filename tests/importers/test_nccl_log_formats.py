"""NCCL log classes missed before (issue 21 item 5): NCCL <= 2.5 socket networks, WARN lines
explained from the catalogue, and the host prefix read without a quadratic pattern."""

from __future__ import annotations

import pytest

from pcidoc.catalogue import match_line
from pcidoc.collect.importers.nccl_log import nccl_prefix
from tests.importers.helpers import load
from tests.importers.test_formats_2019 import result

OLD_SOCKET = """node1:1234:1234 [0] NCCL INFO Bootstrap : Using [0]eth0:10.1.1.1<0>
node1:1234:1234 [0] NCCL INFO NET/IB : No device found.
node1:1234:1234 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.1.1<0>
NCCL version 2.4.8+cuda10.1
node1:1234:1290 [0] NCCL INFO Ring 00 : 3 -> 4 [receive] via NET/Socket/0
"""


def test_nccl_25_socket_network_without_a_using_network_line() -> None:
    cap = load(OLD_SOCKET)
    (log,) = cap.evidence.nccl_logs  # type: ignore[union-attr]
    assert log.network == "Socket"
    assert log.socket_quote is not None and "NET/Socket : Using" in log.socket_quote
    r = result(cap, "nccl.network")
    assert r.severity == "info"
    assert "TCP sockets between nodes" in r.summary


def test_ib_in_use_is_not_called_socket() -> None:
    text = OLD_SOCKET.replace(
        "NET/IB : No device found.", "NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.1.1.1<0>"
    ).replace("node1:1234:1234 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.1.1<0>\n", "")
    (log,) = load(text).evidence.nccl_logs  # type: ignore[union-attr]
    assert log.network is None
    assert [n.name for n in log.ib_nics] == ["mlx5_0"]


def test_max_shared_mem_warning_means_an_nccl_too_old_for_the_gpu() -> None:
    text = OLD_SOCKET + (
        "node2:5678:5678 [0] NCCL WARN ncclMaxSharedMem 101376 exceeds device/fn "
        "maxSharedMem 99328\n"
    )
    r = result(load(text), "nccl.version")
    assert r.severity == "fail"
    assert "too old for the GPU architecture" in r.summary


@pytest.mark.parametrize(
    ("line", "family"),
    [
        ("NCCL WARN Cuda failure 'out of memory'", "nccl.transport"),
        (
            "NCCL WARN Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 1a000",
            "nccl.transport",
        ),
        ("NCCL WARN Connect to 10.0.0.2<43321> failed : Connection refused", "nccl.network"),
        ("NCCL WARN Bootstrap : no socket interface found", "nccl.network"),
        (
            "NCCL WARN NET/IB : Got completion from peer 10.0.0.2<0> with error 12, opcode 0",
            "nccl.network",
        ),
        ("NCCL WARN Call to ibv_reg_mr failed", "nccl.network"),
        ("NCCL WARN Cuda failure 'invalid device function'", "nccl.version"),
    ],
)
def test_catalogue_explains_common_warnings(line: str, family: str) -> None:
    hit = match_line(line)
    assert hit is not None and not hit.mention
    assert hit.entry.check == family
    assert hit.entry.fix


def test_unknown_warning_is_not_explained() -> None:
    assert match_line("NCCL WARN something new happened") is None


def test_connect_failure_fails_the_network_check() -> None:
    text = (
        OLD_SOCKET
        + "node2:5678:5678 [0] NCCL WARN Connect to 10.0.0.2<43321> failed : Connection refused\n"
    )
    r = result(load(text), "nccl.network")
    assert r.severity == "fail"
    assert "could not open a TCP connection" in r.summary


def test_prefix_found_token_by_token() -> None:
    assert nccl_prefix("[1,0]<stdout>:gpu-node-1:4242:4300 [3] ") == ("gpu-node-1", 14)
    assert nccl_prefix("2024-05-01 12:00:00 ") is None
    assert nccl_prefix("x" * 50_000 + " ") is None
    pod = "trainer-" + "a" * 70
    assert nccl_prefix(f"{pod}:12345:12399 [0] ") == (pod, 0)


# A socket list with container bridges and veth pairs, wrapped one entry per line as a reply
# quoting it would (synthetic addresses; the shape of NCCL's NET/Socket list).
WRAPPED_SOCKET = """Could you set NCCL_SOCKET_IFNAME? We are trying all of these interfaces:
```
INFO NET/Socket : Using
[0]bond0:192.168.1.161<0>
[1]br-05ab815fa14e:172.19.0.1<0>
[2]br-d5d80d7dbbad:172.21.0.1<0>
[3]veth6163fba:fe80::b878:6cff:fe52:abe2%veth6163fba<0>
```
Is that intended?
"""


def test_a_socket_list_wrapped_one_entry_per_line_is_read_whole() -> None:
    cap = load(WRAPPED_SOCKET)
    (log,) = cap.evidence.nccl_logs  # type: ignore[union-attr]
    assert [n.name for n in log.socket_nics] == [
        "bond0",
        "br-05ab815fa14e",
        "br-d5d80d7dbbad",
        "veth6163fba",
    ]
    assert log.socket_nics[3].address == "fe80::b878:6cff:fe52:abe2%veth6163fba"
    r = result(cap, "nccl.network")
    assert r.severity == "warn"
    assert "3 container/virtual interface(s)" in r.summary and "besides bond0" in r.summary
    assert "NCCL_SOCKET_IFNAME=bond0" in " ".join(r.remediation)


def test_a_socket_list_of_real_interfaces_is_no_warning() -> None:
    r = result(load(OLD_SOCKET), "nccl.network")
    assert r.severity == "info"
    assert "virtual" not in r.summary


def test_the_list_ends_at_the_first_line_that_is_not_an_entry() -> None:
    text = WRAPPED_SOCKET.replace("[2]br-d5d80d7dbbad", "some words\n[2]br-d5d80d7dbbad")
    (log,) = load(text).evidence.nccl_logs  # type: ignore[union-attr]
    assert [n.name for n in log.socket_nics] == ["bond0", "br-05ab815fa14e"]

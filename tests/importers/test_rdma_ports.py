"""RDMA ports from ibdev2netdev, ibstat and ibv_devinfo, and what nccl.nic-inventory says of
them. The tool outputs are synthetic, in the layouts the tools print (rdma-core's ibstat and
ibv_devinfo, NVIDIA's ibdev2netdev script)."""

from __future__ import annotations

from pcidoc.collect.importers import import_texts
from pcidoc.doctor.checks.nccl.nic_inventory import nic_inventory
from pcidoc.doctor.context import Context

IBSTAT = """$ ibstat
CA 'mlx5_0'
\tCA type: MT4129
\tNumber of ports: 1
\tFirmware version: 28.39.1002
\tPort 1:
\t\tState: Active
\t\tPhysical state: LinkUp
\t\tRate: 400
\t\tBase lid: 11
\t\tLink layer: InfiniBand
CA 'mlx5_1'
\tCA type: MT4129
\tPort 1:
\t\tState: Active
\t\tPhysical state: LinkUp
\t\tRate: 200
\t\tLink layer: InfiniBand
CA 'mlx5_2'
\tPort 1:
\t\tState: Down
\t\tPhysical state: Polling
\t\tRate: 10
\t\tLink layer: InfiniBand
"""

DEVINFO = """hca_id:\tmlx5_4
\ttransport:\t\t\tInfiniBand (0)
\tfw_ver:\t\t\t\t28.39.1002
\tphys_port_cnt:\t\t\t1
\t\tport:\t1
\t\t\tstate:\t\t\tPORT_ACTIVE (4)
\t\t\tmax_mtu:\t\t4096 (5)
\t\t\tlink_layer:\t\tEthernet

hca_id:\tmlx5_5
\t\tport:\t1
\t\t\tstate:\t\t\tPORT_DOWN (1)
\t\t\tlink_layer:\t\tEthernet
"""

IBDEV2NETDEV = """mlx5_0 port 1 ==> ibp26s0 (Down)
mlx5_1 port 1 ==> ibp60s0 (Down)
mlx5_7 port 1 ==> enp157s0f1np1 (Down)
mlx5_8 port 1 ==> enp157s0f0np0 (Up)
"""


def _check(text: str):
    result = import_texts([("paste.txt", text)])
    return result.capture.evidence.rdma_ports, nic_inventory(Context(result.capture))


def test_ibstat_ports_down_and_slower_than_their_peers_warn() -> None:
    ports, findings = _check(IBSTAT)
    assert [(p.hca, p.active, p.rate_gbps) for p in ports] == [
        ("mlx5_0", True, 400.0),
        ("mlx5_1", True, 200.0),
        ("mlx5_2", False, 10.0),
    ]
    texts = [(f.severity, f.summary) for f in findings]
    assert any(sev == "warn" and "mlx5_2 port 1 (Down, Polling)" in t for sev, t in texts)
    assert any(sev == "warn" and "mlx5_1 port 1 at 200 Gb/s" in t for sev, t in texts)


def test_ibv_devinfo_ethernet_port_down_is_information() -> None:
    ports, findings = _check(DEVINFO)
    assert [(p.hca, p.state, p.link_layer) for p in ports] == [
        ("mlx5_4", "PORT_ACTIVE", "Ethernet"),
        ("mlx5_5", "PORT_DOWN", "Ethernet"),
    ]
    assert [f.severity for f in findings] == ["info", "pass"]
    assert "unused port is normal" in findings[0].summary


def test_ibdev2netdev_down_on_ipoib_is_not_a_down_port() -> None:
    ports, findings = _check("Our HCAs:\n```\n" + IBDEV2NETDEV + "```\n")
    assert len(ports) == 4
    assert all(f.severity == "info" for f in findings)
    ipoib = next(f for f in findings if "IPoIB" in f.summary)
    assert ipoib.summary.startswith("2 InfiniBand port(s)")
    assert any("1 Ethernet port(s)" in f.summary for f in findings)


def test_ibstat_state_wins_over_the_interface_state_of_the_same_port() -> None:
    _, findings = _check(IBSTAT + "\n" + IBDEV2NETDEV)
    # mlx5_0 and mlx5_1 are active per ibstat: their IPoIB interface being down says nothing.
    assert not any("IPoIB" in f.summary for f in findings)
    assert any(f.severity == "warn" for f in findings)


def test_a_healthy_ibstat_passes() -> None:
    healthy = IBSTAT.split("CA 'mlx5_1'")[0]
    _, findings = _check(healthy)
    assert [(f.severity, f.summary) for f in findings] == [
        ("pass", "1 RDMA port(s) active at 400 Gb/s")
    ]


def test_ibdev2netdev_verbose_carries_the_ports_own_state() -> None:
    text = (
        "$ ibdev2netdev -v\n"
        "0000:3b:00.0 mlx5_0 (MT4123 - MCX653105A-HDAT) ConnectX-6 VPI adapter card fw "
        "20.28.1002 port 1 (ACTIVE) ==> ib0 (Down)\n"
        "0000:5e:00.0 mlx5_1 (MT4123 - MCX653105A-HDAT) ConnectX-6 VPI adapter card fw "
        "20.28.1002 port 1 (DOWN) ==> ib1 (Down)\n"
    )
    ports, findings = _check(text)
    assert [(p.hca, p.state, p.active, p.netdev_up) for p in ports] == [
        ("mlx5_0", "ACTIVE", True, False),
        ("mlx5_1", "DOWN", False, False),
    ]
    # mlx5_0's IPoIB interface being down says nothing: its port is active.
    assert not any("IPoIB" in f.summary for f in findings)
    assert any(f.severity == "warn" and "mlx5_1 port 1 (DOWN)" in f.summary for f in findings)

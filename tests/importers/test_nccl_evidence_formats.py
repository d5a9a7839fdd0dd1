"""Unit tests of the evidence importers' format variants, hostile input, the nccl-topo writer
round trip and the rules of the nccl.* checks that the corpus does not reach."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from pcidoc.cli import main
from pcidoc.collect.importers import import_texts
from pcidoc.collect.importers.nccl_log import bus_from_nccl
from pcidoc.collect.nccl_topo import write_topology
from pcidoc.doctor import run
from pcidoc.model.report import ReportSource
from pcidoc.samples import load_sample


def _cap(text: str, name: str = "x.txt"):  # type: ignore[no-untyped-def]
    return import_texts([(name, text)]).capture


def _check(capture, check_id: str):  # type: ignore[no-untyped-def]
    report = run(
        capture,
        ReportSource(kind="import", path="x"),
        only=[check_id],
        generated_at="2026-01-01T00:00:00Z",
    )
    return report.checks[0]


def test_nccl_log_prefix_variants_crlf_and_tags() -> None:
    text = (
        "[1,0]<stdout>:node1:11:22 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\r\n"
        "[1,1]<stdout>:2024-05-01T10:00:00Z node1:11:23 [1] NCCL INFO NCCL_P2P_LEVEL set by "
        "environment to NVL\r\n"
        "NCCL INFO NET/IB : Using [0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE} [RO]; OOB eth0\r\n"
        "node1:11:22 [0] NCCL INFO Ring 00 : 2[3d000] -> 3[3e000] via direct shared memory\r\n"
        "node1:11:22 [0] NCCL INFO something nobody knows\r\n"
    )
    log = _cap(text).evidence.nccl_logs[0]
    assert [c.transport for c in log.connections] == ["P2P", "SHM"]
    assert log.env == {"NCCL_P2P_LEVEL": "NVL"}
    assert [n.name for n in log.ib_nics] == ["mlx5_2", "mlx5_3"]
    assert log.hosts == ["node1"]


def test_nccl_bus_ids_decode() -> None:
    assert bus_from_nccl("1c000") == "0000:1c:00.0"
    assert bus_from_nccl("101d0") == "0000:10:1d.0"
    assert bus_from_nccl("100000") == "0001:00:00.0"
    assert bus_from_nccl("zz") is None


def test_truncated_nccl_log_warns_instead_of_failing() -> None:
    result = import_texts(
        [("cut.txt", "host:1:2 [0] NCCL INFO Chan\nhost:1:2 [0] NCCL WARN Cal\n")]
    )
    assert any("cut short" in w for w in result.warnings)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("<system version='1'><cpu numaid='0'><pci busid='0000:01:00.0'>", "truncated"),
        ("<system version='1'><cpu numaid='0'></pci></system>", "not well-formed"),
        (
            '<!DOCTYPE system [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]>\n<system>&b;</system>',
            "DOCTYPE",
        ),
    ],
)
def test_hostile_or_broken_xml_is_a_warning(text: str, words: str) -> None:
    result = (
        import_texts(
            [
                ("t.xml", "<system version='1'>\n" + text if text[0] != "<" else text),
                ("topo.txt", "GPU0 X\n"),
            ]
        )
        if False
        else None
    )
    del result
    try:
        result = import_texts([("t.xml", text)])
        warnings = result.warnings
    except Exception as exc:  # nothing recognised at all is a one-line PcidocError
        warnings = [str(exc)]
    assert any(words.lower() in w.lower() for w in warnings), warnings


def test_xml_links_and_nvswitch_classes() -> None:
    xml = """<system version="1">
  <cpu numaid="0" affinity="0000000f" arch="x86_64" vendor="AuthenticAMD">
    <pci busid="0000:10:00.0" class="0x060400">
      <pci busid="0000:11:00.0" class="0x030200"><gpu dev="0" sm="90">
        <nvlink target="0000:c0:00.0" count="18" tclass="0x068000"/></gpu></pci>
      <pci busid="0000:12:00.0" class="0x030200"><gpu dev="1" sm="90">
        <nvlink target="0000:c0:00.0" count="18" tclass="0x068000"/></gpu></pci>
    </pci>
  </cpu>
</system>"""
    cap = _cap(xml)
    assert cap.topology.link("GPU0", "GPU1") == "NV18"
    assert cap.gpu(0).cpu_affinity == "0-3"
    assert len(cap.gpu(1).nvlinks) == 18


def test_amd_rocm_smi_showtopo_gives_xgmi_links() -> None:
    text = """========================== ROCm System Management Interface ==========================
================================ Weight between two GPUs =================================
       GPU0         GPU1
GPU0   0            15
GPU1   15           0
================================= Hops between two GPUs ==================================
       GPU0         GPU1
GPU0   0            1
GPU1   1            0
=============================== Link Type between two GPUs ===============================
       GPU0         GPU1
GPU0   0            XGMI
GPU1   XGMI         0
======================================= Numa Nodes =======================================
GPU[0]          : (Topology) Numa Node: 0
GPU[1]          : (Topology) Numa Node: 1
================================== End of ROCm SMI Log ===================================
"""
    cap = _cap(text)
    assert cap.topology.link("GPU0", "GPU1") == "XGMI"
    assert [g.numa_node for g in cap.gpus] == [0, 1]
    amd = cap.evidence.amd_topologies[0]
    assert amd.hops[0][1] == 1 and amd.weights[0][1] == 15


def test_amd_smi_topology_tables_by_bus_id() -> None:
    text = """LINK TYPE TABLE:
             0000:0c:00.0 0000:22:00.0
0000:0c:00.0 SELF         XGMI
0000:22:00.0 XGMI         SELF

HOPS TABLE:
             0000:0c:00.0 0000:22:00.0
0000:0c:00.0 0            1
0000:22:00.0 1            0
"""
    cap = _cap(text)
    assert cap.evidence.amd_topologies[0].tool == "amd-smi"
    assert cap.gpu(1).bus_id == "0000:22:00.0"
    assert cap.topology.link("GPU0", "GPU1") == "XGMI"


def test_lspci_tree_and_block_with_bus_id() -> None:
    tree = (
        "-+-[0000:80]-+-00.0  Intel Corporation Root\n"
        " |           \\-01.0-[81]----00.0  NVIDIA Corporation GA100\n"
    )
    cap = _cap(tree)
    t = cap.evidence.lspci_trees[0]
    assert t.parents["0000:81:00.0"] == "0000:80:01.0"
    block = (
        "41:00.0 3D controller: NVIDIA Corporation GA100 [A100 SXM4 40GB] (rev a1)\n"
        "\tLnkCap:\tPort #0, Speed 16GT/s, Width x16\n"
        "\tLnkSta:\tSpeed 16GT/s, Width x8 (downgraded)\n"
    )
    dev = _cap(block).evidence.lspci[0]
    assert (dev.bus_id, dev.kind, dev.lnksta_width, dev.width_downgraded) == (
        "0000:41:00.0",
        "gpu",
        8,
        True,
    )


def test_nccl_tests_json_output() -> None:
    data = {
        "version": 2,
        "args": ["./build/all_reduce_perf", "-b", "8"],
        "config": {"ngpus": 1},
        "devices": [
            {"rank": 0, "pid": 1, "hostname": "a", "device": 0, "device_hex": "0000:1b:00"},
            {"rank": 1, "pid": 2, "hostname": "b", "device": 0, "device_hex": "0000:1b:00"},
        ],
        "results": [
            {
                "size": 1048576,
                "out_of_place": {"time": 10.0, "alg_bw": 100.0, "bus_bw": 100.0, "nwrong": 0},
                "in_place": {"time": 10.0, "alg_bw": 100.0, "bus_bw": 100.0, "nwrong": 0},
            }
        ],
        "out_of_bounds": {"count": 0, "okay": "true"},
    }
    cap = _cap(json.dumps(data), "run.json")
    run_ = cap.evidence.test_runs[0]
    assert run_.hosts == ["a", "b"]
    coll = cap.measurements.collectives[0]
    assert (coll.op, coll.nodes, coll.correct) == ("all_reduce", 2, True)


def test_each_process_its_own_one_rank_job_fails() -> None:
    block = (
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20\n"
        "#\n# Using devices\n#  Rank  0 Group  0 Pid  {pid} on  host device  {dev} [0x1b] GPU\n"
        "#\n#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong\n"
        "           8             2     float     sum      -1     4.1    0.00    0.00      0"
        "     4.0    0.00    0.00      0\n"
    )
    text = block.format(pid=100, dev=0) + block.format(pid=101, dev=1)
    result = _check(_cap(text), "nccl.tests-launch")
    assert result.severity == "fail" and "1-rank" in result.summary


def test_ib_disable_ignored_with_external_plugin() -> None:
    text = (
        "h:1:1 [0] NCCL INFO NET/Plugin: Loaded net plugin AWS Libfabric (v7)\n"
        "h:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
        "h:1:1 [0] NCCL INFO Using network AWS Libfabric\n"
    )
    result = _check(_cap(text), "nccl.env-ignored")
    assert result.severity == "warn" and "NCCL_NET" in " ".join(result.remediation)


def test_nccl_too_old_for_ampere() -> None:
    text = (
        "NCCL version 2.5.6+cuda10.1\n"
        "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-1)\n"
        "h:1:1 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC\n"
    )
    result = _check(_cap(text), "nccl.version")
    assert result.severity == "fail" and "2.7.3" in result.summary


def test_checks_skip_without_evidence() -> None:
    cap = load_sample("h100-pcie-nvlink-bridge")
    report = run(
        cap,
        ReportSource(kind="demo", name="h100-pcie-nvlink-bridge"),
        generated_at="2026-01-01T00:00:00Z",
    )
    nccl = [r for r in report.checks if r.id.startswith("nccl.")]
    assert nccl and all(r.severity == "skip" for r in nccl if r.id != "nccl.nic-inventory")


@pytest.mark.parametrize("name", ["a100-sxm4-8gpu-nvswitch", "h100-pcie-nvlink-bridge"])
def test_writer_output_parses_and_round_trips(name: str) -> None:
    cap = load_sample(name)
    text, _ = write_topology(cap, arch="x86_64", vendor="AuthenticAMD")
    root = ET.fromstring(text)
    cpus = root.findall("cpu")
    assert cpus and all(c.get("arch") and c.get("vendor") for c in cpus)
    back = _cap(text, "topo.xml")
    assert [g.bus_id for g in back.gpus] == [g.bus_id for g in cap.gpus]
    labels = [g.label for g in cap.gpus]
    for a in labels:
        for b in labels:
            assert back.topology.link(a, b) == cap.topology.link(a, b), (a, b)
    assert _check(back, "nccl.topo-file").severity == "pass"


def test_nccl_topo_cli(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "topo.xml"
    assert main(["nccl-topo", "--demo", "h100-pcie-nvlink-bridge", "-o", str(out)]) == 3
    assert "--arch" in capsys.readouterr().err
    code = main(
        [
            "nccl-topo",
            "--demo",
            "h100-pcie-nvlink-bridge",
            "--arch",
            "x86_64",
            "--cpu-vendor",
            "GenuineIntel",
            "--cpu-family",
            "6",
            "--cpu-model",
            "143",
            "-o",
            str(out),
        ]
    )
    assert code == 0
    cpu = ET.parse(out).getroot().find("cpu")
    assert cpu is not None and (cpu.get("familyid"), cpu.get("modelid")) == ("6", "143")


def test_live_topo_file_checked_against_gpus(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pcidoc.collect.nccl_topo import attach_topo_file

    cap = load_sample("h100-pcie-nvlink-bridge")
    cap.origin.kind = "live"
    path = tmp_path / "t.xml"
    path.write_text(
        '<system version="1"><cpu numaid="0" arch="x86_64" vendor="AuthenticAMD">'
        '<pci busid="0000:99:00.0" class="0x030200"/></cpu></system>'
    )
    attach_topo_file(cap, {"NCCL_TOPO_FILE": str(path)})
    result = _check(cap, "nccl.topo-file")
    assert result.severity == "warn" and "does not match" in result.summary
    attach_topo_file(cap, {"NCCL_TOPO_FILE": str(tmp_path / "missing.xml")})
    assert cap.evidence.topo_file_error


_TOPO = (
    "        GPU0    GPU1    NIC0    CPU Affinity    NUMA Affinity\n"
    "GPU0     X      PIX     PIX     0-15    0\n"
    "GPU1    PIX      X      PIX     0-15    0\n"
    "NIC0    PIX     PIX      X\n\n"
    "NIC Legend:\n\n  NIC0: mlx5_0\n"
)


def test_no_gdrdma_on_a_pix_nic_names_the_path() -> None:
    log = "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 2[0] [send] via NET/IB/0\n"
    result = import_texts([("topo.txt", _TOPO), ("nccl.log", log)]).capture
    found = _check(result, "nccl.network")
    assert found.severity == "warn" and found.confidence == "medium"
    assert "PIX" in found.summary


def test_socket_with_rdma_nic_in_topology_warns() -> None:
    log = "h:1:2 [0] NCCL INFO Using network Socket\n"
    result = import_texts([("topo.txt", _TOPO), ("nccl.log", log)]).capture
    found = _check(result, "nccl.network")
    assert found.severity == "warn" and "mlx5_0" in " ".join(e.text() for e in found.evidence)


def test_acs_redirect_joined_to_gpus_through_the_tree() -> None:
    text = (
        "-+-[0000:40]-+-00.0  AMD Root Complex\n"
        " |           \\-01.1-[41-42]----00.0-[42]----00.0  NVIDIA Corp. GA100 3D controller\n"
        "\n"
        "41:00.0 PCI bridge: PLX Technology, Inc. PEX 8747\n"
        "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- "
        "DirectTrans-\n"
    )
    found = _check(_cap(text), "nccl.acs-redirect")
    assert found.severity == "warn" and found.confidence == "high"
    assert "0000:42:00.0" in found.summary


def test_quotes_carry_no_control_characters() -> None:
    text = "h:1:2 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5\x1bc\x08_0\n"
    log = _cap(text).evidence.nccl_logs[0]
    # `ESC c` is one escape (a terminal reset): the import entry removes it whole (issue 13).
    assert log.env["NCCL_IB_HCA"] == "mlx5_0"
    assert "\x1b" not in log.env_quotes["NCCL_IB_HCA"]


def test_separate_single_rank_headers_without_rows_only_warn() -> None:
    block = (
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20\n"
        "#\n# Using devices\n#  Rank  0 Group  0 Pid  {pid} on  host device  0 [0x1b] GPU\n"
    )
    result = _check(_cap(block.format(pid=1) + block.format(pid=2)), "nccl.tests-launch")
    assert (result.severity, result.confidence) == ("warn", "medium")


def test_pxn_nic_index_is_read() -> None:
    text = "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0(4)/GDRDMA\n"
    conn = _cap(text).evidence.nccl_logs[0].connections[0]
    assert (conn.nic_index, conn.gdr) == (0, True)


def test_p2p_refusal_explained_by_acs_redirect_in_the_same_paste() -> None:
    log = (
        "h:1:2 [1] NCCL INFO Could not enable P2P between dev 1(=81000) and dev 0(=41000)\n"
        "h:1:2 [1] NCCL INFO Channel 00 : 1[81000] -> 0[41000] via SHM/direct/direct\n"
    )
    acs = "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl-\n"
    capture = import_texts([("nccl.log", log), ("acs.txt", acs)]).capture
    found = _check(capture, "nccl.transport")
    assert found.severity == "warn" and found.confidence == "medium"
    assert "ACS" in found.summary


def test_huge_topology_file_is_bounded() -> None:
    pcis = "".join(
        f'<pci busid="0000:{i // 32:02x}:{i % 32:02x}.0" class="0x030200"/>' for i in range(2000)
    )
    cpu = '<cpu numaid="0" arch="x86_64" vendor="AuthenticAMD">'
    text = f'<system version="1">{cpu}{pcis}</cpu></system>'
    result = import_texts([("big.xml", text)])
    assert any("no topology matrix built" in w for w in result.warnings)


def test_many_single_rank_tables_stay_linear() -> None:
    block = (
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20\n"
        "#  Rank  0 Group  0 Pid  {pid} on  host device  0 [0x1b] GPU\n"
        "           8             2     float     sum      -1     4.1    0.00    0.00      0"
        "     4.0    0.00    0.00      0\n"
    )
    capture = _cap("".join(block.format(pid=p) for p in range(600)))
    run_ = capture.evidence.test_runs[0]
    assert run_.headers == 600 and run_.duplicated_rows == 599


def test_gdr_off_by_distance_points_at_the_nic_layout() -> None:
    text = (
        "h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n"
        "h:1:2 [1] NCCL INFO GPU Direct RDMA Disabled for GPU 1[1] / HCA 0 (distance 4 > 2)\n"
    )
    found = _check(_cap(text), "nccl.network")
    assert found.severity == "warn" and "NCCL_NET_GDR_LEVEL" in found.summary


def test_cuda_peer_access_warning_is_a_p2p_refusal() -> None:
    text = (
        "h:1:2 [0] include/alloc.h:48 NCCL WARN Cuda failure 'peer access is not supported "
        "between these two devices'\n"
    )
    assert _check(_cap(text), "nccl.transport").severity == "warn"


@pytest.mark.parametrize(
    "notice",
    [
        "Note: 24 NICs found, only displaying 8 of them",
        "24 NICs were found; showing only the first 8",
    ],
)
def test_collect_env_nic_notice(notice: str) -> None:
    text = (
        "Collecting environment information...\nPyTorch version: 2.3.0\n"
        "GPU models and configuration:\nGPU 0: NVIDIA H100 80GB HBM3\n\n" + notice + "\n"
    )
    report = _cap(text).evidence.env_reports[0]
    assert report.nic_notice == notice
    assert _check(_cap(text), "nccl.nic-inventory").severity == "info"


def test_nic_inventory_pass_says_what_it_judged_and_many_vfs_are_info() -> None:
    from tests.builders import machine

    short = _check(machine(8, nics=[f"NIC{i}" for i in range(4)]), "nccl.nic-inventory")
    assert short.severity == "pass"
    assert "no virtual functions or extra ports hiding" in short.summary
    assert short.summary.startswith("4 NICs for 8 GPUs")
    crowded = _check(machine(8, nics=[f"NIC{i}" for i in range(20)]), "nccl.nic-inventory")
    assert crowded.severity == "info" and "20 NICs for 8 GPUs" in crowded.summary


_GDR_OFF_2HCA = (
    "{host}:25668:27396 [{dev}] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]\n"
    "{host}:25668:27396 [{dev}] NCCL INFO Using network IB\n"
    "{host}:25668:27396 [{dev}] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n"
    "{host}:25668:27396 [{dev}] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 1 'mlx5_1'\n"
)


@pytest.mark.parametrize(
    "text",
    [
        # every rank of a node prints the lines about the node's HCAs
        "".join(_GDR_OFF_2HCA.format(host="node1", dev=d) for d in range(8)),
        # the same log pasted twice, with a note that quotes one of the lines
        "# note: the log says 'NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 mlx5_0'\n"
        + _GDR_OFF_2HCA.format(host="node1", dev=0) * 2,
    ],
    ids=["eight ranks of a node", "pasted twice under a quoting note"],
)
def test_hca_count_is_the_hcas_in_the_log_not_its_lines(text: str) -> None:
    # issue 27: "an HCA count reads 3 where the log has 2"
    log = _cap(text).evidence.nccl_logs[0]
    assert len(log.gdr_disabled) == 2
    found = _check(_cap(text), "nccl.network")
    assert "disabled for 2 HCAs" in found.summary


def test_hcas_of_two_nodes_are_counted_per_node() -> None:
    text = _GDR_OFF_2HCA.format(host="node1", dev=0) + _GDR_OFF_2HCA.format(host="node2", dev=0)
    assert len(_cap(text).evidence.nccl_logs[0].gdr_disabled) == 4

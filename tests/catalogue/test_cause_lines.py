"""Lines whose cause is not what a neighbouring generic entry says: PyTorch's NVML asserts, an
NCCL topology XML without an attribute, verbs calls printed with their arguments (UCX), NCCL's
"message truncated" cut before its numbers, and ibv_modify_qp failing because the peer NIC
cannot be reached. Lines are built from the programs' format strings."""

from __future__ import annotations

import pytest

from pcidoc import catalogue
from tests.catalogue.pasted import findings


def entry_of(line: str) -> str | None:
    hit = catalogue.match_line(line)
    return None if hit is None or hit.mention else hit.entry.id


# ---------------------------------------------------------------------- PyTorch and NVML

ALLOCATOR = 'INTERNAL ASSERT FAILED at "../c10/cuda/CUDACachingAllocator.cpp":1123, please report'


def test_nvml_that_cannot_start_in_pytorch_is_an_nvml_health_failure() -> None:
    line = f"RuntimeError: NVML_SUCCESS == DriverAPI::get()->nvmlInit_v2_() {ALLOCATOR} a bug"
    assert entry_of(line) == "nvml.torch-nvml-init-assert"
    ((severity, summary),) = findings(line, "nvml.health")
    assert severity == "fail" and summary.startswith("PyTorch could not initialise NVML")


def test_a_failed_nvml_query_in_the_oom_report_only_warns_with_low_confidence() -> None:
    line = f"[rank0]: RuntimeError: NVML_SUCCESS == r {ALLOCATOR} a bug to PyTorch."
    assert entry_of(line) == "nvml.torch-nvml-query-assert"
    entry = catalogue.entry("nvml.torch-nvml-query-assert")
    assert entry is not None and entry.confidence == "low"
    assert "out of memory" in entry.causes[0]
    ((severity, _),) = findings(line, "nvml.health")
    assert severity == "warn"


# --------------------------------------------------------------- NCCL topology XML

ATTRIBUTE = "h1:2196:2275 [1] graph/xml.h:101 NCCL WARN Attribute arch of node cpu not found"


def test_a_missing_xml_attribute_points_at_the_injected_topology_not_at_sysfs() -> None:
    assert entry_of(ATTRIBUTE) == "nccl.topo.xml-attribute-missing"
    entry = catalogue.entry("nccl.topo.xml-attribute-missing")
    assert entry is not None and "NCCL_TOPO_FILE" in entry.causes[0]
    assert "/sys" not in entry.fix
    text = ATTRIBUTE + "\nh1:2196:2275 [1] NCCL INFO graph/topo.cc:493 -> 3\n"
    ((severity, summary),) = findings(text, "log.signatures")
    assert severity == "fail" and summary.startswith("NCCL topology XML lacks an attribute")
    # the values name what is missing
    hit = catalogue.match_line(ATTRIBUTE)
    assert hit is not None and hit.values == {"attribute": "arch", "node": "cpu"}


def test_detection_failures_from_sysfs_keep_their_entry() -> None:
    line = "n1:5:5 [0] NCCL WARN Could not find real path of /sys/class/net/eth0/device"
    assert entry_of(line) == "nccl.topo.detection-failed"


# ------------------------------------------------------------------ verbs arguments


@pytest.mark.parametrize(
    ("line", "entry"),
    [
        ("[n1:42:0:42] ib_iface.c:845  UCX  ERROR ibv_create_cq(cqe=4096) failed: Cannot "
         "allocate memory", "ibverbs.no-memory"),
        ("UCX ERROR ibv_reg_mr(address=0x7f3a2c000000, length=4194304, access=0xf) failed: "
         "Cannot allocate memory", "ibverbs.no-memory"),
        ("ibv_reg_mr(address=0x7f3a2c000000, length=4194304, access=0xf) failed: Bad address",
         "ibverbs.reg-mr.bad-address"),
        ("ERROR ibv_create_qp(qp_type=2) failed: Invalid argument",
         "nccl.net-ib.verbs-call-failed"),
    ],
)  # fmt: skip
def test_a_verbs_call_printed_with_its_arguments_is_read(line: str, entry: str) -> None:
    assert entry_of(line) == entry


def test_an_argument_list_is_bounded() -> None:
    line = "ibv_create_cq(" + "x" * 200 + ") failed: Cannot allocate memory"
    assert entry_of(line) is None


# ------------------------------------------------------------- message truncated


def test_a_message_truncated_line_cut_before_its_numbers_is_read() -> None:
    text = (
        "transport/net_socket.cc:424 NCCL WARN NET/Socket : peer 192.0.2.30<59210> message "
        "truncated :\nreceiving 1048576 bytes instead of 65536\n"
    )
    ((severity, summary),) = findings(text, "nccl.network")
    assert severity == "fail" and summary.startswith("Ranks disagree on a message size")
    entry = catalogue.entry("nccl.net.message-truncated")
    assert entry is not None and "NCCL_PROTO=SIMPLE" in entry.fix


def test_message_truncated_without_nccls_words_is_not_read() -> None:
    assert entry_of("Message truncated :") is None
    assert entry_of("grpc: message truncated : too long") is None


# ------------------------------------------------------- ibv_modify_qp and its errno


@pytest.mark.parametrize(
    "line",
    [
        "n1:7:7 [5] ibvwrap.c:262 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed "
        "out, on dev mlx5_3:1, curr state INIT, next state RTR, local GID index 3, local GID "
        "::ffff:10.0.3.5, remote GID ::ffff:10.0.7.5",
        "n1:7:7 [5] NCCL WARN Call to ibv_modify_qp failed with 101 Network is unreachable, on dev "
        "mlx5_3:1, curr state INIT, next state RTR",
        "n1:7:7 [5] NCCL WARN Call to ibv_modify_qp failed with error No route to host",
    ],
)
def test_an_unreachable_peer_at_modify_qp_has_its_own_meaning(line: str) -> None:
    assert entry_of(line) == "nccl.net-ib.modify-qp-unreachable"
    ((severity, summary),) = findings(line, "nccl.network")
    assert severity == "fail" and "NICs cannot talk to each other" in summary
    entry = catalogue.entry("nccl.net-ib.modify-qp-unreachable")
    assert entry is not None and "NCCL_CROSS_NIC=0" in entry.fix


def test_the_nic_of_an_unreachable_queue_pair_is_named() -> None:
    hit = catalogue.scan(
        [
            "n1:7:7 [5] NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on "
            "dev mlx5_3:1, curr state INIT, next state RTR"
        ]
    ).hits[0]
    assert (hit.nic, hit.port) == ("mlx5_3", 1)
    assert hit.values["errno"] == "110" and hit.values["to_state"] == "RTR"


def test_other_modify_qp_errors_stay_with_the_generic_verbs_entry() -> None:
    line = (
        "n1:7:7 [5] NCCL WARN Call to ibv_modify_qp failed with 22 Invalid argument, on dev "
        "mlx5_0:1, curr state INIT, next state RTR"
    )
    assert entry_of(line) == "nccl.net-ib.verbs-call-failed"


# ---------------------------------------------------------------------- drivers that cannot probe

MLX5_DMESG = (
    "[    5.376443] mlx5_core 0000:01:00.0: firmware version: 14.32.1010\n"
    "[    5.502207] mlx5_core 0000:01:00.0: handle_hca_cap failed\n"
    "[    5.662202] mlx5_core 0000:01:00.0: mlx5_load_one failed with error code -22\n"
    "[    5.663152] mlx5_core: probe of 0000:01:00.0 failed with error -22\n"
)


@pytest.mark.parametrize(
    ("line", "severity"),
    [
        ("[ 5.6] mlx5_core: probe of 0000:01:00.0 failed with error -22", "fail"),
        ("[ 6.1] pci 0000:3b:00.0: probe with driver nvidia failed with error -1", "fail"),
        ("[ 7.2] snd_hda_intel: probe of 0000:00:1f.3 failed with error -2", "info"),
        ("[ 7.2] pci 0000:00:1f.3: probe with driver snd_hda_intel failed with error -2", "info"),
    ],
)
def test_a_failed_probe_fails_for_gpu_and_nic_drivers_only(line: str, severity: str) -> None:
    hit = catalogue.match_line(line)
    assert hit is not None and hit.entry.id == "kernel.driver.probe-failed"
    scanned = catalogue.scan([line]).hits[0]
    verdict = catalogue.judge(scanned)
    assert verdict is not None and verdict.severity == severity


def test_the_nics_own_failing_step_leads_over_the_driver_cores_line() -> None:
    """A few dmesg lines of an mlx5 NIC that did not come up (too few for a kernel log: the
    catalogue reads them) lead with the driver's own step; the probe line is its carrier."""
    (first, *rest) = findings(MLX5_DMESG, "log.signatures")
    assert first[0] == "fail" and first[1].startswith("ConnectX NIC driver could not initialise")
    assert rest and "could not take its device" in rest[-1][1]

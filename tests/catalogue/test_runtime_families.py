"""The CUDA, PyTorch distributed, NVML/nvidia-smi and fabric families of the failure catalogue
(issue 27): the programs' real printed forms are read, known-benign lines never alarm, lookups
find a code by its number, name or message, and each family reaches the check of its topic
without reporting one event twice."""

from __future__ import annotations

import pytest

from pcidoc import catalogue
from pcidoc.collect.importers import import_texts
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import load_checks
from pcidoc.doctor.runner import run, run_check
from pcidoc.model.evidence import ImportedEvidence
from pcidoc.model.report import ReportSource
from tests.builders import machine


def checks(text: str) -> dict[str, tuple[str, str]]:
    """check id -> (severity, summary) of a pasted text."""
    capture = import_texts([("paste.txt", text)]).capture
    report = run(capture, ReportSource(kind="import", path="paste.txt"), generated_at="x")
    return {c.id: (c.severity, c.summary) for c in report.checks}


def worst(text: str) -> str:
    order = ["skip", "pass", "info", "warn", "fail"]
    return max((sev for sev, _ in checks(text).values()), key=order.index)


def verdict(line: str) -> catalogue.Verdict:
    hits = catalogue.scan([line]).hits
    assert len(hits) == 1, (line, hits)
    found = catalogue.judge(hits[0])
    assert found is not None
    return found


# ------------------------------------------------------------------------------- CUDA


@pytest.mark.parametrize(
    ("line", "entry"),
    [
        # One code, every form programs print it in.
        ("RuntimeError: CUDA error: peer access is not supported between these two devices",
         "cuda.peer-access-unsupported"),
        ("CUDA error at simpleP2P.cu:121 code=217(cudaErrorPeerAccessUnsupported) \"x\"",
         "cuda.peer-access-unsupported"),
        ("CUDA error 217 at ggml-cuda.cu:9: peer access is not supported between these two "
         "devices", "cuda.peer-access-unsupported"),
        ("node1: Test CUDA failure common.cu:892 'peer access is not supported between these "
         "two devices'", "cuda.peer-access-unsupported"),
        ("CUresult CUDA_ERROR_PEER_ACCESS_UNSUPPORTED from cuCtxEnablePeerAccess",
         "cuda.peer-access-unsupported"),
        ("[rank3]: RuntimeError: CUDA error: peer mapping resources exhausted",
         "cuda.too-many-peers"),
        ("failed call to cuInit: CUDA_ERROR_SYSTEM_NOT_READY: system not yet initialized",
         "cuda.system-not-ready"),
        ("/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py:128: UserWarning: CUDA "
         "initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
         "functions before calling NumCudaDevices() that might have already set an error? Error "
         "802: system not yet initialized (Triggered internally at ../c10/cuda/CUDAFunctions.cpp"
         ":109.)", "cuda.system-not-ready"),
        ("(RayWorkerWrapper pid=77, ip=10.0.0.5) RuntimeError: CUDA error: uncorrectable NVLink "
         "error detected during the execution", "cuda.nvlink-uncorrectable"),
    ],
)  # fmt: skip
def test_a_code_is_read_in_every_printed_form(line: str, entry: str) -> None:
    hit = catalogue.match_line(line)
    assert hit is not None and not hit.mention, line
    assert hit.entry.id == entry


@pytest.mark.parametrize(
    ("line", "detail"),
    [
        ("RuntimeError: CUDA error: misaligned address", "716 = cudaErrorMisalignedAddress"),
        ("CUDA error at x.cu:3 code=2(cudaErrorMemoryAllocation) \"cudaMalloc(&p, n)\"",
         "code 2 = cudaErrorMemoryAllocation"),
        ("RuntimeError: Triton Error [CUDA]: invalid argument", "1 = cudaErrorInvalidValue"),
        ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
         "2 = cudaErrorMemoryAllocation"),
        # A message with a different case or a final full stop is the same message.
        ("RuntimeError: CUDA error: The provided PTX was compiled with an unsupported toolchain",
         "222 = cudaErrorUnsupportedPtxVersion"),
    ],
)  # fmt: skip
def test_the_code_table_is_found_by_number_name_or_message(line: str, detail: str) -> None:
    assert verdict(line).detail == detail


def test_the_code_table_covers_the_codes_that_concern_the_interconnect() -> None:
    rows = catalogue.table("cuda_error")
    wanted = [1, 2, 3, 46, 98, 100, 101, 200, 201, 209, 214, 217, 218, 219, 220, 221, 222, 700,
              701, 702, 704, 705, 709, 710, 711, 712, 713, 714, 715, 716, 717, 718, 719, 720,
              801, 802, 803, 804, 999]  # fmt: skip
    assert not [code for code in wanted if str(code) not in rows]
    assert catalogue.lookup("cuda_error", "CUDA_ERROR_TOO_MANY_PEERS") == ("711", rows["711"])
    assert catalogue.lookup("cuda_error", "no such message") is None


def test_nccl_lines_stay_with_the_nccl_family() -> None:
    """NCCL's own line is neither evidence nor a mention for the CUDA entries."""
    hit = catalogue.match_line(
        "gpu1:2:3 [1] transport/p2p.cc:1 NCCL WARN Cuda failure 217 'peer access is not "
        "supported between these two devices'"
    )
    assert hit is None or hit.entry.family != "cuda"
    nccl = catalogue.match_line("n1:1:9 [3] NCCL WARN Cuda failure 'out of memory'")
    assert nccl is not None and nccl.entry.id == "nccl.cuda.out-of-memory"


@pytest.mark.parametrize(
    "text",
    [
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.\nFor debugging consider passing "
        "CUDA_LAUNCH_BLOCKING=1",
        'CUDA error at p2p.cu:54 code=704(cudaErrorPeerAccessAlreadyEnabled) "enable(1, 0)"',
        "Nov 15 14:15:47 n1 nv-fabricmanager[41]: request to query NVSwitch device information "
        "from NVSwitch driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]\n"
        "Nov 15 14:15:47 n1 systemd[1]: nvidia-fabricmanager.service: Control process exited, "
        "code=exited, status=1/FAILURE",
        "WARNING 04-07 10:43:44 [custom_all_reduce.py:147] Custom allreduce is disabled because "
        "your platform lacks GPU P2P capability or P2P test failed.",
        "Domain State: UP",
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 518 closing "
        "signal SIGTERM",
    ],
)
def test_known_benign_lines_never_alarm(text: str) -> None:
    assert worst(text) in ("pass", "info", "skip")


def test_the_async_note_does_not_hide_the_error_on_its_line() -> None:
    hit = catalogue.match_line(
        "RuntimeError: CUDA error: an illegal memory access was encountered\\nCUDA kernel "
        "errors might be asynchronously reported at some other API call"
    )
    assert hit is not None and hit.entry.id == "cuda.illegal-address"


# ------------------------------------------------------------------------- routing


def test_system_not_ready_is_a_fabric_failure_without_any_gpu_facts() -> None:
    severity, summary = checks("RuntimeError: CUDA error: system not yet initialized")[
        "nvlink.fabric"
    ]
    assert severity == "fail"
    assert "802" in summary and "Fabric Manager" in summary


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("nvidia-smi\nFailed to initialize NVML: Driver/library version mismatch\n"
         "NVML library version: 570.124", "version mismatch"),
        ("Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error",
         "999 = NVML_ERROR_UNKNOWN"),
        ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make "
         "sure that the latest NVIDIA driver is installed and running.", "cannot talk"),
        ("Failed to initialize NVML: Insufficient Permissions", "4 = NVML_ERROR_NO_PERMISSION"),
    ],
)  # fmt: skip
def test_nvidia_smi_errors_are_nvml_health_failures(text: str, needle: str) -> None:
    severity, summary = checks(text)["nvml.health"]
    assert severity == "fail"
    assert needle in summary


def test_nvml_health_reports_logged_errors_on_a_live_machine_too() -> None:
    cap = machine(2)
    cap.driver.nvidia_pci_devices = 2
    cap.evidence = ImportedEvidence(
        signatures=catalogue.scan(
            ["[ 4.2] NVRM: API mismatch: the client has the version 550.54.15, but"]
        ).hits,
        scanned_lines=1,
    )
    result = run_check(load_checks()["nvml.health"], Context(cap))
    assert result.severity == "fail"
    assert "version mismatch" in result.summary


def test_nvml_health_without_error_lines_is_unchanged() -> None:
    severity, summary = checks("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1234)")["nvml.health"]
    assert severity == "info" and "nvidia-smi worked" in summary


def test_an_old_watchdog_line_is_reported_by_the_catalogue() -> None:
    severity, summary = checks(
        "[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1803922 milliseconds before "
        "timing out."
    )["nccl.watchdog"]
    assert severity == "fail"
    assert "PyTorch NCCL watchdog: a collective timed out" in summary


def test_a_structured_watchdog_timeout_is_reported_once() -> None:
    text = (
        "[rank3]:[E1029 12:00:00.123456 12345 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog "
        "caught collective operation timeout: WorkNCCL(SeqNum=52, OpType=ALLREDUCE, "
        "NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600064 milliseconds "
        "before timing out.\n"
        "[rank3]:[E1029 12:00:00.223456 12345 ProcessGroupNCCL.cpp:414] [Rank 3] Some NCCL "
        "operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, "
        "subsequent GPU operations might run on corrupted/incomplete data.\n"
    )
    capture = import_texts([("paste.txt", text)]).capture
    result = run_check(load_checks()["nccl.watchdog"], Context(capture))
    assert result.severity == "fail"
    assert result.summary.startswith("NCCL watchdog timeout")
    assert len([f for f in result.findings if f.severity == "fail"]) == 1


@pytest.mark.parametrize(
    ("line", "severity", "detail"),
    [
        ("  exitcode  : -9 (pid: 12345)", "fail", "exitcode -9 = SIGKILL"),
        ("  exitcode  : -15 (pid: 12345)", "info", "exitcode -15 = SIGTERM"),
        ("Nov 05 13:55:26 n1 nv-fabricmanager[104]: fabric manager NVIDIA GPU driver interface "
         "version 550.127.05 doesn't match with driver version 550.120.", "fail", ""),
        ("[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028 on "
         "fid 0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 61", "warn", ""),
        ("Domain State: DEGRADED", "warn", ""),
        ("torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was "
         "likely closed.", "fail", ""),
        ("[W522 11:47:45.949247853 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl("
         "fd=77): failed to recv, got 0 bytes", "warn", ""),
    ],
)  # fmt: skip
def test_severity_follows_the_meaning(line: str, severity: str, detail: str) -> None:
    found = verdict(line)
    assert found.severity == severity
    assert found.detail == detail


def test_a_fabric_manager_log_line_binds_the_switch() -> None:
    hit = catalogue.scan(
        [
            "[Jul 23 2024 07:53:55] [ERROR] [tid 841] detected NVSwitch fatal error 20034 on fid "
            "0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 33"
        ]
    ).hits[0]
    assert (hit.bus_id, hit.port, hit.values["sxid"]) == ("0000:86:00.0", 33, "20034")

"""The live kernel-log reader with fake commands and files (never the host's log)."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from pcidoc.collect.kernel_live import attach_kernel_log, read_kernel_log
from pcidoc.model.capture import Capture

XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus."


def _runner(code: int, out: str, err: str = ""):  # type: ignore[no-untyped-def]
    calls: list[list[str]] = []

    def run(argv: Sequence[str], timeout: float) -> tuple[int, str, str]:
        calls.append(list(argv))
        assert timeout <= 10
        return code, out, err

    run.calls = calls  # type: ignore[attr-defined]
    return run


def test_journal_of_the_last_boot_is_read_bounded() -> None:
    runner = _runner(0, f"[ 12.000000] host kernel: {XID}\n")
    log = read_kernel_log(runner=runner, kmsg_path="/nonexistent/kmsg")
    assert log.read and [x.code for x in log.xids] == [79]
    (argv,) = runner.calls  # type: ignore[attr-defined]
    assert argv[:3] == ["journalctl", "-k", "-b"] and "-n" in argv


def test_kmsg_is_the_fallback(tmp_path: Path) -> None:
    kmsg = tmp_path / "kmsg"
    kmsg.write_text(f"3,100,12500000,-;{XID}\n")
    log = read_kernel_log(
        runner=_runner(1, "", "No journal files were found."), kmsg_path=str(kmsg)
    )
    assert log.read and log.source == str(kmsg)
    assert [(x.code, x.time_s) for x in log.xids] == [(79, 12.5)]


def test_restricted_log_is_recorded_as_unreadable_and_checks_lower_confidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = tmp_path / "proc"
    (proc / "sys/kernel").mkdir(parents=True)
    (proc / "sys/kernel/dmesg_restrict").write_text("1\n")
    log = read_kernel_log(
        runner=_runner(1, "", "Failed to open journal: Permission denied"),
        kmsg_path=str(tmp_path / "missing-kmsg"),
        proc_root=str(proc),
        is_root=False,
    )
    assert not log.read and log.unreadable is not None
    assert log.unreadable.startswith("kernel.dmesg_restrict=1 and not root")
    capture = Capture.empty("live")
    attach_kernel_log(capture, reader=lambda: log)  # the suite turned the reader off
    assert capture.evidence is None

    from pcidoc.doctor import run
    from pcidoc.model.report import ReportSource

    monkeypatch.delenv("PCIDOC_KERNEL_LOG")
    attach_kernel_log(capture, reader=lambda: log)
    report = run(capture, ReportSource(kind="live"), generated_at="2026-01-01T00:00:00Z")
    for check_id in ("kernel.xid", "kernel.aer", "kernel.iommu-fault"):
        result = report.check(check_id)
        assert result is not None and result.severity == "skip" and result.confidence == "low"
        assert "dmesg_restrict" in result.summary


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan may wait for a subreaper to collect it)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _program(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_a_flooding_command_is_cut_and_its_group_ended(tmp_path, monkeypatch) -> None:
    from pcidoc.collect import kernel_live

    pidfile = tmp_path / "helper.pid"
    bindir = tmp_path / "bin"
    # A helper that would outlive its parent, and an endless stream of output.
    _program(bindir, "journalctl", f"sleep 600 & echo $! > {pidfile}\nexec yes kernel-line\n")
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    code, out, _ = kernel_live.run_command(["journalctl", "-k"], 30.0)
    assert code == 0 and len(out) == kernel_live.MAX_BYTES
    helper = int(pidfile.read_text())
    for _ in range(600):  # the kill is sent; how soon it lands is the kernel's business
        if not _running(helper):
            break
        time.sleep(0.05)
    assert not _running(helper)


def test_a_silent_command_times_out(tmp_path, monkeypatch) -> None:
    from pcidoc.collect import kernel_live

    _program(tmp_path / "bin", "journalctl", "exec sleep 600\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    code, out, err = kernel_live.run_command(["journalctl", "-k"], 0.2)
    assert (code, out) == (124, "") and "no answer" in err


def test_a_command_in_the_current_folder_is_not_run(tmp_path, monkeypatch) -> None:
    from pcidoc.collect import kernel_live

    marker = tmp_path / "ran"
    _program(tmp_path / "job", "journalctl", f"touch {marker}\n")
    monkeypatch.chdir(tmp_path / "job")
    monkeypatch.setenv("PATH", os.pathsep.join(["", ".", "job", "/nonexistent"]))
    code, _, _ = kernel_live.run_command(["journalctl", "-k"], 5.0)
    assert not marker.exists()
    assert code in (127, 1, 0)  # the system's journalctl, or none


def test_catalogue_lines_of_the_live_log_reach_the_evidence(monkeypatch) -> None:
    peer_line = (
        "[ 12.000000] node kernel: mlx5_core 0000:17:00.0: mlx5_cmd_check:810: Unknown error"
    )
    nccl_like = "n1:1:2 [0] NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory"
    runner = _runner(0, f"[ 12.000000] host kernel: {XID}\n{peer_line}\n{nccl_like}\n")
    capture = Capture.empty("live")
    from pcidoc.collect.kernel_live import read_kernel

    monkeypatch.delenv("PCIDOC_KERNEL_LOG")
    attach_kernel_log(capture, reader=lambda: read_kernel(runner, "/nonexistent/kmsg"))
    ev = capture.evidence
    assert ev is not None and [x.code for x in ev.kernel_logs[0].xids] == [79]
    (hit,) = ev.signatures  # the catalogue's line; the Xid line is the reader's
    assert "ibv_reg_mr" in (hit.quote or "") and hit.line == 3
    assert ev.scanned_lines == 3

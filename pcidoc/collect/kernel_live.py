"""The live kernel log: the last boot's kernel messages, bounded, for ``capture.evidence``.

Sources, in order: ``journalctl -k -b -o short-monotonic --no-pager -n MAX_LINES`` (a short
timeout), then ``/dev/kmsg`` read without blocking (records until the buffer is drained, at most
:data:`MAX_BYTES`). What they return goes through the kernel-log importer
(:mod:`pcidoc.collect.importers.kernel_log`). When neither can be read — ``kernel.dmesg_restrict
= 1`` without root, no ``adm``/``systemd-journal`` group, a container without ``/dev/kmsg`` —
the capture records a :class:`~pcidoc.model.kernel.KernelLog` with ``read = False`` and the
reason, and the ``kernel.*`` checks skip with low confidence instead of passing.

``PCIDOC_KERNEL_LOG=off`` turns the reader off (the test suite sets it: tests never read the
host's log; they pass fake commands and files).
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Sequence

from pcidoc._record import field, record
from pcidoc.model.evidence import SignatureHit
from pcidoc.model.kernel import KernelLog
from pcidoc.trust import find_program

MAX_LINES = 20_000
MAX_BYTES = 4 * 1024 * 1024
TIMEOUT_S = 5.0

CommandRunner = Callable[[Sequence[str], float], "tuple[int, str, str]"]


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """End the command and anything it started (a pager, a helper)."""
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.SubprocessError, OSError):
        proc.wait(timeout=1.0)


def _read_bounded(proc: subprocess.Popen[bytes], timeout: float) -> tuple[bytes, bytes, bool]:
    """Both pipes until EOF, :data:`MAX_BYTES` of stdout or the deadline: (out, err, stopped)."""
    out, err = bytearray(), bytearray()
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                selector.register(pipe, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return bytes(out), bytes(err), True
            for key, _ in selector.select(left):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                elif key.fileobj is proc.stdout:
                    out += chunk
                    if len(out) >= MAX_BYTES:
                        return bytes(out[:MAX_BYTES]), bytes(err), True
                elif len(err) < 2000:
                    err += chunk
    return bytes(out), bytes(err), False


def run_command(argv: Sequence[str], timeout: float) -> tuple[int, str, str]:
    """Run a system command: (exit code, stdout, stderr); 127 when it is missing, 124 when it
    ran past ``timeout``.

    The program is found on the absolute ``PATH`` entries (as root, only one root owns:
    :func:`pcidoc.trust.find_program`), never in the current folder. Its output is read as it
    comes and cut at :data:`MAX_BYTES` (a flooding command is stopped there, not buffered), and
    on a cut or a timeout its whole process group is ended.
    """
    program = find_program(argv[0])
    if program is None:
        return 127, "", f"{argv[0]}: not found"
    try:
        proc = subprocess.Popen(
            [program, *argv[1:]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        return 127, "", f"{argv[0]}: {exc.strerror or exc.__class__.__name__}"
    try:
        out, err, stopped = _read_bounded(proc, timeout)
    finally:
        if proc.poll() is None:
            _stop_group(proc)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    if stopped and len(out) < MAX_BYTES:
        return 124, "", f"{argv[0]}: no answer within {timeout:g} s"
    code = 0 if stopped else proc.wait()
    return code, out.decode("utf-8", "replace"), err[:2000].decode("utf-8", "replace")


def _journal(runner: CommandRunner) -> tuple[str | None, str | None]:
    argv = ["journalctl", "-k", "-b", "-o", "short-monotonic", "--no-pager", "-q"]
    code, out, err = runner([*argv, "-n", str(MAX_LINES)], TIMEOUT_S)
    if code == 0 and out.strip():
        return out, None
    if code == 127:
        return None, "journalctl not installed"
    return None, f"journalctl -k: {(err.strip().splitlines() or ['no output'])[0][:160]}"


def _kmsg_record(record: bytes) -> str | None:
    """``6,339,5140900,-;message`` -> ``[    5.140900] message``."""
    text = record.decode("utf-8", "replace")
    head, sep, message = text.partition(";")
    if not sep:
        return None
    fields = head.split(",")
    try:
        usec = int(fields[2])
    except (IndexError, ValueError):
        return None
    return f"[{usec / 1e6:12.6f}] {message.splitlines()[0] if message else ''}"


def _kmsg(path: str) -> tuple[str | None, str | None]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        return None, f"{path}: {exc.strerror or exc.__class__.__name__}"
    lines: list[str] = []
    size = 0
    try:
        while size < MAX_BYTES and len(lines) < MAX_LINES:
            try:
                record = os.read(fd, 8192)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # a record was overwritten: read on
                    continue
                return None, f"{path}: {exc.strerror}"
            if not record:
                break
            size += len(record)
            line = _kmsg_record(record)
            if line is not None:
                lines.append(line)
    finally:
        os.close(fd)
    return ("\n".join(lines) + "\n", None) if lines else (None, f"{path}: empty")


def _restricted(proc_root: str) -> bool:
    try:
        with open(os.path.join(proc_root, "sys/kernel/dmesg_restrict"), encoding="ascii") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


@record
class LiveKernel:
    """What the live kernel log gave: the parsed log, and its lines the failure catalogue
    knows (mlx5, peermem, NVSwitch... lines the kernel-log reader does not parse)."""

    log: KernelLog
    hits: list[SignatureHit] = field(default_factory=list)
    scanned_lines: int = 0


def read_kernel(
    runner: CommandRunner = run_command,
    kmsg_path: str = "/dev/kmsg",
    proc_root: str = "/proc",
    is_root: bool | None = None,
) -> LiveKernel:
    """The last boot's kernel log, parsed and matched against the failure catalogue;
    ``log.read=False`` with the reason when refused."""
    from pcidoc import catalogue
    from pcidoc.collect.importers import kernel_log
    from pcidoc.collect.importers.text import prepare

    text, why_journal = _journal(runner)
    source = "journalctl -k -b"
    why_kmsg = None
    if text is None:
        text, why_kmsg = _kmsg(kmsg_path)
        source = kmsg_path
    if text is None:
        root = os.geteuid() == 0 if is_root is None else is_root
        reasons = [r for r in (why_journal, why_kmsg) if r]
        if _restricted(proc_root) and not root:
            reasons.insert(0, "kernel.dmesg_restrict=1 and not root")
        return LiveKernel(KernelLog(source="live", read=False, unreadable="; ".join(reasons)[:300]))
    doc = prepare(text, source)
    parsed = kernel_log.extract(doc, source)
    scan = catalogue.scan(doc.lines, source)
    return LiveKernel(
        parsed or KernelLog(source=source, lines=text.count("\n")),
        scan.hits,
        sum(1 for line in doc.lines if line.strip()),
    )


def read_kernel_log(
    runner: CommandRunner = run_command,
    kmsg_path: str = "/dev/kmsg",
    proc_root: str = "/proc",
    is_root: bool | None = None,
) -> KernelLog:
    """The last boot's kernel log, parsed; ``read=False`` with the reason when refused."""
    return read_kernel(runner, kmsg_path, proc_root, is_root).log


def attach_kernel_log(
    capture: object, reader: Callable[[], KernelLog | LiveKernel] = read_kernel
) -> None:
    """Add the live kernel log (and its catalogue hits) to ``capture.evidence`` (unless
    ``PCIDOC_KERNEL_LOG=off``)."""
    if os.environ.get("PCIDOC_KERNEL_LOG", "").lower() in ("off", "0", "no"):
        return
    from pcidoc.model.evidence import ImportedEvidence

    read = reader()
    live = read if isinstance(read, LiveKernel) else LiveKernel(read)
    evidence = getattr(capture, "evidence", None)
    if evidence is None:
        evidence = ImportedEvidence()
        capture.evidence = evidence  # type: ignore[attr-defined]
    evidence.kernel_logs.append(live.log)
    evidence.signatures.extend(live.hits)
    evidence.scanned_lines += live.scanned_lines

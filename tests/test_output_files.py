"""``-o`` targets: one safe writer (pcidoc.fileio.write_output) behind every command.

As root, ``pcidoc import x.txt -o /dev/null`` used to replace the device node with a regular
file and ``-o /dev/full`` reported "wrote". Device nodes are made with mknod in a temporary
folder (root only), so no real device is touched.
"""

from __future__ import annotations

import os
import resource
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pcidoc.cli import main
from pcidoc.errors import PcidocError
from pcidoc.fileio import write_output
from tests.importers.test_topo import MODERN_TAB

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="mknod and chown need root")


@pytest.fixture
def paste(tmp_path: Path) -> Path:
    path = tmp_path / "topo.txt"
    path.write_text(MODERN_TAB, encoding="utf-8")
    return path


def _node(path: Path, kind: int, device: tuple[int, int] = (1, 3)) -> Path:
    os.mknod(path, 0o666 | kind, os.makedev(*device))
    return path


@needs_root
@pytest.mark.parametrize(
    ("kind", "device"),
    [(stat.S_IFCHR, (1, 3)), (stat.S_IFCHR, (1, 7)), (stat.S_IFBLK, (7, 0))],
    ids=["char-null", "char-full", "block"],
)
def test_device_nodes_are_refused_and_left_alone(
    tmp_path: Path, paste: Path, capsys: pytest.CaptureFixture[str], kind: int, device: tuple
) -> None:
    node = _node(tmp_path / "dev", kind, device)
    code = main(["import", str(paste), "-o", str(node)])
    err = capsys.readouterr().err
    assert code == 3
    assert "device" in err and "regular files" in err
    after = os.lstat(node)
    assert after.st_mode & 0o170000 == kind  # still the device node, not a regular file
    assert os.major(after.st_rdev), os.minor(after.st_rdev) == device
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev", "topo.txt"]  # no temp left


def test_fifo_socket_and_directory_are_refused(
    tmp_path: Path, paste: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    import socket

    sock_path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    try:
        for target, word in ((fifo, "FIFO"), (sock_path, "socket"), (tmp_path, "directory")):
            assert main(["import", str(paste), "-o", str(target)]) == 3
            assert word in capsys.readouterr().err
            assert not stat.S_ISREG(os.lstat(target).st_mode)
    finally:
        server.close()


def test_dev_null_discards_without_replacing() -> None:
    """Checked as an unprivileged user, so that a regression cannot replace the real node."""
    code = (
        "import os, stat\n"
        "from pcidoc.fileio import write_output\n"
        "if os.geteuid() == 0:\n"
        "    os.setgid(65534); os.setuid(65534)\n"
        "result = write_output('/dev/null', 'data')\n"
        "print(result.stream, result.describe())\n"
    )
    before = os.stat("/dev/null")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True discarded the output (/dev/null)"
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pcidoc", *argv],
        capture_output=kwargs.pop("capture", True),
        text=True,
        timeout=120,
        **kwargs,
    )


def test_write_through_stdout_and_stderr(paste: Path) -> None:
    done = _run(["import", str(paste), "-o", "-"])
    assert done.returncode == 0, done.stderr
    assert '"schema": "pcidoc.capture/1"' in done.stdout
    # /dev/stdout and /dev/stderr as an unprivileged user: a regression cannot replace them.
    code = (
        "import os\n"
        "from pcidoc.fileio import write_output\n"
        "if os.geteuid() == 0:\n"
        "    os.setgid(65534); os.setuid(65534)\n"
        "for path, text in (('-', 'A'), ('/dev/stdout', 'B'), ('/dev/stderr', 'C')):\n"
        "    assert write_output(path, text).stream\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("AB", "C")
    assert os.path.islink("/dev/stdout") or stat.S_ISCHR(os.stat("/dev/stdout").st_mode)


def test_failed_write_to_standard_output_is_reported(paste: Path) -> None:
    """`-o -` (and plain --json) with stdout on a full device: exit 3 and one line."""
    for argv in (["import", str(paste), "-o", "-"], ["check", "--demo", "--json"]):
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                [sys.executable, "-m", "pcidoc", *argv],
                stdout=full,
                stderr=subprocess.PIPE,
                text=True,
                timeout=120,
            )
        assert done.returncode == 3, done.stderr
        last = done.stderr.splitlines()[-1]
        assert last == "pcidoc: cannot write to standard output (No space left on device)"
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_failed_write_to_a_file_keeps_the_old_file(tmp_path: Path, paste: Path) -> None:
    """A file-size limit makes the write fail for real (EFBIG): exit 3, old content intact."""
    target = tmp_path / "out.json"
    target.write_text("old content\n")

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    done = _run(["import", str(paste), "-o", str(target)], preexec_fn=limit)
    assert done.returncode == 3
    assert "cannot write" in done.stderr and "left unchanged" in done.stderr
    assert target.read_text() == "old content\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "topo.txt"]


def test_write_through_an_open_descriptor_reports_failure(tmp_path: Path) -> None:
    fd = os.open("/dev/full", os.O_WRONLY)
    try:
        with pytest.raises(PcidocError, match="No space left on device"):
            write_output(f"/dev/fd/{fd}", "x" * 10)
    finally:
        os.close(fd)


def test_new_files_honour_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_output(tmp_path / "new.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new.json").st_mode) == 0o640


def test_existing_file_keeps_mode_and_is_reported_replaced(
    tmp_path: Path, paste: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "cap.json"
    target.write_text("{}")
    os.chmod(target, 0o600)
    assert main(["import", str(paste), "-o", str(target)]) == 0
    assert "replaced the existing file" in capsys.readouterr().err
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert "pcidoc.capture/1" in target.read_text()
    assert main(["import", str(paste), "-o", str(tmp_path / "fresh.json")]) == 0
    assert "pcidoc: wrote" in capsys.readouterr().err


@needs_root
def test_existing_file_keeps_its_owner(tmp_path: Path) -> None:
    target = tmp_path / "owned.json"
    target.write_text("{}")
    os.chown(target, 4321, 4322)
    assert write_output(target, '{"a": 1}').replaced
    info = os.stat(target)
    assert (info.st_uid, info.st_gid) == (4321, 4322)
    assert target.read_text() == '{"a": 1}'


def test_hard_linked_file_is_rewritten_in_place(tmp_path: Path) -> None:
    target = tmp_path / "a.json"
    target.write_text("old")
    os.link(target, tmp_path / "b.json")
    write_output(target, "new")
    assert (tmp_path / "b.json").read_text() == "new"


def test_symlinks(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_output(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere" / "x.json")
    with pytest.raises(PcidocError, match="missing file"):
        write_output(dangling, "x")


@needs_root
def test_foreign_symlink_in_a_sticky_shared_folder_is_not_followed(tmp_path: Path) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    planted = shared / "report.json"
    planted.symlink_to(victim)
    os.lchown(planted, 4321, 4321)
    with pytest.raises(PcidocError, match="not followed"):
        write_output(planted, "overwritten")
    assert victim.read_text() == "precious"


def test_check_report_uses_the_same_writer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    assert main(["check", "--demo", "-o", str(fifo)]) == 3
    assert "FIFO" in capsys.readouterr().err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@needs_root
def test_writable_file_in_a_read_only_folder_is_rewritten_in_place() -> None:
    """Like a shell's `>`: the folder refuses a temporary file, the file itself is writable."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="pcidoc-ro-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        target = base / "out.json"
        target.write_text("old")
        os.chown(target, 65534, 65534)
        code = (
            "import os, sys\n"
            "from pcidoc.fileio import write_output\n"  # import first: then drop root
            "os.setgid(65534); os.setuid(65534)\n"
            f"print(write_output({str(target)!r}, 'new').replaced)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "True"
        assert target.read_text() == "new"
        assert os.stat(target).st_uid == 65534
    finally:
        shutil.rmtree(base)


def test_nccl_topo_file_uses_the_same_writer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "topo.xml"
    os.mkfifo(fifo)
    assert main(["nccl-topo", "--demo", "synthetic-16gpu", "-o", str(fifo)]) == 3
    assert "FIFO" in capsys.readouterr().err
    target = tmp_path / "real.xml"
    target.write_text("old")
    assert main(["nccl-topo", "--demo", "synthetic-16gpu", "-o", str(target)]) == 0
    assert "replaced the existing file" in capsys.readouterr().err
    assert "<system" in target.read_text()


# ---------------------------------------------------------------- issue 23: root, links, .prom

SAMPLE = str(Path(__file__).resolve().parent.parent / "pcidoc" / "samples" / "data")


def _nobody_link(link: Path, target: Path) -> Path:
    link.symlink_to(target)
    os.lchown(link, 65534, 65534)
    return link


@needs_root
def test_root_does_not_follow_a_final_link_another_user_planted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`sudo pcidoc check -o /home/alice/report.json` where alice made that a link to
    /etc/passwd: refused with one line, the victim untouched (the folder is not sticky, so the
    kernel's protected_symlinks rule would not have helped)."""
    victim = tmp_path / "passwd"
    victim.write_text("root:x:0:0")
    home = tmp_path / "alice"
    home.mkdir()
    link = _nobody_link(home / "report.json", victim)
    assert main(["check", "--demo", "-o", str(link)]) == 3
    err = capsys.readouterr().err
    assert "symbolic link owned by another user" in err and len(err.strip().splitlines()) == 1
    assert victim.read_text() == "root:x:0:0" and link.is_symlink()
    # A link of the writer's own is still followed (the link stays a link).
    own = home / "mine.json"
    own.symlink_to(victim)
    write_output(own, "{}")
    assert victim.read_text() == "{}" and own.is_symlink()


@needs_root
def test_root_does_not_follow_a_folder_link_another_user_planted(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "passwd").write_text("root:x:0:0")
    alice_dir = _nobody_link(tmp_path / "alice-dir", etc)
    with pytest.raises(PcidocError, match=r"folder .* owned by another user"):
        write_output(alice_dir / "passwd", "pwned")
    # Also when the link sits deeper, inside a link's target.
    inner = tmp_path / "inner"
    inner.mkdir()
    _nobody_link(inner / "d", etc)
    root_link = tmp_path / "root-link"
    root_link.symlink_to(inner)
    with pytest.raises(PcidocError, match="owned by another user"):
        write_output(root_link / "d" / "passwd", "pwned")
    assert (etc / "passwd").read_text() == "root:x:0:0"
    # A folder link made by root is followed.
    write_output(root_link / "new.json", "ok")
    assert (inner / "new.json").read_text() == "ok"


def _fleet_prom(target: Path) -> int:
    return main(["fleet", f"{SAMPLE}/a100-sxm4-8gpu-nvswitch.json", "-o", str(target)])


@needs_root
def test_fleet_prom_refuses_device_fifo_and_foreign_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """prometheus_client.write_to_textfile renamed over all three."""
    node = _node(tmp_path / "n.prom", stat.S_IFCHR)
    fifo = tmp_path / "f.prom"
    os.mkfifo(fifo)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    link = _nobody_link(tmp_path / "l.prom", victim)
    for target, word in ((node, "character device"), (fifo, "FIFO"), (link, "symbolic link")):
        assert _fleet_prom(target) == 3
        assert word in capsys.readouterr().err
    assert stat.S_ISCHR(os.lstat(node).st_mode) and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert link.is_symlink() and victim.read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.prom", "l.prom", "n.prom", "victim"]


@needs_root
def test_fleet_prom_keeps_owner_and_mode(tmp_path: Path) -> None:
    target = tmp_path / "fleet.prom"
    target.write_text("old\n")
    os.chown(target, 65534, 65534)
    os.chmod(target, 0o640)
    assert _fleet_prom(target) in (0, 1, 2)
    after = os.stat(target)
    assert (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == (65534, 65534, 0o640)
    assert "pcidoc_fleet_worst_severity" in target.read_text()


def test_watch_reports_a_failed_prom_write_and_retries(tmp_path: Path) -> None:
    """A full disk or a read-only folder must not end `watch`: the sample is reported and the
    next one written (here the target is a FIFO for the first samples, then removed)."""
    from pcidoc.watch.watcher import run_loop
    from tests.watch.test_watch import FakeClock, _machine

    clock = FakeClock()
    _fake, watcher = _machine(tmp_path, clock)
    prom = tmp_path / "node.prom"
    os.mkfifo(prom)
    warnings: list[str] = []

    def sleep(seconds: float) -> None:
        clock.t += seconds
        if len(warnings) and prom.exists() and not prom.is_file():
            prom.unlink()

    code = run_loop(
        watcher, interval=1.0, sleep=sleep, unix_time=lambda: clock.t, emit=lambda _e: None,
        prom=str(prom), count=3, warn=warnings.append,
    )  # fmt: skip
    assert code == 0
    assert len(warnings) == 1 and "FIFO" in warnings[0] and "next sample" in warnings[0]
    assert "pcidoc_watch_samples" in prom.read_text()


def test_watch_jsonl_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    """A FIFO with no reader: opening it for writing blocked `watch` for ever. In a child
    with a deadline, so that a regression fails instead of hanging the suite."""
    fifo = tmp_path / "events.jsonl"
    os.mkfifo(fifo)
    code = (
        "import sys\n"
        "from pcidoc.errors import PcidocError\n"
        "from pcidoc.fileio import open_append\n"
        "try:\n"
        "    open_append(sys.argv[1])\n"
        "except PcidocError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(fifo)], capture_output=True, text=True, timeout=60
    )
    assert "FIFO" in done.stdout or "No such device" in done.stdout, done.stdout + done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@needs_root
def test_watch_jsonl_does_not_append_through_a_foreign_link(tmp_path: Path) -> None:
    from pcidoc.fileio import open_append

    victim = tmp_path / "victim"
    victim.write_text("precious")
    link = _nobody_link(tmp_path / "events.jsonl", victim)
    with pytest.raises(PcidocError, match="owned by another user"):
        open_append(str(link))
    assert victim.read_text() == "precious"
    handle = open_append(str(tmp_path / "new.jsonl"))
    handle.write("{}\n")
    handle.close()
    assert (tmp_path / "new.jsonl").read_text() == "{}\n"


def test_check_o_dev_stdout_writes_the_json_report_there(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A stream has no extension: the rule is JSON, and nothing else goes to standard output."""
    import json

    assert main(["check", "--demo", "-o", "/dev/stdout"]) in (0, 1, 2)
    out = capsys.readouterr().out
    assert json.loads(out)["schema"] == "pcidoc.report/1"


@pytest.mark.parametrize(
    ("hostname", "expected"),
    [
        ("a/b.example.com", "pcidoc-a_b-"),
        ("../../etc/x", "pcidoc-host-"),
        ("gpu-7", "pcidoc-gpu-7-"),
    ],
)
def test_default_capture_name_stays_in_the_folder(hostname: str, expected: str) -> None:
    from pcidoc.cli.capture import default_capture_name

    name = default_capture_name(hostname, "2026-11-27T12:00:00Z", redact=False)
    assert name.startswith(expected) and "/" not in name and name.endswith(".json")


# ------------------------------------------------- issue 30: the whole path, hard links, kernel


def _foreign_folder(path: Path, mode: int = 0o755) -> Path:
    path.mkdir()
    os.chown(path, 65534, 65534)
    os.chmod(path, mode)
    return path


@needs_root
def test_an_intermediate_folder_swapped_for_a_link_while_writing_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """alice swaps /home/alice/reports for a link to /etc between the moment the writer looks
    at the folder and the moment it opens the folder below it. The swap is made at the first
    look (any lstat or open of that folder), so the race is hit every time."""
    victim = tmp_path / "etc"
    (victim / "sub").mkdir(parents=True)
    (victim / "sub" / "passwd").write_text("root:x:0:0")
    home = _foreign_folder(tmp_path / "alice")
    reports = home / "reports"
    (reports / "sub").mkdir(parents=True)
    moved = home / "moved"
    real_lstat, real_open = os.lstat, os.open
    swapped: list[bool] = []

    def swap() -> None:
        if not swapped:
            swapped.append(True)
            os.rename(reports, moved)
            _nobody_link(reports, victim)

    def lstat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        result = real_lstat(path, *args, **kwargs)
        if os.fspath(path) == str(reports):
            swap()
        return result

    def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        fd = real_open(path, flags, *args, **kwargs)
        if os.fspath(path) in (str(reports), "reports"):
            swap()
        return fd

    monkeypatch.setattr(os, "lstat", lstat)
    monkeypatch.setattr(os, "open", open_)
    write_output(reports / "sub" / "passwd", "pwned")
    monkeypatch.undo()
    assert swapped
    assert (victim / "sub" / "passwd").read_text() == "root:x:0:0"
    assert (moved / "sub" / "passwd").read_text() == "pwned"


@needs_root
@pytest.mark.parametrize("folder", ["another user's", "sticky shared"])
def test_a_hard_link_in_a_folder_others_can_change_is_not_written_through(
    tmp_path: Path, folder: str
) -> None:
    """alice hard-links root's file into her folder (or /tmp) under the report's name: the
    report replaces her name (rename), root's file keeps its content."""
    victim = tmp_path / "shadow"
    victim.write_text("root:$6$secret")
    os.chmod(victim, 0o640)
    if folder == "sticky shared":
        shared = tmp_path / "tmp"
        shared.mkdir()
        os.chmod(shared, 0o1777)
    else:
        shared = _foreign_folder(tmp_path / "alice")
    planted = shared / "report.json"
    os.link(victim, planted)
    assert write_output(planted, '{"report": 1}').replaced
    assert victim.read_text() == "root:$6$secret"
    assert planted.read_text() == '{"report": 1}'
    assert os.stat(victim).st_nlink == 1
    # watch --jsonl appends: refused there rather than appended to root's file.
    from pcidoc.fileio import open_append

    os.link(victim, shared / "events.jsonl")
    with pytest.raises(PcidocError, match="other hard links"):
        open_append(str(shared / "events.jsonl"))
    assert victim.read_text() == "root:$6$secret"


def test_the_kernel_interfaces_are_recognised() -> None:
    from pcidoc.fileio import _kernel_filesystem

    fd = os.open("/proc/self/status", os.O_RDONLY)
    try:
        assert _kernel_filesystem(fd, "/proc/self/status") == "procfs"
    finally:
        os.close(fd)
    fd = os.open("/sys/kernel", os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert _kernel_filesystem(fd, "/sys/kernel") == "sysfs"
    finally:
        os.close(fd)
    fd = os.open(os.getcwd(), os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert _kernel_filesystem(fd, os.getcwd()) is None
    finally:
        os.close(fd)


@pytest.mark.skipif(
    not os.path.exists("/sys/kernel/mm/transparent_hugepage/enabled"), reason="no THP setting"
)
def test_a_sysfs_attribute_is_never_written_by_the_in_place_fallback() -> None:
    """sysfs refuses a temporary file beside the attribute; the in-place fallback then wrote
    the report into the attribute as root (a kernel setting). Refused before it is opened.
    (The text written, were the refusal missing, is not a value the kernel accepts.)"""
    attribute = "/sys/kernel/mm/transparent_hugepage/enabled"
    before = Path(attribute).read_text()
    with pytest.raises(PcidocError, match=r"sysfs, a kernel interface"):
        write_output(attribute, "pcidoc-test-not-a-setting\n")
    with pytest.raises(PcidocError, match=r"sysfs, a kernel interface"):
        write_output("/sys/kernel/mm/transparent_hugepage/../transparent_hugepage/enabled", "x y")
    assert Path(attribute).read_text() == before


def test_a_full_disk_during_an_in_place_rewrite_keeps_the_old_file(tmp_path: Path) -> None:
    """A file with another hard link is rewritten in place; a file-size limit (as a full disk
    or a quota) used to leave it truncated to what fitted. The space is reserved first now."""
    target = tmp_path / "a.json"
    target.write_text("old content\n")
    os.link(target, tmp_path / "b.json")
    code = (
        "import resource, signal, sys\n"
        "from pcidoc.errors import PcidocError\n"
        "from pcidoc.fileio import write_output\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))\n"
        "try:\n"
        "    write_output(sys.argv[1], 'x' * 4096)\n"
        "except PcidocError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(target)], capture_output=True, text=True, timeout=60
    )
    assert "left unchanged" in done.stdout, done.stdout + done.stderr
    assert target.read_text() == "old content\n"
    assert (tmp_path / "b.json").read_text() == "old content\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]


@needs_root
def test_the_tui_crash_log_is_private_and_does_not_follow_planted_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pcidoc.tui.app import write_crash_log

    victim = tmp_path / "victim"
    victim.mkdir()
    state = _foreign_folder(tmp_path / "state")
    _nobody_link(state / "pcidoc", victim)
    shared = tmp_path / "tmp"
    shared.mkdir()
    monkeypatch.delenv("PCIDOC_LOG_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.setenv("TMPDIR", str(shared))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile caches the folder it chose
    log = write_crash_log(RuntimeError("boom"))
    assert log is not None and log.parent == shared
    assert list(victim.iterdir()) == []
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o600
    assert "RuntimeError: boom" in log.read_text()
    second = write_crash_log(RuntimeError("boom"))
    assert second is not None and second != log  # never a predictable, reused name
    # A state folder that does not exist yet is made private.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "new-state"))
    log = write_crash_log(RuntimeError("boom"))
    assert log is not None and log.parent == tmp_path / "new-state" / "pcidoc"
    assert stat.S_IMODE(os.stat(log.parent).st_mode) == 0o700

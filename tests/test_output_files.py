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

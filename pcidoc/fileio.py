"""Safe file output and bounded file input, shared by every command that reads or writes files.

pcidoc often runs as root (ACS registers need it), so ``-o PATH`` must never turn a device node
into a regular file, follow a planted link into a system file, or claim success when the disk
was full. :func:`write_output` is the one writer every ``-o`` uses:

* ``-``, ``/dev/stdout``, ``/dev/stderr`` and ``/dev/fd/N`` write through to that already-open
  stream (``pcidoc import x.txt -o >(gzip > x.gz)`` works); ``/dev/null`` discards.
* Any other target that exists and is not a regular file (a device, a FIFO, a socket, a
  directory) is refused with one line; nothing is created or replaced.
* A regular file is written to a temporary file in the same folder and renamed over the
  target, so a reader never sees half a file; an existing file keeps its permission bits,
  owner and group, and the caller learns that it was replaced. The temporary file never stays
  behind, whatever interrupts the write (a signal included).
* When the owner cannot be kept, the folder refuses a new file, or the file has other hard
  links (renaming would split them), it is rewritten in place instead, with three limits: the
  space for the new content is reserved first (``posix_fallocate``, else the free space is
  checked), so a full disk leaves the old content whole; a file on a kernel interface (procfs,
  sysfs, debugfs, cgroupfs...: ``fstatfs``) is never written, whatever its permissions; and a
  file with other hard links in a folder that others can change (another user's, ``/tmp``) is
  replaced by rename, never written through (root's ``/etc/shadow`` hard-linked into
  ``/home/alice`` keeps its content).
* A new file honours the umask, like a shell redirection.
* The path is walked one component at a time from ``/``, each folder opened relative to the
  one before without following links (``openat`` with ``O_NOFOLLOW``), and the file is written
  in the folder held open: a folder swapped for a link during the write is not followed. A
  symbolic link met on the way is followed only under these rules: a final link when the
  writer or root owns it, never a dangling one nor, like the kernel's ``protected_symlinks``,
  one in a sticky world-writable folder (``/tmp``) owned by someone else than the folder's
  owner (the link stays); when running as root, a link to a folder anywhere in the path must
  be owned by root (a user's ``/home/alice/out -> /etc`` is not followed). These are the rules
  of coreutils ``install``, rsync and logrotate.
* A failed write (disk full, quota, file too large, I/O error) raises
  :class:`~pcidoc.errors.PcidocError` naming the file and the reason; an existing file is left
  as it was.

:func:`write_new_file` makes a new private file under the same walk (the TUI's crash log).

:func:`read_input` is the matching reader: it streams at most ``limit`` bytes (gzip files are
decompressed with the same bound, so a gzip bomb stops early), rejects binary data after the
first block, and never loads a file of unbounded size.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys

from pcidoc._record import record
from pcidoc.errors import PcidocError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import BinaryIO, TextIO

__all__ = [
    "MAX_CAPTURE_BYTES",
    "MAX_PASTE_BYTES",
    "WriteResult",
    "check_output",
    "decode_text",
    "is_stdout",
    "is_stream",
    "make_private_folder",
    "open_append",
    "read_input",
    "read_regular_file",
    "resolve_output",
    "write_new_file",
    "write_output",
]

MAX_CAPTURE_BYTES = 256 * 2**20
"""Largest capture or report file read (after decompression). A capture of 1,000 GPUs with a
full topology matrix is about 16 MiB; this leaves room for measurements and P2P matrices."""

MAX_PASTE_BYTES = 256 * 2**20
"""Largest pasted output or profiler trace ``pcidoc import`` reads (after decompression)."""

_CHUNK = 1 << 20

_STREAMS = {"-": 1, "/dev/stdout": 1, "/dev/stderr": 2}
_FD_PREFIXES = ("/dev/fd/", "/proc/self/fd/")


@record(frozen=True)
class WriteResult:
    """What :func:`write_output` did.

    Attributes:
        path: The path as given (``-`` for standard output).
        replaced: True when an existing regular file was replaced.
        stream: True when the data went to an open stream or ``/dev/null`` rather than a file.
        size_bytes: Bytes written.
    """

    path: str
    replaced: bool
    stream: bool
    size_bytes: int

    def describe(self) -> str:
        """``"wrote FILE"``, ``"replaced FILE"`` or ``"wrote to standard output"``."""
        if self.path == "/dev/null":
            return "discarded the output (/dev/null)"
        if self.stream:
            return f"wrote to {'standard output' if self.path == '-' else self.path}"
        return f"{'replaced' if self.replaced else 'wrote'} {self.path}"


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _stream_fd(path: str) -> int | None:
    """The open file descriptor that ``path`` names, or None when it names a file."""
    if path in _STREAMS:
        return _STREAMS[path]
    for prefix in _FD_PREFIXES:
        if path.startswith(prefix) and path[len(prefix) :].isdecimal():
            return int(path[len(prefix) :])
    return None


def is_stream(path: str) -> bool:
    """True when ``path`` names an open stream (``-``, ``/dev/stdout``, ``/dev/stderr``,
    ``/dev/fd/N``) rather than a file: such a target has no extension to pick a format."""
    return _stream_fd(path) is not None


def is_stdout(path: str) -> bool:
    """True when ``path`` is standard output (``-``, ``/dev/stdout``, ``/dev/fd/1``)."""
    return _stream_fd(path) == 1


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view[:_CHUNK])
        view = view[written:]


def _write_stream(fd: int, data: bytes, label: str) -> None:
    stream = {1: sys.stdout, 2: sys.stderr}.get(fd)
    try:
        if stream is not None:
            stream.flush()
            buffer: BinaryIO | None = getattr(stream, "buffer", None)
            if buffer is not None:
                buffer.write(data)
                buffer.flush()
                return
            stream.write(data.decode("utf-8", errors="replace"))
            stream.flush()
            return
        _write_all(fd, data)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise PcidocError(f"{label}: cannot write ({_reason(exc)})") from None


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_MAX_LINKS = 40  # as the kernel's ELOOP limit
_NO_FOLLOW = getattr(os, "O_PATH", os.O_RDONLY) | os.O_NOFOLLOW | os.O_CLOEXEC
"""Open one path component as itself: a folder to walk into, a link to read, a file to look at
(``O_PATH``: no read permission needed, no device opened, nothing followed)."""

# Kernel interfaces (statfs(2) magic numbers): a regular file there is a setting, not a report.
_KERNEL_FILESYSTEMS = {
    0x9FA0: "procfs",
    0x62656572: "sysfs",
    0x64626720: "debugfs",
    0x74726163: "tracefs",
    0x73636673: "securityfs",
    0x0027E0EB: "cgroupfs",
    0x63677270: "cgroup2fs",
    0x62656570: "configfs",
    0xCAFE4A11: "bpffs",
    0xDE5E81E4: "efivarfs",
    0x6165676C: "pstore",
    0xF97CFF8C: "selinuxfs",
    0x65735543: "fusectl",
    0x42494E4D: "binfmt_misc",
    0x1CD1: "devpts",
}
_KERNEL_PREFIXES = ("/proc/", "/sys/")


def _trusted(info: os.stat_result) -> bool:
    """A link pcidoc may follow: made by the writer or by root."""
    return info.st_uid in (0, os.geteuid())


def _refuse_link(label: str, link: str, info: os.stat_result, what: str) -> PcidocError:
    return PcidocError(
        f"{label}: {what} {link} is a symbolic link owned by another user (uid {info.st_uid}); "
        "not followed (write to the real path, or remove the link)"
    )


def _link_target(
    link_fd: int, link: str, info: os.stat_result, final: bool, label: str, folder: os.stat_result
) -> str:
    """Check one symbolic link met on the way (opened as itself: ``link_fd``) against the
    rules; return its target text, read from the same link that was checked."""
    if final and not _trusted(info):
        raise _refuse_link(label, link, info, "the file")
    if not final and os.geteuid() == 0 and info.st_uid != 0:
        raise _refuse_link(label, link, info, "the folder")
    if (
        final
        and folder.st_mode & stat.S_ISVTX
        and folder.st_mode & stat.S_IWOTH
        and info.st_uid not in (folder.st_uid, os.geteuid())
    ):
        # The kernel's protected_symlinks rule: a link in /tmp owned by someone else.
        raise _refuse_link(label, link, info, "the file")
    return os.readlink("", dir_fd=link_fd)


@record
class _Place:
    """Where a write lands: a folder reached without following a link the rules refuse, held
    open (``dir_fd``), and a name in it."""

    dir_fd: int
    folder: str
    name: str

    @property
    def path(self) -> str:
        return os.path.join(self.folder, self.name)

    def lstat(self, label: str) -> os.stat_result | None:
        """The name's own status (a link is not followed), or None when it does not exist."""
        try:
            return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise PcidocError(f"{label}: cannot write ({_reason(exc)})") from None


class _Walk:
    """Walk a path one component at a time from ``/``, each folder opened relative to the one
    before it without following links (``openat`` with ``O_NOFOLLOW``): a folder swapped for
    a link while pcidoc writes is never followed, since the folders it writes in are the ones
    it holds open. Symbolic links met on the way are read and followed only under the rules
    of :func:`resolve_output`."""

    def __init__(self, label: str, make_folders: bool) -> None:
        self.label = label
        self.make_folders = make_folders
        self.stack: list[tuple[int, str]] = []
        self.links = 0
        self.final_link: str | None = None
        """The target of the final link followed, when the name was reached through one."""

    def close(self) -> None:
        for fd, _ in self.stack:
            os.close(fd)
        self.stack = []

    def _reset(self) -> None:
        self.close()
        self.stack = [(os.open("/", _NO_FOLLOW | os.O_DIRECTORY), "/")]

    def run(self, text: str, folder: bool) -> _Place:
        try:
            absolute = os.path.abspath(text)
        except OSError as exc:  # the current folder was removed
            raise PcidocError(f"{self.label}: cannot write ({_reason(exc)})") from None
        self._reset()
        pending = [p for p in absolute.split("/") if p]
        if folder:  # every component is a folder to walk into: the place is the last one
            pending.append(".")
        while pending:
            part = pending.pop(0)
            if part == ".":
                continue
            if part == "..":
                if len(self.stack) > 1:
                    os.close(self.stack.pop()[0])
                continue
            place = self._step(part, pending)
            if place is not None:
                return place
        if folder:
            return _Place(*self.stack[-1], "")
        # The path names "/" itself (or ".." up to it): not a file name.
        raise PcidocError(f"{self.label}: is a directory; not written")

    def _step(self, part: str, pending: list[str]) -> _Place | None:
        top, folder = self.stack[-1]
        final = not pending
        here = os.path.join(folder, part)
        fd = self._open(part, top, here, final)
        if fd is None:
            if self.final_link is not None:
                raise PcidocError(
                    f"{self.label}: is a symbolic link to a missing file ({self.final_link}); "
                    "not followed"
                )
            return _Place(top, folder, part)
        info = os.fstat(fd)
        if stat.S_ISLNK(info.st_mode):
            try:
                self._follow(fd, here, info, final, top, pending)
            finally:
                os.close(fd)
            return None
        if final:
            os.close(fd)
            return _Place(top, folder, part)
        if not stat.S_ISDIR(info.st_mode):
            os.close(fd)
            raise PcidocError(f"{self.label}: {here} is not a folder")
        self.stack.append((fd, here))
        return None

    def _open(self, part: str, top: int, here: str, final: bool) -> int | None:
        """The component opened as itself; None when the final one does not exist."""
        try:
            return os.open(part, _NO_FOLLOW, dir_fd=top)
        except FileNotFoundError:
            if final:
                return None
            if not self.make_folders or self.final_link is not None:
                self._missing_folder(here)
        except OSError as exc:
            raise PcidocError(f"{self.label}: cannot write ({_reason(exc)})") from None
        try:  # a private folder (crash logs): made, then opened like any other
            os.mkdir(part, 0o700, dir_fd=top)
            return os.open(part, _NO_FOLLOW, dir_fd=top)
        except FileExistsError:
            return os.open(part, _NO_FOLLOW, dir_fd=top)
        except OSError as exc:
            raise PcidocError(f"{self.label}: cannot make folder {here} ({_reason(exc)})") from None

    def _missing_folder(self, here: str) -> None:
        if self.final_link is not None:
            raise PcidocError(
                f"{self.label}: is a symbolic link to a missing file ({self.final_link}); "
                "not followed"
            )
        raise PcidocError(f"{self.label}: folder {here} does not exist")

    def _follow(
        self, fd: int, here: str, info: os.stat_result, final: bool, top: int, pending: list[str]
    ) -> None:
        self.links += 1
        if self.links > _MAX_LINKS:
            raise PcidocError(f"{self.label}: too many levels of symbolic links")
        target = _link_target(fd, here, info, final, self.label, os.fstat(top))
        if final and self.final_link is None:
            self.final_link = target
        pending[:0] = [p for p in target.split("/") if p]
        if target.startswith("/"):
            self._reset()

    def place(self, text: str, folder: bool = False) -> _Place:
        """Walk ``text`` (a file's path, or a folder's when ``folder``); the place keeps its
        folder open, the other folders are closed."""
        try:
            place = self.run(text, folder)
        except BaseException:
            self.close()
            raise
        for fd, _ in self.stack:
            if fd != place.dir_fd:
                os.close(fd)
        self.stack = []
        return place


def _walk(text: str, label: str, *, make_folders: bool = False) -> _Place:
    return _Walk(label, make_folders).place(text)


def resolve_output(path: str | os.PathLike[str], label: str | None = None) -> str:
    """The real path an output to ``path`` would write, following only safe links.

    Rules (those of coreutils ``install``, rsync and logrotate for a privileged writer): a
    final symbolic link is followed only when the writer or root owns it (never one planted in
    a sticky shared folder by someone else); when running as root, a symbolic link to a folder
    anywhere in the path must be owned by root; a link to a missing file is not followed. The
    path is walked one folder at a time, each opened without following links.

    Raises:
        PcidocError: a link is refused, there are too many links, or the folder is missing.
    """
    text = os.fspath(path)
    place = _walk(text, text if label is None else label)
    os.close(place.dir_fd)
    return place.path


def _private_folder(dir_fd: int) -> bool:
    """True when only the writer or root can change the folder (add a name, swap a link)."""
    info = os.fstat(dir_fd)
    return info.st_uid in (0, os.geteuid()) and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _filesystem_magic(fd: int) -> int | None:
    """The statfs(2) type of the file system ``fd`` lies on, or None when it cannot be read."""
    try:
        import ctypes
    except ImportError:  # pragma: no cover - a Python built without ctypes
        return None
    fstatfs = getattr(ctypes.CDLL(None, use_errno=True), "fstatfs", None)
    if fstatfs is None:  # pragma: no cover - not Linux
        return None
    buffer = ctypes.create_string_buffer(256)  # struct statfs: f_type is the first field
    if fstatfs(ctypes.c_int(fd), buffer) != 0:
        return None
    return int.from_bytes(buffer.raw[: ctypes.sizeof(ctypes.c_long)], sys.byteorder) & 0xFFFFFFFF


def _kernel_filesystem(fd: int, path: str) -> str | None:
    """The name of the kernel interface (procfs, sysfs...) ``fd`` lies on, or None."""
    magic = _filesystem_magic(fd)
    if magic is not None:
        return _KERNEL_FILESYSTEMS.get(magic)
    return next((p.strip("/") for p in _KERNEL_PREFIXES if (path + "/").startswith(p)), None)


def _refuse_kernel_file(fd: int, path: str, label: str) -> None:
    kind = _kernel_filesystem(fd, path)
    if kind is not None:
        raise PcidocError(
            f"{label}: lies on {kind}, a kernel interface (its files are settings, not "
            "reports); not written"
        )


def _open_existing(name: str, dir_fd: int, label: str) -> int:
    """Open an existing regular file for writing without following a link or blocking on a
    FIFO; it is not truncated."""
    flags = os.O_WRONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        raise PcidocError(f"{label}: cannot write ({_reason(exc)})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise PcidocError(f"{label}: is {_kind(info.st_mode)}; not written")
    return fd


def _reserve(fd: int, size: int, label: str) -> None:
    """Make sure the file can grow to ``size`` bytes before its content is touched: the blocks
    are allocated (``posix_fallocate``), or, where the file system cannot, its free space is
    checked. A full disk, a quota or a file size limit then leaves the old content whole."""
    old = os.fstat(fd).st_size
    if size <= old:
        return
    try:
        os.posix_fallocate(fd, 0, size)
        return
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS, errno.ENODEV):
            with contextlib.suppress(OSError):
                if os.fstat(fd).st_size != old:
                    os.ftruncate(fd, old)
            raise PcidocError(
                f"{label}: cannot write ({_reason(exc)}); the existing file was left unchanged"
            ) from None
    space = os.fstatvfs(fd)
    free = (space.f_bfree if os.geteuid() == 0 else space.f_bavail) * space.f_frsize
    if free < size - old + (1 << 20):
        raise PcidocError(
            f"{label}: cannot write (no space left on the device for {size} bytes); the "
            "existing file was left unchanged"
        )


def _rewrite_in_place(place: _Place, data: bytes, label: str) -> None:
    """Write over the existing file (its other names, or a folder that refuses a temporary
    file): never on a kernel interface, and only once the space for the new content is
    reserved, so a full disk does not destroy the old content."""
    _refuse_kernel_file(place.dir_fd, place.path, label)
    fd = _open_existing(place.name, place.dir_fd, label)
    try:
        _refuse_kernel_file(fd, place.path, label)
        _reserve(fd, len(data), label)
        try:
            _write_all(fd, data)
            os.ftruncate(fd, len(data))
            os.fsync(fd)
        except OSError as exc:
            raise PcidocError(
                f"{label}: cannot write ({_reason(exc)}); the file is incomplete"
            ) from None
    finally:
        os.close(fd)


def _keep_owner(fd: int, existing: os.stat_result) -> bool:
    """Give the temporary file the existing file's owner and mode; False when not allowed."""
    try:
        current = os.fstat(fd)
        if (current.st_uid, current.st_gid) != (existing.st_uid, existing.st_gid):
            os.fchown(fd, existing.st_uid, existing.st_gid)
        # Keep the permission bits, not set-id bits: the content is a report, not a program.
        os.fchmod(fd, stat.S_IMODE(existing.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
    except PermissionError:
        return False
    except OSError as exc:
        if exc.errno in (errno.EPERM, errno.EINVAL):
            return False
        raise
    return True


def _temporary_file(dir_fd: int, prefix: str, suffix: str, mode: int = 0o600) -> tuple[int, str]:
    """A new file in the folder, as ``tempfile.mkstemp`` makes it (exclusive create, no
    symlink followed, an unpredictable name, mode 0600), without importing tempfile, shutil and
    random at every start of a read-only command."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL
    flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        name = f"{prefix}{os.urandom(6).hex()}{suffix}"
        try:
            return os.open(name, flags, mode, dir_fd=dir_fd), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name")


def _refusal(label: str, info: os.stat_result) -> PcidocError:
    return PcidocError(
        f"{label}: is {_kind(info.st_mode)}; pcidoc writes regular files, '-' (standard "
        "output), /dev/stdout or /dev/stderr"
    )


def _is_dev_null(place: _Place, info: os.stat_result) -> bool:
    return place.path == "/dev/null" and stat.S_ISCHR(info.st_mode)


def check_output(path: str | os.PathLike[str], label: str | None = None) -> str:
    """Check, before any work, that :func:`write_output` may write ``path``; returns the real
    path (or the stream name). Nothing is created.

    Raises:
        PcidocError: the same refusals as :func:`write_output` (links, devices, FIFOs,
            folders, a missing folder).
    """
    text = os.fspath(path)
    label = text if label is None else label
    if not text:
        raise PcidocError("-o: empty file name")
    if _stream_fd(text) is not None:
        return text
    place = _walk(text, label)
    try:
        info = place.lstat(label)
    finally:
        os.close(place.dir_fd)
    if info is not None and not stat.S_ISREG(info.st_mode) and not _is_dev_null(place, info):
        raise _refusal(label, info)
    return place.path


def write_output(
    path: str | os.PathLike[str], data: bytes | str, *, compress: bool | None = None
) -> WriteResult:
    """Write ``data`` to ``path`` safely (see the module docstring for the rules).

    This is the one public writer: every ``-o``, ``.prom`` file and the TUI's export use it.

    Args:
        path: Target file; ``-``, ``/dev/stdout``, ``/dev/stderr`` or ``/dev/fd/N`` write to
            that open stream, ``/dev/null`` discards.
        data: Bytes, or text (encoded as UTF-8).
        compress: gzip the data; by default when ``path`` ends in ``.gz``.

    Returns:
        A :class:`WriteResult` (``replaced`` tells the caller to say so).

    Raises:
        PcidocError: the target is not a regular file, a link is refused, its folder is
            missing or not writable, or the write failed (the message names the file and the
            reason).
    """
    label = os.fspath(path)
    payload = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else bytes(data)
    if compress is None:
        compress = label.endswith(".gz") and _stream_fd(label) is None
    if compress:
        import gzip

        payload = gzip.compress(payload, mtime=0)
    if not label:
        raise PcidocError("-o: empty file name")
    fd_target = _stream_fd(label)
    if fd_target is not None:
        _write_stream(fd_target, payload, "standard output" if label == "-" else label)
        return WriteResult(label, replaced=False, stream=True, size_bytes=len(payload))
    place = _walk(label, label)
    try:
        return _write_in(place, payload, label)
    finally:
        os.close(place.dir_fd)


def _write_in(place: _Place, payload: bytes, label: str) -> WriteResult:
    info = place.lstat(label)
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise PcidocError(f"{label}: changed into a symbolic link while writing; not followed")
    if info is not None and not stat.S_ISREG(info.st_mode):
        if _is_dev_null(place, info):
            return WriteResult("/dev/null", replaced=False, stream=True, size_bytes=0)
        raise _refusal(label, info)
    done = WriteResult(label, replaced=info is not None, stream=False, size_bytes=len(payload))
    # Other names share this file: renaming would split them, so it is rewritten in place,
    # but only in a folder nobody else can change (a link planted in another user's folder
    # to a file of root's must not make root write that file).
    in_place = info is not None and _private_folder(place.dir_fd)
    if info is not None and info.st_nlink > 1 and in_place:
        _rewrite_in_place(place, payload, label)
        return done
    try:
        replaced = _replace(place, info, payload)
    except PcidocError:
        raise
    except OSError as exc:
        if info is None or exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            kept = " (the existing file was left unchanged)" if info is not None else ""
            raise PcidocError(f"{label}: cannot write ({_reason(exc)}){kept}") from None
        replaced = False  # the folder refuses a new file; the file itself may be writable
    if replaced:
        return done
    if info is not None and info.st_nlink > 1 and not in_place:
        raise PcidocError(
            f"{label}: has other hard links and lies in a folder other users can change; "
            "not rewritten in place (remove it, or write elsewhere)"
        )
    _rewrite_in_place(place, payload, label)  # like a shell's `>`
    return done


def _replace(place: _Place, info: os.stat_result | None, payload: bytes) -> bool:
    """Write a temporary file beside the target and rename it over; False when the existing
    file's owner cannot be kept (or the folder refuses a new file: OSError). The temporary
    file never stays behind, whatever interrupts (a signal included)."""
    fd, tmp = _temporary_file(place.dir_fd, f".{place.name[:200]}.", ".tmp")
    try:
        if info is None:
            os.fchmod(fd, 0o666 & ~_umask())
        elif not _keep_owner(fd, info):
            return False
        _write_all(fd, payload)
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, place.name, src_dir_fd=place.dir_fd, dst_dir_fd=place.dir_fd)
        tmp = ""
        return True
    finally:
        if fd >= 0:
            os.close(fd)
        if tmp:
            _discard(tmp, place.dir_fd)


def _discard(tmp_name: str, dir_fd: int) -> None:
    with contextlib.suppress(OSError):
        os.unlink(tmp_name, dir_fd=dir_fd)


def write_new_file(folder: str, prefix: str, suffix: str, data: str) -> str:
    """Create a new private file (mode 0600, an unpredictable name ``PREFIX<random>SUFFIX``)
    in ``folder``, making the missing folders (mode 0700) on the way; returns its path. Like
    every write of pcidoc's, the path is walked without following a link the rules refuse, and
    an existing name is never reused (the TUI's crash log).

    Raises:
        PcidocError: a link is refused, a folder cannot be made, or the write failed.
    """
    place = _Walk(folder, make_folders=True).place(folder, folder=True)
    try:
        try:
            fd, name = _temporary_file(place.dir_fd, prefix, suffix)
        except OSError as exc:
            raise PcidocError(f"{place.folder}: cannot write ({_reason(exc)})") from None
        try:
            _write_all(fd, data.encode("utf-8", "replace"))
        except OSError as exc:
            _discard(name, place.dir_fd)
            raise PcidocError(f"{place.folder}: cannot write ({_reason(exc)})") from None
        finally:
            os.close(fd)
        return os.path.join(place.folder, name)
    finally:
        os.close(place.dir_fd)


def make_private_folder(folder: str) -> str:
    """Make ``folder`` and the missing folders above it (mode 0700), walking the path like
    every write (no link the rules refuse is followed); an existing folder is kept as it is.
    Returns its path.

    Raises:
        PcidocError: a link is refused, or a folder cannot be made.
    """
    place = _Walk(folder, make_folders=True).place(folder, folder=True)
    os.close(place.dir_fd)
    return place.folder


def open_append(path: str) -> TextIO:
    """Open ``path`` to append lines (``pcidoc watch --jsonl``) under :func:`write_output`'s
    rules: ``-``/``/dev/stdout`` is standard output; links are followed only when safe; a
    device, FIFO or socket is refused (a FIFO without a reader would block for ever); so is a
    file on a kernel interface (procfs, sysfs) and one with other hard links in a folder other
    users can change; a new file honours the umask.

    Raises:
        PcidocError: the target is refused or cannot be opened.
    """
    if path in ("-", "/dev/stdout"):
        return sys.stdout
    if not path or _stream_fd(path) is not None or path == "/dev/null":
        raise PcidocError(f"{path}: --jsonl writes a regular file or '-' (standard output)")
    place = _walk(path, path)
    try:
        info = place.lstat(path)
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise _refusal(path, info)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            fd = os.open(place.name, flags | os.O_CLOEXEC, 0o666, dir_fd=place.dir_fd)
        except OSError as exc:
            raise PcidocError(f"{path}: cannot open ({_reason(exc)})") from None
        try:
            _check_appendable(fd, place, path)
        except BaseException:
            os.close(fd)
            raise
    finally:
        os.close(place.dir_fd)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "a", encoding="utf-8")


def _check_appendable(fd: int, place: _Place, label: str) -> None:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise _refusal(label, info)
    _refuse_kernel_file(fd, place.path, label)
    if info.st_nlink > 1 and not _private_folder(place.dir_fd):
        raise PcidocError(
            f"{label}: has other hard links and lies in a folder other users can change; "
            "not appended to"
        )


# ----------------------------------------------------------------------------------- input


def _read_bounded(handle: BinaryIO, limit: int, label: str, what: str) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = handle.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            break
        if not chunks and _binary(chunk):
            raise PcidocError(f"{label}: not a text file (binary data)")
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise PcidocError(f"{label}: larger than {limit // 2**20} MiB; not {what}")
    return b"".join(chunks)


def _binary(chunk: bytes) -> bool:
    """True when the first block holds NUL bytes that UTF-16 text would not explain."""
    head = chunk[:65536]
    if b"\x00" not in head:
        return False
    return not (_utf16_bom(head) or _bomless_utf16(head))


def _utf16_bom(data: bytes) -> bool:
    return data[:2] in (b"\xff\xfe", b"\xfe\xff")


def read_input(path: str, *, limit: int, what: str = "a pcidoc file", stdin: bool = True) -> bytes:
    """Read at most ``limit`` bytes of ``path`` (``-`` = standard input), gunzipping as needed.

    Reads in blocks and stops as soon as the data is known to be too large or binary, so
    ``/dev/zero``, a sparse multi-gigabyte file or a gzip bomb cost one block, not their size.

    Raises:
        PcidocError: missing, unreadable, a directory, binary, damaged gzip, or over ``limit``.
    """
    label = "<stdin>" if path == "-" and stdin else path
    try:
        if path == "-" and stdin:
            raw: BinaryIO = sys.stdin.buffer
            close = False
        else:
            raw = open(path, "rb")  # noqa: SIM115
            close = True
    except FileNotFoundError:
        raise PcidocError(f"{label}: no such file") from None
    except IsADirectoryError:
        raise PcidocError(f"{label}: is a directory") from None
    except PermissionError:
        raise PcidocError(f"{label}: permission denied") from None
    except OSError as exc:
        raise PcidocError(f"{label}: cannot read ({_reason(exc)})") from None
    try:
        try:
            info = os.fstat(raw.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise PcidocError(f"{label}: is a directory")
            if stat.S_ISREG(info.st_mode) and info.st_size > limit:
                # Compressed or not, a file this large cannot hold an acceptable input.
                raise PcidocError(f"{label}: larger than {limit // 2**20} MiB; not {what}")
        except (OSError, ValueError, AttributeError):
            pass
        head = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
        if head == b"\x1f\x8b":
            return _read_gzip(raw, limit, label, what)
        return _read_bounded(raw, limit, label, what)
    except PcidocError:
        raise
    except IsADirectoryError:
        raise PcidocError(f"{label}: is a directory") from None
    except MemoryError:
        raise PcidocError(f"{label}: too large to read into memory") from None
    except OSError as exc:
        raise PcidocError(f"{label}: cannot read ({_reason(exc)})") from None
    finally:
        if close:
            raw.close()


def read_regular_file(path: str, *, limit: int) -> bytes:
    """Read a regular file that a setting names (``NCCL_TOPO_FILE``), at most ``limit`` bytes.

    Anything else is refused before it is read: a FIFO or a device would block (or never
    end), a folder is not a file. The file is opened without blocking (a FIFO swapped in after
    the check opens at once, and is refused then). The messages finish the sentence "the file
    ...": ``is a named pipe (FIFO); not read``, ``is larger than 4 MiB; not read``.

    Raises:
        PcidocError: missing, unreadable, not a regular file, or over ``limit``.
    """
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise PcidocError(f"it is {_kind(info.st_mode)}; not read")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise PcidocError(f"cannot read it ({_reason(exc)})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PcidocError(f"it is {_kind(info.st_mode)}; not read")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise PcidocError(f"cannot read it ({_reason(exc)})") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise PcidocError(f"it is larger than {_size(limit)}; not read")
    return data


def _size(limit: int) -> str:
    return f"{limit // 2**20} MiB" if limit >= 2**20 else f"{limit} bytes"


def _read_gzip(raw: BinaryIO, limit: int, label: str, what: str) -> bytes:
    """:func:`_read_bounded` over the gunzipped stream (gzip is imported only for gzip files)."""
    import gzip
    import zlib

    try:
        with gzip.GzipFile(fileobj=raw, mode="rb") as unzipped:
            return _read_bounded(unzipped, limit, label, what)  # type: ignore[arg-type]
    except (gzip.BadGzipFile, EOFError, zlib.error):
        raise PcidocError(f"{label}: damaged gzip file") from None


def decode_text(data: bytes, label: str, *, strict: bool = False) -> str:
    """Decode a text file: UTF-8 (with or without BOM) or UTF-16 (PowerShell's ``>`` writes
    UTF-16 with a BOM; a BOM-less UTF-16 text is recognised by its NUL bytes).

    Args:
        data: The bytes read.
        label: File name for the error message.
        strict: Raise on bytes that do not decode (capture files); otherwise they become
            U+FFFD (pastes, where one damaged byte must not lose the file).

    Raises:
        PcidocError: ``strict`` and the bytes are not text.
    """
    errors = "strict" if strict else "replace"
    try:
        if data[:3] == b"\xef\xbb\xbf":
            return data[3:].decode("utf-8", errors=errors)
        if _utf16_bom(data):
            return data.decode("utf-16", errors=errors)
        encoding = _bomless_utf16(data)
        if encoding is not None:
            return data.decode(encoding, errors=errors)
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        raise PcidocError(f"{label}: not a text file ({exc.__class__.__name__})") from None


def _bomless_utf16(data: bytes) -> str | None:
    """``utf-16-le``/``-be`` when the text is ASCII stored as UTF-16 without a BOM."""
    head = data[:512]
    if len(head) < 4 or len(head) % 2:
        head = head[: len(head) - len(head) % 2]
    if len(head) < 4:
        return None
    even, odd = head[0::2], head[1::2]
    if not odd.strip(b"\x00") and b"\x00" not in even:
        return "utf-16-le"
    if not even.strip(b"\x00") and b"\x00" not in odd:
        return "utf-16-be"
    return None

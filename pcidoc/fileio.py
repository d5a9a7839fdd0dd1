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
  owner and group (when these cannot be kept, or the file has other hard links, it is
  rewritten in place instead), and the caller learns that it was replaced.
* A new file honours the umask, like a shell redirection.
* A final symbolic link is followed to its target (the link stays) only when the writer or
  root owns it, never a dangling one nor, like the kernel's ``protected_symlinks``, one in a
  sticky world-writable folder (``/tmp``) owned by someone else than the folder's owner. When
  running as root, a symbolic link to a folder anywhere in the path must be owned by root (a
  user's ``/home/alice/out -> /etc`` is not followed). The folder is opened once and the
  temporary file and the rename happen inside it, so a folder swapped after the check is not
  written through (the rules of coreutils ``install``, rsync and logrotate).
* A failed write (disk full, quota, file too large, I/O error) raises
  :class:`~pcidoc.errors.PcidocError` naming the file and the reason; an existing file is left
  as it was.

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
from typing import BinaryIO, TextIO

from pcidoc._record import record
from pcidoc.errors import PcidocError

__all__ = [
    "MAX_CAPTURE_BYTES",
    "MAX_PASTE_BYTES",
    "WriteResult",
    "check_output",
    "decode_text",
    "is_stdout",
    "is_stream",
    "open_append",
    "read_input",
    "resolve_output",
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


def _trusted(info: os.stat_result) -> bool:
    """A link pcidoc may follow: made by the writer or by root."""
    return info.st_uid in (0, os.geteuid())


def _refuse_link(label: str, link: str, info: os.stat_result, what: str) -> PcidocError:
    return PcidocError(
        f"{label}: {what} {link} is a symbolic link owned by another user (uid {info.st_uid}); "
        "not followed (write to the real path, or remove the link)"
    )


def _link_step(
    candidate: str, info: os.stat_result, final: bool, label: str, sticky: os.stat_result | None
) -> str:
    """Check one symbolic link met while resolving an output path; return its target text."""
    if final and not _trusted(info):
        raise _refuse_link(label, candidate, info, "the file")
    if not final and os.geteuid() == 0 and info.st_uid != 0:
        raise _refuse_link(label, candidate, info, "the folder")
    if (
        final
        and sticky is not None
        and sticky.st_mode & stat.S_ISVTX
        and sticky.st_mode & stat.S_IWOTH
        and info.st_uid not in (sticky.st_uid, os.geteuid())
    ):
        # The kernel's protected_symlinks rule: a link in /tmp owned by someone else.
        raise _refuse_link(label, candidate, info, "the file")
    return os.readlink(candidate)


def resolve_output(path: str | os.PathLike[str], label: str | None = None) -> str:
    """The real path an output to ``path`` would write, following only safe links.

    Rules (those of coreutils ``install``, rsync and logrotate for a privileged writer): a
    final symbolic link is followed only when the writer or root owns it (never one planted in
    a sticky shared folder by someone else); when running as root, a symbolic link to a folder
    anywhere in the path must be owned by root; a link to a missing file is not followed.

    Raises:
        PcidocError: a link is refused, there are too many links, or the folder is missing.
    """
    text = os.fspath(path)
    label = text if label is None else label
    pending = [p for p in os.path.abspath(text).split("/") if p]
    resolved = "/"
    links = 0
    while pending:
        part = pending.pop(0)
        if part == ".":
            continue
        if part == "..":
            resolved = os.path.dirname(resolved)
            continue
        candidate = os.path.join(resolved, part)
        try:
            info = os.lstat(candidate)
        except FileNotFoundError:
            if pending:
                raise PcidocError(f"{label}: folder {candidate} does not exist") from None
            resolved = candidate
            continue
        except OSError as exc:
            raise PcidocError(f"{label}: cannot write ({_reason(exc)})") from None
        if not stat.S_ISLNK(info.st_mode):
            if pending and not stat.S_ISDIR(info.st_mode):
                raise PcidocError(f"{label}: {candidate} is not a folder")
            resolved = candidate
            continue
        links += 1
        if links > _MAX_LINKS:
            raise PcidocError(f"{label}: too many levels of symbolic links")
        try:
            sticky: os.stat_result | None = os.stat(resolved)
        except OSError:
            sticky = None
        target = _link_step(candidate, info, not pending, label, sticky)
        if not pending and not os.path.exists(candidate):
            raise PcidocError(
                f"{label}: is a symbolic link to a missing file ({target}); not followed"
            )
        pending = [p for p in target.split("/") if p] + pending
        if target.startswith("/"):
            resolved = "/"
    return resolved


def _open_folder(folder: str, label: str) -> int:
    try:
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise PcidocError(f"{label}: folder {folder} does not exist") from None
    except OSError as exc:
        raise PcidocError(f"{label}: cannot open folder {folder} ({_reason(exc)})") from None


def _open_existing(name: str, dir_fd: int, label: str) -> int:
    """Open an existing regular file for writing without following a link or blocking on a
    FIFO, and only then truncate it."""
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


def _rewrite_in_place(name: str, dir_fd: int, data: bytes, label: str) -> None:
    fd = _open_existing(name, dir_fd, label)
    try:
        os.ftruncate(fd, 0)
        _write_all(fd, data)
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


def _temporary_file(dir_fd: int, prefix: str, suffix: str) -> tuple[int, str]:
    """A new file beside the target, as ``tempfile.mkstemp`` makes it (exclusive create, no
    symlink followed, mode 0600), without importing tempfile, shutil and random at every start
    of a read-only command."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL
    flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        name = f"{prefix}{os.urandom(6).hex()}{suffix}"
        try:
            return os.open(name, flags, 0o600, dir_fd=dir_fd), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name")


def _refusal(label: str, info: os.stat_result) -> PcidocError:
    return PcidocError(
        f"{label}: is {_kind(info.st_mode)}; pcidoc writes regular files, '-' (standard "
        "output), /dev/stdout or /dev/stderr"
    )


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
    target = resolve_output(text, label)
    try:
        info = os.stat(target)
    except FileNotFoundError:
        if not os.path.isdir(os.path.dirname(target)):
            raise PcidocError(f"{label}: folder {os.path.dirname(target)} does not exist") from None
        return target
    except OSError as exc:
        raise PcidocError(f"{label}: cannot write ({_reason(exc)})") from None
    if not stat.S_ISREG(info.st_mode) and not (
        target == "/dev/null" and stat.S_ISCHR(info.st_mode)
    ):
        raise _refusal(label, info)
    return target


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
    target = resolve_output(label)
    folder, name = os.path.dirname(target) or "/", os.path.basename(target)
    dir_fd = _open_folder(folder, label)
    try:
        return _write_in(dir_fd, folder, name, payload, label)
    finally:
        os.close(dir_fd)


def _write_in(dir_fd: int, folder: str, name: str, payload: bytes, label: str) -> WriteResult:
    try:
        info: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise PcidocError(f"{label}: cannot write ({_reason(exc)})") from None
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise PcidocError(f"{label}: changed into a symbolic link while writing; not followed")
    if info is not None and not stat.S_ISREG(info.st_mode):
        if os.path.join(folder, name) == "/dev/null" and stat.S_ISCHR(info.st_mode):
            return WriteResult("/dev/null", replaced=False, stream=True, size_bytes=0)
        raise _refusal(label, info)
    done = WriteResult(label, replaced=info is not None, stream=False, size_bytes=len(payload))
    if info is not None and info.st_nlink > 1:
        # Other names share this file: renaming would split them; rewrite it in place.
        _rewrite_in_place(name, dir_fd, payload, label)
        return done
    try:
        fd, tmp_name = _temporary_file(dir_fd, f".{name[:200]}.", ".tmp")
    except OSError as exc:
        if info is not None and exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            # The folder is not writable but the file may be (like a shell's `>`).
            _rewrite_in_place(name, dir_fd, payload, label)
            return done
        raise PcidocError(f"{label}: cannot write in {folder} ({_reason(exc)})") from None
    try:
        try:
            if info is None:
                os.fchmod(fd, 0o666 & ~_umask())
            elif not _keep_owner(fd, info):
                os.close(fd)
                fd = -1
                _discard(tmp_name, dir_fd)
                _rewrite_in_place(name, dir_fd, payload, label)
                return done
            _write_all(fd, payload)
            os.fsync(fd)
        finally:
            if fd >= 0:
                os.close(fd)
        os.replace(tmp_name, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except PcidocError:
        _discard(tmp_name, dir_fd)
        raise
    except OSError as exc:
        _discard(tmp_name, dir_fd)
        kept = " (the existing file was left unchanged)" if info is not None else ""
        raise PcidocError(f"{label}: cannot write ({_reason(exc)}){kept}") from None
    return done


def _discard(tmp_name: str, dir_fd: int) -> None:
    with contextlib.suppress(OSError):
        os.unlink(tmp_name, dir_fd=dir_fd)


def open_append(path: str) -> TextIO:
    """Open ``path`` to append lines (``pcidoc watch --jsonl``) under :func:`write_output`'s
    rules: ``-``/``/dev/stdout`` is standard output; links are followed only when safe; a
    device, FIFO or socket is refused (a FIFO without a reader would block for ever); a new
    file honours the umask.

    Raises:
        PcidocError: the target is refused or cannot be opened.
    """
    if path in ("-", "/dev/stdout"):
        return sys.stdout
    target = check_output(path)
    if _stream_fd(target) is not None or target == "/dev/null":
        raise PcidocError(f"{path}: --jsonl writes a regular file or '-' (standard output)")
    folder, name = os.path.dirname(target) or "/", os.path.basename(target)
    dir_fd = _open_folder(folder, path)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, 0o666, dir_fd=dir_fd)
    except OSError as exc:
        raise PcidocError(f"{path}: cannot open ({_reason(exc)})") from None
    finally:
        os.close(dir_fd)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise _refusal(path, info)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "a", encoding="utf-8")


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

"""What root may run: programs and Python environments root chose, nothing another user planted.

pcidoc runs as root on shared machines. The current folder is not a place programs are found
(an empty or relative ``PATH`` entry names it), and as root a file is run (or a folder imported
from) only when it, the file it resolves to and every folder above them are root's and can be
changed by no one else (sticky folders such as ``/tmp`` excepted).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""Where system programs (``journalctl``) are looked for when ``PATH`` has no usable entry."""


def absolute_search_path(value: str | None) -> str:
    """``PATH`` without its empty and relative entries (which name the current folder)."""
    return os.pathsep.join(p for p in (value or "").split(os.pathsep) if os.path.isabs(p))


def _user(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _unsafe_node(path: str, info: os.stat_result) -> str | None:
    if info.st_uid != 0:
        return f"{path} is owned by {_user(info.st_uid)}"
    writable = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if writable and not (stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX):
        return f"{path} can be changed by other users (mode {stat.filemode(info.st_mode)})"
    return None


def _chain(path: str) -> list[str]:
    """``path`` and every folder above it."""
    chain = [path]
    while True:
        parent = os.path.dirname(chain[-1])
        if parent == chain[-1]:
            return chain
        chain.append(parent)


def root_refusal(path: str, euid: int | None = None) -> str | None:
    """Why root must not run (or import from) ``path``, or ``None`` when it may.

    Only root is judged (anyone else runs their own files). The path as written, the file it
    resolves to and every folder above either must be root's and writable by no one else:
    a virtual environment's ``bin/python`` is a link to the system's Python, but its
    site-packages are the owner's code.
    """
    if (os.geteuid() if euid is None else euid) != 0:
        return None
    absolute = os.path.abspath(path)
    for candidate in dict.fromkeys(_chain(absolute) + _chain(os.path.realpath(absolute))):
        try:
            info = os.stat(candidate)
        except OSError as exc:
            return f"{candidate}: {exc.strerror or exc}"
        problem = _unsafe_node(candidate, info)
        if problem:
            return problem
    return None


def find_program(
    name: str, environ: Mapping[str, str] | None = None, euid: int | None = None
) -> str | None:
    """The absolute path of the program ``name`` that may be run here, or ``None``.

    Looked up on the absolute entries of ``PATH`` (the system's folders when there are none);
    as root, a candidate :func:`root_refusal` rejects is passed over.
    """
    env = os.environ if environ is None else environ
    search = absolute_search_path(env.get("PATH")) or SYSTEM_PATH
    for folder in search.split(os.pathsep):
        found = shutil.which(name, path=folder)
        if found and root_refusal(found, euid) is None:
            return os.path.abspath(found)
    return None

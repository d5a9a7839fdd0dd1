"""Which Python runs the probe children: pcidoc's own, or one that has the user's torch.

GPU boxes bring their own torch (a conda env, a venv, a container's system Python), while pcidoc
may live in an isolated environment (``pipx``, ``uv tool``) without it. The probe child needs
only the standard library and torch (see :mod:`pcidoc.probes.child`), so it can run under any
Python >= 3.10 that imports torch. The choice, first match wins:

1. ``--python PATH``;
2. ``PCIDOC_PYTHON``;
3. pcidoc's own interpreter, when torch is importable there;
4. discovery: the active conda environment's python (``CONDA_PREFIX``), the active virtual
   environment's (``VIRTUAL_ENV``), then ``python3`` on ``PATH`` — the first that imports torch;
5. pcidoc's own interpreter (the probes then say torch is missing, and how to point at one).

A foreign interpreter must not see pcidoc's site-packages (its pydantic, its typing_extensions
could shadow the user's): the child gets a private directory holding only a link to the
``pcidoc`` package on its ``PYTHONPATH`` (:func:`child_path`).
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

ENV_VARIABLE = "PCIDOC_PYTHON"

_HAS_TORCH = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torch') else 1)"


@dataclass(frozen=True)
class Interpreter:
    """The Python of the probe children.

    Attributes:
        path: The executable.
        source: How it was chosen: ``--python``, ``PCIDOC_PYTHON``, ``pcidoc``, ``conda``,
            ``virtualenv``, ``PATH``.
    """

    path: str
    source: str

    @property
    def foreign(self) -> bool:
        """True when it is not the interpreter running pcidoc."""
        return not _same_file(self.path, sys.executable)


class InterpreterError(ValueError):
    """``--python`` / ``PCIDOC_PYTHON`` names nothing runnable."""


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b) and os.path.abspath(a) == os.path.abspath(b)
    except OSError:
        return False


def _executable(path: str) -> str:
    """``path`` as an absolute executable path (a bare name is looked up on ``PATH``)."""
    found = shutil.which(path) if os.sep not in path else path
    if found and os.path.isfile(found) and os.access(found, os.X_OK):
        return os.path.abspath(found)
    raise InterpreterError(f"{path!r} is not an executable Python")


def imports_torch(python: str, timeout_s: float = 20.0) -> bool:
    """True when ``python`` can find torch (a spec lookup, not a full import)."""
    try:
        done = subprocess.run(
            [python, "-c", _HAS_TORCH],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _candidates(environ: dict[str, str] | os._Environ[str]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for variable, source in (("CONDA_PREFIX", "conda"), ("VIRTUAL_ENV", "virtualenv")):
        prefix = environ.get(variable)
        if prefix:
            for name in ("python3", "python"):
                path = os.path.join(prefix, "bin", name)
                if os.path.isfile(path) and os.access(path, os.X_OK):
                    found.append((path, source))
                    break
    on_path = shutil.which("python3", path=environ.get("PATH"))
    if on_path:
        found.append((on_path, "PATH"))
    return found


def choose(
    explicit: str | None = None,
    environ: dict[str, str] | os._Environ[str] | None = None,
    own_has_torch: bool | None = None,
) -> Interpreter:
    """The interpreter for the probe children (see the module docstring for the order).

    Args:
        explicit: ``--python``.
        environ: The environment (default ``os.environ``).
        own_has_torch: Whether pcidoc's interpreter has torch (default: look).

    Raises:
        InterpreterError: ``--python`` or ``PCIDOC_PYTHON`` is not an executable.
    """
    env = os.environ if environ is None else environ
    if explicit:
        return Interpreter(_executable(explicit), "--python")
    if env.get(ENV_VARIABLE):
        return Interpreter(_executable(env[ENV_VARIABLE]), ENV_VARIABLE)
    if own_has_torch is None:
        own_has_torch = importlib.util.find_spec("torch") is not None
    if own_has_torch:
        return Interpreter(sys.executable, "pcidoc")
    seen: set[str] = set()
    for path, source in _candidates(env):
        real = os.path.abspath(path)
        if real in seen or _same_file(path, sys.executable):
            continue
        seen.add(real)
        if imports_torch(path):
            return Interpreter(os.path.abspath(path), source)
    return Interpreter(sys.executable, "pcidoc")


_CHILD_PATH: str | None = None


def package_dir() -> str:
    """The directory of the ``pcidoc`` package being run."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child_path() -> str:
    """A private directory holding only a link named ``pcidoc`` to this pcidoc package.

    On a foreign interpreter's ``PYTHONPATH`` it makes ``pcidoc.probes.child`` importable (in
    the child and in the spawned collective workers) without exposing pcidoc's own
    site-packages. Created once per process, removed at exit.
    """
    global _CHILD_PATH
    if _CHILD_PATH is None or not os.path.isdir(_CHILD_PATH):
        directory = tempfile.mkdtemp(prefix="pcidoc-child-")
        os.symlink(package_dir(), os.path.join(directory, "pcidoc"))
        atexit.register(shutil.rmtree, directory, True)
        _CHILD_PATH = directory
    return _CHILD_PATH

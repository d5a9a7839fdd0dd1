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
``pcidoc`` package on its path (:func:`child_path`).

Root runs only what root chose. Every child starts with ``-E`` (``-I`` as root: no user
site-packages either) from the private directory as its current folder, with its module path
given explicitly (:func:`module_argv`): a ``pcidoc/`` or ``torch.py`` planted in the folder where
``pcidoc`` was started is never imported, nor by the multiprocessing workers the child spawns
(they inherit the flags, the folder and the path). Discovery looks only at absolute ``PATH``
entries. As root, an interpreter, a ``PYTHONPATH`` entry or any folder above them that another
user owns or can write is refused with a one-line reason (:func:`pcidoc.trust.root_refusal`).
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from pcidoc.trust import absolute_search_path, root_refusal

ENV_VARIABLE = "PCIDOC_PYTHON"

_HAS_TORCH = "import importlib.util\nsys.exit(0 if importlib.util.find_spec('torch') else 1)\n"


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
    refused: tuple[str, ...] = ()
    """Candidates discovery passed over as root, each with its one-line reason."""

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


def _executable(path: str, environ: dict[str, str] | os._Environ[str] | None = None) -> str:
    """``path`` as an absolute executable path (a bare name is looked up on the absolute
    entries of ``PATH``, never in the current folder)."""
    env = os.environ if environ is None else environ
    search = absolute_search_path(env.get("PATH"))
    found = (shutil.which(path, path=search) if search else None) if os.sep not in path else path
    if found and os.path.isfile(found) and os.access(found, os.X_OK):
        return os.path.abspath(found)
    raise InterpreterError(
        f"{path!r} is not an executable Python; give the path of a Python that has torch"
    )


def imports_torch(python: str, timeout_s: float = 20.0) -> bool:
    """True when ``python`` can find torch (a spec lookup, not a full import).

    It runs the way the probe child does (:func:`module_argv`), so a ``torch.py`` in the current
    folder is not what it finds.
    """
    try:
        done = subprocess.run(
            code_argv(python, _HAS_TORCH, search_path(not _same_file(python, sys.executable))),
            cwd=private_folder(),
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
        if prefix and os.path.isabs(prefix):
            for name in ("python3", "python"):
                path = os.path.join(prefix, "bin", name)
                if os.path.isfile(path) and os.access(path, os.X_OK):
                    found.append((path, source))
                    break
    search = absolute_search_path(environ.get("PATH"))
    on_path = shutil.which("python3", path=search) if search else None
    if on_path:
        found.append((on_path, "PATH"))
    return found


def _refuse_explicit(path: str, source: str, euid: int | None) -> Interpreter:
    problem = root_refusal(path, euid)
    if problem:
        raise InterpreterError(
            f"{path!r} is not run as root: {problem}; run the probes as that user, or name a "
            "Python that root owns"
        )
    return Interpreter(path, source)


def choose(
    explicit: str | None = None,
    environ: dict[str, str] | os._Environ[str] | None = None,
    own_has_torch: bool | None = None,
    euid: int | None = None,
) -> Interpreter:
    """The interpreter for the probe children (see the module docstring for the order).

    Args:
        explicit: ``--python``.
        environ: The environment (default ``os.environ``).
        own_has_torch: Whether pcidoc's interpreter has torch (default: look).
        euid: Whose rules apply (default: this process's effective user; 0 = root's).

    Raises:
        InterpreterError: ``--python`` or ``PCIDOC_PYTHON`` is not an executable, or (as root)
            is another user's (:func:`pcidoc.trust.root_refusal`).
    """
    env = os.environ if environ is None else environ
    if explicit:
        return _refuse_explicit(_executable(explicit, env), "--python", euid)
    if env.get(ENV_VARIABLE):
        return _refuse_explicit(_executable(env[ENV_VARIABLE], env), ENV_VARIABLE, euid)
    if own_has_torch is None:
        own_has_torch = importlib.util.find_spec("torch") is not None
    if own_has_torch:
        return Interpreter(sys.executable, "pcidoc")
    seen: set[str] = set()
    refused: list[str] = []
    for path, source in _candidates(env):
        real = os.path.abspath(path)
        if real in seen or _same_file(path, sys.executable):
            continue
        seen.add(real)
        problem = root_refusal(real, euid)
        if problem:
            refused.append(f"{source} Python {real} not run as root: {problem}")
            continue
        if imports_torch(path):
            return Interpreter(real, source, tuple(refused))
    return Interpreter(sys.executable, "pcidoc", tuple(refused))


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


def private_folder() -> str:
    """The children's current folder: the private directory of :func:`child_path` (mode 0700,
    holding only the ``pcidoc`` link), never the folder ``pcidoc`` was started in."""
    return child_path()


_PATH_SETUP = (
    "import sys\n"
    "sys.path[:] = [p for p in sys.path if p.startswith('/')]\n"
    "import json\n"
    "sys.path[:0] = json.loads(sys.argv[1])\n"
)
_RUN_MODULE = (
    _PATH_SETUP + "import runpy\n"
    "module = sys.argv[2]\n"
    "sys.argv = [module, *sys.argv[3:]]\n"
    "runpy.run_module(module, run_name='__main__', alter_sys=True)\n"
)


def isolation_flags(euid: int | None = None) -> list[str]:
    """``-E`` (``PYTHON*`` variables ignored: the path is given explicitly), ``-I`` as root
    (no user site-packages either: under ``sudo`` they may be another user's)."""
    return ["-I"] if (os.geteuid() if euid is None else euid) == 0 else ["-E"]


def search_path(
    foreign: bool,
    environ: dict[str, str] | os._Environ[str] | None = None,
    euid: int | None = None,
) -> list[str]:
    """The folders put first on a child's module path.

    pcidoc's package (the private link for a foreign interpreter, else the folder holding the
    package), then the absolute entries of ``PYTHONPATH`` (a cluster's ``module load`` puts
    torch there); as root, only entries :func:`root_refusal` accepts.
    """
    env = os.environ if environ is None else environ
    first = child_path() if foreign else os.path.dirname(package_dir())
    extra = [
        p
        for p in (env.get("PYTHONPATH") or "").split(os.pathsep)
        if os.path.isabs(p) and p != first and root_refusal(p, euid) is None
    ]
    return [first, *dict.fromkeys(extra)]


def module_argv(python: str, module: str, args: list[str], path: list[str]) -> list[str]:
    """``python -m module args`` without the current folder or ``PYTHON*`` variables on its
    path: only the interpreter's own site and ``path`` (run from :func:`private_folder`)."""
    return [python, *isolation_flags(), "-u", "-c", _RUN_MODULE, json.dumps(path), module, *args]


def code_argv(python: str, code: str, path: list[str]) -> list[str]:
    """``python -c code`` with the same isolation as :func:`module_argv`."""
    return [python, *isolation_flags(), "-c", _PATH_SETUP + code, json.dumps(path)]

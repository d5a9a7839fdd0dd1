"""Entry point of a probe child process: ``python -m pcidoc.probes.child NAME --params JSON``.

Runs one probe and reports on the protocol stream (see :mod:`pcidoc.probes.protocol`). Before
anything else it moves the protocol to a private duplicate of stdout and points file descriptor
1 at stderr, so that whatever a library prints (``NCCL_DEBUG=INFO`` writes to stdout) cannot
corrupt the stream. Torch is imported only by the probe modules this dispatches to.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import threading
import traceback
from typing import Any

from pcidoc.probes import protocol

PROBE_MODULES: dict[str, str] = {
    "env": "pcidoc.probes.envprobe",
    "transfer": "pcidoc.probes.transfer",
    "p2p": "pcidoc.probes.p2p",
    "allreduce": "pcidoc.probes.allreduce",
    "scaling": "pcidoc.probes.scaling",
    "collectives": "pcidoc.probes.collectives",
}
"""Probe name -> module with ``run(params: dict, emit: Emitter) -> None``."""


class ProbeUnavailable(Exception):
    """The probe cannot run here (no torch, no CUDA device, no NCCL); not a failure."""


class ProbeHung(RuntimeError):
    """A device operation never completed: the probe reported it, and this process must not
    run its normal exit (tearing the CUDA context down waits for the hung copy): the child
    sends its last message and leaves with ``os._exit``."""


class Emitter:
    """Writes protocol messages to one file descriptor, whole lines, from any thread.

    Args:
        fd: The protocol file descriptor.
        probe: Name used in progress messages.
    """

    def __init__(self, fd: int, probe: str) -> None:
        self._fd = fd
        self.probe = probe
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        """Write one message as one line."""
        data = protocol.encode(message)
        with self._lock:
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]

    def progress(self, fraction: float, message: str) -> None:
        """Report progress (``fraction`` of the whole probe, 0-1)."""
        self.send(protocol.progress(self.probe, fraction, message))

    def result(
        self, kind: str, measurement: dict[str, Any], extra: dict[str, Any] | None = None
    ) -> None:
        """Report one measurement (a model dump)."""
        self.send(protocol.result(kind, measurement, extra))

    def error(self, kind: str, message: str) -> None:
        """Report an error of this probe."""
        self.send(protocol.error(kind, message))

    def log(self, level: str, message: str) -> None:
        """Report a log line."""
        self.send(protocol.log(level, message))

    def info(self, data: dict[str, Any]) -> None:
        """Report facts learned about the environment."""
        self.send(protocol.info(data))

    def end(self, status: int) -> None:
        """The last message: everything is reported, the process is about to exit."""
        self.send(protocol.end(status))


def protect_stdout() -> int:
    """Move the protocol off fd 1: returns a private duplicate, and fd 1 becomes stderr."""
    sys.stdout.flush()
    proto = os.dup(1)  # not inheritable: worker processes never see the protocol fd
    os.dup2(2, 1)
    return proto


def torch_module() -> Any:
    """``import torch``, without the "Failed to initialize NumPy" warning torch prints where
    NumPy is missing (nothing pcidoc runs needs NumPy; the line only alarms)."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="Failed to initialize NumPy", category=UserWarning
        )
        import torch
    return torch


def import_torch() -> Any:
    """Import torch or raise :class:`ProbeUnavailable` with the install hint."""
    try:
        torch = torch_module()
    except ImportError as exc:
        if exc.name in (None, "torch"):
            raise ProbeUnavailable(f"torch is not installed: {protocol.INSTALL_HINT}") from None
        raise ProbeUnavailable(
            f"torch could not be imported (missing {exc.name}): {protocol.INSTALL_HINT}"
        ) from None
    except OSError as exc:  # broken CUDA libraries in the wheel
        raise ProbeUnavailable(f"torch could not be loaded: {exc}") from None
    return torch


def require_cuda(torch: Any) -> int:
    """Return the number of CUDA devices torch sees, or raise :class:`ProbeUnavailable`."""
    if not torch.cuda.is_available() or torch.cuda.device_count() < 1:
        raise ProbeUnavailable(no_cuda_reason(torch))
    return int(torch.cuda.device_count())


def no_cuda_reason(torch: Any) -> str:
    """Why torch sees no CUDA device, in one line."""
    version = getattr(torch, "__version__", "?")
    if getattr(torch.version, "cuda", None) is None:
        return f"no CUDA device visible to torch (torch {version} is a CPU-only build)"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    where = f"; CUDA_VISIBLE_DEVICES={visible!r}" if visible is not None else ""
    return f"no CUDA device visible to torch (torch {version}, CUDA {torch.version.cuda}{where})"


def torch_versions(torch: Any) -> dict[str, Any]:
    """torch, CUDA and NCCL versions and the NCCL tuning variables in effect (for ``info``)."""
    import platform

    data: dict[str, Any] = {
        "python": sys.executable,
        "python_version": platform.python_version(),
        "torch_version": getattr(torch, "__version__", None),
        "cuda_build": getattr(getattr(torch, "version", None), "cuda", None),
        "nccl_env": protocol.nccl_settings(os.environ),
    }
    try:
        version = torch.cuda.nccl.version()
        data["nccl_version"] = (
            ".".join(str(v) for v in version) if isinstance(version, tuple) else str(version)
        )
    except Exception:  # CPU-only build, or no NCCL in this torch
        data["nccl_version"] = None
    return data


PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int | None = None, signum: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``signum`` to this process when its parent dies (Linux).

    A ``kill -9`` of pcidoc then cannot orphan a probe child, nor a child its workers. When the
    parent is already gone (it died before this call), exits at once.

    Returns:
        True when the parent-death signal is set.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) != 0:
            return False
    except Exception:
        return False
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(128 + int(signum))  # the parent died before the signal was armed
    return True


def _terminate(signum: int, _frame: Any) -> None:
    # Unwind through the probes' finally blocks (free buffers, destroy process groups).
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    """Run the probe named in ``argv``; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        sys.stderr.write("usage: python -m pcidoc.probes.child NAME [--params JSON]\n")
        return 2
    name = args[0]
    params: dict[str, Any] = {}
    if "--params" in args:
        params = json.loads(args[args.index("--params") + 1])
    parent = os.environ.get("PCIDOC_PARENT_PID")
    die_with_parent(int(parent) if parent and parent.isdecimal() else None)
    emit = Emitter(protect_stdout(), name)
    signal.signal(signal.SIGTERM, _terminate)
    module_name = PROBE_MODULES.get(name)
    if module_name is None:
        emit.error("error", f"unknown probe {name!r}")
        return 2
    # Run as ``python -m pcidoc.probes.child`` this module is ``__main__``, and the probes
    # raise the ProbeUnavailable of the imported ``pcidoc.probes.child``: catch both.
    from pcidoc.probes import child as imported

    unavailable = (ProbeUnavailable, imported.ProbeUnavailable)
    hung = (ProbeHung, imported.ProbeHung)
    status = 0
    try:
        module = importlib.import_module(module_name)
        module.run(params, emit)
    except unavailable as exc:
        emit.error("unavailable", str(exc))
    except hung as exc:
        emit.error("error", str(exc))
        emit.end(1)
        sys.stderr.flush()
        os._exit(1)  # a normal exit would wait on the hung device work
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        emit.error("error", f"{type(exc).__name__}: {exc}")
        status = 1
    emit.end(status)
    return status


if __name__ == "__main__":
    # Run main() of the importable module, not of ``__main__``: the probe modules raise
    # ``pcidoc.probes.child.ProbeUnavailable``, which a ``__main__`` copy of the class would
    # not catch (an "unavailable" would become an "error").
    from pcidoc.probes.child import main as _main

    raise SystemExit(_main())

"""The JSON-lines protocol between a probe child process and its parent.

A probe child writes one JSON object per line on its protocol stream (the child's stdout):

* ``{"type": "progress", "probe": "transfer", "fraction": 0.4, "message": "GPU1 H2D sweep"}``
* ``{"type": "result", "kind": "transfer", "measurement": {...}, "extra": {...}}`` — one per
  measurement; ``kind`` names the :class:`pcidoc.model.measurements.Measurements` list it goes
  to (see :data:`RESULT_KINDS`), ``extra`` carries how it was taken (copies, sizes, gating,
  threads...) and derived numbers; the parent folds it into the measurement's ``conditions``,
  which captures and ``pcidoc probe`` keep. Results may come piece by piece (one P2P cell per
  pair, the scaling ladder after each rank count): see :mod:`pcidoc.probes.merge`.
* ``{"type": "error", "kind": "unavailable", "message": "..."}`` — ``kind`` is a
  :class:`pcidoc.model.measurements.ProbeError` kind.
* ``{"type": "log", "level": "warning", "message": "..."}``
* ``{"type": "info", "data": {...}}`` — facts a probe learned (torch version, CUDA devices).
* ``{"type": "end", "status": 0}`` — the child's last message: everything is reported. A
  child that then does not exit (a device teardown stuck behind a hung copy) is ended by the
  parent after a short grace instead of at the probe's deadline.

This module needs only the standard library (no torch, no pydantic): the child imports it, and
the child may run under another interpreter that has torch but none of pcidoc's dependencies
(``--python``). The parent validates each result against its model
(:data:`pcidoc.probes.runner.RESULT_MODELS`).
"""

from __future__ import annotations

import json
from typing import Any

PROTOCOL_VERSION = 1

RESULT_KINDS: tuple[str, ...] = ("transfer", "p2p", "p2p_verification", "collective", "scaling")
"""Result kinds; each names a :class:`pcidoc.model.measurements.Measurements` list."""

NCCL_TUNING_VARIABLES = (
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_P2P_DISABLE",
    "NCCL_P2P_LEVEL",
    "NCCL_P2P_USE_CUDA_MEMCPY",
    "NCCL_SHM_DISABLE",
    "NCCL_NVLS_ENABLE",
    "NCCL_CUMEM_ENABLE",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS",
    "NCCL_MIN_CTAS",
    "NCCL_MAX_CTAS",
    "NCCL_NTHREADS",
    "NCCL_BUFFSIZE",
    "NCCL_LL_BUFFSIZE",
    "NCCL_LL128_BUFFSIZE",
    "NCCL_TOPO_FILE",
    "NCCL_GRAPH_FILE",
    "NCCL_NET",
    "NCCL_IB_DISABLE",
    "NCCL_IB_HCA",
    "NCCL_SOCKET_IFNAME",
    "NCCL_NET_GDR_LEVEL",
    "NCCL_NET_GDR_READ",
    "NCCL_CROSS_NIC",
    "NCCL_PXN_DISABLE",
    "NCCL_COLLNET_ENABLE",
)
"""NCCL variables that change what a collective measures: the algorithm and protocol, the
transports allowed (P2P, SHM, NVLS, the network), channel counts and buffer sizes, a topology
file. Recorded with each run (``CollectiveMeasurement.nccl_env``)."""


def nccl_settings(environ: Any) -> dict[str, str]:
    """The :data:`NCCL_TUNING_VARIABLES` set in ``environ`` (values cut at 200 characters)."""
    return {k: str(environ[k])[:200] for k in NCCL_TUNING_VARIABLES if k in environ}


ERROR_KINDS: tuple[str, ...] = (
    "timeout",
    "crash",
    "unavailable",
    "interrupted",
    "refused",
    "error",
)

INSTALL_HINT = "pip install 'pcidoc[probes]', or name a Python that has torch: --python PATH"
"""What to run when torch is missing."""


def encode(message: dict[str, Any]) -> bytes:
    """One protocol line (UTF-8, newline-terminated) for ``message``."""
    return (json.dumps(message, separators=(",", ":"), allow_nan=False) + "\n").encode()


def progress(probe: str, fraction: float, message: str) -> dict[str, Any]:
    """A progress message; ``fraction`` is clamped to [0, 1]."""
    return {
        "type": "progress",
        "probe": probe,
        "fraction": max(0.0, min(1.0, float(fraction))),
        "message": message,
    }


def result(kind: str, measurement: dict[str, Any], extra: dict[str, Any] | None = None) -> dict:
    """A result message carrying one measurement of ``kind`` (a key of RESULT_KINDS)."""
    if kind not in RESULT_KINDS:
        raise ValueError(f"unknown result kind {kind!r}")
    message: dict[str, Any] = {"type": "result", "kind": kind, "measurement": measurement}
    if extra:
        message["extra"] = extra
    return message


def error(kind: str, message: str) -> dict[str, Any]:
    """An error message; ``kind`` is one of :data:`ERROR_KINDS`."""
    if kind not in ERROR_KINDS:
        kind = "error"
    return {"type": "error", "kind": kind, "message": message}


def log(level: str, message: str) -> dict[str, Any]:
    """A log message (``debug``, ``info``, ``warning``)."""
    return {"type": "log", "level": level, "message": message}


def info(data: dict[str, Any]) -> dict[str, Any]:
    """Facts the probe learned about its environment."""
    return {"type": "info", "data": data}


def end(status: int) -> dict[str, Any]:
    """The child's last message; ``status`` is the exit status it is about to return."""
    return {"type": "end", "status": int(status)}


class ProtocolError(ValueError):
    """A line that is not a protocol message."""


def decode(line: bytes | str) -> dict[str, Any]:
    """Parse one protocol line.

    Args:
        line: The raw line, with or without its newline.

    Returns:
        The message object (always has a known ``type``).

    Raises:
        ProtocolError: the line is not JSON, not an object, or has an unknown type or
            missing fields.
    """
    text = line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line
    text = text.strip()
    if not text:
        raise ProtocolError("empty line")
    try:
        message = json.loads(text)
    except ValueError as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if not isinstance(message, dict):
        raise ProtocolError("not a JSON object")
    kind = message.get("type")
    if kind == "progress":
        if not isinstance(message.get("fraction", 0.0), (int, float)):
            raise ProtocolError("progress without a numeric fraction")
        return message
    if kind == "result":
        if message.get("kind") not in RESULT_KINDS or not isinstance(
            message.get("measurement"), dict
        ):
            raise ProtocolError("result without a known kind and a measurement object")
        return message
    if kind == "error":
        if not isinstance(message.get("message"), str):
            raise ProtocolError("error without a message")
        return message
    if kind in ("log", "info", "end"):
        return message
    raise ProtocolError(f"unknown message type {kind!r}")

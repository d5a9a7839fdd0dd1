"""Tiny misbehaving probe children for the runner's tests (no torch, no GPU).

Run as ``python -m tests.fakes.testing_children BEHAVIOUR --params JSON``. Each behaviour
exercises one path of :class:`pcidoc.probes.runner.SubprocessProbeRunner`: a normal result, a
hang, a crash, garbage on the pipe, grandchildren that must not survive, a child that ignores
SIGTERM. The measurements they print are synthetic placeholders, not measured numbers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

_SYNTHETIC_TRANSFER = {
    "gpu": 0,
    "direction": "h2d",
    "memory": "pinned",
    "bandwidth_gbps": 1.0,
    "method": "synthetic",
    "source": "synthetic:testing-child",
}


def _emit(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _progress(fraction: float, message: str) -> None:
    _emit({"type": "progress", "probe": "test", "fraction": fraction, "message": message})


def _result() -> None:
    _emit({"type": "result", "kind": "transfer", "measurement": _SYNTHETIC_TRANSFER})


def _sleep_forever() -> None:
    while True:
        time.sleep(60)


def _spawn_grandchildren(count: int) -> list[int]:
    pids = []
    for _ in range(count):
        child = subprocess.Popen(
            [sys.executable, "-c", "import time\nwhile True: time.sleep(60)"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        pids.append(child.pid)
    return pids


def run(params: dict, emit: object) -> None:
    """A probe (``pcidoc.probes.child`` calls it) whose device work never completes: a thread
    that a normal interpreter exit would wait for stands in for the CUDA context's teardown."""
    import threading

    from pcidoc.probes.child import ProbeHung

    threading.Thread(target=_sleep_forever, name="stuck-teardown", daemon=False).start()
    emit.result("transfer", _SYNTHETIC_TRANSFER)  # type: ignore[attr-defined]
    raise ProbeHung("GPU0->GPU1: a 65536-byte peer copy did not complete (hanging)")


def main(argv: list[str]) -> int:
    """Run one behaviour named by ``argv[0]``."""
    behaviour = argv[0] if argv else "ok"
    params = {}
    if "--params" in argv:
        params = json.loads(argv[argv.index("--params") + 1])
    if behaviour == "ok":
        _progress(0.5, "half way")
        _result()
        return 0
    if behaviour == "sleep":
        _progress(0.1, "started")
        _sleep_forever()
    if behaviour == "slow":
        _progress(0.1, "started")
        time.sleep(float(params.get("seconds", 1.0)))
        _result()
        return 0
    if behaviour == "crash":
        _progress(0.2, "about to fail")
        sys.stderr.write("Traceback (most recent call last):\n")
        sys.stderr.write("RuntimeError: CUDA error: an illegal memory access was encountered\n")
        sys.stderr.flush()
        return 3
    if behaviour == "garbage":
        sys.stdout.write("NCCL INFO Bootstrap : Using lo:127.0.0.1<0>\n")
        sys.stdout.write("{not json\n")
        sys.stdout.write("[1, 2, 3]\n")
        sys.stdout.write('{"type": "mystery"}\n')
        sys.stdout.flush()
        _progress(0.5, "after the noise")
        _result()
        sys.stdout.write("trailing noise without newline")
        sys.stdout.flush()
        return 0
    if behaviour == "only_garbage":
        sys.stdout.write("hello\nworld\n")
        return 0
    if behaviour == "noresult":
        return 0
    if behaviour == "error":
        _emit({"type": "error", "kind": "unavailable", "message": "no CUDA device visible"})
        return 0
    if behaviour in ("grandchildren", "grandchildren_exit"):
        pids = _spawn_grandchildren(int(params.get("count", 2)))
        _emit({"type": "info", "data": {"grandchildren": pids, "pid": os.getpid()}})
        _progress(0.1, "grandchildren started")
        if behaviour == "grandchildren_exit":
            _result()
            return 0
        _sleep_forever()
    if behaviour == "end_then_hang":
        # Everything reported, then the exit never comes (a CUDA teardown behind a hung copy).
        _result()
        _emit({"type": "end", "status": 0})
        _sleep_forever()
    if behaviour == "probe_hung":
        # The real child entry point running a probe that hits a hung copy.
        from pcidoc.probes import child

        child.PROBE_MODULES["hung"] = "tests.fakes.testing_children"
        return child.main(["hung"])
    if behaviour == "ignore_term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _progress(0.1, "ignoring SIGTERM")
        _sleep_forever()
    sys.stderr.write(f"unknown behaviour {behaviour!r}\n")
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""``pcidoc watch``: a headless loop over this machine's live counters and checks, with a
Prometheus textfile and one JSON line per change. The command (options, NVML session, signals,
where the lines go) is here; the loop and its events are :mod:`pcidoc.watch.watcher`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from pcidoc.cli.output import stderr
from pcidoc.errors import ExitCode, PcidocError

MIN_INTERVAL_S = 0.2


def add_arguments(watch: argparse.ArgumentParser) -> None:
    watch.add_argument(
        "--interval", type=float, default=10.0, metavar="S", help="seconds between samples (10)"
    )
    watch.add_argument("--prom", metavar="FILE", help="node_exporter textfile to rewrite")
    watch.add_argument("--jsonl", metavar="FILE", help="append change events here (default stdout)")
    watch.add_argument(
        "--count", type=int, metavar="N", help="stop after N samples (default: run until Ctrl-C)"
    )
    watch.add_argument(
        "--ras-user",
        action="append",
        metavar="USER",
        help="also believe the NCCL RAS service of jobs run by USER (name or uid; repeatable). "
        "By default only a RAS listener of root's or your own is read: any local user can "
        "listen on its port first",
    )


def run(args: argparse.Namespace) -> int:
    """``pcidoc watch``, progress and errors on stderr."""
    return watch_command(args, stderr)


def ras_users(names: list[str] | None) -> frozenset[int]:
    """The uids of ``--ras-user NAME|UID`` (whose RAS listener ``watch`` believes, besides root
    and the user running it)."""
    import pwd

    uids = set()
    for name in names or []:
        if name.isdecimal():
            uids.add(int(name))
            continue
        try:
            uids.add(pwd.getpwnam(name).pw_uid)
        except KeyError:
            raise PcidocError(f"--ras-user {name}: no such user") from None
    return frozenset(uids)


def watch_command(
    args: Any,
    progress: Callable[[str], None],
    backend_factory: Callable[[], Any] | None = None,
) -> int:
    """``pcidoc watch``: collect, then loop until Ctrl-C (130), SIGTERM (143), SIGHUP (129) or
    ``--count`` samples (0). A signal ends it with one line on stderr; the ``--prom`` file is
    the last one written whole, and no temporary file stays behind."""
    from pcidoc.probes.runner import signals_interrupt

    if args.interval < MIN_INTERVAL_S:
        raise PcidocError(f"--interval must be at least {MIN_INTERVAL_S} seconds")
    if args.count is not None and args.count < 1:
        raise PcidocError("--count must be at least 1")
    trusted = ras_users(getattr(args, "ras_user", None))
    from pcidoc.fileio import check_output

    for option, path in (("--prom", args.prom), ("--jsonl", args.jsonl)):
        if path:
            check_output(path, f"{option} {path}")
    try:
        with signals_interrupt():
            code = _watch(args, progress, backend_factory, trusted)
    except KeyboardInterrupt as exc:
        code = int(getattr(exc, "exit_code", ExitCode.INTERRUPTED))
    if code != ExitCode.OK:
        progress(_stopped(code))
    return code


def _stopped(code: int) -> str:
    """``pcidoc: interrupted`` (Ctrl-C), or by which signal."""
    import signal

    if code == ExitCode.INTERRUPTED:
        return "pcidoc: interrupted"
    try:
        return f"pcidoc: interrupted by {signal.Signals(code - 128).name}"
    except ValueError:
        return "pcidoc: interrupted"


def _watch(
    args: Any,
    progress: Callable[[str], None],
    backend_factory: Callable[[], Any] | None,
    trusted: frozenset[int],
) -> int:
    import time

    from pcidoc.collect.capture import utc_now
    from pcidoc.collect.counters import CounterSampler
    from pcidoc.collect.live import collect_live
    from pcidoc.collect.nccl_ras_client import RasWatch, trusted_uids
    from pcidoc.fileio import open_append
    from pcidoc.watch.flaps import sysfs_port_link
    from pcidoc.watch.watcher import Watcher, run_loop

    if backend_factory is None:
        from pcidoc.collect.nvml import PynvmlBackend

        backend_factory = PynvmlBackend
    backend = backend_factory()
    failure = backend.init()
    try:
        capture = collect_live(backend=backend)
        if failure is not None or not capture.gpus:
            reason = capture.unavailable.get("gpus") or getattr(failure, "reason", "no GPUs")
            raise PcidocError(f"watch needs NVML and at least one GPU ({reason})")
        sampler = CounterSampler.for_capture(backend, capture)
        ras = RasWatch(trusted=trusted_uids(trusted))
        watcher = Watcher(capture, sampler, utc_now, ras=ras, port_reader=sysfs_port_link)
        handle = open_append(args.jsonl) if args.jsonl else None
        try:

            def emit(event: dict[str, Any]) -> None:
                line = json.dumps(event, sort_keys=True) + "\n"
                target = handle or sys.stdout
                target.write(line)
                target.flush()

            progress(
                f"pcidoc: watching {len(capture.gpus)} "
                f"GPU{'' if len(capture.gpus) == 1 else 's'} every {args.interval:g} s"
                + (f", metrics in {args.prom}" if args.prom else "")
                + " (Ctrl-C to stop)"
            )
            return run_loop(
                watcher,
                interval=args.interval,
                sleep=time.sleep,
                unix_time=time.time,
                emit=emit,
                prom=args.prom,
                count=args.count,
                warn=progress,
            )
        finally:
            if handle is not None and handle is not sys.stdout:
                handle.close()
    finally:
        if failure is None:
            backend.shutdown()

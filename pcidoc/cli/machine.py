"""Which machine a command reads: ``--from FILE`` (a capture, a report or pasted output),
``--demo [NAME]`` (a bundled sample), else this machine, collected live."""

from __future__ import annotations

import argparse
import os
import sys

from pcidoc.cli.output import stderr
from pcidoc.errors import PcidocError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from pcidoc.model.capture import Capture
    from pcidoc.model.report import ReportSource


def resolve_machine(args: argparse.Namespace) -> tuple[Capture, ReportSource]:
    """Load the machine named by ``--from``/``--demo``, else collect this machine live. Loading
    it ends the start-up of the commands that load a machine first
    (:func:`pcidoc.cli.start_up_done`)."""
    from pcidoc.cli import start_up_done
    from pcidoc.model.report import ReportSource

    if getattr(args, "from_file", None):
        capture = load_from(args.from_file)
        path = args.from_file
        if path == "-":
            from pcidoc.collect.capture import STDIN_LABEL

            path = STDIN_LABEL
        elif capture.origin.redacted:
            # The folder may name a user or a host that the redacted capture no longer shows.
            path = os.path.basename(path) or path
        start_up_done()
        return capture, ReportSource.for_file(path, capture.origin.kind)
    if getattr(args, "demo", None) is not None:
        from pcidoc.samples import default_demo, load_sample

        name = args.demo or default_demo()
        capture = load_sample(name)
        start_up_done()
        return capture, ReportSource(kind="demo", name=name)
    from pcidoc.collect.live import collect_live

    machine = collect_live()
    start_up_done()
    return machine, ReportSource(kind="live")


def from_file_hint(path: str, error: PcidocError) -> PcidocError:
    """The error of a ``--from FILE`` that could not be loaded, with the next step added.

    ``--from NAME`` where NAME is a bundled sample and no such file exists points to
    ``--demo NAME``. Any other error is returned unchanged (pasted text is imported on the way;
    its error already says what pcidoc reads).
    """
    if path == "-" or os.path.exists(path):
        return error
    from pcidoc.samples import sample_names

    try:
        names = sample_names()
    except PcidocError:
        return error
    if path in names:
        return PcidocError(
            f"--from {path}: no such file; {path} is a bundled sample: use `--demo {path}`"
        )
    return error


def stdin_hint(path: str) -> None:
    """``--from -`` with a terminal on standard input: say what pcidoc is waiting for."""
    if path == "-" and sys.stdin is not None and sys.stdin.isatty():
        stderr("pcidoc: reading a capture from standard input (paste it, then Ctrl-D)")


def load_from(path: str) -> Capture:
    """Load the machine of ``--from FILE`` (``-``: standard input): a capture or report, or
    pasted output read through the importers on the way (what was read is said on stderr);
    errors say what to do next."""
    from pcidoc.collect.load import load_machine

    stdin_hint(path)
    try:
        loaded = load_machine(path)
    except PcidocError as exc:
        raise from_file_hint(path, exc) from None
    if loaded.imported:
        report_import(loaded.capture)
    return loaded.capture


def report_import(capture: Capture) -> None:
    """What an import read and warned, on stderr (``pcidoc import`` and ``--from TEXT``)."""
    per_file = set()
    for source in capture.origin.sources:
        what = "; ".join(source.read) or "nothing usable"
        stderr(f"pcidoc: {source.path}: {what}")
        for warning in source.warnings:
            per_file.add(warning)
            stderr(f"pcidoc: {source.path}: warning: {warning}")
    for warning in capture.origin.warnings:
        # origin.warnings repeats the per-file ones with the file name in front.
        if not any(warning.endswith(w) for w in per_file):
            stderr(f"pcidoc: warning: {warning}")

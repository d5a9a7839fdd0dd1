"""Shared test configuration: keep the developer's machine out of the tests."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# A suite started as a background job of a non-interactive shell (`cmd &`, `nohup cmd &`)
# inherits SIGINT *ignored*: Python then installs no KeyboardInterrupt handler, and neither do
# the children the Ctrl-C tests start, which therefore wait forever. Ctrl-C is what those tests
# are about, so give this process (and through exec, its children) Python's usual handler.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Make the end of a run cheap for the garbage collector.

    At unconfigure pytest collects garbage five times (to report unraisable exceptions). On the
    heap of a whole run that took longer than the 5 s execnet gives an xdist worker to finish,
    after which execnet SIGINTs the worker: a passing run printed a ``KeyboardInterrupt``
    traceback from whatever ran then (Hypothesis's gc callback). One collection here, then the
    survivors frozen (``gc.freeze``: left out of later collections), and those five passes only
    look at what is new.
    """
    import gc

    gc.collect()
    gc.freeze()


SHARED = ROOT.parent / "shared"
REALDATA = SHARED / "realdata"


CORPUS_MISSING = (
    "the real-output corpus ../shared/realdata is not beside this checkout (it lives outside "
    "the package; see the README's Quickstart)"
)
"""The one skip reason of every corpus test (``-ra`` prints it once, with the count)."""


def realdata_dir() -> Path:
    """The real-output corpus of ../shared/realdata; in CI its absence is a failure."""
    if not REALDATA.is_dir():
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            raise RuntimeError(f"CI=true but the corpus {REALDATA} is missing")
        pytest.skip(CORPUS_MISSING)
    return REALDATA


def read_realdata(relpath: str) -> str:
    """A corpus file without its three metadata lines (# source / # machine / # note)."""
    text = (realdata_dir() / relpath).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    assert lines[0].startswith("# source:"), relpath
    assert lines[1].startswith("# machine:"), relpath
    assert lines[2].startswith("# note:"), relpath
    return "".join(lines[3:])


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's NCCL/CUDA environment or debug switches."""
    for key in list(os.environ):
        if key.startswith(("NCCL_", "PCIDOC_")) or key in ("CUDA_VISIBLE_DEVICES",):
            monkeypatch.delenv(key, raising=False)
    # Tests never read the host's kernel log (pcidoc.collect.kernel_live takes fakes instead).
    monkeypatch.setenv("PCIDOC_KERNEL_LOG", "off")

"""The bundled samples are what pcidoc's own importer makes of their realdata files today."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import realdata_dir

ROOT = Path(__file__).resolve().parent.parent


def test_bundled_samples_match_the_importer() -> None:
    """An importer change (a new format found, a reworded read line, a new model field) leaves
    the samples stale until `python tools/build_samples.py` rebuilds them; the demos then show
    what an import of the same files no longer gives."""
    realdata = realdata_dir()
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "build_samples.py"),
            "--check",
            "--realdata",
            str(realdata),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, (
        f"{done.stdout}{done.stderr}\nrun `python tools/build_samples.py`, then the goldens "
        "(PCIDOC_UPDATE_GOLDEN=1) and the TUI snapshots (--snapshot-update), and review them"
    )

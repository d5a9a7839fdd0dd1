"""The installed package holds no test doubles and never imports the test tree."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_package_never_imports_the_tests() -> None:
    pattern = re.compile(r"^\s*(import tests\b|from tests\b)", re.MULTILINE)
    offenders = [
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "pcidoc").rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_no_fake_backend_runner_or_test_child_ships_in_the_package() -> None:
    names = {p.stem for p in (ROOT / "pcidoc").rglob("*.py")}
    assert not {n for n in names if n.startswith(("fake", "testing"))}
    for name in ("fake_nvml.py", "fake_probes.py", "testing_children.py"):
        assert (ROOT / "tests" / "fakes" / name).is_file(), name

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


def _runtime_dependencies() -> list[str]:
    import tomllib

    with open(ROOT / "pyproject.toml", "rb") as handle:
        return list(tomllib.load(handle)["project"]["dependencies"])


def test_runtime_dependencies_are_ranges_not_pins() -> None:
    """``pip install pcidoc`` into an ML environment must not replace its pydantic or Textual:
    no runtime dependency is pinned exactly (issue 20); the test pins live in constraints.txt."""
    deps = _runtime_dependencies()
    assert {d.split(">")[0].split("<")[0].split("=")[0].strip() for d in deps} >= {
        "pydantic",
        "textual",
    }
    pinned = [d for d in deps if "==" in d or "===" in d]
    assert pinned == []
    # pydantic 2.7 is the oldest pydantic the code is checked against (tools/check_install.sh).
    assert any(d.replace(" ", "").startswith("pydantic>=2.7,<3") for d in deps)


def test_the_constraints_pin_the_versions_the_stored_schemas_were_made_with() -> None:
    """constraints.txt (used by the README's commands) pins the pydantic_core of the store, so
    the Quickstart gets the fast start-up path, and the Textual of the snapshot baselines."""
    import json

    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[name.strip().lower().replace("_", "-")] = version.strip()
    store = (ROOT / "pcidoc" / "model" / "compiled.jsonl").read_bytes().split(b"\n", 1)[0]
    assert pins["pydantic-core"] == json.loads(store)["pydantic_core"]
    assert set(pins) >= {"textual", "pydantic", "pydantic-core"}

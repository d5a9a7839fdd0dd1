"""The layers of docs/architecture.md are a contract: import-linter checks every import of the
package (function-level and ``TYPE_CHECKING`` ones included) against ``[tool.importlinter]``
in pyproject.toml, and the contract names every part of the package."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` of the test environment, on the package and pyproject.toml in ``cwd``."""
    script = Path(sys.executable).parent / "lint-imports"
    assert script.exists(), "install the test extra ('.[test]'): it brings import-linter"
    return subprocess.run(
        [str(script), "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {c["id"]: c for c in config["tool"]["importlinter"]["contracts"]}


def test_every_contract_is_kept() -> None:
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert f"Contracts: {len(_contracts())} kept, 0 broken." in done.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    """The linter is able to fail: a copy of the package whose doctor imports the CLI (inside
    a function, where a habit would not see it) breaks the layers contract."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(
        ROOT / "pcidoc",
        tmp_path / "pcidoc",
        ignore=shutil.ignore_patterns("__pycache__", "*.json", "*.jsonl", "*.gz", "*.toml"),
    )
    wording = tmp_path / "pcidoc" / "doctor" / "wording.py"
    text = wording.read_text(encoding="utf-8")
    wording.write_text(
        text + "\n\ndef _upward():\n    from pcidoc.cli import main\n\n    return main\n",
        encoding="utf-8",
    )
    done = _lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-2000:]
    assert "pcidoc.doctor is not allowed to import pcidoc.cli" in done.stdout
    assert "pcidoc.doctor.wording -> pcidoc.cli" in done.stdout


def _parts_of_the_package() -> set[str]:
    parts = set()
    for path in (ROOT / "pcidoc").iterdir():
        if path.is_dir() and (path / "__init__.py").exists():
            parts.add(f"pcidoc.{path.name}")
        elif path.suffix == ".py" and path.stem not in ("__init__", "__main__"):
            parts.add(f"pcidoc.{path.stem}")
    return parts


def test_every_part_of_the_package_has_a_layer() -> None:
    """A new subpackage or top-level module must be placed in the order (else nothing checks
    what it imports or what imports it)."""
    named = [
        part.strip() for layer in _contracts()["layers"]["layers"] for part in layer.split("|")
    ]
    assert len(named) == len(set(named)), "a part is in two layers"
    assert set(named) == _parts_of_the_package()


def test_every_check_topic_is_independent() -> None:
    checks = ROOT / "pcidoc" / "doctor" / "checks"
    topics = {
        f"pcidoc.doctor.checks.{path.name}"
        for path in checks.iterdir()
        if path.is_dir() and (path / "__init__.py").exists()
    }
    assert set(_contracts()["topics"]["modules"]) == topics


def _ruff_complexity(*paths: Path) -> subprocess.CompletedProcess[str]:
    """ruff's complexity rule with the project's settings (``[tool.ruff.lint.mccabe]``)."""
    ruff = Path(sys.executable).parent / "ruff"
    assert ruff.exists(), "install the test extra ('.[test]'): it brings ruff"
    return subprocess.run(
        [str(ruff), "check", "--no-cache", "--select", "C901", "--config", "pyproject.toml"]
        + [str(p) for p in paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_no_function_is_above_complexity_15(tmp_path: Path) -> None:
    """No function of the package (or its tests and tools) above 15; a function with 16 ways
    through is reported, so the rule is able to fail."""
    done = _ruff_complexity(ROOT / "pcidoc", ROOT / "tests", ROOT / "tools")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(15))
    tangled = tmp_path / "tangled.py"
    tangled.write_text(f"def tangled(x):\n{branches}    return -1\n", encoding="utf-8")
    done = _ruff_complexity(tangled)
    assert done.returncode == 1 and "C901 `tangled` is too complex (16 > 15)" in done.stdout

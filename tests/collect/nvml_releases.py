"""The real ``pynvml.py`` of every nvidia-ml-py release pcidoc supports, for tests.

No third-party code is committed: :func:`release_paths` downloads each release's wheel once
(``pip download --no-deps``) into a cache outside the repository and extracts its ``pynvml.py``;
:func:`load_release` executes a fresh copy of that module under its own name, with a C-level
stand-in (:class:`tests.collect.fake_libnvml.FakeLibNvml`) as its ``libnvidia-ml``. Nothing
replaces the ``pynvml`` module the rest of the suite imports.

When the registry cannot be reached the tests that need a release are skipped with one line.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

RELEASES: tuple[str, ...] = ("12.535.161", "12.550.52", "12.570.86", "12.575.51", "13.615.71")
"""The supported nvidia-ml-py releases (pyproject.toml says the same)."""


def cache_dir() -> Path:
    """Where the wheels' ``pynvml.py`` files are kept between runs
    (``$PCIDOC_TEST_CACHE``, else ``$XDG_CACHE_HOME/pcidoc-tests``, else ``~/.cache/...``)."""
    base = os.environ.get("PCIDOC_TEST_CACHE")
    if base:
        return Path(base) / "nvidia-ml-py"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "pcidoc-tests" / "nvidia-ml-py"


def _download(version: str, target: Path) -> str | None:
    """Extract ``pynvml.py`` of ``version`` to ``target``; the reason when that failed."""
    with tempfile.TemporaryDirectory(prefix="pcidoc-nvml-") as scratch:
        try:
            done = subprocess.run(
                [
                    sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "--only-binary=:all:", "--disable-pip-version-check",
                    f"nvidia-ml-py=={version}", "-d", scratch,
                ],
                capture_output=True, text=True, timeout=180, check=False,
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError) as exc:
            return f"pip did not run ({exc})"
        wheels = sorted(Path(scratch).glob("nvidia_ml_py-*.whl"))
        if done.returncode != 0 or not wheels:
            lines = [line for line in done.stderr.splitlines() if "ERROR" in line]
            return (lines or ["pip download failed"])[-1][:200]
        with zipfile.ZipFile(wheels[0]) as wheel:
            text = wheel.read("pynvml.py")
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(text)
        partial.replace(target)  # atomic: parallel test workers may download the same one
    return None


def release_paths() -> dict[str, Path | str]:
    """Release -> path of its ``pynvml.py``, or the one-line reason it is missing."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    found: dict[str, Path | str] = {}
    for version in RELEASES:
        path = folder / f"pynvml-{version}.py"
        why = None if path.is_file() else _download(version, path)
        found[version] = path if why is None else why
    return found


def load_release(paths: dict[str, Path | str], version: str, lib: object) -> ModuleType:
    """A fresh module of ``version``'s real ``pynvml.py`` calling ``lib`` as its C library
    (skips the test with the download's reason when the release is missing)."""
    path = paths[version]
    if not isinstance(path, Path):
        pytest.skip(f"nvidia-ml-py {version} unavailable: {path}")
    name = f"pynvml_{version.replace('.', '_')}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # the module looks itself up while it builds its error classes
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    module.nvmlLib = lib  # what _LoadNvmlLibrary would have loaded
    return module


def clear_cache() -> None:
    """Remove the downloaded files (not used by the tests; for a developer's shell)."""
    shutil.rmtree(cache_dir(), ignore_errors=True)

"""Root runs only what root chose (issue 30, items 1 and 2).

The probe child, its torch check and its multiprocessing workers never import from the folder
pcidoc was started in; discovery never runs a ``python3`` found through an empty or relative
``PATH`` entry; as root, interpreters, prefixes and ``PYTHONPATH`` entries that another user
owns or can change are refused with a one-line reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pcidoc import trust
from pcidoc.probes import interpreter
from pcidoc.probes.runner import ProbeSpec, SubprocessProbeRunner
from tests.fakes.planted import plant, ran

OTHER_UID = 54321


def _hand_to_another_user(path: Path) -> None:
    """Make ``path`` not root's: chown it as root; as anyone else it already is not."""
    if os.geteuid() == 0:
        os.chown(path, OTHER_UID, OTHER_UID)


@pytest.fixture
def trap(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "job"
    markers = plant(folder)
    monkeypatch.chdir(folder)
    return markers


def test_the_argv_never_names_the_current_folder() -> None:
    argv = interpreter.module_argv("/usr/bin/python3", "pcidoc.probes.child", ["env"], ["/x"])
    assert argv[1] in ("-I", "-E") and "-m" not in argv
    assert interpreter.isolation_flags(euid=0) == ["-I"]
    assert interpreter.isolation_flags(euid=1000) == ["-E"]


def test_probe_child_ignores_modules_planted_in_the_current_folder(trap, monkeypatch) -> None:
    monkeypatch.setenv("PYTHONPATH", ".:")
    outcome = SubprocessProbeRunner().run(
        ProbeSpec(name="ok", module="tests.fakes.testing_children", deadline_s=60)
    )
    assert ran(trap) == []
    assert outcome.ok, (outcome.errors, outcome.stderr_tail)
    assert [r.kind for r in outcome.results] == ["transfer"]


def test_torch_lookup_ignores_a_planted_torch(trap, tmp_path) -> None:
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    python = str(bare / "bin" / "python")
    assert not interpreter.imports_torch(python)
    assert ran(trap) == []


def test_discovery_skips_empty_and_relative_path_entries(trap) -> None:
    env = {"PATH": os.pathsep.join(["", ".", "bin", "/nonexistent"])}
    chosen = interpreter.choose(None, env, own_has_torch=False)
    assert (chosen.path, chosen.source) == (sys.executable, "pcidoc")
    with pytest.raises(interpreter.InterpreterError):
        interpreter.choose("python3", env)
    assert ran(trap) == []


def _venv_of_another_user(tmp_path: Path) -> Path:
    prefix = tmp_path / "home" / "alice" / "venv"
    (prefix / "bin").mkdir(parents=True)
    python = prefix / "bin" / "python3"
    python.symlink_to(sys.executable)
    for path in (prefix.parent, prefix, prefix / "bin"):
        _hand_to_another_user(path)
    return python


def test_root_refuses_an_environment_another_user_owns(tmp_path) -> None:
    python = _venv_of_another_user(tmp_path)
    reason = trust.root_refusal(str(python), euid=0)
    assert reason is not None and "owned by" in reason and "\n" not in reason
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        env = {variable: str(python.parent.parent), "PATH": ""}
        chosen = interpreter.choose(None, env, own_has_torch=False, euid=0)
        assert chosen.source == "pcidoc"
        assert len(chosen.refused) == 1 and str(python) in chosen.refused[0]
    with pytest.raises(interpreter.InterpreterError, match="not run as root"):
        interpreter.choose(str(python), {}, euid=0)
    with pytest.raises(interpreter.InterpreterError, match="not run as root"):
        interpreter.choose(None, {"PCIDOC_PYTHON": str(python)}, euid=0)


def test_others_judge_their_own_environments(tmp_path) -> None:
    python = _venv_of_another_user(tmp_path)
    assert trust.root_refusal(str(python), euid=1000) is None
    chosen = interpreter.choose(str(python), {}, euid=1000)
    assert chosen.source == "--python"


@pytest.mark.skipif(
    os.geteuid() != 0, reason="a root-owned folder that others can write needs root"
)
def test_root_refuses_a_folder_others_can_write(tmp_path) -> None:
    shared = tmp_path / "shared"
    (shared / "bin").mkdir(parents=True)
    (shared / "bin" / "python3").symlink_to(sys.executable)
    shared.chmod(0o777)
    reason = trust.root_refusal(str(shared / "bin" / "python3"), euid=0)
    assert reason is not None and "other users" in reason
    shared.chmod(0o1777)  # sticky, as /tmp: others cannot replace root's files
    assert trust.root_refusal(str(shared / "bin" / "python3"), euid=0) is None


def test_root_keeps_only_trusted_pythonpath_entries(tmp_path) -> None:
    mine = tmp_path / "mine"
    theirs = tmp_path / "theirs"
    mine.mkdir()
    theirs.mkdir()
    _hand_to_another_user(theirs)
    value = os.pathsep.join([str(theirs), "", ".", "relative", str(mine)])
    path = interpreter.search_path(False, {"PYTHONPATH": value}, euid=1000)
    assert path[1:] == [str(theirs), str(mine)]
    as_root = interpreter.search_path(False, {"PYTHONPATH": value}, euid=0)
    assert str(theirs) not in as_root
    assert all(os.path.isabs(p) for p in as_root)

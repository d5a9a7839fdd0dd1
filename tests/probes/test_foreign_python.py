"""Probes run with the torch the user already has (``--python``, ``PCIDOC_PYTHON``, discovery).

The child needs only the standard library and torch. Here it runs in a virtual environment made
with ``python -m venv --without-pip`` that holds a tiny stand-in ``torch`` package and nothing
else: no pydantic, no rich, no psutil, no pcidoc install. Any import of pcidoc's dependencies
by the child fails there.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pcidoc.probes import interpreter
from pcidoc.probes.runner import ProbeSpec, SubprocessProbeRunner, child_environment

FAKE_TORCH = textwrap.dedent(
    '''
    """A stand-in torch: enough for the env probe, nothing else."""
    __version__ = "0.0.0+stdlib-fake"

    class version:
        cuda = None

    class cuda:
        @staticmethod
        def is_available():
            return False

        @staticmethod
        def device_count():
            return 0
    '''
)
FAKE_DIST = textwrap.dedent(
    """
    def is_available():
        return True

    def is_nccl_available():
        return False

    def is_gloo_available():
        return True
    """
)

CHILD_MODULES = [
    "pcidoc.probes.child",
    "pcidoc.probes.envprobe",
    "pcidoc.probes.transfer",
    "pcidoc.probes.p2p",
    "pcidoc.probes.allreduce",
    "pcidoc.probes.scaling",
    "pcidoc.probes.collectives",
    "pcidoc.probes.distributed",
]


@pytest.fixture(scope="module")
def torch_only_venv(tmp_path_factory) -> Path:
    """A venv with only the stand-in torch in its site-packages; returns its python."""
    root = tmp_path_factory.mktemp("torch-only")
    venv = root / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    package = Path(site) / "torch"
    (package / "distributed").mkdir(parents=True)
    (package / "__init__.py").write_text(FAKE_TORCH)
    (package / "distributed" / "__init__.py").write_text(FAKE_DIST)
    return python


def _no_pcidoc_dependencies(python: Path) -> None:
    code = "import pydantic"
    done = subprocess.run([str(python), "-c", code], capture_output=True, check=False)
    assert done.returncode != 0, "the test venv must not have pydantic"


def test_child_modules_import_with_the_standard_library_only(torch_only_venv) -> None:
    _no_pcidoc_dependencies(torch_only_venv)
    code = (
        f"for name in {CHILD_MODULES!r}:\n"
        "    __import__(name)\n"
        "bad = sorted({m.split('.')[0] for m in sys.modules} & "
        "{'pydantic', 'rich', 'psutil', 'pynvml', 'textual', 'torch'})\n"
        "print(bad)\n"
    )
    done = subprocess.run(
        interpreter.code_argv(str(torch_only_venv), code, interpreter.search_path(True)),
        env=child_environment(),
        cwd=interpreter.private_folder(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


STAND_IN_PYNVML = textwrap.dedent(
    """
    \"\"\"A stand-in for nvidia-ml-py: one GPU at PCIe Gen5 x16, P0.\"\"\"

    class NVMLError(Exception):
        def __init__(self, value):
            self.value = value

    def nvmlInit():
        pass

    def nvmlShutdown():
        pass

    def nvmlDeviceGetHandleByIndex(index):
        return ("handle", index)

    def nvmlDeviceGetCurrPcieLinkGeneration(handle):
        return 5

    def nvmlDeviceGetCurrPcieLinkWidth(handle):
        return 16

    def nvmlDeviceGetPerformanceState(handle):
        return 0
    """
)


def test_the_link_under_load_is_read_from_nvml_in_the_torch_only_python(
    torch_only_venv, tmp_path
) -> None:
    """The transfer probe's link sampler reads NVML through pcidoc.collect.nvml; under a
    Python with only torch (and the user's nvidia-ml-py) nothing on that path may need
    pydantic, or the under-load link state silently disappears."""
    (tmp_path / "pynvml.py").write_text(STAND_IN_PYNVML)
    code = (
        "from pcidoc.probes.linkstate import LinkSampler\n"
        "sampler = LinkSampler(None, 0)\n"
        "sampler.sample()\n"
        "r = sampler.stop()\n"
        "print(r.gen, r.width, r.pstate, r.source, r.nvml_missing)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'rich', 'psutil'}))\n"
    )
    path = [*interpreter.search_path(True), str(tmp_path)]
    done = subprocess.run(
        interpreter.code_argv(str(torch_only_venv), code, path),
        env=child_environment(),
        cwd=interpreter.private_folder(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["5 16 0 nvml None", "[]"]


def test_child_path_exposes_only_the_pcidoc_package() -> None:
    path = Path(interpreter.child_path())
    assert [p.name for p in path.iterdir()] == ["pcidoc"]
    assert (path / "pcidoc").resolve() == Path(interpreter.package_dir()).resolve()
    assert interpreter.search_path(True, {})[0] == str(path)
    own = interpreter.search_path(False, {})
    assert own == [str(Path(interpreter.package_dir()).parent)]


def test_env_probe_runs_under_the_torch_only_python(torch_only_venv) -> None:
    runner = SubprocessProbeRunner(python=str(torch_only_venv))
    assert runner.interpreter.foreign
    outcome = runner.run(ProbeSpec(name="env", deadline_s=60))
    assert outcome.ok, (outcome.errors, outcome.stderr_tail)
    assert outcome.info["torch_version"] == "0.0.0+stdlib-fake"
    assert outcome.info["python"] == str(torch_only_venv)
    assert outcome.info["gloo_available"] is True


def test_choose_order(tmp_path, torch_only_venv) -> None:
    other = tmp_path / "bin" / "python3"
    other.parent.mkdir()
    other.symlink_to(sys.executable)
    explicit = interpreter.choose(str(other), {"PCIDOC_PYTHON": str(torch_only_venv)})
    assert (explicit.path, explicit.source) == (str(other), "--python")
    from_env = interpreter.choose(None, {"PCIDOC_PYTHON": str(torch_only_venv)})
    assert (from_env.path, from_env.source) == (str(torch_only_venv), "PCIDOC_PYTHON")
    own = interpreter.choose(None, {}, own_has_torch=True)
    assert (own.path, own.source, own.foreign) == (sys.executable, "pcidoc", False)


def test_discovery_finds_the_active_env_with_torch(tmp_path, torch_only_venv) -> None:
    empty = tmp_path / "empty"
    (empty / "bin").mkdir(parents=True)
    stub = empty / "bin" / "python3"  # a python3 on PATH without torch
    stub.write_text("#!/bin/sh\nexit 1\n")
    stub.chmod(0o755)
    venv = torch_only_venv.parent.parent
    env = {"VIRTUAL_ENV": str(venv), "PATH": str(empty / "bin")}
    found = interpreter.choose(None, env, own_has_torch=False)
    assert (found.path, found.source) == (str(venv / "bin" / "python3"), "virtualenv")
    # Nothing with torch anywhere: pcidoc's own Python (the probes then explain).
    nothing = interpreter.choose(None, {"PATH": str(tmp_path / "nowhere")}, own_has_torch=False)
    assert (nothing.path, nothing.source) == (sys.executable, "pcidoc")


def test_a_bad_python_is_one_line_and_exit_3(tmp_path) -> None:
    with pytest.raises(interpreter.InterpreterError, match="not an executable Python"):
        interpreter.choose(str(tmp_path / "missing"))
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pcidoc",
            "probe",
            "allreduce",
            "--backend",
            "gloo",
            "--python",
            str(tmp_path / "missing"),
        ],
        capture_output=True,
        text=True,
        cwd=root,
        check=False,
        timeout=120,
    )
    assert done.returncode == 3
    assert "--python" in done.stderr and "Traceback" not in done.stderr


def test_the_parent_checks_what_a_foreign_child_sends() -> None:
    from pcidoc.probes.runner import OutcomeBuilder

    builder = OutcomeBuilder(ProbeSpec(name="transfer"))
    builder.feed(
        '{"type":"info","data":{"python":["x"],"torch_version":"2.1.2","device_count":"8"}}'
    )
    builder.feed('{"type":"result","kind":"transfer","measurement":{"gpu":"zero"}}')
    outcome = builder.finish()
    assert outcome.info == {"torch_version": "2.1.2"}
    assert outcome.results == [] and outcome.garbage_lines == 1
    warnings = [m for level, m in outcome.logs if level == "warning"]
    assert any("'python'" in m for m in warnings) and any("'device_count'" in m for m in warnings)

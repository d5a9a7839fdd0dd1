"""The probe child and the CLI on this machine, for real (torch CPU build, no GPU).

* torch is never imported by the parent-side modules;
* the child keeps its protocol stream clean whatever libraries print;
* ``pcidoc probe transfer`` says why it cannot run; ``pcidoc probe allreduce --backend gloo``
  and ``pcidoc check --probes quick`` measure with gloo.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pcidoc.probes.runner import ProbeSpec, SubprocessProbeRunner

ROOT = Path(__file__).resolve().parents[2]

HAVE_TORCH = (
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torch') else 1)",
        ],
        check=False,
    ).returncode
    == 0
)
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed")


def _cuda_visible() -> bool:
    if not HAVE_TORCH:
        return False
    code = "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"
    return (
        subprocess.run([sys.executable, "-c", code], check=False, capture_output=True).returncode
        == 0
    )


def test_parent_modules_do_not_import_torch() -> None:
    code = (
        "import sys\n"
        "import pcidoc.probes.session, pcidoc.probes.runner, tests.fakes.fake_probes\n"
        "import pcidoc.probes.preflight, pcidoc.probes.gpusets, pcidoc.probes.stats\n"
        "import pcidoc.probes.params, pcidoc.probes.protocol, pcidoc.probes.console\n"
        "import pcidoc.probes.merge\n"
        # The child-side modules import torch only when a probe runs.
        "import pcidoc.probes.transfer, pcidoc.probes.p2p, pcidoc.probes.allreduce\n"
        "import pcidoc.probes.scaling, pcidoc.probes.collectives, pcidoc.probes.envprobe\n"
        "print(sorted(m for m in ('torch', 'textual') if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_child_protocol_survives_library_output() -> None:
    code = (
        "import os\n"
        "from pcidoc.probes.child import Emitter, protect_stdout\n"
        "fd = protect_stdout()\n"
        "print('NCCL INFO python-level noise', flush=True)\n"
        "os.system('echo c-level noise')\n"
        "Emitter(fd, 'x').log('info', 'clean')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line) for line in proc.stdout.splitlines()] == [
        {"type": "log", "level": "info", "message": "clean"}
    ]
    assert "python-level noise" in proc.stderr
    assert "c-level noise" in proc.stderr


def test_unknown_probe_is_an_error() -> None:
    outcome = SubprocessProbeRunner().run(ProbeSpec(name="nope", deadline_s=30))
    assert outcome.error is not None
    assert "unknown probe" in outcome.error.message


@needs_torch
def test_env_probe_reports_torch_view() -> None:
    outcome = SubprocessProbeRunner().run(ProbeSpec(name="env", deadline_s=60))
    assert outcome.ok, (outcome.errors, outcome.stderr_tail)
    info = outcome.info
    assert info["torch_version"]
    assert info["gloo_available"] is True
    if not info["cuda_available"]:
        assert info["no_cuda_reason"].startswith("no CUDA device visible to torch")


def _pcidoc(*argv: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pcidoc", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )


@needs_torch
@pytest.mark.skipif(_cuda_visible(), reason="this machine has CUDA")
def test_cli_probe_transfer_without_cuda_exits_3() -> None:
    proc = _pcidoc("probe", "transfer", "--json")
    assert proc.returncode == 3, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ok"] is False
    assert doc["errors"][0]["kind"] == "unavailable"
    assert "no CUDA device visible to torch" in doc["errors"][0]["message"]
    assert proc.stderr.strip().splitlines()[-1].startswith("pcidoc: probe transfer: unavailable")


@needs_torch
def test_cli_probe_allreduce_gloo() -> None:
    proc = _pcidoc("probe", "allreduce", "--backend", "gloo", "--ranks", "1,2")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    collectives = doc["measurements"]["collectives"]
    assert [c["ranks"] for c in collectives] == [1, 2]
    assert all(c["correct"] for c in collectives)
    assert all(row["busbw_gbps"] > 0 for row in collectives[1]["rows"])
    assert "busbw" in proc.stderr  # the human table (no --json)


@needs_torch
@pytest.mark.skipif(_cuda_visible(), reason="this machine has CUDA")
def test_cli_check_probes_quick_runs_gloo_scaling_and_skips_cuda() -> None:
    proc = _pcidoc("check", "--probes", "quick", "--json", timeout=240)
    assert proc.returncode in (0, 1, 2), proc.stderr
    report = json.loads(proc.stdout)
    measurements = report["machine"]["measurements"]
    assert [s["backend"] for s in measurements["scaling"]] == ["gloo"]
    errors = {e["probe"]: e for e in measurements["probe_errors"]}
    assert errors["transfer"]["kind"] == "unavailable"
    assert "no CUDA device visible to torch" in errors["transfer"]["message"]
    assert "pcidoc: probe scaling" in proc.stderr


def test_probe_without_a_name_lists_the_probes(capsys) -> None:
    from pcidoc.cli import main
    from pcidoc.cli.probe import PROBE_NAMES

    # Listing is what `pcidoc probe` alone asks for: on stdout, exit 0 (it was 3, an error).
    assert main(["probe"]) == 0
    out = capsys.readouterr().out
    lines = [line.split() for line in out.splitlines()[1:]]
    assert [words[0] for words in lines] == list(PROBE_NAMES)
    assert all(len(words) > 3 for words in lines)  # one line each, with what it measures

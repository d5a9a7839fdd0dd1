"""The command-line contract of DESIGN.md §4: exit codes, one-line errors, clean stdout.

* Bad input exits 3 with exactly one line on stderr (``pcidoc: ...``) and no traceback.
* ``pcidoc check`` exits 0/1/2 when the worst finding is info/warn/fail.
* With ``--json`` stdout carries only JSON; progress and warnings go to stderr.
* ``--version`` and every ``--help`` exit 0; Ctrl-C exits 130.

Most cases run ``pcidoc.cli.main`` in-process (fast); a few run ``python -m pcidoc`` in a
subprocess to prove that no traceback reaches the terminal end to end.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pcidoc import __version__
from pcidoc.cli import COMMANDS, SUBCOMMAND_NAMES, build_parser, main
from pcidoc.collect.importers import SUPPORTED_FORMATS
from pcidoc.doctor.registry import CHECK_IDS
from pcidoc.probes import protocol
from pcidoc.samples import sample_names, sample_path

ROOT = Path(__file__).resolve().parent.parent

# Our own minimal `nvidia-smi topo -m` (two NVLink-bridged GPUs), for `pcidoc import`.
TOPO = (
    "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
    "GPU0\t X \tNV4\t0-15\t0\n"
    "GPU1\tNV4\t X \t0-15\t0\n"
    "\n"
    "Legend:\n"
    "\n"
    "  X    = Self\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n"
)

# Samples whose worst finding is info (0), warn (1) and fail (2), as the doctor sees them.
EXIT_BY_SAMPLE = {
    "h100-pcie-nvlink-bridge": 0,
    "autodl-2080ti-2gpu": 1,
    "synthetic-16gpu": 2,
}


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``main(argv)`` in-process: (exit code, stdout, stderr)."""
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, out: str, err: str, *needles: str) -> None:
    assert code == 3, (code, err)
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("pcidoc: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.fixture
def capture_file(tmp_path: Path) -> Path:
    """A valid capture file (a copy of the default sample)."""
    path = tmp_path / "machine.json"
    path.write_bytes(sample_path("autodl-2080ti-2gpu").read_bytes())
    return path


# ------------------------------------------------------------------------------ bad input


def test_missing_capture_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.json"
    assert_one_line_error(*run(["check", "--from", str(missing)], capsys), "no such file")


def test_corrupt_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "pcidoc.capture/1", "gpus": [', encoding="utf-8")
    assert_one_line_error(*run(["check", "--from", str(bad)], capsys), "bad.json", "not JSON")


def test_capture_from_a_future_pcidoc(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    future = tmp_path / "future.json"
    data = json.loads(sample_path("autodl-2080ti-2gpu").read_text(encoding="utf-8"))
    data["schema"] = "pcidoc.capture/9"
    future.write_text(json.dumps(data), encoding="utf-8")
    code, out, err = run(["check", "--from", str(future)], capsys)
    assert_one_line_error(code, out, err, "pcidoc.capture/9", "newer pcidoc")


def test_wrong_typed_field(capture_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(capture_file.read_text(encoding="utf-8"))
    data["gpus"][0]["index"] = "zero"
    capture_file.write_text(json.dumps(data), encoding="utf-8")
    code, out, err = run(["check", "--from", str(capture_file)], capsys)
    assert_one_line_error(code, out, err, "gpus[0].index")


@pytest.mark.parametrize("option", ["--only", "--skip"])
def test_unknown_check_id_lists_the_known_ones(
    option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["check", "--demo", option, "p2p.nope"], capsys)
    assert_one_line_error(code, out, err, option, "p2p.nope")
    assert all(check_id in err for check_id in CHECK_IDS)


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        (["--only", "p2p", "--skip", "p2p"], "every check --only selects"),
        (["--only", "p2p.capability", "--skip", "p2p"], "every check --only selects"),
        (
            ["--skip", "nvml,pcie,nvlink,p2p,numa,transfer,scaling,env,nccl,kernel,log"],
            "every check",
        ),
    ],
)
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_filters_that_leave_no_check_are_an_error_not_a_pass(
    options: list[str], needle: str, json_flag: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A report of zero checks used to exit 0: a CI job with a wrong filter passed silently."""
    code, out, err = run(["check", "--demo", *json_flag, *options], capsys)
    assert_one_line_error(code, out, err, needle, "no check left to run")


def test_output_folder_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "no" / "such" / "report.md"
    code, out, err = run(["check", "--demo", "-o", str(target)], capsys)
    assert_one_line_error(code, out, err, "does not exist")


def test_output_is_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "report.md"
    folder.mkdir()
    code, out, err = run(["check", "--demo", "-o", str(folder)], capsys)
    assert_one_line_error(code, out, err, "is a directory")


def test_output_with_an_unknown_extension(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["check", "--demo", "-o", str(tmp_path / "report.txt")], capsys)
    assert_one_line_error(code, out, err, "unknown report format", ".json, .md, .html or .prom")


def test_output_folder_not_writable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Permission bits do not stop root, so the check pcidoc makes is what is simulated.
    real_access = os.access
    folder = str(tmp_path)

    def access(path: str | os.PathLike[str], mode: int, *args: object, **kw: object) -> bool:
        if os.fspath(path) == folder and mode == os.W_OK:
            return False
        return real_access(path, mode)

    monkeypatch.setattr(os, "access", access)
    code, out, err = run(["check", "--demo", "-o", str(tmp_path / "r.md")], capsys)
    assert_one_line_error(code, out, err, "not writable")


def test_probes_cannot_measure_a_capture_file(
    capture_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["check", "--probes", "quick", "--from", str(capture_file)], capsys)
    assert_one_line_error(code, out, err, "--probes", "--from")


def test_import_of_nothing_recognisable_lists_the_formats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("my GPUs are slow, please help\n", encoding="utf-8")
    code, out, err = run(["import", str(junk)], capsys)
    assert_one_line_error(code, out, err, "notes.txt", "no supported output recognised")
    assert all(fmt in err for fmt in SUPPORTED_FORMATS)


@pytest.mark.parametrize("content", ["", "  \n\n\t\n"])
def test_import_of_an_empty_file_says_it_is_empty(
    content: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty paste (a failed redirect) is not 'no supported output': say what to do."""
    empty = tmp_path / "topo.txt"
    empty.write_text(content, encoding="utf-8")
    code, out, err = run(["import", str(empty)], capsys)
    assert_one_line_error(code, out, err, "topo.txt: empty, nothing to import", "> topo.txt")
    piped = _piped(["import", "-"], content)
    assert piped.returncode == 3
    assert piped.stderr.strip() == (
        "pcidoc: <stdin>: empty, nothing to import; pipe the tool's output in "
        "(e.g. `nvidia-smi topo -m | pcidoc import -`)"
    )


def test_a_report_to_standard_output_is_pointed_to_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(["check", "--demo", "-o", "-"], capsys)
    assert_one_line_error(code, out, err, "-o -:", "use --json")


def test_import_of_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["import", str(tmp_path / "gone.txt")], capsys)
    assert_one_line_error(code, out, err, "gone.txt", "no such file")


def test_unknown_demo_lists_the_samples(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["check", "--demo", "NOPE"], capsys)
    assert_one_line_error(code, out, err, "NOPE")
    assert all(name in err for name in sample_names())


def test_tui_interval_too_short(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--demo", "--interval", "0.01"], capsys)
    assert_one_line_error(code, out, err, "--interval")


@pytest.mark.parametrize(
    "argv",
    [["bogus"], ["check", "--bogus"], ["check", "--probes", "sometimes"], ["schema", "nope"]],
)
def test_usage_errors_exit_3_without_traceback(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out, err = capsys.readouterr()
    assert exit_info.value.code == 3
    assert out == ""
    assert "Traceback" not in err
    (line,) = err.splitlines()  # one line, like every other bad input
    assert line.startswith("pcidoc"), err
    assert ": error: " in line
    assert "--help" in line


# -------------------------------------------------------------------------- exit codes


@pytest.mark.parametrize(("sample", "expected"), sorted(EXIT_BY_SAMPLE.items()))
def test_check_exit_code_follows_the_worst_finding(
    sample: str, expected: int, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["check", "--json", "--demo", sample], capsys)
    worst = {0: {"pass", "info"}, 1: {"warn"}, 2: {"fail"}}[expected]
    assert json.loads(out)["worst"] in worst
    assert code == expected


def test_keyboard_interrupt_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(_args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr("pcidoc.cli.check.run", interrupted)
    code, out, err = run(["check", "--demo"], capsys)
    assert code == 130
    assert out == ""
    assert err.splitlines() == ["pcidoc: interrupted"]


# ------------------------------------------------------------------------ clean stdout


def test_json_report_alone_on_stdout_while_writing_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "report.html"
    code, out, err = run(
        ["check", "--json", "--demo", "h100-pcie-nvlink-bridge", "-o", str(target)], capsys
    )
    assert code == 0
    assert json.loads(out)["schema"] == "pcidoc.report/1"
    assert err.splitlines() == [f"pcidoc: wrote {target}"]
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_import_to_a_terminal_prints_one_line_and_suggests_o(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paste = tmp_path / "topo.txt"
    paste.write_text(TOPO, encoding="utf-8")
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    assert main(["import", str(paste)]) == 0
    lines = terminal.getvalue().splitlines()
    assert len(lines) == 1 and "2 GPUs" in lines[0] and "`-o capture.json`" in lines[0]
    # `-o -` asks for the JSON, terminal or not.
    terminal.seek(0)
    terminal.truncate()
    assert main(["import", str(paste), "-o", "-"]) == 0
    assert json.loads(terminal.getvalue())["schema"] == "pcidoc.capture/1"


def test_import_prints_the_capture_on_stdout_and_progress_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paste = tmp_path / "topo.txt"
    paste.write_text(TOPO, encoding="utf-8")
    code, out, err = run(["import", str(paste)], capsys)
    assert code == 0
    capture = json.loads(out)
    assert capture["schema"] == "pcidoc.capture/1"
    assert capture["topology"]["labels"] == ["GPU0", "GPU1"]
    assert err.startswith(f"pcidoc: {paste}: ")
    assert "{" not in err


@pytest.mark.parametrize(
    "argv",
    [["topo", "--json", "--demo"], ["samples", "--json"], ["schema", "report"]],
)
def test_json_commands_print_only_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(argv, capsys)
    assert code == 0
    json.loads(out)
    assert err == ""


# ----------------------------------------------------------------------- version, help


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"pcidoc {__version__}"


@pytest.mark.parametrize("command", [None, *(c.name for c in COMMANDS)])
def test_help_of_every_command(command: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [command, "--help"] if command else ["--help"]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out, err = capsys.readouterr()
    assert exit_info.value.code == 0
    assert out.startswith("usage: pcidoc")
    assert err == ""


# --------------------------------------------------------------------- end to end


def _pcidoc(
    *argv: str, cwd: Path | None = None, env: dict[str, str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    base = os.environ if env is None else env
    env = {k: v for k, v in base.items() if not k.startswith(("PCIDOC_", "NCCL_"))}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "pcidoc", *argv],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_subprocess_bad_inputs_never_show_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("nothing here\n", encoding="utf-8")
    for argv in (
        ["check", "--from", "bad.json"],
        ["import", "notes.txt"],
        ["check", "--demo", "--only", "nope"],
        ["bogus"],
    ):
        done = _pcidoc(*argv, cwd=tmp_path)
        assert done.returncode == 3, (argv, done.stderr)
        assert "Traceback" not in done.stderr, (argv, done.stderr)
        assert done.stdout == "", argv
        assert ": error: " in done.stderr or done.stderr.count("\n") == 1, (argv, done.stderr)


def test_subprocess_json_report_and_exit_code(tmp_path: Path) -> None:
    done = _pcidoc("check", "--json", "--demo", "synthetic-16gpu", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stdout)["worst"] == "fail"
    assert "Traceback" not in done.stderr


# ------------------------------------------------------------- pipes, terminals, next steps


def _pcidoc_piped(argv: list[str], read: int) -> tuple[int, str]:
    """Run pcidoc with stdout into a pipe whose reader takes ``read`` bytes and goes away."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pcidoc", *argv],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(read)
    proc.stdout.close()  # like `| head -c N`: later writes hit a closed pipe
    err = proc.stderr.read().decode()
    return proc.wait(timeout=120), err


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_a_closed_pipe_keeps_the_verdict_exit_code(json_flag: list[str], tmp_path: Path) -> None:
    # synthetic-72gpu prints far more than a pipe buffer holds (the write really fails);
    # synthetic-16gpu's verdict is fail (2), which a closed pipe used to turn into 1.
    for sample in ("synthetic-16gpu", "synthetic-72gpu"):
        verdict = _pcidoc("check", "--json", "--demo", sample, cwd=tmp_path).returncode
        assert verdict in (1, 2)
        code, err = _pcidoc_piped(["check", "--demo", sample, *json_flag], read=20)
        assert code == verdict, (sample, code, err)
        assert "Traceback" not in err and "Exception ignored" not in err, err


def test_piped_check_output_wraps_and_never_cuts_a_line(tmp_path: Path) -> None:
    for columns, width in (("", 100), ("80", 80)):
        env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
        if columns:
            env["COLUMNS"] = columns
        done = _pcidoc("check", "--demo", "synthetic-72gpu", cwd=tmp_path, env=env)
        assert done.returncode in (0, 1, 2), done.stderr
        lines = done.stdout.splitlines()
        assert all(len(line) <= width for line in lines), max(lines, key=len)
        assert not [line for line in lines if line.rstrip().endswith("…")]
        # Every check that found something is printed with its id; skipped ones by topic.
        report = json.loads(
            _pcidoc("check", "--json", "--demo", "synthetic-72gpu", cwd=tmp_path).stdout
        )
        flat = " ".join(done.stdout.split())
        for check in report["checks"]:
            shown = check["id"] if check["severity"] != "skip" else check["id"].split(".")[0]
            assert shown in flat, check["id"]


@pytest.mark.parametrize(
    "argv", [["--demo"], ["--demo", "synthetic-16gpu"], ["--from", "x.json"], []]
)
def test_the_tui_refuses_without_a_terminal_in_one_line(argv: list[str]) -> None:
    # stdin from /dev/null and stdout into a pipe: `pcidoc --demo > out.txt`, `ssh host pcidoc`.
    done = subprocess.run(
        [sys.executable, "-m", "pcidoc", *argv],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3
    assert done.stdout == ""  # no escape codes
    (line,) = done.stderr.splitlines()
    assert "needs a terminal" in line and "pcidoc check" in line and "pcidoc topo" in line


def test_from_with_a_sample_name_points_to_demo(capsys: pytest.CaptureFixture[str]) -> None:
    name = sample_names()[0]
    code, out, err = run(["check", "--from", name], capsys)
    assert_one_line_error(code, out, err, f"--demo {name}")
    code, out, err = run(["topo", "--json", "--from", name], capsys)
    assert_one_line_error(code, out, err, f"--demo {name}")


def test_from_with_raw_nvidia_smi_text_imports_it_on_the_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = tmp_path / "topo.txt"
    raw.write_text(TOPO, encoding="utf-8")
    for argv in (["check"], ["topo"], ["topo", "--json"]):
        code, out, err = run([*argv, "--from", str(raw)], capsys)
        assert code in (0, 1), (argv, err)
        assert "topology: 2 GPUs" in err  # what was read, on stderr
        assert ("GPU1" in out) if argv[0] == "topo" else ("source: import:" in out)


def test_from_with_unrecognisable_text_is_one_line_of_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("nothing here\n", encoding="utf-8")
    code, out, err = run(["check", "--from", str(notes)], capsys)
    assert_one_line_error(code, out, err, "no supported output recognised", "nvidia-smi-topo")


def test_demo_help_does_not_claim_the_most_to_diagnose(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "most to diagnose" not in out and "marks the default" in out


@pytest.fixture
def without_torch(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``import torch`` fails as it does where torch is not installed."""
    package = tmp_path / "hide" / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n", encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PCIDOC_", "NCCL_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "hide"), str(ROOT)])
    return env


def _probe_error(argv: list[str], env: dict[str, str], cwd: Path) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "pcidoc", "probe", *argv, "--json"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 3, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    (error,) = json.loads(done.stdout)["errors"]
    return error


def test_gloo_probes_without_torch_say_so_like_the_cuda_probes(
    without_torch: dict[str, str], tmp_path: Path
) -> None:
    error = _probe_error(
        ["allreduce", "--backend", "gloo", "--ranks", "1"], without_torch, tmp_path
    )
    assert error["kind"] == "unavailable"
    assert error["message"] == f"torch is not installed: {protocol.INSTALL_HINT}"
    cuda = _probe_error(["transfer"], without_torch, tmp_path)
    assert cuda["kind"] == "unavailable" and "ProbeUnavailable" not in cuda["message"]
    assert cuda["message"].endswith(error["message"])


def test_no_cuda_gpu_is_said_before_torch_is_not_installed(
    without_torch: dict[str, str], tmp_path: Path
) -> None:
    from pcidoc.collect.live import collect_live

    if collect_live().gpus:
        pytest.skip("this machine has GPUs")
    error = _probe_error(["p2p"], without_torch, tmp_path)
    assert error["kind"] == "unavailable"
    message = error["message"]
    assert message.startswith("no CUDA GPU on this machine")
    assert message.index("no CUDA GPU") < message.index("torch is not installed")


def test_only_the_command_entry_freezes_the_garbage_collector(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run`` (the console script) freezes the collector before exit to skip its final walk;
    ``main``, which tests and other programs call in long-lived processes, never does."""
    import gc

    import pcidoc.cli as cli

    before = gc.get_freeze_count()
    assert main(["check", "--json", "--demo"]) in (0, 1, 2)
    assert gc.get_freeze_count() == before
    capsys.readouterr()
    monkeypatch.setattr(cli, "main", lambda argv=None: 2)
    try:
        with pytest.raises(SystemExit) as exited:
            cli.run()
        assert exited.value.code == 2
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


# --------------------------------------------------------------------- --from - (stdin)


def _piped(argv: list[str], stdin: str) -> subprocess.CompletedProcess[str]:
    return _pcidoc(*argv, stdin=stdin)


@pytest.mark.parametrize("name", sorted(EXIT_BY_SAMPLE))
def test_check_reads_a_capture_from_standard_input(name: str) -> None:
    """`pcidoc import - -o - | pcidoc check --from -`: the same verdict as from the file."""
    text = sample_path(name).read_text(encoding="utf-8")
    piped = _piped(["check", "--json", "--from", "-"], text)
    assert piped.returncode == EXIT_BY_SAMPLE[name], piped.stderr
    report = json.loads(piped.stdout)
    assert report["source"]["path"] == "<stdin>"
    from_file = json.loads(_piped(["check", "--json", "--from", str(sample_path(name))], "").stdout)
    assert report["checks"] == from_file["checks"]
    topo = _piped(["topo", "--json", "--from", "-"], text)
    assert topo.returncode == 0 and json.loads(topo.stdout)["schema"] == "pcidoc.topology/1"


def test_import_then_check_through_a_pipe() -> None:
    imported = _piped(["import", "-", "-o", "-"], TOPO)
    assert imported.returncode == 0, imported.stderr
    checked = _piped(["check", "--from", "-", "--only", "nvlink.state"], imported.stdout)
    assert checked.returncode in (0, 1), checked.stderr
    assert "nvlink.state" in checked.stdout


def test_tool_output_on_standard_input_is_imported() -> None:
    done = _piped(["check", "--from", "-"], TOPO)
    assert done.returncode in (0, 1), done.stderr
    assert "pcidoc: <stdin>: topology: 2 GPUs" in done.stderr
    assert "nvlink" in done.stdout


def test_the_tui_refuses_a_capture_on_standard_input(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--from", "-"], capsys)
    assert_one_line_error(code, out, err, "--from -", "pcidoc check --from -")


def test_a_terminal_on_standard_input_is_told_what_pcidoc_waits_for(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    class Terminal(io.TextIOWrapper):
        def isatty(self) -> bool:
            return True

    data = sample_path("autodl-2080ti-2gpu").read_bytes()
    monkeypatch.setattr(sys, "stdin", Terminal(io.BytesIO(data)))
    code, out, err = run(["check", "--from", "-"], capsys)
    assert code == 1
    assert "2080 Ti" in out
    assert err.splitlines()[0] == (
        "pcidoc: reading a capture from standard input (paste it, then Ctrl-D)"
    )


def _parse(parser: argparse.ArgumentParser, argv: list[str], capsys: Any) -> tuple[Any, ...]:
    """What a parser makes of a line: the namespace or the exit code, and what it printed."""
    try:
        result: Any = vars(parser.parse_args(argv))
    except SystemExit as exc:
        result = exc.code
    captured = capsys.readouterr()
    return result, captured.out, captured.err


@pytest.mark.parametrize("command", sorted(SUBCOMMAND_NAMES))
def test_the_parser_built_for_one_command_reads_its_line_as_the_full_parser(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``main`` builds only the parser of the command named first; help, errors and results
    must be those of the full parser."""
    lines = [[command], [command, "--help"], [command, "--no-such-option"], [command, "--json"]]
    full, only = build_parser(), build_parser(command)
    for argv in lines:
        assert _parse(only, argv, capsys) == _parse(full, argv, capsys), argv
    assert _parse(full, [command, "--help"], capsys)[1].startswith(f"usage: pcidoc {command}")
    assert set(_choices(only)) < set(_choices(full))


def _choices(parser: argparse.ArgumentParser) -> list[str]:
    return [
        name
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    ]

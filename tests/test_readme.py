"""The README tells the truth: its commands run, its test command is what CI runs, and its
sample table is the bundled samples (``.ci/run`` relies on this file to stay in sync)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from pcidoc.cli import SUBCOMMAND_NAMES, build_parser
from pcidoc.samples import default_demo, sample_names

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.M | re.S)
    assert match, f"README has no '## {title}' section"
    return match.group(1)


def _code_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, re.S)


def test_the_readme_test_command_is_what_ci_runs() -> None:
    quickstart = _section("Quickstart")
    tests = [b.strip() for b in _code_blocks(quickstart) if "pytest" in b]
    assert len(tests) == 1, "the Quickstart must show one test command"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line.strip() for line in ci if "pytest" in line and not line.startswith("#")]
    assert commands == [tests[0]], (commands, tests[0])


def test_the_quickstart_runs_the_installed_script() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'pcidoc = "pcidoc.cli:run"' in pyproject
    quickstart = _section("Quickstart")
    assert any(b.strip().endswith(".venv/bin/pcidoc") for b in _code_blocks(quickstart))


def _example_lines() -> list[str]:
    lines = []
    for block in _code_blocks(_section("What you can do with it")):
        for line in block.splitlines():
            command = line.split("#", 1)[0].strip()
            if command.startswith("pcidoc"):
                lines.append(command)
    assert len(lines) >= 5
    return lines


@pytest.mark.parametrize("line", _example_lines())
def test_every_example_command_parses(line: str) -> None:
    argv = shlex.split(line)[1:]
    parser = build_parser()
    code: object = None
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a usage error exits 3; --help/--version exit 0
        code = exc.code
    assert code in (None, 0), f"README example no longer parses: {line}"
    if code is None and argv and argv[0] in SUBCOMMAND_NAMES:
        # pcidoc's main builds only the parser of the command on the line: same result.
        assert build_parser(argv[0]).parse_args(argv) == args


def test_the_sample_table_lists_the_bundled_samples() -> None:
    table = _section("Bundled sample machines")
    named = set(re.findall(r"`([a-z0-9-]+)`", table)) - {"pcidoc"}
    assert named == set(sample_names())
    assert f"`{default_demo()}` (default demo)" in table


def test_the_quickstart_activates_the_venv_and_explains_the_corpus_skips() -> None:
    from tests.conftest import CORPUS_MISSING

    quickstart = _section("Quickstart")
    assert any(b.strip() == ". .venv/bin/activate" for b in _code_blocks(quickstart))
    # The skip reason pytest prints is the one the README quotes, and it names ../shared.
    quoted = "the real-output corpus\n../shared/realdata is not beside this checkout"
    assert quoted in quickstart
    assert " ".join(quoted.split()) in CORPUS_MISSING and "../shared/realdata" in CORPUS_MISSING

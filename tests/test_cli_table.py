"""The one table of commands (``pcidoc.cli.COMMANDS``) is what the parser, ``--help``, the
dispatch and the docs say: checked against each other here."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pcidoc.cli import COMMANDS, SUBCOMMAND_NAMES, TUI_MODULE, build_parser, command_module

ROOT = Path(__file__).resolve().parent.parent
SHARED = {"__init__", "options", "output", "machine"}
"""The modules of pcidoc/cli that are no command's."""


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return action


def test_the_parser_has_the_table_s_commands_in_its_order() -> None:
    sub = _subcommands(build_parser())
    assert list(sub.choices) == [c.name for c in COMMANDS]
    assert {a.dest: a.help for a in sub._choices_actions} == {c.name: c.help for c in COMMANDS}
    for command in COMMANDS:
        parser = sub.choices[command.name]
        assert parser.description == command.description
        assert parser.prog == f"pcidoc {command.name}"
        debug = [a for a in parser._actions if "--debug" in a.option_strings]
        assert bool(debug) == command.debug, command.name


def test_the_top_level_help_lists_each_command_with_its_help(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one line per command
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    listed = re.findall(r"^    (\S+)\s{2,}(.+)$", capsys.readouterr().out, re.M)
    assert listed == [(c.name, c.help) for c in COMMANDS]


def test_every_command_module_is_a_row_and_every_row_a_module() -> None:
    modules = {p.stem for p in (ROOT / "pcidoc" / "cli").glob("*.py")} - SHARED
    assert modules == {c.module for c in COMMANDS} | {TUI_MODULE}
    assert len({c.module for c in COMMANDS}) == len(COMMANDS)
    assert {c.name for c in COMMANDS} == SUBCOMMAND_NAMES
    for module in modules:
        loaded = command_module(module)
        assert callable(loaded.run), module
        if module != TUI_MODULE:
            assert callable(loaded.add_arguments), module


def test_a_command_is_dispatched_to_its_module(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pcidoc.cli import main

    seen: list[str] = []
    for command in COMMANDS:
        monkeypatch.setattr(
            command_module(command.module),
            "run",
            lambda args, name=command.name: seen.append(name) or 0,
        )
    monkeypatch.setattr(command_module(TUI_MODULE), "run", lambda args: seen.append("") or 0)
    lines = {
        "check": [],
        "nccl-topo": ["-o", "-"],
        "import": ["-"],
        "diff": ["a", "b"],
        "fleet": ["x"],
        "explain": ["x"],
        "schema": ["capture"],
    }
    for command in COMMANDS:
        assert main([command.name, *lines.get(command.name, [])]) == 0
    assert main([]) == 0
    assert seen == [c.name for c in COMMANDS] + [""]
    capsys.readouterr()


_MODULES = """
import io, json, sys, contextlib
from pcidoc.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main({argv!r})
print(json.dumps(sorted(m for m in sys.modules if m.startswith("pcidoc.cli"))))
"""


@pytest.mark.parametrize(
    ("argv", "module"),
    [
        (["check", "--json", "--demo", "synthetic-16gpu"], "check"),
        (["topo", "--json", "--demo", "synthetic-16gpu"], "topo"),
        (["samples"], "samples"),
        (["schema", "fleet"], "schema"),
    ],
)
def test_a_command_imports_its_own_module_only(argv: list[str], module: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _MODULES.format(argv=argv)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stdout.strip().splitlines()[-1]))
    commands = {f"pcidoc.cli.{c.module}" for c in COMMANDS} | {f"pcidoc.cli.{TUI_MODULE}"}
    assert loaded & commands == {f"pcidoc.cli.{module}"}


def _usage() -> str:
    return (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")


def test_the_usage_synopsis_lists_the_table_s_commands() -> None:
    """docs/usage.md opens with one synopsis of every command; each also has its section."""
    synopsis = re.search(r"\A# Using pcidoc\n\n```\n(.*?)```", _usage(), re.S)
    assert synopsis, "docs/usage.md must open with the synopsis block"
    named = {m.group(1) for m in re.finditer(r"^pcidoc ([a-z][a-z-]*)\b", synopsis.group(1), re.M)}
    assert named == SUBCOMMAND_NAMES
    sections = re.findall(r"^## `pcidoc ([a-z][a-z-]*)`", _usage(), re.M)
    assert sorted(sections) == sorted(SUBCOMMAND_NAMES)


def test_the_architecture_page_names_every_command_module() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for command in COMMANDS:
        assert f"{command.module}.py" in text, command.module

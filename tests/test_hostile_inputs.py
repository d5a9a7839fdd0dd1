"""Hostile and broken inputs: bounded time and memory, no terminal injection, strict numbers,
any encoding. Files under ../shared/bad-inputs/ are read at test time (never copied here)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pcidoc.cli import main
from pcidoc.cli.output import ascii_json
from pcidoc.collect.capture import load_capture, save_capture
from pcidoc.collect.importers import import_paths, import_texts
from pcidoc.errors import PcidocError
from pcidoc.fileio import decode_text
from pcidoc.model.cpulist import MAX_CPUS, out_of_range, parse_cpulist, parse_cpumask
from pcidoc.sanitize import clean_data, clean_line, clean_text, has_controls
from tests.builders import machine
from tests.importers.test_query import FULL as QUERY
from tests.importers.test_topo import MODERN_TAB

BAD = Path(__file__).resolve().parents[2] / "shared" / "bad-inputs"
needs_bad = pytest.mark.skipif(not BAD.is_dir(), reason="../shared/bad-inputs not present")

# Every family of sequence a terminal would act on, 7-bit and 8-bit.
SEQUENCES = [
    "\x1b]0;pwned-title\x07",  # OSC ended by BEL
    "\x1b]2;pwned\x1b\\",  # OSC ended by ST
    "\x1b]52;c;cHduZWQ=\x1b\\",  # OSC 52: clipboard write
    "\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\",  # hyperlink
    "\x1bc",  # full reset
    "\x1b(0",  # DEC line drawing charset
    "\x1b#8",  # DECALN screen fill
    "\x1b7\x1b8",  # save/restore cursor
    "\x1bP+q544e\x1b\\",  # DCS (XTGETTCAP query)
    "\x1b_apc\x1b\\",  # APC
    "\x1b^pm\x1b\\",  # PM
    "\x1bXsos\x1b\\",  # SOS
    "\x1b[2J\x1b[H",  # CSI clear
    "\x1b[?1049h",  # CSI private mode
    "\x9b31m",  # 8-bit CSI
    "\x9d0;x\x9c",  # 8-bit OSC with 8-bit ST
    "\x90q\x9c",  # 8-bit DCS
    "\x1b]0;unterminated",  # unterminated OSC
    "\x1b",  # lone ESC
    "\r",  # carriage return (overwrites the line)
    "\x08\x08",  # backspaces
    "\x07",  # BEL
    "\x7f",  # DEL
    "\u202e",  # right-to-left override
]


def _terminal_safe(text: str) -> bool:
    return not any((ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F for c in text)


@pytest.mark.parametrize("sequence", SEQUENCES)
def test_every_control_sequence_is_removed(sequence: str) -> None:
    text = f"NVIDIA H100{sequence} 80GB"
    for cleaned in (clean_text(text), clean_line(text)):
        assert _terminal_safe(cleaned)
        assert "\u202e" not in cleaned
        assert cleaned.startswith("NVIDIA H100") and not has_controls(cleaned)
        assert "pwned" not in cleaned or sequence == "\x1b]0;unterminated"


def test_clean_text_keeps_lines_and_tabs_and_clean_line_joins() -> None:
    assert clean_text("a\tb\r\nc\n") == "a\tb\nc\n"
    assert clean_line("a\tb\nc") == "a b c"
    assert clean_text("plain ascii") == "plain ascii"
    assert clean_text("ünïcode — ok") == "ünïcode — ok"


def test_clean_data_cleans_keys_and_values_and_keeps_clean_objects() -> None:
    clean = {"a": [1, "x", {"b": None}]}
    assert clean_data(clean) is clean
    dirty = {"na\x1b[31mme": ["GPU\x1b]0;x\x07", 2.5], "ok": "fine"}
    assert clean_data(dirty) == {"name": ["GPU", 2.5], "ok": "fine"}


@needs_bad
def test_escape_query_paste_imports_without_any_sequence(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["import", str(BAD / "esc-query.txt")]) == 0
    captured = capsys.readouterr()
    for stream in (captured.out, captured.err):
        assert "\x1b" not in stream and "\\u001b" not in stream and "\x07" not in stream
    data = json.loads(captured.out)
    assert data["gpus"][0]["name"].startswith("NVIDIA H800")
    assert "pwned" not in data["gpus"][0]["name"]


def test_sequences_in_json_escapes_of_a_capture_are_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = save_capture(machine(2, link="NV4"), tmp_path / "c.json")
    data = json.loads(path.read_text())
    data["gpus"][0]["name"] = "H100\x1b]0;pwned\x07\x1b]52;c;eA==\x1b\\\x1bc\x9b2J"
    data["nics"] = []
    data["host"]["processes"] = [{"pid": 1, "name": "x\x1b[?1049h", "gpus": [0]}]
    path.write_text(json.dumps(data))  # json.dumps writes the ESC as \u001b
    assert "\\u001b" in path.read_text()
    loaded = load_capture(path)
    assert loaded.gpus[0].name == "H100"
    assert loaded.host.processes[0].name == "x"
    for argv in (["topo"], ["check"], ["check", "--json"], ["topo", "--json"]):
        main([*argv, "--from", str(path)])
        out = capsys.readouterr()
        assert _terminal_safe(out.out) and _terminal_safe(out.err)


def test_file_names_with_sequences_do_not_reach_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "topo\x1b]0;pwned\x07.txt"
    path.write_text(MODERN_TAB)
    assert main(["import", str(path)]) == 0
    out = capsys.readouterr()
    assert _terminal_safe(out.err) and _terminal_safe(out.out)
    capture = tmp_path / "cap\x1b]0;pwned\x07.json"
    save_capture(machine(2, link="NV4"), capture)
    for argv in (["check"], ["topo"], ["check", "--json"]):
        main([*argv, "--from", str(capture)])
        out = capsys.readouterr()
        assert _terminal_safe(out.out) and _terminal_safe(out.err), argv
    missing = tmp_path / "nope\x1bc.json"
    assert main(["check", "--from", str(missing)]) == 3
    assert _terminal_safe(capsys.readouterr().err)


def test_rich_markup_in_untrusted_text_prints_literally(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap = machine(2, link="NV4")
    cap.gpus[0].name = "[bold red]H100[/] [link=http://x]y[/link]"
    path = save_capture(cap, tmp_path / "m.json")
    main(["topo", "--from", str(path)])
    assert "[bold red]H100[/]" in capsys.readouterr().out


# ------------------------------------------------------------------------------ bounds


def test_cpulist_expansion_is_bounded() -> None:
    assert parse_cpulist("0-999999999") is None
    assert parse_cpulist(f"0-{MAX_CPUS}") is None
    assert parse_cpulist(f"0-{MAX_CPUS - 1}") == frozenset(range(MAX_CPUS))
    assert parse_cpulist("1" * 40) is None
    assert parse_cpulist("0-23,48-71") == frozenset([*range(24), *range(48, 72)])
    assert parse_cpumask("f" * 100000) is None
    assert parse_cpumask("ff,ffffffff") == frozenset(range(40))
    assert out_of_range("0-999999999") and out_of_range("0-3,8192")
    assert not out_of_range("0-23,48-71") and not out_of_range("-31,64-95")


def _limited(
    code: str, memory_mb: int = 1024, timeout: int = 120, stdin: str | None = None
) -> subprocess.CompletedProcess:
    """Run ``code`` in a child whose address space is capped (RLIMIT_AS)."""
    prologue = textwrap.dedent(
        f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, ({memory_mb} << 20, {memory_mb} << 20))
        """
    )
    with open(stdin or os.devnull, "rb") as source:
        return subprocess.run(
            [sys.executable, "-c", prologue + textwrap.dedent(code)],
            stdin=source,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


@needs_bad
def test_evil_cpu_range_imports_in_bounded_memory() -> None:
    done = _limited(
        f"""
        from pcidoc.collect.importers import import_paths
        from pcidoc import doctor
        from pcidoc.model.report import ReportSource
        result = import_paths([{str(BAD / "evil-topo.txt")!r}])
        cap = result.capture
        print(len(cap.gpus), cap.gpus[0].cpu_affinity)
        print([w for w in result.warnings if "CPU" in w or "cpu" in w][:1])
        report = doctor.run(cap, ReportSource(kind="import"), generated_at="2026-01-01T00:00:00Z")
        print("checked", len(report.checks))
        """,
        memory_mb=1024,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    first = done.stdout.splitlines()[0]
    assert first == "2 None"
    assert "no Linux machine has" in done.stdout.splitlines()[1]
    assert "checked" in done.stdout


def test_huge_inputs_stop_early_in_bounded_memory(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse.json"
    with open(sparse, "wb") as handle:
        handle.truncate(2 * 10**9)  # 2 GB of zeros, no disk used
    spaces = tmp_path / "spaces.json"
    with open(spaces, "wb") as handle:
        handle.truncate(400 * 2**20)
    with open(spaces, "r+b") as handle:
        handle.write(b"{" + b" " * 100)
    zero_bomb = tmp_path / "zeros.txt.gz"
    with gzip.open(zero_bomb, "wb", compresslevel=1) as handle:
        for _ in range(8):
            handle.write(b"\0" * (1 << 20))
    endless = tmp_path / "endless.txt.gz"  # 300 MiB of text lines in 1.3 MB
    with gzip.open(endless, "wb", compresslevel=1) as handle:
        block = b"GPU0 X\n" * (1 << 17)
        for _ in range(300):
            handle.write(block)
    cases = [
        (["check", "--from", str(sparse)], "larger than 256 MiB", None),
        (["check", "--from", "/dev/zero"], "not a text file", None),
        (["check", "--from", str(spaces)], "larger than", None),
        (["check", "--from", str(endless)], "larger than", None),
        (["import", "/dev/zero"], "not a text file", None),
        (["import", "-"], "not a text file", "/dev/zero"),
        (["import", str(zero_bomb)], "not a text file", None),
        (["import", str(endless)], "larger than", None),
        (["import", str(sparse)], "larger than", None),
    ]
    # One child with a 900 MiB address-space limit runs every case (a MemoryError or an
    # OOM kill would show as a missing or wrong line).
    done = _limited(
        f"""
        import contextlib, io, json, sys
        from pcidoc.cli import main
        for argv, _, stdin in {cases!r}:
            err = io.StringIO()
            if stdin:
                sys.stdin = io.TextIOWrapper(open(stdin, "rb"))
            with contextlib.redirect_stderr(err):
                code = main(argv)
            print(json.dumps([code, err.getvalue()]))
        """,
        memory_mb=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) == len(cases)
    for (argv, expected, _), line in zip(cases, lines, strict=True):
        code, err = json.loads(line)
        assert code == 3, (argv, err)
        assert expected in err and err.count("\n") == 1, (argv, err)


def test_gzip_paste_still_imports(tmp_path: Path) -> None:
    path = tmp_path / "topo.txt.gz"
    path.write_bytes(gzip.compress(MODERN_TAB.encode()))
    assert len(import_paths([str(path)]).capture.gpus) == 4


def test_matrices_naming_huge_device_counts_are_bounded() -> None:
    n = 5_000
    rows = "\n".join(f"{i} 1.0" for i in range(n))
    nvbandwidth = (
        "nvbandwidth Version: v0.4\nRunning device_to_device_memcpy_read_ce.\n"
        "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)\n           0\n" + rows + "\n"
    )
    p2p_rows = "\n".join(f"     {i}  1.00" for i in range(n))
    p2p = (
        "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\n"
        "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n   D\\D     0\n" + p2p_rows + "\n"
    )
    topo_rows = "\n".join(f"GPU{i}\tX" for i in range(n))
    topo = "$ nvidia-smi topo -m\n" + topo_rows + "\n"
    status = "$ nvidia-smi topo -p2p r\n" + "\n".join(f" GPU{i}\tX" for i in range(n)) + "\n"
    for text in (nvbandwidth, p2p, topo, status):
        result = import_texts([("big.txt", text)])
        assert len(result.capture.gpus) <= 2048
        assert any("more than" in w for w in result.warnings)


# ---------------------------------------------------------------------------- numbers


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_in_a_capture_are_refused(tmp_path: Path, constant: str) -> None:
    cap = machine(2, link="NV4")
    cap.host.uptime_s = 12.5
    text = save_capture(cap, tmp_path / "ok.json").read_text()
    bad = tmp_path / "bad.json"
    bad.write_text(text.replace('"uptime_s": 12.5', f'"uptime_s": {constant}'))
    with pytest.raises(PcidocError) as info:
        load_capture(bad)
    assert constant.lstrip("-") in info.value.message and "line" in info.value.message
    assert "\n" not in info.value.message


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "1e999"])
def test_non_finite_numbers_in_a_trace_never_reach_the_capture(constant: str) -> None:
    import re

    from tests.importers.test_fuzz import _trace

    text, count = re.subn(r'"ts": [0-9.]+', f'"ts": {constant}', _trace(), count=3)
    assert count == 3
    try:
        result = import_texts([("trace.json", text)])
    except PcidocError:
        return
    dumped = result.capture.model_dump_json(by_alias=True)
    assert type(result.capture).model_validate_json(dumped) == result.capture


def test_capture_and_report_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = save_capture(machine(2, link="NV4"), tmp_path / "c.json")
    again = save_capture(load_capture(path), tmp_path / "again.json")
    assert load_capture(again) == load_capture(path)
    report = tmp_path / "report.json"
    assert main(["check", "--from", str(path), "-o", str(report)]) in (0, 1, 2)
    assert load_capture(report) == load_capture(path)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "abc"])
def test_interval_must_be_a_finite_number(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--interval", value, "--demo"])
    assert info.value.code == 3
    assert "--interval" in capsys.readouterr().err


def test_interval_nan_is_refused_by_the_tui_entry_too() -> None:
    import argparse

    from pcidoc.cli.tui import run as cmd_tui

    with pytest.raises(PcidocError, match=r"at least 0\.2"):
        cmd_tui(argparse.Namespace(interval=float("nan"), from_file=None, demo=""))


# --------------------------------------------------------------------------- encodings


def test_utf16_and_bom_pastes_import(tmp_path: Path) -> None:
    for name, data in (
        ("le-bom.txt", MODERN_TAB.replace("\n", "\r\n").encode("utf-16")),
        ("be-bom.txt", b"\xfe\xff" + MODERN_TAB.encode("utf-16-be")),
        ("le-nobom.txt", MODERN_TAB.encode("utf-16-le")),
        ("utf8-bom.txt", b"\xef\xbb\xbf" + MODERN_TAB.encode()),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        assert len(import_paths([str(path)]).capture.gpus) == 4, name


def test_utf16_capture_loads(tmp_path: Path) -> None:
    text = save_capture(machine(2, link="NV4"), tmp_path / "c.json").read_text()
    path = tmp_path / "ps.json"
    path.write_bytes(text.encode("utf-16"))
    assert len(load_capture(path).gpus) == 2
    assert decode_text(b"\xef\xbb\xbf{}", "x") == "{}"


def test_ascii_json_round_trips() -> None:
    value = {"name": "H100 — 80GB ✓ 𝔾", "x": [1.5, None]}
    text = json.dumps(value, ensure_ascii=False)
    escaped = ascii_json(text)
    assert escaped.isascii()
    assert json.loads(escaped) == value


@pytest.mark.parametrize(
    "env",
    [{"PYTHONIOENCODING": "latin-1"}, {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}],
    ids=["latin-1", "C-locale"],
)
def test_non_utf8_stdout(env: dict[str, str], tmp_path: Path) -> None:
    cap = machine(2, link="NV4")
    cap.gpus[0].name = "H100 — ünïcode ✓"
    path = save_capture(cap, tmp_path / "c.json")
    full_env = {**os.environ, **env}
    for argv in (["check", "--json"], ["topo", "--json"], ["check"], ["topo"]):
        done = subprocess.run(
            [sys.executable, "-m", "pcidoc", *argv, "--from", str(path)],
            capture_output=True,
            env=full_env,
            timeout=120,
        )
        assert done.returncode in (0, 1, 2), (argv, done.stderr[-800:])
        assert b"Traceback" not in done.stderr
        if "--json" in argv:
            assert done.stdout.isascii()
            data = json.loads(done.stdout)
            gpus = data["machine"]["gpus"] if "machine" in data else data["gpus"]
            assert gpus[0]["name"] == "H100 — ünïcode ✓"


def test_query_paste_with_crlf_and_controls_still_parses() -> None:
    text = QUERY.replace("\n", "\r\n").replace("Product Name", "Product\x1b[0m Name", 1)
    result = import_texts([("q.txt", text)])
    assert result.capture.gpus and all(_terminal_safe(g.name or "") for g in result.capture.gpus)


def test_pastes_are_read_up_to_a_line_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import pcidoc.collect.importers as importers

    monkeypatch.setattr(importers, "MAX_PASTE_LINES", 50)
    text = MODERN_TAB + "noise\n" * 100 + QUERY
    result = import_texts([("long.txt", text)])
    assert any("more than 50 lines" in w for w in result.warnings)
    assert "nvidia-smi-query" not in result.capture.origin.sources[0].formats
    assert len(result.capture.gpus) == 4


# ----------------------------------------------------------- digits int() does not read
# str.isdigit() is True for superscripts and other digit signs ("²", "①") that int() rejects:
# a check written `if s.isdigit(): int(s)` turned such a character into an internal error.

_NOT_INT_DIGITS = ["²", "①", "3²"]


@pytest.mark.parametrize("digits", _NOT_INT_DIGITS)
def test_a_topo_paste_with_digit_signs_in_the_numa_column_imports(digits: str) -> None:
    text = (
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
        f"GPU0\t X \tNV4\t0-15\t{digits}\n"
        f"GPU1\tNV4\t X \t0-15\t{digits}\n"
    )
    capture = import_texts([("paste.txt", text)]).capture
    assert [g.numa_node for g in capture.gpus] == [None, None]
    assert "unreadable NUMA affinity" in (capture.gpus[0].why("numa_node") or "")


@pytest.mark.parametrize("digits", _NOT_INT_DIGITS)
@pytest.mark.parametrize("variable", ["COLUMNS", "LINES", "SOURCE_DATE_EPOCH"])
def test_digit_signs_in_the_environment_are_ignored(
    variable: str, digits: str, tmp_path: Path
) -> None:
    env = {**os.environ, variable: digits}
    done = subprocess.run(
        [sys.executable, "-m", "pcidoc", "check", "--demo", "h800-8gpu-hgx"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode in (0, 1, 2), done.stderr
    assert "internal error" not in done.stderr


def test_labels_with_digit_signs_are_not_gpu_numbers_in_the_tui() -> None:
    from pcidoc.tui.matrix_grid import _gpu_of
    from pcidoc.tui.panes.topology import _gpu_index

    for label in ("GPU²", "GPU①", "GPU1²"):
        assert _gpu_of(label) is None and _gpu_index(label) is None
    assert _gpu_of("GPU12") == 12 and _gpu_index("GPU12") == 12


# ------------------------------------------------- skipping the walk of clean JSON documents


def _risky_chars() -> list[str]:
    return (
        [chr(c) for c in range(0x20)]
        + [chr(c) for c in range(0x7F, 0xA0)]
        + list(
            "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029"
        )
    )


@pytest.mark.parametrize("ascii_only", [True, False], ids=["escaped", "raw"])
def test_json_with_any_character_clean_line_changes_is_not_called_clean(ascii_only: bool) -> None:
    from pcidoc.sanitize import json_bytes_are_clean, json_text_is_clean

    for char in _risky_chars():
        text = json.dumps({"gpus": [{"name": f"A{char}B"}]}, ensure_ascii=ascii_only)
        assert not json_text_is_clean(text), repr(char)
        assert not json_bytes_are_clean(text.encode("utf-8", "surrogatepass")), repr(char)


def test_json_called_clean_never_holds_a_string_clean_line_would_change() -> None:
    import random

    from pcidoc.sanitize import json_bytes_are_clean, json_text_is_clean

    rng = random.Random(20261124)
    pool = _risky_chars() + list('ab\\"/ é→🙂\u00a0\u3000') + [chr(0xD7FF), chr(0xFFFD)]
    checked = called_clean = 0
    for _ in range(20000):
        value = "".join(rng.choice(pool) for _ in range(rng.randint(0, 6)))
        for ascii_only in (True, False):
            text = json.dumps({value: [value]}, ensure_ascii=ascii_only)
            checked += 1
            # The bytes of a file: clean exactly when the text is ASCII and clean.
            raw = text.encode("utf-8", "surrogatepass")
            assert json_bytes_are_clean(raw) == (text.isascii() and json_text_is_clean(text))
            if json_text_is_clean(text):
                called_clean += 1
                assert clean_line(value) == value, repr(value)
                assert clean_data(json.loads(text)) == json.loads(text)
    assert checked == 40000 and called_clean > 1000  # both outcomes were exercised


def test_loading_a_capture_with_controls_still_cleans_it(tmp_path: Path) -> None:
    data = json.loads(save_capture(machine(2, link="NV4"), tmp_path / "ok.json").read_text())
    data["gpus"][0]["name"] = "NVIDIA\x1b]0;pwned\x07 H100\u202e"
    for ascii_only in (True, False):
        path = tmp_path / f"evil-{ascii_only}.json"
        path.write_text(json.dumps(data, ensure_ascii=ascii_only), encoding="utf-8")
        assert load_capture(path).gpus[0].name == "NVIDIA H100"


def test_raw_controls_in_json_text_are_not_called_clean_even_if_the_parser_would_refuse() -> None:
    from pcidoc.sanitize import json_text_is_clean

    for char in _risky_chars():
        if char in "\t\n\r":
            continue  # JSON whitespace outside strings
        assert not json_text_is_clean('{"name": "A' + char + 'B"}'), repr(char)
    assert json_text_is_clean('{\n\t"name": "A B"\r\n}')


# ------------------------------------------------------------- issue 23: bounded readers


def _check_codes(files: list[Path], memory_mb: int, command: str = "check") -> list[list]:
    """``pcidoc COMMAND --from FILE`` for each file in one child with a capped address space:
    [exit code, stderr] per file."""
    done = _limited(
        f"""
        import contextlib, io, json
        from pcidoc.cli import main
        for path in {[str(f) for f in files]!r}:
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = main([{command!r}, "--from", path])
            print(json.dumps([code, err.getvalue()]))
        """,
        memory_mb=memory_mb,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_failing_validation_costs_about_the_file_not_300_times_it(tmp_path: Path) -> None:
    """Validating the JSON text copied the whole object into every "missing field" error:
    700 KB of empty lists in an unknown field took ~230 MB, 700 KB of empty GPU objects more.
    Under the container limit, so that the parse-then-validate path is what is tested."""
    lists = tmp_path / "lists.json"
    block = "[" + ",".join(["[]"] * 4_000) + "]"
    lists.write_text('{"schema":"pcidoc.capture/1","x":[' + ",".join([block] * 60) + "]}")
    gpus = tmp_path / "gpus.json"
    gpus.write_text('{"schema":"pcidoc.capture/1","gpus":[' + ",".join(["{}"] * 240_000) + "]}")
    (lists_code, lists_err), (gpus_code, gpus_err) = _check_codes([lists, gpus], memory_mb=200)
    assert lists_code == 3 and "origin: Field required" in lists_err, lists_err
    # 240,000 GPUs: refused by their count before any validation error is built.
    assert gpus_code == 3 and "240,000 items" in gpus_err and gpus_err.count("\n") == 1, gpus_err


def test_too_many_containers_are_refused_before_parsing(tmp_path: Path) -> None:
    """5 MB of ``"gpus":[{},...]`` took 2.4 GB; 10 MB of ``[[],...]`` 3.2 GB."""
    gpus = tmp_path / "gpus.json"
    gpus.write_text('{"schema":"pcidoc.capture/1","gpus":[' + ",".join(["{}"] * 1_700_000) + "]}")
    lists = tmp_path / "lists.json"
    lists.write_text('{"schema":"pcidoc.capture/1","x":[' + ",".join(["[]"] * 3_300_000) + "]}")
    for code, err in _check_codes([gpus, lists], memory_mb=300):
        assert code == 3 and "JSON objects and arrays" in err and err.count("\n") == 1, err


def test_too_many_values_are_refused_before_parsing(tmp_path: Path) -> None:
    """80 MB of topology labels (found by the fuzz run) took 800 MB and 11 s to parse."""
    labels = tmp_path / "labels.json"
    names = ",".join(f'"GPU{i % 1000}"' for i in range(5_000_000))
    labels.write_text('{"schema":"pcidoc.capture/1","topology":{"labels":[' + names + "]}}")
    [[code, err]] = _check_codes([labels], memory_mb=300)
    assert code == 3 and "JSON values" in err and err.count("\n") == 1, err


def test_a_giant_string_is_refused_before_parsing(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_text('{"schema":"pcidoc.capture/1","host":{"hostname":"' + "A" * (40 << 20) + '"}}')
    [[code, err]] = _check_codes([big], memory_mb=300)
    assert code == 3 and "string longer than" in err, err


def test_a_long_array_of_numbers_is_not_taken_for_a_giant_string() -> None:
    from pcidoc.collect.capture import MAX_STRING_CHARS, _check_size_shape

    numbers = b'{"a":"x","m":[' + b"1.5," * (MAX_STRING_CHARS // 2) + b"1]}"
    _check_size_shape(numbers, "x.json")  # no error


def test_duplicate_keys_are_refused_not_last_one_wins(tmp_path: Path) -> None:
    base = json.loads(Path(sample_file("a100-sxm4-8gpu-nvswitch")).read_text())
    text = json.dumps(base)
    twice = text.replace('"gpus":', '"gpus": [], "gpus":', 1)
    assert twice != text
    for name, body in (
        ("dup.json", twice),
        ("dup-nested.json", text.replace('"index":', '"index": 7, "index":', 1)),
    ):
        path = tmp_path / name
        path.write_text(body)
        with pytest.raises(PcidocError, match="appears twice"):
            load_capture(path)
    spaced = tmp_path / "spaced.json"  # whitespace between a key and its colon
    spaced.write_text(text.replace('"gpus":', '"gpus" : [], "gpus" :', 1))
    with pytest.raises(PcidocError, match="appears twice"):
        load_capture(spaced)
    # An escaped quote before a colon inside a string is not a key.
    quoted = tmp_path / "quoted.json"
    base["host"]["hostname"] = 'a\\":b'
    quoted.write_text(json.dumps(base))
    assert load_capture(quoted).host.hostname == 'a\\":b'


def sample_file(name: str) -> str:
    from pcidoc.samples import sample_path

    return str(sample_path(name))


def test_a_5000_digit_integer_is_a_bad_input_not_an_internal_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = Path(sample_file("a100-sxm4-8gpu-nvswitch")).read_text()
    path = tmp_path / "digits.json"
    path.write_text(text.replace('"index": 0', '"index": ' + "9" * 5000, 1))
    assert '"index": 9999' in path.read_text()
    assert main(["check", "--from", str(path)]) == 3
    err = capsys.readouterr().err
    assert "internal error" not in err and err.count("\n") == 1, err


@pytest.mark.parametrize(
    ("labels", "rows"), [(3024, 24), (30, 2), (3, 4)], ids=["3024-over-24", "30-over-2", "3-over-4"]
)
def test_labels_must_match_the_matrix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], labels: int, rows: int
) -> None:
    data = json.loads(Path(sample_file("a100-sxm4-8gpu-nvswitch")).read_text())
    data["topology"]["labels"] = [f"GPU{i}" for i in range(labels)]
    data["topology"]["links"] = [["X"] * rows for _ in range(rows)]
    path = tmp_path / "shape.json"
    path.write_text(json.dumps(data))
    for command in (["check", "--from", str(path)], ["topo", "--from", str(path), "--json"]):
        assert main(command) == 3
        err = capsys.readouterr().err
        assert "names but a" in err and err.count("\n") == 1, err


def test_ragged_p2p_matrix_is_refused(tmp_path: Path) -> None:
    data = json.loads(Path(sample_file("a100-sxm4-8gpu-nvswitch")).read_text())
    data["p2p"] = {"gpus": [0, 1], "matrices": {"read": [["OK", "OK"], ["OK"]]}}
    path = tmp_path / "p2p.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PcidocError, match=r"p2p\.matrices\.read"):
        load_capture(path)


def test_overlapping_cpu_ranges_are_refused_before_expansion() -> None:
    """``"0-8191,"`` 200,000 times: 49 s of set updates in `check`."""
    assert parse_cpulist("0-8191," * 3000 + "0") is None
    assert parse_cpulist(",".join(["0-4095", "4096-8191"])) == frozenset(range(MAX_CPUS))


def test_nvlink_count_in_an_nccl_topology_is_bounded() -> None:
    from pcidoc.collect.importers.nccl_topo_xml import MAX_NVLINKS_PER_GPU

    xml = textwrap.dedent(
        """\
        <system version="1">
          <cpu numaid="0" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel">
            <pci busid="0000:18:00.0" class="0x030200" vendor="0x10de" device="0x2330"
                 link_speed="32.0 GT/s PCIe" link_width="16">
              <gpu dev="0" sm="90" rank="0" gdr="1">
                <nvlink target="0000:19:00.0" count="100000" tclass="0x030200"/>
              </gpu>
            </pci>
            <pci busid="0000:19:00.0" class="0x030200" vendor="0x10de" device="0x2330"
                 link_speed="32.0 GT/s PCIe" link_width="16">
              <gpu dev="1" sm="90" rank="1" gdr="1">
                <nvlink target="0000:18:00.0" count="18" tclass="0x030200"/>
              </gpu>
            </pci>
          </cpu>
        </system>
        """
    )
    result = import_texts([("topo.xml", xml)])
    links = [len(g.nvlinks) for g in result.capture.gpus]
    assert max(links) <= MAX_NVLINKS_PER_GPU and links[1] == 18
    assert any("NVLinks" in w for w in result.warnings)


@needs_bad
def test_nvlink_count_file_imports_in_bounded_memory() -> None:
    done = _limited(
        f"""
        from pcidoc.collect.importers import import_paths
        result = import_paths([{str(BAD / "nvlink-count.xml")!r}])
        print(max(len(g.nvlinks) for g in result.capture.gpus))
        """,
        memory_mb=400,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[0]) <= 64


def test_file_names_that_are_not_utf8_import_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``import $'x\\x9b.txt'`` ended in PydanticSerializationError (a lone surrogate cannot be
    written as JSON)."""
    paste = os.path.join(os.fsencode(tmp_path), b"x\x9b.txt")
    Path(os.fsdecode(paste)).write_text(MODERN_TAB)
    out = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"c\x9b.json"))
    assert main(["import", os.fsdecode(paste), "-o", out]) == 0
    data = json.loads(Path(out).read_text(encoding="utf-8"))
    assert data["origin"]["sources"][0]["path"].endswith("x\ufffd.txt")
    report = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"r\x9b.md"))
    assert main(["check", "--from", out, "-o", report]) in (0, 1, 2)
    err = capsys.readouterr().err
    assert "internal error" not in err and "\udc9b" not in err


# ------------------------------------------------------ issue 23: launcher environment


def _slurm(**extra: str) -> dict[str, str]:
    return {"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "gpu[1-2]", **extra}


def test_node_list_products_are_bounded_before_expansion() -> None:
    """Each range was capped, not their product: a[1-100000]b[1-100000] is 10^10 names."""
    from pcidoc.probes.launch import MAX_NODES, expand_hostlist, launch_env

    for text in ("a[1-100000]b[1-100000]", "a[1-1000]b[1-1000]", "x[1-60000],y[1-60000]"):
        with pytest.raises(ValueError, match="more than"):
            expand_hostlist(text)
    assert len(expand_hostlist("r[1-4]n[01-25]")) == 100
    assert len(expand_hostlist(f"n[1-{MAX_NODES}]")) == MAX_NODES
    with pytest.raises(PcidocError, match="more than") as info:
        launch_env(_slurm(SLURM_JOB_NODELIST="a[1-100000]b[1-100000]"))
    assert "\n" not in str(info.value)


def test_tasks_per_node_repeat_is_bounded() -> None:
    from pcidoc.probes.launch import expand_tasks_per_node, launch_env

    with pytest.raises(PcidocError) as info:
        launch_env(_slurm(SLURM_TASKS_PER_NODE="1(x9999999999)"))
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError):
        expand_tasks_per_node("1(x200000)")
    assert expand_tasks_per_node("2(x3),1") == [2, 2, 2, 1]


@pytest.mark.parametrize("value", ["\u0661", "\uff11", "\u0967", "1" * 40])
def test_rank_and_world_take_ascii_integers_only(value: str) -> None:
    """int() accepts Arabic-Indic and full-width digits and 4,000-digit numbers."""
    from pcidoc.probes.launch import launch_env

    env = {"RANK": value, "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "29500"}
    with pytest.raises(PcidocError, match="RANK") as info:
        launch_env(env)
    assert "\n" not in str(info.value)


def test_a_huge_world_size_is_one_line_not_a_torch_traceback() -> None:
    from pcidoc.probes.launch import launch_env

    env = {"RANK": "0", "WORLD_SIZE": "99999999999", "MASTER_ADDR": "h", "MASTER_PORT": "1"}
    with pytest.raises(PcidocError, match="world size") as info:
        launch_env(env)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------ issue 23: names rendered


EVIL_NAMES = [
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "[x](javascript:alert(1))",
    "<style>body{display:none}</style>",
    "@everyone",
    "a|b|c",
    "\x1b]0;PWNED\x07node",
]


def _fleet_of(tmp_path: Path, names: list[str]) -> list[Path]:
    base = json.loads(Path(sample_file("a100-sxm4-8gpu-nvswitch")).read_text())
    files = []
    for i, name in enumerate(names):
        base["host"]["hostname"] = name
        base["gpus"][0]["name"] = name
        path = tmp_path / f"n{i}.json"
        path.write_text(json.dumps(base))
        files.append(path)
    return files


def test_fleet_markdown_escapes_every_name(tmp_path: Path) -> None:
    files = _fleet_of(tmp_path, EVIL_NAMES)
    out = tmp_path / "fleet.md"
    assert main(["fleet", *map(str, files), "-o", str(out)]) in (0, 1, 2)
    text = out.read_text(encoding="utf-8")
    for raw in ("<img", "<svg", "<style", "\x1b", "\x07"):
        assert raw not in text, raw
    import re

    assert not re.search(r"(?<!\\)\]\(javascript", text)  # an escaped "]" makes no link
    assert "@everyone" not in text.replace("\\@everyone", "")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "worst" not in line]
    node_rows = [r for r in rows if r.count(" | ") >= 3]
    for row in node_rows:  # an escaped "|" does not open a cell
        cells = [c for c in row.replace("\\|", "").split("|")]
        assert len(cells) in (4, 6, 7), row


def test_file_names_with_escapes_are_clean_in_fleet_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fleet --names file` printed a capture named $'\\e]0;PWNED\\a.json' raw: the pane title
    changed. The same names feed the TUI's fleet screen."""
    from pcidoc.fleet.analyze import analyse

    base = Path(sample_file("a100-sxm4-8gpu-nvswitch")).read_text()
    folder = tmp_path / "fleet"
    folder.mkdir()
    (folder / "\x1b]0;PWNED\x07a.json").write_text(base)
    (folder / "\x1b[2Jb.json").write_text(base)
    assert main(["fleet", str(folder), "--names", "file"]) in (0, 1, 2)
    out, err = capsys.readouterr()
    assert _terminal_safe(out) and _terminal_safe(err)
    report = analyse([str(folder)], names="file")
    assert sorted(n.name for n in report.nodes) == ["a", "b"]  # the sequences are gone


# ------------------------------------------- issue 23: every bad input, bounded resources

BOUND_MEMORY_MB = 1024
BOUND_CPU_S = 20
"""Per command, in a child: an address-space limit and a CPU-time limit (RLIMIT_CPU, so a
loaded machine does not make the test flaky the way a wall-clock assertion would)."""


def _bad_commands() -> list:
    if not BAD.is_dir():
        return [pytest.param(None, None, marks=pytest.mark.skip(reason="no ../shared"))]
    cases = []
    for path in sorted(BAD.iterdir()):
        if path.name == "README.md" or not path.is_file():
            continue
        if path.suffix == ".json":
            commands = [["check", "--from"], ["topo", "--from"], ["nccl-topo", "--from"]]
        else:
            commands = [["import"]]
        for command in commands:
            cases.append(pytest.param(path.name, command, id=f"{command[0]}-{path.name}"))
    return cases


@pytest.mark.parametrize(("name", "command"), _bad_commands())
def test_every_bad_input_runs_in_bounded_memory_and_cpu(
    tmp_path: Path, name: str, command: list[str]
) -> None:
    argv = [*command, str(BAD / name)]
    if command[0] in ("import", "nccl-topo"):
        argv += ["-o", str(tmp_path / "out")]
    limits = (
        "import resource, runpy, sys\n"
        f"memory = {BOUND_MEMORY_MB} << 20\n"
        "resource.setrlimit(resource.RLIMIT_AS, (memory, memory))\n"
        f"resource.setrlimit(resource.RLIMIT_CPU, ({BOUND_CPU_S}, {BOUND_CPU_S}))\n"
        f"sys.argv = ['pcidoc', *{argv!r}]\n"
        "runpy.run_module('pcidoc', run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", limits], capture_output=True, text=True, timeout=600,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    # A signal (SIGXCPU, SIGKILL) or MemoryError would show as a negative code or a traceback.
    assert done.returncode in (0, 1, 2, 3), (done.returncode, done.stderr[-1500:])
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    assert _terminal_safe(done.stdout) and _terminal_safe(done.stderr)
    if done.returncode == 3:
        assert done.stderr.count("\n") <= 3, done.stderr  # a short answer, not a dump

"""Public API: import_texts / import_paths, errors and per-file reporting."""

from __future__ import annotations

import gzip
import io
import sys
from pathlib import Path

import pytest

from pcidoc.collect.importers import (
    SUPPORTED_FORMATS,
    ImportResult,
    import_paths,
    import_texts,
    scan,
    topo,
)
from pcidoc.errors import ExitCode, PcidocError

TOPO = (
    "        GPU0    GPU1    CPU Affinity\n"
    "GPU0     X      PIX     0-7\n"
    "GPU1    PIX      X      0-7\n"
)


def test_unrecognised_text_names_the_file_and_lists_formats() -> None:
    with pytest.raises(PcidocError) as info:
        import_texts([("notes.txt", "My GPUs are slow, please help.\nThanks!\n")])
    message = info.value.message
    assert "\n" not in message
    assert message.startswith("notes.txt: no supported output recognised")
    for fmt in SUPPORTED_FORMATS:
        assert fmt in message
    assert info.value.exit_code == ExitCode.BAD_INPUT


def test_several_unrecognised_files_are_all_named() -> None:
    with pytest.raises(PcidocError, match=r"^a\.txt, b\.txt: no supported output"):
        import_texts([("a.txt", "hello"), ("b.txt", "")])


def test_no_input_is_an_error() -> None:
    with pytest.raises(PcidocError, match="no input"):
        import_texts([])


def test_unrecognised_file_among_others_is_a_warning() -> None:
    result = import_texts([("topo.txt", TOPO), ("prose.txt", "nothing useful here")])
    assert isinstance(result, ImportResult)
    assert result.unrecognised == ["prose.txt"]
    prose = result.capture.origin.sources[1]
    assert prose.formats == []
    assert prose.warnings[0].startswith("nothing recognised in this file (supported: ")
    assert any(w.startswith("prose.txt: nothing recognised") for w in result.warnings)
    assert result.warnings == result.capture.origin.warnings


def test_origin_and_measurement_sources_use_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "run1.txt"
    path.write_text(
        " Device 0: NVIDIA L4\n Quick Mode\n"
        " Host to Device Bandwidth, 1 Device(s)\n PINNED Memory Transfers\n"
        "   Transfer Size (Bytes)        Bandwidth(GB/s)\n   32000000          12.9\n",
        encoding="utf-8",
    )
    result = import_paths([str(path)])
    assert result.capture.origin.kind == "import"
    assert result.capture.origin.sources[0].path == str(path)
    assert result.capture.measurements.transfers[0].source == "import:run1.txt"
    assert result.capture.origin.sources[0].read == ["bandwidthTest: 1 pinned H2D on GPU0"]


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.txt"
    with pytest.raises(PcidocError, match=r"nope\.txt: no such file$"):
        import_paths([str(missing)])


def test_directory_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(PcidocError, match="is a directory"):
        import_paths([str(tmp_path)])
    binary = tmp_path / "core.bin"
    binary.write_bytes(b"\x7fELF\x00\x00\x01")
    with pytest.raises(PcidocError, match="not a text file"):
        import_paths([str(binary)])


def test_gzip_and_latin1_bytes(tmp_path: Path) -> None:
    packed = tmp_path / "topo.txt.gz"
    packed.write_bytes(gzip.compress(TOPO.encode()))
    assert import_paths([str(packed)]).capture.topology.link("GPU0", "GPU1") == "PIX"
    odd = tmp_path / "odd.txt"
    odd.write_bytes(b"caf\xe9 notes\n" + TOPO.encode())
    assert import_paths([str(odd)]).capture.topology.link("GPU1", "GPU0") == "PIX"


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(TOPO.encode())))
    result = import_paths(["-"])
    assert result.capture.origin.sources[0].path == "-"
    assert len(result.capture.gpus) == 2


def test_a_parser_bug_becomes_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan, "RAISE_PARSER_ERRORS", False)

    def broken(*_: object) -> object:
        raise ValueError("boom")

    parsers = tuple(
        (fmt, detect, broken if parse is topo.parse else parse)
        for fmt, detect, parse in scan.PARSERS
    )
    monkeypatch.setattr(scan, "PARSERS", parsers)
    result = import_texts(
        [
            (
                "mixed.txt",
                TOPO + "\n$ nvidia-smi topo -p2p r\n        GPU0    GPU1\n"
                " GPU0   X       OK\n GPU1   OK      X\n",
            )
        ]
    )
    assert "nvidia-smi-topo: could not read the section at line 1 (ValueError); skipped it" in (
        result.capture.origin.sources[0].warnings
    )
    assert result.capture.p2p.status("read", 0, 1) == "OK"

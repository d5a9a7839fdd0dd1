"""Capture files: round trips, validation errors (exit 3, one line), atomic writes, redaction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pcidoc.cli import main
from pcidoc.collect.capture import (
    dump_json,
    load_capture,
    redact_capture,
    save_capture,
    write_atomic,
)
from pcidoc.errors import PcidocError
from pcidoc.model import Capture, GpuProcess
from tests.builders import machine


def _write(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def _valid(tmp_path: Path) -> dict:
    path = save_capture(machine(2, link="NV4"), tmp_path / "ok.json")
    return json.loads(path.read_text())


def test_round_trip_is_lossless(tmp_path: Path) -> None:
    cap = machine(4, link="PIX", nics=["NIC0"], nic_links={(0, "NIC0"): "PXB"}, numa_nodes=2)
    cap.gpus[1].mark_unavailable("replay_count", "NVML: NOT_SUPPORTED")
    cap.gpus[1].replay_count = None
    path = save_capture(cap, tmp_path / "m.json")
    loaded = load_capture(path)
    assert loaded == cap
    assert loaded.gpus[1].why("replay_count") == "NVML: NOT_SUPPORTED"
    assert json.loads(path.read_text())["schema"] == "pcidoc.capture/1"
    assert loaded.origin.created_at and loaded.origin.pcidoc_version


def test_gzip_round_trip(tmp_path: Path) -> None:
    cap = machine(2)
    path = save_capture(cap, tmp_path / "m.json.gz")
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    assert load_capture(path).gpus == cap.gpus


def test_report_file_is_accepted_as_capture(tmp_path: Path) -> None:
    data = {"schema": "pcidoc.report/1", "machine": _valid(tmp_path), "checks": []}
    path = _write(tmp_path, "report.json", data)
    assert len(load_capture(path).gpus) == 2


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "not JSON (line 1, column 2"),
        ("[1, 2]", "not a pcidoc capture (the JSON is not an object)"),
        ('{"gpus": []}', 'no "schema" field'),
        ('{"schema": "something-else"}', "not a pcidoc capture (schema is 'something-else')"),
        ('{"schema": "pcidoc.capture/2"}', "written by a newer pcidoc (pcidoc.capture/2)"),
        ('{"schema": "pcidoc.topology/1"}', "is a pcidoc.topology/1 file, not a capture"),
        ('{"schema": "pcidoc.report/1"}', 'report has no "machine" object'),
        ("", "not JSON"),
    ],
)
def test_bad_files_give_one_line_errors(tmp_path: Path, content: str, expected: str) -> None:
    path = _write(tmp_path, "bad.json", content)
    with pytest.raises(PcidocError) as info:
        load_capture(path)
    assert expected in info.value.message
    assert str(path) in info.value.message
    assert "\n" not in info.value.message


def test_missing_field_is_named(tmp_path: Path) -> None:
    data = _valid(tmp_path)
    del data["gpus"]
    with pytest.raises(PcidocError) as info:
        load_capture(_write(tmp_path, "c.json", data))
    assert "gpus: Field required" in info.value.message


def test_wrong_type_is_named_with_its_location(tmp_path: Path) -> None:
    data = _valid(tmp_path)
    data["gpus"][1]["index"] = "abc"
    data["gpus"][0]["pcie"]["current_gen"] = "fast"
    with pytest.raises(PcidocError) as info:
        load_capture(_write(tmp_path, "c.json", data))
    message = info.value.message
    assert "gpus[0].pcie.current_gen" in message
    assert "(+1 more problems)" in message
    assert "'fast'" in message


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(PcidocError, match="no such file"):
        load_capture(tmp_path / "nope.json")
    with pytest.raises(PcidocError, match="is a directory"):
        load_capture(tmp_path)
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR garbage")
    with pytest.raises(PcidocError, match="not a text file"):
        load_capture(binary)


def test_unknown_fields_of_a_newer_minor_version_are_ignored(tmp_path: Path) -> None:
    data = _valid(tmp_path)
    data["future_section"] = {"x": 1}
    data["gpus"][0]["future_field"] = 3
    assert load_capture(_write(tmp_path, "c.json", data)).gpus[0].index == 0


def test_atomic_write_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    write_atomic(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
    with pytest.raises(PcidocError, match="does not exist"):
        write_atomic(tmp_path / "missing" / "x.json", "x")


def test_redaction_is_stable_and_complete() -> None:
    cap = machine(3)
    cap.host.hostname = "gpu-node-17.example.com"
    cap.host.cmdline = "root=UUID=1b2c3d4e-aaaa-bbbb-cccc-123456789abc ro"
    cap.gpus[0].serial = "1323121035405"
    cap.gpus[1].uuid = cap.gpus[2].uuid  # same UUID twice maps to the same placeholder
    cap.nics = []
    cap.host.processes = [GpuProcess(pid=7, name="train on gpu-node-17", gpus=[0])]
    cap.origin.note = "pasted from gpu-node-17.example.com, mac 0c:42:a1:de:ad:01"
    red = redact_capture(cap)
    text = dump_json(red)
    for secret in ("gpu-node-17", "1323121035405", "1b2c3d4e-aaaa", "0c:42:a1:de:ad:01"):
        assert secret not in text
    assert red.gpus[1].uuid == red.gpus[2].uuid
    assert red.gpus[0].uuid != red.gpus[1].uuid
    assert red.gpus[0].uuid and red.gpus[0].uuid.startswith("GPU-00000000-")
    assert red.origin.redacted is True
    assert red.gpus[0].bus_id == cap.gpus[0].bus_id  # bus ids are not identifying
    # Idempotent shape: redacting twice keeps it valid.
    assert isinstance(redact_capture(red), Capture)


def test_cli_reports_bad_capture_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _write(tmp_path, "bad.json", '{"schema": "pcidoc.capture/9"}')
    for argv in (["topo", "--from", str(bad)], ["check", "--from", str(bad)]):
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 3
        assert err.count("\n") == 1
        assert "Traceback" not in err
        assert "newer pcidoc" in err


def test_a_damaged_gzip_capture_is_one_line(tmp_path: Path) -> None:
    good = save_capture(machine(2), tmp_path / "m.json.gz").read_bytes()
    for name, data in (
        ("cut.json.gz", good[: len(good) // 2]),
        ("bad.json.gz", good[:10] + b"x" * 40),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(PcidocError, match=r"damaged gzip file$"):
            load_capture(path)

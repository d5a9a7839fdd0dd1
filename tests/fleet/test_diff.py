"""``pcidoc diff A B``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pcidoc.cli import main
from pcidoc.collect.capture import save_capture
from pcidoc.fleet.diff import diff_files
from pcidoc.model.measurements import TransferMeasurement
from pcidoc.samples import sample_names
from tests.fleet.conftest import base_node


def _pair(tmp_path: Path, change) -> tuple[str, str]:
    a, b = base_node("box"), base_node("box")
    change(b)
    return (
        str(save_capture(a, tmp_path / "before.json")),
        str(save_capture(b, tmp_path / "after.json")),
    )


def test_identical_captures_have_no_change(tmp_path: Path, capsys) -> None:
    a, b = _pair(tmp_path, lambda cap: None)
    assert main(["diff", a, b]) == 0
    assert "no change" in capsys.readouterr().out


def test_facts_topology_p2p_counters_and_verdicts(tmp_path: Path) -> None:
    def change(cap) -> None:
        cap.driver.driver_version = "560.28.03"
        cap.gpus[1].pcie.current_gen = 3
        cap.gpus[4].replay_count = 120
        cap.topology.links[0][1] = cap.topology.links[1][0] = "NV11"
        cap.nics[2].numa_node = 0 if cap.nics[2].numa_node != 0 else 1
        if cap.p2p.matrices:
            cap_name = next(iter(cap.p2p.matrices))
            cap.p2p.matrices[cap_name][0][2] = "CNS"

    a, b = _pair(tmp_path, change)
    result = diff_files(a, b)
    keys = {(c.area, c.key) for c in result.changes}
    assert ("fact", "driver") in keys
    assert ("fact", "GPU1.pcie_link") in keys
    assert ("counter", "GPU4.replays") in keys
    assert ("topology", "GPU0-GPU1") in keys
    assert ("fact", "NIC2.numa_node") in keys
    link = next(c for c in result.changes if c.key == "GPU1.pcie_link")
    assert link.subject == "GPU1 (0000:0a:00.0)" and (link.a, link.b) == ("Gen4 x16", "Gen3 x16")
    replay = next(c for c in result.changes if c.key == "GPU4.replays")
    assert replay.worse and "+120" in replay.text
    assert any(
        c.area == "verdict" and c.key == "pcie.link-speed" and c.worse for c in result.changes
    )
    if any(c.area == "p2p" for c in result.changes):
        p2p = next(c for c in result.changes if c.area == "p2p")
        assert p2p.b == "CNS"


def test_measurements_only_beyond_noise(tmp_path: Path, capsys) -> None:
    def measured(cap, value: float, cov: float | None) -> None:
        cap.measurements.transfers.append(
            TransferMeasurement(
                gpu=0,
                direction="h2d",
                memory="pinned",
                bandwidth_gbps=value,
                cov=cov,
                source="probe",
            )
        )

    a, b = base_node("box"), base_node("box")
    measured(a, 24.0, 0.01)
    measured(b, 23.5, 0.01)  # -2 %: inside the noise
    pa, pb = save_capture(a, tmp_path / "a.json"), save_capture(b, tmp_path / "b.json")
    assert not [c for c in diff_files(str(pa), str(pb)).changes if c.area == "measurement"]
    b.measurements.transfers[0].bandwidth_gbps = 12.0
    save_capture(b, pb)
    assert main(["diff", "--json", str(pa), str(pb)]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "pcidoc.diff/1"
    m = [c for c in doc["changes"] if c["area"] == "measurement"]
    assert len(m) == 1 and m[0]["a"] == 24.0 and m[0]["b"] == 12.0 and m[0]["worse"]


def test_bad_file_is_one_line(tmp_path: Path, capsys) -> None:
    a, _ = _pair(tmp_path, lambda cap: None)
    assert main(["diff", a, str(tmp_path / "nope.json")]) == 3
    assert "nope.json: no such file" in capsys.readouterr().err


def test_one_change_reads_as_one_change() -> None:
    from pcidoc.fleet.diff import Change, DiffResult, diff_text

    change = Change("fact", "driver", "GPU0", "535", "550", "driver 535 -> 550")
    one = diff_text(DiffResult("a.json", "b.json", [change])).splitlines()[0]
    two = diff_text(DiffResult("a.json", "b.json", [change, change])).splitlines()[0]
    assert one == "pcidoc diff: 1 change from a.json to b.json"
    assert two == "pcidoc diff: 2 changes from a.json to b.json"


def _sample_pair(tmp_path: Path, change, name: str = "synthetic-16gpu") -> tuple[str, str]:
    from pcidoc.samples import load_sample, sample_path

    b = load_sample(name)
    change(b)
    return str(sample_path(name)), str(save_capture(b, tmp_path / "after.json"))


def test_new_nvlink_down_under_a_failing_check_is_worse(tmp_path: Path, capsys) -> None:
    # The sample already fails nvlink.state (GPU12 NVLink 3 down): a second link down is new
    # damage under an unchanged verdict, and must still read as worse.
    def down(cap) -> None:
        cap.gpus[4].nvlinks[0].state = "down"

    a, b = _sample_pair(tmp_path, down)
    assert main(["diff", a, b]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert any(line.split()[:1] == ["worse"] and "new: GPU4 nvlink0 down" in line for line in lines)
    finding = [line for line in lines if "new: nvlink.state" in line]
    assert finding and finding[0].split()[0] == "worse" and "GPU4" in finding[0]


def test_narrower_link_is_worse(tmp_path: Path, capsys) -> None:
    def narrower(cap) -> None:
        cap.gpus[6].pcie.current_width = 8

    a, b = _sample_pair(tmp_path, narrower)
    assert main(["diff", a, b]) == 2
    out = capsys.readouterr().out
    link = next(line for line in out.splitlines() if "GPU6" in line and "PCIe link" in line)
    assert link.split()[0] == "worse" and "x16 -> Gen4 x8 (narrower)" in link


def test_idle_generation_drop_is_not_worse(tmp_path: Path) -> None:
    def idle(cap) -> None:
        cap.gpus[6].pcie.current_gen = 1
        cap.gpus[6].pstate = 8

    a, b = _sample_pair(tmp_path, idle)
    link = next(c for c in diff_files(a, b).changes if c.key == "GPU6.pcie_link")
    assert link.worse is None and "idle in P8" in link.text


def test_another_machine_reads_without_none_or_skip_verdicts(tmp_path: Path, capsys) -> None:
    from pcidoc.samples import sample_path

    a, b = str(sample_path("a100-sxm4-8gpu-nvswitch")), str(sample_path("h800-8gpu-hgx"))
    main(["diff", a, b])
    text = capsys.readouterr().out
    main(["diff", "--json", a, b])
    doc = json.loads(capsys.readouterr().out)
    assert "None" not in text and "None" not in json.dumps([c["text"] for c in doc["changes"]])
    for change in doc["changes"]:
        if change["area"] == "verdict" and {change["a"], change["b"]} & {"skip", "error"}:
            assert change["worse"] is None, change["text"]
    # Links that only one side has are summarised, not listed one by one.
    assert not [line for line in text.splitlines() if "nvlink0" in line]
    assert any(line.strip().startswith("nvlink: 24 absent in A") for line in text.splitlines())


def test_verdict_worse_rule() -> None:
    from pcidoc.fleet.diff import verdict_worse

    assert verdict_worse("skip", "pass") is None
    assert verdict_worse("skip", "fail") is None
    assert verdict_worse("fail", "skip") is None
    assert verdict_worse("warn", "error") is None
    assert verdict_worse("pass", "info") is None
    assert verdict_worse("info", "warn") is True
    assert verdict_worse("warn", "fail") is True
    assert verdict_worse("fail", "pass") is False


def test_links_sort_naturally(tmp_path: Path, capsys) -> None:
    from pcidoc.fleet.diff import natural_key

    def down(cap) -> None:
        for link in (10, 2, 1, 0):
            cap.gpus[4].nvlinks[link].state = "down"

    a, b = _sample_pair(tmp_path, down)
    main(["diff", a, b])
    lines = [line for line in capsys.readouterr().out.splitlines() if "GPU4 nvlink" in line]
    assert [line.split()[3] for line in lines] == ["nvlink0", "nvlink1", "nvlink2", "nvlink10"]
    assert sorted(["nvlink10", "nvlink2"], key=natural_key) == ["nvlink2", "nvlink10"]


def test_header_names_are_sanitised(tmp_path: Path, capsys) -> None:
    saved = save_capture(base_node("box"), tmp_path / "plain.json")
    pa, pb = tmp_path / "a\x1b]0;PWNED\x07.json", tmp_path / "b\x9b31m.json"
    pa.write_bytes(saved.read_bytes())
    pb.write_bytes(saved.read_bytes())
    main(["diff", str(pa), str(pb)])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out
    assert "PWNED" not in out and "/a.json and " in out


def test_big_difference_is_bounded(tmp_path: Path, capsys) -> None:
    from pcidoc.fleet.diff import AREAS, LIST_LIMIT
    from pcidoc.samples import sample_path

    a, b = str(sample_path("synthetic-16gpu")), str(sample_path("synthetic-72gpu"))
    main(["diff", a, b])
    lines = capsys.readouterr().out.splitlines()
    # Header, per area a title, the listed lines and one "... and N more" line, notes.
    assert len(lines) <= 1 + len(AREAS) * (LIST_LIMIT + 2) + 3
    assert any("more change" in line for line in lines)
    assert any(line.strip().startswith("GPU: 56 absent in A") for line in lines)


def test_an_unknown_link_half_is_a_question_mark_not_none(tmp_path: Path, capsys) -> None:
    def half(cap) -> None:
        cap.gpus[2].pcie.current_gen = None
        cap.gpus[3].pcie.current_width = None

    a, b = _pair(tmp_path, half)
    main(["diff", a, b])
    out = capsys.readouterr().out
    assert "None" not in out
    assert "GPU2 (0000:44:00.0): PCIe link: Gen4 x16 -> Gen? x16" in out


@pytest.mark.parametrize("name", [n for n in sample_names() if n != "a100-sxm4-8gpu-nvswitch"])
def test_no_raw_none_against_any_other_sample(name: str) -> None:
    from pcidoc.fleet.diff import diff_files, diff_text
    from pcidoc.samples import sample_path

    result = diff_files(str(sample_path("a100-sxm4-8gpu-nvswitch")), str(sample_path(name)))
    assert "None" not in diff_text(result)
    assert not [c.text for c in result.changes if "None" in c.text]
    for change in result.changes:
        if change.area == "verdict" and {change.a, change.b} & {"skip", "error"}:
            assert change.worse is None, change.text

"""``pcidoc diff A B``."""

from __future__ import annotations

import json
from pathlib import Path

from pcidoc.cli import main
from pcidoc.collect.capture import save_capture
from pcidoc.fleet.diff import diff_files
from pcidoc.model.measurements import TransferMeasurement
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

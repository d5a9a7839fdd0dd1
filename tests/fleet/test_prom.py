"""``-o FILE.prom`` on check and fleet: node_exporter textfile format, parsed back."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from pcidoc.cli import main
from pcidoc.fleet.prom import render, report_registry
from pcidoc.model.report import ReportSource


def _samples(text: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append(sample)
    return out


def test_check_prom_has_verdicts_worst_and_link_utilisation(tmp_path: Path, capsys) -> None:
    from tests.fleet.conftest import base_node

    cap = base_node("n1")
    cap.gpus[2].pcie.current_width = 8
    cap.gpus[0].tx_bytes_per_s = 6.3e9  # synthetic momentary reading: 20 % of Gen4 x16
    from pcidoc.collect.capture import save_capture

    save_capture(cap, tmp_path / "n1.json")
    out = tmp_path / "node.prom"
    code = main(["check", "--from", str(tmp_path / "n1.json"), "-o", str(out)])
    assert code == 2
    samples = _samples(out.read_text(encoding="utf-8"))
    worst = samples["pcidoc_worst_severity"]
    assert worst[0].labels["node"] == "n1" and worst[0].value == 5.0
    link = [s for s in samples["pcidoc_check_severity"] if s.labels["check"] == "pcie.link-speed"]
    assert {s.labels["subject"]: s.value for s in link} == {"GPU2": 5.0}
    speed = {s.labels["gpu"]: s for s in samples["pcidoc_pcie_link_speed_ratio"]}
    assert speed["GPU2"].value == 0.5 and speed["GPU0"].value == 1.0
    assert speed["GPU2"].labels["pstate"] == "P0"
    util = {
        (s.labels["gpu"], s.labels["direction"]): s.value
        for s in samples["pcidoc_pcie_link_utilisation_ratio"]
    }
    assert util == {("GPU0", "tx"): 0.2}
    assert not list(tmp_path.glob("*.prom.*")), "temporary file left behind"


def test_fleet_prom_marks_outliers_and_exclusions(fleet_dir: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "fleet.prom"
    main(["fleet", str(fleet_dir), "-o", str(out)])
    samples = _samples(out.read_text(encoding="utf-8"))
    outliers = {s.labels["node"] for s in samples["pcidoc_fleet_node_outlier"] if s.value == 1}
    assert outliers == {"node05", "node12"}
    excluded = {s.labels["node"] for s in samples["pcidoc_fleet_node_excluded"]}
    assert excluded == {"node05", "node12"}
    assert samples["pcidoc_fleet_worst_severity"][0].value == 5.0
    assert len(samples["pcidoc_fleet_node_worst_severity"]) == 24


def test_hostile_label_values_are_escaped() -> None:
    from pcidoc import doctor
    from tests.fleet.conftest import base_node

    nasty = 'evil"host\\name\nnext_metric 1'
    cap = base_node(nasty)
    report = doctor.run(cap, ReportSource(kind="synthetic"), generated_at="-")
    text = render(report_registry(report))
    samples = _samples(text)
    assert samples["pcidoc_worst_severity"][0].labels["node"] == nasty
    assert "next_metric" not in samples
    assert not any(line.startswith("next_metric") for line in text.splitlines())

"""``pcidoc fleet``: outliers, fleet-wide findings, exclude list, bad files, outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pcidoc.cli import main
from pcidoc.collect.capture import save_capture
from pcidoc.fleet.analyze import analyse, exit_code_for_fleet
from tests.fleet.conftest import base_node, write_fleet


def test_the_two_changed_nodes_and_only_they_are_outliers(fleet_dir: Path) -> None:
    report = analyse([str(fleet_dir)], workers=1)
    assert report.summary["nodes"] == 24
    outliers = {n.name: n for n in report.nodes if n.outlier}
    assert set(outliers) == {"node05", "node12"}
    link = [d for d in outliers["node05"].differs if d.key == "GPU3.pcie_width"]
    assert link and link[0].value == "x8" and link[0].peers == "x16"
    assert link[0].subject == "GPU3 (0000:4a:00.0)" and link[0].degrades
    replays = [d for d in outliers["node12"].differs if d.key == "GPU6.replays"]
    assert replays and replays[0].value == "5000" and replays[0].degrades
    # The verdicts differ too: the doctor judged each node on its own.
    assert any(d.key == "check:pcie.link-speed" for d in outliers["node05"].differs)
    assert any(d.key == "check:pcie.errors" for d in outliers["node12"].differs)


def test_shared_nic_placement_is_a_fleet_finding_not_an_outlier(fleet_dir: Path) -> None:
    report = analyse([str(fleet_dir)], workers=1)
    shared = [f for f in report.fleet_findings if f.id == "numa.nic-affinity"]
    assert shared and shared[0].nodes == 24 and shared[0].severity == "warn"
    assert len(report.groups) == 1 and report.groups[0].peers_comparable


def test_exclude_list_and_order(fleet_dir: Path) -> None:
    report = analyse([str(fleet_dir)], workers=1)
    assert [e.name for e in report.exclude] == ["node05", "node12"]
    assert "x8" in report.exclude[0].reason and "5000" in report.exclude[1].reason
    assert report.nodes[0].name == "node05" and report.nodes[0].worst == "fail"
    assert report.nodes[1].name == "node12"  # the outlier before its equals
    assert report.worst == "fail" and exit_code_for_fleet(report) == 2


def test_identical_fleet_has_no_outliers(tmp_path: Path) -> None:
    write_fleet(tmp_path / "caps", 5)
    report = analyse([str(tmp_path / "caps")], workers=1)
    assert not [n for n in report.nodes if n.outlier] and not report.exclude


def test_a_different_driver_is_an_outlier_but_not_drained(tmp_path: Path) -> None:
    def older(i: int, cap) -> None:
        if i == 2:
            cap.driver.driver_version = "535.104.05"

    write_fleet(tmp_path / "caps", 6, older)
    report = analyse([str(tmp_path / "caps")], workers=1)
    odd = [n for n in report.nodes if n.outlier]
    assert [n.name for n in odd] == ["node03"]
    assert odd[0].differs[0].key == "driver" and not odd[0].differs[0].degrades
    assert not report.exclude


def test_a_lost_gpu_makes_its_node_a_signature_outlier(tmp_path: Path) -> None:
    def lose(i: int, cap) -> None:
        if i == 0:
            cap.gpus.pop()
            cap.topology.labels.pop(7)
            cap.topology.links = [
                row[:7] + row[8:] for k, row in enumerate(cap.topology.links) if k != 7
            ]

    write_fleet(tmp_path / "caps", 5, lose)
    report = analyse([str(tmp_path / "caps")], workers=1)
    node = next(n for n in report.nodes if n.name == "node01")
    assert node.outlier and node.differs[0].kind == "signature" and node.differs[0].degrades
    assert "7x" in node.differs[0].text and any(e.name == "node01" for e in report.exclude)


def test_bad_files_are_named_and_skipped(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    folder = tmp_path / "caps"
    write_fleet(folder, 4)
    (folder / "broken.json").write_text("{not json", encoding="utf-8")
    (folder / "other.json").write_text(json.dumps({"schema": "something/1"}), encoding="utf-8")
    code = main(["fleet", "--json", str(folder), str(tmp_path / "missing.json")])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["schema"] == "pcidoc.fleet/1" and doc["summary"]["nodes"] == 4
    bad = {Path(u["path"]).name for u in doc["unreadable"]}
    assert bad == {"broken.json", "other.json", "missing.json"}
    assert "broken.json" in err and code == 3


def test_a_skipped_file_is_named_once(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from pcidoc.fleet.render import fleet_html, fleet_markdown, fleet_text
    from pcidoc.model.fleet import UnreadableInput

    folder = tmp_path / "caps"
    write_fleet(folder, 2)
    broken = folder / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    main(["fleet", str(folder)])
    _, err = capsys.readouterr()
    line = next(x for x in err.splitlines() if "skipped" in x)
    assert line.count(str(broken)) == 1, line
    report = analyse([str(folder)])
    for text in (fleet_text(report), fleet_markdown(report), fleet_html(report)):
        assert text.count("broken.json") == 1
    # An error that does not name its file gets the path in front (the TUI shows text() too).
    assert UnreadableInput(path="x.json", error="damaged").text() == "x.json: damaged"


def test_no_readable_input_is_one_line_exit_3(tmp_path: Path, capsys) -> None:
    (tmp_path / "x.json").write_text("[]", encoding="utf-8")
    assert main(["fleet", str(tmp_path / "x.json")]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") <= 2 and "no readable capture" in err


def test_report_files_and_duplicate_hostnames(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for n in range(3):
        save_capture(base_node("same-host"), folder / f"c{n}.json")
    assert main(["check", "--json", "--from", str(folder / "c0.json")]) in (0, 1, 2)
    (folder / "r.json").write_text(capsys.readouterr().out, encoding="utf-8")
    report = analyse([str(folder)], workers=1)
    names = sorted(n.name for n in report.nodes)
    assert len(names) == 4 and len(set(names)) == 4
    assert all(name.startswith("same-host (") for name in names)


def test_parallel_workers_give_the_same_report(tmp_path: Path) -> None:
    from tests.fleet.conftest import downtrain_and_replays

    write_fleet(tmp_path / "caps", 20, downtrain_and_replays)
    one = analyse([str(tmp_path / "caps")], workers=1, generated_at="t")
    two = analyse([str(tmp_path / "caps")], workers=2, generated_at="t")
    assert one.model_dump() == two.model_dump()


@pytest.mark.parametrize("suffix", [".md", ".html", ".json"])
def test_output_files(fleet_dir: Path, tmp_path: Path, suffix: str, capsys) -> None:
    out = tmp_path / f"fleet{suffix}"
    assert main(["fleet", str(fleet_dir), "-o", str(out)]) == 2
    text = out.read_text(encoding="utf-8")
    assert "node05" in text and "node12" in text
    assert "Exclude" in capsys.readouterr().out


def test_unknown_output_format_is_bad_input(fleet_dir: Path, capsys) -> None:
    assert main(["fleet", str(fleet_dir), "-o", "fleet.txt"]) == 3
    assert "unknown format" in capsys.readouterr().err


def test_median_of_the_peers_leaves_one_occurrence_out() -> None:
    import random
    import statistics

    from pcidoc.fleet.analyze import _median_without

    rng = random.Random(7)
    for _ in range(500):
        values = [rng.randint(0, 6) for _ in range(rng.randint(2, 9))]
        mine = rng.choice(values)
        peers = list(values)
        peers.remove(mine)
        assert _median_without(sorted(values), mine) == statistics.median(peers)


def test_nodes_can_be_named_by_file(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for n in range(3):
        save_capture(base_node(f"pod-{n}-xyz"), folder / f"gpu-node-{n}.json")
    by_host = analyse([str(folder)], workers=1)
    by_file = analyse([str(folder)], workers=1, names="file")
    assert sorted(n.name for n in by_host.nodes) == ["pod-0-xyz", "pod-1-xyz", "pod-2-xyz"]
    assert sorted(n.name for n in by_file.nodes) == ["gpu-node-0", "gpu-node-1", "gpu-node-2"]


def test_clush_rcopy_names_are_read_and_named_by_node(tmp_path: Path) -> None:
    folder = tmp_path / "caps"
    folder.mkdir()
    for n in range(3):
        save_capture(base_node(f"h{n}"), folder / f"pcidoc-capture.json.node00{n}")
    (folder / ".pcidoc-capture.json.x.tmp").write_text("partial", encoding="utf-8")
    (folder / "notes.txt").write_text("not a capture", encoding="utf-8")
    report = analyse([str(folder)], workers=1, names="file")
    assert sorted(n.name for n in report.nodes) == ["node000", "node001", "node002"]
    assert not report.unreadable


def test_another_gpu_model_is_its_own_group_not_an_outlier(tmp_path: Path) -> None:
    from pcidoc.samples import load_sample

    folder = tmp_path / "caps"
    write_fleet(folder, 4)
    other = load_sample("h800-8gpu-hgx")
    other.host.hostname = "h800-node"
    save_capture(other, folder / "h800.json")
    report = analyse([str(folder)], workers=1)
    assert len(report.groups) == 2
    node = next(n for n in report.nodes if n.name == "h800-node")
    assert not node.outlier and not report.exclude


def test_schema_command_prints_the_fleet_schema(capsys) -> None:
    assert main(["schema", "fleet"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "FleetReport" and "exclude" in schema["properties"]


def test_an_idle_link_generation_is_not_an_outlier(tmp_path: Path) -> None:
    """Idle GPUs downclock their link: a node captured at rest (P8, Gen1) is not odd; the same
    Gen1 in P0 is."""

    def idle(i: int, cap) -> None:
        if i == 1:
            for gpu in cap.gpus:
                gpu.pstate, gpu.pcie.current_gen = 8, 1
        if i == 3:
            cap.gpus[5].pcie.current_gen = 1  # in P0: downtrained for real

    write_fleet(tmp_path / "caps", 6, idle)
    report = analyse([str(tmp_path / "caps")], workers=1)
    odd = {n.name: n for n in report.nodes if n.outlier}
    assert set(odd) == {"node04"}
    assert [d.key for d in odd["node04"].differs if d.kind == "fact"] == ["GPU5.pcie_gen"]
    assert odd["node04"].differs[0].degrades


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--fleet", "/nonexistent-pcidoc-dir"], "not a folder"),
        (["probe", "fabric"], "torchrun or srun"),
        (["fleet", "--jobs", "0", "."], "--jobs"),
    ],
)
def test_fleet_entry_points_fail_in_one_line(argv, needle, monkeypatch, capsys) -> None:
    for name in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS"):
        monkeypatch.delenv(name, raising=False)
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


@pytest.mark.parametrize("suffix", ["", ".md", ".html"])
def test_counts_read_as_english_in_every_output(tmp_path: Path, suffix: str, capsys) -> None:
    """'1 node', '2 nodes', '1 hardware group': no '(s)' and no '1 nodes' in fleet outputs."""
    folder = tmp_path / "caps"
    folder.mkdir()
    save_capture(base_node("solo"), folder / "solo.json")
    argv = ["fleet", str(folder)]
    if suffix:
        argv += ["-o", str(tmp_path / f"fleet{suffix}")]
    main(argv)
    text = capsys.readouterr().out
    if suffix:
        text += (tmp_path / f"fleet{suffix}").read_text(encoding="utf-8")
    assert "(s)" not in text
    assert "1 nodes" not in text
    assert "1 node" in text and "1 hardware group" in text


def test_a_lone_node_or_a_gpu_less_one_is_not_said_to_match_its_peers(tmp_path: Path) -> None:
    from pcidoc.fleet.render import fleet_html, fleet_markdown, fleet_text

    folder = tmp_path / "caps"
    write_fleet(folder, 3)
    lone = base_node("lone")
    lone.gpus = lone.gpus[:4]  # another signature: a group of one
    save_capture(lone, folder / "lone.json")
    bare = base_node("bare")
    bare.gpus = []
    save_capture(bare, folder / "bare.json")
    report = analyse([str(folder)], workers=1)
    assert "(too few nodes to compare)" in fleet_text(report, verbose=True)
    for text in (fleet_markdown(report), fleet_html(report)):
        bare = next(x for x in text.replace("<tr>", "\n").splitlines()[::-1] if "bare" in x)
        assert "no GPUs: nothing to compare" in bare and "matches its peer group" not in bare
        assert "too few nodes to compare" in text
    assert "matches its peer group" in fleet_markdown(report)  # the three alike still do


def test_fleet_html_uses_the_check_reports_stylesheet(fleet_dir: Path) -> None:
    from pcidoc.fleet.render import fleet_html
    from pcidoc.present.html import stylesheet

    page = fleet_html(analyse([str(fleet_dir)], workers=1))
    assert stylesheet() in page and page.startswith("<!DOCTYPE html>")
    assert '<span class="sev sev-fail">' in page and 'class="verdict sev-fail"' in page


def test_fleet_lines_are_not_cut(tmp_path: Path) -> None:
    from pcidoc.fleet.render import fleet_text

    folder = tmp_path / "caps"

    def slow(i: int, cap) -> None:
        if i == 0:
            cap.host.hostname = "node-with-a-rather-long-name-" + "x" * 60
            cap.gpus[3].pcie.current_width = 8

    write_fleet(folder, 4, slow)
    report = analyse([str(folder)], workers=1)
    node = next(n for n in report.nodes if n.name.startswith("node-with"))
    top = next(f for f in node.findings if f.severity == node.worst)
    text = fleet_text(report)
    assert top.summary in text and any(len(line) > 160 for line in text.splitlines())


# --------------------------------------------- issue 30: the peers' value in plain numbers


@pytest.mark.parametrize(("count", "odd"), [(12, 1), (24, 1), (11, 2)])
def test_a_difference_says_how_many_peers_hold_the_value(
    tmp_path: Path, count: int, odd: int
) -> None:
    """ "(peers: x16, 91% of 11)" mixed the node itself into the share and the group size into
    the count. Now: "(x16 on all 11 peers)" or "(x16 on 9 of its 10 peers)"."""
    from pcidoc.model.capture import Capture

    def change(i: int, cap: Capture) -> None:
        if i < odd:
            cap.gpus[3].pcie.current_width = 8

    paths = write_fleet(tmp_path / "caps", count, change)
    report = analyse([str(p) for p in paths])
    node = next(n for n in report.nodes if n.name == "node01")
    (diff,) = [d for d in node.differs if d.key.endswith("pcie_width")]
    peers = count - 1
    same = count - odd
    expected = (
        f"x16 on all {peers} peers" if same == peers else f"x16 on {same} of its {peers} peers"
    )
    assert diff.text.endswith(f"PCIe link width x8 ({expected})"), diff.text
    assert "%" not in diff.text

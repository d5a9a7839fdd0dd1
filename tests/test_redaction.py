"""``--redact``: identifying values replaced by field and by token, and nothing else changed.

The verdicts of a redacted capture must be the verdicts of the capture: the doctor runs on
both and the severities are compared check by check.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pcidoc import doctor
from pcidoc.cli import main
from pcidoc.collect.capture import dump_json, load_capture, redact_capture, save_capture
from pcidoc.model import Capture, GpuProcess
from pcidoc.model.capture import OriginSource
from pcidoc.model.report import ReportSource
from pcidoc.samples import list_samples, load_sample

HOSTS = ["pc", "ca", "live", "on", "intel", "vm", "nvidia", "gpu-node-17.example.com"]
SECRETS = {
    "ip": "10.20.30.40",
    "ip2": "172.16.9.8",
    "user": "alice",
    "process": "train_llama",
    "nccl": "s3cr3t-token",
    "serial": "1651323018291",
}


def _dress(cap: Capture, host: str) -> Capture:
    """Give a sample machine the identifying details a live capture carries."""
    cap.host.hostname = host
    cap.host.cmdline = (
        "BOOT_IMAGE=/vmlinuz-6.5 root=UUID=1b2c3d4e-aaaa-bbbb-cccc-123456789abc ro "
        "intel_iommu=on iommu=pt pcie_acs_override=downstream "
        f"ip={SECRETS['ip2']}::172.16.0.1:255.255.0.0:{host}:eth0:off"
    )
    cap.host.environment = {
        "NCCL_COMM_ID": f"{SECRETS['ip']}:29500",
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_P2P_LEVEL": "NVL",
        "NCCL_TOPO_FILE": f"/home/{SECRETS['user']}/topo/{host}.xml",
        "NCCL_DEBUG_FILE": f"/home/{SECRETS['user']}/nccl.%h.log",
        "NCCL_PLUGIN_P2P_TOKEN": SECRETS["nccl"],
        "CUDA_VISIBLE_DEVICES": ",".join(str(g.index) for g in cap.gpus),
    }
    cap.host.processes = [GpuProcess(pid=4242, name=SECRETS["process"], gpus=[0])]
    cap.gpus[0].serial = SECRETS["serial"]
    cap.origin.sources = [
        OriginSource(path=f"/home/{SECRETS['user']}/pastes/{host}-topo.txt", formats=["x"])
    ]
    cap.origin.note = f"pasted by {SECRETS['user']} from {SECRETS['ip']}"
    return cap


def _verdicts(cap: Capture) -> dict[str, str]:
    report = doctor.run(
        cap, ReportSource(kind="capture", name="c.json"), generated_at="2026-01-01T00:00:00Z"
    )
    return {check.id: check.severity for check in report.checks}


SAMPLES = [info.name for info in list_samples()]


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("sample", SAMPLES)
def test_redacted_capture_gives_the_same_verdicts(sample: str, host: str) -> None:
    cap = _dress(load_sample(sample), host)
    red = redact_capture(cap)  # validates: hosts named pc/ca/live used to fail here
    assert _verdicts(red) == _verdicts(cap)
    assert red.host.hostname != host
    text = dump_json(red)
    for secret in SECRETS.values():
        assert secret not in text, secret
    assert red.host.cpu_vendor == cap.host.cpu_vendor
    assert red.host.cpu_model == cap.host.cpu_model
    assert [g.name for g in red.gpus] == [g.name for g in cap.gpus]
    assert [g.pcie for g in red.gpus] == [g.pcie for g in cap.gpus]
    assert red.topology == cap.topology and red.p2p == cap.p2p
    assert red.origin.kind == cap.origin.kind and red.origin.redacted


@pytest.mark.parametrize("host", ["on", "intel", "pc", "vm", "iommu", "pt"])
def test_kernel_arguments_survive_any_host_name(host: str) -> None:
    cap = _dress(load_sample("h800-8gpu-hgx"), host)
    cap.host.cpu_vendor = "intel"
    red = redact_capture(cap)
    args = (red.host.cmdline or "").split()
    assert "intel_iommu=on" in args and "iommu=pt" in args
    assert "pcie_acs_override=downstream" in args
    assert red.host.cpu_vendor == "intel"
    assert red.host.iommu == cap.host.iommu
    assert SECRETS["ip2"] not in (red.host.cmdline or "")
    assert "root=UUID=1b2c3d4e" not in (red.host.cmdline or "")


def test_all_zero_cluster_uuid_is_a_sentinel_and_stays() -> None:
    cap = _dress(load_sample("h800-8gpu-hgx"), "vm")
    for gpu in cap.gpus:
        gpu.fabric.state = "completed"
        gpu.fabric.status = "success"
        gpu.fabric.clique_id = 0
        gpu.fabric.cluster_uuid = "00000000-0000-0000-0000-000000000000"
    red = redact_capture(cap)
    assert {g.fabric.cluster_uuid for g in red.gpus} == {"00000000-0000-0000-0000-000000000000"}
    assert _verdicts(red)["nvlink.fabric"] == _verdicts(cap)["nvlink.fabric"]
    # A real cluster UUID is identifying: replaced, the same way on every GPU.
    for gpu in cap.gpus:
        gpu.fabric.cluster_uuid = "5a7c2e10-1234-4bcd-9ef0-0123456789ab"
    red = redact_capture(cap)
    uuids = {g.fabric.cluster_uuid for g in red.gpus}
    assert len(uuids) == 1 and "5a7c2e10" not in uuids.pop()


def test_environment_knobs_kept_others_replaced() -> None:
    cap = _dress(load_sample("h800-8gpu-hgx"), "gpu-node-17")
    env = redact_capture(cap).host.environment
    assert env["NCCL_SOCKET_IFNAME"] == "eth0" and env["NCCL_P2P_LEVEL"] == "NVL"
    assert env["NCCL_COMM_ID"].startswith("redacted-value-")
    assert env["NCCL_PLUGIN_P2P_TOKEN"].startswith("redacted-value-")
    # The user and the folder names under the home folder are replaced; the file name loses
    # the host name it carried.
    assert re.fullmatch(
        r"/home/redacted-user-1/redacted-folder-\d+/redacted-host-1\.xml", env["NCCL_TOPO_FILE"]
    )
    assert env["NCCL_DEBUG_FILE"] == "/home/redacted-user-1/nccl.%h.log"
    assert env["CUDA_VISIBLE_DEVICES"] == cap.host.environment["CUDA_VISIBLE_DEVICES"]


def test_uuid_prefixes_in_cuda_visible_devices_follow_their_gpus() -> None:
    cap = load_sample("h800-8gpu-hgx")
    first, second = cap.gpus[0].uuid or "", cap.gpus[1].uuid or ""
    cap.host.environment = {"CUDA_VISIBLE_DEVICES": f"{second[:12]},{first}"}
    red = redact_capture(cap)
    prefix, full = red.host.environment["CUDA_VISIBLE_DEVICES"].split(",")
    assert full == red.gpus[0].uuid
    assert red.gpus[1].uuid and red.gpus[1].uuid.startswith(prefix) and len(prefix) == 12
    assert _verdicts(red)["env.nccl"] == _verdicts(cap)["env.nccl"]


def test_paths_notes_and_processes() -> None:
    cap = _dress(load_sample("h800-8gpu-hgx"), "gpu-node-17")
    red = redact_capture(cap)
    assert re.fullmatch(
        r"/home/redacted-user-1/redacted-folder-\d+/redacted-host-1-topo\.txt",
        red.origin.sources[0].path,
    )
    assert red.origin.note == "pasted by redacted-user-1 from 192.0.2.1"
    assert red.host.processes[0].name == "redacted-process-1"
    assert red.host.processes[0].pid == 4242


def test_short_host_names_do_not_rewrite_prose() -> None:
    cap = load_sample("h800-8gpu-hgx")
    cap.host.hostname = "on"
    cap.origin.note = "P2P on 8 GPUs, pcie gen on"
    assert redact_capture(cap).origin.note == cap.origin.note
    cap.host.hostname = "dgx03"
    cap.origin.note = "pasted from dgx03 (dgx03.lab, dgx03-topo.txt) not dgx031"
    assert redact_capture(cap).origin.note == (
        "pasted from redacted-host-1 (redacted-host-1.lab, redacted-host-1-topo.txt) not dgx031"
    )


def test_redacting_twice_is_stable() -> None:
    red = redact_capture(_dress(load_sample("h800-8gpu-hgx"), "pc"))
    again = redact_capture(red)
    assert again.host.hostname == red.host.hostname
    assert [g.uuid for g in again.gpus] == [g.uuid for g in red.gpus]


def test_check_report_redacted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cap = _dress(load_sample("h800-8gpu-hgx"), "gpu-node-17")
    cap.host.processes = [
        GpuProcess(pid=4242, name=SECRETS["process"], gpus=[0], cpu_affinity="100-120")
    ]
    path = save_capture(cap, tmp_path / "gpu-node-17.json")
    plain = tmp_path / "plain.json"
    code = main(["check", "--from", str(path), "-o", str(plain)])
    assert SECRETS["process"] in plain.read_text()  # the finding names the process
    redacted = tmp_path / "redacted.json"
    assert main(["check", "--from", str(path), "-o", str(redacted), "--redact"]) == code
    text = redacted.read_text()
    for secret in [*SECRETS.values(), "gpu-node-17"]:
        assert secret not in text, secret
    data = json.loads(text)
    before = {c["id"]: c["severity"] for c in json.loads(plain.read_text())["checks"]}
    assert {c["id"]: c["severity"] for c in data["checks"]} == before
    assert load_capture(redacted).origin.redacted
    for suffix in (".md", ".html"):
        out = tmp_path / f"r{suffix}"
        main(["check", "--from", str(path), "-o", str(out), "--redact"])
        body = out.read_text()
        assert SECRETS["process"] not in body and SECRETS["ip"] not in body
    capsys.readouterr()
    assert main(["check", "--from", str(path), "--json", "--redact"]) == code
    out = capsys.readouterr().out
    assert SECRETS["process"] not in out and "gpu-node-17" not in out
    assert main(["check", "--from", str(path), "--redact"]) == 3
    assert "add -o FILE or --json" in capsys.readouterr().err


def test_report_from_a_redacted_capture_does_not_name_its_folder(tmp_path: Path) -> None:
    cap = _dress(load_sample("h800-8gpu-hgx"), "gpu-node-17")
    home = tmp_path / "home" / SECRETS["user"]
    home.mkdir(parents=True)
    path = save_capture(redact_capture(cap), home / "box.json")
    report = tmp_path / "r.json"
    main(["check", "--from", str(path), "-o", str(report)])
    text = report.read_text()
    for secret in [*SECRETS.values(), "gpu-node-17"]:
        assert secret not in text, secret
    assert json.loads(text)["source"]["path"] == "box.json"


EVIDENCE = Path(__file__).resolve().parents[2] / "shared" / "realdata-evidence"


@pytest.mark.skipif(not EVIDENCE.is_dir(), reason="../shared/realdata-evidence not present")
def test_imported_nccl_evidence_is_redacted_with_the_same_verdicts() -> None:
    from pcidoc.collect.capture import _evidence_hosts
    from pcidoc.collect.importers import import_paths
    from pcidoc.errors import PcidocError

    files = sorted(
        p
        for folder in ("nccl-log", "nccl-tests-multinode")
        for p in (EVIDENCE / folder).glob("*")
        if p.suffix != ".md"
    )
    checked = 0
    for path in files:
        try:
            cap = import_paths([str(path)]).capture
        except PcidocError:
            continue
        red = redact_capture(cap)
        assert _verdicts(red) == _verdicts(cap), path.name
        hosts = set(_evidence_hosts(cap.model_dump(mode="json").get("evidence")))
        data = red.model_dump(mode="json").get("evidence")
        assert not set(_evidence_hosts(data)) & hosts, path.name
        checked += 1
    assert checked


def test_every_string_field_is_walked_evidence_and_folders_included() -> None:
    """Issue 23: `capture --redact` kept NCCL_TOPO_FILE=/home/alice/acme/topo.xml in
    evidence.topo_file_env while host.environment showed it redacted, and folder names such as
    /srv/acme-corp/ stayed everywhere."""
    cap = _dress(load_sample("h800-8gpu-hgx"), "gpu-node-17")
    from pcidoc.model.evidence import ImportedEvidence

    cap.evidence = ImportedEvidence(topo_file_env="/home/alice/acme/topo.xml")
    cap.host.environment["NCCL_TOPO_FILE"] = "/home/alice/acme/topo.xml"
    cap.host.environment["NCCL_DEBUG_FILE"] = "/srv/acme-corp/logs/nccl.%h.log"
    cap.origin.note = "copied from /home/redacted-user-1/secret-project/run3/out.txt"
    red = redact_capture(cap)
    text = red.model_dump_json()
    for secret in ("alice", "acme", "secret-project", "run3"):
        assert secret not in text, secret
    assert red.evidence.topo_file_env == red.host.environment["NCCL_TOPO_FILE"]
    assert red.evidence.topo_file_env.endswith("/topo.xml")  # the file name stays
    assert red.host.environment["NCCL_DEBUG_FILE"].startswith("/srv/redacted-folder-")
    # System paths name software, not people: kept.
    cap.host.environment["NCCL_NET_PLUGIN"] = "/usr/lib/x86_64-linux-gnu/libnccl-net.so"
    red = redact_capture(cap)
    assert red.host.environment["NCCL_NET_PLUGIN"] == "/usr/lib/x86_64-linux-gnu/libnccl-net.so"

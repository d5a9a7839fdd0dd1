"""Every real paste in ../shared/realdata-evidence imports, with the facts its note states, and
the nccl.* checks draw the conclusion the note gives.

Files are globbed (a new file at least must import and diagnose without an error); the table
adds what each note says. More cases of each kind are held out, so nothing here is keyed to a
file's exact bytes: expectations are the facts a reader of the note would check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pcidoc.collect.importers import import_texts, scan
from pcidoc.doctor import run
from pcidoc.model.capture import Capture
from pcidoc.model.report import Report, ReportSource
from tests.conftest import REALDATA, read_realdata

EVIDENCE = REALDATA.parent / "realdata-evidence"


def _files() -> list[str]:
    if not EVIDENCE.is_dir():
        return []
    return sorted(str(p.relative_to(EVIDENCE)) for p in EVIDENCE.glob("*/*.txt"))


def _read(relpath: str) -> str:
    return read_realdata("../realdata-evidence/" + relpath)


def _log(c: Capture) -> Any:
    assert c.evidence is not None and c.evidence.nccl_logs
    return c.evidence.nccl_logs[0]


def _run(c: Capture) -> Any:
    assert c.evidence is not None and c.evidence.test_runs
    return c.evidence.test_runs[0]


def _topo(c: Capture) -> Any:
    assert c.evidence is not None and c.evidence.nccl_topologies
    return c.evidence.nccl_topologies[0]


def _klog(c: Capture) -> Any:
    assert c.evidence is not None and c.evidence.kernel_logs
    return c.evidence.kernel_logs[0]


def _transports(c: Capture) -> set[str]:
    return {conn.transport for conn in _log(c).connections}


Fact = tuple[Callable[[Capture], Any], Any]

# file -> (facts, {check id: allowed severities}, words the check's text must contain)
EXPECTED: dict[str, tuple[list[Fact], dict[str, set[str]], dict[str, str]]] = {
    "nccl-log/8gpu-2node-ibext-plugin-ib-no-device-fallback-net-socket-over-ipoib-nccl-952.txt": (
        [
            (lambda c: _log(c).net_plugin, "IBext"),
            (lambda c: _log(c).cuda_driver_version, "12.1"),
            (lambda c: _log(c).bootstrap_if, "ibp12s0"),
            (lambda c: _transports(c), {"P2P", "NET"}),
            (
                lambda c: {x.network for x in _log(c).connections if x.transport == "NET"},
                {"Socket"},
            ),
        ],
        {"nccl.network": {"warn"}, "nccl.transport": {"pass"}},
        {"nccl.network": "sockets"},
    ),
    "nccl-log/8gpu-single-process-p2p-direct-pointer-plus-shm-across-sockets-stuck-nccl-1027.txt": (
        [
            (lambda c: _transports(c), {"P2P", "SHM"}),
            (
                lambda c: [
                    (x.src_rank, x.dst_rank) for x in _log(c).connections if x.transport == "SHM"
                ],
                [(3, 4)],
            ),
        ],
        {"nccl.transport": {"info"}},
        {"nccl.transport": "cpu interconnect"},
    ),
    "nccl-log/aws-p4d-2node-efa-aws-libfabric-no-gdrdma-nccl-2.7.8-aws-ofi-nccl-64.txt": (
        [
            (lambda c: _log(c).nranks, 16),
            (lambda c: {r.bus_id for r in _log(c).ranks}, {"0000:10:1c.0", "0000:10:1d.0"}),
            (
                lambda c: {x.network for x in _log(c).connections if x.transport == "NET"},
                {"AWS Libfabric"},
            ),
            (lambda c: {x.gdr for x in _log(c).connections if x.transport == "NET"}, {False}),
        ],
        {"nccl.network": {"warn"}, "nccl.transport": {"pass"}},
        {"nccl.network": "gpudirect rdma"},
    ),
    "nccl-log/azure-vm-4gpu-p2p-disabled-between-connected-gpus-ib-disabled-socket-nccl-1214.txt": (
        [
            (lambda c: _log(c).env.get("NCCL_IB_DISABLE"), "1"),
            (lambda c: _log(c).network, "Socket"),
            (lambda c: _log(c).ranks[0].bus_id, "0001:00:00.0"),
            (lambda c: len(_log(c).p2p_refused) >= 4, True),
        ],
        {
            "nccl.transport": {"warn"},
            "nccl.network": {"info", "warn"},
            "nccl.env-ignored": {"pass"},
        },
        {"nccl.transport": "virtual machine"},
    ),
    "nccl-log/docker-4gpu-horovod-direct-shared-memory-posix-fallocate-no-space-dev-shm-nccl-290.txt": (  # noqa: E501
        [
            (lambda c: _transports(c), {"SHM"}),
            (lambda c: len(_log(c).shm_errors) >= 1, True),
        ],
        {"nccl.shm": {"fail"}},
        {"nccl.shm": "--shm-size"},
    ),
    "nccl-log/docker-roce-bond-ibv-open-device-failed-fallback-socket-no-prefix-nccl-451.txt": (
        [
            (lambda c: _log(c).network, "Socket"),
            (lambda c: _log(c).env.get("NCCL_IB_DISABLE"), "0"),
            (lambda c: len(_log(c).ib_unusable) >= 2, True),
            (lambda c: [n.name for n in _log(c).socket_nics], ["bond0"]),
        ],
        {"nccl.network": {"warn"}},
        {"nccl.network": "/dev/infiniband"},
    ),
    "nccl-log/h20-2node-subsys-init-env-graph-rings-trees-gdrdma-p2p-cumem-nccl-1189.txt": (
        [
            (lambda c: (_log(c).nranks, _log(c).nnodes), (4, 2)),
            (
                lambda c: {x.detail for x in _log(c).connections if x.transport == "P2P"},
                {"P2P/CUMEM"},
            ),
            (lambda c: {x.gdr for x in _log(c).connections if x.transport == "NET"}, {True}),
        ],
        {"nccl.network": {"pass"}, "nccl.transport": {"pass"}},
        {},
    ),
    "nccl-log/roce-2hca-gpu-direct-rdma-disabled-for-hca-peermem-loaded-kernel-6.6-nccl-1537.txt": (
        [
            (
                lambda c: [(n.name, n.link_layer) for n in _log(c).ib_nics],
                [("mlx5_0", "RoCE"), ("mlx5_1", "RoCE")],
            ),
            (lambda c: len(_log(c).gdr_disabled), 2),
            (lambda c: _log(c).network, "IB"),
        ],
        {"nccl.network": {"warn"}},
        {"nccl.network": "memory_peers"},
    ),
    "nccl-log/rtx3090-2node-could-not-enable-p2p-shm-fallback-net-ib-shared-nccl-1516.txt": (
        [
            (lambda c: _log(c).env, {"NCCL_PROTO": "LL", "NCCL_ALGO": "Tree"}),
            (
                lambda c: {x.detail for x in _log(c).connections if x.transport == "NET"},
                {"NET/IB/1/Shared"},
            ),
            (lambda c: {r.bus_id for r in _log(c).ranks}, {"0000:81:00.0"}),
        ],
        {"nccl.transport": {"warn"}, "nccl.network": {"warn", "info"}},
        {"nccl.transport": "shm"},
    ),
    "nccl-topo-xml/a100-sxm4-8gpu-pex-switches-nvswitch-12links-5-roce-bonds-dump-aliyun-simai.txt": (  # noqa: E501
        [
            (lambda c: (len(c.gpus), len(c.nics)), (8, 5)),
            (lambda c: c.topology.link("GPU0", "GPU7"), "NV12"),
            (lambda c: c.topology.link("GPU0", "NIC1"), "PXB"),
            (lambda c: c.topology.link("GPU0", "GPU4"), "NV12"),
            (lambda c: c.nics[0].name, "mlx5_bond_0"),
            (lambda c: (c.gpu(4).numa_node, c.gpu(0).bus_id), (1, "0000:13:00.0")),
        ],
        {"nccl.topo-file": {"pass"}},
        {},
    ),
    "nccl-topo-xml/aws-g5-48xlarge-a10g-8gpu-2numa-busids-only-static-topo-aws-ofi-nccl.txt": (
        [
            (lambda c: len(_topo(c).pci), 9),
            (lambda c: sorted({p.numaid for p in _topo(c).pci}), [0, 1]),
            (lambda c: len(c.gpus), 0),
        ],
        {"nccl.topo-file": {"warn"}},
        {"nccl.topo-file": "arch"},
    ),
    "nccl-topo-xml/aws-p4d-24xlarge-a100-8gpu-4switch-4efa-static-topo-aws-ofi-nccl.txt": (
        [
            (lambda c: (len(c.gpus), len(c.nics)), (8, 4)),
            (lambda c: c.topology.link("GPU0", "GPU1"), "PIX"),
            (lambda c: c.topology.link("GPU0", "NIC0"), "PIX"),
            (lambda c: c.topology.link("GPU0", "GPU2"), "PHB"),
            (lambda c: c.topology.link("GPU0", "GPU4"), "SYS"),
        ],
        {"nccl.topo-file": {"pass"}},
        {},
    ),
    "nccl-topo-xml/aws-p5-48xlarge-h100-2socket-8switch-32efa-no-gpus-static-topo-aws-ofi-nccl.txt": (  # noqa: E501
        [
            (lambda c: len([p for p in _topo(c).pci if p.kind == "bridge"]), 8),
            (lambda c: len(c.gpus), 0),
            (lambda c: any("32 GT/s PCIe/s" in p for p in _topo(c).problems), True),
        ],
        {"nccl.topo-file": {"info"}},
        {},
    ),
    "nccl-topo-xml/azure-ndv2-v100-8gpu-2numa-1ib-static-topo-azhpc-images.txt": (
        [
            (lambda c: (len(c.gpus), len(c.nics)), (8, 1)),
            (lambda c: c.topology.link("GPU4", "NIC0"), "SYS"),
            (lambda c: c.gpu(0).cpu_affinity, "0-19"),
        ],
        {"nccl.topo-file": {"pass"}},
        {},
    ),
    "nccl-topo-xml/azure-ndv4-a100-8gpu-4numa-8ib-static-topo-azhpc-images.txt": (
        [
            (lambda c: (len(c.gpus), len(c.nics)), (8, 8)),
            (lambda c: sorted({g.numa_node for g in c.gpus}), [0, 1, 2, 3]),
        ],
        {"nccl.topo-file": {"pass"}},
        {},
    ),
    "nccl-topo-xml/azure-ndv5-h100-8gpu-2numa-8ib-static-topo-azhpc-images.txt": (
        [
            (lambda c: (len(c.gpus), len(c.nics)), (8, 8)),
            (lambda c: _topo(c).cpus[0].modelid, 143),
        ],
        {"nccl.topo-file": {"pass"}},
        {},
    ),
    "lspci/acsctl-grep-redirect-on-some-bridges-illegal-memory-access-nccl-629.txt": (
        [(lambda c: sum(1 for d in c.evidence.lspci if d.acs_redirect), 1)],  # type: ignore[union-attr]
        {"nccl.acs-redirect": {"warn"}},
        {"nccl.acs-redirect": "setpci"},
    ),
    "lspci/acsctl-grep-srcvalid-only-amd-switch-rtx-a6000-hang-nccl-606.txt": (
        [(lambda c: [d.acs_redirect for d in c.evidence.lspci], [False] * 9)],  # type: ignore[union-attr]
        {"nccl.acs-redirect": {"pass"}},
        {},
    ),
    "lspci/quadro-rtx8000-raspberry-pi-gen2-x1-both-downgraded-aer-advnonfatal-geerlingguy-480.txt": (  # noqa: E501
        [
            (
                lambda c: (c.evidence.lspci[0].lnksta_gts, c.evidence.lspci[0].lnksta_width),
                (5.0, 1),
            ),  # type: ignore[union-attr]
            (lambda c: c.evidence.lspci[0].correctable, ["AdvNonFatalErr"]),  # type: ignore[union-attr]
        ],
        {"nccl.lspci-link": {"warn"}},
        {"nccl.lspci-link": "lanes"},
    ),
    "lspci/rtx-a4000-space-indented-2.5gt-downgraded-x16-devsta-correrr-unsupreq-geerlingguy-692.txt": (  # noqa: E501
        [
            (
                lambda c: (c.evidence.lspci[0].lnkcap_gts, c.evidence.lspci[0].lnksta_gts),
                (16.0, 2.5),
            ),  # type: ignore[union-attr]
            (lambda c: c.evidence.lspci[0].devsta_errors, ["CorrErr", "UnsupReq"]),  # type: ignore[union-attr]
        ],
        {"nccl.lspci-link": {"info"}},
        {"nccl.lspci-link": "load"},
    ),
    "collect-env/torch-1.10-collect-env-3x-quadro-rtx6000-ddp-freeze-pytorch-68917.txt": (
        [
            (lambda c: c.evidence.env_reports[0].gpu_models, ["Quadro RTX 6000"] * 3),  # type: ignore[union-attr]
            (lambda c: c.driver.driver_version, "495.29.05"),
            (lambda c: c.evidence.env_reports[0].kernel, "5.4.0-90-generic"),  # type: ignore[union-attr]
            (lambda c: c.evidence.env_reports[0].torch_version, "1.10.0"),  # type: ignore[union-attr]
        ],
        {},
        {},
    ),
    "collect-env/vllm-0.11-8gpu-nv18-18nics-4-numa-split-section-banners-vllm-25848.txt": (
        [
            (lambda c: (len(c.gpus), len(c.nics)), (8, 18)),
            (lambda c: c.topology.link("GPU2", "NIC4"), "PIX"),
            (lambda c: c.gpu(2).numa_node, 2),
            (lambda c: c.evidence.env_reports[0].tool, "vllm"),  # type: ignore[union-attr]
        ],
        {"nccl.nic-inventory": {"info"}},
        {"nccl.nic-inventory": "nic0"},
    ),
    "collect-env/vllm-0.8.5-2gpu-nv12-slice-8nics-blank-cpu-numa-affinity-vllm-19607.txt": (
        [
            (lambda c: c.topology.link("GPU0", "GPU1"), "NV12"),
            (lambda c: c.evidence.env_reports[0].vllm_version, "0.8.5.post1"),  # type: ignore[union-attr]
        ],
        {"nccl.nic-inventory": {"pass"}},
        {"nccl.nic-inventory": "nic6"},
    ),
    "collect-env/vllm-dev-8gpu-nv18-8nic-2-per-pix-pair-trailing-tabs-vllm-22372.txt": (
        [
            (lambda c: c.topology.link("GPU0", "GPU7"), "NV18"),
            (lambda c: c.evidence.env_reports[0].cuda_archs, "9.0a 10.0"),  # type: ignore[union-attr]
        ],
        {"nccl.nic-inventory": {"pass"}},
        {},
    ),
    "nccl-tests-multinode/a100-pcie-2node-1gpu-each-ibext-v8-gdr-level2-nps4-fix-9gbps-nccl-tests-293.txt": (  # noqa: E501
        [
            (lambda c: _run(c).hosts, ["test1", "test2"]),
            (lambda c: _log(c).version, "2.21.5"),
            (lambda c: _log(c).net_plugin, "IBext_v8"),
        ],
        {"nccl.tests-launch": {"pass"}, "nccl.version": {"pass"}},
        {},
    ),
    "nccl-tests-multinode/h100-2node-srun-pmix-using-devices-worker-1-worker-0-soperator-428.txt": (
        [
            (lambda c: _run(c).hosts, ["worker-1", "worker-0"]),
            (lambda c: {r.host for r in _run(c).ranks if r.pid == 1887}, {"worker-1", "worker-0"}),
        ],
        {"nccl.tests-launch": {"pass"}},
        {},
    ),
    "nccl-tests-multinode/h100-2vm-16rank-using-devices-virtual-domain-busids-nccl-tests-294-followup.txt": (  # noqa: E501
        [
            (lambda c: _run(c).hosts, ["h100-2", "h100-4"]),
            (lambda c: _run(c).ranks[4].bus, "0003:00:01"),
        ],
        {"nccl.tests-launch": {"info"}},
        {"nccl.tests-launch": "nccl_topo_file"},
    ),
    "amd/rccl-tests-mi300x-2node-enroot-slurm-collective-test-starting-container-toolkit-77.txt": (
        [(lambda c: (_run(c).tool, _run(c).version), ("rccl-tests", "develop:5272cd1"))],
        {"nccl.tests-launch": {"pass"}},
        {},
    ),
    "amd/rccl-tests-mi300x-8gpu-single-node-version-line-first-row-161gbps-hpc-ai-envs-30.txt": (
        [
            (
                lambda c: (_run(c).tool, len(_run(c).ranks), _run(c).gpus_per_process),
                ("rccl-tests", 8, 8),
            ),
            (lambda c: c.measurements.collectives[-1].peak_busbw().busbw_gbps, 161.14),  # type: ignore[union-attr]
        ],
        {"nccl.tests-launch": {"pass"}},
        {},
    ),
    "amd/rccl-tests-ainic-allreduce-tail-360gbps-avg-142-collective-test-concluded-rccl-2078.txt": (
        [(lambda c: c.measurements.collectives[0].peak_busbw().busbw_gbps, 360.98)],  # type: ignore[union-attr]
        {},
        {},
    ),
    "kernel-log/aer-correctable-dll-timeout-badtlp-amd-root-port-03.1-desktop-pop-os-3363.txt": (
        [
            (lambda c: {e.severity for e in _klog(c).aer}, {"corrected"}),
            (lambda c: {e.bus_id for e in _klog(c).aer}, {"0000:00:03.1"}),
            (lambda c: {e.layer for e in _klog(c).aer}, {"Data Link Layer"}),
            (lambda c: {b for e in _klog(c).aer for b in e.bits}, {"Timeout", "BadTLP"}),
        ],
        {"kernel.aer": {"warn"}, "kernel.xid": {"pass"}, "kernel.iommu-fault": {"pass"}},
        {"kernel.aer": "00:03.1"},
    ),
    "kernel-log/aer-uncorrected-fatal-cmpltto-sdes-root-port-reset-gpu-03-hardware-returnn-1500.txt": (  # noqa: E501
        [
            (lambda c: [(e.severity, e.bus_id) for e in _klog(c).aer], [("fatal", "0000:00:03.0")]),
            (lambda c: _klog(c).aer[0].bits, ["SDES", "CmpltTO"]),
            (
                lambda c: "0000:03:00.0" in {r.bus_id for r in _klog(c).aer_recovery},
                True,
            ),
        ],
        {"kernel.aer": {"fail"}},
        {"kernel.aer": "0000:03:00.0"},
    ),
    "kernel-log/amd-vi-io-page-fault-07-p2p-samples-crash-iommu-on-cuda-samples-48.txt": (
        [
            (
                lambda c: {(f.iommu, f.kind, f.bus_id) for f in _klog(c).iommu_faults},
                {("AMD-Vi", "IO_PAGE_FAULT", "0000:07:00.0")},
            ),
            (lambda c: _klog(c).iommu_faults[0].address, "0x80000040"),
        ],
        {"kernel.iommu-fault": {"fail"}, "kernel.aer": {"pass"}},
        {"kernel.iommu-fault": "iommu=pt"},
    ),
    "kernel-log/fallen-off-bus-multiline-no-xid-b3-probe-failed-open-570-nvsentinel-155.txt": (
        [
            (lambda c: [e.bus_id for e in _klog(c).fallen_off_bus], ["0000:b3:00.0"]),
            (lambda c: _klog(c).xids, []),
        ],
        {"kernel.xid": {"fail"}},
        {"kernel.xid": "fallen off the bus"},
    ),
    "kernel-log/rtx-pro-6000-x8-pex890xx-clean-boot-iommu-off-aer-firmware-first-rtx6kpro.txt": (
        [
            (lambda c: len(_klog(c).nvidia_devices), 8),
            (lambda c: (_klog(c).xids, _klog(c).aer, _klog(c).iommu_faults), ([], [], [])),
            (lambda c: _klog(c).firmware_first is not None, True),
        ],
        {
            "kernel.xid": {"pass"},
            "kernel.aer": {"pass", "info"},
            "kernel.iommu-fault": {"pass"},
            "pcie.link-flap": {"skip", "pass", "info"},
        },
        {"kernel.aer": "firmware"},
    ),
    "kernel-log/xid145-xid137-nvlink-rlw-link11-b200-redacted-pci-nccl-2241.txt": (
        [
            (
                lambda c: [(e.code, e.link, e.bus_id) for e in _klog(c).xids],
                [(145, 11, None), (137, 11, None)],
            ),
        ],
        {"kernel.xid": {"warn", "fail"}},
        {"kernel.xid": "nvlink 11"},
    ),
    "link-flap/amd-gpu-behind-card-switch-sysfs-16gt-x8-vs-endpoint-32gt-x16-pp-dpm-pcie-levels-resources-512.txt": (  # noqa: E501
        [
            (
                lambda c: {
                    (t.bus_id, t.samples[0].gen, t.samples[0].width)
                    for t in c.evidence.link_histories[0].traces
                },  # type: ignore[union-attr]
                {("0000:01:00.0", 4, 8), ("0000:03:00.0", 5, 16)},
            ),
        ],
        {"pcie.link-flap": {"warn"}},
        {"pcie.link-flap": "0000:01:00.0: trained at gen4 x8 of gen5 x16"},
    ),
    "link-flap/rtx-pro-6000-x8-16-query-snapshots-all-gen5-x16-stable-rtx6kpro.txt": (
        [
            (lambda c: c.evidence.link_histories[0].readings, 16),  # type: ignore[union-attr]
            (lambda c: len(c.evidence.link_histories[0].traces), 8),  # type: ignore[union-attr]
        ],
        {"pcie.link-flap": {"pass"}},
        {},
    ),
}


def _report(relpath: str) -> tuple[Capture, Report]:
    scan.RAISE_PARSER_ERRORS = True
    try:
        capture = import_texts([(relpath.split("/")[-1], _read(relpath))]).capture
    finally:
        scan.RAISE_PARSER_ERRORS = False
    return capture, run(
        capture, ReportSource(kind="import", path=relpath), generated_at="2026-01-01T00:00:00Z"
    )


@pytest.mark.parametrize("relpath", _files())
def test_evidence_file_imports_and_diagnoses(relpath: str) -> None:
    capture, report = _report(relpath)
    assert not [r.id for r in report.checks if r.severity == "error"]
    # What no paste can show (the driver now, ACS/IOMMU from sysfs, the job's environment and
    # processes) never passes on an import; every nccl.* warning or failure quotes its evidence.
    for check_id in ("nvml.health", "p2p.acs-iommu", "env.nccl", "numa.process-affinity"):
        assert report.check(check_id).severity != "pass", check_id  # type: ignore[union-attr]
    for result in report.checks:
        if result.id.startswith("nccl.") and result.severity in ("warn", "fail"):
            assert result.evidence and result.remediation, (relpath, result.id)
    facts, verdicts, words = EXPECTED.get(relpath, ([], {}, {}))
    for fact, want in facts:
        assert fact(capture) == want, (relpath, want)
    by_id = {r.id: r for r in report.checks}
    for check_id, allowed in verdicts.items():
        result = by_id[check_id]
        assert result.severity in allowed, (relpath, check_id, result.severity, result.summary)
        if result.severity in ("warn", "fail", "info"):
            assert result.evidence or result.remediation, (relpath, check_id)
    for check_id, text in words.items():
        result = by_id[check_id]
        blob = " ".join(
            [result.summary, *result.remediation, *(e.text() for e in result.evidence)]
        ).lower()
        assert text.lower() in blob, (relpath, check_id, text)


def test_every_expectation_names_a_file() -> None:
    files = set(_files())
    if not files:
        pytest.skip("realdata-evidence not present")
    assert set(EXPECTED) <= files

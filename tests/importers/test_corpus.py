"""Every real paste in ../shared/realdata imports; known facts per file are checked.

Each file is read with ``read_realdata`` (its three metadata lines removed). Files discovered by
globbing get at least the no-crash check; the table below adds what each file's note and the
INDEX say about it (GPU/NIC counts, link classes, measured values, expected warnings).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pcidoc.collect.importers import import_texts
from pcidoc.model.capture import Capture
from pcidoc.model.measurements import (
    CollectiveMeasurement,
    P2PMatrixMeasurement,
    TransferMeasurement,
)
from tests.conftest import read_realdata, realdata_dir

Check = Callable[[Capture], Any]


def p2pm(cap: Capture, **want: Any) -> P2PMatrixMeasurement:
    """The single P2P matrix measurement matching ``want``."""
    found = [m for m in cap.measurements.p2p if all(getattr(m, k) == v for k, v in want.items())]
    assert len(found) == 1, (want, found)
    return found[0]


def transfer(cap: Capture, **want: Any) -> TransferMeasurement:
    """The single transfer measurement matching ``want``."""
    found = [
        m for m in cap.measurements.transfers if all(getattr(m, k) == v for k, v in want.items())
    ]
    assert len(found) == 1, (want, found)
    return found[0]


def collective(cap: Capture) -> CollectiveMeasurement:
    """The only collective measurement."""
    assert len(cap.measurements.collectives) == 1
    return cap.measurements.collectives[0]


def peak(cap: Capture) -> tuple[int, float | None]:
    """(size, busbw) of the out-of-place peak."""
    row = collective(cap).peak_busbw()
    assert row is not None
    return row.size_bytes, row.busbw_gbps


def gpu(cap: Capture, index: int) -> Any:
    """The GPU with ``index`` (must exist)."""
    found = cap.gpu(index)
    assert found is not None, index
    return found


def nvlinks(cap: Capture, index: int) -> list[tuple[int, str | None, float | None]]:
    """(link, state, speed) of one GPU."""
    return [(n.link, n.state, n.speed_gbps) for n in gpu(cap, index).nvlinks]


# Per file: gpus / nics counts, links {(a, b): class}, nic_names {label: name},
# warnings (substrings that must appear), quiet (no warning at all), checks [(fn, expected)].
EXPECTED: dict[str, dict[str, Any]] = {
    # ------------------------------------------------------------------------------ topo
    "topo/2gpu-node-ns-indented-wrapped-paste-club3090-1125.txt": {
        "gpus": 2,
        "nics": 0,
        "links": {("GPU0", "GPU1"): "NODE"},
        "warnings": ["capability (r/w/n/a/p) is not shown; stored as 'read'"],
        "checks": [
            (lambda c: c.p2p.status("read", 0, 1), "NS"),
            (lambda c: gpu(c, 1).cpu_affinity, "0-15"),
        ],
    },
    "topo/2gpu-nv12-slice-8-mlx5-columns-lmdeploy-1944.txt": {
        "gpus": 2,
        "nics": 8,
        "links": {
            ("GPU0", "GPU1"): "NV12",
            ("GPU0", "NIC6"): "PXB",
            ("GPU1", "NIC4"): "NODE",
            ("GPU0", "NIC0"): "SYS",
            ("NIC0", "NIC1"): "PIX",
            ("NIC4", "NIC6"): "NODE",
        },
        "nic_names": {"NIC0": "mlx5_0", "NIC6": "mlx5_6", "NIC7": "mlx5_7"},
        "quiet": True,
        "checks": [
            (lambda c: (gpu(c, 0).numa_node, gpu(c, 0).cpu_affinity), (1, "48-95,144-191")),
        ],
    },
    "topo/2gpu-nv2-bridge-ml-engineering.txt": {
        "gpus": 2,
        "nics": 0,
        "links": {("GPU0", "GPU1"): "NV2"},
        "quiet": True,
        "checks": [
            (lambda c: gpu(c, 0).numa_node, None),
            (lambda c: gpu(c, 0).cpu_affinity, "0-23"),
        ],
    },
    "topo/2gpu-phb-no-nvlink-ml-engineering.txt": {
        "gpus": 2,
        "nics": 0,
        "links": {("GPU1", "GPU0"): "PHB"},
        "quiet": True,
    },
    "topo/3gpu-nv4-pair-plus-pcie-gpu-2mlx5-nccl-tests-320.txt": {
        "gpus": 3,
        "nics": 2,
        "links": {
            ("GPU0", "GPU1"): "NV4",
            ("GPU2", "GPU0"): "NODE",
            ("GPU2", "NIC0"): "PHB",
            ("GPU0", "NIC1"): "NODE",
            ("NIC0", "NIC1"): "PIX",
        },
        "nic_names": {"NIC0": "mlx5_0", "NIC1": "mlx5_1"},
        "quiet": True,
    },
    "topo/4gpu-pxb-pix-hang-vtd-nccl-667.txt": {
        "gpus": 4,
        "nics": 0,
        "links": {("GPU0", "GPU1"): "PXB", ("GPU2", "GPU3"): "PIX", ("GPU1", "GPU2"): "SYS"},
        "quiet": True,
        "checks": [(lambda c: [g.numa_node for g in c.gpus], [0, 0, 1, 1])],
    },
    "topo/5gpu-4090-mixed-sys-phb-node-club3090-46.txt": {
        "gpus": 5,
        "nics": 0,
        "links": {
            ("GPU0", "GPU3"): "SYS",
            ("GPU1", "GPU2"): "PHB",
            ("GPU3", "GPU4"): "PHB",
            ("GPU2", "GPU4"): "NODE",
        },
        "quiet": True,
        "checks": [(lambda c: gpu(c, 0).cpu_affinity, "8-15,24-31")],
    },
    "topo/a100-2gpu-slurm-slice-nv12-10nic-dask-cuda-1358.txt": {
        "gpus": 2,
        "nics": 10,
        "links": {
            ("GPU0", "GPU1"): "NV12",
            ("GPU0", "NIC0"): "PXB",
            ("GPU1", "NIC9"): "SYS",
            ("NIC2", "NIC3"): "PXB",
            ("NIC3", "NIC4"): None,
        },
        "warnings": ["rows NIC3-NIC9 missing; filled 35 cells from symmetry, 42 unknown"],
        "checks": [(lambda c: gpu(c, 1).numa_node, 3)],
    },
    "topo/a100-4gpu-nv4-4nic-pxb-cpu-affinity-0-numa-0-1-nccl-tests-331.txt": {
        "gpus": 4,
        "nics": 4,
        "links": {("GPU0", "GPU3"): "NV4", ("GPU1", "NIC1"): "PXB", ("GPU1", "NIC0"): "SYS"},
        "nic_names": {"NIC0": "mlx5_0", "NIC1": "mlx5_1", "NIC2": None},
        "warnings": ["NIC legend: no name for NIC2, NIC3"],
        "checks": [
            (lambda c: (gpu(c, 0).cpu_affinity, gpu(c, 0).numa_affinity), ("0", "0-1")),
            (lambda c: gpu(c, 0).numa_node, None),
        ],
    },
    "topo/a100-sxm4-80gb-x8-nv12-4nic-all-sys-distserve-3.txt": {
        "gpus": 8,
        "nics": 4,
        "links": {("GPU0", "GPU7"): "NV12", ("GPU3", "NIC2"): "SYS", ("NIC2", "NIC3"): "PIX"},
        "nic_names": {"NIC3": "mlx5_3"},
        "quiet": True,
        "checks": [(lambda c: gpu(c, 5).cpu_affinity, "64-127,192-254")],
    },
    "topo/a100-sxm4-8gpu-nv12-17nic-bond-single-numa-xuesongtap.txt": {
        "gpus": 8,
        "nics": 17,
        "links": {
            ("GPU0", "NIC0"): "PXB",
            ("GPU7", "NIC15"): "PXB",
            ("GPU0", "NIC16"): "SYS",
            ("NIC14", "NIC15"): "PIX",
            ("GPU4", "GPU5"): "NV12",
        },
        "nic_names": {"NIC0": "mlx5_2", "NIC16": "mlx5_bond_0"},
        "quiet": True,
        "checks": [(lambda c: {g.numa_node for g in c.gpus}, {0})],
    },
    "topo/a100x8-nv12-compacted-columns-ml-engineering.txt": {
        "gpus": 8,
        "nics": 0,
        "links": {("GPU0", "GPU1"): "NV12", ("GPU6", "GPU7"): "NV12"},
        "quiet": True,
        "checks": [(lambda c: (gpu(c, 4).cpu_affinity, gpu(c, 4).numa_node), ("24-47", 1))],
    },
    "topo/a10x4-all-sys-vm-2nic-xuesongtap.txt": {
        "gpus": 4,
        "nics": 2,
        "links": {("GPU0", "GPU1"): "SYS", ("GPU3", "NIC1"): "SYS", ("NIC0", "NIC1"): "PIX"},
        "quiet": True,
    },
    "topo/b200-8gpu-4numa-9nic-unsloth-3872.txt": {
        "gpus": 8,
        "nics": 9,
        "links": {
            ("GPU0", "GPU7"): "NV18",
            ("GPU0", "NIC0"): "PIX",
            ("GPU1", "NIC8"): "NODE",
            ("GPU7", "GPU2"): "NV18",
            ("GPU5", "GPU6"): None,
            ("GPU6", "NIC6"): None,
        },
        "warnings": ["rows GPU5-GPU7, NIC0-NIC8 missing; filled 60 cells from symmetry"],
        "checks": [(lambda c: gpu(c, 4).numa_node, 2), (lambda c: gpu(c, 6).cpu_affinity, None)],
    },
    "topo/gb200-4gpu-nv18-grace-k8s-test-infra-371.txt": {
        "gpus": 4,
        "nics": 0,
        "links": {("GPU0", "GPU3"): "NV18"},
        "quiet": True,
        "checks": [
            (lambda c: [(n.id, n.cpus) for n in c.host.numa_nodes], [(0, "0-71"), (1, "72-143")])
        ],
    },
    "topo/gtx1080ti-x2-desktop-phb-numa-na-xuesongtap.txt": {
        "gpus": 2,
        "nics": 0,
        "links": {("GPU0", "GPU1"): "PHB"},
        "quiet": True,
        "checks": [(lambda c: gpu(c, 1).why("numa_node") is not None, True)],
    },
    "topo/h100-4gpu-nv6-4nic-nccl-1617.txt": {
        "gpus": 4,
        "nics": 4,
        "links": {("GPU0", "GPU1"): "NV6", ("GPU2", "NIC2"): "PIX", ("GPU2", "NIC3"): "SYS"},
        "quiet": True,
        "checks": [(lambda c: [g.numa_node for g in c.gpus], [3, 1, 7, 5])],
    },
    "topo/h100-8gpu-nv18-only-4-pix-nics-nccl-tests-232.txt": {
        "gpus": 8,
        "nics": 6,
        "links": {
            ("GPU0", "NIC0"): "PIX",
            ("GPU1", "NIC0"): "SYS",
            ("GPU6", "NIC3"): "PIX",
            ("GPU7", "GPU0"): "NV18",
            ("GPU7", "NIC3"): None,
        },
        "warnings": ["rows GPU7, NIC0-NIC5 missing"],
    },
    "topo/h100-hgx-nv18-10nic-trailing-tabs-nccl-1264.txt": {
        "gpus": 8,
        "nics": 10,
        "links": {("GPU3", "NIC5"): "PIX", ("GPU7", "NIC9"): "PIX", ("NIC2", "NIC1"): "SYS"},
        "warnings": ["rows NIC3-NIC9 missing"],
        "checks": [
            (lambda c: (gpu(c, 7).numa_node, gpu(c, 7).cpu_affinity), (1, "56-111,168-223"))
        ],
    },
    "topo/h100-pcie-x2-nv12-bridged-dl380a-koga.txt": {
        "gpus": 2,
        "nics": 0,
        "links": {("GPU0", "GPU1"): "NV12"},
        "quiet": True,
    },
    "topo/h100-sxm-8gpu-nv18-thunderkittens-167.txt": {
        "gpus": 8,
        "nics": 0,
        "links": {("GPU2", "GPU5"): "NV18"},
        "quiet": True,
    },
    "topo/h100x8-nv18-compacted-columns-ml-engineering.txt": {
        "gpus": 8,
        "nics": 0,
        "links": {("GPU7", "GPU0"): "NV18"},
        "quiet": True,
        "checks": [(lambda c: gpu(c, 7).cpu_affinity, "52-103")],
    },
    "topo/h800-8gpu-nv8-2nic-pxb-vllm-8852.txt": {
        "gpus": 8,
        "nics": 2,
        "links": {("GPU2", "NIC0"): "PXB", ("GPU0", "NIC0"): "SYS", ("NIC0", "NIC1"): "SYS"},
        "quiet": True,
    },
    "topo/h800-8gpu-nv8-terminal-truncated-paste-llm-action.txt": {
        "gpus": 8,
        "nics": 4,
        "links": {
            ("GPU0", "GPU7"): "NV8",
            ("GPU1", "NIC0"): "PIX",
            ("GPU7", "NIC3"): "PIX",
            ("GPU4", "NIC0"): "SYS",
            ("NIC0", "NIC1"): None,
        },
        "nic_names": {"NIC3": "mlx5_3"},
        "warnings": [
            "header lacks the columns NIC0-NIC3",
            "CPU affinity of GPU0-GPU3, GPU7 clipped in the paste",
        ],
        "checks": [
            (lambda c: gpu(c, 0).cpu_affinity, None),
            (lambda c: gpu(c, 0).why("cpu_affinity"), "clipped in the paste: '-31,64-95'"),
            (lambda c: gpu(c, 5).cpu_affinity, "32-63,96-127"),
            (lambda c: gpu(c, 7).cpu_affinity, None),
        ],
    },
    "topo/l40s-x4-node-sys-2mlx5-warpem-106.txt": {
        "gpus": 4,
        "nics": 2,
        "links": {("GPU0", "GPU1"): "NODE", ("GPU2", "NIC1"): "NODE", ("GPU1", "NIC0"): "SYS"},
        "quiet": True,
    },
    "topo/old-format-8gpu-mlx4-pix-phb-sys-k8s-53497.txt": {
        "gpus": 8,
        "nics": 1,
        "links": {
            ("GPU0", "GPU1"): "PIX",
            ("GPU0", "GPU3"): "PHB",
            ("GPU3", "GPU4"): "SYS",
            ("GPU2", "NIC0"): "PHB",
            ("GPU4", "NIC0"): "SYS",
            ("GPU5", "GPU6"): None,
        },
        "nic_names": {"NIC0": "mlx4_0"},
        "warnings": ["rows GPU5-GPU7, NIC0 missing"],
        "checks": [(lambda c: gpu(c, 4).cpu_affinity, "10-19,30-39")],
    },
    "topo/rtx2080ti-x2-pix-container-with-p2p-ns-autodl.txt": {
        "gpus": 2,
        "nics": 0,
        "links": {("GPU0", "GPU1"): "PIX"},
        "quiet": True,
        "checks": [(lambda c: (list(c.p2p.matrices), c.p2p.status("pci", 1, 0)), (["pci"], "NS"))],
    },
    "topo/rtx3090x2-phb-patched-p2p-ok-club3090-922.txt": {
        "gpus": 2,
        "nics": 0,
        "links": {("GPU0", "GPU1"): "PHB"},
        "quiet": True,
    },
    "topo/rtx3090x2-phb-pcie-x8-club3090-104.txt": {
        "gpus": 2,
        "nics": 0,
        "links": {("GPU0", "GPU1"): "PHB"},
        "quiet": True,
    },
    "topo/rtx3090x8-pix-phb-sys-timeout-nccl-1439.txt": {
        "gpus": 8,
        "nics": 0,
        "links": {("GPU0", "GPU1"): "PIX", ("GPU4", "GPU6"): "PHB", ("GPU3", "GPU4"): "SYS"},
        "quiet": True,
    },
    "topo/rtx4090-8gpu-all-sys-2nic-go-gpuallocator-17.txt": {
        "gpus": 8,
        "nics": 2,
        "links": {("GPU6", "NIC1"): "PHB", ("GPU5", "NIC0"): "SYS", ("NIC0", "NIC1"): "PIX"},
        "quiet": True,
    },
    "topo/rtx4090x8-dual-epyc7542-nps4-4mlx5-all-sys-blog.txt": {
        "gpus": 8,
        "nics": 4,
        "links": {("GPU6", "NIC0"): "PHB", ("NIC1", "NIC2"): "PHB", ("GPU0", "GPU1"): "SYS"},
        "quiet": True,
        "checks": [(lambda c: [g.numa_node for g in c.gpus], [3, 2, 1, 0, 7, 6, 5, 4])],
    },
    "topo/rtx5070x2-phb-no-p2p-aikitoria-12.txt": {
        "gpus": 2,
        "nics": 0,
        "links": {("GPU0", "GPU1"): "PHB"},
        "quiet": True,
    },
    "topo/rtx5090x2-tr3975wx-phb-gns-club3090-1140.txt": {
        "gpus": 2,
        "nics": 0,
        "links": {("GPU0", "GPU1"): "PHB"},
        "quiet": True,
    },
    "topo/rtx5090x5-epyc-node-phb-with-p2p-p-aikitoria-13.txt": {
        "gpus": 5,
        "nics": 0,
        "links": {("GPU3", "GPU4"): "PHB", ("GPU0", "GPU4"): "NODE"},
        "quiet": True,
        "checks": [
            (lambda c: c.p2p.status("pci", 4, 0), "OK"),
            (lambda c: c.p2p.gpus, [0, 1, 2, 3, 4]),
        ],
    },
    "topo/rtx5880ada-x2-node-deadlock-acs-nccl-2079.txt": {
        "gpus": 2,
        "nics": 0,
        "links": {("GPU0", "GPU1"): "NODE"},
        "quiet": True,
    },
    "topo/v100-dgx2-16gpu-nv6-10mlx5-nccl-tests-78.txt": {
        "gpus": 16,
        "nics": 10,
        "links": {
            ("GPU0", "GPU15"): "NV6",
            ("GPU0", "NIC0"): "PIX",
            ("GPU2", "NIC1"): "PIX",
            ("GPU1", "NIC3"): "NODE",
            ("GPU3", "NIC9"): "SYS",
            ("GPU4", "GPU5"): None,
        },
        "nic_names": {"NIC9": "mlx5_9"},
        "warnings": ["rows GPU4-GPU15, NIC0-NIC9 missing"],
    },
    # ------------------------------------------------------------------------ p2p status
    "p2p-matrix/h100x8-p2p-r-all-ok-ml-engineering.txt": {
        "gpus": 8,
        "quiet": True,
        "checks": [
            (lambda c: list(c.p2p.matrices), ["read"]),
            (lambda c: {x for row in c.p2p.matrices["read"] for x in row}, {"X", "OK"}),
        ],
    },
    "p2p-matrix/l4x2-p2p-r-cns-ml-engineering.txt": {
        "gpus": 2,
        "quiet": True,
        "checks": [(lambda c: c.p2p.status("read", 0, 1), "CNS")],
    },
    "p2p-matrix/rtx2080ti-x2-pix-ns-autodl.txt": {
        "gpus": 2,
        "quiet": True,
        "checks": [(lambda c: c.p2p.status("pci", 1, 0), "NS")],
    },
    "p2p-matrix/rtx3090x2-patched-ok-club3090-922.txt": {
        "gpus": 2,
        "warnings": ["stored as 'read'"],
        "checks": [(lambda c: c.p2p.status("read", 0, 1), "OK")],
    },
    "p2p-matrix/rtx5090x2-tr3975wx-gns-club3090-1140.txt": {
        "gpus": 2,
        "warnings": ["stored as 'read'"],
        "checks": [(lambda c: c.p2p.status("read", 1, 0), "GNS")],
    },
    # -------------------------------------------------------------------- p2p bandwidth
    "p2p-bandwidth/a100-sxm4-80gb-x8-nvlink-270gbps-distserve-3.txt": {
        "gpus": 8,
        "quiet": True,
        "checks": [
            (lambda c: len(c.measurements.p2p), 8),
            (lambda c: gpu(c, 1).bus_id, "0000:0a:00.0"),
            (lambda c: gpu(c, 7).name, "NVIDIA A100-SXM4-80GB"),
            (
                lambda c: p2pm(c, kind="bandwidth", bidirectional=False, p2p="enabled").value(0, 1),
                268.94,
            ),
            (
                lambda c: p2pm(c, kind="bandwidth", bidirectional=True, p2p="enabled").value(4, 5),
                517.8,
            ),
            (
                lambda c: p2pm(c, kind="bandwidth", bidirectional=False, p2p="disabled").value(
                    4, 5
                ),
                10.65,
            ),
            (
                lambda c: p2pm(c, kind="latency", p2p="disabled", latency_side="gpu").value(0, 1),
                23.59,
            ),
            (lambda c: p2pm(c, kind="latency", p2p="enabled", latency_side="cpu").value(7, 6), 2.8),
            (lambda c: c.p2p.can_access_peer[0][7], True),  # type: ignore[index]
        ],
    },
    "p2p-bandwidth/h100-pcie-x2-nvlink-bridge-256gbps-koga.txt": {
        "gpus": 2,
        "quiet": True,
        "checks": [
            (
                lambda c: p2pm(c, kind="bandwidth", bidirectional=False, p2p="enabled").value(0, 1),
                256.62,
            ),
            (
                lambda c: p2pm(c, kind="bandwidth", bidirectional=True, p2p="enabled").value(1, 0),
                509.15,
            ),
            (lambda c: gpu(c, 1).bus_id, "0000:d5:00.0"),
        ],
    },
    "p2p-bandwidth/rtx2080ti-x2-pix-no-p2p-5.7gbps-autodl.txt": {
        "gpus": 2,
        "quiet": True,
        "checks": [
            (
                lambda c: p2pm(c, kind="bandwidth", bidirectional=False, p2p="disabled").value(
                    0, 1
                ),
                5.71,
            ),
            (
                lambda c: p2pm(c, kind="bandwidth", bidirectional=True, p2p="enabled").value(0, 1),
                6.1,
            ),
            (lambda c: c.p2p.can_access_peer, [[None, False], [False, None]]),
        ],
    },
    "p2p-bandwidth/rtx4090x2-driver525-p2p-denied-puget-kinghorn.txt": {
        "gpus": 2,
        "quiet": True,
        "checks": [
            (
                lambda c: p2pm(c, kind="bandwidth", bidirectional=False, p2p="disabled").value(
                    0, 1
                ),
                22.02,
            ),
            (
                lambda c: p2pm(c, kind="bandwidth", bidirectional=False, p2p="enabled").value(0, 1),
                22.18,
            ),
            (lambda c: gpu(c, 1).bus_id, "0000:61:00.0"),
        ],
    },
    "p2p-bandwidth/rtx4090x6-sm-copy-p2p-enabled-10gbps-nccl-814.txt": {
        "gpus": 6,
        "quiet": True,
        "checks": [
            (lambda c: len(c.measurements.p2p), 3),
            (lambda c: {m.method for m in c.measurements.p2p}, {"sm"}),
            (lambda c: p2pm(c, p2p="enabled", access="write").value(0, 1), 10.14),
            (lambda c: p2pm(c, p2p="enabled", access="read").value(0, 1), 12.43),
            (lambda c: p2pm(c, p2p="disabled").value(0, 1), 19.98),
        ],
    },
    "p2p-bandwidth/rtx4090x8-sys-no-p2p-stock-driver-blog.txt": {
        "gpus": 8,
        "quiet": True,
        "checks": [
            (lambda c: len(c.measurements.p2p), 8),
            (lambda c: {x for row in c.p2p.can_access_peer for x in row}, {None, False}),  # type: ignore[union-attr]
            (
                lambda c: p2pm(c, kind="latency", p2p="disabled", latency_side="gpu").value(0, 1),
                20.26,
            ),
        ],
    },
    "p2p-bandwidth/rtx5090x2-p2p-enabled-2gbps-rebar-off-aikitoria-9.txt": {
        "gpus": 2,
        "quiet": True,
        "checks": [
            (
                lambda c: p2pm(c, kind="bandwidth", bidirectional=False, p2p="enabled").value(0, 1),
                12.19,
            ),
            (
                lambda c: p2pm(c, kind="bandwidth", bidirectional=False, p2p="enabled").value(1, 0),
                2.01,
            ),
            (
                lambda c: p2pm(c, kind="bandwidth", bidirectional=True, p2p="disabled").value(0, 1),
                56.67,
            ),
            (
                lambda c: p2pm(c, kind="latency", p2p="enabled", latency_side="gpu").value(0, 1),
                0.36,
            ),
        ],
    },
    # ------------------------------------------------------------------------ nccl-tests
    "nccl-tests/h100-2node-allreduce-cliff-at-64mb-tagged-output-nccl-1453.txt": {
        "gpus": 0,
        "warnings": ["assumed all_reduce"],
        "checks": [
            (lambda c: collective(c).op, "all_reduce"),
            (lambda c: len(collective(c).rows), 20),
            (peak, (33554432, 29.5)),
            (
                lambda c: [r.busbw_gbps for r in collective(c).rows if r.size_bytes == 67108864],
                [5.27, 5.27],
            ),
        ],
    },
    "nccl-tests/h100-a3mega-2node-16gpu-allreduce-338gbps-ztan.txt": {
        "gpus": 0,
        "quiet": True,
        "checks": [
            (
                lambda c: (collective(c).op, collective(c).ranks, collective(c).nodes),
                ("all_reduce", 16, 2),
            ),
            (lambda c: collective(c).gpus, []),
            (peak, (8589934592, 338.82)),
            (lambda c: collective(c).avg_busbw_gbps, 70.742),
            (lambda c: collective(c).correct, True),
        ],
    },
    "nccl-tests/rtx2080ti-x2-pix-no-p2p-allreduce-4gbps-autodl.txt": {
        "gpus": 2,
        "quiet": True,
        "checks": [
            (
                lambda c: (collective(c).ranks, collective(c).nodes, collective(c).gpus),
                (2, 1, [0, 1]),
            ),
            (lambda c: peak(c)[1], 4.0),
            (lambda c: collective(c).avg_busbw_gbps, 2.05774),
            (lambda c: gpu(c, 0).bus_id, "0000:b4:00.0"),
            (lambda c: gpu(c, 1).name, "NVIDIA GeForce RTX 2080 Ti"),
        ],
    },
    "nccl-tests/rtx4090x8-pcie-sys-p2p-unlocked-allreduce-blog.txt": {
        "gpus": 8,
        "warnings": ["assumed all_reduce"],
        "checks": [
            (peak, (134217728, 20.64)),
            (lambda c: collective(c).ranks, 8),
            (lambda c: gpu(c, 3).bus_id, None),
            (lambda c: gpu(c, 3).name, "NVIDIA GeForce RTX 4090"),
        ],
    },
    # ------------------------------------------------------------------------- bandwidth
    "bandwidth/a100-sxm4-40gb-pinned-12gbps-cuda-demo.txt": {
        "gpus": 1,
        "quiet": True,
        "checks": [
            (lambda c: transfer(c, direction="h2d", memory="pinned").bandwidth_gbps, 12.3),
            (lambda c: transfer(c, direction="d2h", memory="pinned").bandwidth_gbps, 13.2),
            (lambda c: transfer(c, direction="d2d").bandwidth_gbps, 1157.5),
            (lambda c: gpu(c, 0).name, "NVIDIA A100-SXM4-40GB"),
        ],
    },
    "bandwidth/dgx-a100-pinned-vs-pageable-vim-listchars-gengwg.txt": {
        "gpus": 1,
        "quiet": True,
        "checks": [
            (lambda c: transfer(c, direction="h2d", memory="pinned").bandwidth_gbps, 25.7),
            (lambda c: transfer(c, direction="d2h", memory="pinned").bandwidth_gbps, 25.8),
            (lambda c: transfer(c, direction="h2d", memory="pageable").bandwidth_gbps, 10.0),
            (lambda c: transfer(c, direction="d2h", memory="pageable").bandwidth_gbps, 10.8),
        ],
    },
    "bandwidth/nvbandwidth-a100-h2d-sm-25gbps-nvbandwidth-42.txt": {
        "gpus": 1,
        "quiet": True,
        "checks": [
            (lambda c: transfer(c, direction="h2d").bandwidth_gbps, 25.13),
            (lambda c: transfer(c, direction="h2d").method, "nvbandwidth-sm"),
            (lambda c: transfer(c, direction="h2d").size_bytes, 512 * 2**20),
            (lambda c: gpu(c, 0).bus_id, "0000:99:00.0"),
            (
                lambda c: (c.driver.driver_version, c.driver.cuda_driver_version),
                ("560.35.05", "12.6"),
            ),
            (lambda c: c.origin.tool_versions["nvbandwidth"], "v0.8"),
        ],
    },
    "bandwidth/rtx2080ti-pinned-gen3-autodl.txt": {
        "gpus": 1,
        "quiet": True,
        "checks": [
            (lambda c: transfer(c, direction="h2d").bandwidth_gbps, 12.2),
            (lambda c: transfer(c, direction="d2d").bandwidth_gbps, 518.9),
        ],
    },
    "bandwidth/t4-aliyun-pinned-quick-cuda-demo.txt": {
        "gpus": 1,
        "quiet": True,
        "checks": [
            (lambda c: transfer(c, direction="h2d").bandwidth_gbps, 9.7),
            (lambda c: transfer(c, direction="d2h").bandwidth_gbps, 11.1),
            (lambda c: gpu(c, 0).name, "Tesla T4"),
        ],
    },
    "bandwidth/v100-sxm2-16gb-pinned-cuda-demo.txt": {
        "gpus": 1,
        "quiet": True,
        "checks": [
            (lambda c: transfer(c, direction="h2d").bandwidth_gbps, 9.6),
            (lambda c: transfer(c, direction="d2h").bandwidth_gbps, 11.4),
            (lambda c: transfer(c, direction="d2d").bandwidth_gbps, 739.8),
        ],
    },
    # ------------------------------------------------------------------------ pcie-query
    "pcie-query/a100-sxm4-40gb-q-host-max-gen3-xuesongtap.txt": {
        "gpus": 1,
        "quiet": True,
        "checks": [
            (lambda c: (gpu(c, 0).pcie.max_gen, gpu(c, 0).pcie.host_max_gen), (4, 3)),
            (lambda c: (gpu(c, 0).pcie.device_max_gen, gpu(c, 0).pcie.current_width), (4, 16)),
            (lambda c: gpu(c, 0).bus_id, "0000:2f:00.0"),
            (lambda c: gpu(c, 0).bar1_total_bytes, 64 * 2**30),
            (lambda c: gpu(c, 0).replay_count, 0),
            (lambda c: c.driver.driver_version, "535.129.03"),
            (lambda c: "8 attached GPUs" in c.unavailable["gpus"], True),
        ],
    },
    "pcie-query/a10g-aws-passthrough-x8-of-x16-host-max-na.txt": {
        "gpus": 1,
        "quiet": True,
        "checks": [
            (lambda c: (gpu(c, 0).pcie.current_width, gpu(c, 0).pcie.max_width), (8, 16)),
            (lambda c: gpu(c, 0).pcie.host_max_gen, None),
            (lambda c: gpu(c, 0).pcie.why("host_max_gen"), "N/A in nvidia-smi -q"),
            (lambda c: gpu(c, 0).virtualization_mode, "passthrough"),
            (lambda c: gpu(c, 0).rx_bytes_per_s, 0.0),
            (lambda c: "gpus" in c.unavailable, False),
        ],
    },
    "pcie-query/gb200-fabric-insufficient-resources-azhpc-images-506.txt": {
        "gpus": 1,
        "warnings": ["attributed to GPU0"],
        "checks": [
            (
                lambda c: (gpu(c, 0).fabric.state, gpu(c, 0).fabric.status),
                ("completed", "Insufficient Resources"),
            ),
            (lambda c: gpu(c, 0).fabric.clique_id, 0),
        ],
    },
    "pcie-query/h800-q-gen5-x16-llm-action.txt": {
        "gpus": 1,
        "quiet": True,
        "checks": [
            (lambda c: (gpu(c, 0).pcie.current_gen, gpu(c, 0).pcie.current_width), (5, 16)),
            (lambda c: gpu(c, 0).tx_bytes_per_s, 123000 * 1e3),
            (lambda c: (gpu(c, 0).fabric.state, gpu(c, 0).fabric.status), ("completed", "success")),
            (lambda c: gpu(c, 0).persistence_mode, True),
            (lambda c: gpu(c, 0).uuid, "GPU-34bf77d1-c686-6821-79a8-32d326c5039c"),
        ],
    },
    # ----------------------------------------------------------------------------- nvlink
    "nvlink/a100-sxm4-80gb-12links-25gbps-tab-indent-nccl-tests-228.txt": {
        "gpus": 3,
        "warnings": ["GPU2 shows 1 of 12 links (kept as partial)"],
        "checks": [
            (lambda c: nvlinks(c, 0), [(k, "up", 25.0) for k in range(12)]),
            (lambda c: len(gpu(c, 2).nvlinks), 1),
            (lambda c: gpu(c, 2).why("nvlinks") is not None, True),
        ],
    },
    "nvlink/gb200-18links-53gbps-k8s-test-infra-371.txt": {
        "gpus": 2,
        "warnings": ["GPU1 shows 2 of 18 links (kept as partial)"],
        "checks": [
            (lambda c: nvlinks(c, 0), [(k, "up", 53.125) for k in range(18)]),
            (lambda c: gpu(c, 1).uuid, "GPU-39ac7bce-e3d6-b426-008e-fa47897c72d5"),
        ],
    },
    "nvlink/h100-pcie-x2-bridge-12of18-active-6-inactive-koga.txt": {
        "gpus": 2,
        "warnings": ["numbers only the active links"],
        "checks": [
            (
                lambda c: [n.link for n in gpu(c, 0).nvlinks if n.state == "down"],
                [4, 5, 10, 11, 16, 17],
            ),
            (lambda c: sum(1 for n in gpu(c, 1).nvlinks if n.state == "up"), 12),
            (
                lambda c: {n.link: n.remote_link for n in gpu(c, 0).nvlinks if n.state == "up"},
                {k: k for k in (0, 1, 2, 3, 6, 7, 8, 9, 12, 13, 14, 15)},
            ),
            (lambda c: gpu(c, 0).nvlinks[12].remote_bus_id, "0000:d5:00.0"),
        ],
    },
    "nvlink/h800-8links-26gbps-llm-action.txt": {
        "gpus": 3,
        "warnings": ["only GPU0, GPU1, GPU7 are known"],
        "checks": [
            (lambda c: [g.index for g in c.gpus], [0, 1, 7]),
            (lambda c: nvlinks(c, 7), [(k, "up", 26.562) for k in range(8)]),
        ],
    },
}


def _corpus_files() -> list[str]:
    try:
        root = realdata_dir()
    except pytest.skip.Exception:
        return []
    return sorted(str(p.relative_to(root)) for p in root.glob("*/*.txt"))


FILES = _corpus_files()


def _import(relpath: str) -> Capture:
    text = read_realdata(relpath)
    name = relpath.rsplit("/", 1)[-1]
    capture = import_texts([(name, text)]).capture
    again = Capture.model_validate_json(capture.model_dump_json(by_alias=True))
    assert again == capture
    return capture


def test_corpus_is_present_and_covered() -> None:
    root = realdata_dir()
    assert FILES, f"no corpus files under {root}"
    missing = sorted(set(EXPECTED) - set(FILES))
    assert not missing, f"table names files that are not in the corpus: {missing}"


@pytest.mark.parametrize("relpath", FILES or ["<corpus missing>"])
def test_corpus_file(relpath: str) -> None:
    if relpath == "<corpus missing>":
        realdata_dir()  # skips locally, fails in CI
        pytest.fail("corpus present but empty")
    cap = _import(relpath)
    assert cap.origin.kind == "import"
    assert cap.origin.sources[0].formats, "nothing recognised"
    spec = EXPECTED.get(relpath)
    if spec is None:
        return
    warnings = "\n".join(cap.origin.warnings)
    if "gpus" in spec:
        assert len(cap.gpus) == spec["gpus"], [g.index for g in cap.gpus]
    if "nics" in spec:
        assert len(cap.nics) == spec["nics"]
    for (a, b), link in spec.get("links", {}).items():
        assert cap.topology.link(a, b) == link, (a, b)
        assert cap.topology.link(b, a) == link, (b, a)
    for label, name in spec.get("nic_names", {}).items():
        nic = cap.nic(label)
        assert nic is not None, label
        assert nic.name == name, label
    for expected in spec.get("warnings", []):
        assert expected in warnings, (expected, warnings)
    if spec.get("quiet"):
        assert cap.origin.warnings == []
    for check, expected in spec.get("checks", []):
        assert check(cap) == expected

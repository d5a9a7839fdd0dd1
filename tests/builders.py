"""Small builders for synthetic test captures (clearly not measured data).

Used by doctor, presenter and TUI tests to describe a machine in a few lines::

    cap = machine(4, link="NV18")                        # 4 GPUs, all pairs NV18
    cap = machine(2, link="PIX", nics=["mlx5_0"], nic_links={(0, "NIC0"): "PIX"})
    cap.gpus[1].pcie.current_gen = 1
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pcidoc.model import (
    Capture,
    Gpu,
    Host,
    Nic,
    NumaNode,
    NvLink,
    Origin,
    PcieLink,
    Topology,
)
from pcidoc.model.facts import Driver, P2PStatus
from pcidoc.model.measurements import Measurements


def gpu(
    index: int,
    *,
    name: str = "NVIDIA H100 80GB HBM3",
    numa: int | None = 0,
    cpus: str | None = "0-47",
    gen: int | None = 5,
    width: int | None = 16,
    max_gen: int | None = None,
    max_width: int | None = None,
    pstate: int | None = 0,
    nvlinks: int = 0,
    nvlink_version: str | None = "4.0",
    nvlink_speed: float | None = 26.562,
    **fields: object,
) -> Gpu:
    """A GPU with a PCIe link and ``nvlinks`` up links (all to an NVSwitch)."""
    bus = f"0000:{0x18 + 0x10 * index:02x}:00.0"
    g = Gpu(
        index=index,
        name=name,
        uuid=f"GPU-{index:08d}-0000-0000-0000-000000000000",
        bus_id=bus,
        numa_node=numa,
        numa_affinity=None if numa is None else str(numa),
        cpu_affinity=cpus,
        pcie=PcieLink(
            current_gen=gen,
            current_width=width,
            max_gen=gen if max_gen is None else max_gen,
            max_width=width if max_width is None else max_width,
            device_max_gen=gen if max_gen is None else max_gen,
            device_max_width=width if max_width is None else max_width,
        ),
        pstate=pstate,
        replay_count=0,
        nvlinks=[
            NvLink(
                link=i,
                state="up",
                version=nvlink_version,
                speed_gbps=nvlink_speed,
                remote_type="switch",
            )
            for i in range(nvlinks)
        ],
    )
    for key, value in fields.items():
        setattr(g, key, value)
    return g


def topology(
    n_gpus: int,
    link: str = "SYS",
    pairs: Mapping[tuple[int, int], str] | None = None,
    nics: Iterable[str] = (),
    nic_links: Mapping[tuple[int | str, str], str] | None = None,
    nic_default: str = "SYS",
) -> Topology:
    """A symmetric topology matrix.

    Args:
        n_gpus: Number of GPUs.
        link: Class of every GPU pair not in ``pairs``.
        pairs: Overrides per GPU pair ``(a, b)``.
        nics: NIC labels (``NIC0``...) in order.
        nic_links: Overrides per ``(gpu index or NIC label, NIC label)``.
        nic_default: Class of every other GPU-NIC and NIC-NIC pair.
    """
    nic_labels = list(nics)
    labels = [f"GPU{i}" for i in range(n_gpus)] + nic_labels
    size = len(labels)
    links: list[list[str | None]] = [[None] * size for _ in range(size)]
    for i in range(size):
        for j in range(size):
            if i == j:
                links[i][j] = "X"
            elif i < n_gpus and j < n_gpus:
                links[i][j] = link
            else:
                links[i][j] = nic_default
    for (a, b), cls in (pairs or {}).items():
        links[a][b] = links[b][a] = cls
    for (a, nic), cls in (nic_links or {}).items():
        i = a if isinstance(a, int) else labels.index(a)
        j = labels.index(nic)
        links[i][j] = links[j][i] = cls
    return Topology(labels=labels, links=links, source="synthetic")


def machine(
    n_gpus: int = 2,
    *,
    link: str = "SYS",
    pairs: Mapping[tuple[int, int], str] | None = None,
    nics: Iterable[str] = (),
    nic_links: Mapping[tuple[int | str, str], str] | None = None,
    nic_default: str = "SYS",
    kind: str = "live",
    gpu_fields: Mapping[str, object] | None = None,
    numa_nodes: int = 1,
    cpu_vendor: str | None = "intel",
    hypervisor: bool | None = False,
) -> Capture:
    """A whole machine: ``n_gpus`` identical GPUs (NVLinks derived from ``link`` if NV#).

    GPUs are spread evenly over ``numa_nodes`` nodes of 48 CPUs each.
    """
    per_node = max(1, -(-n_gpus // max(1, numa_nodes)))
    nv = int(link[2:]) if link.startswith("NV") else 0
    gpus = []
    for i in range(n_gpus):
        node = min(i // per_node, numa_nodes - 1)
        cpus = f"{node * 48}-{node * 48 + 47}"
        gpus.append(gpu(i, numa=node, cpus=cpus, nvlinks=nv, **dict(gpu_fields or {})))
    nic_list = [Nic(label=label, name=f"mlx5_{k}") for k, label in enumerate(nics)]
    host = Host(
        hostname="testhost",
        cpu_vendor=cpu_vendor,
        cpu_model="Intel(R) Xeon(R) Platinum 8480+" if cpu_vendor == "intel" else None,
        sockets=numa_nodes,
        numa_nodes=[NumaNode(id=n, cpus=f"{n * 48}-{n * 48 + 47}") for n in range(numa_nodes)],
    )
    host.virtualization.hypervisor = hypervisor
    return Capture(
        origin=Origin(kind=kind),  # type: ignore[arg-type]
        host=host,
        driver=Driver(nvml_available=True, driver_version="550.54.15", cuda_driver_version="12.4"),
        gpus=gpus,
        nics=nic_list,
        topology=topology(
            n_gpus, link, pairs, nic_list and [n.label for n in nic_list], nic_links, nic_default
        ),
        p2p=P2PStatus(gpus=list(range(n_gpus))),
        measurements=Measurements(),
    )


def square(n: int, off: float, diag: float | None = None) -> list[list[float | None]]:
    """An n x n matrix with ``off`` everywhere but the diagonal (``diag`` or ``off`` x 50)."""
    return [
        [(diag if diag is not None else off * 50) if i == j else off for j in range(n)]
        for i in range(n)
    ]

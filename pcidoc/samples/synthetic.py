"""Generators of SYNTHETIC captures for scale tests and benchmarks.

Nothing here is measured: the captures are marked ``origin.kind = "synthetic"`` and their
``origin.note`` lists the faults injected on purpose. They exist so that the matrix, the doctor
and the TUI can be exercised at 16 and 72 GPUs without such a machine.
"""

from __future__ import annotations

from pcidoc.model import (
    Capture,
    Driver,
    Gpu,
    Host,
    Measurements,
    Nic,
    NumaNode,
    NvLink,
    Origin,
    P2PStatus,
    PcieHop,
    PcieLink,
    SampleInfo,
    Topology,
)
from pcidoc.model.cpulist import format_cpulist


def _pcie_gpu(
    index: int,
    name: str,
    bus: int,
    node: int,
    cpus: str,
    gen: int,
    links: int,
    version: str,
    speed: float,
    switch_bus: int,
    root_bus: int,
) -> Gpu:
    bus_id = f"0000:{bus:02x}:00.0"
    return Gpu(
        index=index,
        name=name,
        uuid=f"GPU-5e0d0000-0000-4000-8000-{index:012d}",
        bus_id=bus_id,
        numa_node=node,
        numa_affinity=str(node),
        cpu_affinity=cpus,
        pcie=PcieLink(
            current_gen=gen,
            current_width=16,
            max_gen=gen,
            max_width=16,
            device_max_gen=gen,
            device_max_width=16,
        ),
        path=[
            PcieHop(
                bus_id=f"0000:{switch_bus:02x}:{index % 4:02x}.0",
                role="switch_downstream",
                current_gen=gen,
                current_width=16,
                max_gen=gen,
                max_width=16,
            ),
            PcieHop(
                bus_id=f"0000:{switch_bus - 1:02x}:00.0",
                role="switch_upstream",
                current_gen=gen,
                current_width=16,
                max_gen=gen,
                max_width=16,
            ),
            PcieHop(
                bus_id=f"0000:{root_bus:02x}:01.0",
                role="root_port",
                current_gen=gen,
                current_width=16,
                max_gen=gen,
                max_width=16,
            ),
        ],
        replay_count=0,
        replay_rollover_count=0,
        pstate=0,
        persistence_mode=True,
        virtualization_mode="none",
        iommu_group_type="identity",
        nvlinks=[
            NvLink(link=k, state="up", version=version, speed_gbps=speed, remote_type="switch")
            for k in range(links)
        ],
    )


def _nvswitch_box(
    n_gpus: int,
    gpus_per_node: int,
    n_nics: int,
    name: str,
    gen: int,
    links: int,
    version: str,
    speed: float,
    cpus_per_node: int,
) -> Capture:
    nodes = max(1, n_gpus // gpus_per_node)
    gpus: list[Gpu] = []
    for i in range(n_gpus):
        node = min(i // gpus_per_node, nodes - 1)
        cpus = format_cpulist(range(node * cpus_per_node, (node + 1) * cpus_per_node)) or ""
        group = i // 2  # two GPUs per PCIe switch
        gpus.append(
            _pcie_gpu(
                i,
                name,
                bus=(0x10 + i * 2) % 0xFF,
                node=node,
                cpus=cpus,
                gen=gen,
                links=links,
                version=version,
                speed=speed,
                switch_bus=(0x80 + group * 3) % 0xFF,
                root_bus=(0x01 + node) % 0xFF,
            )
        )
    nics = [
        Nic(
            label=f"NIC{k}",
            name=f"mlx5_{k}",
            bus_id=f"0000:{(0x20 + k * 2) % 0xFF:02x}:00.0",
            numa_node=min((k * n_gpus // max(1, n_nics)) // gpus_per_node, nodes - 1),
            kind="infiniband",
        )
        for k in range(n_nics)
    ]
    labels = [g.label for g in gpus] + [n.label for n in nics]
    size = len(labels)
    links_matrix: list[list[str | None]] = [["SYS"] * size for _ in range(size)]
    gpus_per_nic = max(1, n_gpus // max(1, n_nics))
    for i in range(size):
        links_matrix[i][i] = "X"
    for i in range(n_gpus):
        for j in range(n_gpus):
            if i != j:
                links_matrix[i][j] = f"NV{links}"
    for k in range(n_nics):
        col = n_gpus + k
        for i in range(n_gpus):
            same_node = gpus[i].numa_node == nics[k].numa_node
            cls = "PIX" if i // gpus_per_nic == k else ("NODE" if same_node else "SYS")
            links_matrix[i][col] = links_matrix[col][i] = cls
        for k2 in range(n_nics):
            if k2 != k:
                same = nics[k].numa_node == nics[k2].numa_node
                links_matrix[col][n_gpus + k2] = "NODE" if same else "SYS"
    host = Host(
        hostname="synthetic-host",
        kernel="6.8.0-synthetic",
        os="synthetic",
        cpu_model="synthetic CPU",
        cpu_vendor="arm" if "GB200" in name else "intel",
        logical_cpus=nodes * cpus_per_node,
        sockets=nodes,
        numa_nodes=[
            NumaNode(
                id=n,
                cpus=format_cpulist(range(n * cpus_per_node, (n + 1) * cpus_per_node)),
                distances=[10 if m == n else 20 for m in range(nodes)],
            )
            for n in range(nodes)
        ],
        numa_balancing=False,
        uptime_s=86400.0,
    )
    host.iommu.enabled = True
    host.iommu.default_domain_type = "identity"
    host.iommu.kernel_args = ["iommu=pt"]
    host.virtualization.hypervisor = False
    host.gpudirect.nvidia_peermem = True
    host.privileged = True
    driver = Driver(
        nvml_available=True,
        driver_version="570.00.00",
        nvml_version="12.570.00",
        cuda_driver_version="12.8",
    )
    driver.fabric_manager.active = True
    for gpu in gpus:
        gpu.fabric.state = "completed"
        gpu.fabric.status = "success"
    ok = [["X" if a == b else "OK" for b in range(n_gpus)] for a in range(n_gpus)]
    return Capture(
        origin=Origin(kind="synthetic", pcidoc_version=None),
        host=host,
        driver=driver,
        gpus=gpus,
        nics=nics,
        topology=Topology(labels=labels, links=links_matrix, source="synthetic"),
        p2p=P2PStatus(gpus=list(range(n_gpus)), matrices={"read": ok, "write": ok}),
        measurements=Measurements(),
    )


def synthetic_16() -> Capture:
    """A SYNTHETIC 16-GPU NVSwitch box (two sockets, 8 NICs) with two injected faults.

    Injected: GPU5 trained at Gen3 x8 in P0 (max Gen4 x16); GPU12 NVLink 3 down.
    """
    cap = _nvswitch_box(16, 8, 8, "Synthetic SXM GPU", 4, 12, "3.0", 25.0, 48)
    gpu5 = cap.gpus[5]
    gpu5.pcie.current_gen = 3
    gpu5.pcie.current_width = 8
    cap.gpus[12].nvlinks[3].state = "down"
    cap.origin.note = (
        "SYNTHETIC machine for scale tests: not measured. Injected faults: GPU5 PCIe link at "
        "Gen3 x8 in P0 (max Gen4 x16); GPU12 NVLink 3 down."
    )
    cap.origin.sample = SampleInfo(
        name="synthetic-16gpu",
        title="SYNTHETIC 16-GPU NVSwitch box, 8 NICs, two injected faults",
        summary="Scale test data; not a real machine.",
    )
    return cap


def synthetic_72() -> Capture:
    """A SYNTHETIC 72-GPU NVLink-domain machine with 18 NICs and one injected fault.

    Injected: GPU41 replay counter far above its identical peers.
    """
    cap = _nvswitch_box(72, 4, 18, "Synthetic GB200-class GPU", 5, 18, "5.0", 53.125, 36)
    cap.gpus[41].replay_count = 4200
    cap.origin.note = (
        "SYNTHETIC machine for scale tests: not measured. Injected fault: GPU41 has 4200 PCIe "
        "replays while its peers have 0."
    )
    cap.origin.sample = SampleInfo(
        name="synthetic-72gpu",
        title="SYNTHETIC 72-GPU NVLink domain, 18 NICs, one injected fault",
        summary="Scale test data; not a real machine.",
    )
    return cap


SYNTHETIC = {"synthetic-16gpu": synthetic_16, "synthetic-72gpu": synthetic_72}
"""Synthetic sample name -> generator."""

"""Where GPUs sit: their NUMA node and socket, the sets of GPUs that avoid the socket
interconnect, and the PCIe link model of one GPU; shared by the ``numa.*`` and ``scaling.*``
checks."""

from __future__ import annotations

from pcidoc.doctor import config
from pcidoc.doctor.context import Context
from pcidoc.model.facts import Gpu


def gpu_node(gpu: Gpu) -> int | None:
    """The GPU's NUMA node, ``None`` when unknown or -1."""
    return gpu.numa_node if gpu.numa_node is not None and gpu.numa_node >= 0 else None


def socket_of_node(ctx: Context) -> dict[int, int]:
    """NUMA node -> socket key, merging nodes of one socket (NPS/SNC) by SLIT distance.

    Without distances, nodes are taken as sockets (the common case) unless the host reports a
    single socket, in which case every node is on socket 0.
    """
    nodes = sorted(ctx.host.numa_nodes, key=lambda n: n.id)
    ids = [n.id for n in nodes]
    if ctx.host.sockets == 1:
        return dict.fromkeys(ids, 0)
    parent = {i: i for i in ids}

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for node in nodes:
        for pos, dist in enumerate(node.distances or []):
            if (
                pos < len(ids)
                and ids[pos] != node.id
                and dist <= config.NUMA_SAME_SOCKET_DISTANCE_MAX
            ):
                parent[find(ids[pos])] = find(node.id)
    return {i: find(i) for i in ids}


def sockets_known(ctx: Context) -> bool:
    """True when the capture says which NUMA nodes share a socket: SLIT distances, a socket
    count equal to the node count, or at most two nodes (the common two-socket server).

    With more nodes than that and neither distances nor a matching socket count (an EPYC in
    NPS4, a Xeon in SNC mode), a SYS hop may cross sockets or only NUMA nodes of one socket,
    and nothing in the capture tells which.
    """
    nodes = ctx.host.numa_nodes
    if ctx.host.sockets == 1 or any(n.distances for n in nodes):
        return True
    if ctx.host.sockets is not None:
        return ctx.host.sockets == len(nodes)
    gpu_nodes = {n for g in ctx.gpus if (n := gpu_node(g)) is not None}
    return len(nodes) <= 2 and len(gpu_nodes) <= 2


def pcie_model_of(gpu: Gpu) -> float | None:
    """NCCL's model of the GPU's PCIe link at its maximum (slot-limited) gen and width."""
    link = gpu.pcie
    return config.pcie_nccl_model_gbps(
        link.max_gen or link.current_gen, link.max_width or link.current_width
    )


def locality_groups(ctx: Context, indices: list[int]) -> list[list[int]]:
    """GPU sets that avoid the socket interconnect: connected by links better than SYS, or
    (when every pair is SYS) by NUMA socket."""
    if (
        indices
        and not {None, "SYS"} & ctx.pair_classes.keys()
        and indices == [g.index for g in ctx.gpus]
    ):
        # Every pair of the GPUs known and better than SYS (an NVLink box): one set.
        return [list(indices)]
    # Components of the graph whose edges are the cells (a, b), a before b, with a known class
    # better than SYS; each GPU carries its component's id, merged sets are relabelled.
    component = {i: i for i in indices}
    members = {i: [i] for i in component}
    for pos, a in enumerate(indices):
        later = indices[pos + 1 :]
        links = ctx.gpu_links(a, later)
        if None in links or "SYS" in links:
            later = [b for b, link in zip(later, links, strict=True) if link not in (None, "SYS")]
        target = component[a]
        for other in set(map(component.__getitem__, later)) - {target}:
            for member in members.pop(other):
                component[member] = target
                members[target].append(member)
    groups: dict[int, list[int]] = {}
    for i in indices:
        groups.setdefault(component[i], []).append(i)
    result = sorted(groups.values())
    if all(len(g) == 1 for g in result) and len(result) > 1:
        sockets = socket_of_node(ctx)
        by_socket: dict[int, list[int]] = {}
        for i in indices:
            node = gpu_node(ctx.gpu_by_index[i]) if i in ctx.gpu_by_index else None
            if node is None:
                return result
            by_socket.setdefault(sockets.get(node, node), []).append(i)
        result = sorted(by_socket.values())
    return result

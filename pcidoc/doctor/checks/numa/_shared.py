"""Helpers shared by several ``numa.*`` checks."""

from __future__ import annotations

from pcidoc.doctor.context import Context
from pcidoc.doctor.placement import gpu_node as gpu_node
from pcidoc.doctor.placement import locality_groups as locality_groups
from pcidoc.doctor.placement import pcie_model_of as pcie_model_of
from pcidoc.doctor.placement import socket_of_node as socket_of_node
from pcidoc.doctor.placement import sockets_known as sockets_known
from pcidoc.doctor.wording import gpu_set as gpu_set
from pcidoc.model.facts import Nic

# ------------------------------------------------------------------------------ helpers


def is_bond(nic: Nic) -> bool:
    """A bonded (management) interface such as ``mlx5_bond_0``."""
    return "bond" in (nic.name or "").lower() or any("bond" in n for n in nic.netdevs)


def _nic_name(nic: Nic) -> str:
    return f"{nic.label} ({nic.name})" if nic.name and nic.name != nic.label else nic.label


def _single_known_node(ctx: Context) -> bool:
    """Every GPU reports the same NUMA node (unknown nodes do not count as one)."""
    nodes = [gpu_node(g) for g in ctx.gpus]
    return bool(nodes) and None not in nodes and len(set(nodes)) == 1

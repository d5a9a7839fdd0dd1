"""Helpers shared by several ``pcie.*`` checks."""

from __future__ import annotations

from pcidoc.doctor import config
from pcidoc.doctor.context import Context
from pcidoc.model.facts import Gpu, PcieHop
from pcidoc.model.units import link_label

_RESEAT = (
    "Reseat the GPU (and its riser or cable), check retimers, and check the BIOS slot settings "
    "(forced generation, bifurcation); update the BIOS and the GPU VBIOS."
)


# ----------------------------------------------------------------------------- helpers


def _kind(ctx: Context) -> str:
    return ctx.capture.origin.kind


def _model(gen: int | None, width: int | None) -> float | None:
    return config.pcie_nccl_model_gbps(gen, width)


def _ceiling(gen: int | None, width: int | None) -> str:
    """``"Gen3 x16 = 12 GB/s model"`` (NCCL's link model), or just the label when unknown."""
    model = _model(gen, width)
    label = link_label(gen, width)
    return f"{label} = {model:.0f} GB/s model" if model is not None else label


def _min_known(*values: int | None) -> int | None:
    """The smallest known value (the first of equal ones), ``None`` when none is known. A
    loop, not a list and ``min()``: the link checks ask it four times per port of every GPU."""
    best = None
    for value in values:
        if value is not None and (best is None or value < best):
            best = value
    return best


_ROLE_NAMES = {
    "root_port": "root port",
    "switch_upstream": "switch uplink port",
    "switch_downstream": "switch downstream port",
    "bridge": "bridge",
}


def _port_name(hop: PcieHop) -> str:
    """``"switch uplink port 0000:10:00.0"``."""
    return f"{_ROLE_NAMES.get(hop.role or '', 'upstream port')} {hop.bus_id}"


def _possible(gpu: Gpu, vm: bool) -> tuple[int | None, int | None]:
    """Max gen/width possible with this GPU in this slot (NVML's Max), else derived."""
    link = gpu.pcie
    slot = gpu.path[0] if gpu.path else None
    gen = link.max_gen
    if gen is None:
        gen = _min_known(
            link.device_max_gen, None if vm else link.host_max_gen, slot.max_gen if slot else None
        )
    width = link.max_width
    if width is None:
        width = _min_known(link.device_max_width, slot.max_width if slot else None)
    return gen, width


def _pinned_h2d(ctx: Context, index: int) -> float | None:
    solo = [
        t.bandwidth_gbps
        for t in ctx.transfers(gpu=index, direction="h2d", memory="pinned")
        if not _is_concurrent(t.context)
    ]
    return max(solo) if solo else None


def _is_concurrent(context: str | None) -> bool:
    return bool(context) and "concurrent" in (context or "").lower()

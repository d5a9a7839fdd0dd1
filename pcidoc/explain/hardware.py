"""Joining ranks to hardware: rank → host → local rank → CUDA device → bus id → GPU, and the
kernel's events on that GPU (or the PCIe ports above it) shortly before the rank stopped."""

from __future__ import annotations

from pcidoc._record import record
from pcidoc.explain.facts import Event, GpuInfo, JobFacts
from pcidoc.explain.ranks import RankView
from pcidoc.explain.verdict import ChainLink
from pcidoc.model.busid import bus_key

WINDOW_BEFORE_S = 600.0
"""A kernel event up to this long before a rank stopped can explain it."""
WINDOW_AFTER_S = 60.0
"""... and this long after (the kernel may log the fault after the process noticed it)."""

KERNEL_CAUSES = {
    "xid": "xid",
    "fallen_off_bus": "xid",
    "nvlink": "xid",
    "aer": "link",
    "aer_recovery": "link",
    "link_notice": "link",
    "iommu": "iommu",
}
"""Which cause each kind of kernel event names."""

_FATAL_XIDS = frozenset(
    {
        48,
        62,
        63,
        64,
        74,
        79,
        92,
        94,
        95,
        119,
        120,
        136,
        137,
        140,
        143,
        144,
        145,
        146,
        147,
        148,
        149,
        150,
        154,
    }
)
"""Xids that stop or corrupt a GPU's work (double-bit ECC, fallen off the bus, NVLink errors,
GSP errors...); others (13: a graphics exception of the application, 31: an MMU fault of the
application, 43: a stopped context) are the application's, not the hardware's."""


def kernel_text(data: dict[str, object]) -> str:
    """A kernel event in a few words (``Xid 79``, ``the GPU fell off the bus``)."""
    kind = data.get("type")
    if kind == "xid":
        return f"Xid {data.get('code')}"
    if kind == "fallen_off_bus":
        return "the GPU fell off the bus"
    if kind == "aer":
        return f"PCIe AER {data.get('severity') or ''} error".replace("  ", " ")
    if kind == "aer_recovery":
        return f"PCIe AER recovery {data.get('outcome') or ''}".strip()
    if kind == "iommu":
        return f"{data.get('iommu') or 'IOMMU'} fault"
    if kind == "link_notice":
        return "a PCIe link trained below its capability"
    if kind == "nvlink":
        return "an NVLink error"
    return str(kind)


def _same_gpu(a: str | None, b: str | None) -> bool:
    """The same device, any function (an Xid names the GPU without its function)."""
    na, nb = bus_key(a), bus_key(b)
    return bool(na and nb and na.rsplit(".", 1)[0] == nb.rsplit(".", 1)[0])


def _gpu_of(
    facts: JobFacts, host: str | None, device: int | None, bus: str | None
) -> GpuInfo | None:
    for gpu in facts.gpus:
        if bus and _same_gpu(gpu.bus_id, bus) and (host is None or gpu.host == host):
            return gpu
    if device is None:
        return None
    for gpu in facts.gpus:
        if gpu.host == host and gpu.index == device:
            return gpu
    return None


def chain_link(view: RankView, facts: JobFacts) -> ChainLink:
    """The rank's way to its GPU, with what could not be established."""
    link = ChainLink(rank=view.rank, host=view.host, local_rank=view.local_rank)
    missing: list[str] = []
    if view.host is None:
        missing.append("host: no folder, prefix or line names it")
    else:
        link.sources["host"] = "logs"
    if view.local_rank is None:
        missing.append("local rank: no launcher prefix or line gives it")
    device = view.device
    if device is not None:
        link.sources["device"] = "NCCL INFO (cudaDev)"
    elif view.local_rank is not None:
        device = view.local_rank
        missing.append(
            "CUDA device: assumed = local rank (the torchrun convention); no NCCL INFO "
            "'cudaDev' line or CUDA_VISIBLE_DEVICES says so"
        )
    else:
        missing.append("CUDA device: unknown")
    link.device = device
    gpu = _gpu_of(facts, view.host, device, view.bus_id)
    link.bus_id = view.bus_id or (gpu.bus_id if gpu else None)
    if view.bus_id:
        link.sources["bus_id"] = "NCCL INFO (busId)"
    elif gpu is not None:
        link.sources["bus_id"] = gpu.source or "capture"
        missing.append(
            "bus id: the CUDA device taken as the capture's GPU of the same index (CUDA and "
            "NVML order agree with CUDA_DEVICE_ORDER=PCI_BUS_ID or identical GPUs)"
        )
    else:
        missing.append(f"bus id: no NCCL INFO line or pcidoc capture of {view.host or 'its host'}")
    if gpu is not None and gpu.name:
        link.gpu = gpu.name
        link.sources["gpu"] = gpu.source or "capture"
    link.missing = missing
    return link


@record
class HardwareCause:
    """A kernel event that explains a rank's failure."""

    cause: str
    event: Event
    where: str
    """``its GPU 0000:10:00.0`` or ``its upstream port 0000:01:01.0``."""
    timed: bool
    """The event's time was compared with the rank's (False: matched by bus id only)."""


def _matters(event: Event) -> bool:
    kind = event.data.get("type")
    if kind == "xid":
        return event.data.get("code") in _FATAL_XIDS
    if kind == "aer":
        return True
    return kind in KERNEL_CAUSES


def _where(event: Event, bus: str | None, ports: list[str]) -> str | None:
    target = event.data.get("bus_id")
    if bus and _same_gpu(target, bus):
        return f"its GPU {bus_key(bus)}"
    for port in ports:
        if _same_gpu(target, port):
            return f"its upstream PCIe port {bus_key(port)}"
    return None


def kernel_cause(
    view: RankView, link: ChainLink, facts: JobFacts, stopped: float | None
) -> HardwareCause | None:
    """The kernel event on the rank's GPU or upstream port nearest before it stopped."""
    gpu = _gpu_of(facts, view.host, link.device, link.bus_id)
    ports = gpu.ports if gpu else []
    found: list[tuple[float, HardwareCause]] = []
    corrected = 0
    for event in facts.events:
        if event.kind != "kernel" or not _matters(event):
            continue
        if event.host and view.host and event.host != view.host:
            continue
        where = _where(event, link.bus_id, ports)
        if where is None:
            continue
        timed = stopped is not None and event.time is not None
        if timed and not (
            stopped - WINDOW_BEFORE_S <= event.time <= stopped + WINDOW_AFTER_S  # type: ignore[operator]
        ):
            continue
        if event.data.get("severity") == "corrected":
            corrected += 1
        distance = abs((stopped or 0.0) - (event.time or 0.0)) if timed else 1e9
        cause = KERNEL_CAUSES[str(event.data["type"])]
        found.append((distance, HardwareCause(cause, event, where, timed)))
    severe = [f for f in found if f[1].event.data.get("severity") != "corrected"]
    if not severe and corrected < 3:
        return None  # a correctable error or two is the link working as designed
    pool = severe or found
    return min(pool, key=lambda pair: pair[0])[1]


def kernel_events_on_job_gpus(facts: JobFacts, links: list[ChainLink]) -> list[tuple[int, Event]]:
    """Kernel events on any GPU the job used: (rank, event)."""
    out = []
    for link in links:
        gpu = _gpu_of(facts, link.host, link.device, link.bus_id)
        ports = gpu.ports if gpu else []
        for event in facts.events:
            if event.kind != "kernel" or not _matters(event):
                continue
            if event.host and link.host and event.host != link.host:
                continue
            if _where(event, link.bus_id, ports):
                out.append((link.rank, event))
    return out

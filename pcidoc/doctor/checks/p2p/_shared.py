"""Helpers shared by several ``p2p.*`` checks."""

from __future__ import annotations

from collections.abc import Iterable

from pcidoc.doctor import config
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.context import Context
from pcidoc.model.facts import Gpu, PcieHop
from pcidoc.model.links import is_nvlink
from pcidoc.model.measurements import P2PMatrixMeasurement
from pcidoc.model.report import Evidence

ACS_ROOT_HINT = "needs root: `sudo pcidoc check --only p2p.acs-iommu`"


NCCL_AB_TEST = (
    "Confirm the diagnosis with an A/B run: the same job or `all_reduce_perf` once with "
    "`NCCL_P2P_DISABLE=1`; if that run is faster or stops hanging, the peer path is at fault."
)


_SWITCH_CLASSES = ("PIX", "PXB")


_CPU_CLASSES = ("PHB", "NODE")


# ------------------------------------------------------------------------------ helpers


def pair_label(a: int, b: int) -> str:
    """``GPU<a>-GPU<b>`` with the lower index first."""
    lo, hi = sorted((a, b))
    return f"GPU{lo}-GPU{hi}"


def _pairs(indices: list[int]) -> Iterable[tuple[int, int]]:
    for pos, a in enumerate(indices):
        for b in indices[pos + 1 :]:
            yield a, b


def is_amd_small_box(ctx: Context) -> bool:
    """NCCL uses P2P up to SYS on AMD CPUs with few GPUs (paths.cc)."""
    memo = ctx.memo.setdefault("p2p.amd_small_box", {})
    if None not in memo:
        memo[None] = _amd_small_box(ctx)
    return memo[None] is True


def _amd_small_box(ctx: Context) -> bool:
    vendor = (ctx.host.cpu_vendor or "").lower()
    model = (ctx.host.cpu_model or "").lower()
    amd = vendor == "amd" or "epyc" in model or "threadripper" in model or "ryzen" in model
    return amd and len(ctx.p2p_gpu_indices()) <= config.NCCL_AMD_P2P_SYS_MAX_GPUS


class PairPath:
    """The PCIe ports that decide what happens to peer traffic between two GPUs.

    (A plain class: the check modules are imported at every start, and a dataclass costs a
    third of a millisecond to create.)
    """

    __slots__ = ("a", "b", "hops", "kind", "link", "paths_known", "uses_pcie_p2p")

    def __init__(
        self,
        a: int,
        b: int,
        link: str | None,
        kind: str,
        uses_pcie_p2p: bool,
        hops: list[PcieHop] | None = None,
        paths_known: bool = False,
    ) -> None:
        self.a = a
        self.b = b
        self.link = link
        self.kind = kind
        """``nvlink``, ``switch`` (PIX/PXB), ``cpu`` (PHB/NODE), ``sys`` or ``unknown``."""
        self.uses_pcie_p2p = uses_pcie_p2p
        """True when NCCL/CUDA would send peer traffic over PCIe P2P on this pair by default."""
        self.hops: list[PcieHop] = [] if hops is None else hops
        """Ports below the lowest common ancestor (all ports when the GPUs share none)."""
        self.paths_known = paths_known

    @property
    def label(self) -> str:
        return pair_label(self.a, self.b)

    @property
    def redirecting(self) -> list[PcieHop]:
        return [h for h in self.hops if h.acs is not None and h.acs.redirects_p2p]

    @property
    def unreadable(self) -> list[PcieHop]:
        return [h for h in self.hops if h.acs is None and h.acs_capable is not False]

    @property
    def benign_acs(self) -> list[PcieHop]:
        return [
            h
            for h in self.hops
            if h.acs is not None
            and not h.acs.redirects_p2p
            and (h.acs.source_validation or h.acs.upstream_forwarding)
        ]


def pair_path(ctx: Context, a: int, b: int) -> PairPath:
    """Classify the path between two GPUs and collect the ports that can redirect it."""
    return _pair_path(ctx, a, b, ctx.gpu_link(a, b))


def pcie_pair_paths(ctx: Context, indices: list[int]) -> tuple[list[PairPath], int]:
    """:func:`pair_path` of every pair of ``indices`` not joined by NVLink (in pair order),
    and how many pairs are: ACS and the PCIe path play no part in an NVLink pair's P2P, and a
    big NVLink box has thousands of such pairs."""
    paths: list[PairPath] = []
    nvlink = 0
    for pos, a in enumerate(indices):
        rest = indices[pos + 1 :]
        links = ctx.gpu_links(a, rest)
        if all(map(is_nvlink, set(links))):  # a row of NVLink pairs only (a switched box)
            nvlink += len(links)
            continue
        for b, link in zip(rest, links, strict=True):
            if is_nvlink(link):
                nvlink += 1
            else:
                paths.append(_pair_path(ctx, a, b, link))
    return paths, nvlink


def _pair_path(ctx: Context, a: int, b: int, link: str | None) -> PairPath:
    known = _gpu_paths(ctx)
    path_a = known.get(a)
    path_b = known.get(b)
    paths_known = path_a is not None and path_b is not None
    hops: list[PcieHop] = []
    common_role: str | None = None
    if path_a is not None and path_b is not None:
        hops_a, _ = path_a
        hops_b, first_b = path_b
        for i, hop in enumerate(hops_a):
            j = first_b.get(hop.bus_id)
            if j is not None:
                common_role = hop.role
                hops = hops_a[:i] + hops_b[:j]
                break
        else:
            hops = hops_a + hops_b
    if is_nvlink(link):
        kind = "nvlink"
    elif link in _SWITCH_CLASSES:
        kind = "switch"
    elif link in _CPU_CLASSES:
        kind = "cpu"
    elif link == "SYS":
        kind = "sys"
    elif paths_known:
        kind = "switch" if common_role in ("switch_upstream", "switch_downstream") else "cpu"
    else:
        kind = "unknown"
    uses = kind in ("switch", "unknown") or (kind in ("cpu", "sys") and is_amd_small_box(ctx))
    return PairPath(a, b, link, kind, uses, hops, paths_known)


def _gpu_paths(ctx: Context) -> dict[int, tuple[list[PcieHop], dict[str, int]]]:
    """Each GPU's PCIe path (when known) with the first position of every bus id on it,
    indexed once per run."""
    memo = ctx.memo.setdefault("p2p.gpu_paths", {})
    if None not in memo:
        paths: dict[int, tuple[list[PcieHop], dict[str, int]]] = {}
        for index, gpu in ctx.gpu_by_index.items():
            if gpu.path:
                first: dict[str, int] = {}
                for pos, hop in enumerate(gpu.path):
                    first.setdefault(hop.bus_id, pos)
                paths[index] = (list(gpu.path), first)
        memo[None] = paths
    return memo[None]  # type: ignore[return-value]


def _iommu_translating(ctx: Context, gpu: Gpu) -> bool | None:
    kind = gpu.iommu_group_type or ctx.host.iommu.default_domain_type
    if kind:
        return kind.upper().startswith("DMA")
    if ctx.host.iommu.enabled is False:
        return False
    return None


def _capped(evidence: list[Evidence], limit: int = 8) -> list[Evidence]:
    """At most ``limit`` evidence rows, with a row saying how many were left out."""
    if len(evidence) <= limit:
        return evidence
    return [*evidence[:limit], _ev("more rows like these", len(evidence) - limit)]


# ------------------------------------------------------------------------- p2p.fallback


def _uni_or_bidir(ctx: Context) -> tuple[list[P2PMatrixMeasurement], list[P2PMatrixMeasurement]]:
    for bidir in (False, True):
        enabled = ctx.p2p_matrices("bandwidth", "enabled", bidirectional=bidir)
        if enabled:
            baseline = ctx.p2p_matrices("bandwidth", "disabled", bidirectional=bidir)
            baseline += ctx.p2p_matrices("bandwidth", "staged", bidirectional=bidir)
            return enabled, baseline
    return [], []


def _best(matrices: list[P2PMatrixMeasurement], src: int, dst: int) -> float | None:
    values = [v for m in matrices if (v := m.value(src, dst)) is not None]
    return max(values) if values else None


def _first(matrices: list[P2PMatrixMeasurement], src: int, dst: int) -> float | None:
    ordered = sorted(matrices, key=lambda m: m.p2p != "disabled")
    for m in ordered:
        value = m.value(src, dst)
        if value is not None:
            return value
    return None

"""The link model: what each GPU model's links can carry, and the ceilings that follow.

One place for hardware knowledge, used by the doctor, the TUI and the probes alike. Pure data
and functions: no I/O, no pydantic.

Public API
----------
* :class:`GpuModel` — one GPU model (frozen): ``key``, ``vendor``, ``architecture``,
  ``compute_capability``, ``pcie_gen``/``pcie_width`` (what the card itself supports),
  ``form_factor`` (``sxm``, ``pcie``, ``nvl``, ``oam``, ``superchip`` or ``unknown``),
  ``nvlink_version`` (``None`` when the model has no NVLink), ``nvlink_gbps_per_link`` (nominal
  data rate per link and direction, GB/s), ``nvlink_links`` (links the form factor carries:
  to NVSwitches on SXM boards, through the full bridge set on PCIe cards), ``nvlink_via``
  (``nvswitch``, ``bridge``, ``mesh`` ...), ``p2p_policy`` and ``source`` (citation).
* :func:`lookup_gpu` — a model from a marketing name as NVML/nvidia-smi print it
  (``"NVIDIA H100 80GB HBM3"``, ``"Tesla V100-SXM2-32GB"``) and/or a PCI device id.
* :func:`pcie_rate_gbps`, :func:`nvlink_rate_gbps` — raw per-direction link rates.
* :func:`nvlink_nominal_rate_gbps`, :func:`nccl_nvlink_model_gbps`, :func:`pcie_nccl_model_gbps`
  — the nominal and NCCL-effective models the doctor judges against.
* :class:`Ceiling`, :func:`gpu_pcie_ceiling`, :func:`link_ceilings`, :func:`pair_ceiling` —
  capture-level ceilings with their kind (``pcie``/``nvlink``/``unknown``) and provenance:
  ``fact`` (read from the machine: negotiated link, reported NVLink version/speed/count) or
  ``model`` (inferred from the GPU model of this table, with its source).

Units: GB/s = 10^9 bytes per second, per direction, unless a name says otherwise. Vendor
datasheets quote NVLink as the *bidirectional* total of all links; per-link per-direction rates
below are that total / 2 / links.

Source tags (research/checks.md): [A] vendor datasheet, whitepaper, spec or vendor source code;
[U] user reports. PCI device ids are from the PCI ID repository (pci-ids.ucw.cz, vendor 10de /
1002); an id we could not confirm is left out (the name still matches).
"""

from __future__ import annotations

import re

from pcidoc._lazyre import LazyPattern
from pcidoc._record import field, record
from pcidoc.model.base import Literal
from pcidoc.model.units import pcie_raw_gbps

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from pcidoc.model.capture import Capture
    from pcidoc.model.facts import Gpu, NvLink

FormFactor = Literal["sxm", "pcie", "nvl", "oam", "superchip", "unknown"]
P2PPolicy = Literal["supported", "nvlink-only", "refused"]
"""``supported``: the stock driver allows peer access over PCIe and NVLink. ``nvlink-only``:
a GeForce card whose stock driver refuses PCIe P2P but allows it over an NVLink bridge.
``refused``: a GeForce card without NVLink whose stock driver refuses P2P (``topo -p2p`` shows
``GNS``; copies are staged through host memory)."""

# ----------------------------------------------------------------------------- link rates

NVLINK_LINE_RATE_GBPS: dict[str, float] = {
    "1.0": 20.0,
    "2.0": 25.0,
    "2.2": 25.0,
    "3.0": 25.0,
    "3.1": 25.0,
    "4.0": 25.0,
    "5.0": 50.0,
}
"""Nominal per-link, per-direction data rate by NVLink version, GB/s [A]: P100 4 links 160 GB/s
bidirectional (Pascal whitepaper), V100 6 links 300 GB/s (Volta whitepaper), A100 12 links
600 GB/s (A100 datasheet), H100 18 links 900 GB/s (H100 datasheet), B200 18 links 1.8 TB/s
(Blackwell datasheet). GA102 boards run 4 narrower NVLink 3 links (see their entries)."""

NCCL_NVLINK_EFFECTIVE_GBPS: dict[str, float] = {
    "1.0": 18.0,
    "2.0": 20.0,
    "2.2": 20.0,
    "3.0": 20.0,
    "3.1": 20.0,
    "4.0": 20.6,
    "5.0": 40.1,
}
"""NCCL's *effective* per-link NVLink bandwidth by version, GB/s per direction [A] (NCCL topo.h
SM60_NVLINK_BW 18, SM70 20, SM80 20, SM90 20.6, SM100 40.1; version stands in for the compute
capability: NVLink1 = SM60, 2.x = SM70, 3.x = SM80, 4.0 = SM90, 5.0 = SM100)."""

NCCL_NVLINK_EFFECTIVE_BY_CC: tuple[tuple[float, float], ...] = (
    (10.0, 40.1),
    (9.0, 20.6),
    (8.6, 12.0),
    (8.0, 20.0),
    (7.0, 20.0),
    (6.0, 18.0),
)
"""NCCL's per-link NVLink bandwidth by compute capability, highest first [A] (NCCL topo.cc
ncclTopoNVLinkBw: SM100 40.1, SM90 20.6, SM86 12.0 (exactly 8.6), SM80 20, SM70 20, SM60 18)."""

NVLINK_NCCL_EFFICIENCY = 0.80
"""NCCL's effective rate is ~80 % of the nominal line rate (20/25, 20.6/25, 40.1/50) [A/M]."""

NVLINK_REPORTED_SNAP_TOLERANCE = 0.10
"""Reported per-link speeds (``nvidia-smi nvlink -s``: 25.781 on V100/A100, 26.562 on H100,
53.125 on GB200) carry signalling overhead; within this tolerance they snap to the nominal data
rate of their generation (25 or 50 GB/s)."""

_NCCL_PCI_SPEED = {1: 15, 2: 30, 3: 60, 4: 120, 5: 240, 6: 480}
"""NCCL's model of a PCIe link: width * speed / 80 GB/s [A] (NCCL topo.cc kvDictPciGen)."""

PCIE_NEWEST_GEN = max(_NCCL_PCI_SPEED)
"""The newest PCIe generation NCCL models (Gen6)."""


def pcie_rate_gbps(gen: int | None, width: int | None) -> float | None:
    """Raw per-direction PCIe rate after line coding, GB/s (Gen4 x16 -> 31.5)."""
    return pcie_raw_gbps(gen, width)


def pcie_nccl_model_gbps(gen: int | None, width: int | None) -> float | None:
    """NCCL's per-direction model of a PCIe link, in GB/s (Gen4 x16 -> 24.0)."""
    if not gen or not width or gen not in _NCCL_PCI_SPEED:
        return None
    return width * _NCCL_PCI_SPEED[gen] / 80.0


def nvlink_nominal_rate_gbps(
    version: str | None, reported_gbps: float | None = None
) -> float | None:
    """Nominal per-link, per-direction data rate: from the version, else the snapped report.

    ``("4.0", 26.562) -> 25.0``; ``(None, 53.125) -> 50.0``; ``(None, 30.0) -> 30.0``.
    """
    if version and version in NVLINK_LINE_RATE_GBPS:
        return NVLINK_LINE_RATE_GBPS[version]
    if not reported_gbps:
        return None
    for nominal in sorted(set(NVLINK_LINE_RATE_GBPS.values())):
        if abs(reported_gbps - nominal) <= NVLINK_REPORTED_SNAP_TOLERANCE * nominal:
            return nominal
    return reported_gbps


def nvlink_rate_gbps(version_or_model: str | GpuModel | None, links: int | None) -> float | None:
    """Nominal per-direction rate of ``links`` NVLinks of a version or a GPU model, GB/s.

    ``("3.0", 12) -> 300.0``; ``(lookup_gpu("RTX A6000"), 4) -> 56.25``; ``None`` if unknown.
    """
    if not links:
        return None
    if isinstance(version_or_model, GpuModel):
        per_link = version_or_model.nvlink_gbps_per_link
    else:
        per_link = nvlink_nominal_rate_gbps(version_or_model)
    return None if per_link is None else links * per_link


def nccl_nvlink_model_gbps(
    version: str | None,
    links: int | None,
    reported_gbps: float | None = None,
    compute_capability: float | None = None,
) -> float | None:
    """NCCL's effective bandwidth of ``links`` NVLinks, GB/s per direction (A100 x12 -> 240).

    The compute capability decides when known (as NCCL does), else NCCL's per-version constant,
    else ``NVLINK_NCCL_EFFICIENCY`` times the nominal rate of the reported speed.
    """
    if not links:
        return None
    if compute_capability is not None:
        for cc, rate in NCCL_NVLINK_EFFECTIVE_BY_CC:
            if (cc == 8.6 and compute_capability == 8.6) or (
                cc != 8.6 and compute_capability >= cc
            ):
                return links * rate
    if version and version in NCCL_NVLINK_EFFECTIVE_GBPS:
        return links * NCCL_NVLINK_EFFECTIVE_GBPS[version]
    nominal = nvlink_nominal_rate_gbps(None, reported_gbps)
    return None if nominal is None else links * nominal * NVLINK_NCCL_EFFICIENCY


# ----------------------------------------------------------------------------- GPU models


@record(frozen=True)
class GpuModel:
    """What one GPU model's links are built to carry (see the module docstring)."""

    key: str
    vendor: str
    architecture: str
    compute_capability: float | None
    pcie_gen: int | None
    pcie_width: int | None
    form_factor: FormFactor
    nvlink_version: str | None
    nvlink_gbps_per_link: float | None
    nvlink_links: int | None
    nvlink_via: str | None
    p2p_policy: P2PPolicy
    source: str
    device_ids: tuple[int, ...] = ()
    patterns: tuple[str, ...] = field(default=(), repr=False)

    @property
    def pcie_gbps(self) -> float | None:
        """Raw per-direction rate of the card's own PCIe link (what it supports)."""
        return pcie_rate_gbps(self.pcie_gen, self.pcie_width)

    @property
    def nvlink_on_every_board(self) -> bool:
        """Every board made for this model joins each pair of its GPUs in a machine by NVLink:
        SXM modules of NVSwitch boards (their 4-GPU boards mesh every pair directly). Not
        V100/P100 SXM2 (DGX-1's hybrid cube-mesh leaves pairs without a link) nor PCIe cards
        (bridges are optional)."""
        return self.form_factor == "sxm" and self.nvlink_via == "nvswitch"

    @property
    def nvlink_gbps(self) -> float | None:
        """Nominal per-direction NVLink rate of all the links this form factor carries."""
        return nvlink_rate_gbps(self, self.nvlink_links)


def _nv(
    key: str,
    arch: str,
    cc: float,
    pcie: tuple[int | None, int | None],
    form: FormFactor,
    nvlink: tuple[str | None, float | None, int | None, str | None],
    source: str,
    patterns: tuple[str, ...],
    ids: tuple[int, ...] = (),
    p2p: P2PPolicy = "supported",
) -> GpuModel:
    version, rate, links, via = nvlink
    return GpuModel(
        key=key,
        vendor="nvidia",
        architecture=arch,
        compute_capability=cc,
        pcie_gen=pcie[0],
        pcie_width=pcie[1],
        form_factor=form,
        nvlink_version=version,
        nvlink_gbps_per_link=rate,
        nvlink_links=links,
        nvlink_via=via,
        p2p_policy=p2p,
        source=source,
        device_ids=ids,
        patterns=patterns,
    )


_NO_NVLINK: tuple[None, None, None, None] = (None, None, None, None)
_GA102_BRIDGE = ("3.0", 14.0625, 4, "bridge")  # 112.5 GB/s bidirectional over 4 links
_SRC_GA102 = "NVLink bridge 112.5 GB/s bidirectional (4 NVLink 3 links)"

# fmt: off
GPU_MODELS: tuple[GpuModel, ...] = (
    # ---- Pascal / Volta / Turing
    _nv("p100-sxm2", "Pascal", 6.0, (3, 16), "sxm", ("1.0", 20.0, 4, "mesh"),
        "[A] NVIDIA Tesla P100 datasheet / Pascal GP100 whitepaper: 4 NVLink links, "
        "160 GB/s bidirectional; PCIe Gen3 x16", (r"P100 SXM",), (0x15F9,)),
    _nv("p100-pcie", "Pascal", 6.0, (3, 16), "pcie", _NO_NVLINK,
        "[A] NVIDIA Tesla P100 PCIe datasheet: PCIe Gen3 x16, no NVLink",
        (r"P100 PCIE",), (0x15F7, 0x15F8)),
    _nv("v100-sxm3", "Volta", 7.0, (3, 16), "sxm", ("2.0", 25.0, 6, "nvswitch"),
        "[A] NVIDIA DGX-2 / Tesla V100 datasheet: 6 NVLink 2 links per GPU to NVSwitch, "
        "300 GB/s bidirectional", (r"V100 SXM3",), (0x1DB8,)),
    _nv("v100-sxm2", "Volta", 7.0, (3, 16), "sxm", ("2.0", 25.0, 6, "mesh"),
        "[A] NVIDIA Tesla V100 datasheet / Volta whitepaper: 6 NVLink 2 links, 300 GB/s "
        "bidirectional; PCIe Gen3 x16", (r"V100 SXM2", r"V100 SXM"), (0x1DB1, 0x1DB5)),
    _nv("v100-pcie", "Volta", 7.0, (3, 16), "pcie", _NO_NVLINK,
        "[A] NVIDIA Tesla V100/V100S PCIe datasheet: PCIe Gen3 x16, no NVLink",
        (r"V100S? PCIE",), (0x1DB4, 0x1DB6, 0x1DF6)),
    _nv("t4", "Turing", 7.5, (3, 16), "pcie", _NO_NVLINK,
        "[A] NVIDIA T4 datasheet: PCIe Gen3 x16, no NVLink", (r"\bT4\b",), (0x1EB8,)),
    _nv("rtx-2080-ti", "Turing", 7.5, (3, 16), "pcie", ("2.0", 25.0, 2, "bridge"),
        "[A] NVIDIA GeForce RTX 2080 Ti specifications: PCIe Gen3 x16, NVLink bridge "
        "100 GB/s bidirectional (2 NVLink 2 links). [U] the stock GeForce driver allows P2P "
        "only over the NVLink bridge", (r"RTX 2080 TI",), (0x1E04, 0x1E07), "nvlink-only"),
    _nv("quadro-rtx-8000-6000", "Turing", 7.5, (3, 16), "pcie", ("2.0", 25.0, 2, "bridge"),
        "[A] NVIDIA Quadro RTX 8000 / RTX 6000 datasheets: PCIe Gen3 x16, NVLink bridge "
        "100 GB/s bidirectional (2 NVLink 2 links)", (r"^RTX [68]000$", r"QUADRO RTX [68]000"),
        (0x1E30,)),
    # ---- Ampere
    _nv("a10g", "Ampere", 8.6, (4, 16), "pcie", _NO_NVLINK,
        "[A] AWS EC2 G5 instance documentation: NVIDIA A10G Tensor Core GPU (GA102) on "
        "PCIe Gen4 x16, no NVLink", (r"\bA10G\b",), (0x2237,)),
    _nv("rtx-a5000", "Ampere", 8.6, (4, 16), "pcie", _GA102_BRIDGE,
        f"[A] NVIDIA RTX A5000 datasheet: {_SRC_GA102}; PCIe Gen4 x16",
        (r"RTX A5000",), (0x2231,)),
    _nv("rtx-a4000", "Ampere", 8.6, (4, 16), "pcie", _NO_NVLINK,
        "[A] NVIDIA RTX A4000 datasheet: PCIe Gen4 x16, no NVLink", (r"RTX A4000",), (0x24B0,)),
    _nv("rtx-3080", "Ampere", 8.6, (4, 16), "pcie", _NO_NVLINK,
        "[A] NVIDIA GeForce RTX 3080 / 3080 Ti specifications: PCIe Gen4 x16, no NVLink. "
        "[U] the stock GeForce driver refuses P2P", (r"RTX 3080",), (), "refused"),
    _nv("a100-sxm4", "Ampere", 8.0, (4, 16), "sxm", ("3.0", 25.0, 12, "nvswitch"),
        "[A] NVIDIA A100 datasheet: SXM4 NVLink 600 GB/s bidirectional (12 NVLink 3 links); "
        "PCIe Gen4 x16", (r"A100 SXM",), (0x20B0, 0x20B2)),
    _nv("a100-pcie", "Ampere", 8.0, (4, 16), "pcie", ("3.0", 25.0, 12, "bridge"),
        "[A] NVIDIA A100 PCIe datasheet: NVLink bridge for 2 GPUs 600 GB/s bidirectional "
        "(3 bridges, 12 links); PCIe Gen4 x16", (r"A100 (\d+GB )?PCIE",), (0x20B5, 0x20F1)),
    _nv("a800-sxm4", "Ampere", 8.0, (4, 16), "sxm", ("3.0", 25.0, 8, "nvswitch"),
        "[A] NVIDIA A800 datasheet: NVLink 400 GB/s bidirectional (8 links); PCIe Gen4 x16",
        (r"A800 SXM",)),
    _nv("a800-pcie", "Ampere", 8.0, (4, 16), "pcie", ("3.0", 25.0, 8, "bridge"),
        "[A] NVIDIA A800 PCIe datasheet: NVLink bridge 400 GB/s bidirectional (8 links)",
        (r"A800 (\d+GB )?PCIE", r"A800 (\d+GB )?ACTIVE")),
    _nv("a30", "Ampere", 8.0, (4, 16), "pcie", ("3.0", 25.0, 4, "bridge"),
        "[A] NVIDIA A30 datasheet: NVLink bridge 200 GB/s bidirectional (4 links); PCIe Gen4",
        (r"\bA30\b",), (0x20B7,)),
    _nv("a40", "Ampere", 8.6, (4, 16), "pcie", _GA102_BRIDGE,
        f"[A] NVIDIA A40 datasheet: {_SRC_GA102}; PCIe Gen4 x16", (r"\bA40\b",), (0x2235,)),
    _nv("a10", "Ampere", 8.6, (4, 16), "pcie", _NO_NVLINK,
        "[A] NVIDIA A10 datasheet: PCIe Gen4 x16, no NVLink", (r"\bA10\b",), (0x2236,)),
    _nv("rtx-a6000", "Ampere", 8.6, (4, 16), "pcie", _GA102_BRIDGE,
        f"[A] NVIDIA RTX A6000 datasheet: {_SRC_GA102}; PCIe Gen4 x16",
        (r"RTX A6000",), (0x2230,)),
    _nv("rtx-3090", "Ampere", 8.6, (4, 16), "pcie", _GA102_BRIDGE,
        f"[A] NVIDIA GeForce RTX 3090 specifications: {_SRC_GA102}; PCIe Gen4 x16. "
        "[U] the stock GeForce driver allows P2P only over the NVLink bridge",
        (r"RTX 3090",), (0x2204, 0x2203), "nvlink-only"),
    # ---- Ada / Blackwell consumer and workstation
    _nv("rtx-4090", "Ada Lovelace", 8.9, (4, 16), "pcie", _NO_NVLINK,
        "[A] NVIDIA GeForce RTX 4090 specifications: PCIe Gen4 x16, no NVLink. [U] the stock "
        "GeForce driver refuses P2P (topo -p2p GNS)", (r"RTX 4090",), (0x2684,), "refused"),
    _nv("rtx-4080", "Ada Lovelace", 8.9, (4, 16), "pcie", _NO_NVLINK,
        "[A] NVIDIA GeForce RTX 4080 specifications: PCIe Gen4 x16, no NVLink. [U] stock "
        "GeForce driver refuses P2P", (r"RTX 4080",), (), "refused"),
    _nv("rtx-5090", "Blackwell", 12.0, (5, 16), "pcie", _NO_NVLINK,
        "[A] NVIDIA GeForce RTX 5090 specifications: PCIe Gen5 x16, no NVLink. [U] stock "
        "GeForce driver refuses P2P", (r"RTX 5090",), (), "refused"),
    _nv("rtx-6000-ada", "Ada Lovelace", 8.9, (4, 16), "pcie", _NO_NVLINK,
        "[A] NVIDIA RTX 6000 Ada Generation datasheet: PCIe Gen4 x16, no NVLink",
        (r"RTX 6000 ADA",), (0x26B1,)),
    _nv("l40s", "Ada Lovelace", 8.9, (4, 16), "pcie", _NO_NVLINK,
        "[A] NVIDIA L40S datasheet: PCIe Gen4 x16, no NVLink", (r"\bL40S\b",), (0x26B9,)),
    _nv("l40", "Ada Lovelace", 8.9, (4, 16), "pcie", _NO_NVLINK,
        "[A] NVIDIA L40 datasheet: PCIe Gen4 x16, no NVLink", (r"\bL40\b",), (0x26B5,)),
    _nv("l4", "Ada Lovelace", 8.9, (4, 16), "pcie", _NO_NVLINK,
        "[A] NVIDIA L4 datasheet: PCIe Gen4 x16, no NVLink", (r"\bL4\b",), (0x27B8,)),
    # ---- Hopper
    _nv("h100-nvl", "Hopper", 9.0, (5, 16), "nvl", ("4.0", 25.0, 12, "bridge"),
        "[A] NVIDIA H100 datasheet: H100 NVL NVLink bridge 600 GB/s bidirectional (12 links); "
        "PCIe Gen5 x16", (r"H100 NVL",), (0x2321,)),
    _nv("h100-pcie", "Hopper", 9.0, (5, 16), "pcie", ("4.0", 25.0, 12, "bridge"),
        "[A] NVIDIA H100 datasheet: H100 PCIe NVLink bridge 600 GB/s bidirectional "
        "(12 links); PCIe Gen5 x16", (r"H100 (\d+GB )?PCIE",), (0x2331,)),
    _nv("h100-sxm5", "Hopper", 9.0, (5, 16), "sxm", ("4.0", 25.0, 18, "nvswitch"),
        "[A] NVIDIA H100 datasheet: SXM5 NVLink 900 GB/s bidirectional (18 NVLink 4 links); "
        "PCIe Gen5 x16", (r"H100 SXM", r"H100 80GB HBM3", r"H100 94GB HBM2E", r"H100 HBM3"),
        (0x2330,)),
    _nv("h800-pcie", "Hopper", 9.0, (5, 16), "pcie", ("4.0", 25.0, 8, "bridge"),
        "[A] NVIDIA H800 PCIe datasheet: NVLink bridge 400 GB/s bidirectional (8 links)",
        (r"H800 (\d+GB )?PCIE",)),
    _nv("h800-sxm5", "Hopper", 9.0, (5, 16), "sxm", ("4.0", 25.0, 8, "nvswitch"),
        "[A] NVIDIA H800 SXM datasheet: NVLink 400 GB/s bidirectional (8 links); PCIe Gen5 x16",
        (r"\bH800\b",)),
    _nv("h200-nvl", "Hopper", 9.0, (5, 16), "nvl", ("4.0", 25.0, 18, "bridge"),
        "[A] NVIDIA H200 datasheet: H200 NVL 2- or 4-way NVLink bridge 900 GB/s bidirectional; "
        "PCIe Gen5 x16", (r"H200 NVL",)),
    _nv("h200-sxm", "Hopper", 9.0, (5, 16), "sxm", ("4.0", 25.0, 18, "nvswitch"),
        "[A] NVIDIA H200 datasheet: SXM NVLink 900 GB/s bidirectional (18 links); PCIe Gen5 x16",
        (r"\bH200\b",)),
    _nv("h20", "Hopper", 9.0, (5, 16), "sxm", ("4.0", 25.0, 18, "nvswitch"),
        "[A] NVIDIA H20 product brief: NVLink 900 GB/s bidirectional; PCIe Gen5 x16",
        (r"\bH20\b",)),
    _nv("gh200", "Hopper", 9.0, (None, None), "superchip", ("4.0", 25.0, 18, "nvswitch"),
        "[A] NVIDIA GH200 datasheet: NVLink 900 GB/s bidirectional; host link is NVLink-C2C",
        (r"GH200",)),
    # ---- Blackwell data centre
    _nv("gb200", "Blackwell", 10.0, (None, None), "superchip", ("5.0", 50.0, 18, "nvswitch"),
        "[A] NVIDIA GB200 NVL72 datasheet: 1.8 TB/s bidirectional NVLink 5 per GPU (18 links); "
        "host link is NVLink-C2C", (r"GB200",)),
    _nv("b200", "Blackwell", 10.0, (None, None), "sxm", ("5.0", 50.0, 18, "nvswitch"),
        "[A] NVIDIA HGX B200 / DGX B200 datasheet: 1.8 TB/s bidirectional NVLink 5 per GPU "
        "(18 links); host PCIe generation not taken from a datasheet", (r"\bB200\b",)),
    # ---- Families whose form factor the name does not say: NVLink version known, count not.
    _nv("v100", "Volta", 7.0, (3, 16), "unknown", ("2.0", 25.0, None, None),
        "[A] Volta whitepaper (form factor not in the name)", (r"\bV100\b",)),
    _nv("a100", "Ampere", 8.0, (4, 16), "unknown", ("3.0", 25.0, None, None),
        "[A] NVIDIA A100 datasheet (form factor not in the name)", (r"\bA100\b",)),
    _nv("h100", "Hopper", 9.0, (5, 16), "unknown", ("4.0", 25.0, None, None),
        "[A] NVIDIA H100 datasheet (form factor not in the name)", (r"\bH100\b",)),
    _nv("p100", "Pascal", 6.0, (3, 16), "unknown", ("1.0", 20.0, None, None),
        "[A] Pascal whitepaper (form factor not in the name)", (r"\bP100\b",)),
    # ---- AMD Instinct (PCIe only; Infinity Fabric links are not modelled here)
    GpuModel("mi300x", "amd", "CDNA3", None, 5, 16, "oam", None, None, None, None, "supported",
             "[A] AMD Instinct MI300X datasheet: PCIe Gen5 x16 host link",
             (0x74A1,), (r"MI300X",)),
    GpuModel("mi250x", "amd", "CDNA2", None, 4, 16, "oam", None, None, None, None, "supported",
             "[A] AMD Instinct MI250X datasheet: PCIe Gen4 x16 host link",
             (0x7408,), (r"MI250X",)),
    GpuModel("mi250", "amd", "CDNA2", None, 4, 16, "oam", None, None, None, None, "supported",
             "[A] AMD Instinct MI250 datasheet: PCIe Gen4 x16 host link",
             (0x740C,), (r"MI250\b",)),
)
# fmt: on
"""Known GPU models, most specific name patterns first (lookup takes the first match)."""

# Compiled on first use: a lookup stops at the first match, so it compiles only the patterns
# before it.
_COMPILED: tuple[tuple[LazyPattern, GpuModel], ...] = tuple(
    (LazyPattern(pattern), model) for model in GPU_MODELS for pattern in model.patterns
)
_BY_ID: dict[int, GpuModel] = {i: m for m in GPU_MODELS for i in m.device_ids}
_NOISE = re.compile(r"\b(NVIDIA|TESLA|GEFORCE|QUADRO|AMD|INSTINCT|RADEON)\b")


def normalize_name(name: str) -> str:
    """Upper case, separators as single spaces, vendor words dropped (``"H100 80GB HBM3"``)."""
    text = re.sub(r"[-_/(),]+", " ", name.upper())
    text = _NOISE.sub(" ", text)
    return " ".join(text.split())


def _device_id(pci_device_id: int) -> int:
    # NVML's pciDeviceId packs device << 16 | vendor (0x233010DE); a bare id is < 0x10000.
    if pci_device_id > 0xFFFF:
        return (pci_device_id >> 16) & 0xFFFF
    return pci_device_id


def lookup_gpu(name: str | None, pci_device_id: int | None = None) -> GpuModel | None:
    """The model of a GPU from its PCI device id and/or its marketing name, or ``None``.

    The device id wins when it is known; otherwise the first matching name pattern.
    ``lookup_gpu("NVIDIA H100 80GB HBM3").key == "h100-sxm5"``.
    """
    if pci_device_id is not None:
        model = _BY_ID.get(_device_id(pci_device_id))
        if model is not None:
            return model
    if not name:
        return None
    text = normalize_name(name)
    for pattern, model in _COMPILED:
        if pattern.search(text):
            return model
    return None


def gpu_model_of(gpu: Gpu | None) -> GpuModel | None:
    """The model of a captured GPU (by name), or ``None``."""
    return None if gpu is None else lookup_gpu(gpu.name)


# ------------------------------------------------------------------------------- ceilings

CeilingKind = Literal["pcie", "nvlink", "unknown"]
Provenance = Literal["fact", "model", "unknown"]


@record(frozen=True)
class Ceiling:
    """A per-direction ceiling and how it was derived.

    Attributes:
        gbps: GB/s per direction (``None`` when unknown).
        kind: ``pcie``, ``nvlink`` or ``unknown``.
        provenance: ``fact`` (read from the machine), ``model`` (inferred from the GPU model
            table) or ``unknown``.
        basis: Human text: ``12 × NVLink 3.0 at 25 GB/s`` or ``PCIe Gen4 x16 (raw)``.
        source: Citation when inferred from the model table.
    """

    gbps: float | None
    kind: CeilingKind
    provenance: Provenance
    basis: str
    source: str | None = None


UNKNOWN_CEILING = Ceiling(None, "unknown", "unknown", "ceiling unknown")


def _negotiated(gpu: Gpu) -> tuple[int | None, int | None]:
    pcie = gpu.pcie
    if pcie.current_gen and pcie.current_width:
        return pcie.current_gen, pcie.current_width
    return pcie.max_gen, pcie.max_width


def gpu_pcie_ceiling(gpu: Gpu | None) -> Ceiling:
    """A GPU's PCIe ceiling: its negotiated link (fact), else its model's own link (model)."""
    if gpu is None:
        return UNKNOWN_CEILING
    gen, width = _negotiated(gpu)
    rate = pcie_rate_gbps(gen, width)
    if rate is not None:
        return Ceiling(rate, "pcie", "fact", f"PCIe Gen{gen} x{width} (raw, after line coding)")
    model = gpu_model_of(gpu)
    if model is not None and model.pcie_gbps is not None:
        return Ceiling(
            model.pcie_gbps,
            "pcie",
            "model",
            f"PCIe Gen{model.pcie_gen} x{model.pcie_width} of a {gpu.name} (raw, from its model)",
            model.source,
        )
    return UNKNOWN_CEILING


def nvlink_facts(gpu: Gpu | None) -> tuple[str | None, float | None, int]:
    """NVLink version, reported per-link speed and count of links that are not down."""
    version: str | None = None
    speed: float | None = None
    count = 0
    for link in gpu.nvlinks if gpu else []:
        if link.state == "down":
            continue
        count += 1
        version = version or link.version
        speed = speed or link.speed_gbps
    return version, speed, count


def _nominal_of(model: GpuModel | None, version: str | None, speed: float | None) -> float | None:
    """The nominal per-link rate of a link of this version / reported speed on this model."""
    if model is not None and model.nvlink_gbps_per_link and version == model.nvlink_version:
        # GA102 boards run NVLink 3 at 14.06 GB/s per link, not the SXM rate.
        return model.nvlink_gbps_per_link
    return nvlink_nominal_rate_gbps(version, speed)


def nvlink_link_rate_gbps(gpu: Gpu | None, link: NvLink) -> float | None:
    """Nominal data rate of one NVLink, per direction (the number every view shows: an H100's
    link is 25 GB/s, which ``nvidia-smi nvlink -s`` reports as 26.562 with its signalling
    overhead); None for a link with neither version nor speed (one that is down)."""
    if link.version is None and not link.speed_gbps:
        return None
    return _nominal_of(gpu_model_of(gpu), link.version, link.speed_gbps)


def nvlink_per_link(gpu: Gpu | None) -> tuple[float | None, str | None, Provenance, str | None]:
    """Nominal per-link rate of a GPU's NVLinks: ``(gbps, version, provenance, source)``."""
    version, speed, _ = nvlink_facts(gpu)
    model = gpu_model_of(gpu)
    if version or speed:
        return _nominal_of(model, version, speed), version, "fact", None
    if model is not None and model.nvlink_gbps_per_link:
        return model.nvlink_gbps_per_link, model.nvlink_version, "model", model.source
    return None, None, "unknown", None


def _nvlink_ceiling(gpus: list[Gpu | None], links: int, name: str) -> Ceiling:
    for gpu in gpus:
        rate, version, provenance, source = nvlink_per_link(gpu)
        if rate:
            label = f"NVLink {version}" if version else "NVLink"
            return Ceiling(
                links * rate,
                "nvlink",
                provenance,
                f"{links} × {label} at {rate:g} GB/s nominal{name}",
                source,
            )
    return Ceiling(None, "nvlink", "unknown", f"{links} NVLinks at an unknown per-link rate")


def link_ceilings(capture: Capture, gpu_index: int) -> dict[str, Ceiling]:
    """A GPU's ceilings: ``{"pcie": ..., "nvlink": ...}`` (NVLink total of its links).

    NVLink counts come from the links that are up (fact), else the links its model carries
    (model); a GPU with no NVLink in either gets an ``unknown`` NVLink ceiling.
    """
    gpu = capture.gpu(gpu_index)
    result = {"pcie": gpu_pcie_ceiling(gpu), "nvlink": UNKNOWN_CEILING}
    if gpu is None:
        return result
    _, _, count = nvlink_facts(gpu)
    model = gpu_model_of(gpu)
    if count:
        result["nvlink"] = _nvlink_ceiling([gpu], count, " (links up)")
    elif model is not None and model.nvlink_links and not gpu.nvlinks:
        ceiling = _nvlink_ceiling([gpu], model.nvlink_links, f" ({model.key} carries them)")
        result["nvlink"] = Ceiling(ceiling.gbps, "nvlink", "model", ceiling.basis, model.source)
    return result


def pair_ceiling(capture: Capture, a: int, b: int, link: str | None = None) -> Ceiling:
    """Ceiling of the path GPU ``a`` -> GPU ``b`` for its link class (from the matrix if omitted).

    NVLink (``NV#``): # × the per-link rate (from the NVLink version/speed in the capture, else
    from the GPU model). PCIe: the slower of the two GPUs' PCIe ceilings. Unknown link class:
    ``unknown``.
    """
    from pcidoc.model.links import is_nvlink, nvlink_count

    ga, gb = capture.gpu(a), capture.gpu(b)
    if ga is None or gb is None:
        return UNKNOWN_CEILING
    if link is None:
        link = capture.topology.link(ga.label, gb.label)
    if is_nvlink(link):
        return _nvlink_ceiling([ga, gb], nvlink_count(link), "")
    if link is None:
        return UNKNOWN_CEILING
    ca, cb = gpu_pcie_ceiling(ga), gpu_pcie_ceiling(gb)
    if ca.gbps is None or cb.gbps is None:
        return UNKNOWN_CEILING
    return cb if cb.gbps < ca.gbps else ca


NVLINK_MAX_LINKS_PER_GPU = 18
"""The most NVLinks any NVIDIA GPU has (H100/H200/B200: 18; NVML_NVLINK_MAX_LINKS) [A]."""


def nvlinks_of(gpu: Gpu | None) -> int:
    """How many NVLinks a GPU has to spend on its peers: its model's (A100 SXM4 12, H100 SXM5
    18, an H100 PCIe card 12 through its full bridge set), else the links it reports, else
    the most any GPU has."""
    model = gpu_model_of(gpu)
    if model is not None and model.nvlink_links:
        return model.nvlink_links
    if gpu is not None and gpu.nvlinks:
        return len(gpu.nvlinks)
    return NVLINK_MAX_LINKS_PER_GPU


@record(frozen=True)
class Unwired:
    """Inactive NVLinks of a GPU that are lanes its design does not wire (not links down).

    Attributes:
        count: How many of its inactive links are unwired (0: they may be faults).
        basis: Why that is known: ``the topology (NV12) counts exactly the 12 active ones`` or
            ``the 12 NVLinks an NVIDIA H100 PCIe carries with its full bridge set are exactly
            its 12 active ones``.
        measured: True when the machine's own topology says so, False when the GPU model's
            table does (a lower confidence).
    """

    count: int
    basis: str = ""
    measured: bool = True


NOT_UNWIRED = Unwired(0)


def _usual_up(gpu: Gpu, gpus: list[Gpu]) -> int:
    """The most common count of links up among the GPUs of its model with link facts (ties:
    the larger, the healthier configuration)."""
    counts: dict[int, int] = {}
    for other in gpus:
        if other.name == gpu.name and other.nvlinks and not other.mig.enabled:
            up = sum(1 for link in other.nvlinks if link.state == "up")
            counts[up] = counts.get(up, 0) + 1
    best = max(counts.values(), default=0)
    return max((up for up, n in counts.items() if n == best), default=0)


def _topology_total(capture: Capture, gpu: Gpu) -> tuple[int, int, str] | None:
    """(sum of NV# to the other GPUs, the widest NV#, the class when all are one) or None."""
    from pcidoc.model.links import is_nvlink, nvlink_count

    nv: list[str] = []
    for other in capture.gpus:
        cell = None if other is gpu else capture.topology.link(gpu.label, other.label)
        if cell is not None and is_nvlink(cell):
            nv.append(cell)
    if not nv:
        return None
    counts = [nvlink_count(c) for c in nv]
    return sum(counts), max(counts), nv[0] if len(set(nv)) == 1 else "NV#"


def unwired_nvlinks(capture: Capture, gpu: Gpu) -> Unwired:
    """Which of a GPU's inactive NVLinks are unwired lanes: the one rule behind the doctor's
    ``nvlink.state`` ("not wired in this design") and the Links pane.

    A GPU shows every link its chip has (an H100 PCIe card 18) but its board may wire fewer
    (12 through the full bridge set). Its inactive links are unwired, not down, when it has as
    many links up as its identical peers usually have and either the topology's NV# towards its
    peers counts exactly its active links (their sum, or the widest on a switched board), or its
    model's full bridge set carries exactly them.
    """
    up = sum(1 for link in gpu.nvlinks if link.state == "up")
    down = sum(1 for link in gpu.nvlinks if link.state == "down")
    if not up or not down or gpu.mig.enabled or up < _usual_up(gpu, capture.gpus):
        return NOT_UNWIRED
    topology = _topology_total(capture, gpu)
    if topology is not None and up in topology[:2]:
        return Unwired(down, f"the topology ({topology[2]}) counts exactly the {up} active ones")
    model = gpu_model_of(gpu)
    if model is not None and model.nvlink_via == "bridge" and model.nvlink_links == up:
        return Unwired(
            down,
            f"an {gpu.name} carries {up} with its full bridge set, its {up} active ones",
            False,
        )
    return NOT_UNWIRED


MESH_MAX_GPUS = 4
"""Direct NVLink meshes join at most 4 SXM GPUs (HGX 4-GPU boards: NV4/NV6 to each peer); a
single-node set of more GPUs of an NVSwitch-board model sits on NVSwitches."""


def inferred_switch_links(gpus: list[Gpu]) -> tuple[GpuModel, int] | None:
    """NVLinks per GPU an all-reduce over ``gpus`` (one node) can use, inferred from the GPU
    model alone (no topology): ``(model, links)`` or ``None`` when it cannot be inferred.

    Only for more than :data:`MESH_MAX_GPUS` GPUs of one model built for NVSwitch boards
    (``nvlink_via == "nvswitch"``): then every GPU reaches the switches with all its links. A
    smaller set may be a direct mesh with fewer links per peer, so nothing is inferred.
    """
    models = {gpu_model_of(g) for g in gpus}
    if len(gpus) <= MESH_MAX_GPUS or len(models) != 1:
        return None
    model = next(iter(models))
    if model is None or model.nvlink_via != "nvswitch" or not model.nvlink_links:
        return None
    return model, model.nvlink_links


__all__ = [
    "GPU_MODELS",
    "MESH_MAX_GPUS",
    "NCCL_NVLINK_EFFECTIVE_BY_CC",
    "NCCL_NVLINK_EFFECTIVE_GBPS",
    "NOT_UNWIRED",
    "NVLINK_LINE_RATE_GBPS",
    "NVLINK_MAX_LINKS_PER_GPU",
    "NVLINK_NCCL_EFFICIENCY",
    "NVLINK_REPORTED_SNAP_TOLERANCE",
    "PCIE_NEWEST_GEN",
    "UNKNOWN_CEILING",
    "Ceiling",
    "GpuModel",
    "Unwired",
    "gpu_model_of",
    "gpu_pcie_ceiling",
    "inferred_switch_links",
    "link_ceilings",
    "lookup_gpu",
    "nccl_nvlink_model_gbps",
    "normalize_name",
    "nvlink_facts",
    "nvlink_link_rate_gbps",
    "nvlink_nominal_rate_gbps",
    "nvlink_per_link",
    "nvlink_rate_gbps",
    "nvlinks_of",
    "pair_ceiling",
    "pcie_nccl_model_gbps",
    "pcie_rate_gbps",
    "unwired_nvlinks",
]

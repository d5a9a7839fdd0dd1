"""The link-class vocabulary of ``nvidia-smi topo -m`` and helpers over it.

Classes, nearest first: ``X`` (self), ``NV#`` (a bonded set of # NVLinks), ``PIX`` (at most one
PCIe bridge), ``PXB`` (several bridges, no host bridge), ``PHB`` (through a PCIe host bridge,
typically the CPU), ``NODE`` (between host bridges inside one NUMA node), ``SYS`` (across the
SMP interconnect between NUMA nodes). Old drivers printed ``SOC`` for what is now ``SYS``.
``None`` in a matrix means the class is unknown.
"""

from __future__ import annotations

import re
from functools import lru_cache

PCIE_CLASSES: tuple[str, ...] = ("PIX", "PXB", "PHB", "NODE", "SYS")
"""PCIe path classes from nearest to farthest."""

LEGEND: dict[str, str] = {
    "X": "the device itself",
    "NV#": "a bonded set of # NVLinks",
    "XGMI": "AMD Infinity Fabric (xGMI) link between AMD GPUs",
    "PIX": "at most one PCIe bridge (typically the same PCIe switch)",
    "PXB": "several PCIe bridges, without crossing a PCIe host bridge",
    "PHB": "a PCIe host bridge (typically through the CPU's root complex)",
    "NODE": "PCIe plus the interconnect between host bridges inside one NUMA node",
    "SYS": "PCIe plus the SMP interconnect between NUMA nodes/sockets (QPI/UPI/Infinity Fabric)",
}
"""What each class means, in our own words."""

_NV_RE = re.compile(r"^NV(\d+)$")
_RANK = {"X": 0, "NV": 1, "XGMI": 1, "PIX": 2, "PXB": 3, "PHB": 4, "NODE": 5, "SYS": 6}


def normalize_link(token: str | None) -> str | None:
    """Normalize a matrix cell to the canonical vocabulary, or ``None`` if not a link class.

    ``SOC`` (pre-2018 drivers) becomes ``SYS``; ``N/A``/``?``/empty become ``None``.
    """
    if token is None:
        return None
    # A matrix of 1,000 GPUs has a million cells drawn from a dozen spellings.
    if len(token) > 16:
        token = token.strip()
    return _normalize_link(token) if len(token) <= 16 else None


@lru_cache(maxsize=1024)
def _normalize_link(token: str) -> str | None:
    t = token.strip().upper()
    if t in ("X", "PIX", "PXB", "PHB", "NODE", "SYS", "XGMI"):
        return t
    if t == "SOC":
        return "SYS"
    if _NV_RE.match(t):
        return t
    return None


@lru_cache(maxsize=256)
def is_nvlink(link: str | None) -> bool:
    """True for ``NV#`` classes."""
    return bool(link) and _NV_RE.match(link or "") is not None


@lru_cache(maxsize=256)
def nvlink_count(link: str | None) -> int:
    """Number of bonded NVLinks for ``NV#``, else 0."""
    match = _NV_RE.match(link or "")
    return int(match.group(1)) if match else 0


@lru_cache(maxsize=256)
def rank(link: str | None) -> int | None:
    """Distance rank: 0 for ``X``, 1 for NVLink, 2 ``PIX`` ... 6 ``SYS``; ``None`` if unknown."""
    if link is None:
        return None
    if is_nvlink(link):
        return _RANK["NV"]
    return _RANK.get(link)


def crosses_cpu(link: str | None) -> bool:
    """True when a PCIe path goes through a host bridge or further (``PHB``/``NODE``/``SYS``)."""
    return link in ("PHB", "NODE", "SYS")


def meaning(link: str | None) -> str:
    """Human explanation of a link class."""
    if link is None:
        return "unknown: the path between these devices was not reported"
    if is_nvlink(link):
        return f"{nvlink_count(link)} bonded NVLinks"
    if link == "XGMI":
        return LEGEND["XGMI"]
    return LEGEND.get(link, "unknown link class")

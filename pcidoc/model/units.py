"""Unit arithmetic for PCIe and NVLink links and pretty-printing helpers.

Bandwidth in pcidoc is always GB/s = 10^9 bytes per second per direction unless a name says
otherwise. Sources for the constants are given next to each table.
"""

from __future__ import annotations

import math
import re

from pcidoc._lazyre import lazy

# Transfer rate per lane in GT/s for each PCIe generation (PCI-SIG base specifications).
PCIE_GT_PER_S: dict[int, float] = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0, 7: 128.0}

# Line-code efficiency: 8b/10b for Gen1/2, 128b/130b for Gen3-5; Gen6+ use 256-byte FLITs that
# carry 236 bytes of TLP payload (236/256 ~ 0.922, Lockwood "PCIe Gen6" notes; research/probes.md
# §4.1).
_ENCODING: dict[int, float] = {1: 0.8, 2: 0.8, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130}
_FLIT_EFFICIENCY = 236 / 256

_GTS_RE = lazy(r"([0-9]+(?:\.[0-9]+)?)\s*GT/s", re.IGNORECASE)


def pcie_gen_from_gts(gts: float) -> int | None:
    """Map a per-lane rate in GT/s (e.g. 16.0) to its PCIe generation, or ``None``."""
    for gen, rate in PCIE_GT_PER_S.items():
        if math.isclose(rate, gts, rel_tol=0.02):
            return gen
    return None


def parse_link_speed(text: str | None) -> int | None:
    """Parse a sysfs/lspci link speed such as ``"16.0 GT/s PCIe"`` into a generation number.

    Returns ``None`` for ``"Unknown"``, empty or unparsable text.
    """
    if not text:
        return None
    match = _GTS_RE.search(text)
    if not match:
        return None
    return pcie_gen_from_gts(float(match.group(1)))


def pcie_raw_gbps(gen: int | None, width: int | None) -> float | None:
    """Raw per-direction bandwidth of a PCIe link in GB/s after line coding.

    Gen3 x16 = 15.75, Gen4 x16 = 31.5, Gen5 x16 = 63.0 GB/s.
    """
    if not gen or not width or gen not in PCIE_GT_PER_S:
        return None
    efficiency = _ENCODING.get(gen, _FLIT_EFFICIENCY)
    return PCIE_GT_PER_S[gen] * width * efficiency / 8.0


def format_gbps(value: float | None, digits: int = 1) -> str:
    """Format a GB/s value for humans; ``"—"`` when unknown."""
    if value is None:
        return "—"
    if value >= 100:
        return f"{value:.0f} GB/s"
    return f"{value:.{digits}f} GB/s"


def format_bytes(value: float | None) -> str:
    """Format a byte count with binary prefixes (KiB, MiB, GiB)."""
    if value is None:
        return "—"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"  # pragma: no cover - loop always returns


def link_label(gen: int | None, width: int | None) -> str:
    """``"Gen4 x16"`` style label, with ``?`` for unknown parts."""
    g = f"Gen{gen}" if gen else "Gen?"
    w = f"x{width}" if width else "x?"
    return f"{g} {w}"


_COUNTED = lazy(
    r"\b(\d[\d,]*) ((?:[A-Za-z][A-Za-z-]* ){0,2})([A-Za-z][A-Za-z-]*)\(s\)"
    r"(?: (have|are|were|lack|run|cross|read|sit|share|use|show|need|reach|do|exist)\b)?"
)
_SINGULAR_VERB = {"have": "has", "are": "is", "were": "was", "do": "does", "cross": "crosses"}


def plurals(text: str) -> str:
    """``"1 GPU(s)"`` -> ``"1 GPU"``, ``"8 GPU(s)"`` -> ``"8 GPUs"``, ``"1 identical peer(s)
    have"`` -> ``"1 identical peer has"``: the ``(s)`` after a counted word (and the verb right
    after it) resolved by the count. A ``(s)`` without a number before it stays."""

    def fix(match: re.Match[str]) -> str:
        number, adjective, word, verb = match.groups()
        one = number.replace(",", "") == "1"
        out = f"{number} {adjective}{word}{'' if one else 's'}"
        if verb:
            out += " " + (_SINGULAR_VERB.get(verb, verb + "s") if one else verb)
        return out

    return _COUNTED.sub(fix, text) if "(s)" in text else text

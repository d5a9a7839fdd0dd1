"""Parse and format Linux CPU lists (``"0-23,48-71"``) and hex CPU masks.

Lists and masks come from pasted text and capture files, so their expansion is bounded: a
CPU id of :data:`MAX_CPUS` or more makes the list invalid (``None``), and ``"0-999999999"``
costs nothing instead of gigabytes; a list whose parts name more than :data:`MAX_CPUS` CPUs
in all (overlapping ranges repeated) is invalid before it is expanded.
"""

from __future__ import annotations

from functools import lru_cache

MAX_CPUS = 8192
"""CPU ids are below this. Linux's largest build (``CONFIG_NR_CPUS`` with x86 ``MAXSMP``) is
8192 CPUs; a list naming a higher id is not a real machine's and is treated as invalid."""

_MAX_MASK_DIGITS = MAX_CPUS // 4 + MAX_CPUS // 32
"""Hex digits of a ``local_cpus`` mask of MAX_CPUS bits, plus one comma per 32 bits."""


def parse_cpulist(text: str | None) -> frozenset[int] | None:
    """Parse a cpulist such as ``"0-23,48-71"`` or ``"6,14,22,30"``.

    Returns ``None`` when the text is empty, ``N/A`` or not a valid list (for example a
    paste that clipped the first digits: ``"-31,64-95"``, or an id of :data:`MAX_CPUS` or
    more). The result is shared between equal texts (it is immutable).
    """
    if text is None:
        return None
    text = text.strip()
    return _parse_cached(text) if len(text) <= 256 else _parse(text)


def _parse(text: str) -> frozenset[int] | None:
    if not text or text.upper() == "N/A" or text.count(",") >= MAX_CPUS:
        return None
    cpus: set[int] = set()
    named = 0  # CPUs the parts name, overlaps counted again: bounded by MAX_CPUS
    for part in text.split(","):
        part = part.strip()
        if not part:
            return None
        if "-" in part:
            lo_s, _, hi_s = part.partition("-")
            if not _is_id(lo_s) or not _is_id(hi_s):
                return None
            lo, hi = int(lo_s), int(hi_s)
            named += hi - lo + 1
            if hi < lo or hi >= MAX_CPUS or named > MAX_CPUS:
                # "0-8191," 200,000 times names the same CPUs again and again: no kernel
                # writes overlapping ranges, and expanding them cost 49 s.
                return None
            cpus.update(range(lo, hi + 1))
        elif _is_id(part) and int(part) < MAX_CPUS:
            cpus.add(int(part))
        else:
            return None
    return frozenset(cpus)


_parse_cached = lru_cache(maxsize=1024)(_parse)


def out_of_range(text: str | None) -> bool:
    """True when ``text`` is a well-formed cpulist that names a CPU id of MAX_CPUS or more
    (so :func:`parse_cpulist` refused it for its size, not its syntax)."""
    if not text:
        return False
    parts = text.strip().split(",")
    ids: list[str] = []
    for part in parts:
        lo, dash, hi = part.strip().partition("-")
        if not (lo.isascii() and lo.isdigit()) or (dash and not (hi.isascii() and hi.isdigit())):
            return False
        ids.extend([lo, hi] if dash else [lo])
    return any(len(i) > 6 or int(i) >= MAX_CPUS for i in ids)


def _is_id(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 6


def format_cpulist(cpus: frozenset[int] | set[int] | list[int] | None) -> str | None:
    """Format CPUs as the shortest cpulist (``{0,1,2,5}`` -> ``"0-2,5"``)."""
    if cpus is None:
        return None
    ordered = sorted(set(cpus))
    if not ordered:
        return ""
    ranges: list[str] = []
    start = prev = ordered[0]
    for cpu in ordered[1:]:
        if cpu == prev + 1:
            prev = cpu
            continue
        ranges.append(f"{start}-{prev}" if prev != start else str(start))
        start = prev = cpu
    ranges.append(f"{start}-{prev}" if prev != start else str(start))
    return ",".join(ranges)


def parse_cpumask(text: str | None) -> frozenset[int] | None:
    """Parse a kernel hex CPU mask such as ``"00000000,ffffff00"`` (``local_cpus``)."""
    if text is None:
        return None
    cleaned = text.strip().replace(",", "")
    if not cleaned or len(cleaned) > _MAX_MASK_DIGITS:
        return None
    try:
        value = int(cleaned, 16)
    except ValueError:
        return None
    if value.bit_length() > MAX_CPUS:
        return None
    return frozenset(bit for bit in range(value.bit_length()) if value >> bit & 1)

"""Parse and format Linux CPU lists (``"0-23,48-71"``) and hex CPU masks."""

from __future__ import annotations


def parse_cpulist(text: str | None) -> frozenset[int] | None:
    """Parse a cpulist such as ``"0-23,48-71"`` or ``"6,14,22,30"``.

    Returns ``None`` when the text is empty, ``N/A`` or not a valid list (for example a
    paste that clipped the first digits: ``"-31,64-95"``).
    """
    if text is None:
        return None
    text = text.strip()
    if not text or text.upper() == "N/A":
        return None
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            return None
        if "-" in part:
            lo_s, _, hi_s = part.partition("-")
            if not lo_s.isdigit() or not hi_s.isdigit():
                return None
            lo, hi = int(lo_s), int(hi_s)
            if hi < lo:
                return None
            cpus.update(range(lo, hi + 1))
        elif part.isdigit():
            cpus.add(int(part))
        else:
            return None
    return frozenset(cpus)


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
    if not cleaned:
        return None
    try:
        value = int(cleaned, 16)
    except ValueError:
        return None
    return frozenset(bit for bit in range(value.bit_length()) if value >> bit & 1)

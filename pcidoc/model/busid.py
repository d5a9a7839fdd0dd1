"""PCI addresses (bus ids) in the one form every capture, importer and check compares.

Standard library only (through :mod:`pcidoc._lazyre`): :mod:`pcidoc.collect.nvml` uses it in a
probe child that runs under a Python with torch and nothing of pcidoc's dependencies.
"""

from __future__ import annotations

from pcidoc._lazyre import lazy

_BUS_RE = lazy(
    r"^\[?(?:(?P<domain>[0-9A-Fa-f]{1,8}):)?(?P<bus>[0-9A-Fa-f]{1,2}):(?P<dev>[0-9A-Fa-f]{1,2})"
    r"(?:\.(?P<fn>[0-7]))?\]?$"
)


def normalize_bus_id(text: str | None) -> str | None:
    """Normalise a PCI address to the sysfs form ``dddd:bb:dd.f`` in lower case.

    Accepts NVML's 8-digit domain (``00000000:2F:00.0``), addresses without a function
    (``00000000:99:00`` as nvbandwidth prints them, ``[0000:04:00]`` as nccl-tests prints them,
    function 0 implied) and addresses without a domain (domain 0 implied).
    Returns ``None`` when the text is not a PCI address.
    """
    if not text:
        return None
    match = _BUS_RE.match(text.strip())
    if not match:
        return None
    domain = int(match.group("domain") or "0", 16)
    bus = int(match.group("bus"), 16)
    dev = int(match.group("dev"), 16)
    fn = int(match.group("fn") or "0")
    if dev > 0x1F:
        return None
    # sysfs's form: at least four digits (a VMD domain is ``10000``, as /sys names it).
    return f"{domain:04x}:{bus:02x}:{dev:02x}.{fn}"


def bus_id_or_text(text: str) -> str:
    """:func:`normalize_bus_id`, or the text itself in lower case when it is no PCI address
    (what sysfs, NVML and a stored capture hold is kept comparable, never dropped)."""
    return normalize_bus_id(text) or text.strip().lower()


def bus_key(text: str | None) -> str | None:
    """:func:`bus_id_or_text` for a value that may be missing (None or empty: None): how
    evidence and captures are joined on bus ids."""
    return bus_id_or_text(text) if text else None


def is_bus_id(text: str) -> bool:
    """True for a full PCI address, domain and function included (``0000:18:00.0``)."""
    return _FULL_RE.match(text.strip()) is not None


_FULL_RE = lazy(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")


def bus_from_nccl(text: str | None) -> str | None:
    """NCCL's busId number (``1c000``, ``101c0``, ``100000``) as a sysfs bus id.

    NCCL prints the PCI address with ``:`` and ``.`` removed, as hex: the function is the last
    digit, then two digits of device, two of bus, and the domain.
    """
    if not text:
        return None
    try:
        value = int(text, 16)
    except ValueError:
        return None
    fn = value & 0xF
    dev = (value >> 4) & 0xFF
    bus = (value >> 12) & 0xFF
    domain = value >> 20
    if dev > 0x1F or fn > 7 or domain > 0xFFFF:
        return None
    return f"{domain:04x}:{bus:02x}:{dev:02x}.{fn}"

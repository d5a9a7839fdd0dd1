"""PCI addresses (bus ids) in the one form every capture, importer and check compares."""

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
    dom = f"{domain:04x}" if domain <= 0xFFFF else f"{domain:08x}"
    return f"{dom}:{bus:02x}:{dev:02x}.{fn}"


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

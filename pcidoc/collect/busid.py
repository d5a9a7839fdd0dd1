"""PCI bus ids: the one normalizer (standard library only).

Kept apart from :mod:`pcidoc.collect.sysfs` (which builds models, hence imports pydantic) so
that :mod:`pcidoc.collect.nvml` stays importable by a probe child running under a Python that
has torch and nothing of pcidoc's dependencies (``--python``).
"""

from __future__ import annotations

import re

_BDF_RE = re.compile(r"^([0-9a-f]{4,8}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$", re.IGNORECASE)
_SHORT_BDF_RE = re.compile(r"^([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$", re.IGNORECASE)


def normalize_bus_id(text: str) -> str:
    """Normalize a PCI address to sysfs form ``dddd:bb:dd.f`` in lower case.

    NVML prints an 8-digit domain (``00000000:18:00.0``) and nvidia-smi sometimes an upper-case
    one; short forms (``18:00.0``) get domain 0. Unrecognised text is returned lower-cased.
    """
    value = text.strip().lower()
    match = _BDF_RE.match(value)
    if match:
        domain = int(match.group(1), 16)
        return f"{domain:04x}:{match.group(2)}:{match.group(3)}.{match.group(4)}"
    match = _SHORT_BDF_RE.match(value)
    if match:
        return f"0000:{match.group(1)}:{match.group(2)}.{match.group(3)}"
    return value


def is_bus_id(text: str) -> bool:
    """True for a full PCI address such as ``0000:18:00.0``."""
    return bool(_BDF_RE.match(text))

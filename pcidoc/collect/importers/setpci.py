"""``setpci`` reads of the PCIe ACS Control register: the values people print to see whether
ACS redirects peer-to-peer traffic (``setpci -s 05:00.0 ECAP_ACS+6.w``, a loop over PLX ports
reading ``f2a.w``, ``setpci -v`` lines ``0000:05:00.0 @f2a = 001d``).

The ACS Control register is the 16-bit word at offset 6 of the ACS extended capability (PCIe
Base Specification, "ACS Control Register"; ``lspci -vvv`` prints it as ``ACSCtl:``). Its bits:
0 SrcValid, 1 TransBlk, 2 ReqRedir, 3 CmpltRedir, 4 UpstreamFwd, 5 EgressCtrl, 6 DirectTrans.
Each value read becomes an lspci-shaped device with ``acs_ctl`` spelled as lspci spells it, so
the ACS checks judge it like an ``ACSCtl:`` line.

A read is recognised when the command names the register (``ECAP_ACS+6``, ``ECAP0d+6``, or
``CAP_ACS``-style names pciutils knows) or reads a raw word offset (``f2a.w``) while the command
or the lines just before it speak of ACS: a raw offset alone could be any register. Writes
(``...w=0000``) are not readings. Values follow the command one per line (``0000``), or as
``setpci -v`` prints them with the bus id; a selector ``-s <bus id>`` names the device of plain
values when it names one device.
"""

from __future__ import annotations

import re

from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.text import BUS_ID, Doc, lazy, normalize_bus_id
from pcidoc.collect.importers.walk import each_line
from pcidoc.model.evidence import LspciDevice

FORMAT = "setpci-acs"

_SETPCI_RE = lazy(r"\bsetpci\b(?P<args>[^;|&\n]{0,400})")
_NAMED_RE = lazy(
    r"(?<![\w+])(?:ECAP_ACS|ECAP0{0,2}d)\s*\+\s*(?:0x)?0{0,3}6\.w\b(?!\s*=)", re.IGNORECASE
)
_RAW_RE = lazy(r"(?<![\w+:])(?P<off>[0-9a-fA-F]{2,3})\.w\b(?!\s*=)")
_SELECTOR_RE = lazy(rf"(?:^|\s)-s\s*(?P<bus>{BUS_ID})(?![\w:.])")
_VALUE_RE = lazy(r"^\s*(?:0x)?(?P<hex>[0-9a-fA-F]{4})\s*$")
_VERBOSE_RE = lazy(
    rf"^\s*(?P<bus>{BUS_ID})\b[^@\n]{{0,80}}@(?P<off>[0-9a-fA-F]{{2,3}})\s*=\s*(?:0x)?"
    r"(?P<hex>[0-9a-fA-F]{4})\s*$"
)
_ACS_WORD_RE = lazy(r"\bACS\b")
_PASSWORD_RE = lazy(r"^\s*\[sudo\] password|^\s*Password:")

_BITS = (
    "SrcValid",
    "TransBlk",
    "ReqRedir",
    "CmpltRedir",
    "UpstreamFwd",
    "EgressCtrl",
    "DirectTrans",
)
_REDIRECT = (2, 3, 5)
"""ReqRedir, CmpltRedir, EgressCtrl: the bits that send peer requests or completions upstream."""
_MAX_DEVICES = 4096


def acs_flags(value: int) -> str:
    """``0x001d`` -> ``SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl-
    DirectTrans-`` (lspci's spelling)."""
    return " ".join(f"{name}{'+' if value >> bit & 1 else '-'}" for bit, name in enumerate(_BITS))


class _State:
    """Where the walk is: inside the values of a read, or looking for one."""

    __slots__ = ("bus", "devices", "doc", "open", "quote")

    def __init__(self, doc: Doc) -> None:
        self.doc = doc
        self.devices: list[LspciDevice] = []
        self.open = False
        """True while the lines after an ACS read are its values."""
        self.bus: str | None = None
        self.quote = ""

    def add(self, bus: str | None, word: str, line: str) -> None:
        if len(self.devices) >= _MAX_DEVICES:
            return
        value = int(word, 16)
        self.devices.append(
            LspciDevice(
                bus_id=normalize_bus_id(bus) if bus else None,
                name=f"setpci: {' '.join(line.split())[:120]}",
                kind="bridge",
                acs_ctl=acs_flags(value),
                acs_redirect=any(value >> bit & 1 for bit in _REDIRECT),
            )
        )


def _speaks_of_acs(doc: Doc, index: int, args: str) -> bool:
    if _ACS_WORD_RE.search(args):
        return True
    return any(_ACS_WORD_RE.search(line) for line in doc.lines[max(0, index - 6) : index])


def _command(state: _State, line: str, index: int) -> bool:
    found = _SETPCI_RE.search(line)
    if found is None:
        return False
    args = found.group("args")
    raw = _RAW_RE.search(args)
    reads = _NAMED_RE.search(args) is not None or (
        raw is not None and _speaks_of_acs(state.doc, index, args)
    )
    state.open = reads
    selector = _SELECTOR_RE.search(args)
    state.bus = selector.group("bus") if selector else None
    state.quote = line
    return True


def _value(state: _State, line: str, index: int) -> bool:
    verbose = _VERBOSE_RE.match(line)
    if verbose and (state.open or _ACS_WORD_RE.search(line)):
        state.add(verbose.group("bus"), verbose.group("hex"), line)
        return True
    plain = _VALUE_RE.match(line)
    if plain and state.open:
        state.add(state.bus, plain.group("hex"), state.quote)
        return True
    if _PASSWORD_RE.match(line) or line.strip().startswith("```"):
        return True
    state.open = False
    return True


def read(doc: Doc, ctx: Context) -> list[Fragment]:
    """The ACS Control values read with setpci in ``doc`` (none when there are none)."""
    if not any("setpci" in line for line in doc.lines):
        return []
    state = _State(doc)
    each_line(doc, state, _command, _value)
    if not state.devices:
        return []
    frag = Fragment(FORMAT)
    frag.evidence.lspci.extend(state.devices)
    redirecting = sum(1 for d in state.devices if d.acs_redirect)
    named = sum(1 for d in state.devices if d.bus_id)
    frag.read.append(
        f"setpci: {len(state.devices)} ACS Control value(s) ({redirecting} redirecting; "
        f"{named} with a bus id)"
    )
    if len(state.devices) >= _MAX_DEVICES:
        frag.warn(f"setpci: only the first {_MAX_DEVICES} values were read")
    return [frag]

"""``lspci -vv``/``-vvv`` device blocks, ``lspci -tv`` trees and ``grep`` excerpts of them.

Indentation may be tabs or spaces (2/4/6 spaces, or 16 when a poster's terminal expanded tabs).
A block starts at a header line (``41:00.0 PCI bridge: ...``, with or without a domain) and
runs until the next header; an excerpt that starts inside a block (``LnkSta:`` lines, a
``grep ACSCtl`` list) is read as header-less devices with no bus id. Read per device: LnkCap and
LnkSta speed/width with their ``(downgraded)`` marks, ACSCtl (and whether it redirects peer
traffic: ``ReqRedir+``, ``CmpltRedir+`` or ``EgressCtrl+``), the AER status bits that are set
(``UESta``, ``CESta``) and the error bits of ``DevSta``. Devices whose bus id matches a GPU of
the capture are joined to it by the doctor (``nccl.lspci-link``, ``nccl.acs-redirect``), and a
``-tv`` tree in the same paste tells which GPUs sit below a bridge.
"""

from __future__ import annotations

from collections.abc import Callable

from pcidoc._record import field, record
from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.nccl_log import clean
from pcidoc.collect.importers.text import Doc, lazy, normalize_bus_id
from pcidoc.collect.importers.walk import Walker
from pcidoc.model.evidence import LspciDevice, LspciTree

FORMAT = "lspci"

_HEADER_RE = lazy(
    r"^(?P<bus>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-1][0-9a-fA-F]\.[0-7])\s+"
    r"(?P<cls>[^:\s][^:]{2,59}?)\s*(?:\[[0-9a-fA-F]{4}\])?:\s*(?P<name>.*)$"
)
# Fields may start at column 0 (a fragment pasted without its indentation).
_FIELD_RE = lazy(
    r"^[ \t]*(LnkCap2|LnkCtl2|LnkCap|LnkSta|ACSCtl|ACSCap|UESta|CESta|DevSta)\s*:\s*(.*)$"
)
# The other lines of a device block, recognised when a fragment lost its indentation.
_KEYLINE_RE = lazy(
    r"^(?:Capabilities|Subsystem|Control|Status|Latency|Interrupt|Region|Expansion ROM|"
    r"Kernel (?:driver in use|modules)|Physical Slot|NUMA node|IOMMU group|Flags|Bus|"
    r"(?:Dev|Lnk|Slt|Root)(?:Cap|Ctl|Sta)[23]?|UEMsk|UESvrt|CEMsk|AERCap|HeaderLog|"
    r"Secondary status|Prefetchable|BridgeCtl|Vector table|Address|Product Name|"
    r"Read-only fields|End)\b"
)
_SUPPORTED_RE = lazy(r"Supported Link Speeds:\s*(?:[\d.]+-)?([\d.]+)\s*GT/s")
_TARGET_RE = lazy(r"Target Link Speed:\s*([\d.]+)\s*GT/s")
_TREE_RE = lazy(r"^\s*[-+\\|`]*\[(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}\]-")
_DOMAIN_RE = lazy(r"\[[0-9a-fA-F]{4}:[0-9a-fA-F]{2}\]")
_SPEED_RE = lazy(r"Speed\s+([\d.]+)\s*GT/s(\s*\(downgraded\))?")
_WIDTH_RE = lazy(r"Width\s+x(\d+)(\s*\(downgraded\))?")
_BIT_RE = lazy(r"(?<![A-Za-z0-9])([A-Za-z][A-Za-z0-9]*)([+-])")  # starts at a word only
_DEVSTA_ERRORS = ("CorrErr", "NonFatalErr", "FatalErr", "UnsupReq")


def detect(doc: Doc, index: int, ctx: Context) -> bool:
    """True at an lspci header followed by an indented capability line, at an indented
    LnkSta/LnkCap/ACSCtl/UESta/CESta/DevSta line, or at an ``lspci -tv`` tree line."""
    line = doc.lines[index]
    if _FIELD_RE.match(line):
        return True
    if _TREE_RE.match(line) and (ctx.mentions("lspci") or _DOMAIN_RE.search(line)):
        return True
    if _HEADER_RE.match(line):
        for ahead in doc.lines[index + 1 : index + 4]:
            if ahead[:1] in ("\t", " ") and ahead.strip():
                return True
            if _FIELD_RE.match(ahead) or _KEYLINE_RE.match(ahead):
                return True
    return False


def _kind(cls: str, name: str) -> str:
    lowered = cls.lower()
    if "bridge" in lowered:
        return "bridge"
    if ("vga" in lowered or "3d" in lowered or "display" in lowered) and (
        "nvidia" in name.lower() or "amd" in name.lower() or "ati" in name.lower()
    ):
        return "gpu"
    if "ethernet" in lowered or "infiniband" in lowered or "network" in lowered:
        return "nic"
    return "other"


def _flags(text: str) -> dict[str, bool]:
    return {m.group(1): m.group(2) == "+" for m in _BIT_RE.finditer(text)}


def _lnkcap(device: LspciDevice, value: str, line: str) -> None:
    speed = _SPEED_RE.search(value)
    width = _WIDTH_RE.search(value)
    if speed:
        device.lnkcap_gts = float(speed.group(1))
    if width:
        device.lnkcap_width = int(width.group(1))


def _lnksta(device: LspciDevice, value: str, line: str) -> None:
    speed = _SPEED_RE.search(value)
    width = _WIDTH_RE.search(value)
    if speed:
        device.lnksta_gts = float(speed.group(1))
        device.speed_downgraded = bool(speed.group(2))
    if width:
        device.lnksta_width = int(width.group(1))
        device.width_downgraded = bool(width.group(2))
    device.lnksta_quote = " ".join(clean(line).split())


def _lnkcap2(device: LspciDevice, value: str, line: str) -> None:
    supported = _SUPPORTED_RE.search(value)
    if supported:
        device.lnkcap2_gts = float(supported.group(1))


def _lnkctl2(device: LspciDevice, value: str, line: str) -> None:
    target = _TARGET_RE.search(value)
    if target:
        device.lnkctl2_target_gts = float(target.group(1))
        device.lnkctl2_quote = " ".join(clean(line).split())[:300]


def _acsctl(device: LspciDevice, value: str, line: str) -> None:
    flags = _flags(value)
    if "SrcValid" in flags or "ReqRedir" in flags:
        device.acs_ctl = " ".join(clean(value).split())
        known = [flags.get(name) for name in ("ReqRedir", "CmpltRedir", "EgressCtrl")]
        if any(known):
            device.acs_redirect = True
        elif all(v is not None for v in known[:2]):
            device.acs_redirect = False


def _uesta(device: LspciDevice, value: str, line: str) -> None:
    device.uncorrectable = [k for k, v in _flags(value).items() if v]


def _cesta(device: LspciDevice, value: str, line: str) -> None:
    device.correctable = [k for k, v in _flags(value).items() if v]


def _devsta(device: LspciDevice, value: str, line: str) -> None:
    flags = _flags(value)
    device.devsta_errors = [k for k in _DEVSTA_ERRORS if flags.get(k)]


_FIELDS: dict[str, Callable[[LspciDevice, str, str], None]] = {
    "LnkCap": _lnkcap,
    "LnkSta": _lnksta,
    "LnkCap2": _lnkcap2,
    "LnkCtl2": _lnkctl2,
    "ACSCtl": _acsctl,
    "UESta": _uesta,
    "CESta": _cesta,
    "DevSta": _devsta,
}
"""What each lspci field line fills in (``ACSCap`` is recognised and skipped)."""


def _field(device: LspciDevice, key: str, value: str, line: str) -> None:
    handler = _FIELDS.get(key)
    if handler is not None:
        handler(device, value, line)


@record
class _Devices:
    """The device blocks of one lspci output being read."""

    devices: list[LspciDevice] = field(default_factory=list)
    device: LspciDevice | None = None
    truncated: int = 0


def _on_header(devices: _Devices, line: str, index: int) -> bool:
    header = _HEADER_RE.match(line)
    if header is None:
        return False
    devices.device = LspciDevice(
        bus_id=normalize_bus_id(header.group("bus")),
        name=clean(header.group("name")).strip() or None,
        kind=_kind(header.group("cls"), header.group("name")),
    )
    devices.devices.append(devices.device)
    return True


def _on_block_line(devices: _Devices, line: str, index: int) -> bool:
    """A field line (``LnkSta:``, ``ACSCtl:``...), or another line of a device block."""
    match = _FIELD_RE.match(line)
    indented = line[:1] in ("\t", " ")
    if not indented and match is None and (devices.device is None or not _KEYLINE_RE.match(line)):
        return False
    if match is None:
        return True
    key, value = match.group(1), match.group(2)
    device = devices.device
    if key == "ACSCtl" and device is not None and device.acs_ctl is not None:
        device = None  # a grep list: one ACSCtl line per port
    if device is None or (device.bus_id is None and _already(device, key)):
        device = LspciDevice()
        devices.devices.append(device)
    devices.device = device
    before = device.acs_ctl
    _field(device, key, value, line)
    if key == "ACSCtl" and device.acs_ctl is None and before is None:
        devices.truncated += 1
    return True


def parse(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Parse lspci output from ``start`` until a line that is none of lspci's."""
    frag = Fragment(FORMAT)
    if _TREE_RE.match(doc.lines[start]):
        return _tree(doc, start, frag)
    found = _Devices()
    walker = Walker(blank_lines=None)
    index = walker.walk(doc, start, found, (_on_header, _on_block_line))
    devices = [d for d in found.devices if d.bus_id or _has_facts(d)]
    frag.evidence.lspci.extend(devices)
    if found.truncated:
        frag.warn(f"lspci: {found.truncated} ACSCtl line(s) cut short; not read")
    note = walker.bad_values_note("lspci")
    if note:
        frag.warn(note)
    acs = [d for d in devices if d.acs_ctl]
    text = f"lspci: {len(devices)} device(s)"
    if acs:
        text += f", {len(acs)} ACSCtl ({sum(1 for d in acs if d.acs_redirect)} redirecting)"
    links = [d for d in devices if d.lnksta_gts or d.lnksta_width]
    if links:
        text += f", {len(links)} link status"
    frag.read.append(text)
    return frag, max(index, start + 1)


def _already(device: LspciDevice, key: str) -> bool:
    if key == "LnkSta":
        return device.lnksta_gts is not None or device.lnksta_width is not None
    if key == "LnkCap":
        return device.lnkcap_gts is not None
    if key == "ACSCtl":
        return device.acs_ctl is not None
    if key == "LnkCtl2":
        return device.lnkctl2_target_gts is not None
    return False


def _has_facts(device: LspciDevice) -> bool:
    return bool(
        device.lnksta_gts
        or device.lnksta_width
        or device.lnkcap_gts
        or device.lnkctl2_target_gts
        or device.acs_ctl
        or device.uncorrectable
        or device.correctable
        or device.devsta_errors
    )


_TREE_TOKEN_RE = lazy(
    r"\[(?:(?P<dom>[0-9a-fA-F]{4}):)?(?P<bus>[0-9a-fA-F]{2})(?:-[0-9a-fA-F]{2})?\]"
    r"|(?<![0-9a-fA-F:])(?P<dev>[0-9a-fA-F]{2})\.(?P<fn>[0-7])(?![0-9a-fA-F])"
)


@record
class _Tree:
    """An ``lspci -tv`` tree being read: devices sharing a column are siblings."""

    tree: LspciTree
    domain: str = "0000"
    columns: dict[int, tuple[str, str | None]] = field(default_factory=dict)


_TREE_LINE_RE = lazy(r"^\s*[-+\\|`\[]")


def _on_tree_line(state: _Tree, line: str, index: int) -> bool:
    if not _TREE_LINE_RE.match(line):
        return False
    tree = state.tree
    bus: str | None = None
    parent: str | None = None
    last: str | None = None
    end = 0
    for token in _TREE_TOKEN_RE.finditer(line):
        if token.group("bus"):
            if token.group("dom"):
                state.domain = token.group("dom").lower()
            bus, parent = token.group("bus").lower(), last
            continue
        if bus is None:
            known = state.columns.get(token.start())
            if known is None:
                continue
            bus, parent = known
        state.columns[token.start()] = (bus, parent)
        bus_id = f"{state.domain}:{bus}:{token.group('dev').lower()}.{token.group('fn')}"
        tree.devices.setdefault(bus_id, "")
        if parent:
            tree.parents[bus_id] = parent
        last, end = bus_id, token.end()
        bus = None
    if last is not None:
        tree.devices[last] = clean(line[end:]).strip(" -")
    return True


def _tree(doc: Doc, start: int, frag: Fragment) -> tuple[Fragment, int]:
    """``lspci -tv``: siblings share a column; ``[bb]`` after a bridge is its secondary bus."""
    state = _Tree(LspciTree())
    index = Walker().walk(doc, start, state, (_on_tree_line,))
    frag.evidence.lspci_trees.append(state.tree)
    frag.read.append(f"lspci -tv: {len(state.tree.devices)} device(s)")
    return frag, max(index, start + 1)

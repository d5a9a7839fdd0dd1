"""The kernel log: ``dmesg`` (plain, ``-T``, ``-H``, ``-x``), ``journalctl -k`` (short and ISO),
``/var/log/kern.log``/``syslog`` excerpts, and the live reader's last boot.

Kernel lines are found anywhere in a paste (interleaved with other output). Each line loses its
packaging first — a syslog/journal prefix (``Sep 19 16:18:02 host kernel:``, ISO time), a bare
``kernel:``, a ``dmesg -x`` facility, the dmesg stamp (``[  12.345678]``, ``[Mon Jan  1 ...]``,
``[  +0.000844]``, ``[Nov27 10:11]``) — and its message is offered to a table of readers:

* NVIDIA Xid lines (``NVRM: Xid (PCI:0000:3b:00): 79, pid=..., name=..., text``; a redacted
  ``PCI:...`` keeps the event without a bus id);
* "fallen off the bus" without an Xid line (the multi-line text newer drivers print in probe);
* PCIe AER (``PCIe Bus Error: severity=..., type=...``, the ``device [vvvv:dddd] error
  status/mask`` and ``[12] Timeout`` lines after it, the root port's ``error message received
  from`` line, ``can't recover`` / ``device recovery failed`` / ``link has been reset``);
* IOMMU faults (Intel ``DMAR: [DMA Read] Request device [..] fault addr ...``, AMD-Vi
  ``Event logged [IO_PAGE_FAULT domain=... address=...]``, ARM SMMU context faults);
* the kernel's ``... available PCIe bandwidth, limited by 2.5 GT/s PCIe x8 link at ...``;
* NVLink / NVSwitch / fabric manager error lines;
* whether the firmware keeps AER (``_OSC: platform does not support [AER ...]``, ``OS does not
  control AER``) and whether the IOMMU is off or in passthrough.

A paste is a kernel log when it holds at least one such event, or enough lines with a kernel
stamp/prefix (a clean boot log is evidence too).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from typing import Any

from pcidoc.catalogue.lines import KERNEL_SUBSYSTEMS, prose_before, read_line
from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.text import Doc, lazy, normalize_bus_id, to_float, to_int
from pcidoc.collect.importers.walk import each_line
from pcidoc.model.kernel import (
    AerEvent,
    AerRecovery,
    FallenOffBus,
    IommuFault,
    KernelLog,
    LinkNotice,
    NvlinkEvent,
    XidEvent,
)

FORMAT = "kernel-log"

MAX_EVENTS = 2000
"""Events kept per kind (the rest are counted in ``KernelLog.dropped``)."""

PID_MAX = 2**22
"""Linux's PID_MAX_LIMIT: no process id is larger."""

MIN_STAMPED_LINES = 5
"""A text with no event is a kernel log only with at least this many kernel-stamped lines."""

# --------------------------------------------------------------------------- line packaging

_MONTHS = {m: i for i, m in enumerate(calendar.month_abbr) if m}
_SYSLOG_RE = lazy(
    r"^(?P<clock>(?P<mon>[^\W\d_]{3,5}\.?|\d{1,2}[月월])\s+(?P<day>\d{1,2})\s+"
    r"(?P<hms>\d\d:\d\d:\d\d)(?:\.\d+)?)"
    r"\s+(?P<host>\S+)\s+kernel(?:\[\d+\])?:\s?"
)
_ISO_RE = lazy(
    r"^(?P<clock>(?P<date>\d{4}-\d\d-\d\d)[T ](?P<hms>\d\d:\d\d:\d\d)(?P<frac>[.,]\d+)?"
    r"(?:Z|[+-]\d\d:?\d\d)?)\s+(?P<kernel>(?P<host>\S+)\s+kernel(?:\[\d+\])?:\s?)?"
)
_KERNEL_TAG_RE = lazy(r"^\s*kernel(?:\[\d+\])?:\s?")
_FACILITY_RE = lazy(r"^\s*(?:kern|user|daemon|syslog)\s*:\s*[a-z]+\s*:\s?")
# dmesg prints its stamps with the locale's decimal mark (``[  +0,000150]`` under de_DE).
_MONO_RE = lazy(r"^\s*\[\s*(?P<mono>\d+[.,]\d+)\]\s?")
_REL_RE = lazy(r"^\s*\[\s*\+\s*(?P<rel>\d+[.,]\d+)\]\s?")
_WALL_RE = lazy(
    r"^\s*\[(?P<clock>[A-Z][a-z]{2}\s+(?P<mon>[A-Z][a-z]{2})\s+(?P<day>\d{1,2})\s+"
    r"(?P<hms>\d\d:\d\d:\d\d)\s+(?P<year>\d{4}))\]\s?"
)
_HUMAN_RE = lazy(
    r"^\s*\[(?P<clock>(?P<mon>[A-Z][a-z]{2})\s?(?P<day>\d{1,2})\s+(?P<hm>\d\d:\d\d))\]\s?"
)


def _seconds(stamp: str) -> float | None:
    """A dmesg stamp's seconds, whichever decimal mark the locale gave it."""
    return to_float(stamp.replace(",", "."))


def _hms(text: str) -> int:
    parts = [int(p) for p in text.split(":")]
    while len(parts) < 3:
        parts.append(0)
    return parts[0] * 3600 + parts[1] * 60 + parts[2]


def _wall_seconds(mon: str, day: str, hms: str, year: int = 2000) -> float | None:
    month = _MONTHS.get(mon)
    if month is None:
        return None
    return float(calendar.timegm((year, month, int(day), 0, 0, 0)) + _hms(hms))


class _Clock:
    """Turns each line's stamp into seconds (boot-relative, or relative to the first wall-clock
    stamp) and removes the packaging."""

    def __init__(self) -> None:
        self.syslog, self.iso = _SYSLOG_RE.compiled, _ISO_RE.compiled
        self.tag, self.facility = _KERNEL_TAG_RE.compiled, _FACILITY_RE.compiled
        self.mono, self.rel_re = _MONO_RE.compiled, _REL_RE.compiled
        self.wall_re, self.human = _WALL_RE.compiled, _HUMAN_RE.compiled
        self.wall0: float | None = None
        self.rel = 0.0
        self.stamped = 0
        self.hosts: list[str] = []

    def _wall(self, value: float | None) -> float | None:
        if value is None:
            return None
        if self.wall0 is None:
            self.wall0 = value
        return value - self.wall0

    def _host(self, name: str) -> None:
        if name not in self.hosts and len(self.hosts) < 64:
            self.hosts.append(name)

    def _prefix(self, line: str) -> tuple[str, float | None, str | None, bool]:
        """Without the syslog/journal/ISO prefix; the last item says whether it named the
        kernel (an ISO time alone, as CI logs print, does not make a kernel line)."""
        match = self.syslog.match(line)
        if match:
            self._host(match["host"])
            when = _wall_seconds(match["mon"], match["day"], match["hms"])
            return line[match.end() :], self._wall(when), match["clock"], True
        match = self.iso.match(line)
        if match:
            y, m, d = (int(x) for x in match["date"].split("-"))
            frac = float("0." + match["frac"][1:]) if match["frac"] else 0.0
            try:
                when = float(calendar.timegm((y, m, d, 0, 0, 0)) + _hms(match["hms"])) + frac
            except (ValueError, OverflowError):
                when = None
            if match["host"]:
                self._host(match["host"])
            return line[match.end() :], self._wall(when), match["clock"], bool(match["kernel"])
        match = self.tag.match(line)
        if match:
            return line[match.end() :], None, None, True
        return line, None, None, False

    def _stamp(self, line: str) -> tuple[str, float | None, str | None, bool]:
        match = self.mono.match(line)
        if match:
            return line[match.end() :], _seconds(match["mono"]), None, True
        match = self.rel_re.match(line)
        if match:
            self.rel += _seconds(match["rel"]) or 0.0
            return line[match.end() :], self.rel, None, True
        match = self.wall_re.match(line)
        if match:
            when = _wall_seconds(match["mon"], match["day"], match["hms"], int(match["year"]))
            return line[match.end() :], self._wall(when), match["clock"], True
        match = self.human.match(line)
        if match:
            when = _wall_seconds(match["mon"], match["day"], match["hm"])
            return line[match.end() :], self._wall(when), match["clock"], True
        return line, None, None, False

    def strip(self, raw: str) -> tuple[str, float | None, str | None, bool]:
        """(message, seconds, clock text, whether the line carried kernel packaging)."""
        line, when, clock, packaged = self._prefix(raw)
        facility = self.facility.match(line)
        if facility:
            line, packaged = line[facility.end() :], True
        line, stamp_time, stamp_clock, stamped = self._stamp(line)
        if stamped:
            # The dmesg stamp is the better clock when a syslog prefix has one too.
            when = stamp_time if stamp_clock is None else (when if when is not None else stamp_time)
            clock = clock or stamp_clock
        if packaged or stamped:
            self.stamped += 1
        return line.strip(), when, clock, packaged or stamped


# --------------------------------------------------------------------------- message readers

_DEVICE_RE = lazy(
    r"^(?P<drv>[\w.-]+)\s+(?P<bus>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]):\s*"
)
_XID_RE = lazy(
    r"NVRM:\s*(?:GPU\s+\S+\s*:\s*)?Xid\s*\((?:PCI:)?(?P<bus>[^)\s]{0,64})(?:\s[^)]{0,64})?\):"
    r"\s*(?P<code>\d+)\s*,?\s*"
    r"(?P<rest>.*)$"
)
_PID_RE = lazy(r"^pid=\s*'?(?P<pid><?[^\s,'<>]+>?)'?\s*,\s*(?:name=(?P<name>[^,]{0,200}?)\s*,\s*)?")
_LINK_NO_RE = lazy(r"\blink\s*(?:#|number\s*)?(\d+)\b", re.IGNORECASE)
_FALLEN_RE = lazy(r"fallen off the bus", re.IGNORECASE)
_PROBE_FAIL_RE = lazy(r"NVRM: The NVIDIA probe routine failed")
_GPU_AT_RE = lazy(r"GPU\s+(?:at\s+)?(?:PCI:)?(?P<bus>[0-9a-fA-F]{2,8}:[0-9a-fA-F:.]{4,})")
_AER_BUS_ERR_RE = lazy(
    r"PCIe Bus Error:\s*severity=(?P<sev>[^,]{1,40}),\s*type=(?P<type>[^,(]{1,60})\s*,?\s*"
    r"(?:id=[0-9a-fA-F]+)?\s*(?:\((?P<agent>[^)]{0,80})\))?"
)
_AER_RECEIVED_RE = lazy(
    r"AER:\s*(?:Multiple\s+)?(?P<sev>Corrected|Correctable|Uncorrected\s*\((?:Non-)?Fatal\)|"
    r"Uncorrectable\s*\((?:Non-)?Fatal\))\s+error(?:\s+message)?\s+received(?::|\s+from)\s*"
    r"(?:id=)?(?P<src>\S+)",
    re.IGNORECASE,
)
_AER_STATUS_RE = lazy(
    r"device\s*\[(?P<vd>[0-9a-fA-F]{4}:[0-9a-fA-F]{4})\]\s*error status/mask=(?P<st>[0-9a-fA-F]+)"
)
_AER_OLD_STATUS_RE = lazy(r"aer_status:\s*0x(?P<st>[0-9a-fA-F]+)")
_AER_LAYER_RE = lazy(r"aer_layer=(?P<layer>[^,]{1,60}),\s*aer_agent=(?P<agent>.+)$")
_GHES_SEV_RE = lazy(r"\[Hardware Error\]:\s*event severity:\s*(?P<sev>\w+)", re.IGNORECASE)
_DPC_RE = lazy(r"DPC:\s*containment event|DPC:.{0,300}?(?:uncorrectable|fatal) error detected")
_GPU_ENUM_RE = lazy(r"\[(?:10de|1002):[0-9a-f]{4}\]\s+type\s+00\s+class\s+0x03", re.IGNORECASE)
# The blanks around the bit's name are bounded: a line of blanks that ends in something else
# would otherwise be scanned once per length the name could take (linear, but 80 times over).
_AER_BIT_RE = lazy(
    r"^(?:AER:\s*)?\[\s{0,8}(?P<n>\d{1,3})\]\s{1,60}(?P<name>[A-Za-z][\w ]{0,80}?)\s{0,60}"
    r"(?:\(First\))?\s{0,8}$"
)
_AER_RECOVERY = (
    (lazy(r"can't recover|device recovery failed|recovery failed", re.IGNORECASE), "failed"),
    (lazy(r"link has been reset|Downstream Port link has been reset", re.IGNORECASE), "reset"),
    (lazy(r"Device recovery successful|device recovery successful", re.IGNORECASE), "recovered"),
)
_DMAR_RE = lazy(
    r"DMAR:\s*\[(?P<kind>DMA (?:Read|Write)|INTR-REMAP)[^\]]{0,100}\]\s*Request device\s*"
    r"\[(?P<bus>[^\]]{1,64})\]\s*(?:PASID\s+\w+\s+)?fault (?:addr|index)\s*"
    r"(?P<addr>(?:0x)?[0-9a-fA-F]+)"
    r"\s*(?:\[fault reason\s*(?P<reason>[^\]]{1,100})\]\s*(?P<rtext>.*))?"
)
_AMDVI_RE = lazy(r"AMD-Vi:\s*Event logged\s*\[(?P<kind>[A-Z_]+)\s*(?P<args>[^\]]*)\]?")
_SMMU_RE = lazy(r"Unhandled context fault:.{0,300}?iova=(?P<addr>0x[0-9a-fA-F]+)")
# ARM SMMUv3 (Grace and other Arm hosts): ``event 0x10 received:`` and the event's four 64-bit
# words on the next four lines; kernels from 6.15 add a decoded line after them
# (``event: F_TRANSLATION client: 0000:01:00.0 sid: 0x100 ssid: 0 iova: 0x... ipa: 0``).
_SMMU3_RAW_RE = lazy(r"event 0x(?P<id>[0-9a-fA-F]{2}) received:")
_SMMU3_DECODED_RE = lazy(r"event:\s*(?P<kind>[A-Z][A-Z_]*)\s+client:\s*(?P<client>\S+)")
_SMMU3_IOVA_RE = lazy(r"(?<!\w)iova:\s*(?P<addr>0x[0-9a-fA-F]+)")
_SMMU3_SID_RE = lazy(r"(?<!\w)sid:\s*(?P<sid>0x[0-9a-fA-F]+|\d+)")
_SMMU3_EVENTS: dict[int, str] = {
    0x02: "C_BAD_STREAMID",
    0x03: "F_STE_FETCH",
    0x04: "C_BAD_STE",
    0x06: "F_STREAM_DISABLED",
    0x08: "C_BAD_SUBSTREAMID",
    0x09: "F_CD_FETCH",
    0x0A: "C_BAD_CD",
    0x10: "F_TRANSLATION",
    0x11: "F_ADDR_SIZE",
    0x12: "F_ACCESS",
    0x13: "F_PERMISSION",
    0x25: "F_VMS_FETCH",
}
"""SMMUv3 event ids (the architecture's names, as Linux's ``EVT_ID_*``); 0x10-0x13 carry the
faulting input address in the event's third word."""
_SMMU3_ADDRESS_EVENTS = frozenset({0x10, 0x11, 0x12, 0x13})
_ARG_RE = lazy(r"(?<!\w)(\w+)=([^\s,]+)")
_NOTICE_RE = lazy(
    r"(?<![\d.])(?P<avail>[\d.]+)\s*Gb/s available PCIe bandwidth,\s*"
    r"limited by\s*(?P<gts>[\d.]+)\s*GT/s\s*"
    r"(?:PCIe\s*)?x(?P<width>\d+)\s*link at\s*(?P<port>\S+?)\s*"
    r"\(capable of\s*(?P<cap>[\d.]+)\s*Gb/s with\s*(?P<cgts>[\d.]+)\s*GT/s\s*(?:PCIe\s*)?"
    r"x(?P<cwidth>\d+)\s*link\)"
)
# An NVLink/fabric source, and after it on the line what went wrong: searched one after the
# other (one pattern with ``.*?`` between them scanned the rest of the line from every source).
_NVLINK_SOURCE_RE = lazy(
    r"nvidia-nvlink|nvidia-nvswitch|NVLink|NVSwitch|nv-fabricmanager|fabric manager",
    re.IGNORECASE,
)
_NVLINK_FAULT_RE = lazy(
    r"error|fatal|fail|timeout|train(?:ing)? (?:fail|error)|link down", re.IGNORECASE
)
_FW_FIRST_RE = lazy(
    r"_OSC: platform does not support \[[^\]]{0,200}\bAER\b|OS does not control AER|"
    r"AER: Firmware first mode|HEST: Enabling Firmware First|\bpci=noaer\b|"
    r"firmware first mode is enabled",
    re.IGNORECASE,
)
_AER_NATIVE_RE = lazy(r"_OSC: OS now controls \[[^\]]{0,200}\bAER\b")
_IOMMU_OFF_RE = lazy(
    r"\b(?:amd_)?iommu=(?:off|pt)\b|intel_iommu=off\b|iommu\.passthrough=1|"
    r"Default domain type: Passthrough",
)


_COMMAND_LINE_RE = lazy(r"^(?:BOOT_IMAGE=|(?:Kernel )?[Cc]ommand line:)")
"""A kernel command line pasted on its own (``cat /proc/cmdline``): read for IOMMU settings."""

_KEYWORDS = (
    "Xid", "NVRM", "fallen off", "AER", "PCIe Bus Error", "DMAR", "AMD-Vi", "context fault",
    "GT/s", "NVLink", "NVLINK", "Nvlink", "nvlink", "nvswitch", "NVSwitch", "fabric", "_OSC",
    "iommu", "IOMMU", "Hardware Error", "DPC", "recover", "irmware first", "noaer", "smmu",
)  # fmt: skip
"""What one of the readers looks for (besides a device-prefixed message); other lines are only
counted. Searched as one alternation of literals (no character class: that is what made the
search slow)."""
_KEYWORDS_RE = lazy("|".join(re.escape(word) for word in _KEYWORDS))
_STAMP_STARTS = frozenset("[0123456789")


def _maybe_packaged(raw: str, start: str) -> bool:
    """Whether the line may start with a kernel stamp or prefix (``[``, an ISO date,
    ``kernel:``, ``kern :``, a syslog month name): a cheap test before the patterns."""
    if start in _STAMP_STARTS:
        return True
    text = raw.lstrip()
    # A syslog month in any locale ("Sep", "jan.", "déc.", "11月"): letters, then a day.
    head = text[:8].split(" ", 1)[0]
    return (
        text[:3] in _MONTHS
        or text.startswith(("kernel", "kern "))
        or (3 <= len(head.rstrip(".")) <= 5 and head.rstrip(".").isalpha())
        or head[-1:] in ("月", "월")
    )


_DRIVER_TAGS = ("NVRM:", "nvidia-nvswitch", "nvidia-nvlink", "nvidia ")


def _quote(line: str) -> str:
    return line.strip()[:300]


class _Reader:
    """State of one pass over a text."""

    def __init__(self, log: KernelLog) -> None:
        self.log = log
        self.recent: list[str] = []
        self.last_aer: dict[str | None, AerEvent] = {}
        self.port_of: dict[str, str] = {}
        """device -> the port whose ``error received`` line named it."""
        self.pending_port: tuple[str | None, str | None] | None = None
        self.packaged = False
        """Whether the current line carried a kernel stamp or prefix."""
        self.ghes_severity: str | None = None
        """``event severity`` of the last firmware (GHES/APEI) hardware error record."""
        self.smmu3: tuple[dict[str, Any], int, list[int]] | None = None
        """An SMMUv3 event being read: its first line's fields, its id, the words so far."""
        self.odd_pids: list[str] = []
        """Xid pids that are no process id (the events were kept without them)."""
        self.clock = _Clock()
        self.keywords, self.device = _KEYWORDS_RE.compiled, _DEVICE_RE.compiled
        self.times: list[float] = []
        self.lines = 0
        """Lines with kernel packaging."""
        self.platform_lines = 0

    def pid(self, text: str) -> int | None:
        """A process id as Linux has them (at most 2^22, PID_MAX_LIMIT); another value (40
        digits, ``²``) leaves the pid unknown, with a warning, and the event is kept."""
        if text.startswith("<") or text.isalpha():
            return None  # <unknown>, a name: no pid printed
        value = to_int(text)
        if value is None or not 0 <= value <= PID_MAX:
            self.odd_pids.append(text[:20])
            return None
        return value

    def keep(self, items: list[Any], item: Any) -> None:
        if len(items) < MAX_EVENTS:
            items.append(item)
        else:
            self.log.dropped += 1

    # Each reader returns True when the message was one of its kind.

    def xid(self, msg: str, base: dict[str, Any]) -> bool:
        match = _XID_RE.search(msg)
        if not match:
            return False
        rest = match["rest"].strip()
        pid = name = None
        pid_match = _PID_RE.match(rest)
        if pid_match:
            pid = self.pid(pid_match["pid"].strip())
            name = (pid_match["name"] or "").strip() or None
            if name and name.startswith("<"):
                name = None
            rest = rest[pid_match.end() :]
        link = _LINK_NO_RE.search(rest)
        base["bus_id"] = normalize_bus_id(match["bus"].strip()) or base.get("bus_id")
        code = to_int(match["code"])
        if code is None:
            raise ValueError("an Xid code out of range")  # the line is skipped, with a warning
        event = XidEvent(
            code=code,
            pid=pid,
            process=name,
            text=rest.rstrip(".") or None,
            link=to_int(link.group(1)) if link else None,
            **base,
        )
        self.keep(self.log.xids, event)
        return True

    def fallen(self, msg: str, base: dict[str, Any]) -> bool:
        probe = bool(_PROBE_FAIL_RE.search(msg))
        if not (_FALLEN_RE.search(msg) or probe):
            return False
        bus = base.get("bus_id")
        for text in [msg, *reversed(self.recent[-4:])]:
            at = _GPU_AT_RE.search(text)
            if at and normalize_bus_id(at["bus"].rstrip(".:")):
                bus = normalize_bus_id(at["bus"].rstrip(".:"))
                break
        if probe:
            if self.log.fallen_off_bus:
                self.log.fallen_off_bus[-1].probe_failed = True
            return True
        base["bus_id"] = bus
        if any(e.bus_id == bus and e.time_s == base.get("time_s") for e in self.log.fallen_off_bus):
            return True
        self.keep(self.log.fallen_off_bus, FallenOffBus(**base))
        return True

    def aer_error(self, msg: str, base: dict[str, Any]) -> bool:
        match = _AER_BUS_ERR_RE.search(msg)
        if not match:
            return False
        device = base.get("bus_id")
        port, source = self.pending_port or (None, None)
        event = AerEvent(
            severity=_severity(match["sev"]),
            layer=match["type"].strip() or None,
            agent=(match["agent"] or "").strip() or None,
            port=port if port and port != device else self.port_of.get(device or ""),
            source=source,
            **base,
        )
        self.pending_port = None
        self.keep(self.log.aer, event)
        self.last_aer[device] = event
        return True

    def aer_received(self, msg: str, base: dict[str, Any]) -> bool:
        match = _AER_RECEIVED_RE.search(msg)
        if not match:
            return False
        source = normalize_bus_id(match["src"].rstrip(".,:"))
        port = base.get("bus_id")
        self.pending_port = (port, source)
        if source and port and source != port:
            self.port_of[source] = port
        return True

    def aer_firmware(self, msg: str, base: dict[str, Any]) -> bool:
        """GHES/APEI records (firmware-first AER) and DPC containment events."""
        ghes = _GHES_SEV_RE.search(msg)
        if ghes:
            self.ghes_severity = {"recoverable": "non-fatal", "fatal": "fatal"}.get(
                ghes["sev"].lower(), "corrected"
            )
            self.log.firmware_first = self.log.firmware_first or base["quote"]
            return True
        if _DPC_RE.search(msg):
            event = AerEvent(severity="fatal", layer="DPC containment (link disabled)", **base)
            self.keep(self.log.aer, event)
            return True
        return False

    def aer_detail(self, msg: str, base: dict[str, Any]) -> bool:
        event = self.last_aer.get(base.get("bus_id"))
        if event is None and self.ghes_severity and _AER_OLD_STATUS_RE.search(msg):
            # A firmware-reported error: the kernel prints its status and bits without a
            # ``PCIe Bus Error`` line; the severity is the GHES record's.
            event = AerEvent(severity=self.ghes_severity, **base)
            self.ghes_severity = None
            self.keep(self.log.aer, event)
            self.last_aer[base.get("bus_id")] = event
        if event is None:
            return False
        layer = _AER_LAYER_RE.search(msg)
        if layer:
            event.layer, event.agent = layer["layer"].strip(), layer["agent"].strip()
            return True
        status = _AER_STATUS_RE.search(msg)
        if status:
            event.vendor_device = status["vd"].lower()
            event.status = status["st"].lower()
            return True
        old = _AER_OLD_STATUS_RE.search(msg)
        if old:
            event.status = old["st"].lower()
            return True
        device = _DEVICE_RE.match(msg)
        bit = _AER_BIT_RE.match(msg[device.end() :] if device else msg)
        if bit and len(event.bits) < 32:
            event.bits.append(bit["name"].strip())
            return True
        return False

    def aer_recovery(self, msg: str, base: dict[str, Any]) -> bool:
        if "AER" not in msg and "recovery" not in msg.lower():
            return False
        for pattern, outcome in _AER_RECOVERY:
            if pattern.search(msg):
                self.keep(self.log.aer_recovery, AerRecovery(outcome=outcome, **base))
                return True
        return False

    def iommu(self, msg: str, base: dict[str, Any]) -> bool:
        if "smmu" in msg and self.smmu_v3(msg, base):
            return True
        fault = _iommu_fault(msg, base)
        if fault is None:
            return False
        self.keep(self.log.iommu_faults, fault)
        return True

    def smmu_v3(self, msg: str, base: dict[str, Any]) -> bool:
        """An SMMUv3 event: its header, one of its four words, or the decoded line that
        newer kernels print after them (which then stands for the whole event)."""
        header = _SMMU3_RAW_RE.search(msg)
        if header:
            self.finish_smmu3()
            self.smmu3 = (base, int(header["id"], 16), [])
            return True
        pending = self.smmu3
        if pending is not None and len(pending[2]) < 4:
            word = _smmu3_word(msg)
            if word is not None:
                pending[2].append(word)
                return True
        decoded = _SMMU3_DECODED_RE.search(msg)
        if decoded is None:
            return False
        self.smmu3 = None  # the raw words above were this event
        iova, sid = _SMMU3_IOVA_RE.search(msg), _SMMU3_SID_RE.search(msg)
        bus = normalize_bus_id(decoded["client"])
        self.keep(
            self.log.iommu_faults,
            IommuFault(
                iommu="SMMU",
                kind=decoded["kind"],
                address=iova["addr"].lower() if iova else None,
                reason=f"StreamID {sid['sid']}" if sid else None,
                **{**base, "bus_id": bus or base.get("bus_id")},
            ),
        )
        return True

    def finish_smmu3(self) -> None:
        """Keep the SMMUv3 event read from its raw words (no decoded line followed them)."""
        pending, self.smmu3 = self.smmu3, None
        if pending is None:
            return
        base, event, words = pending
        address = None
        if event in _SMMU3_ADDRESS_EVENTS and len(words) > 2:
            address = f"{words[2]:#x}"
        self.keep(
            self.log.iommu_faults,
            IommuFault(
                iommu="SMMU",
                kind=_SMMU3_EVENTS.get(event, f"event {event:#04x}"),
                address=address,
                reason=f"StreamID {words[0] >> 32:#x}" if words else None,
                **base,
            ),
        )

    def notice(self, msg: str, base: dict[str, Any]) -> bool:
        match = _NOTICE_RE.search(msg)
        if not match:
            return False
        event = LinkNotice(
            available_gbps=to_float(match["avail"]),
            capable_gbps=to_float(match["cap"]),
            limited_by=normalize_bus_id(match["port"].rstrip(".,")),
            speed_gts=to_float(match["gts"]),
            width=to_int(match["width"]),
            capable_gts=to_float(match["cgts"]),
            capable_width=to_int(match["cwidth"]),
            **base,
        )
        self.keep(self.log.link_notices, event)
        return True

    def nvlink(self, msg: str, base: dict[str, Any]) -> bool:
        if not (self.packaged or msg.startswith(_DRIVER_TAGS)):
            return False
        source = _NVLINK_SOURCE_RE.search(msg)
        if source is None or _NVLINK_FAULT_RE.compiled.search(msg, source.end()) is None:
            return False
        link = _LINK_NO_RE.search(msg)
        event = NvlinkEvent(text=msg[:300], link=to_int(link.group(1)) if link else None, **base)
        self.keep(self.log.nvlink, event)
        return True

    def platform(self, msg: str, base: dict[str, Any]) -> bool:
        if _FW_FIRST_RE.search(msg):
            self.log.firmware_first = self.log.firmware_first or base["quote"]
            return True
        if _AER_NATIVE_RE.search(msg):
            self.log.aer_native = True
            return True
        if _IOMMU_OFF_RE.search(msg):
            self.log.iommu_off = self.log.iommu_off or base["quote"]
            return True
        return False


def _smmu3_word(msg: str) -> int | None:
    """The 64-bit word of an SMMUv3 event line (``arm-smmu-v3 <dev>: 0x0000010000000010``)."""
    head, _, tail = msg.rpartition(":")
    tail = tail.strip()
    if "smmu" not in head or len(tail) != 18 or not tail.startswith("0x"):
        return None
    try:
        return int(tail, 16)
    except ValueError:
        return None


def _severity(text: str) -> str:
    lowered = text.lower()
    if "non-fatal" in lowered or "nonfatal" in lowered:
        return "non-fatal"
    if "fatal" in lowered:
        return "fatal"
    return "corrected"


def _iommu_fault(msg: str, base: dict[str, Any]) -> IommuFault | None:
    match = _DMAR_RE.search(msg)
    if match:
        return IommuFault(
            iommu="DMAR",
            kind=match["kind"],
            address=match["addr"].lower(),
            reason=" ".join(x for x in (match["reason"], match["rtext"]) if x).strip() or None,
            # Some kernels print the requester as ``[0x00:0x02.0]``.
            **{
                **base,
                "bus_id": normalize_bus_id(match["bus"].replace("0x", "")) or base.get("bus_id"),
            },
        )
    match = _AMDVI_RE.search(msg)
    if match:
        args = dict(_ARG_RE.findall(match["args"]))
        bus = normalize_bus_id(args.get("device", "").rstrip(",")) or base.get("bus_id")
        return IommuFault(
            iommu="AMD-Vi",
            kind=match["kind"],
            address=args.get("address"),
            domain=args.get("domain"),
            **{**base, "bus_id": bus},
        )
    match = _SMMU_RE.search(msg)
    if match:
        return IommuFault(iommu="SMMU", kind="context fault", address=match["addr"], **base)
    return None


_READERS: tuple[Callable[[_Reader, str, dict[str, Any]], bool], ...] = (
    _Reader.xid,
    _Reader.fallen,
    _Reader.aer_error,
    _Reader.aer_received,
    _Reader.aer_firmware,
    _Reader.aer_detail,
    _Reader.aer_recovery,
    _Reader.iommu,
    _Reader.notice,
    _Reader.nvlink,
    _Reader.platform,
)


def _base(msg: str, when: float | None, clock: str | None, raw: str) -> dict[str, Any]:
    device = _DEVICE_RE.match(msg)
    return {
        "time_s": round(when, 6) if when is not None else None,
        "clock": clock,
        "bus_id": normalize_bus_id(device["bus"]) if device else None,
        "driver": device["drv"] if device else None,
        "quote": _quote(raw),
    }


def _nvidia_device(msg: str, log: KernelLog) -> None:
    device = _DEVICE_RE.match(msg)
    gpu = device is not None and (
        device["drv"] in ("nvidia", "amdgpu") or bool(_GPU_ENUM_RE.search(msg))
    )
    if device and gpu:
        bus = normalize_bus_id(device["bus"])
        if bus and bus not in log.nvidia_devices and len(log.nvidia_devices) < 4096:
            log.nvidia_devices.append(bus)


def _events(log: KernelLog) -> int:
    return (
        len(log.xids)
        + len(log.fallen_off_bus)
        + len(log.aer)
        + len(log.aer_recovery)
        + len(log.iommu_faults)
        + len(log.link_notices)
        + len(log.nvlink)
    )


def read(doc: Doc, ctx: Context) -> list[Fragment]:
    """The importer's face: the kernel log of ``doc`` as a fragment (none when it is not one)."""
    log = extract(doc, ctx.file, ctx.warnings)
    if log is None:
        return []
    frag = Fragment(FORMAT)
    frag.evidence.kernel_logs.append(log)
    frag.read.append(summary(log))
    return [frag]


def _line(reader: _Reader, raw: str, index: int) -> bool:
    """Offer one line of the text to the readers (the walker's handler: any line is read)."""
    start = raw.lstrip()[:1]
    interesting = reader.keywords.search(raw) is not None
    if not interesting and not _maybe_packaged(raw, start):
        return True  # neither kernel packaging nor anything a reader looks for: skip fast
    msg, when, stamp, packaged = reader.clock.strip(raw)
    reader.lines += packaged
    if when is not None:
        reader.times.append(when)
    device = reader.device.match(msg) is not None
    if not interesting and not device:
        return True
    shaped = packaged or device or msg.startswith(KERNEL_SUBSYSTEMS)
    if not shaped:
        # Packaging the clock does not know (a log shipper's "host: kern: warning: [time]:",
        # a viewer's bare time column) before a kernel message: the line reader finds it.
        view = read_line(raw)
        if view.kernel_at is not None and not prose_before(raw, view.kernel_at):
            msg, shaped = raw[view.kernel_at :].strip(), True
    if not shaped and not _COMMAND_LINE_RE.search(msg):
        return True  # a sentence that mentions a kernel message is not one (issue 27)
    base = _base(msg, when, stamp, raw)
    reader.packaged = packaged
    _nvidia_device(msg, reader.log)
    for read in _READERS if shaped else (_Reader.platform,):
        if read(reader, msg, base):
            reader.platform_lines += read is _Reader.platform
            break
    reader.recent.append(msg)
    if len(reader.recent) > 8:
        del reader.recent[0]
    return True


def extract(doc: Doc, source: str, notes: list[str] | None = None) -> KernelLog | None:
    """Read every kernel line of ``doc``; None when the text is not a kernel log.

    ``notes`` receives warnings about values that could not be kept (a pid no process has, a
    line whose numbers are out of range: the rest of the log is read).
    """
    log = KernelLog(source=source)
    reader = _Reader(log)
    walker = each_line(doc, reader, _line)
    reader.finish_smmu3()
    log.lines = reader.lines
    clock = reader.clock
    if not _events(log) and clock.stamped < MIN_STAMPED_LINES:
        return None
    if not _events(log) and not reader.platform_lines and not log.nvidia_devices and log.lines < 20:
        return None
    log.hosts = clock.hosts
    if reader.times:
        log.span_s = round(max(reader.times) - min(reader.times), 6)
    if notes is not None:
        note = walker.bad_values_note("kernel-log")
        notes.extend([note] if note else [])
        if reader.odd_pids:
            shown = ", ".join(repr(p) for p in reader.odd_pids[:3])
            notes.append(
                f"kernel-log: {len(reader.odd_pids)} Xid line(s) with a pid that is no process "
                f"id ({shown}); kept the events without it"
            )
    return log


def summary(log: KernelLog) -> str:
    """One line for ``origin.sources[].read``."""
    parts = [f"kernel log: {log.lines} line(s)"]
    for count, what in (
        (len(log.xids), "Xid event(s)"),
        (len(log.fallen_off_bus), "fallen-off-the-bus message(s)"),
        (len(log.aer), "AER error(s)"),
        (len(log.iommu_faults), "IOMMU fault(s)"),
        (len(log.link_notices), "PCIe bandwidth notice(s)"),
        (len(log.nvlink), "NVLink/fabric error line(s)"),
    ):
        if count:
            parts.append(f"{count} {what}")
    if log.firmware_first:
        parts.append("AER handled by firmware")
    return ", ".join(parts)

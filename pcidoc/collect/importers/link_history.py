"""Repeated readings of negotiated PCIe links pasted together: the history ``pcie.link-flap``
judges.

Read, each line by a table of small readers (a reading starts again when a device is seen a
second time):

* ``nvidia-smi --query-gpu=...,pcie.link.gen.current,pcie.link.width.current --format=csv``,
  repeated (``-l``/``-lms`` or a loop), with or without the header (without it, the two numbers
  after the bus id that look like a generation and a width are taken);
* ``nvidia-smi -q -d PCIE`` repeated (``GPU 00000000:01:00.0`` blocks with ``PCIe Generation``
  / ``Link Width`` ``Max``/``Current``, and ``Gpu : 45 %`` when ``UTILIZATION`` was asked too);
* ``lspci -vv`` repeated (``LnkCap``/``LnkSta`` per device header);
* sysfs ``current_link_speed``/``current_link_width``/``max_link_*`` via ``tail -v`` (``==>
  path <==`` then the value) or ``grep . path`` (``path:value``);
* monitoring-script lines that name a GPU (``GPU3`` or a bus id), ``Gen N`` and ``xW``, with an
  optional leading time.

A history needs two readings of one device, except sysfs readings, which carry the maximum too.
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

from pcidoc.catalogue.lines import prose_before
from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.text import BUS_ID, Doc, lazy, normalize_bus_id, to_float, to_int
from pcidoc.collect.importers.walk import each_line
from pcidoc.model.kernel import LinkHistory, LinkSample, LinkTrace

FORMAT = "link-history"

MAX_SAMPLES = 20_000
"""Readings kept per device."""

_GTS_TO_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}

_CSV_HEADER_RE = lazy(r"pcie\.link\.(?:gen|width)\.(?:current|gpucurrent)")
_CSV_BUS_RE = lazy(rf"^{BUS_ID}$")
_Q_GPU_RE = lazy(rf"^GPU\s+({BUS_ID})\s*$")
_Q_KEY_RE = lazy(r"^\s*(Max|Current|Device Current|Device Max|Host Max)\s*:\s*(\S+)")
_Q_SECTION_RE = lazy(r"^\s*(PCIe Generation|Link Width|Utilization)\s*$")
_Q_UTIL_RE = lazy(r"^\s*Gpu\s*:\s*(\d+(?:\.\d+)?)\s*%")
_LSPCI_HEAD_RE = lazy(rf"^({BUS_ID})\s+\S.*:")
_LNK_RE = lazy(r"^\s*Lnk(Cap|Sta):.{0,200}?Speed\s*([\d.]+)\s*GT/s.{0,200}?Width\s*x(\d+)")
_SYSFS_RE = lazy(
    rf"/sys/(?:bus/pci/devices|devices/\S{{0,400}}?)/({BUS_ID})/(current|max)_link_(speed|width)"
    r"(?:\s*<==|:\s*(\S.*))"
)
# Monitoring lines: "GPU3 ... Gen4 ... x16", nvtop's "Device 1 [GTX 1080 Ti] PCIe GEN 1@16x".
_MONITOR_RE = lazy(
    rf"(?:\b(?:GPU|Device)\s*(?P<gpu>\d+)\b|(?P<bus>{BUS_ID})).{{0,200}}?\bGen\s*(?P<gen>[1-6])\b"
    r"(?:\s*@\s*(?P<at>\d{1,2})x\b|.{0,200}?\bx\s*(?P<width>\d{1,2})\b)",
    re.IGNORECASE,
)
_TIME_STARTS = frozenset("[0123456789")
_Q_STARTS = (
    "GPU ", "PCIe Generation", "Link Width", "Utilization", "Max", "Current", "Device", "Host",
    "Gpu",
)  # fmt: skip
_DPM_RE = lazy(r"^\s*\d+:\s*([\d.]+)\s*GT/s,\s*x(\d+)\s+\d+\s*Mhz\s*(?:(\*)\s*)?$", re.IGNORECASE)
_TIME_RE = lazy(r"^\[?(?:\d{4}[-/]\d\d[-/]\d\d[T ])?(\d\d):(\d\d):(\d\d(?:\.\d+)?)")


def _gen_of(text: str | None) -> int | None:
    """``5``, ``Gen5``, ``32.0 GT/s PCIe``, ``16GT/s`` -> a PCIe generation."""
    if not text:
        return None
    text = text.strip()
    value = to_int(text.lower().removeprefix("gen"))
    if value is not None:
        return value if 1 <= value <= 6 else None
    number = to_float(text.split("GT/s")[0].strip()) if "GT/s" in text else None
    return _GTS_TO_GEN.get(number) if number is not None else None


def _width_of(text: str | None) -> int | None:
    if not text:
        return None
    return to_int(text.strip().lower().removeprefix("x").removesuffix("x"))


class _History:
    """Readings per device (plain dictionaries while reading; models only for a history that is
    kept); a device seen again starts its next reading."""

    def __init__(self) -> None:
        self.traces: dict[str, list[dict[str, Any]]] = {}
        self.tools: list[str] = []
        self.time: float | None = None
        self.t0: float | None = None
        self.levels: list[str] = []

    def sample(self, device: str, tool: str, new: bool, **values: Any) -> None:
        samples = self.traces.setdefault(device, [])
        if tool not in self.tools:
            self.tools.append(tool)
        if new or not samples:
            if len(samples) >= MAX_SAMPLES:
                return
            samples.append({"sample": len(samples), "time_s": self.time})
        current = samples[-1]
        for key, value in values.items():
            if value is not None:
                current[key] = value

    def build(self) -> list[LinkTrace]:
        """The traces with a generation or width in some reading."""
        out = []
        for device, samples in self.traces.items():
            if not any(s.get("gen") or s.get("width") for s in samples):
                continue
            bus = normalize_bus_id(device)
            out.append(
                LinkTrace(
                    device=bus or device,
                    bus_id=bus,
                    samples=[LinkSample(**s) for s in samples],
                )
            )
        return out

    def stamp(self, line: str) -> None:
        text = line.lstrip()
        if text[:1] not in _TIME_STARTS:
            return
        match = _TIME_RE.match(text)
        if not match:
            return
        seconds = int(match[1]) * 3600 + int(match[2]) * 60 + float(match[3])
        if self.t0 is None:
            self.t0 = seconds
        self.time = round(seconds - self.t0, 3)


class _Csv:
    def __init__(self) -> None:
        self.columns: dict[str, int] | None = None

    def read(self, hist: _History, line: str) -> bool:
        if "," not in line:
            return False
        cells = [c.strip() for c in line.split(",")]
        if _CSV_HEADER_RE.search(line):
            self.columns = {c.split(" [")[0].strip(): i for i, c in enumerate(cells)}
            return True
        bus_at = next((i for i, c in enumerate(cells) if _CSV_BUS_RE.match(c)), None)
        if bus_at is None:
            return False
        gen, width, util = self._values(cells, bus_at)
        if gen is None or width is None:
            return False
        hist.sample(cells[bus_at], "nvidia-smi-query-csv", True, gen=gen, width=width, **util)
        return True

    def _values(self, cells: list[str], bus_at: int) -> tuple[int | None, int | None, dict]:
        cols = self.columns
        if cols:

            def cell(name: str) -> str | None:
                at = cols.get(name)
                return cells[at] if at is not None and at < len(cells) else None

            util = to_float((cell("utilization.gpu") or "").rstrip(" %"))
            extra = {
                "max_gen": _gen_of(cell("pcie.link.gen.max")),
                "max_width": _width_of(cell("pcie.link.width.max")),
                "utilization_pct": util,
            }
            gen = _gen_of(cell("pcie.link.gen.current") or cell("pcie.link.gen.gpucurrent"))
            return gen, _width_of(cell("pcie.link.width.current")), extra
        numbers = [to_int(c) for c in cells[bus_at + 1 :]]
        for a, b in pairwise(numbers):
            if a is not None and 1 <= a <= 6 and b in (1, 2, 4, 8, 16, 32):
                return a, b, {}
        return None, None, {}


class _Query:
    def __init__(self) -> None:
        self.gpu: str | None = None
        self.section: str | None = None

    def read(self, hist: _History, line: str) -> bool:
        if not line.lstrip().startswith(_Q_STARTS):
            return False
        gpu = _Q_GPU_RE.match(line.strip())
        if gpu:
            self.gpu, self.section = gpu.group(1), None
            hist.sample(self.gpu, "nvidia-smi-q", True)
            return True
        if self.gpu is None:
            return False
        section = _Q_SECTION_RE.match(line)
        if section:
            self.section = section.group(1)
            return True
        util = _Q_UTIL_RE.match(line)
        if util and self.section == "Utilization":
            hist.sample(self.gpu, "nvidia-smi-q", False, utilization_pct=float(util.group(1)))
            return True
        key = _Q_KEY_RE.match(line)
        if key is None or self.section not in ("PCIe Generation", "Link Width"):
            return False
        return self._value(hist, key.group(1), key.group(2))

    def _value(self, hist: _History, key: str, value: str) -> bool:
        gen = self.section == "PCIe Generation"
        parse = _gen_of if gen else _width_of
        if key in ("Current", "Device Current"):
            name = "gen" if gen else "width"
        elif key in ("Max", "Device Max"):
            name = "max_gen" if gen else "max_width"
        else:
            return True
        assert self.gpu is not None
        hist.sample(self.gpu, "nvidia-smi-q", False, **{name: parse(value)})
        return True


class _Lspci:
    def __init__(self) -> None:
        self.device: str | None = None

    def read(self, hist: _History, line: str) -> bool:
        if "Lnk" not in line and ":" not in line[:12]:
            return False
        head = _LSPCI_HEAD_RE.match(line)
        if head:
            self.device = head.group(1)
            return False
        link = _LNK_RE.match(line)
        if not link or self.device is None:
            return False
        gen, width = _GTS_TO_GEN.get(float(link.group(2))), int(link.group(3))
        if link.group(1) == "Cap":
            hist.sample(self.device, "lspci", True, max_gen=gen, max_width=width)
        else:
            hist.sample(self.device, "lspci", False, gen=gen, width=width)
        return True


class _Sysfs:
    def __init__(self) -> None:
        self.pending: tuple[str, str, str] | None = None

    def read(self, hist: _History, line: str) -> bool:
        if self.pending is None and "_link_" not in line:
            return False
        match = _SYSFS_RE.search(line)
        if match:
            bus, which, what = match.group(1), match.group(2), match.group(3)
            if match.group(4) is not None:
                self._store(hist, bus, which, what, match.group(4))
            else:
                self.pending = (bus, which, what)
            return True
        if self.pending and line.strip():
            self._store(hist, *self.pending, line.strip())
            self.pending = None
            return True
        return False

    @staticmethod
    def _store(hist: _History, bus: str, which: str, what: str, value: str) -> None:
        samples = hist.traces.get(bus)
        name = ("gen" if what == "speed" else "width") if which == "current" else None
        name = name or ("max_gen" if what == "speed" else "max_width")
        # A second current_link_speed of a device is its next reading.
        new = not samples or (name == "gen" and samples[-1].get("gen") is not None)
        parsed = _gen_of(value) if what == "speed" else _width_of(value)
        hist.sample(bus, "sysfs", bool(new), **{name: parsed})


def _dpm(hist: _History, line: str) -> bool:
    if "GT/s" not in line:
        return False
    match = _DPM_RE.match(line)
    if not match:
        return False
    level = f"{match[1]} GT/s x{match[2]}" + (" *" if match[3] else "")
    if level not in hist.levels and len(hist.levels) < 16:
        hist.levels.append(level)
    return True


def _monitor(hist: _History, line: str) -> bool:
    if "Gen" not in line and "gen" not in line and "GEN" not in line:
        return False
    match = _MONITOR_RE.search(line)
    if not match or prose_before(line, match.start()):
        return False  # none, or a sentence ("my GPU 0 runs at Gen4 x16")
    device = f"GPU{match['gpu']}" if match["gpu"] is not None else match["bus"]
    width = int(match["at"] or match["width"])
    hist.sample(device, "monitor", True, gen=int(match["gen"]), width=width)
    return True


def read(doc: Doc, ctx: Context) -> list[Fragment]:
    """The importer's face: the history of ``doc`` as a fragment (none when there is none)."""
    history = extract(doc, ctx.file, ctx.warnings)
    if history is None:
        return []
    frag = Fragment(FORMAT)
    frag.evidence.link_histories.append(history)
    frag.read.append(summary(history))
    return [frag]


def _reading_line(state: tuple[_History, list[Any]], line: str, index: int) -> bool:
    """One line of the text (the walker's handler), offered to each kind of reading."""
    hist, readers = state
    if line.lstrip().startswith("#"):
        return True  # a header or a comment (its words are no reading)
    hist.stamp(line)
    for read in readers:
        if read(hist, line):
            break
    return True


def extract(doc: Doc, source: str, notes: list[str] | None = None) -> LinkHistory | None:
    """The link history of ``doc``; None when it holds no repeated readings. ``notes`` receives
    a warning about lines whose values are out of range (skipped)."""
    hist = _History()
    readers = [_Sysfs().read, _Query().read, _Csv().read, _Lspci().read, _dpm, _monitor]
    walker = each_line(doc, (hist, readers), _reading_line)
    note = walker.bad_values_note(FORMAT)
    if note and notes is not None:
        notes.append(note)
    # One reading is enough from sysfs (it carries the maximum) and from a monitor's screen
    # (nvtop: the current link is what it shows, and what the check judges as such).
    single = set(hist.tools) <= {"sysfs", "monitor"}
    readings = max((len(samples) for samples in hist.traces.values()), default=0)
    if readings < 2 and not single:
        return None
    traces = hist.build()
    if not traces:
        return None
    readings = max(len(t.samples) for t in traces)
    if readings < 2 and not single:
        return None
    times = [s.time_s for t in traces for s in t.samples if s.time_s is not None]
    return LinkHistory(
        source=source,
        tool="+".join(hist.tools),
        readings=readings,
        span_s=(max(times) - min(times)) if times else None,
        traces=traces,
        power_levels=hist.levels,
    )


def summary(history: LinkHistory) -> str:
    """One line for ``origin.sources[].read``."""
    return (
        f"link history ({history.tool}): {history.readings} reading(s) of "
        f"{len(history.traces)} device(s)"
    )

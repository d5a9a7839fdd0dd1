"""NCCL topology XML: ``NCCL_TOPO_DUMP_FILE`` dumps and hand-written ``NCCL_TOPO_FILE`` files.

Accepted: a leading ``<!-- -->`` licence block, comments after elements, ``<pci>`` nodes with or
without ``class``/``vendor``/``device``/link attributes (Azure/AWS static files), placeholder
switches (``ffff:ff:01.0``), VM signatures (``numaid="-1"``, empty ``link_speed``), ``<gpu>``
with ``<nvlink>`` children and ``<nic>``/``<net>``. The file becomes
``capture.evidence.nccl_topologies[]`` (every node as written, plus what NCCL would reject or
misread) and, where devices are identifiable, GPUs (bus id, NUMA node, CPU affinity, NVLinks),
NICs and a topology matrix in nvidia-smi's vocabulary (``NV#`` from the NVLink counts, ``PIX``
one bridge, ``PXB`` several, ``PHB`` same CPU, ``SYS`` other CPU).

Untrusted text: a document with a ``DOCTYPE`` or ``ENTITY`` declaration is refused (no external
entity is fetched and no entity expanded), and at most 4 MiB are parsed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pcidoc.collect.importers.fragment import Context, Fragment, GpuPart
from pcidoc.collect.importers.text import Doc, label_span, lazy, normalize_bus_id
from pcidoc.collect.importers.walk import LAST, Walker
from pcidoc.model.cpulist import format_cpulist
from pcidoc.model.evidence import NcclTopology, TopoCpu, TopoNvlink, TopoPci
from pcidoc.model.facts import Topology

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

FORMAT = "nccl-topo-xml"

_START_RE = lazy(r"^\s*<(?:system\b|\?xml\b|!DOCTYPE\b)", re.IGNORECASE)
_COMMENT_START_RE = lazy(r"^\s*<!--")
_END_RE = lazy(r"</system\s*>")
_DECL_RE = lazy(r"<!\s*(?:DOCTYPE|ENTITY)", re.IGNORECASE)
# The name ends where a non-name character follows, so a long name is not split and retried
# (issue 23: linear time); a self-closing tag is told by its attributes ending in "/".
_TAG_RE = lazy(r"<(/?)([A-Za-z_][\w.-]*)(?![\w.-])([^<>]*)>")
_MAX_CHARS = 4 * 2**20
_MAX_DEVICES = 1024

# Link speeds NCCL's PCI generation dictionary knows (src/graph/xml.h, kvDictPciGen): the
# sysfs strings of kernels before and after 5.6.
NCCL_PCI_SPEEDS: dict[str, int] = {
    "2.5 GT/s": 1,
    "5 GT/s": 2,
    "8 GT/s": 3,
    "16 GT/s": 4,
    "32 GT/s": 5,
    "64 GT/s": 6,
    "2.5 GT/s PCIe": 1,
    "5.0 GT/s PCIe": 2,
    "8.0 GT/s PCIe": 3,
    "16.0 GT/s PCIe": 4,
    "32.0 GT/s PCIe": 5,
    "64.0 GT/s PCIe": 6,
}

_SWITCH_TCLASS = "0x068000"


def detect(doc: Doc, index: int, ctx: Context) -> bool:
    """True at ``<system`` or at a comment block followed by ``<system``."""
    line = doc.lines[index]
    if _START_RE.match(line):
        return True
    if _COMMENT_START_RE.match(line):
        for ahead in doc.lines[index : index + 60]:
            if _START_RE.match(ahead):
                return True
    return False


def _hex(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    return value.strip().lower()


MAX_NVLINKS_PER_GPU = 64
"""The most NVLinks one GPU's entries may expand to (an NVLink 5 GPU has 18; a hostile
``<nvlink count="10000000">`` must not allocate ten million links)."""

MAX_NVLINKS_TOTAL = 18 * 576
"""The most NVLinks read from one file: 18 per GPU of the largest NVLink domain (576 GPUs);
a file of 64 links for each of a thousand GPUs must not become 64,000 link records."""


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.strip(), 0)
    except ValueError:
        return None


def mask_to_cpulist(mask: str | None) -> str | None:
    """An NCCL affinity mask (``0000ffff,ffffffff``: 32-bit words, most significant first) as a
    cpulist; None when it is not a mask or is empty."""
    if not mask:
        return None
    text = mask.replace(",", "").strip()
    if not text or not re.fullmatch(r"[0-9a-fA-F]+", text) or len(text) > 2048:
        return None
    value = int(text, 16)
    if value == 0:
        return None
    cpus = [bit for bit in range(value.bit_length()) if value >> bit & 1]
    return format_cpulist(cpus)


def gen_of(speed: str | None) -> int | None:
    """PCIe generation of an NCCL ``link_speed`` string, or None."""
    if not speed:
        return None
    if speed.strip() in NCCL_PCI_SPEEDS:
        return NCCL_PCI_SPEEDS[speed.strip()]
    match = re.match(r"^\s*([\d.]+)\s*GT/s", speed)
    if not match:
        return None
    rate = float(match.group(1))
    for gts, gen in ((2.5, 1), (5, 2), (8, 3), (16, 4), (32, 5), (64, 6)):
        if abs(rate - gts) < 0.01:
            return gen
    return None


def _repair(text: str) -> str:
    """Close the elements a truncated document left open."""
    stack: list[str] = []
    body = re.sub(r"<!--.*?(?:-->|$)", "", text, flags=re.S)
    last = 0
    for match in _TAG_RE.finditer(body):
        last = match.end()
        closing, name, attributes = match.groups()
        selfclose = attributes.rstrip().endswith("/")
        if closing:
            if stack and stack[-1] == name:
                stack.pop()
        elif not selfclose:
            stack.append(name)
    body = body[:last]
    return body + "".join(f"</{name}>" for name in reversed(stack))


def parse_xml_text(text: str, source: str) -> tuple[NcclTopology | None, list[str]]:
    """Parse an NCCL topology document; None (with a warning) when it cannot be read."""
    warnings: list[str] = []
    if _DECL_RE.search(text):
        return None, [
            "nccl-topo-xml: the document declares a DOCTYPE/ENTITY; refused (NCCL topology "
            "files have none, and entities in untrusted text are not expanded)"
        ]
    if len(text) > _MAX_CHARS:
        return None, [f"nccl-topo-xml: larger than {_MAX_CHARS // 2**20} MiB; not read"]
    if not _END_RE.search(text):
        warnings.append(
            "nccl-topo-xml: the file is truncated (no </system>); read the elements that were "
            "complete"
        )
        text = _repair(text)
    import xml.etree.ElementTree as ET  # only for a topology file: 4 ms at every import

    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        return None, [f"nccl-topo-xml: not well-formed XML ({exc}); not read"]
    if root.tag != "system":
        found = root.find(".//system")
        if found is None:
            return None, ["nccl-topo-xml: no <system> element; not read"]
        root = found
    topo = NcclTopology(source=source, version=root.get("version"))
    for cpu_el in root.iter("cpu"):
        cpu = TopoCpu(
            numaid=_int(cpu_el.get("numaid")),
            affinity=cpu_el.get("affinity"),
            arch=cpu_el.get("arch"),
            vendor=cpu_el.get("vendor"),
            familyid=_int(cpu_el.get("familyid")),
            modelid=_int(cpu_el.get("modelid")),
        )
        topo.cpus.append(cpu)
        for child in cpu_el:
            if child.tag == "pci":
                _walk(child, None, cpu.numaid, topo, len(topo.cpus) - 1)
            elif child.tag == "nic":
                # A NIC without PCI path (NCCL writes these for virtual/USB devices).
                for net in child.iter("net"):
                    name = net.get("name")
                    if name:
                        topo.pci.append(
                            TopoPci(
                                busid=f"cpu{len(topo.cpus) - 1}:{name}",
                                numaid=cpu.numaid,
                                cpu_index=len(topo.cpus) - 1,
                                kind="nic",
                                net_names=[name],
                            )
                        )
    topo.problems = problems(topo)
    if not topo.cpus:
        warnings.append("nccl-topo-xml: no <cpu> element in <system>")
    return topo, warnings


def _walk(
    el: ET.Element, parent: str | None, numaid: int | None, topo: NcclTopology, cpu: int
) -> None:
    busid = (el.get("busid") or "").strip().lower()
    cls = _hex(el.get("class"))
    node = TopoPci(
        busid=busid or f"?{len(topo.pci)}",
        parent=parent,
        numaid=numaid,
        cpu_index=cpu,
        cls=cls,
        vendor=_hex(el.get("vendor")),
        device=_hex(el.get("device")),
        link_speed=el.get("link_speed"),
        link_width=_int(el.get("link_width")),
    )
    gpu_el = el.find("gpu")
    nic_el = el.find("nic")
    if gpu_el is not None:
        node.kind = "gpu"
        node.gpu_dev = _int(gpu_el.get("dev"))
        node.gpu_sm = _int(gpu_el.get("sm"))
        gdr = gpu_el.get("gdr")
        node.gpu_gdr = None if gdr is None else gdr.strip() == "1"
        for link in gpu_el.iter("nvlink"):
            node.nvlinks.append(
                TopoNvlink(
                    target=(link.get("target") or "").strip().lower() or None,
                    count=_int(link.get("count")),
                    tclass=_hex(link.get("tclass")),
                )
            )
    elif nic_el is not None or (cls or "").startswith("0x02"):
        node.kind = "nic"
        for net in el.iter("net"):
            if net.get("name"):
                node.net_names.append(net.get("name", ""))
            node.net_speed_mbps = node.net_speed_mbps or _int(net.get("speed"))
            gdr = net.get("gdr")
            if gdr is not None:
                node.net_gdr = gdr.strip() == "1"
    elif (cls or "").startswith("0x03"):
        node.kind = "gpu"
    elif (cls or "").startswith("0x0604") or el.find("pci") is not None:
        node.kind = "bridge"
    topo.pci.append(node)
    for child in el:
        if child.tag == "pci":
            _walk(child, node.busid, numaid, topo, cpu)


def problems(topo: NcclTopology) -> list[str]:
    """What NCCL would reject or misread in the file (see docs/checks.md#nccl.topo-file)."""
    out: list[str] = []
    for cpu in topo.cpus:
        where = f'<cpu numaid="{cpu.numaid if cpu.numaid is not None else ""}">'
        missing = [name for name in ("arch", "vendor") if not getattr(cpu, name)]
        if missing:
            out.append(f"{where} has no {' or '.join(missing)} attribute")
        elif (cpu.arch or "") == "x86_64" and cpu.vendor == "GenuineIntel":
            gaps = [n for n in ("familyid", "modelid") if getattr(cpu, n) is None]
            if gaps:
                out.append(f"{where} is GenuineIntel without {' and '.join(gaps)}")
        if cpu.numaid is None or cpu.numaid < 0:
            out.append(f"{where} has no valid NUMA id (a VM that hides NUMA placement)")
    odd = sorted(
        {
            p.link_speed
            for p in topo.pci
            if p.link_speed and gen_of(p.link_speed) and p.link_speed.strip() not in NCCL_PCI_SPEEDS
        }
    )
    for speed in odd:
        out.append(
            f'link_speed "{speed}" is not a value NCCL recognises (it falls back to its default)'
        )
    empty = [p.busid for p in topo.pci if p.link_speed is not None and not p.link_speed.strip()]
    if empty:
        out.append(f"{len(empty)} <pci> node(s) with an empty link_speed (e.g. {empty[0]})")
    return out


def gpus_of(topo: NcclTopology) -> list[TopoPci]:
    """The GPUs of the file in index order (``<gpu dev>`` when given, else bus order)."""
    gpus = [p for p in topo.pci if p.kind == "gpu"]
    if gpus and all(g.gpu_dev is not None for g in gpus):
        return sorted(gpus, key=lambda g: g.gpu_dev or 0)
    return sorted(gpus, key=lambda g: normalize_bus_id(g.busid) or g.busid)


def nics_of(topo: NcclTopology) -> list[TopoPci]:
    """The NICs of the file in bus order."""
    return sorted(
        (p for p in topo.pci if p.kind == "nic"),
        key=lambda n: normalize_bus_id(n.busid) or n.busid,
    )


def _ancestors(node: TopoPci, by_bus: dict[str, TopoPci]) -> list[str]:
    out: list[str] = []
    parent = node.parent
    while parent is not None and parent in by_bus and len(out) < 64:
        out.append(parent)
        parent = by_bus[parent].parent
    return out


def _pci_class(a: TopoPci, b: TopoPci, up_a: list[str], up_b: list[str]) -> str | None:
    """nvidia-smi's class of the PCIe path between two devices, from their ancestors."""
    below_b = set(up_b)
    common = next((x for x in up_a if x in below_b), None)
    if common is None:
        if a.cpu_index is None or b.cpu_index is None:
            return None
        return "PHB" if a.cpu_index == b.cpu_index else "SYS"
    bridges = up_a.index(common) + up_b.index(common) + 1
    return "PIX" if bridges <= 1 else "PXB"


_NvlinkCounts = tuple[dict[str | None, int], set[str | None], int, bool]
"""Links per target, NVSwitch targets, links to NVSwitches, and whether the device is a GPU."""


def _nvlink_counts(node: TopoPci) -> _NvlinkCounts:
    direct: dict[str | None, int] = {}
    for nv in node.nvlinks:
        direct[nv.target] = direct.get(nv.target, 0) + (nv.count or 1)
    switches = {nv.target for nv in node.nvlinks if nv.tclass == _SWITCH_TCLASS}
    to_switches = sum(nv.count or 1 for nv in node.nvlinks if nv.tclass == _SWITCH_TCLASS)
    return direct, switches, to_switches, node.kind == "gpu"


def _nvlink_between(a: _NvlinkCounts, b: _NvlinkCounts, b_node: TopoPci) -> str | None:
    """``NV#`` between two GPUs: their direct links, else the NVSwitches they share."""
    if not (a[3] and b[3]):
        return None
    direct = a[0].get(b_node.busid, 0)
    if direct:
        return f"NV{direct}"
    if a[1] & b[1]:
        return f"NV{min(a[2], b[2])}"
    return None


def _to_the_end(_state: None, line: str, index: int) -> Any:
    """Every line is the document's, up to ``</system>``."""
    return LAST if _END_RE.search(line) else True


def parse(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Parse one topology document starting at ``start``."""
    end = Walker(blank_lines=None).walk(doc, start, None, (_to_the_end,))
    text = "\n".join(doc.lines[start:end])
    frag = Fragment(FORMAT)
    topo, warnings = parse_xml_text(text, ctx.file)
    for warning in warnings:
        frag.warn(warning)
    if topo is None:
        return frag, end
    fill_fragment(frag, topo)
    return frag, end


def fill_fragment(frag: Fragment, topo: NcclTopology) -> None:
    """GPUs, NICs and topology of ``topo`` into ``frag`` (plus the evidence itself)."""
    frag.evidence.nccl_topologies.append(topo)
    gpus = gpus_of(topo)
    nics = nics_of(topo)
    affinity = {cpu.numaid: mask_to_cpulist(cpu.affinity) for cpu in topo.cpus}
    budget = [MAX_NVLINKS_TOTAL]
    for index, node in enumerate(gpus):
        part = frag.gpu(index)
        bus = normalize_bus_id(node.busid)
        if bus:
            part.fields["bus_id"] = bus
        if node.numaid is not None and node.numaid >= 0:
            part.fields["numa_node"] = node.numaid
            if affinity.get(node.numaid):
                part.fields["cpu_affinity"] = affinity[node.numaid]
        _nvlinks(frag, part, node, budget)
    if gpus:
        frag.gpu_count = len(gpus)
    for i, node in enumerate(nics):
        nic: dict[str, Any] = {
            "label": f"NIC{i}",
            "name": node.net_names[0] if node.net_names else None,
        }
        frag.nics.append(nic)
    if len(gpus) + len(nics) > _MAX_DEVICES:
        frag.warn(
            f"nccl-topo-xml: {len(gpus)} GPUs and {len(nics)} NICs; more than {_MAX_DEVICES} "
            "devices, no topology matrix built"
        )
    elif gpus:
        _matrix(frag, topo, gpus, nics)
        for cpu in topo.cpus:
            if cpu.numaid is not None and cpu.numaid >= 0:
                frag.numa_cpus[cpu.numaid] = affinity.get(cpu.numaid)
    text = f"NCCL topology: {len(topo.cpus)} CPU node(s), {len(gpus)} GPU(s), {len(nics)} NIC(s)"
    unknown = [p for p in topo.pci if p.kind == "unknown"]
    if unknown:
        text += f", {len(unknown)} unidentified PCI device(s)"
    frag.read.append(text)
    if gpus and any(g.numaid is None for g in gpus):
        frag.warn(
            "nccl-topo-xml: GPUs "
            + label_span([f"GPU{i}" for i, g in enumerate(gpus) if g.numaid is None])
            + " have no NUMA id"
        )


def _nvlinks(frag: Fragment, part: GpuPart, node: TopoPci, budget: list[int]) -> None:
    """The GPU's NVLinks, one per counted link: at most :data:`MAX_NVLINKS_PER_GPU`, and
    :data:`MAX_NVLINKS_TOTAL` in the whole file (``budget[0]`` is what is left of it)."""
    link = 0
    for nv in node.nvlinks:
        if link >= MAX_NVLINKS_PER_GPU:
            break
        wanted = max(1, nv.count or 1)
        if link + wanted > MAX_NVLINKS_PER_GPU:
            frag.warn(
                f"nccl-topo-xml: GPU {node.busid} lists {link + wanted} or more NVLinks; "
                f"more than the {MAX_NVLINKS_PER_GPU} any GPU has, the rest are ignored"
            )
            wanted = max(0, MAX_NVLINKS_PER_GPU - link)
        if wanted > budget[0]:
            frag.warn(
                f"nccl-topo-xml: more than {MAX_NVLINKS_TOTAL} NVLinks in the file; the GPUs "
                "after the first ones keep their NVLinks unknown"
            )
            part.unknown("nvlinks", f"past the {MAX_NVLINKS_TOTAL} NVLinks read from the file")
            wanted = budget[0]
        budget[0] -= wanted
        remote = normalize_bus_id(nv.target) if nv.target else None
        values: dict[str, Any] = {"state": "up"}
        if remote:
            values["remote_bus_id"] = remote
        if nv.tclass == _SWITCH_TCLASS:
            values["remote_type"] = "switch"
        for _ in range(wanted):
            part.nvlinks[link] = dict(values)
            link += 1


def _matrix(frag: Fragment, topo: NcclTopology, gpus: list[TopoPci], nics: list[TopoPci]) -> None:
    """The topology matrix of the file's GPUs and NICs in nvidia-smi's vocabulary."""
    devices = gpus + nics
    labels = [f"GPU{i}" for i in range(len(gpus))] + [f"NIC{i}" for i in range(len(nics))]
    by_bus = {p.busid: p for p in topo.pci}
    up = [_ancestors(device, by_bus) for device in devices]
    nvlink = [_nvlink_counts(device) for device in devices]
    links: list[list[str | None]] = []
    for i, a in enumerate(devices):
        row: list[str | None] = []
        for j, b in enumerate(devices):
            if i == j:
                row.append("X")
                continue
            row.append(_nvlink_between(nvlink[i], nvlink[j], b) or _pci_class(a, b, up[i], up[j]))
        links.append(row)
    frag.topology = Topology(labels=labels, links=links, source="import")

"""``pcidoc nccl-topo``: write an NCCL topology file (``NCCL_TOPO_FILE``) from a capture, and
read the file a live machine's ``NCCL_TOPO_FILE`` names.

The file is built from what the capture knows, never from guesses:

* one ``<cpu>`` per NUMA node of the GPUs/NICs, with ``affinity`` (the node's CPUs as NCCL's
  mask), ``arch``, ``vendor`` and, where known, ``familyid``/``modelid``;
* the PCIe structure from the topology matrix: devices that are ``PIX`` to each other share a
  placeholder switch (``ffff:ff:NN.0``, as the cloud vendors' files do), ``PXB`` groups get a
  second level, the rest hang off their CPU; GPU/NIC links carry their generation and width
  when known;
* ``<gpu>`` with its index, compute capability (from :mod:`pcidoc.model.linkmodel`) and
  ``<nvlink>`` entries (per peer GPU, or to an NVSwitch when the GPUs reach each other through
  one);
* NICs with a bus id as ``<nic><net name=... gdr=.../></nic>`` (``gdr`` when a GPUDirect
  peer-memory module is loaded; the link speed is left to NCCL, which reads it from the NIC).

The result imports back (``pcidoc import topo.xml``) into the same GPUs, NVLinks and link
classes (``NODE`` is written as the same-CPU ``PHB``: NCCL's files have no separate level).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from xml.sax.saxutils import quoteattr

from pcidoc.errors import PcidocError
from pcidoc.model.capture import Capture
from pcidoc.model.cpulist import parse_cpulist
from pcidoc.model.facts import Gpu, Host, Nic
from pcidoc.model.links import is_nvlink, nvlink_count

_VENDORS = {"intel": "GenuineIntel", "amd": "AuthenticAMD"}


def compute_capability(name: str | None) -> int | None:
    """NCCL's ``sm`` value (compute capability x 10) of a GPU model, from the link model's
    cited table; None for a model it does not know."""
    from pcidoc.model.linkmodel import lookup_gpu

    model = lookup_gpu(name)
    if model is None or model.compute_capability is None:
        return None
    return round(model.compute_capability * 10)


def cpu_mask(cpus: str | None) -> str | None:
    """A cpulist as NCCL's affinity mask (32-bit hex words, most significant first)."""
    parsed = parse_cpulist(cpus)
    if not parsed:
        return None
    value = 0
    for cpu in parsed:
        value |= 1 << cpu
    words = []
    while value or not words:
        words.append(f"{value & 0xFFFFFFFF:08x}")
        value >>= 32
    return ",".join(reversed(words))


def local_cpu_ids(cpuinfo: str = "/proc/cpuinfo") -> dict[str, str]:
    """``vendor``, ``familyid``, ``modelid`` and ``arch`` of this machine's CPU (empty where
    unreadable)."""
    out: dict[str, str] = {}
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")[:200000]
    except OSError:
        return out
    for key, name in (("vendor_id", "vendor"), ("cpu family", "familyid"), ("model", "modelid")):
        match = re.search(rf"^{key}\s*:\s*(\S+)", text, re.MULTILINE)
        if match:
            out[name] = match.group(1)
    machine = os.uname().machine
    out["arch"] = {"aarch64": "arm64", "ppc64le": "ppc64"}.get(machine, machine)
    return out


def _gen_speed(gen: int | None) -> str | None:
    return {1: "2.5 GT/s", 2: "5 GT/s", 3: "8 GT/s", 4: "16 GT/s", 5: "32 GT/s", 6: "64 GT/s"}.get(
        gen or 0
    )


def write_topology(
    capture: Capture,
    arch: str | None = None,
    vendor: str | None = None,
    familyid: str | None = None,
    modelid: str | None = None,
) -> tuple[str, list[str]]:
    """The NCCL topology XML of ``capture`` and notes about what could not be written.

    Raises:
        PcidocError: the capture lacks what every file needs (GPU bus ids, a NUMA node per
            GPU, the CPU's arch and vendor).
    """
    notes: list[str] = []
    gpus = sorted(capture.gpus, key=lambda g: g.index)
    if not gpus:
        raise PcidocError("nccl-topo: the capture has no GPU")
    missing = [g.label for g in gpus if not g.bus_id]
    if missing:
        raise PcidocError(
            f"nccl-topo: {', '.join(missing)} without a bus id in this capture; NCCL matches "
            "devices by bus id (capture the machine itself, or import nvidia-smi -q)"
        )
    cpu = _cpu_attrs(capture.host, arch, vendor, familyid, modelid, notes)
    numa = _gpu_numa(gpus, capture.host)
    nics = _placed_nics(capture, gpus, numa, notes)
    writer = _TopoWriter(capture, gpus, nics, numa)
    lines = ['<system version="1">']
    for node in sorted(set(numa.values())):
        lines.extend(writer.cpu(node, cpu))
    lines.append("</system>")
    return "\n".join(lines) + "\n", notes


def _cpu_attrs(
    host: Host,
    arch: str | None,
    vendor: str | None,
    familyid: str | None,
    modelid: str | None,
    notes: list[str],
) -> dict[str, str]:
    """The attributes every ``<cpu>`` node carries besides its NUMA id and affinity."""
    arch = arch or ("x86_64" if host.cpu_vendor in _VENDORS else None)
    vendor = vendor or _VENDORS.get(host.cpu_vendor or "")
    if not arch or not vendor:
        raise PcidocError(
            "nccl-topo: the CPU's architecture/vendor is not in this capture; give them with "
            "--arch x86_64 --cpu-vendor GenuineIntel|AuthenticAMD (NCCL needs both on every "
            "<cpu> node)"
        )
    if vendor == "GenuineIntel" and (familyid is None or modelid is None):
        notes.append(
            "familyid/modelid unknown: NCCL needs them for Intel CPUs; pass --cpu-family and "
            "--cpu-model (from /proc/cpuinfo) or run nccl-topo on the machine itself"
        )
    attrs = {"arch": arch, "vendor": vendor}
    if familyid is not None and modelid is not None:
        attrs["familyid"] = str(familyid)
        attrs["modelid"] = str(modelid)
    return attrs


def _gpu_numa(gpus: list[Gpu], host: Host) -> dict[str, int]:
    """Label -> NUMA node of every GPU (a one-node host's node where the GPU has none)."""
    single = len(host.numa_nodes) == 1 and host.numa_nodes[0].id >= 0
    numa: dict[str, int] = {}
    for gpu in gpus:
        node = gpu.numa_node
        if node is None and single:
            node = host.numa_nodes[0].id
        if node is None or node < 0:
            raise PcidocError(
                f"nccl-topo: {gpu.label}'s NUMA node is not in this capture; NCCL places every "
                "device under its CPU (capture the machine itself)"
            )
        numa[gpu.label] = node
    return numa


def _placed_nics(
    capture: Capture, gpus: list[Gpu], numa: dict[str, int], notes: list[str]
) -> list[Nic]:
    """The NICs that can be written (bus id and NUMA node known); their nodes go to ``numa``."""
    nics = []
    for nic in capture.nics:
        if not nic.bus_id:
            notes.append(f"{nic.label} ({nic.name or 'unnamed'}) has no bus id; not written")
            continue
        node = nic.numa_node
        if node is None:
            for gpu in gpus:
                if capture.topology.link(gpu.label, nic.label) in ("PIX", "PXB", "PHB", "NODE"):
                    node = numa[gpu.label]
                    break
        if node is None:
            notes.append(f"{nic.label}: NUMA node unknown; not written")
            continue
        numa[nic.label] = node
        nics.append(nic)
    return nics


class _TopoWriter:
    """Writes one ``<cpu>`` node at a time, numbering the synthetic switches across them."""

    def __init__(
        self, capture: Capture, gpus: list[Gpu], nics: list[Nic], numa: dict[str, int]
    ) -> None:
        self.capture, self.nics, self.numa = capture, nics, numa
        self.devices = [g.label for g in gpus] + [n.label for n in nics]
        self.cpu_of = {n.id: n.cpus for n in capture.host.numa_nodes}
        self.gpu_by_label = {g.label: g for g in gpus}
        self.nic_by_label = {n.label: n for n in nics}
        self.all_nv = _nvswitch_like(capture)
        gpudirect = capture.host.gpudirect
        self.gdr = bool(gpudirect.nvidia_peermem or gpudirect.nv_peer_mem)
        self.switch = 0

    def rank(self, a: str, b: str) -> int:
        cls = self.capture.topology.link(a, b)
        return {"PIX": 1, "PXB": 2}.get(cls or "", 9)

    def cpu(self, node: int, cpu: dict[str, str]) -> list[str]:
        members = [d for d in self.devices if self.numa[d] == node]
        attrs = {"numaid": str(node)}
        mask = cpu_mask(self.cpu_of.get(node))
        if mask:
            attrs["affinity"] = mask
        attrs["arch"] = cpu["arch"]
        attrs["vendor"] = cpu["vendor"]
        if "familyid" in cpu:
            attrs["familyid"] = cpu["familyid"]
            attrs["modelid"] = cpu["modelid"]
        lines = ["  <cpu " + _attrs(attrs) + ">"]
        for outer in _groups(members, lambda a, b: self.rank(a, b) <= 2):
            lines.extend(self._outer(outer))
        lines.append("  </cpu>")
        return lines

    def _outer(self, outer: list[str]) -> list[str]:
        """Devices behind one switch (PXB), their PIX groups each behind its own."""
        lines: list[str] = []
        inner_groups = _groups(outer, lambda a, b: self.rank(a, b) <= 1)
        indent = "    "
        if len(outer) > 1:
            self.switch += 1
            lines.append(f"{indent}<pci {_switch_attrs(self.switch)}>")
            indent += "  "
        for inner in inner_groups:
            wrap = len(outer) > 1 and (len(inner) > 1 or len(inner_groups) > 1)
            pad = indent
            if wrap:
                self.switch += 1
                lines.append(f"{pad}<pci {_switch_attrs(self.switch)}>")
                pad += "  "
            for label in inner:
                lines.extend(self._device(label, pad))
            if wrap:
                lines.append(f"{indent}</pci>")
        if len(outer) > 1:
            lines.append("    </pci>")
        return lines

    def _device(self, label: str, pad: str) -> list[str]:
        if label in self.gpu_by_label:
            return _gpu_xml(self.capture, self.gpu_by_label[label], pad, self.all_nv)
        nic = self.nic_by_label[label]
        return _nic_xml(nic, self.nics.index(nic), pad, self.gdr)


def _attrs(values: dict[str, str]) -> str:
    return " ".join(f"{k}={quoteattr(v)}" for k, v in values.items())


def _switch_attrs(number: int) -> str:
    return _attrs(
        {
            "busid": f"ffff:ff:{number:02x}.0",
            "class": "0x060400",
            "vendor": "0xffff",
            "device": "0xffff",
            "subsystem_vendor": "0xffff",
            "subsystem_device": "0xffff",
        }
    )


def _groups(members: list[str], close: object) -> list[list[str]]:
    """Connected components of ``members`` under the ``close`` relation, in order."""
    groups: list[list[str]] = []
    for label in members:
        joined = [g for g in groups if any(close(label, other) for other in g)]  # type: ignore[operator]
        merged = [label]
        for group in joined:
            merged = group + merged
            groups.remove(group)
        groups.append(sorted(merged, key=members.index))
    return sorted(groups, key=lambda g: members.index(g[0]))


def _nvswitch_like(capture: Capture) -> bool:
    """True when the GPUs reach each other through NVSwitches (every link to a switch, or
    three or more GPUs all joined pairwise with the same NV# and no per-link peer)."""
    gpus = capture.gpus
    if any(link.remote_type == "switch" for g in gpus for link in g.nvlinks):
        return True
    if len(gpus) < 3 or any(link.remote_bus_id for g in gpus for link in g.nvlinks):
        return False
    classes = {
        capture.topology.link(a.label, b.label) for a in gpus for b in gpus if a.index < b.index
    }
    return len(classes) == 1 and is_nvlink(next(iter(classes)))


def _gpu_xml(capture: Capture, gpu, pad: str, nvswitch: bool) -> list[str]:  # type: ignore[no-untyped-def]
    attrs = {"busid": gpu.bus_id, "class": "0x030200", "vendor": "0x10de"}
    gen = gpu.pcie.max_gen or gpu.pcie.current_gen
    width = gpu.pcie.max_width or gpu.pcie.current_width
    if _gen_speed(gen):
        attrs["link_speed"] = _gen_speed(gen) or ""
    if width:
        attrs["link_width"] = str(width)
    out = [f"{pad}<pci {_attrs(attrs)}>"]
    gpu_attrs = {"dev": str(gpu.index)}
    sm = compute_capability(gpu.name)
    if sm:
        gpu_attrs["sm"] = str(sm)
    gpu_attrs["rank"] = str(gpu.index)
    if capture.host.gpudirect.nvidia_peermem or capture.host.gpudirect.nv_peer_mem:
        gpu_attrs["gdr"] = "1"
    out.append(f"{pad}  <gpu {_attrs(gpu_attrs)}>")
    for target, count, tclass in _nvlinks(capture, gpu, nvswitch):
        out.append(
            f"{pad}    <nvlink "
            + _attrs({"target": target, "count": str(count), "tclass": tclass})
            + "/>"
        )
    out.append(f"{pad}  </gpu>")
    out.append(f"{pad}</pci>")
    return out


def _nvlinks(capture: Capture, gpu, nvswitch: bool) -> list[tuple[str, int, str]]:  # type: ignore[no-untyped-def]
    up = [link for link in gpu.nvlinks if link.state != "down"]
    by_bus = {g.bus_id: g for g in capture.gpus if g.bus_id}
    if nvswitch:
        count = len(up) if up else 0
        if not count:
            peers = [
                nvlink_count(capture.topology.link(gpu.label, o.label))
                for o in capture.gpus
                if o.index != gpu.index
            ]
            count = max(peers, default=0)
        return [("ffff:ff:ff.0", count, "0x068000")] if count else []
    counts: dict[str, int] = {}
    for link in up:
        if link.remote_bus_id and link.remote_bus_id in by_bus:
            counts[link.remote_bus_id] = counts.get(link.remote_bus_id, 0) + 1
    if not counts:
        for other in capture.gpus:
            cls = capture.topology.link(gpu.label, other.label)
            if other.index != gpu.index and is_nvlink(cls) and other.bus_id:
                counts[other.bus_id] = nvlink_count(cls)
    return [(bus, n, "0x030200") for bus, n in sorted(counts.items())]


def _nic_xml(nic, dev: int, pad: str, gdr: bool) -> list[str]:  # type: ignore[no-untyped-def]
    cls = "0x020700" if nic.kind == "infiniband" else "0x020000"
    out = [f"{pad}<pci {_attrs({'busid': nic.bus_id, 'class': cls})}>"]
    net = {"name": nic.name or nic.label, "dev": str(dev), "port": "1"}
    if gdr:
        net["gdr"] = "1"
    out.append(f"{pad}  <nic>")
    out.append(f"{pad}    <net {_attrs(net)}/>")
    out.append(f"{pad}  </nic>")
    out.append(f"{pad}</pci>")
    return out


MAX_TOPO_FILE_BYTES = 4 * 2**20
"""The largest ``NCCL_TOPO_FILE`` read (a real one is a few kilobytes per GPU)."""


def attach_topo_file(capture: Capture, environ: dict[str, str] | None = None) -> None:
    """On a live machine: read the file ``NCCL_TOPO_FILE`` names into ``capture.evidence``
    (so ``nccl.topo-file`` can check it against the GPUs seen). Never raises."""
    from pcidoc.collect.importers.nccl_topo_xml import parse_xml_text
    from pcidoc.model.evidence import ImportedEvidence

    env = os.environ if environ is None else environ
    path = env.get("NCCL_TOPO_FILE")
    if not path:
        return
    evidence = capture.evidence or ImportedEvidence()
    evidence.topo_file_env = path
    from pcidoc.errors import PcidocError
    from pcidoc.fileio import read_regular_file

    try:  # a FIFO, a device or a huge file must not hang or flood collection
        text = read_regular_file(path, limit=MAX_TOPO_FILE_BYTES).decode("utf-8", "replace")
    except PcidocError as exc:
        evidence.topo_file_error = exc.message
        capture.evidence = evidence
        return
    topo, warnings = parse_xml_text(text, Path(path).name)
    if topo is None:
        evidence.topo_file_error = "; ".join(warnings) or "not an NCCL topology file"
    else:
        evidence.nccl_topologies.append(topo)
    capture.evidence = evidence

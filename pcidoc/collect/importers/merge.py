"""Fold the fragments of every imported file into one capture of one machine.

Rules (see docs/import.md):

* GPUs merge by index. A field already known keeps its first value; a different value from a
  later source is a warning (``GPU0 name: 'A' (topo.txt) vs 'B' (p2p.txt); kept the first``).
  Parts whose index is an assumption (``nvidia-smi -q`` without ``-i``) are matched to a known
  GPU by bus id or UUID first.
* Only the GPUs some output mentions exist in the capture. When no output lists every GPU, or
  ``nvidia-smi -q`` says more GPUs are attached than were described, ``capture.unavailable
  ["gpus"]`` says so.
* The first topology matrix, P2P status matrix (per capability) and peer-access matrix win;
  later ones that disagree are reported.
* Measurements are all kept, each with ``source = "import:<file>"``.
"""

from __future__ import annotations

import math
from typing import Any

from pcidoc._record import field, record
from pcidoc.collect.import_formats import SHORT_NAMES
from pcidoc.collect.importers.fragment import Fragment, GpuPart
from pcidoc.collect.importers.text import label_span
from pcidoc.model.capture import Capture
from pcidoc.model.units import plurals


@record
class FileResult:
    """What was found in one input file."""

    path: str
    name: str
    fragments: list[Fragment] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@record
class _Acc:
    """A GPU being assembled, with where each field came from."""

    part: GpuPart
    origin: dict[str, str] = field(default_factory=dict)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(float(a), float(b), rel_tol=1e-6)
        except (TypeError, ValueError):
            return False
    return bool(a == b)


def _unavailable(obj: dict[str, Any], key: str, reason: str) -> None:
    obj.setdefault("unavailable", {}).setdefault(key, reason)


class _Merger:
    """Assembles the capture as plain data, validated once at the end (one schema build)."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.gpus: dict[int, _Acc] = {}
        self.gpu_data: list[dict[str, Any]] = []
        self.host: dict[str, Any] = {"numa_nodes": [], "iommu": {}, "virtualization": {}}
        self.driver: dict[str, Any] = {"nvml_available": False}
        self.topology: dict[str, Any] = {"labels": [], "links": []}
        self.nics: list[dict[str, Any]] = []
        self.p2p: dict[str, Any] = {"gpus": [], "matrices": {}, "can_access_peer": None}
        self.measurements: dict[str, list[Any]] = {
            "transfers": [],
            "p2p": [],
            "collectives": [],
            "workloads": [],
        }
        self.origin: dict[str, Any] = {
            "kind": "import",
            "tool_versions": {},
            "sources": [],
            "warnings": [],
        }
        self.unavailable: dict[str, str] = {}

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    # ------------------------------------------------------------------------------ GPUs

    def _fold(
        self,
        acc: _Acc,
        values: dict[str, Any],
        target: dict[str, Any],
        prefix: str,
        origin: str,
    ) -> None:
        gpu = acc.part.index
        for key, value in values.items():
            if value is None:
                continue
            where = prefix + key
            if key not in target or target[key] is None:
                target[key] = value
                acc.origin[where] = origin
            elif not _same(target[key], value):
                self.warn(
                    f"GPU{gpu} {where}: {target[key]!r} ({acc.origin.get(where, '?')}) vs "
                    f"{value!r} ({origin}); kept the first"
                )

    def add_gpu(self, part: GpuPart, origin: str) -> None:
        index = part.index
        if not part.index_certain:
            matched = self._match(part)
            if matched is not None and matched != index:
                self.warn(
                    f"{origin}: the GPU with bus id {part.fields.get('bus_id')} is GPU{matched} "
                    f"according to another output (not GPU{index} as its position suggested)"
                )
                index = matched
        acc = self.gpus.get(index)
        if acc is None:
            acc = self.gpus[index] = _Acc(GpuPart(index=index))
        self._fold(acc, part.fields, acc.part.fields, "", origin)
        self._fold(acc, part.pcie, acc.part.pcie, "pcie.", origin)
        self._fold(acc, part.mig, acc.part.mig, "mig.", origin)
        self._fold(acc, part.fabric, acc.part.fabric, "fabric.", origin)
        for link, values in part.nvlinks.items():
            entry = acc.part.nvlinks.setdefault(link, {})
            plain = {k: v for k, v in values.items() if k != "errors"}
            self._fold(acc, plain, entry, f"nvlink{link}.", origin)
            if "errors" in values:
                errors = entry.setdefault("errors", {})
                for key, count in values["errors"].items():
                    errors.setdefault(key, count)
        acc.part.remotes.extend(part.remotes)
        for sub, reasons in part.unavailable.items():
            target = acc.part.unavailable.setdefault(sub, {})
            for key, reason in reasons.items():
                target.setdefault(key, reason)

    def _match(self, part: GpuPart) -> int | None:
        for key in ("bus_id", "uuid"):
            value = part.fields.get(key)
            if not value:
                continue
            for index, acc in self.gpus.items():
                known = acc.part.fields.get(key)
                if known and _same(known, value):
                    return index
        return None

    def _resolve_remotes(self, acc: _Acc) -> None:
        """Attach ``nvlink -R`` entries to links, renumbering when -R counts active links."""
        part = acc.part
        if not part.remotes:
            return
        remotes = sorted(set(part.remotes), key=lambda r: r[0])
        active = sorted(k for k, v in part.nvlinks.items() if v.get("state") == "up")
        inactive = {k for k, v in part.nvlinks.items() if v.get("state") == "down"}
        printed = [link for link, _, _ in remotes]
        mapping = {link: link for link in printed}
        if inactive & set(printed):
            if len(printed) == len(active):
                mapping = dict(zip(printed, active, strict=True))
                self.warn(
                    f"GPU{part.index}: nvlink -R numbers only the active links; its "
                    f"{len(printed)} entries were mapped onto the {len(active)} active links "
                    "of nvlink -s"
                )
            else:
                self.warn(
                    f"GPU{part.index}: nvlink -R shows remote ends on links nvlink -s calls "
                    "inactive; the two outputs do not agree"
                )
        for link, bus, remote_link in remotes:
            entry = part.nvlinks.setdefault(mapping[link], {})
            if bus:
                entry.setdefault("remote_bus_id", bus)
            if remote_link is not None:
                entry.setdefault("remote_link", remote_link)
            if "state" not in entry and mapping[link] not in inactive:
                entry["state"] = "up"

    def _build_gpu(self, acc: _Acc, bus_to_index: dict[str, int]) -> dict[str, Any]:
        part = acc.part
        self._resolve_remotes(acc)
        nvlinks = []
        for link in sorted(part.nvlinks):
            values: dict[str, Any] = {"link": link, **part.nvlinks[link]}
            remote = values.get("remote_bus_id")
            if remote and remote in bus_to_index and bus_to_index[remote] != part.index:
                values.setdefault("remote_type", "gpu")
            nvlinks.append(values)
        gpu: dict[str, Any] = {
            "index": part.index,
            **part.fields,
            "pcie": dict(part.pcie),
            "mig": dict(part.mig),
            "fabric": dict(part.fabric),
            "nvlinks": nvlinks,
        }
        for sub, reasons in part.unavailable.items():
            target = gpu if sub == "" else gpu[sub]
            for key, reason in reasons.items():
                if (key == "nvlinks" and sub == "") or target.get(key) is None:
                    _unavailable(target, key, reason)
        return gpu

    # ----------------------------------------------------------------------------- build

    def run(self, files: list[FileResult]) -> Capture:
        fragments = [(f, frag) for f in files for frag in f.fragments]
        for certain in (True, False):
            for file, frag in fragments:
                origin = f"{file.name} ({SHORT_NAMES.get(frag.fmt, frag.fmt)})"
                for part in frag.gpus:
                    if part.index_certain == certain:
                        self.add_gpu(part, origin)
        for file, frag in fragments:
            origin = f"{file.name} ({SHORT_NAMES.get(frag.fmt, frag.fmt)})"
            self._facts(frag, origin)
            self._measurements(frag)
        self._gpu_list()
        self._nic_legends(fragments)
        self._p2p(fragments)
        self._placement(fragments)
        self._driver(fragments)
        self._host()
        self._origin(files)
        evidence = _evidence(fragments)
        return Capture.model_validate(
            {
                "origin": self.origin,
                "host": self.host,
                "driver": self.driver,
                "gpus": self.gpu_data,
                "nics": self.nics,
                "topology": self.topology,
                "p2p": self.p2p,
                "measurements": self.measurements,
                "unavailable": self.unavailable,
                "evidence": evidence,
            }
        )

    def _facts(self, frag: Fragment, origin: str) -> None:
        topology = frag.topology
        if topology is None:
            return
        if not self.topology["labels"]:
            self.topology = {
                "labels": list(topology.labels),
                "links": [list(row) for row in topology.links],
                "source": topology.source,
            }
            self.nics = [{"label": n["label"], "name": n.get("name")} for n in frag.nics]
            for node, cpus in frag.numa_cpus.items():
                self.host["numa_nodes"].append({"id": node, "cpus": cpus})
        elif topology.labels != self.topology["labels"]:
            self.warn(
                f"{origin}: a second topology matrix with other devices "
                f"({label_span(topology.labels)}); kept the first"
            )
        elif topology.links != self.topology["links"]:
            self.warn(f"{origin}: a second topology matrix that differs; kept the first")

    def _measurements(self, frag: Fragment) -> None:
        self.measurements["transfers"].extend(frag.transfers)
        self.measurements["p2p"].extend(frag.p2p)
        self.measurements["collectives"].extend(frag.collectives)
        self.measurements["workloads"].extend(frag.workloads)

    def _gpu_list(self) -> None:
        bus_to_index = {
            acc.part.fields["bus_id"]: index
            for index, acc in self.gpus.items()
            if acc.part.fields.get("bus_id")
        }
        self.gpu_data = [self._build_gpu(self.gpus[i], bus_to_index) for i in sorted(self.gpus)]
        seen: dict[tuple[str, str], int] = {}
        for gpu in self.gpu_data:
            for key in ("bus_id", "uuid"):
                value = gpu.get(key)
                if not isinstance(value, str):
                    continue
                other = seen.setdefault((key, value.lower()), gpu["index"])
                if other != gpu["index"]:
                    self.warn(
                        f"GPU{other} and GPU{gpu['index']} have the same {key} {value}: the files "
                        "may number GPUs differently (CUDA vs nvidia-smi order)"
                    )

    def _nic_legends(self, fragments: list[tuple[FileResult, Fragment]]) -> None:
        names: dict[str, str] = {}
        for _, frag in fragments:
            for label, name in frag.nic_names.items():
                names.setdefault(label, name)
        if not names:
            return
        for nic in self.nics:
            name = names.get(nic["label"])
            if name is None:
                continue
            if nic.get("name") is None:
                nic["name"] = name
            elif nic["name"] != name:
                self.warn(
                    f"{nic['label']}: named {nic['name']} in the matrix but {name} in the legend"
                )
        unnamed = [nic["label"] for nic in self.nics if nic.get("name") is None]
        if unnamed:
            for nic in self.nics:
                if nic.get("name") is None:
                    _unavailable(nic, "name", "not in the pasted NIC legend")
            self.warn(f"NIC legend: no name for {label_span(unnamed)} (legend cut short?)")

    def _p2p(self, fragments: list[tuple[FileResult, Fragment]]) -> None:
        p2p = self.p2p
        for file, frag in fragments:
            if not frag.p2p_matrices:
                continue
            if not p2p["gpus"]:
                p2p["gpus"] = list(frag.p2p_gpus)
            if frag.p2p_gpus != p2p["gpus"]:
                self.warn(
                    f"{file.name}: P2P status matrix of other GPUs "
                    f"({label_span([f'GPU{g}' for g in frag.p2p_gpus])}); kept the first"
                )
                continue
            for cap, matrix in frag.p2p_matrices.items():
                if cap not in p2p["matrices"]:
                    p2p["matrices"][cap] = matrix
                elif p2p["matrices"][cap] != matrix:
                    self.warn(
                        f"{file.name}: a second '{cap}' P2P status matrix differs; kept the first"
                    )
        for _, frag in fragments:
            if frag.can_access is None or p2p["can_access_peer"] is not None:
                continue
            gpus, matrix = frag.can_access
            if not p2p["gpus"]:
                p2p["gpus"] = list(gpus)
            order = p2p["gpus"]
            size = len(order)
            where: dict[int, int] = {}
            for place, gpu in enumerate(order):
                where.setdefault(gpu, place)  # a repeated GPU: its first place, as list.index
            aligned: list[list[bool | None]] = [[None] * size for _ in range(size)]
            for i, a in enumerate(gpus):
                for j, b in enumerate(gpus):
                    if a in where and b in where:
                        aligned[where[a]][where[b]] = matrix[i][j]
            p2p["can_access_peer"] = aligned

    def _placement(self, fragments: list[tuple[FileResult, Fragment]]) -> None:
        numa = {gpu["index"]: gpu.get("numa_node") for gpu in self.gpu_data}
        for _, frag in fragments:
            for transfer, node in frag.bindings:
                gpu_node = numa.get(transfer.gpu)
                transfer.host_numa_node = node  # kept: runs on different nodes compare
                if gpu_node is None:
                    self.warn(
                        f"bandwidthTest on GPU{transfer.gpu} ran under '{transfer.context}' but "
                        "the GPU's NUMA node is not in the imported text; placement left unset"
                    )
                    continue
                transfer.placement = "local" if node == gpu_node else "remote"

    def _driver(self, fragments: list[tuple[FileResult, Fragment]]) -> None:
        driver = self.driver
        origins: dict[str, str] = {}
        for file, frag in fragments:
            for key, value in frag.driver.items():
                current = driver.get(key)
                if current is None:
                    driver[key] = value
                    origins[key] = file.name
                elif current != value:
                    self.warn(
                        f"{key.replace('_', ' ')}: {current} ({origins.get(key)}) vs {value} "
                        f"({file.name}); kept the first"
                    )
            for key, value in frag.tool_versions.items():
                self.origin["tool_versions"].setdefault(key, value)
        if any(frag.from_nvidia_smi for _, frag in fragments):
            driver["nvml_available"] = True
        else:
            _unavailable(driver, "nvml_available", "no nvidia-smi output in the imported text")
        for key in ("driver_version", "cuda_driver_version"):
            if driver.get(key) is None:
                _unavailable(driver, key, "not in the imported text")

    def _host(self) -> None:
        host = self.host
        _unavailable(host, "hostname", "not taken from pasted prompts (often redacted)")
        for key in ("kernel", "cmdline", "cpu_model", "logical_cpus", "sockets"):
            _unavailable(host, key, "not in the imported text")
        _unavailable(host["iommu"], "enabled", "not in the imported text")
        _unavailable(host["virtualization"], "hypervisor", "not in the imported text")
        if not host["numa_nodes"]:
            _unavailable(host, "numa_nodes", "not in the imported text")

    def _origin(self, files: list[FileResult]) -> None:
        enumerating = [
            (file.name, frag) for file in files for frag in file.fragments if frag.gpu_count
        ]
        counts = {frag.gpu_count for _, frag in enumerating}
        if len(counts) > 1:
            described = ", ".join(
                f"{name} ({SHORT_NAMES.get(frag.fmt, frag.fmt)}): {frag.gpu_count}"
                for name, frag in enumerating
            )
            self.warn(
                f"GPU count differs between outputs ({described}); all GPUs seen are kept, check "
                "that the files come from the same machine and GPU visibility"
            )
        attached = max(
            (frag.attached_gpus for file in files for frag in file.fragments if frag.attached_gpus),
            default=None,
        )
        known = [f"GPU{gpu['index']}" for gpu in self.gpu_data]
        if attached is not None and len(known) < attached:
            self.unavailable["gpus"] = (
                f"nvidia-smi -q reports {attached} attached GPUs; the imported text describes "
                f"only {label_span(known) or 'none'}"
            )
        elif not enumerating and known:
            self.unavailable["gpus"] = (
                "no imported output lists every GPU of the machine; known from the text: "
                f"{label_span(known)}"
            )
        elif not known:
            self.unavailable["gpus"] = "no GPU in the imported text"
        if not self.topology["labels"]:
            self.unavailable["topology"] = "no nvidia-smi topo -m output imported"
        if not self.p2p["matrices"] and self.p2p["can_access_peer"] is None:
            self.unavailable["p2p"] = "no nvidia-smi topo -p2p or P2P test output imported"
        # Counted words read as English ("1 host", "2 hosts") wherever these lines are shown.
        for file in files:
            formats = list(dict.fromkeys(frag.fmt for frag in file.fragments))
            read = [plurals(line) for frag in file.fragments for line in frag.read]
            warnings = [plurals(w) for w in file.warnings]
            for frag in file.fragments:
                warnings.extend(w for w in map(plurals, frag.warnings) if w not in warnings)
            self.origin["sources"].append(
                {"path": file.path, "formats": formats, "read": read, "warnings": warnings}
            )
            self.origin["warnings"].extend(f"{file.name}: {w}" for w in warnings)
        self.origin["warnings"].extend(map(plurals, self.warnings))


def _evidence(fragments: list[tuple[FileResult, Fragment]]) -> Any:
    """The evidence of every fragment, concatenated (None when there is none)."""
    from pcidoc.model.evidence import ImportedEvidence

    total = ImportedEvidence()
    for _, frag in fragments:
        part = frag.evidence
        for name in type(total).model_fields:
            value = getattr(part, name)
            if isinstance(value, list):
                getattr(total, name).extend(value)
            elif isinstance(value, int) and not isinstance(value, bool):
                setattr(total, name, getattr(total, name) + value)
    return None if total.empty() else total


def merge(files: list[FileResult]) -> Capture:
    """Build one capture from the parsed files (see the module docstring for the rules)."""
    return _Merger().run(files)

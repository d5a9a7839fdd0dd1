"""The outputs ``pcidoc import`` reads: ONE table, from which everything else is derived.

Each :class:`Format` row says what an output is (id, title, the short name merge warnings use),
how it is read (its readers: kind, module, detector, parser) and which fields of
:class:`~pcidoc.model.evidence.ImportedEvidence` it fills. From this table come the importer's
order of trying formats (section formats in table order at every line, then the whole-text
readers, or the JSON readers for a JSON document), the names in merge warnings, the list in
``pcidoc import --help``, the README and docs/import.md (tests/importers/test_format_table.py
and tests/test_import_formats_docs.py keep them equal).

Data only, with no imports: building the command-line help must not load the importers
(~0.3 s). Readers name their functions by module and name and are resolved on first use
(:meth:`Reader.functions`).

Reader kinds (docs/catalogue.md, "Adding a format"):

* ``section``: a block of lines found by the scanner. ``detect(doc, index, ctx) -> bool`` is
  asked at every line (in table order; the first that answers parses), ``parse(doc, index,
  ctx) -> (Fragment, next index)`` reads the block.
* ``text``: lines found anywhere in the text (logs interleaved with everything else).
  ``read(doc, ctx) -> list[Fragment]`` walks the whole text; no detector.
* ``json``: a JSON document. ``detect(data) -> bool``, ``parse(data, ctx) -> Fragment | None``.
"""

from __future__ import annotations

SECTION = "section"
TEXT = "text"
JSON = "json"
KINDS = (SECTION, TEXT, JSON)

PACKAGE = "pcidoc.collect.importers"


class Reader:
    """One way a format is read: its kind and the functions of its module that read it."""

    __slots__ = ("_resolved", "detector", "kind", "module", "parser")

    def __init__(self, kind: str, module: str, parser: str, detector: str = "") -> None:
        self.kind = kind
        self.module = module
        """Module name under :data:`PACKAGE`."""
        self.parser = parser
        self.detector = detector
        """Function name ("" for ``text`` readers, which find their own lines)."""
        self._resolved: tuple[object, object] | None = None

    def functions(self) -> tuple[object, object]:
        """``(detector or None, parser)``, imported on first use."""
        if self._resolved is None:
            import importlib

            module = importlib.import_module(f"{PACKAGE}.{self.module}")
            detector = getattr(module, self.detector) if self.detector else None
            self._resolved = (detector, getattr(module, self.parser))
        return self._resolved

    def __repr__(self) -> str:
        return f"Reader({self.kind}, {self.module}:{self.detector or '-'}/{self.parser})"


def section(module: str, detector: str = "detect", parser: str = "parse") -> Reader:
    """A reader of a block of lines (see the module docstring)."""
    return Reader(SECTION, module, parser, detector)


def text(module: str, parser: str = "read") -> Reader:
    """A reader of lines found anywhere in a text."""
    return Reader(TEXT, module, parser)


def json(module: str, detector: str, parser: str) -> Reader:
    """A reader of a JSON document."""
    return Reader(JSON, module, parser, detector)


class Format:
    """One output pcidoc import reads."""

    __slots__ = ("evidence", "id", "made_by", "readers", "short", "title")

    def __init__(
        self,
        id: str,
        title: str,
        short: str,
        readers: tuple[Reader, ...] = (),
        evidence: tuple[str, ...] = (),
        made_by: str = "",
    ) -> None:
        self.id = id
        """What ``origin.sources[].formats`` lists."""
        self.title = title
        """One line for ``pcidoc import --help`` and the README."""
        self.short = short
        """How merge warnings name it (``topo.txt (topo -m)``)."""
        self.readers = readers
        self.evidence = evidence
        """Fields of ``ImportedEvidence`` its fragments fill (facts and measurements are not
        evidence: a format may fill none)."""
        self.made_by = made_by
        """The format whose reader produces this one, when it has no reader of its own
        (``nvidia-smi -L`` is told from ``nvlink -s`` only once the block is read)."""

    def __repr__(self) -> str:
        return f"Format({self.id!r})"


FORMATS: tuple[Format, ...] = (
    # Section formats, in the order the scanner tries them at a line (the most distinctive
    # first: an XML or AMD table title before the matrices, the matrices last).
    Format(
        "nccl-topo-xml",
        "NCCL topology XML (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE)",
        "NCCL topology",
        (section("nccl_topo_xml"),),
        ("nccl_topologies",),
    ),
    Format(
        "amd-topology",
        "rocm-smi --showtopo / amd-smi topology (XGMI/PCIe links, NUMA)",
        "AMD topology",
        (section("amd_topo"),),
        ("amd_topologies",),
    ),
    Format(
        "lspci",
        "lspci -vv/-vvv blocks, -tv trees, grep excerpts (LnkSta, LnkCtl2, ACSCtl, AER)",
        "lspci",
        (section("lspci"),),
        ("lspci", "lspci_trees"),
    ),
    Format(
        "nccl-tests",
        "nccl-tests/rccl-tests *_perf tables since 2019 (bus bandwidth, #wrong)",
        "nccl-tests",
        (section("nccl_tests"),),
    ),
    Format(
        "p2pBandwidthLatencyTest",
        "cuda-samples p2pBandwidthLatencyTest (P2P bandwidth/latency)",
        "p2pBandwidthLatencyTest",
        (section("p2p_test"),),
    ),
    Format(
        "bandwidthTest",
        "cuda-samples bandwidthTest (host<->device bandwidth)",
        "bandwidthTest",
        (section("bandwidth_test"),),
    ),
    Format(
        "nvbandwidth",
        "nvbandwidth (CE/SM copy bandwidth and latency)",
        "nvbandwidth",
        (section("nvbandwidth"),),
    ),
    Format(
        "nvidia-smi",
        "nvidia-smi summary table (driver/CUDA versions, GPU names, bus ids)",
        "nvidia-smi",
        (section("smi_table"),),
    ),
    Format(
        "nvidia-smi-query",
        "nvidia-smi -q [-i N] [-d PCIE] (GPU identity, PCIe link, fabric)",
        "nvidia-smi -q",
        (section("query"),),
    ),
    Format(
        "nvidia-smi-nvlink",
        "nvidia-smi nvlink -s / -R / -e (NVLink state, rate, remote ends)",
        "nvlink",
        (section("nvlink"),),
    ),
    Format(
        "nvidia-smi-list",
        "nvidia-smi -L (GPU index, name, UUID)",
        "nvidia-smi -L",
        made_by="nvidia-smi-nvlink",
    ),
    Format(
        "nvidia-smi-topo",
        "nvidia-smi topo -m / --matrix (topology, CPU/NUMA affinity, NIC legend)",
        "topo -m",
        (section("topo"),),
    ),
    Format(
        "nvidia-smi-p2p",
        "nvidia-smi topo -p2p r|w|n|a|p (P2P status matrix)",
        "topo -p2p",
        (section("p2p_status"),),
    ),
    # Whole-text readers, in the order they read a text; JSON readers, in the order they are
    # offered a document.
    Format(
        "nccl-log",
        "NCCL_DEBUG=INFO logs, NCCL 2.4 to 2.2x (transports, network, NICs, WARN lines)",
        "NCCL log",
        (text("nccl_log"),),
        ("nccl_logs",),
    ),
    Format(
        "nccl-tests-launch",
        "nccl-tests/rccl-tests rank lines across hosts (multi-node launches)",
        "nccl-tests launch",
        (text("perf_runs"),),
        ("test_runs",),
    ),
    Format(
        "nccl-ras",
        "NCCL RAS status reports (ncclras text and -f json)",
        "NCCL RAS",
        (
            text("nccl_ras", "read_ras"),
            json("nccl_ras", "looks_like_ras_json", "ras_json_fragment"),
        ),
        ("nccl_ras",),
    ),
    Format(
        "nccl-watchdog",
        "PyTorch ProcessGroupNCCL watchdog timeouts (WorkNCCL(SeqNum=...))",
        "NCCL watchdog",
        (text("nccl_ras", "read_watchdogs"),),
        ("nccl_watchdogs",),
    ),
    Format(
        "nccl-inspector",
        "NCCL Inspector records (JSON and Prometheus textfile)",
        "NCCL Inspector",
        (
            text("nccl_inspector", "read_records"),
            json("nccl_inspector", "looks_like_inspector", "json_fragment"),
        ),
        ("inspector",),
    ),
    Format(
        "flight-recorder",
        "PyTorch NCCL flight-recorder dumps (JSON)",
        "flight recorder",
        (json("nccl_ras", "looks_like_flight_recorder", "flight_fragment"),),
        ("flight_records",),
    ),
    Format(
        "nccl-profiler-trace",
        "NCCL example profiler plugin trace (timings, no bandwidth)",
        "NCCL profiler trace",
        (text("nccl_inspector", "read_trace"),),
        ("profiler_traces",),
    ),
    Format(
        "nccl-tests-json",
        "nccl-tests JSON output (-J / --output_file)",
        "nccl-tests JSON",
        (json("perf_runs", "looks_like_json", "json_fragment"),),
        ("test_runs",),
    ),
    Format(
        "pytorch-trace",
        "PyTorch profiler Chrome trace JSON (torch.profiler)",
        "profiler trace",
        (json("torch_trace", "looks_like_trace", "parse_trace"),),
    ),
    Format(
        "setpci-acs",
        "setpci reads of the ACS Control register (ECAP_ACS+6.w, a PLX port's f2a.w)",
        "setpci",
        (text("setpci"),),
        ("lspci",),
    ),
    Format(
        "rdma-ports",
        "ibdev2netdev, ibstat and ibv_devinfo (RDMA ports: state, rate, link layer, netdev)",
        "rdma ports",
        (text("rdma_ports"),),
        ("rdma_ports",),
    ),
    Format(
        "p2p-integrity",
        "simpleP2P verification, PyTorch peer-copy sessions, IOMMU-group tables",
        "P2P integrity",
        (text("p2p_integrity"),),
        ("p2p_integrity",),
    ),
    Format(
        "collect-env",
        "torch.utils.collect_env / vLLM collect_env.py reports",
        "collect_env",
        (text("collect_env"),),
        ("env_reports",),
    ),
    Format(
        "kernel-log",
        "dmesg / journalctl -k / kern.log (Xid, AER, IOMMU faults, PCIe notices)",
        "kernel log",
        (text("kernel_log"),),
        ("kernel_logs",),
    ),
    Format(
        "error-lines",
        "error lines anywhere in a paste, matched against the failure catalogue "
        "(NCCL, InfiniBand, CUDA, PyTorch, Xid, AER, IOMMU, NVML, fabric manager, GPUDirect RDMA)",
        "error lines",
        (text("catalogue_scan"),),
        ("signatures", "mentions", "scanned_lines"),
    ),
    Format(
        "link-history",
        "repeated link readings (nvidia-smi --query-gpu / -q -d PCIE, lspci, sysfs)",
        "link history",
        (text("link_history"),),
        ("link_histories",),
    ),
)
"""Every format, in the order it is tried (see the module docstring)."""

SUPPORTED_FORMATS: dict[str, str] = {fmt.id: fmt.title for fmt in FORMATS}
"""Format id -> what it is; ids appear in ``origin.sources[].formats``."""

SHORT_NAMES: dict[str, str] = {fmt.id: fmt.short for fmt in FORMATS}
"""Format id -> the name merge warnings give it."""


def readers(kind: str) -> list[tuple[str, Reader]]:
    """``(format id, reader)`` of every reader of one kind, in table order."""
    return [(fmt.id, reader) for fmt in FORMATS for reader in fmt.readers if reader.kind == kind]

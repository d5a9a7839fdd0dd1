"""The check registry: one table (:data:`CHECKS`) of the stable check ids (DESIGN.md §6), each
with its title, the kind of input it reads and, for the checks that read only the capture's
evidence, what they say of a capture that carries none.

A check is a function ``(ctx: Context) -> Finding | list[Finding]`` in the module named after
its id (``p2p.acs-iommu`` in ``pcidoc/doctor/checks/p2p/acs_iommu.py``), registered with
:func:`check`. It never collects or measures; it reads :class:`pcidoc.doctor.context.Context`.
The engine merges the findings of one check into the single
:class:`pcidoc.model.report.CheckResult` the report carries for its id (worst finding first).

A module is imported when its check first runs (:attr:`CheckSpec.function`), and a check with
a :attr:`CheckSpec.bare` skip is not run at all on a capture without evidence: the runner gives
that skip, which is the one the check's own code returns then (it reads it from here, and
``tests/doctor/test_registry.py`` runs every such check on evidence-less captures to hold the
two equal). So ``check --json`` on a capture without logs does not load the NCCL, kernel-log
and failure-catalogue checks (docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Callable

from pcidoc._record import record
from pcidoc.doctor.finding import Finding

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from pcidoc.doctor.context import Context

__all__ = [
    "CHECKS",
    "CHECK_IDS",
    "REGISTRY",
    "Bare",
    "CheckFunction",
    "CheckSpec",
    "Finding",
    "bare_of",
    "bare_skip",
    "check",
    "load_checks",
]

CheckFunction = Callable[["Context"], "Finding | list[Finding]"]

_FUNCTIONS: dict[str, CheckFunction] = {}
"""Check id -> its function, filled as the check modules are imported."""


@record(frozen=True)
class Bare:
    """What a check that reads only the capture's evidence says of a capture that carries none:
    a ``skip`` with this summary and what to import."""

    summary: str
    needs: str
    unknown: str = ""
    """For a kernel-log check: what stays unknown without the log (``Xid events``)."""

    def finding(self, suffix: str = "") -> Finding:
        """The skip finding (``suffix`` appended to the summary)."""
        return Finding("skip", self.summary + suffix, needs=self.needs)


@record(frozen=True)
class CheckSpec:
    """A check: a row of :data:`CHECKS`."""

    id: str
    title: str
    needs: str = "facts"
    """``facts`` or ``probe`` (what kind of input the check reads)."""
    bare: Bare | None = None
    """The check's result on a capture without evidence (None: it reads more than evidence)."""

    @property
    def module(self) -> str:
        """The module that holds the check (named after the id)."""
        return "pcidoc.doctor.checks." + self.id.replace("-", "_")

    @property
    def function(self) -> CheckFunction:
        """The check's function (its module imported on first use)."""
        return _function(self)

    @property
    def docs_url(self) -> str:
        """Where the check is documented."""
        return f"docs/checks.md#{self.id}"


def _no_kernel_log(unknown: str) -> Bare:
    return Bare(
        f"no kernel log in the capture: {unknown} unknown",
        "import `sudo dmesg -T` or `journalctl -k -b` (pcidoc import dmesg.txt)",
        unknown,
    )


_NCCL_LOG = "import an NCCL_DEBUG=INFO log of the job (`pcidoc import nccl.log`)"
"""What to import for the checks that read NCCL's INFO lines."""

CHECKS: tuple[CheckSpec, ...] = (
    CheckSpec("nvml.health", "NVML and driver health"),
    CheckSpec("pcie.link-speed", "PCIe link speed and width"),
    CheckSpec("pcie.errors", "PCIe replays and AER errors"),
    CheckSpec("pcie.shared-uplink", "GPUs sharing a PCIe switch uplink"),
    CheckSpec("pcie.link-flap", "Link flaps and links stuck low over repeated readings"),
    CheckSpec("nvlink.state", "NVLink state"),
    CheckSpec("nvlink.errors", "NVLink error counters"),
    CheckSpec("nvlink.fabric", "NVSwitch fabric and Fabric Manager"),
    CheckSpec("p2p.capability", "P2P capability vs topology"),
    CheckSpec("p2p.acs-iommu", "ACS redirect and IOMMU translation"),
    CheckSpec("p2p.fallback", "P2P enabled vs staged copies", "probe"),
    CheckSpec("p2p.integrity", "P2P data integrity (byte-verified peer copies)"),
    CheckSpec("numa.cross-socket", "GPU pairs and NIC paths across sockets"),
    CheckSpec("numa.process-affinity", "GPU processes vs their GPU's NUMA node"),
    CheckSpec("numa.nic-affinity", "GPU↔NIC locality and GPUDirect RDMA"),
    CheckSpec("transfer.pinned", "Pinned host↔device bandwidth vs the link", "probe"),
    CheckSpec("transfer.pageable", "Pageable vs pinned copies", "probe"),
    CheckSpec("transfer.remote-numa", "Pinned copies from the remote socket", "probe"),
    CheckSpec("scaling.allreduce", "All-reduce bus bandwidth vs the link model", "probe"),
    CheckSpec("scaling.efficiency", "Data-parallel scaling efficiency", "probe"),
    CheckSpec("env.nccl", "NCCL and CUDA environment"),
    CheckSpec("env.virtualization", "Virtualization, MIG, containers and confidential computing"),
    CheckSpec(
        "nccl.transport",
        "NCCL transport between GPUs of a node",
        bare=Bare("no intra-node NCCL connection line in the evidence", _NCCL_LOG),
    ),
    CheckSpec(
        "nccl.network",
        "NCCL network between nodes (IB/RoCE, sockets, GPUDirect RDMA)",
        bare=Bare("no NCCL network line in the evidence", _NCCL_LOG),
    ),
    CheckSpec(
        "nccl.version",
        "NCCL version vs the GPU architecture",
        bare=Bare(
            "no NCCL version in the evidence",
            "import an NCCL_DEBUG=INFO log (it prints `NCCL version`) or a collect_env report",
        ),
    ),
    CheckSpec(
        "nccl.shm",
        "NCCL shared memory (/dev/shm)",
        bare=Bare(
            "no NCCL shared-memory use or error in the evidence",
            "import the job's NCCL_DEBUG=INFO log",
        ),
    ),
    CheckSpec(
        "nccl.env-ignored",
        "NCCL settings the log shows were not honoured",
        bare=Bare(
            "no `set by environment` line in the NCCL evidence",
            "import an NCCL_DEBUG=INFO log (NCCL_DEBUG_SUBSYS=INIT,ENV shows the settings)",
        ),
    ),
    CheckSpec(
        "nccl.topo-file",
        "NCCL topology file",
        bare=Bare(
            "no NCCL topology file in the evidence",
            "import the XML (`pcidoc import topo.xml`), or set NCCL_TOPO_FILE on the machine",
        ),
    ),
    CheckSpec(
        "nccl.tests-launch",
        "nccl-tests launch (ranks per job, hosts)",
        bare=Bare(
            "no nccl-tests/rccl-tests rank lines in the evidence",
            "import the full nccl-tests output (with its `# Using devices` lines)",
        ),
    ),
    CheckSpec("nccl.nic-inventory", "NIC inventory vs GPUs (rails)"),
    CheckSpec(
        "nccl.acs-redirect",
        "ACS redirect in pasted lspci output",
        bare=Bare(
            "no ACSCtl line in the evidence",
            "import `sudo lspci -vvv` (or `sudo lspci -vvv | grep ACSCtl`)",
        ),
    ),
    CheckSpec(
        "nccl.lspci-link",
        "PCIe link state and errors in pasted lspci output",
        bare=Bare("no LnkSta/AER line in the evidence", "import `sudo lspci -vvv -s <GPU bus id>`"),
    ),
    CheckSpec(
        "nccl.ras",
        "NCCL RAS: dead, missing and stalled ranks",
        bare=Bare(
            "no NCCL RAS report in the evidence",
            "import `ncclras` (or `ncclras -f json`) output from a node of the job",
        ),
    ),
    CheckSpec(
        "nccl.watchdog",
        "PyTorch NCCL watchdog and flight recorder",
        bare=Bare(
            "no watchdog timeout or flight-recorder dump in the evidence",
            "import the job's stderr (ProcessGroupNCCL lines) or a flight-recorder dump",
        ),
    ),
    CheckSpec(
        "nccl.inspector",
        "Production bus bandwidth (NCCL Inspector)",
        bare=Bare(
            "no NCCL Inspector bandwidth in the evidence",
            "import the Inspector's JSON or Prometheus output (NCCL_PROFILER_PLUGIN=inspector, "
            "NCCL 2.28+)",
        ),
    ),
    CheckSpec(
        "kernel.xid",
        "Xid and fallen-off-the-bus events in the kernel log",
        bare=_no_kernel_log("Xid events"),
    ),
    CheckSpec(
        "kernel.aer", "PCIe AER reports in the kernel log", bare=_no_kernel_log("PCIe AER errors")
    ),
    CheckSpec(
        "kernel.iommu-fault", "IOMMU faults in the kernel log", bare=_no_kernel_log("IOMMU faults")
    ),
    CheckSpec(
        "log.signatures",
        "Known failure lines (the failure catalogue)",
        bare=Bare(
            "no error line of a known kind in the evidence",
            "paste the error lines of the job or the machine (a training log, `sudo dmesg -T`, "
            "the NCCL_DEBUG=INFO output): `pcidoc check --from FILE`",
        ),
    ),
)
"""Every check, in catalogue order. Ids are a stable contract: never rename one."""

REGISTRY: dict[str, CheckSpec] = {spec.id: spec for spec in CHECKS}
CHECK_IDS: tuple[str, ...] = tuple(REGISTRY)


def check(check_id: str) -> Callable[[CheckFunction], CheckFunction]:
    """Register the function of a check of :data:`CHECKS` (in the module named after its id)."""
    if check_id not in REGISTRY:
        raise ValueError(f"unknown check id {check_id!r}; add it to CHECKS first")

    def register(function: CheckFunction) -> CheckFunction:
        if check_id in _FUNCTIONS:
            raise ValueError(f"check {check_id!r} registered twice")
        _FUNCTIONS[check_id] = function
        return function

    return register


def bare_of(check_id: str) -> Bare:
    """The evidence-less skip of a check of :data:`CHECKS` that reads only evidence."""
    bare = REGISTRY[check_id].bare
    if bare is None:
        raise LookupError(f"check {check_id!r} has no evidence-less skip in CHECKS")
    return bare


def bare_skip(check_id: str, suffix: str = "") -> Finding:
    """The skip of an evidence-only check when the evidence holds nothing it reads (the one
    the runner gives a capture without evidence)."""
    return bare_of(check_id).finding(suffix)


def _function(spec: CheckSpec) -> CheckFunction:
    if spec.id not in _FUNCTIONS:
        from importlib import import_module

        import_module(spec.module)
        if spec.id not in _FUNCTIONS:
            raise LookupError(f"{spec.module} registers no check {spec.id!r}")
    return _FUNCTIONS[spec.id]


def load_checks() -> dict[str, CheckSpec]:
    """Import every check module and return the registry (id -> spec, catalogue order)."""
    for spec in CHECKS:
        _function(spec)
    return REGISTRY

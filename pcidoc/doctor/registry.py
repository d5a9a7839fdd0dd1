"""The check registry: stable check ids (DESIGN.md §6) mapped to pure check functions.

A check is a function ``(ctx: Context) -> Finding | list[Finding]``. It never collects or
measures; it reads :class:`pcidoc.doctor.context.Context`. The engine merges the findings of
one check into the single :class:`pcidoc.model.report.CheckResult` the report carries for its
id (worst finding first).
"""

from __future__ import annotations

from collections.abc import Callable

from pcidoc._record import field, record
from pcidoc.doctor.finding import Finding

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from pcidoc.doctor.context import Context

__all__ = ["CHECK_IDS", "REGISTRY", "CheckFunction", "CheckSpec", "Finding", "check", "load_checks"]

CHECK_IDS: tuple[str, ...] = (
    "nvml.health",
    "pcie.link-speed",
    "pcie.errors",
    "pcie.shared-uplink",
    "pcie.link-flap",
    "nvlink.state",
    "nvlink.errors",
    "nvlink.fabric",
    "p2p.capability",
    "p2p.acs-iommu",
    "p2p.fallback",
    "p2p.integrity",
    "numa.cross-socket",
    "numa.process-affinity",
    "numa.nic-affinity",
    "transfer.pinned",
    "transfer.pageable",
    "transfer.remote-numa",
    "scaling.allreduce",
    "scaling.efficiency",
    "env.nccl",
    "env.virtualization",
    "nccl.transport",
    "nccl.network",
    "nccl.version",
    "nccl.shm",
    "nccl.env-ignored",
    "nccl.topo-file",
    "nccl.tests-launch",
    "nccl.nic-inventory",
    "nccl.acs-redirect",
    "nccl.lspci-link",
    "nccl.ras",
    "nccl.watchdog",
    "nccl.inspector",
    "kernel.xid",
    "kernel.aer",
    "kernel.iommu-fault",
    "log.signatures",
)
"""Every check id, in catalogue order. Ids are a stable contract: never rename one."""


CheckFunction = Callable[["Context"], "Finding | list[Finding]"]


@record(frozen=True)
class CheckSpec:
    """A registered check."""

    id: str
    title: str
    needs: str
    """``facts`` or ``probe`` (what kind of input the check reads)."""
    function: CheckFunction = field(compare=False)

    @property
    def docs_url(self) -> str:
        """Where the check is documented."""
        return f"docs/checks.md#{self.id}"


REGISTRY: dict[str, CheckSpec] = {}


def check(
    check_id: str, title: str, needs: str = "facts"
) -> Callable[[CheckFunction], CheckFunction]:
    """Register a check function under a catalogue id.

    Args:
        check_id: One of :data:`CHECK_IDS`.
        title: Short title shown in every presenter.
        needs: ``facts`` or ``probe``.
    """
    if check_id not in CHECK_IDS:
        raise ValueError(f"unknown check id {check_id!r}; add it to CHECK_IDS first")

    def register(function: CheckFunction) -> CheckFunction:
        if check_id in REGISTRY:
            raise ValueError(f"check {check_id!r} registered twice")
        REGISTRY[check_id] = CheckSpec(check_id, title, needs, function)
        return function

    return register


def load_checks() -> dict[str, CheckSpec]:
    """Import every check module (which registers them) and return the registry."""
    if len(REGISTRY) < len(CHECK_IDS):
        from pcidoc.doctor import checks  # noqa: F401  (registers on import)
    return REGISTRY

"""The check registry: stable check ids (DESIGN.md §6) mapped to pure check functions.

A check is a function ``(ctx: Context) -> Finding | list[Finding]``. It never collects or
measures; it reads :class:`pcidoc.doctor.context.Context`. The engine merges the findings of
one check into the single :class:`pcidoc.model.report.CheckResult` the report carries for its
id (worst finding first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pcidoc.model.report import Confidence, Evidence, Severity

if TYPE_CHECKING:
    from pcidoc.doctor.context import Context

CHECK_IDS: tuple[str, ...] = (
    "nvml.health",
    "pcie.link-speed",
    "pcie.errors",
    "pcie.shared-uplink",
    "nvlink.state",
    "nvlink.errors",
    "nvlink.fabric",
    "p2p.capability",
    "p2p.acs-iommu",
    "p2p.fallback",
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
)
"""Every check id, in catalogue order. Ids are a stable contract: never rename one."""


@dataclass
class Finding:
    """One thing a check found. A check may return several; they merge into one result.

    Attributes:
        severity: ``pass``/``info``/``warn``/``fail``/``skip`` (``error`` is set by the engine).
        summary: One line with the key numbers, e.g. ``"GPU2 at Gen1 x16 under load"``.
        subjects: ``GPU<n>``, ``GPU<a>-GPU<b>``, NIC names.
        evidence: Facts and numbers used, with units.
        remediation: What to do, in order; commands in backticks.
        confidence: How sure the finding is (``low`` when it rests on indirect evidence).
        needs: For ``skip``: what would provide the missing input.
    """

    severity: Severity
    summary: str
    subjects: Sequence[str] = ()
    evidence: Sequence[Evidence] = ()
    remediation: Sequence[str] = ()
    confidence: Confidence = "high"
    needs: str | None = None


CheckFunction = Callable[["Context"], "Finding | list[Finding]"]


@dataclass(frozen=True)
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

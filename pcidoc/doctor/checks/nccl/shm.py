"""``nccl.shm``: NCCL could not create its shared-memory segments (``/dev/shm`` too small, the
Docker default of 64 MB), from the NCCL log or from the same errors quoted elsewhere (PyTorch's
``Last error:``), which the failure catalogue matches.
"""

from __future__ import annotations

from pcidoc.doctor.checks.nccl._shared import logs, quote
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, bare_skip, check
from pcidoc.doctor.signatures import signature_findings


@check("nccl.shm")
def shm(ctx: Context) -> list[Finding]:
    """``/dev/shm`` too small for NCCL's SHM transport."""
    all_logs = logs(ctx)
    errors = [q for log in all_logs for q in log.shm_errors]
    quoted = signature_findings(ctx, "nccl.shm")
    if errors:
        return [
            Finding(
                "fail",
                "NCCL could not allocate its shared-memory buffers: /dev/shm is too small "
                "(a container's 64 MB default)",
                evidence=[quote(q.quote) for q in errors[:3]],
                remediation=[
                    "Start the container with `--shm-size=1g` (or more) or `--ipc=host`; in "
                    "Kubernetes mount an `emptyDir: {medium: Memory}` volume at /dev/shm.",
                    "Check with `df -h /dev/shm` inside the container.",
                ],
            ),
            *quoted,
        ]
    if quoted:
        return quoted
    used = [c for log in all_logs for c in log.connections if c.transport == "SHM"]
    if used:
        return [
            Finding(
                "pass",
                f"NCCL set up {len(used)} SHM connection(s) without a shared-memory error in "
                "the log shown",
                evidence=[quote(used[0].quote)],
                confidence="medium",
            )
        ]
    return [bare_skip("nccl.shm")]

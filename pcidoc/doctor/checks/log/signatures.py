"""``log.signatures``: lines of a paste (or of the live kernel log) that match an entry of the
failure catalogue reported by no more specific check: CUDA runtime errors, PyTorch distributed
errors, NVML and nvidia-smi messages, fabric manager and IMEX, GPUDirect RDMA, InfiniBand verbs
outside NCCL's lines. Each finding quotes its lines, names what they mean, the likely causes in
order and the fix, from the catalogue entry (which cites its source).
"""

from __future__ import annotations

from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, bare_skip, check
from pcidoc.doctor.signatures import all_hits, signature_findings

CHECK_ID = "log.signatures"


@check(CHECK_ID)
def signatures(ctx: Context) -> list[Finding]:
    """Catalogue hits that no other check reports; a pass when every hit is known-benign or
    reported elsewhere."""
    findings = signature_findings(ctx, CHECK_ID)
    if findings:
        return findings
    hits = all_hits(ctx)
    if not hits:
        return [bare_skip(CHECK_ID)]
    lines = sum(hit.count for hit in hits)
    return [
        Finding(
            "pass",
            f"{lines} line(s) matched the failure catalogue: known-benign, or judged by the "
            "check of their topic",
        )
    ]

"""``nccl.version``: an NCCL older than the first release that supports the GPU architecture."""

from __future__ import annotations

import re

from pcidoc.doctor.checks.nccl._shared import evidence, gpu_names, logs, quote
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, bare_skip, check
from pcidoc.doctor.signatures import signature_findings

# First NCCL release supporting each compute capability (GPU models are resolved by
# pcidoc.model.linkmodel). Source: NCCL 2.7.3 release notes, "Added support for A100 GPU and
# related platforms" (docs.nvidia.com/deeplearning/sdk/nccl-release-notes/rel_2-7-3.html).
# Compute capabilities whose first supporting release we could not cite are not judged.
_MIN_NCCL: tuple[tuple[float, str, tuple[int, int, int]], ...] = (
    (8.0, "Ampere (sm_80)", (2, 7, 3)),
)


def _cc(name: str) -> float | None:
    from pcidoc.model.linkmodel import lookup_gpu

    model = lookup_gpu(name)
    return model.compute_capability if model is not None else None


def _version(text: str | None) -> tuple[int, int, int] | None:
    if not text:
        return None
    match = re.match(r"^\s*(\d+)\.(\d+)\.(\d+)", text)
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


@check("nccl.version")
def version(ctx: Context) -> list[Finding]:
    """An NCCL release older than the GPU architecture, by its number or by the warnings an
    NCCL build too old for the GPU prints (``ncclMaxSharedMem ... exceeds``)."""
    warned = signature_findings(ctx, "nccl.version")
    judged = [f for f in _by_number(ctx) if not (warned and f.severity in ("skip", "info"))]
    return judged + warned


def _by_number(ctx: Context) -> list[Finding]:
    found: list[tuple[str, str]] = []
    for log in logs(ctx):
        if log.version:
            found.append((log.version, f"NCCL log ({log.source})"))
    for report in evidence(ctx).env_reports:
        if report.nccl_version:
            found.append((report.nccl_version, f"{report.tool} collect_env"))
    if not found:
        return [bare_skip("nccl.version")]
    names = gpu_names(ctx)
    text, where = found[0]
    have = _version(text)
    seen = [quote(text, "NCCL version")]
    # A version that was read is a fact shown (info), not a missing input (skip), even when
    # there is nothing to judge it against.
    if have is None:
        return [
            Finding(
                "info",
                f"NCCL version '{text}' ({where}) is not a release number: not judged",
                evidence=seen,
                confidence="low",
            )
        ]
    if not names:
        return [
            Finding(
                "info",
                f"NCCL {text} ({where}); not judged: the GPU model is not in the evidence",
                evidence=seen,
                needs="import nvidia-smi output or a collect_env report with the GPU names",
                confidence="low",
            )
        ]
    for cc, arch, minimum in _MIN_NCCL:
        matching = [n for n in names if _cc(n) == cc]
        if matching and have < minimum:
            need = ".".join(map(str, minimum))
            return [
                Finding(
                    "fail",
                    f"NCCL {text} predates support for {arch} GPUs ({matching[0]}); "
                    f"{need} is the first release that supports them",
                    evidence=[quote(text, "NCCL version"), quote(matching[0], "GPU")],
                    remediation=[
                        "Use an NCCL build for this architecture: upgrade the framework "
                        "(its bundled NCCL) or the container image, or point LD_LIBRARY_PATH "
                        "at a newer libnccl.",
                    ],
                )
            ]
    judged = [n for n in names if any(_cc(n) == cc for cc, _, _ in _MIN_NCCL)]
    if judged:
        return [
            Finding(
                "pass",
                f"NCCL {text} supports {judged[0]}",
                evidence=[quote(text, "NCCL version")],
            )
        ]
    return [
        Finding(
            "info",
            f"NCCL {text} ({where}); not judged: no cited first NCCL release for {names[0]}",
            evidence=seen,
            needs="pcidoc's table covers the architectures whose first NCCL release is cited",
            confidence="low",
        )
    ]

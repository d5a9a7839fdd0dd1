"""``p2p.integrity``: peer-to-peer copies that deliver wrong bytes (or never complete) while
the driver reports P2P as available: the probe's byte verification and imported outputs
(simpleP2P, PyTorch sessions, IOMMU-group tables next to corrupted data). One root cause, one
rule: peer DMA broken on the path (a translating IOMMU, ACS redirect, the platform or a driver
forcing P2P where it does not work), joined with the IOMMU/ACS facts to say why.
"""

from __future__ import annotations

from pcidoc.doctor.checks._common import ev
from pcidoc.doctor.checks.p2p._shared import pair_label
from pcidoc.doctor.checks.p2p.fallback import static_causes
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import short_list
from pcidoc.model.report import Evidence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

FIX = [
    "Stop-gap now: `NCCL_P2P_DISABLE=1` (NCCL stages through host memory; for vLLM also "
    "`--disable-custom-all-reduce`); in PyTorch, copy through the CPU until fixed.",
    "Fix the path: boot with `iommu=pt` (`intel_iommu=on iommu=pt` / `amd_iommu=on iommu=pt`) "
    "or turn the IOMMU (VT-d / AMD-Vi) off in the BIOS; turn ACS redirect off on the switch "
    "ports between the GPUs (see p2p.acs-iommu); enable Above 4G Decoding and Resizable BAR.",
    "On GeForce cards use a driver that refuses P2P cleanly (a release that does not advertise "
    "peer access it cannot deliver) or drop a patched P2P driver.",
    "Then verify: `pcidoc check --probes quick` byte-verifies every GPU pair in both directions "
    "(or cuda-samples `simpleP2P` must print `Test passed`).",
]


def _iommu_facts(ctx: Context) -> list[Evidence]:
    iommu = ctx.host.iommu
    out = []
    if iommu.enabled is not None:
        out.append(ev("IOMMU enabled", iommu.enabled))
    if iommu.default_domain_type:
        out.append(ev("IOMMU group type", iommu.default_domain_type))
    if iommu.kernel_args:
        out.append(ev("IOMMU kernel arguments", " ".join(iommu.kernel_args)))
    return out


def _probe_bad(ctx: Context) -> tuple[list[str], list[Evidence], list[str]]:
    """(pairs with wrong data, evidence, pairs that hung) from the probe's verification."""
    bad: list[str] = []
    hung: list[str] = []
    evidence: list[Evidence] = []
    for v in ctx.measurements.p2p_verification:
        if v.ok:
            continue
        arrow = f"GPU{v.src}→GPU{v.dst}"
        detail = v.detail or "mismatch"
        (hung if "did not complete" in detail else bad).append(arrow)
        evidence.append(ev("byte verification failed", detail, subject=arrow))
        evidence += static_causes(ctx, v.src, v.dst)
    unique = list({(e.label, e.subject, str(e.value)): e for e in evidence}.values())
    return bad, unique, hung


def _imported(ctx: Context) -> list[Any]:
    found = getattr(ctx.capture.evidence, "p2p_integrity", None) if ctx.capture.evidence else None
    return list(found or ())


def _imported_text(item: Any) -> str:
    what = {"simpleP2P": "simpleP2P", "pytorch": "a PyTorch peer copy", "iommu-table": "the job"}
    text = f"{what.get(item.tool, item.tool)}: {item.detail or 'wrong data'}"
    if item.staged_ok:
        text += " (the same data staged through the CPU arrived intact)"
    return text


@check("p2p.integrity")
def integrity(ctx: Context) -> list[Finding]:
    """Wrong bytes or hanging peer copies, measured or imported."""
    bad, evidence, hung = _probe_bad(ctx)
    imported = _imported(ctx)
    wrong = [i for i in imported if i.ok is False]
    suspected = [i for i in imported if i.ok is None]
    findings: list[Finding] = []
    if bad or hung or wrong:
        parts = []
        if bad:
            parts.append(f"peer copies returned wrong data on {short_list(bad)}")
        if hung:
            parts.append(f"peer copies never completed (hanging) on {short_list(hung)}")
        parts += [_imported_text(i) for i in wrong[:2]]
        findings.append(
            Finding(
                "fail",
                "P2P is enabled but the data is wrong: " + "; ".join(parts),
                subjects=sorted({pair_label(*_pair(a)) for a in bad + hung}),
                evidence=evidence
                + [ev(f"{i.tool} output", i.quote) for i in wrong[:4]]
                + _iommu_facts(ctx),
                remediation=FIX,
            )
        )
    if suspected and not findings:
        item = suspected[0]
        findings.append(
            Finding(
                "warn",
                "suspected P2P data corruption: "
                + (item.detail or "corrupted result")
                + " (peer DMA translated by the IOMMU across root complexes is a known "
                "silently-broken path)",
                evidence=[ev("corrupted result", item.quote)]
                + [
                    ev("GPU", f"IOMMU group {g}, root complex {r}", subject=b)
                    for b, g, r in zip(
                        item.gpus, item.iommu_groups, item.root_complexes, strict=False
                    )
                ]
                + _iommu_facts(ctx),
                remediation=FIX,
                confidence="medium",
            )
        )
    if findings:
        return findings
    passed = [v for v in ctx.measurements.p2p_verification if v.ok] + [i for i in imported if i.ok]
    if passed:
        return [
            Finding(
                "pass",
                f"byte-verified peer copies correct ({len(passed)} result(s))",
                evidence=[
                    ev("verified", getattr(p, "detail", None) or getattr(p, "quote", None))
                    for p in passed[:3]
                ],
            )
        ]
    return [
        Finding(
            "skip",
            "no peer copy was byte-verified",
            needs="run `pcidoc check --probes quick` (verifies every GPU pair) or import "
            "cuda-samples simpleP2P output",
        )
    ]


def _pair(arrow: str) -> tuple[int, int]:
    a, b = arrow.replace("GPU", "").split("→")
    return int(a), int(b)

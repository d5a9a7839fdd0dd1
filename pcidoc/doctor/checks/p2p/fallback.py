"""The ``p2p.fallback`` check."""

from __future__ import annotations

from pcidoc.doctor import config
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.checks._common import median as _median
from pcidoc.doctor.checks.p2p._shared import (
    ACS_ROOT_HINT,
    NCCL_AB_TEST,
    _best,
    _capped,
    _first,
    _iommu_translating,
    _uni_or_bidir,
    pair_label,
    pair_path,
)
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import gbps as _gbps
from pcidoc.doctor.wording import gpu_ref
from pcidoc.doctor.wording import short_list as _list
from pcidoc.doctor.wording import span as _span
from pcidoc.model.facts import P2P_CODES, Gpu
from pcidoc.model.links import is_nvlink, nvlink_count
from pcidoc.model.measurements import P2PMatrixMeasurement
from pcidoc.model.report import Confidence, Evidence
from pcidoc.model.units import format_bytes, link_label


def _downtrained(gpu: Gpu | None) -> str | None:
    if gpu is None:
        return None
    link = gpu.pcie
    gen_low = link.current_gen and link.max_gen and link.current_gen < link.max_gen
    width_low = link.current_width and link.max_width and link.current_width < link.max_width
    if width_low or (gen_low and gpu.pstate == 0):
        return (
            f"{link_label(link.current_gen, link.current_width)} of "
            f"{link_label(link.max_gen, link.max_width)}"
        )
    return None


def static_causes(ctx: Context, a: int, b: int) -> list[Evidence]:
    """Static facts that explain a slow or broken peer path between GPU ``a`` and ``b``."""
    label = pair_label(a, b)
    out: list[Evidence] = []
    path = pair_path(ctx, a, b)
    for hop in path.redirecting:
        out.append(
            _ev(
                "ACS redirect on bridge",
                f"{hop.acs.describe()} (0x{hop.acs.raw:04x})" if hop.acs else None,
                subject=hop.bus_id,
            )
        )
    if path.unreadable and not path.redirecting:
        out.append(
            _ev("ACS on the bridges between them", f"unreadable ({ACS_ROOT_HINT})", subject=label)
        )
    code = ctx.p2p_code(a, b)
    if code and code not in ("OK", "U"):
        out.append(_ev("NVML P2P status", f"{code}: {P2P_CODES.get(code, code)}", subject=label))
    if path.link in ("SYS", "PHB", "NODE"):
        out.append(_ev("path class", f"{path.link} (peer traffic crosses the CPU)", subject=label))
    for idx in (a, b):
        gpu = ctx.gpu_by_index.get(idx)
        if gpu is None:
            continue
        if _iommu_translating(ctx, gpu):
            out.append(
                _ev(
                    "IOMMU group type",
                    gpu.iommu_group_type or ctx.host.iommu.default_domain_type,
                    subject=gpu.label,
                )
            )
        low = _downtrained(gpu)
        if low:
            out.append(_ev("PCIe link below its maximum", low, subject=gpu.label))
        if ctx.is_geforce(gpu):
            out.append(_ev("consumer GPU (driver P2P policy applies)", gpu.name, subject=gpu.label))
        if gpu.bar1_total_bytes and gpu.bar1_total_bytes < config.BAR1_SMALL_BYTES:
            out.append(
                _ev(
                    "small BAR1 (Resizable BAR off?)",
                    format_bytes(gpu.bar1_total_bytes),
                    subject=gpu.label,
                )
            )
    return out


def _summarize_causes(causes: list[Evidence]) -> str:
    """``"; likely cause: ACS redirect at 0000:41:00.0, ..."``, strongest causes first."""
    ranked: list[tuple[int, str]] = []
    for ev in causes:
        if ev.label.startswith("ACS redirect"):
            ranked.append((0, f"ACS redirect at {ev.subject}"))
        elif ev.label == "IOMMU group type":
            ranked.append((1, f"IOMMU translating ({ev.value}) on {ev.subject}"))
        elif ev.label.startswith("small BAR1"):
            ranked.append((2, f"small BAR1 on {ev.subject}"))
        elif ev.label.startswith("PCIe link below"):
            ranked.append((3, f"{ev.subject} link at {ev.value}"))
        elif ev.label == "NVML P2P status":
            ranked.append((4, f"NVML status {str(ev.value).split(':')[0]}"))
        elif ev.label == "path class":
            ranked.append((5, f"{str(ev.value).split()[0]} path"))
    unique = list(dict.fromkeys(name for _, name in sorted(ranked, key=lambda r: r[0])))
    return "; likely cause: " + ", ".join(unique[:3]) if unique else ""


def _latency(ctx: Context, mode: str, src: int, dst: int) -> float | None:
    for m in ctx.p2p_matrices("latency", mode):
        if m.latency_side in (None, "gpu"):
            value = m.value(src, dst)
            if value is not None:
                return value
    return None


def _nvlink_model(ctx: Context, a: int, b: int, link: str) -> tuple[float | None, str]:
    version, speed = ctx.nvlink_rate(a)
    if version is None and speed is None:
        version, speed = ctx.nvlink_rate(b)
    nominal = config.nvlink_nominal_rate_gbps(version, speed)
    links = nvlink_count(link)
    if nominal is None or not links:
        return None, "per-link NVLink rate unknown (no NVLink version or speed in the capture)"
    basis = f"{links} links × {nominal:g} GB/s" + (f" (NVLink {version})" if version else "")
    return links * nominal, basis


class _Verdicts:
    """The pairs' verdicts, gathered before the findings are worded (all empty at first)."""

    def __init__(self) -> None:
        self.nv_unused: list[str] = []
        self.nv_slow: list[str] = []
        self.nv_ok: list[float] = []
        self.slower: list[tuple[int, int]] = []
        self.no_speedup: list[tuple[int, int]] = []
        self.fallback: list[float] = []
        self.fallback_pairs: list[str] = []
        self.indistinct: list[tuple[int, int]] = []
        self.ok_speedups: list[float] = []
        self.ok_unknown_path: list[float] = []
        """Enabled bandwidth of passing pairs whose path is not in the topology."""
        self.nv_rate_unknown = False
        self.pcie_unjudged = False
        self.nv_model: tuple[float, str] | None = None
        self.evidence: list[Evidence] = []
        self.proven: list[tuple[int, int, str]] = []
        """PCIe pairs whose weak unidirectional speedup was overruled by stronger evidence that
        the peer path works (latency, bidirectional bandwidth): ``(a, b, what showed it)``."""
        self.confirmed: set[tuple[int, int]] = set()
        """Pairs whose bad verdict stronger evidence confirmed (high confidence)."""
        self.nv_inferred: list[float] = []
        """Pairs of unknown path faster than any PCIe x16 link: NVLink without a topology."""
        self.nv_expected: list[str] = []
        """Directions of unknown path at PCIe rates between GPUs whose model is only built on
        NVLink boards (SXM on NVSwitch or a full mesh): NVLink not used, topology to confirm."""
        self.nv_board = ""
        """The GPU model named in that finding."""


@check("p2p.fallback")
def p2p_fallback(ctx: Context) -> Finding | list[Finding]:
    """Peer copies with P2P on that are no faster than staging through the host, NVLink pairs
    not using NVLink and outlier GPUs (wrong bytes are ``p2p.integrity``'s)."""
    enabled, baseline = _uni_or_bidir(ctx)
    if not enabled:
        return ctx.unmeasured("p2p", "no peer-to-peer copy was measured")
    findings: list[Finding] = []
    indices = sorted({i for m in enabled for i in m.gpus})
    mode = "bidirectional" if enabled[0].bidirectional else "unidirectional"
    v = _Verdicts()
    for a in indices:
        for b in indices:
            if a != b:
                _judge_direction(ctx, a, b, enabled, baseline, v)
    findings.extend(_fallback_findings(ctx, v, mode))
    findings.extend(_outliers(ctx, enabled, indices))
    if not any(f.severity in ("warn", "fail", "info") for f in findings):
        parts = []
        evidence = list(v.evidence)
        if v.ok_speedups:
            kind = "PCIe pair" if not v.ok_unknown_path else "pair"
            parts.append(f"P2P beats staging on every {kind} (min {min(v.ok_speedups):.1f}×)")
            evidence.append(_ev("lowest P2P speedup over staging", round(min(v.ok_speedups), 2)))
            beyond = _beyond_pcie(v.ok_unknown_path, mode)
            if beyond:
                parts.append(beyond)
        if v.proven:
            parts.append(
                f"the peer path works on {len(v.proven)} direction(s) whose unidirectional gain "
                "is small (stronger evidence decides)"
            )
            evidence += [
                _ev("peer path works", what, subject=f"GPU{a}→GPU{b}") for a, b, what in v.proven
            ]
        if v.nv_inferred:
            parts.append(_beyond_pcie(v.nv_inferred, mode) or "")
        if v.nv_ok:
            span = _span(v.nv_ok)
            parts.append(f"NVLink pairs {span} GB/s {mode}")
            evidence.append(_ev(f"NVLink P2P {mode}", span, "GB/s"))
            if v.nv_model:
                model, basis = v.nv_model
                parts[-1] += f" ({min(v.nv_ok) / model:.0%}+ of {_gbps(model)} GB/s line rate)"
                evidence.append(_ev("NVLink line rate", model, "GB/s", subject=basis))
            else:
                evidence.append(_ev("NVLink line rate", None, subject="per-link rate unknown"))
        findings.append(
            Finding(
                "pass",
                "; ".join(parts) or f"peer copies measured on {len(indices)} GPUs",
                evidence=_capped(evidence),
                confidence="medium"
                if v.nv_rate_unknown or v.nv_inferred or not ctx.has_topology
                else "high",
            )
        )
    return findings


def _beyond_pcie(values: list[float], mode: str) -> str | None:
    """A note when peer copies of pairs with an unknown path outrun every PCIe x16 link."""
    fastest = config.PCIE_NEWEST_GEN
    ceiling = config.pcie_ceiling_gbps(fastest, 16)
    if not values or ceiling is None:
        return None
    if mode == "bidirectional":
        ceiling *= 2
    if min(values) <= ceiling:
        return None
    return (
        f"{_span(values)} GB/s {mode} is beyond any PCIe x16 link "
        f"(Gen{fastest} x16 = {_gbps(ceiling)} GB/s), so these pairs talk over NVLink (the "
        "topology is not in the capture to confirm it)"
    )


def _judge_direction(
    ctx: Context,
    a: int,
    b: int,
    enabled: list[P2PMatrixMeasurement],
    baseline: list[P2PMatrixMeasurement],
    v: _Verdicts,
) -> None:
    on = _best(enabled, a, b)
    if on is None:
        return
    off = _first(baseline, a, b)
    link = ctx.gpu_link(a, b)
    if is_nvlink(link):
        _judge_nvlink_direction(ctx, a, b, on, link or "", v)
        return
    available = ctx.p2p_available(a, b)
    board = _board_nvlink(ctx, a, b) if link is None else None
    if board and on < config.NVLINK_AT_PCIE_RATE_GBPS:
        arrow = f"GPU{a}→GPU{b}"
        v.nv_expected.append(arrow)
        v.nv_board = board
        v.evidence.append(_ev(f"P2P {arrow}, path not in the capture", on, "GB/s", arrow))
        return
    if link is None and on > _pcie_x16_limit(bool(enabled[0].bidirectional)):
        v.nv_inferred.append(on)
        return
    if off is None:
        v.pcie_unjudged = True
        return
    speedup = on / off if off > 0 else float("inf")
    if available is False:
        v.fallback.append(on)
        if pair_label(a, b) not in v.fallback_pairs:
            v.fallback_pairs.append(pair_label(a, b))
        return
    weak = speedup < config.P2P_MIN_SPEEDUP
    stronger = peer_path_evidence(ctx, a, b) if weak else None
    if stronger is not None and stronger[0] and speedup >= 1.0 - config.P2P_FALLBACK_TOLERANCE:
        # The unidirectional speedup is the weakest evidence: healthy P2P through the CPU is
        # often only ~1.1x the staged copy while its latency drops 10x.
        v.proven.append((a, b, stronger[1]))
        v.ok_speedups.append(speedup)
        return
    if stronger is not None and not stronger[0]:
        v.confirmed.add((a, b))
    if available is None and abs(speedup - 1) <= config.P2P_FALLBACK_TOLERANCE:
        v.indistinct.append((a, b))
    elif speedup < 1.0:
        v.slower.append((a, b))
    elif weak:
        v.no_speedup.append((a, b))
    else:
        v.ok_speedups.append(speedup)
        if link is None:
            v.ok_unknown_path.append(on)


def _board_nvlink(ctx: Context, a: int, b: int) -> str | None:
    """The name of ``a`` and ``b``'s model when both are one model whose every board joins
    each pair by NVLink (``GpuModel.nvlink_on_every_board``), else ``None``."""
    models = {ctx.gpu_model(ctx.gpu_by_index.get(i)) for i in (a, b)}
    model = models.pop() if len(models) == 1 else None
    if model is None or not model.nvlink_on_every_board:
        return None
    gpu = ctx.gpu_by_index.get(a)
    return gpu.name if gpu is not None and gpu.name else model.key


def _judge_nvlink_direction(
    ctx: Context, a: int, b: int, on: float, link: str, v: _Verdicts
) -> None:
    """An NVLink pair: at PCIe rates (not using NVLink), below the model, or fine."""
    arrow = f"GPU{a}→GPU{b}"
    model, basis = _nvlink_model(ctx, a, b, link)
    if on < config.NVLINK_AT_PCIE_RATE_GBPS:
        v.nv_unused.append(arrow)
        v.evidence.append(_ev(f"P2P {arrow} over {link}", on, "GB/s", pair_label(a, b)))
    elif model and on < config.NVLINK_P2P_WARN_FRACTION * model:
        v.nv_slow.append(arrow)
        v.evidence.append(
            _ev(
                f"P2P {arrow} vs NVLink model ({basis})",
                f"{_gbps(on)} of {_gbps(model)}",
                "GB/s",
                pair_label(a, b),
            )
        )
    else:
        v.nv_ok.append(on)
        v.nv_rate_unknown |= model is None
        if model:
            v.nv_model = (model, basis)


def _pcie_x16_limit(bidirectional: bool) -> float:
    """The fastest PCIe x16 link NCCL models (both directions summed when bidirectional)."""
    ceiling = config.pcie_ceiling_gbps(config.PCIE_NEWEST_GEN, 16) or float("inf")
    return 2 * ceiling if bidirectional else ceiling


def peer_path_evidence(ctx: Context, a: int, b: int) -> tuple[bool, str] | None:
    """Whether the peer path GPU ``a`` -> ``b`` works, from evidence stronger than a
    unidirectional bandwidth ratio, strongest first; ``None`` when there is none.

    1. latency with P2P enabled vs disabled: a direct path answers in ~1-3 us, a staged copy in
       ~10-25 us (``P2P_LATENCY_STAGED_FRACTION``);
    2. bidirectional bandwidth enabled vs disabled: a working peer path carries both directions
       at once, staging through one host buffer does not (>= ``P2P_BIDIR_WORKS_SPEEDUP``).

    (Byte-verified copies rank above both but prove correctness, not the path: they are judged
    on their own in :func:`p2p_fallback`.)
    """
    lat_on, lat_off = _latency(ctx, "enabled", a, b), _latency(ctx, "disabled", a, b)
    if lat_on is not None and lat_off:
        works = lat_on < config.P2P_LATENCY_STAGED_FRACTION * lat_off
        return works, f"latency {lat_on:.2f} vs {lat_off:.2f} us staged"
    on = _best(ctx.p2p_matrices("bandwidth", "enabled", bidirectional=True), a, b)
    off = _first(
        ctx.p2p_matrices("bandwidth", "disabled", bidirectional=True)
        + ctx.p2p_matrices("bandwidth", "staged", bidirectional=True),
        a,
        b,
    )
    if on is not None and off:
        ratio = on / off
        if ratio >= config.P2P_BIDIR_WORKS_SPEEDUP:
            return True, f"bidirectional {_gbps(on)} vs {_gbps(off)} GB/s staged ({ratio:.1f}×)"
        if ratio < config.P2P_MIN_SPEEDUP:
            return False, f"bidirectional {_gbps(on)} vs {_gbps(off)} GB/s staged ({ratio:.1f}×)"
    return None


def _direction_evidence(
    ctx: Context, pairs: list[tuple[int, int]], enabled_label: str
) -> list[Evidence]:
    enabled, baseline = _uni_or_bidir(ctx)
    out = []
    for a, b in pairs:
        on, off = _best(enabled, a, b), _first(baseline, a, b)
        out.append(
            _ev(
                f"{enabled_label} GPU{a}→GPU{b} (enabled vs staged)",
                f"{_gbps(on or 0)} vs {_gbps(off or 0)}",
                "GB/s",
                pair_label(a, b),
            )
        )
        lat_on, lat_off = _latency(ctx, "enabled", a, b), _latency(ctx, "disabled", a, b)
        if lat_on is not None and lat_off is not None:
            staged = lat_on >= config.P2P_LATENCY_STAGED_FRACTION * lat_off
            out.append(
                _ev(
                    f"P2P latency GPU{a}→GPU{b} vs staged",
                    f"{lat_on:.2f} vs {lat_off:.2f} us"
                    + (" (staged-like)" if staged else " (the path is up; throughput collapses)"),
                    subject=pair_label(a, b),
                )
            )
    return out


def _fallback_findings(ctx: Context, v: _Verdicts, mode: str) -> list[Finding]:
    findings: list[Finding] = []
    if v.nv_unused:
        findings.append(
            Finding(
                "fail",
                f"NVLink not used: {_list(v.nv_unused)} measured below "
                f"{config.NVLINK_AT_PCIE_RATE_GBPS:.0f} GB/s (PCIe rates) although the topology "
                "shows NVLink",
                subjects=sorted({_unordered(x) for x in v.nv_unused}),
                evidence=[e for e in v.evidence if "over NV" in e.label],
                remediation=[
                    "Check the links (`nvidia-smi nvlink -s`, nvlink.state), the fabric manager on "
                    "NVSwitch systems (nvlink.fabric) and that `NCCL_P2P_DISABLE`/"
                    "`NCCL_P2P_LEVEL` are not set (env.nccl); then re-measure.",
                ],
            )
        )
    if v.nv_expected:
        findings.append(
            Finding(
                "warn",
                f"NVLink not used, it seems: {_list(v.nv_expected)} measured below "
                f"{config.NVLINK_AT_PCIE_RATE_GBPS:.0f} GB/s (PCIe rates) between "
                f"{v.nv_board} GPUs, which every board made for them joins by NVLink (the "
                "topology is not in the capture to confirm it)",
                subjects=sorted({_unordered(x) for x in v.nv_expected}),
                evidence=[e for e in v.evidence if "path not in the capture" in e.label][:6],
                remediation=[
                    "Paste `nvidia-smi topo -m` and `nvidia-smi nvlink -s` (or run `pcidoc check` "
                    "on the machine): NV# between the pair and links up confirm NVLink. Then "
                    "check the fabric manager on NVSwitch systems (nvlink.fabric), that "
                    "`NCCL_P2P_DISABLE`/`NCCL_P2P_LEVEL` are not set (env.nccl) and, in a VM, "
                    "that the provider passes NVLink through.",
                ],
                confidence="medium",
            )
        )
    if v.nv_slow:
        findings.append(
            Finding(
                "warn",
                f"NVLink P2P below {config.NVLINK_P2P_WARN_FRACTION:.0%} of the link model on "
                f"{_list(v.nv_slow)}",
                subjects=sorted({_unordered(x) for x in v.nv_slow}),
                evidence=[e for e in v.evidence if "NVLink model" in e.label],
                remediation=[
                    "Look for down or erroring links (nvlink.state, nvlink.errors) and for other "
                    "traffic on the GPUs during the test; re-measure with the GPUs idle.",
                ],
                confidence="medium",
            )
        )
    for pairs, sev, what in (
        (v.slower, "fail", "P2P is slower than staging through the host"),
        (v.no_speedup, None, f"P2P under {config.P2P_MIN_SPEEDUP:.1f}× the staged copy"),
    ):
        if not pairs:
            continue
        causes = [e for a, b in pairs for e in static_causes(ctx, a, b)]
        causes = list({(e.label, e.subject, str(e.value)): e for e in causes}.values())
        if sev is None:
            switch = [p for p in pairs if pair_path(ctx, *p).kind in ("switch", "unknown")]
            sev = "warn" if switch else "info"
        sys_only = all(ctx.gpu_link(a, b) == "SYS" for a, b in pairs)
        if sev == "fail" and sys_only:
            sev = "warn"
        arrows = [f"GPU{a}→GPU{b}" for a, b in pairs]
        findings.append(
            Finding(
                sev,  # type: ignore[arg-type]
                f"{what} on {_list(arrows)} ({mode})"
                + (
                    _summarize_causes(causes)
                    or "; no cause visible in the capture (ACS and IOMMU state are read on the "
                    "machine: `sudo pcidoc check --only p2p`)"
                ),
                subjects=sorted({pair_label(a, b) for a, b in pairs}),
                evidence=_direction_evidence(ctx, pairs[:6], "P2P") + causes,
                remediation=_fallback_remediation(ctx, pairs, causes),
                confidence=_weak_or_confirmed(ctx, v, pairs),
            )
        )
    if v.indistinct:
        arrows = [f"GPU{a}→GPU{b}" for a, b in v.indistinct]
        findings.append(
            Finding(
                "warn",
                f"P2P enabled measures the same as staged on {_list(arrows)}: "
                "either peer access is "
                "unavailable (the copy fell back) or the peer path is redirected",
                subjects=sorted({pair_label(a, b) for a, b in v.indistinct}),
                evidence=_direction_evidence(ctx, v.indistinct[:6], "P2P"),
                remediation=[
                    "Check p2p.capability (`nvidia-smi topo -p2p r`) and p2p.acs-iommu; "
                    + NCCL_AB_TEST,
                    *_bar_steps(ctx, v.indistinct, []),
                ],
                confidence="high" if set(v.indistinct) <= v.confirmed else "medium",
            )
        )
    if v.fallback:
        median = _median(v.fallback)
        codes = sorted(
            {
                c
                for p in v.fallback_pairs
                if (c := ctx.p2p_code(*_indices(p))) and c not in ("OK", "U")
            }
        )
        findings.append(
            Finding(
                "info",
                "P2P not available on "
                + (
                    v.fallback_pairs[0]
                    if len(v.fallback_pairs) == 1
                    else f"{len(v.fallback_pairs)} pairs ({_list(v.fallback_pairs)})"
                )
                + f"; copies staged through host memory at {_gbps(median)} GB/s"
                + (" (median)" if len(v.fallback_pairs) > 1 else "")
                + (f", driver code {'/'.join(codes)}" if codes else ""),
                subjects=v.fallback_pairs,
                evidence=[_ev("staged copy (fallback)", median, "GB/s")],
                remediation=[
                    "This is the fallback copy, not a broken peer path: see p2p.capability "
                    "for why peer access is refused."
                ],
            )
        )
    if v.pcie_unjudged:
        findings.append(
            Finding(
                "info",
                "no P2P-disabled or staged baseline was measured: PCIe pairs not judged",
                confidence="low",
                needs=ctx.probe_hint(),
            )
        )
    return findings


def _weak_or_confirmed(ctx: Context, v: _Verdicts, pairs: list[tuple[int, int]]) -> Confidence:
    """High when stronger evidence (latency, bidirectional) confirmed every pair's verdict or
    the drop is severe (slower than staging with a known path); medium on a weak
    unidirectional gain alone or without a topology."""
    if set(pairs) <= v.confirmed:
        return "high"
    if not ctx.has_topology:
        return "medium"
    return "high" if pairs is v.slower else "medium"


def _unordered(arrow: str) -> str:
    a, b = arrow.replace("GPU", "").split("→")
    return pair_label(int(a), int(b))


def _indices(label: str) -> tuple[int, int]:
    a, b = label.replace("GPU", "").split("-")
    return int(a), int(b)


def _fallback_remediation(
    ctx: Context, pairs: list[tuple[int, int]], causes: list[Evidence]
) -> list[str]:
    steps = []
    if any(e.label.startswith("ACS") for e in causes) or any(
        e.label == "IOMMU group type" for e in causes
    ):
        steps.append(
            "Remove the redirect/translation first: see p2p.acs-iommu for the exact "
            "`setpci` and kernel-argument commands."
        )
    steps += _bar_steps(ctx, pairs, causes)
    if any(e.label.startswith("consumer GPU") for e in causes):
        steps.append(
            "Consumer GPUs' peer path is unreliable on some drivers: prefer "
            "`NCCL_P2P_DISABLE=1` (staged copies are faster here) or a driver that "
            "refuses P2P cleanly."
        )
    if any(e.label == "path class" for e in causes):
        steps.append(
            "Peer traffic through the CPU is often slower than staging; NCCL avoids it "
            "by default (leave `NCCL_P2P_LEVEL` unset)."
        )
    steps.append(NCCL_AB_TEST)
    return steps


def _bar_steps(ctx: Context, pairs: list[tuple[int, int]], causes: list[Evidence]) -> list[str]:
    """Resizable BAR / Above 4G Decoding: the fix when BAR1 is known small, the thing to look
    at when the capture does not say how large BAR1 is (peer mappings go through it)."""
    if any(e.label.startswith("small BAR1") for e in causes):
        return [
            "Enable Resizable BAR (and Above 4G Decoding) in the BIOS; BAR1-based peer "
            "mappings need a BAR1 as large as GPU memory."
        ]
    gpus = [ctx.gpu_by_index.get(i) for pair in pairs for i in pair]
    if any(g is not None and g.bar1_total_bytes is None for g in gpus):
        return [
            "BAR1's size is not in this capture: `nvidia-smi -q -d MEMORY` (BAR1 Memory Usage, "
            "Total). A BAR1 far smaller than GPU memory (256 MiB) means Resizable BAR and Above "
            "4G Decoding are off in the BIOS: enable both, since peer mappings go through BAR1."
        ]
    return []


def _outliers(
    ctx: Context, enabled: list[P2PMatrixMeasurement], indices: list[int]
) -> list[Finding]:
    findings: list[Finding] = []
    for group in ("nvlink", "pcie"):
        per_gpu: dict[int, float] = {}
        for g in indices:
            values = []
            for peer in indices:
                if peer == g or is_nvlink(ctx.gpu_link(g, peer)) != (group == "nvlink"):
                    continue
                values += [
                    x for x in (_best(enabled, g, peer), _best(enabled, peer, g)) if x is not None
                ]
            if values:
                per_gpu[g] = _median(values)
        if len(per_gpu) < 3:
            continue
        for g, med in per_gpu.items():
            others = [m for k, m in per_gpu.items() if k != g]
            ref = _median(others)
            if ref > 0 and med < config.P2P_OUTLIER_FRACTION * ref:
                gpu = ctx.gpu_by_index.get(g)
                evidence = [
                    _ev(
                        "P2P row/column median",
                        f"{_gbps(med)} vs peers {_gbps(ref)}",
                        "GB/s",
                        f"GPU{g}",
                    )
                ]
                low = _downtrained(gpu)
                if low:
                    evidence.append(_ev("PCIe link below its maximum", low, subject=f"GPU{g}"))
                elif gpu and gpu.pcie.current_width and gpu.pcie.current_gen:
                    evidence.append(
                        _ev(
                            "PCIe link",
                            link_label(gpu.pcie.current_gen, gpu.pcie.current_width),
                            subject=f"GPU{g}",
                        )
                    )
                findings.append(
                    Finding(
                        "warn",
                        f"{gpu_ref(gpu) if gpu else f'GPU{g}'} is the P2P outlier: its {group} "
                        "peer copies run at "
                        f"{_gbps(med)} GB/s "
                        f"vs {_gbps(ref)} GB/s for the other GPUs (narrow or downtrained link?)"
                        + (f"; its link is at {low}" if low else ""),
                        subjects=[f"GPU{g}"],
                        evidence=evidence,
                        remediation=[
                            f"Check GPU{g}'s link under load (`nvidia-smi -q -d PCIE -i {g}`, "
                            "pcie.link-speed) and its NVLinks (nvlink.state); reseat or move it if "
                            "the link trains below its maximum.",
                        ],
                        confidence="medium",
                    )
                )
    return findings

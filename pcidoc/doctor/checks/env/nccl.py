"""The ``env.nccl`` check."""

from __future__ import annotations

from collections.abc import Callable

from pcidoc.doctor import config
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import joined as _names
from pcidoc.doctor.wording import short_list
from pcidoc.model.facts import Gpu
from pcidoc.model.links import is_nvlink
from pcidoc.model.report import Evidence

# NCCL path levels from nearest to farthest [A] (NCCL env docs, NCCL_P2P_LEVEL).
_LEVELS: tuple[str, ...] = ("LOC", "NVL", "PIX", "PXB", "PHB", "SYS")


_RANK = {level: i for i, level in enumerate(_LEVELS)}


# Legacy integer values of NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL; larger values mean SYS [A]
# (NCCL env docs, "Integer Values (Legacy)").
_LEGACY_LEVELS = {0: "LOC", 1: "PIX", 2: "PXB", 3: "PHB", 4: "SYS"}


_RDMA_PREFIXES = ("mlx", "ib", "bnxt_re", "irdma", "efa", "hfi", "qedr", "rdma")


def _int_flag(value: str | None) -> int | None:
    """How NCCL reads an integer variable: ``None`` when it is not a number."""
    if value is None:
        return None
    text = value.strip()
    for base in (0, 10):  # strtoll(..., 0) semantics, plus "01"-style decimals
        try:
            return int(text, base)
        except ValueError:
            continue
    return None


def _level(value: str | None) -> str | None:
    if value is None:
        return None
    text = value.strip().upper()
    if text in _RANK:
        return text
    number = _int_flag(text)
    if number is None or number < 0:
        return None
    return _LEGACY_LEVELS.get(number, "SYS")


def _pair_level(link: str | None) -> str | None:
    """NCCL path level of a topology class (NODE is a host-bridge path: PHB)."""
    if link is None:
        return None
    if is_nvlink(link):
        return "NVL"
    return {"PIX": "PIX", "PXB": "PXB", "PHB": "PHB", "NODE": "PHB", "SYS": "SYS"}.get(link)


def _default_p2p_level(ctx: Context) -> str:
    amd = (ctx.host.cpu_vendor or "").lower() == "amd"
    if amd and len(ctx.gpus) <= config.NCCL_AMD_P2P_SYS_MAX_GPUS:
        return "SYS"
    return config.NCCL_P2P_DEFAULT_LEVEL


def _rdma_nics(ctx: Context) -> list[str]:
    out = []
    for nic in ctx.nics:
        name = (nic.name or "").lower()
        if nic.kind == "infiniband" or name.startswith(_RDMA_PREFIXES):
            out.append(nic.name or nic.label)
    return out


def _p2p_ok(ctx: Context, a: int, b: int) -> bool | None:
    """Peer access granted for the pair, when the capture says (CUDA's answer, else NVML's)."""
    return ctx.p2p_available(a, b)


# ----------------------------------------------------------------------- visible devices


class _Visible:
    """How CUDA_VISIBLE_DEVICES maps to NVML indices."""

    __slots__ = ("hides_all", "order", "problems")

    def __init__(self, order: list[int] | None, problems: list[str], hides_all: bool = False):
        self.order = order
        """NVML indices in CUDA ordinal order; ``None`` when the entries cannot be mapped."""
        self.problems = problems
        self.hides_all = hides_all


def _visible(ctx: Context, value: str, pci_order: bool) -> _Visible:
    text = value.strip()
    if text == "" or text in ("-1", "none", "NoDevFiles", "void"):
        return _Visible([], [], hides_all=True)
    order: list[int] = []
    problems: list[str] = []
    mappable = True
    tokens = [t.strip() for t in text.split(",")]
    homogeneous = len({g.name for g in ctx.gpus}) <= 1
    for pos, token in enumerate(tokens):
        gpu: Gpu | None = None
        if token.upper().startswith("MIG-"):
            mappable = False
            continue
        if token.upper().startswith("GPU-"):
            matches = [g for g in ctx.gpus if g.uuid and g.uuid.lower().startswith(token.lower())]
            gpu = matches[0] if len(matches) == 1 else None
        elif token.isascii() and token.isdigit():
            ordinal = int(token)
            if ordinal >= len(ctx.gpus) and ctx.gpus:
                gpu = None
            elif pci_order or homogeneous:
                gpu = ctx.gpu_by_index.get(sorted(ctx.gpu_by_index)[ordinal]) if ctx.gpus else None
            else:
                mappable = False
                continue
        if gpu is None:
            rest = tokens[pos + 1 :]
            problems.append(
                f"entry '{token}' matches no GPU: CUDA stops reading the list there"
                + (f", so {', '.join(rest)} are ignored too" if rest else "")
            )
            break
        if gpu.index in order:
            problems.append(f"entry '{token}' repeats GPU{gpu.index}")
            continue
        order.append(gpu.index)
    return _Visible(order if mappable else None, problems)


def _nv_partners(ctx: Context, index: int, among: list[int]) -> set[int]:
    return {j for j in among if j != index and is_nvlink(ctx.gpu_link(index, j))}


def _visible_findings(ctx: Context, env: dict[str, str]) -> tuple[list[Finding], list[int]]:
    """Findings about CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER, and the GPUs NCCL would see."""
    findings: list[Finding] = []
    all_gpus = [g.index for g in ctx.gpus]
    order_value = env.get("CUDA_DEVICE_ORDER")
    pci_order = (order_value or "").strip().upper() == "PCI_BUS_ID"
    mixed = len({g.name for g in ctx.gpus}) > 1
    if not pci_order and mixed:
        findings.append(
            Finding(
                "warn",
                f"CUDA_DEVICE_ORDER is {order_value or 'unset'} on a machine with different GPU "
                "models: CUDA numbers the fastest GPU first, so CUDA device N is not nvidia-smi's "
                "GPU N",
                evidence=[
                    _ev("CUDA_DEVICE_ORDER", order_value),
                    _ev("GPU models", _names(sorted({g.name or "?" for g in ctx.gpus}))),
                ],
                remediation=[
                    "`export CUDA_DEVICE_ORDER=PCI_BUS_ID` so CUDA ordinals follow the PCI bus "
                    "order that nvidia-smi and NVML use.",
                ],
                confidence="high",
            )
        )
    value = env.get("CUDA_VISIBLE_DEVICES")
    if value is None or not ctx.gpus:
        return findings, all_gpus
    visible = _visible(ctx, value, pci_order)
    evidence = [_ev("CUDA_VISIBLE_DEVICES", value)]
    if visible.hides_all:
        findings.append(
            Finding(
                "warn",
                f"CUDA_VISIBLE_DEVICES='{value}' hides every GPU: CUDA programs see none",
                evidence=evidence,
                remediation=[
                    "`unset CUDA_VISIBLE_DEVICES` (or list the GPUs the job should "
                    "use, e.g. `CUDA_VISIBLE_DEVICES=0,1`)."
                ],
                confidence="high",
            )
        )
        return findings, []
    for problem in visible.problems:
        findings.append(
            Finding(
                "warn",
                f"CUDA_VISIBLE_DEVICES='{value}': {problem}",
                evidence=evidence,
                remediation=["List existing GPU indices or UUIDs (`nvidia-smi -L`)."],
                confidence="high",
            )
        )
    if visible.order is None:
        findings.append(
            Finding(
                "info",
                f"CUDA_VISIBLE_DEVICES='{value}' could not be mapped to nvidia-smi indices "
                "(MIG instances, or ordinals with CUDA_DEVICE_ORDER not PCI_BUS_ID on mixed GPUs)",
                evidence=evidence,
                confidence="low",
            )
        )
        return findings, all_gpus
    order = visible.order
    shown = [f"GPU{i}" for i in order]
    if len(order) < len(all_gpus):
        findings.append(
            Finding(
                "info",
                f"CUDA_VISIBLE_DEVICES='{value}' exposes {len(order)} of {len(all_gpus)} GPUs "
                f"({_names(shown)}) to CUDA programs started from this environment",
                evidence=evidence,
                confidence="high",
            )
        )
    if ctx.has_nvlink_pair and len(order) >= 2:
        hidden_partner = [
            i for i in order if not _nv_partners(ctx, i, order) and _nv_partners(ctx, i, all_gpus)
        ]
        if hidden_partner:
            pairs = [
                f"GPU{i}-GPU{j}"
                for i in hidden_partner
                for j in sorted(_nv_partners(ctx, i, all_gpus))
            ]
            findings.append(
                Finding(
                    "warn",
                    f"CUDA_VISIBLE_DEVICES='{value}' splits NVLink pairs: "
                    f"{_names([f'GPU{i}' for i in hidden_partner])} lose their NVLink partner "
                    f"({_names(pairs)}) and talk to the chosen GPUs over PCIe",
                    subjects=[f"GPU{i}" for i in hidden_partner],
                    evidence=evidence,
                    remediation=[
                        "Pick GPUs that are NV# to each other in `nvidia-smi topo -m` "
                        "(for example whole NVLink pairs)."
                    ],
                    confidence="medium",
                )
            )
        split = []
        for k in range(0, len(order) - 1, 2):
            a, b = order[k], order[k + 1]
            if (
                not is_nvlink(ctx.gpu_link(a, b))
                and _nv_partners(ctx, a, order)
                and _nv_partners(ctx, b, order)
            ):
                split.append((k, a, b))
        if split:
            text = _names([f"ordinals {k},{k + 1} = GPU{a},GPU{b}" for k, a, b in split])
            findings.append(
                Finding(
                    "warn",
                    f"CUDA_VISIBLE_DEVICES='{value}' orders GPUs so that neighbouring CUDA "
                    f"ordinals are not NVLink partners ({text}): groups built from consecutive "
                    "ranks (tensor parallel pairs) would cross PCIe",
                    subjects=[f"GPU{a}-GPU{b}" for _, a, b in split],
                    evidence=evidence,
                    remediation=[
                        "List NVLink partners next to each other in "
                        "CUDA_VISIBLE_DEVICES (see `nvidia-smi topo -m`)."
                    ],
                    confidence="medium",
                )
            )
    return findings, order


# ----------------------------------------------------------------------------- NCCL P2P


def _p2p_effect(
    ctx: Context, gpus: list[int], level: str
) -> tuple[list[str], list[str], list[str], bool]:
    """Pairs whose P2P a level removes (NVLink, PCIe) or adds through the CPU; topology known?"""
    default = _default_p2p_level(ctx)
    lost_nv: list[str] = []
    lost_pcie: list[str] = []
    gained: list[str] = []
    known = False
    for pos, a in enumerate(gpus):
        for b in gpus[pos + 1 :]:
            pair = _pair_level(ctx.gpu_link(a, b))
            if pair is None:
                continue
            known = True
            name = f"GPU{a}-GPU{b}"
            by_default = _RANK[pair] <= _RANK[default]
            now = _RANK[pair] <= _RANK[level]
            if by_default and not now:
                if pair == "NVL":
                    lost_nv.append(name)
                elif _p2p_ok(ctx, a, b) is not False:
                    lost_pcie.append(name)
            elif now and not by_default and _p2p_ok(ctx, a, b) is not False:
                gained.append(name)
    return lost_nv, lost_pcie, gained, known


def _p2p_findings(ctx: Context, env: dict[str, str], gpus: list[int]) -> list[Finding]:
    findings: list[Finding] = []
    disable = env.get("NCCL_P2P_DISABLE")
    level_value = env.get("NCCL_P2P_LEVEL")
    fix_disable = [
        "`unset NCCL_P2P_DISABLE` and compare with `all_reduce_perf -b 8 -e 1G -f 2 -g "
        f"{max(len(gpus), 2)}` (nccl-tests).",
        "If the job hangs or corrupts data without it, fix the cause instead (ACS/IOMMU: see "
        "`pcidoc check --only p2p`); in a VM P2P needs hypervisor support.",
    ]
    if disable is not None:
        flag = _int_flag(disable)
        if flag is None:
            findings.append(
                Finding(
                    "info",
                    f"NCCL_P2P_DISABLE='{disable}' is not a number: NCCL ignores it and keeps "
                    "P2P on",
                    evidence=[_ev("NCCL_P2P_DISABLE", disable)],
                    remediation=["Use `NCCL_P2P_DISABLE=1` to disable P2P, or unset it."],
                    confidence="medium",
                )
            )
        elif flag:
            findings.append(
                _level_finding(ctx, gpus, "LOC", f"NCCL_P2P_DISABLE={disable}", fix_disable)
            )
    if level_value is not None:
        level = _level(level_value)
        fix = [
            "`unset NCCL_P2P_LEVEL` to let NCCL choose (P2P up to PXB, plus NVLink), then "
            "compare the bandwidth with nccl-tests.",
        ]
        if level is None:
            findings.append(
                Finding(
                    "warn",
                    f"NCCL_P2P_LEVEL='{level_value}' is not a level NCCL knows "
                    f"({', '.join(_LEVELS)})",
                    evidence=[_ev("NCCL_P2P_LEVEL", level_value)],
                    remediation=fix,
                    confidence="medium",
                )
            )
        else:
            findings.append(_level_finding(ctx, gpus, level, f"NCCL_P2P_LEVEL={level_value}", fix))
    return findings


def _level_finding(
    ctx: Context, gpus: list[int], level: str, setting: str, fix: list[str]
) -> Finding:
    lost_nv, lost_pcie, gained, known = _p2p_effect(ctx, gpus, level)
    evidence = [
        _ev("setting", setting),
        _ev("NCCL default P2P level here", _default_p2p_level(ctx)),
        _ev("NVLink pairs losing P2P", len(lost_nv), "pairs"),
        _ev("PCIe pairs losing P2P", len(lost_pcie), "pairs"),
    ]
    if not known:
        return Finding(
            "warn",
            f"{setting} limits NCCL's P2P transport (level {level}); the topology is not in the "
            "capture, so the pairs it affects are unknown",
            evidence=evidence,
            remediation=fix,
            confidence="medium",
        )
    if lost_nv:
        return Finding(
            "fail",
            f"{setting} turns off P2P over NVLink for {len(lost_nv)} GPU pair(s) "
            f"({short_list(lost_nv)}): NCCL copies through "
            "host memory (SHM) instead, at a small fraction of NVLink bandwidth",
            subjects=lost_nv,
            evidence=evidence,
            remediation=fix,
            confidence="high",
        )
    if lost_pcie:
        return Finding(
            "warn",
            f"{setting} turns off PCIe P2P for {len(lost_pcie)} pair(s) behind PCIe switches "
            f"({short_list(lost_pcie)}): copies are "
            "staged through host memory",
            subjects=lost_pcie,
            evidence=evidence,
            remediation=fix,
            confidence="medium",
        )
    if gained:
        return Finding(
            "info",
            f"{setting} lets NCCL use P2P through the CPU for {len(gained)} pair(s) "
            f"({short_list(gained)}); CPUs route peer "
            "traffic poorly, so measure it against the default",
            subjects=gained,
            evidence=evidence,
            remediation=[
                "Compare with and without it using nccl-tests; keep it only if it is "
                "faster and stable."
            ],
            confidence="medium",
        )
    return Finding(
        "info",
        f"{setting} has no effect on this topology (no pair would use P2P by default anyway)",
        evidence=evidence,
        confidence="medium",
    )


def _other_nccl_findings(ctx: Context, env: dict[str, str], gpus: list[int]) -> list[Finding]:
    findings: list[Finding] = []
    rdma = _rdma_nics(ctx)

    shm = _int_flag(env.get("NCCL_SHM_DISABLE"))
    if shm:
        no_p2p = [
            f"GPU{a}-GPU{b}"
            for pos, a in enumerate(gpus)
            for b in gpus[pos + 1 :]
            if (lvl := _pair_level(ctx.gpu_link(a, b))) is None
            or _RANK[lvl] > _RANK[_default_p2p_level(ctx)]
            or _p2p_ok(ctx, a, b) is False
        ]
        findings.append(
            Finding(
                "warn" if no_p2p else "info",
                "NCCL_SHM_DISABLE=1: GPU pairs without P2P "
                + (f"({short_list(no_p2p)}) " if no_p2p else "")
                + "fall back to the network transport instead of host shared memory"
                + ("" if no_p2p else "; every pair here uses P2P, so it has no effect now"),
                subjects=no_p2p,
                evidence=[_ev("NCCL_SHM_DISABLE", env["NCCL_SHM_DISABLE"])],
                remediation=[
                    "`unset NCCL_SHM_DISABLE`; in containers give NCCL enough shared "
                    "memory instead (`--shm-size=1g` or `--ipc=host`)."
                ],
                confidence="medium",
            )
        )

    ib = _int_flag(env.get("NCCL_IB_DISABLE"))
    if ib:
        findings.append(
            Finding(
                "warn" if rdma else "info",
                "NCCL_IB_DISABLE=1: multi-node traffic uses TCP sockets"
                + (
                    f" although RDMA NICs are present ({short_list(rdma)})"
                    if rdma
                    else "; no RDMA NIC was seen, so nothing is lost"
                ),
                subjects=rdma,
                evidence=[
                    _ev("NCCL_IB_DISABLE", env["NCCL_IB_DISABLE"]),
                    _ev("RDMA NICs", len(rdma), "NICs"),
                ],
                remediation=["`unset NCCL_IB_DISABLE` so NCCL uses InfiniBand/RoCE."]
                if rdma
                else [],
                confidence="high" if rdma else "medium",
            )
        )

    gdr = env.get("NCCL_NET_GDR_LEVEL") or env.get("NCCL_IB_GDR_LEVEL")
    if gdr is not None:
        level = _level(gdr)
        name = "NCCL_NET_GDR_LEVEL" if "NCCL_NET_GDR_LEVEL" in env else "NCCL_IB_GDR_LEVEL"
        if level == "LOC":
            findings.append(
                Finding(
                    "warn" if rdma else "info",
                    f"{name}={gdr} turns GPUDirect RDMA off: inter-node transfers are staged "
                    "through host memory"
                    + ("" if rdma else " (no RDMA NIC was seen, so nothing is lost here)"),
                    evidence=[_ev(name, gdr), _ev("RDMA NICs", len(rdma), "NICs")],
                    remediation=[
                        f"`unset {name}`; it is often left over from debugging an ACS problem "
                        "(fix ACS instead: `pcidoc check --only p2p.acs-iommu`).",
                    ],
                    confidence="high" if rdma else "medium",
                )
            )
        elif level is not None and _RANK[level] > _RANK[config.NCCL_NET_GDR_DEFAULT_LEVEL]:
            findings.append(
                Finding(
                    "info",
                    f"{name}={gdr} allows GPUDirect RDMA through the CPU ({level}); it can be "
                    "slower than staging, so measure it",
                    evidence=[_ev(name, gdr)],
                    confidence="medium",
                )
            )

    findings += _forced_choices(env, lambda name: _ev(name, env[name]))

    if _int_flag(env.get("NCCL_IGNORE_CPU_AFFINITY")):
        findings.append(
            Finding(
                "info",
                "NCCL_IGNORE_CPU_AFFINITY=1: NCCL ignores the job's CPU binding and uses the "
                "GPU's local CPUs; good when jobs are not bound, wrong when the binding was "
                "deliberate (for example a cgroup cpuset)",
                evidence=[_ev("NCCL_IGNORE_CPU_AFFINITY", env["NCCL_IGNORE_CPU_AFFINITY"])],
                remediation=[
                    "Prefer binding each rank to its GPU's NUMA node "
                    "(`numactl --cpunodebind=N --membind=N`) and unset it."
                ],
                confidence="medium",
            )
        )

    topo_file = env.get("NCCL_TOPO_FILE")
    if topo_file is not None:
        problem = ctx.host.why("environment.NCCL_TOPO_FILE")
        if problem:
            findings.append(
                Finding(
                    "warn",
                    f"NCCL_TOPO_FILE={topo_file}: {problem}; NCCL cannot load it",
                    evidence=[_ev("NCCL_TOPO_FILE", topo_file)],
                    remediation=[
                        "Point it at an existing XML topology (dump one with "
                        "`NCCL_TOPO_DUMP_FILE=/tmp/topo.xml` on a good run) or unset "
                        "it."
                    ],
                    confidence="high",
                )
            )
        else:
            findings.append(
                Finding(
                    "info",
                    f"NCCL_TOPO_FILE={topo_file}: NCCL reads this topology file first; it must "
                    "describe this machine" + (" (the right thing in a VM)" if ctx.is_vm else ""),
                    evidence=[_ev("NCCL_TOPO_FILE", topo_file)],
                    confidence="low",
                )
            )

    debug = (env.get("NCCL_DEBUG") or "").strip().upper()
    if debug == "TRACE":
        findings.append(
            Finding(
                "warn",
                "NCCL_DEBUG=TRACE logs every call: it slows collectives down and floods logs",
                evidence=[_ev("NCCL_DEBUG", env["NCCL_DEBUG"])],
                remediation=["Use `NCCL_DEBUG=INFO` (or WARN) for normal runs."],
                confidence="medium",
            )
        )

    nvls = env.get("NCCL_NVLS_ENABLE")
    if (
        nvls is not None
        and _int_flag(nvls) == 0
        and any(link.remote_type == "switch" for g in ctx.gpus for link in g.nvlinks)
    ):
        findings.append(
            Finding(
                "info",
                "NCCL_NVLS_ENABLE=0 on an NVSwitch system: NVLink SHARP offload is off, so "
                "all-reduce runs as ring/tree at lower bus bandwidth where NVLS is supported",
                evidence=[_ev("NCCL_NVLS_ENABLE", nvls)],
                remediation=["`unset NCCL_NVLS_ENABLE` unless it was disabled on purpose."],
                confidence="medium",
            )
        )
    return findings


_FORCED = (("NCCL_ALGO", "algorithm"), ("NCCL_PROTO", "protocol"))
"""Settings that take a choice away from NCCL whatever the machine: judged without its facts."""


def _forced_choices(env: dict[str, str], evidence: Callable[[str], Evidence]) -> list[Finding]:
    return [
        Finding(
            "warn",
            f"{name}={env[name]} forces NCCL's {what}: it can no longer pick the best "
            "one per message size and topology (e.g. NVLS or LL128 may be excluded)",
            evidence=[evidence(name)],
            remediation=[f"`unset {name}` outside of deliberate benchmarks."],
            confidence="medium",
        )
        for name, what in _FORCED
        if env.get(name)
    ]


def _imported_environment(ctx: Context) -> list[Finding]:
    """An import: the job's environment was not captured, but an NCCL log may show some of
    its settings (``NCCL_X set by environment to Y``). Those that force a choice whatever the
    machine (:data:`_FORCED`) are judged, quoting the log; the others are named and left to the
    checks that judge what NCCL did with them, since an import rarely carries the NIC and GPU
    facts this check weighs them against."""
    from pcidoc.doctor.evidence import nccl_logs as logs
    from pcidoc.doctor.evidence import quote

    shown: dict[str, str] = {}
    quotes: dict[str, Evidence] = {}
    for log in logs(ctx):
        for name, value in log.env.items():
            if name not in shown:
                shown[name] = value
                quotes[name] = quote(log.env_quotes.get(name))
    needs = "run `pcidoc check --only env.nccl` in the job's environment on the machine"
    if not shown:
        return [
            Finding(
                "skip",
                "environment not captured (imported outputs carry no NCCL/CUDA variables)",
                needs=needs,
            )
        ]
    findings = _forced_choices(shown, quotes.__getitem__)
    rest = [name for name in shown if name not in dict(_FORCED)]
    if not rest:
        return findings
    settings = _names([f"{name}={shown[name]}" for name in rest])
    findings.append(
        Finding(
            "info" if findings else "skip",
            f"the job's environment was not captured; its NCCL log shows {settings} "
            "(nccl.network, nccl.transport and nccl.env-ignored judge what NCCL did with them)",
            evidence=[quotes[name] for name in rest],
            needs=None if findings else needs,
        )
    )
    return findings


@check("env.nccl")
def env_nccl(ctx: Context) -> list[Finding]:
    """Find NCCL_*/CUDA_* settings that defeat this machine's topology.

    Args:
        ctx: The machine.

    Returns:
        One finding per harmful or notable setting, a pass when nothing is set, a skip when the
        environment was not captured.
    """
    env = dict(ctx.host.environment)
    if not env and ctx.capture.origin.kind == "import":
        return _imported_environment(ctx)
    findings, visible = _visible_findings(ctx, env)
    if visible or not ctx.gpus:  # with every GPU hidden there is no pair to judge
        findings += _p2p_findings(ctx, env, visible)
    findings += _other_nccl_findings(ctx, env, visible)
    relevant = sorted(k for k in env if k.startswith(("NCCL_", "CUDA_")))
    if not any(f.severity in ("warn", "fail") for f in findings):
        findings.append(
            Finding(
                "pass",
                (
                    f"no NCCL/CUDA setting here defeats the topology (set: {_names(relevant)})"
                    if relevant
                    else "no NCCL_* or CUDA_VISIBLE_DEVICES/CUDA_DEVICE_ORDER variables set in "
                    "the environment pcidoc ran in"
                )
                + "; a job launcher may set its own",
                evidence=[_ev(k, env[k]) for k in relevant],
                confidence="medium",
            )
        )
    return findings

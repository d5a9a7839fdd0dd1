"""``nccl.transport``: between GPUs of one node NCCL uses P2P (``P2P/IPC``, ``P2P/CUMEM``,
``P2P/direct pointer``) when CUDA grants peer access and the path is within NCCL's P2P level;
otherwise SHM (staged through host memory). SHM after ``P2P is disabled between connected
GPUs`` / ``Could not enable P2P`` means CUDA refused peer access: a VM that does not expose it,
a consumer GPU's driver policy, or an IOMMU/ACS setting. SHM without such a line is NCCL's own
choice (a path across the CPU interconnect, ``NCCL_P2P_LEVEL``/``NCCL_P2P_DISABLE``).
"""

from __future__ import annotations

from pcidoc.doctor.checks.nccl._shared import (
    evidence,
    gpu_by_bus,
    gpu_names,
    is_consumer,
    logs,
    quote,
)
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, bare_skip, check
from pcidoc.doctor.signatures import signature_findings
from pcidoc.model.evidence import NcclConnection, NcclLog
from pcidoc.model.links import is_nvlink


def _refusal_kind(log: NcclLog) -> str | None:
    texts = " ".join(q.quote or "" for q in log.p2p_refused)
    if "disabled between connected GPUs" in texts:
        return "disabled"
    if "Could not enable P2P" in texts or "peer access is not supported" in texts:
        return "enable"
    return None


def _virtual_bus(log: NcclLog) -> bool:
    """Hyper-V style bus ids (a PCI domain per device, bus 00): the GPUs are in a VM."""
    buses = [r.bus_id for r in log.ranks if r.bus_id]
    return bool(buses) and all(b[:4] != "0000" and b[5:7] == "00" for b in buses)


def _why_refused(ctx: Context, log: NcclLog) -> tuple[str, list[str], str]:
    """(cause, remediation, confidence) of a CUDA P2P refusal."""
    names = gpu_names(ctx)
    if ctx.is_vm or _virtual_bus(log):
        return (
            "the GPUs are in a virtual machine whose hypervisor does not expose GPU peer-to-peer",
            [
                "Nothing to fix inside the VM: choose an instance/VM size that exposes NVLink or "
                "P2P between its GPUs, or accept SHM (intra-node traffic then goes through host "
                "memory).",
                "Silence the message with `NCCL_IGNORE_DISABLED_P2P=1` once you accept it.",
            ],
            "medium",
        )
    if names and all(is_consumer(n) for n in names):
        return (
            f"the GPUs are consumer models ({names[0]}) whose driver does not allow P2P "
            "between them",
            [
                "This is the driver's policy for GeForce cards, not an NCCL fault: expect SHM "
                "between them, or use data-center/workstation GPUs for P2P.",
            ],
            "medium",
        )
    acs = [d for d in evidence(ctx).lspci if d.acs_redirect]
    if acs:
        return (
            f"lspci shows ACS redirecting peer traffic on {len(acs)} port(s), which sends P2P "
            "up to the root complex",
            [
                "Disable ACS redirect on the bridges between the GPUs (BIOS, or "
                "`setpci -s <bridge> ECAP_ACS+6.w=0000` at boot) on a bare-metal machine; see "
                "nccl.acs-redirect.",
            ],
            "medium",
        )
    return (
        "the usual causes are the IOMMU translating DMA, ACS redirecting peer traffic on the "
        "PCIe path, a VM, or a consumer GPU",
        [
            "Check ACS and IOMMU on the path between the GPUs: `sudo lspci -vvv | grep ACSCtl` "
            "(any `ReqRedir+`/`CmpltRedir+` on a bridge between them), and boot with "
            "`iommu=pt` (or disable VT-d/AMD-Vi in the BIOS) on a bare-metal machine.",
            "Run `pcidoc check --only p2p.acs-iommu` on the machine to see which bridge.",
        ],
        "low",
    )


def _pair_link(ctx: Context, log: NcclLog, conn: NcclConnection) -> str | None:
    """Topology class of the GPU pair of a connection, when the bus ids are known."""
    by_rank = {(r.host, r.rank): r.bus_id for r in log.ranks}
    src = by_rank.get((conn.host, conn.src_rank))
    dst = by_rank.get((conn.host, conn.dst_rank))
    if conn.src_dev and conn.dst_dev and len(conn.src_dev) >= 4:  # 2.4-2.7: bus ids printed
        from pcidoc.model.busid import bus_from_nccl

        src, dst = bus_from_nccl(conn.src_dev), bus_from_nccl(conn.dst_dev)
    a, b = gpu_by_bus(ctx, src), gpu_by_bus(ctx, dst)
    if a is None or b is None:
        return None
    return ctx.gpu_link(a.index, b.index)


@check("nccl.transport")
def transport(ctx: Context) -> list[Finding]:
    """SHM where P2P should work, and why."""
    findings: list[Finding] = []
    for log in logs(ctx):
        local = [c for c in log.connections if c.transport not in ("NET", "COLLNET")]
        shm = [c for c in local if c.transport == "SHM"]
        refused = _refusal_kind(log)
        if refused:
            cause, fix, confidence = _why_refused(ctx, log)
            what = (
                "NCCL's topology allows P2P between these GPUs but CUDA refused it"
                if refused == "disabled"
                else "CUDA could not enable peer access between GPUs"
            )
            quoted = [quote(q.quote) for q in log.p2p_refused[:3]]
            quoted += [quote(c.quote, "fallback") for c in shm[:2]]
            findings.append(
                Finding(
                    "warn",
                    f"{what}; intra-node traffic goes through host memory (SHM) instead: {cause}",
                    evidence=quoted,
                    remediation=fix,
                    confidence=confidence,  # type: ignore[arg-type]
                )
            )
            continue
        if shm:
            links = [_pair_link(ctx, log, c) for c in shm]
            close = [
                (c, link)
                for c, link in zip(shm, links, strict=True)
                if link and (is_nvlink(link) or link in ("PIX", "PXB"))
            ]
            if close:
                conn, link = close[0]
                findings.append(
                    Finding(
                        "warn",
                        f"NCCL used SHM between GPUs joined by {link}, where P2P should work",
                        evidence=[quote(conn.quote), quote(link, "topology class")],
                        remediation=[
                            "Look for `NCCL_P2P_DISABLE`/`NCCL_P2P_LEVEL` in the job's "
                            "environment, and for ACS/IOMMU on the path "
                            "(`pcidoc check --only p2p.acs-iommu`).",
                        ],
                        confidence="medium",
                    )
                )
                continue
            env = {k: v for k, v in log.env.items() if k in ("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL")}
            reason = (
                f"set by the environment ({', '.join(f'{k}={v}' for k, v in env.items())})"
                if env
                else "NCCL's own choice when a pair's path crosses the CPU interconnect (it does "
                "not use P2P across sockets by default) or is beyond NCCL_P2P_LEVEL"
            )
            findings.append(
                Finding(
                    "info",
                    f"NCCL used SHM for {len(shm)} intra-node connection(s) without a P2P "
                    f"refusal: {reason}",
                    evidence=[quote(c.quote) for c in shm[:3]],
                    remediation=[
                        "Expected across sockets. If these GPUs share a PCIe switch or NVLink, "
                        "import `nvidia-smi topo -m` with the log to have the pair judged.",
                    ],
                    confidence="low",
                )
            )
            continue
        p2p = [c for c in local if c.transport == "P2P"]
        if p2p:
            kinds = sorted({c.detail for c in p2p})
            findings.append(
                Finding(
                    "pass",
                    f"NCCL used P2P between GPUs of a node ({', '.join(kinds[:3])})",
                    evidence=[quote(p2p[0].quote)],
                )
            )
    findings += signature_findings(ctx, "nccl.transport")
    if not findings:
        return [bare_skip("nccl.transport")]
    return findings

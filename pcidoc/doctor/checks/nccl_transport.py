"""``nccl.transport`` and ``nccl.network``: the transports NCCL's own log says it chose, judged
against what the machine allows.

* ``nccl.transport``: between GPUs of one node NCCL uses P2P (``P2P/IPC``, ``P2P/CUMEM``,
  ``P2P/direct pointer``) when CUDA grants peer access and the path is within NCCL's P2P level;
  otherwise SHM (staged through host memory). SHM after ``P2P is disabled between connected
  GPUs`` / ``Could not enable P2P`` means CUDA refused peer access: a VM that does not expose it,
  a consumer GPU's driver policy, or an IOMMU/ACS setting. SHM without such a line is NCCL's own
  choice (a path across the CPU interconnect, ``NCCL_P2P_LEVEL``/``NCCL_P2P_DISABLE``).
* ``nccl.network``: between nodes, ``NET/Socket`` where an InfiniBand/RoCE NIC exists (an RDMA
  device NCCL could not open, an IPoIB bootstrap interface), GPUDirect RDMA refused for an HCA,
  and ``NET/IB`` channels without ``/GDRDMA`` (staged through host memory).
"""

from __future__ import annotations

from pcidoc.doctor.checks.nccl_common import (
    RDMA_PREFIXES,
    evidence,
    gpu_by_bus,
    gpu_names,
    is_consumer,
    logs,
    quote,
)
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.model.evidence import NcclConnection, NcclLog
from pcidoc.model.links import is_nvlink

_NO_LOG = "import an NCCL_DEBUG=INFO log of the job (`pcidoc import nccl.log`)"


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
        from pcidoc.collect.importers.nccl_log import bus_from_nccl

        src, dst = bus_from_nccl(conn.src_dev), bus_from_nccl(conn.dst_dev)
    a, b = gpu_by_bus(ctx, src), gpu_by_bus(ctx, dst)
    if a is None or b is None:
        return None
    return ctx.gpu_link(a.index, b.index)


@check("nccl.transport", "NCCL transport between GPUs of a node")
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
    if not findings:
        return [
            Finding("skip", "no intra-node NCCL connection line in the evidence", needs=_NO_LOG)
        ]
    return findings


def _socket(log: NcclLog) -> bool:
    if (log.network or "").lower() == "socket":
        return True
    return any(c.network and c.network.lower() == "socket" for c in log.connections)


def _near_nics(ctx: Context) -> list[tuple[str, str, str]]:
    """(GPU, class, NIC) for RDMA NICs at PIX/PXB from a GPU in the topology."""
    out = []
    for nic in ctx.nics:
        name = nic.name or ""
        if not name.lower().startswith(RDMA_PREFIXES):
            continue
        for gpu in ctx.gpus:
            cls = ctx.link(gpu.label, nic.label)
            if cls in ("PIX", "PXB"):
                out.append((gpu.label, cls, name))
                break
    return out


@check("nccl.network", "NCCL network between nodes (IB/RoCE, sockets, GPUDirect RDMA)")
def network(ctx: Context) -> list[Finding]:
    """Socket where RDMA exists; GPUDirect RDMA disabled or unused."""
    findings: list[Finding] = []
    for log in logs(ctx):
        net = [c for c in log.connections if c.transport in ("NET", "COLLNET")]
        if _socket(log):
            signs = [quote(q.quote, "RDMA device unusable") for q in log.ib_unusable[:2]]
            ipoib = (log.bootstrap_if or "").startswith(("ib", "ibp", "ibs"))
            if ipoib:
                signs.append(quote(log.bootstrap_if, "bootstrap interface (IPoIB)"))
            listed = [
                n.name for n in ctx.nics if n.name and n.name.lower().startswith(RDMA_PREFIXES)
            ]
            if listed:
                signs.append(quote(", ".join(listed[:4]), "RDMA NICs in the topology"))
            used = [quote(c.quote) for c in net if (c.network or "").lower() == "socket"][:1]
            used += [quote(q.quote) for q in log.networks[-1:]]
            disabled = log.env.get("NCCL_IB_DISABLE", "").strip() not in ("", "0")
            opened = any(
                "Unable to open" in (q.quote or "") or "ibv_open" in (q.quote or "")
                for q in log.ib_unusable
            )
            if (opened or ipoib or listed) and not disabled:
                findings.append(
                    Finding(
                        "warn",
                        "NCCL fell back to TCP sockets although the node has an InfiniBand/"
                        "RoCE device it could not use",
                        evidence=used + signs,
                        remediation=[
                            "In a container: pass the RDMA devices and rights "
                            "(`--device=/dev/infiniband`, `--cap-add=IPC_LOCK`, "
                            "`--ulimit memlock=-1`, host networking for RoCE), and install "
                            "rdma-core/libibverbs in the image.",
                            "Check the HCAs from where the job runs: `ibv_devinfo` must list "
                            "them PORT_ACTIVE; a network plugin (HPC-X IBext) must match the "
                            "installed libibverbs.",
                        ],
                        confidence="medium",
                    )
                )
            else:
                why = (
                    f"NCCL_IB_DISABLE={log.env['NCCL_IB_DISABLE']}"
                    if disabled
                    else "no usable RDMA device was found"
                )
                findings.append(
                    Finding(
                        "info",
                        f"NCCL uses TCP sockets between nodes ({why}); expect a fraction of an "
                        "RDMA network's bandwidth",
                        evidence=used + signs,
                        remediation=[
                            "If the nodes have InfiniBand/RoCE, make it visible to the job "
                            "(drivers, /dev/infiniband) and unset NCCL_IB_DISABLE.",
                        ],
                        confidence="low",
                    )
                )
        if log.gdr_disabled:
            far = [q for q in log.gdr_disabled if "distance" in (q.quote or "")]
            if far:
                summary = (
                    f"GPUDirect RDMA is off for {len(far)} GPU/NIC pair(s): the NIC is farther "
                    "from the GPU than NCCL_NET_GDR_LEVEL allows, so data is staged through "
                    "host memory"
                )
                fix = [
                    "Use the NIC that shares a PCIe switch with each GPU (NCCL_IB_HCA, or the "
                    "rail layout of `nvidia-smi topo -m`); raising NCCL_NET_GDR_LEVEL past a "
                    "CPU root complex is often slower than staging.",
                ]
            else:
                summary = (
                    f"GPUDirect RDMA is disabled for {len(log.gdr_disabled)} HCA(s): "
                    "inter-node traffic is staged through host memory"
                )
                fix = [
                    "NCCL enables GPUDirect RDMA only when a peer-memory client is "
                    "registered (`ls /sys/kernel/mm/memory_peers/nv_mem*/version`) or "
                    "DMA-BUF works: load `nvidia_peermem` and check `dmesg` for its "
                    "registration with this OFED/kernel, or use the open kernel module "
                    "with `NCCL_DMABUF_ENABLE=1`.",
                ]
            findings.append(
                Finding(
                    "warn",
                    summary,
                    evidence=[quote(q.quote) for q in log.gdr_disabled[:4]],
                    remediation=fix,
                    confidence="high",
                )
            )
        rdma = [c for c in net if (c.network or "").lower() not in ("socket", "")]
        no_gdr = [c for c in rdma if c.gdr is False]
        if rdma and no_gdr and not log.gdr_disabled:
            names = gpu_names(ctx)
            consumer = bool(names) and all(is_consumer(n) for n in names)
            severity = "info" if consumer else "warn"
            near = _near_nics(ctx)
            findings.append(
                Finding(
                    severity,
                    f"{len(no_gdr)} of {len(rdma)} network channel(s) run without GPUDirect "
                    "RDMA (no /GDRDMA): data is staged through host memory"
                    + ("; consumer GPUs do not support it" if consumer else "")
                    + (
                        f"; the topology puts {near[0][1]} {near[0][2]} to {near[0][0]}, close "
                        "enough for it"
                        if near and not consumer
                        else ""
                    ),
                    evidence=[quote(no_gdr[0].quote)]
                    + [quote(f"{g} {c} {n}", "GPU-NIC path") for g, c, n in near[:2]],
                    remediation=[
                        "GPUDirect RDMA needs the NIC close to the GPU (NCCL_NET_GDR_LEVEL, "
                        "PXB by default) and a peer-memory client (`nvidia_peermem`) or "
                        "DMA-BUF; for AWS EFA, a recent aws-ofi-nccl/libfabric with "
                        "`FI_EFA_USE_DEVICE_RDMA=1`.",
                    ],
                    confidence="medium" if near and not consumer else "low",
                )
            )
        elif rdma and all(c.gdr for c in rdma):
            findings.append(
                Finding(
                    "pass",
                    f"NCCL uses {rdma[0].network} with GPUDirect RDMA on all "
                    f"{len(rdma)} network channel(s) shown",
                    evidence=[quote(rdma[0].quote)],
                )
            )
    if not findings:
        return [Finding("skip", "no NCCL network line in the evidence", needs=_NO_LOG)]
    return findings

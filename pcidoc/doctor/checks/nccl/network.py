"""``nccl.network``: between nodes, ``NET/Socket`` where an InfiniBand/RoCE NIC exists (an RDMA
device NCCL could not open, an IPoIB bootstrap interface), GPUDirect RDMA refused for an HCA,
and ``NET/IB`` channels without ``/GDRDMA`` (staged through host memory).
"""

from __future__ import annotations

from pcidoc.doctor.checks.nccl._shared import (
    RDMA_PREFIXES,
    gpu_names,
    is_consumer,
    logs,
    quote,
)
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, bare_skip, check
from pcidoc.doctor.signatures import signature_findings
from pcidoc.doctor.wording import short_list
from pcidoc.model.evidence import NcclLog

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from pcidoc.model.report import Severity


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
            cls = ctx.nic_row(gpu.label).get(nic.label)
            if cls in ("PIX", "PXB"):
                out.append((gpu.label, cls, name))
                break
    return out


_VIRTUAL_IFS = (
    "docker",
    "br-",
    "veth",
    "virbr",
    "cni",
    "flannel",
    "cali",
    "cilium",
    "vxlan",
    "kube-",
    "weave",
    "podman",
    "lxcbr",
    "lxdbr",
    "tun",
    "tap",
)
"""Interface names of container and VM networking: bridges and virtual pairs that reach no
other node. NCCL's default leaves out only ``docker*`` and ``lo*`` (NCCL_SOCKET_IFNAME)."""


def _virtual_interfaces(log: NcclLog) -> list[Finding]:
    """Socket interfaces of container/VM networking in NCCL's ``NET/Socket : Using`` list."""
    names = [n.name for n in log.socket_nics if n.name]
    virtual = [n for n in names if n.startswith(_VIRTUAL_IFS)]
    if not virtual:
        return []
    real = [n for n in names if n not in virtual and not n.startswith("lo")]
    carries = _socket(log) or not log.ib_nics
    hint = f"NCCL_SOCKET_IFNAME={real[0]}" if real else "NCCL_SOCKET_IFNAME=<the node's interface>"
    return [
        Finding(
            "warn" if carries else "info",
            f"NCCL's socket list holds {len(virtual)} container/virtual interface(s) "
            f"({short_list(virtual, 4)})"
            + (f" besides {short_list(real, 3)}" if real else "")
            + (
                ": connections over them reach no other node (hangs, ncclSystemError)"
                if carries
                else "; data goes over the RDMA network, bootstrap may still pick them"
            ),
            evidence=[quote(log.socket_quote, "NET/Socket list")] if log.socket_quote else [],
            remediation=[
                f"Name the interface that reaches the other nodes: `{hint}` (a prefix, or "
                "`^docker,br-,veth,lo` to exclude).",
            ],
            confidence="medium",
        )
    ]


@check("nccl.network")
def network(ctx: Context) -> list[Finding]:
    """Socket where RDMA exists; GPUDirect RDMA disabled or unused."""
    findings: list[Finding] = []
    for log in logs(ctx):
        net = [c for c in log.connections if c.transport in ("NET", "COLLNET")]
        findings += _virtual_interfaces(log)
        if _socket(log):
            signs = [quote(q.quote, "RDMA device unusable") for q in log.ib_unusable[:2]]
            ipoib = (log.bootstrap_if or "").startswith(("ib", "ibp", "ibs"))
            if ipoib:
                signs.append(quote(log.bootstrap_if, "bootstrap interface (IPoIB)"))
            listed = [
                n.name for n in ctx.nics if n.name and n.name.lower().startswith(RDMA_PREFIXES)
            ]
            if listed:
                signs.append(quote(short_list(listed), "RDMA NICs in the topology"))
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
            severity: Severity = "info" if consumer else "warn"
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
    findings += signature_findings(ctx, "nccl.network")
    if not findings:
        return [bare_skip("nccl.network")]
    return findings

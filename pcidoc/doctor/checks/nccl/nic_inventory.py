"""``nccl.nic-inventory``: NIC lists so long (virtual functions, extra ports) that the rail NICs
— the ones next to a GPU — are hard to find, or that the report clipped; and the RDMA ports the
rdma tools show (``ibstat``/``ibv_devinfo``: a port not active, an active port slower than its
peers; ``ibdev2netdev``: which network interfaces are down, and that on an InfiniBand port that
is the IPoIB interface, not the port).
"""

from __future__ import annotations

from pcidoc.doctor.checks.nccl._shared import evidence, quote
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.wording import short_list

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from pcidoc.model.evidence import RdmaPort

_PORT_ADVICE = (
    "Look at the port's cable and switch port (`ibstat`, `iblinkinfo`, `mlxlink -d <dev> -p "
    "<port>`); a port no job uses (an unused second port) is normal: keep it out of "
    "NCCL_IB_HCA."
)


def _joined(ports: tuple[RdmaPort, ...] | list[RdmaPort]) -> dict[tuple[str, int], RdmaPort]:
    """One port per (device, port): the state tools' fields, with ibdev2netdev's interface."""
    out: dict[tuple[str, int], RdmaPort] = {}
    for port in ports:
        key = (port.hca, port.port)
        seen = out.get(key)
        if seen is None:
            out[key] = port.model_copy()
            continue
        for name in ("state", "active", "physical", "rate_gbps", "link_layer", "netdev"):
            if getattr(seen, name) is None:
                setattr(seen, name, getattr(port, name))
        if port.netdev_up is not None:
            seen.netdev_up = port.netdev_up
        if port.active is not None and port.quote:
            seen.quote = port.quote
    return out


def _name(port: RdmaPort) -> str:
    return f"{port.hca} port {port.port}"


def _ipoib(port: RdmaPort) -> bool:
    if port.link_layer:
        return port.link_layer.lower() == "infiniband"
    return (port.netdev or "").startswith("ib")


def _not_active(ports: list[RdmaPort]) -> list[Finding]:
    down = [p for p in ports if p.active is False]
    if not down:
        return []
    ib = [p for p in down if _ipoib(p)]
    shown = [f"{_name(p)} ({', '.join(x for x in (p.state, p.physical) if x)})" for p in down]
    return [
        Finding(
            "warn" if ib else "info",
            f"{len(down)} of {len(ports)} RDMA port(s) not active: {short_list(shown, 6)}"
            + ("" if ib else " (Ethernet or unknown link layer: an unused port is normal)"),
            subjects=[_name(p) for p in down][:8],
            evidence=[quote(p.quote, "rdma port", _name(p)) for p in down[:4]],
            remediation=[_PORT_ADVICE],
            confidence="medium",
        )
    ]


def _slow(ports: list[RdmaPort]) -> list[Finding]:
    findings: list[Finding] = []
    for layer in sorted({p.link_layer or "" for p in ports}):
        rated = [p for p in ports if p.active and p.rate_gbps and (p.link_layer or "") == layer]
        best = max((p.rate_gbps or 0.0 for p in rated), default=0.0)
        slow = [p for p in rated if (p.rate_gbps or 0.0) < best]
        if len(rated) < 2 or not slow:
            continue
        shown = [f"{_name(p)} at {p.rate_gbps:g} Gb/s" for p in slow]
        findings.append(
            Finding(
                "warn",
                f"{short_list(shown, 6)} while {len(rated) - len(slow)} other active port(s) "
                f"run {best:g} Gb/s: a link trained below its peers (cable, speed or width)",
                subjects=[_name(p) for p in slow][:8],
                evidence=[quote(f"Rate: {p.rate_gbps:g}", "ibstat", _name(p)) for p in slow[:4]],
                remediation=[_PORT_ADVICE],
                confidence="medium",
            )
        )
    return findings


def _interfaces(ports: list[RdmaPort]) -> list[Finding]:
    """ibdev2netdev's (Down), for ports whose state no tool showed."""
    unknown = [p for p in ports if p.active is None and p.netdev_up is False]
    ipoib = [p for p in unknown if _ipoib(p)]
    ethernet = [p for p in unknown if not _ipoib(p)]
    findings: list[Finding] = []
    if ipoib:
        findings.append(
            Finding(
                "info",
                f"{len(ipoib)} InfiniBand port(s) show their network interface down "
                f"({short_list([p.netdev or _name(p) for p in ipoib], 4)}): that is the IPoIB "
                "interface, down wherever IPoIB is not set up; the ports' own state is not "
                "in the paste",
                evidence=[quote(p.quote, "ibdev2netdev", _name(p)) for p in ipoib[:2]],
                remediation=[
                    "`ibstat` shows each port's own state (State: Active, Physical "
                    "state: LinkUp) and rate"
                ],
            )
        )
    if ethernet:
        findings.append(
            Finding(
                "info",
                f"{len(ethernet)} Ethernet port(s) of RDMA devices have their interface down "
                f"({short_list([f'{_name(p)} ({p.netdev})' for p in ethernet], 4)}): RoCE cannot "
                "use them; an unused port is normal",
                evidence=[quote(p.quote, "ibdev2netdev", _name(p)) for p in ethernet[:2]],
            )
        )
    return findings


def _port_findings(ctx: Context) -> list[Finding]:
    ports = list(_joined(evidence(ctx).rdma_ports).values())
    if not ports:
        return []
    findings = _not_active(ports) + _slow(ports) + _interfaces(ports)
    if not any(f.severity in ("warn", "fail") for f in findings):
        active = [p for p in ports if p.active]
        rates = sorted({p.rate_gbps for p in active if p.rate_gbps})
        if active:
            findings.append(
                Finding(
                    "pass",
                    f"{len(active)} RDMA port(s) active"
                    + (f" at {short_list([f'{r:g}' for r in rates], 4)} Gb/s" if rates else ""),
                )
            )
    return findings


@check("nccl.nic-inventory")
def nic_inventory(ctx: Context) -> list[Finding]:
    """Dozens of NICs (VFs, extra ports) hiding the rail NICs."""
    ev = evidence(ctx)
    notices = [r.nic_notice for r in ev.env_reports if r.nic_notice]
    nics = ctx.nics
    gpus = ctx.gpus
    findings: list[Finding] = []
    if notices:
        findings.append(
            Finding(
                "info",
                "the report lists only part of the NICs",
                evidence=[quote(notices[0])],
                remediation=["Run `nvidia-smi topo -m` on the node for the full list."],
            )
        )
    if nics and gpus:
        rails = []
        for nic in nics:
            column = ctx.nic_column(nic.label)
            if "PIX" in column or "PXB" in column:
                rails.append(nic.name or nic.label)
        many = len(nics) >= 16 and len(nics) > 2 * len(gpus)
        if many:
            findings.append(
                Finding(
                    "info",
                    f"{len(nics)} NICs for {len(gpus)} GPUs: most are virtual functions or "
                    "ports that are not GPU rails"
                    + (f"; the NICs next to a GPU are {short_list(rails, 8)}" if rails else ""),
                    evidence=[quote(str(len(nics)), "NICs in the topology")],
                    remediation=[
                        "Pin NCCL to the rail NICs (`NCCL_IB_HCA=" + ",".join(rails) + "`)"
                        if rails
                        else "Find the NICs that share a PCIe switch with a GPU "
                        "(`nvidia-smi topo -m`, PIX/PXB) and list them in NCCL_IB_HCA.",
                        "Hide SR-IOV virtual functions from the job if NCCL should not use them.",
                    ],
                    confidence="medium",
                )
            )
        elif not notices:
            findings.append(
                Finding(
                    "pass",
                    f"{len(nics)} NIC(s) for {len(gpus)} GPU(s)"
                    + (f"; rails: {short_list(rails, 8)}" if rails else "")
                    + "; no virtual functions or extra ports hiding the NICs next to the GPUs",
                )
            )
    findings += _port_findings(ctx)
    if not findings:
        return [Finding("skip", "no NIC inventory in the evidence", needs="import topo -m")]
    return findings

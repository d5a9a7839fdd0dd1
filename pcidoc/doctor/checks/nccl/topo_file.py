"""``nccl.topo-file``: an NCCL topology file NCCL rejects or misreads, or that does not match the
machine's GPUs (count, bus ids). On a live machine this judges the file named by
``NCCL_TOPO_FILE``.
"""

from __future__ import annotations

from pcidoc.doctor.checks.nccl._shared import evidence, quote
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, bare_skip, check
from pcidoc.doctor.wording import short_list

_REJECTED = ("has no arch", "has no vendor", "GenuineIntel without")


@check("nccl.topo-file")
def topo_file(ctx: Context) -> list[Finding]:
    """Problems of the NCCL topology file(s) in the evidence."""
    ev = evidence(ctx)
    findings: list[Finding] = []
    if ev.topo_file_error:
        findings.append(
            Finding(
                "warn",
                f"NCCL_TOPO_FILE={ev.topo_file_env} cannot be used: {ev.topo_file_error}",
                evidence=[quote(ev.topo_file_env, "NCCL_TOPO_FILE")],
                remediation=["Point NCCL_TOPO_FILE at a readable NCCL topology XML, or unset it."],
            )
        )
    for topo in ev.nccl_topologies:
        from pcidoc.model.busid import normalize_bus_id  # only with a file to judge

        name = topo.source or "topology file"
        severe = [p for p in topo.problems if any(r in p for r in _REJECTED)]
        minor = [p for p in topo.problems if p not in severe]
        if severe:
            findings.append(
                Finding(
                    "warn",
                    f"{name}: NCCL needs arch and vendor (and on Intel, familyid/modelid) on "
                    f"every <cpu> node; {len(severe)} node(s) lack them",
                    evidence=[quote(p, "problem") for p in severe[:4]],
                    remediation=[
                        'Add `arch="x86_64" vendor="GenuineIntel|AuthenticAMD" familyid=".." '
                        'modelid=".."` to each <cpu> (values from /proc/cpuinfo), or write the '
                        "file with `pcidoc nccl-topo` on the bare-metal machine. NCCL versions "
                        "that do not fill them from the running machine stop with 'Attribute "
                        "arch of node cpu not found'.",
                    ],
                    confidence="medium",
                )
            )
        if minor:
            findings.append(
                Finding(
                    "info",
                    f"{name}: {len(minor)} value(s) NCCL will not read as written",
                    evidence=[quote(p, "problem") for p in minor[:4]],
                    remediation=[
                        "Use NCCL's link_speed strings ('16 GT/s', '32.0 GT/s PCIe'...) and a "
                        "real NUMA id on every <cpu>.",
                    ],
                    confidence="medium",
                )
            )
        file_buses = {
            normalize_bus_id(p.busid)
            for p in topo.pci
            if p.kind == "gpu" and normalize_bus_id(p.busid)
        }
        machine = {g.bus_id for g in ctx.gpus if g.bus_id}
        live = ctx.capture.origin.kind == "live"
        if file_buses and machine and (live or machine != file_buses):
            missing = sorted(file_buses - machine)
            extra = sorted(machine - file_buses)
            if missing or extra:
                findings.append(
                    Finding(
                        "warn",
                        f"{name} does not match the machine's GPUs: "
                        f"{len(file_buses)} in the file, {len(machine)} seen"
                        + (f"; not on this machine: {short_list(missing)}" if missing else "")
                        + (f"; not in the file: {short_list(extra)}" if extra else ""),
                        evidence=[
                            quote(short_list(sorted(file_buses), 8), "GPU bus ids in the file"),
                            quote(short_list(sorted(machine), 8), "GPU bus ids of the machine"),
                        ],
                        remediation=[
                            "A topology file must list this machine's bus ids (a VM of another "
                            "size or generation has others): use the file made for this "
                            "instance type, or regenerate it with `pcidoc nccl-topo`.",
                        ],
                    )
                )
            elif live:
                findings.append(
                    Finding(
                        "pass",
                        f"{name} lists the {len(machine)} GPUs this machine has",
                    )
                )
        if not severe and not minor and not findings:
            findings.append(Finding("pass", f"{name}: every <cpu> node carries what NCCL reads"))
    if not findings:
        return [bare_skip("nccl.topo-file")]
    return findings

"""The ``nvlink.fabric`` check."""

from __future__ import annotations

from pcidoc._lazyre import lazy
from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.checks._common import judged_of, not_applicable
from pcidoc.doctor.checks._common import no_gpu as _no_gpu
from pcidoc.doctor.checks._common import with_gap as _with_gap
from pcidoc.doctor.checks.nvlink._shared import _common_nv, _links_known, _to_switch
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.signatures import signature_findings
from pcidoc.doctor.wording import joined as _names
from pcidoc.model.facts import Gpu
from pcidoc.model.linkmodel import gpu_model_of, nvlinks_of
from pcidoc.model.links import is_nvlink, nvlink_count
from pcidoc.model.report import Evidence, Severity

# =========================================================================== nvlink.fabric

_ZERO_RE = lazy(r"[^0-9a-fA-F]")


def _zero_uuid(value: str | None) -> bool:
    if value is None:
        return False
    digits = _ZERO_RE.sub("", value)
    return not digits or set(digits) == {"0"}


def _fabric_reported(gpu: Gpu) -> bool:
    state = (gpu.fabric.state or "").lower()
    return bool(state) and state != "not_supported"


def _is_mnnvl(ctx: Context) -> bool:
    """Multi-node NVLink (GB200-class): a clique/cluster is reported, or a Grace host's GPUs
    register with an NVLink fabric."""
    for gpu in ctx.gpus:
        if gpu.fabric.cluster_uuid and not _zero_uuid(gpu.fabric.cluster_uuid):
            return True
        if gpu.fabric.clique_id:
            return True
    grace = (
        (ctx.host.cpu_vendor or "").lower() == "arm"
        or "grace" in (ctx.host.cpu_model or "").lower()
        or any(_superchip(g) for g in ctx.gpus)
    )
    return (
        grace
        and any(_fabric_reported(g) for g in ctx.gpus)
        and any(_to_switch(g) for g in ctx.gpus)
    )


_GRACE_GPU = lazy(r"\bG[BH]\d{3}\b")
"""GH200, GB200, GB300...: the GPU of a Grace superchip, named after the pair."""


def _superchip(gpu: Gpu) -> bool:
    """A Grace superchip's GPU (GH200, GB200, GB300): its host is a Grace CPU, whatever the
    capture says of the CPU."""
    model = gpu_model_of(gpu)
    if model is not None:
        return model.form_factor == "superchip"
    return _GRACE_GPU.search((gpu.name or "").upper()) is not None


def _not_nvswitch(ctx: Context) -> Finding:
    """Verdict when no link reaches a switch and no GPU reports a fabric state."""
    bus_ids = {g.bus_id for g in ctx.gpus if g.bus_id}
    up = [link for g in ctx.gpus for link in g.nvlinks if link.state == "up"]
    direct = [
        link
        for link in up
        if link.remote_type in ("gpu", "ibmnpu")
        or (link.remote_type is None and link.remote_bus_id in bus_ids)
    ]
    if up and len(direct) == len(up):
        return not_applicable("no NVSwitch (every NVLink goes GPU-to-GPU)")
    # Without types: a GPU whose links all reach one device is bridged to a GPU; GPUs on an
    # NVSwitch baseboard spread their links over several switches.
    single_remote = []
    for gpu in ctx.gpus:
        remotes = [link.remote_bus_id for link in gpu.nvlinks if link.state == "up"]
        if remotes:
            single_remote.append(
                len(remotes) >= 2 and None not in remotes and len(set(remotes)) == 1
            )
    if single_remote and all(single_remote):
        return not_applicable(
            "each GPU's NVLinks all reach one device (a bridged GPU), not a set of NVSwitches",
            confidence="medium",
        )
    pairs = [link for _, _, link in ctx.gpu_pairs()]
    topo_nv = [link for link in pairs if is_nvlink(link)]
    if not up and not topo_nv:
        if any(_links_known(g) for g in ctx.gpus) or (ctx.has_topology and pairs):
            return not_applicable("no NVLink, so no NVSwitch fabric")
        return Finding(
            "skip",
            "no NVLink or fabric facts in this capture",
            needs="run `pcidoc check` on the machine, or import `nvidia-smi -q` and "
            "`nvidia-smi topo -m`",
        )
    if pairs and len(topo_nv) < len(pairs) and not any(link is None for link in pairs):
        # On an NVSwitch baseboard every GPU pair is NV#; a partial mesh is a direct design.
        return not_applicable(
            "not every GPU pair is NVLink, so this is a direct NVLink design, not an NVSwitch "
            "fabric",
            confidence="medium",
        )
    nv = _common_nv(ctx, ctx.gpus)
    if topo_nv and len(topo_nv) == len(pairs):
        count = "both" if len(ctx.gpus) == 2 else f"all {len(ctx.gpus)}"
        what = f"{count} GPUs are {nv} to each other"
        needed = min(
            sum(nvlink_count(ctx.gpu_link(g.index, o.index)) for o in ctx.gpus if o is not g)
            for g in ctx.gpus
        )
        has, limit = _nvlinks_a_gpu_has(ctx)
        if needed > has:
            return Finding(
                "info",
                f"{what}, which only NVSwitches can wire ({needed} NVLinks per GPU as a direct "
                f"mesh, more than {limit}): an NVSwitch system whose fabric state is not in this "
                "capture",
                evidence=[
                    _ev("NVLink class of the GPU pairs", nv),
                    _ev("NVLinks a direct mesh would need per GPU", needed, "links"),
                ],
                remediation=[
                    "Check the fabric on the machine: `nvidia-smi -q | grep -A8 Fabric` (State "
                    "Completed, Status Success) and `systemctl status nvidia-fabricmanager`.",
                ],
                confidence="medium",
                needs="import `nvidia-smi -q` (Fabric section), or run `pcidoc check` on the "
                "machine",
            )
    elif up:
        what = "NVLinks are up but their far ends (GPU or NVSwitch) are not in the capture"
    else:
        what = f"the topology shows NVLink between GPUs ({nv}) but not every pair is known"
    return Finding(
        "info",
        f"{what}: this may be an NVSwitch system (or a direct NVLink mesh or bridge); its fabric "
        "state is not in this capture",
        evidence=[_ev("NVLink class of the GPU pairs", nv), _ev("NVLinks up", len(up), "links")],
        confidence="low",
        needs="import `nvidia-smi -q` (Fabric section) and `nvidia-smi nvlink -R`, or run "
        "`pcidoc check` on the machine",
    )


def _nvlinks_a_gpu_has(ctx: Context) -> tuple[int, str]:
    """The most NVLinks one of these GPUs has (its model's count: an A100 12, an H100 18; else
    what it reports, else the most any GPU has) and that limit in words."""
    counts = {g.name or "": nvlinks_of(g) for g in ctx.gpus}
    name, has = max(counts.items(), key=lambda item: item[1], default=("", 0))
    known = any(gpu_model_of(g) is not None or g.nvlinks for g in ctx.gpus)
    if not known:
        return has, f"the {has} any GPU has"
    if len(counts) == 1 and name:
        return has, f"the {has} of one {name}"
    return has, f"the {has} of one GPU of this machine"


def _fabric_manager_findings(ctx: Context, kind: str, fm_evidence: list[Evidence]) -> list[Finding]:
    """The Fabric Manager service of a single-node NVSwitch system: stopped or mismatched."""
    fm = ctx.driver.fabric_manager
    findings = []
    if fm.active is False:
        findings.append(
            Finding(
                "fail",
                f"{kind} system but the NVIDIA Fabric Manager is not running: CUDA fails "
                "to start (error 802, system not ready) or P2P over NVSwitch is unavailable",
                evidence=fm_evidence,
                remediation=[
                    "Install the `nvidia-fabricmanager` package of exactly the driver's "
                    f"version ({ctx.driver.driver_version or 'see `nvidia-smi`'}) and start "
                    "it: `sudo systemctl enable --now nvidia-fabricmanager`.",
                    "If it fails, read why: `journalctl -u nvidia-fabricmanager`; on NVLink5 "
                    "(B200-class) systems it also needs the `mlx5_ib` and `ib_umad` modules.",
                ],
                confidence="high",
            )
        )
    if fm.version and ctx.driver.driver_version and fm.version != ctx.driver.driver_version:
        findings.append(
            Finding(
                "fail",
                f"Fabric Manager {fm.version} does not match driver "
                f"{ctx.driver.driver_version}: it refuses to run with another version",
                evidence=fm_evidence,
                remediation=[
                    "Install the `nvidia-fabricmanager` package matching the driver exactly "
                    "(same branch and version) and restart it: `sudo systemctl restart "
                    "nvidia-fabricmanager`.",
                ],
                confidence="high",
            )
        )
    return findings


def _fabric_problem(gpu: Gpu, mnnvl: bool) -> list[tuple[Severity, str, str]]:
    """What is wrong with one GPU's fabric registration: ``(severity, what, detail)`` keys."""
    fab = gpu.fabric
    state = (fab.state or "").lower()
    status = fab.status if (fab.status or "").strip().lower() not in ("", "n/a") else None
    keys: list[tuple[Severity, str, str]] = []
    if state == "completed":
        if status is not None and status.strip().lower() not in ("success", "ok"):
            keys.append(("fail", "status", status))
        elif mnnvl and (fab.clique_id == 0 or _zero_uuid(fab.cluster_uuid)):
            keys.append(("fail", "clique", ""))
    elif state == "in_progress":
        keys.append(("warn", "in_progress", ""))
    elif state:
        keys.append(("fail", "state", state))
    if fab.health:
        keys.append(("fail", "health", ", ".join(fab.health)))
    return keys


_FABRIC_SUMMARY = {
    "status": "{who}: NVLink fabric registration completed with status '{detail}' instead of "
    "success",
    "clique": "{who}: MNNVL fabric completed but without a clique/cluster (clique id 0 or zero "
    "cluster UUID): multi-node NVLink jobs cannot use this node",
    "in_progress": "{who}: NVLink fabric registration still in progress",
    "state": "{who}: NVLink fabric state is '{detail}' (not completed)",
    "health": "{who}: NVLink fabric health reports {detail}",
}


def _fabric_fix(mnnvl: bool) -> str:
    if mnnvl:
        # GB200/GB300 NVL72-class racks: the compute trays run IMEX, the NVLink switch trays
        # run the fabric (NVLink Management: NMX-C holds their fabric manager).
        return (
            "A multi-node NVLink rack's fabric is run by its NVLink switch trays, not by this "
            "node: check every switch tray's state in the rack's NVLink management (NMX-C / "
            "NMX-M: trays up, partitions configured), then IMEX on every compute tray of the "
            "domain (`systemctl status nvidia-imex`, `nvidia-imex-ctl -N`: all nodes of "
            "`/etc/nvidia-imex/nodes_config.cfg` connected); then `nvidia-smi -q | grep -A 8 "
            "Fabric` (State Completed, Status Success, a clique id)."
        )
    return (
        "Check the fabric service: `systemctl status nvidia-fabricmanager` and "
        "`journalctl -u nvidia-fabricmanager`; then `nvidia-smi -q | grep -A 8 Fabric`."
    )


def _registration_findings(fabric: list[Gpu], mnnvl: bool) -> list[Finding]:
    """Per-GPU fabric registration problems, one finding per kind of problem."""
    problems: dict[tuple[Severity, str, str], list[Gpu]] = {}
    for gpu in fabric:
        for key in _fabric_problem(gpu, mnnvl):
            problems.setdefault(key, []).append(gpu)
    findings = []
    for (severity, what, detail), gpus in problems.items():
        labels = [g.label for g in gpus]
        evidence = []
        for g in gpus:
            evidence += [
                _ev("fabric state", g.fabric.state, subject=g.label),
                _ev("fabric status", g.fabric.status, subject=g.label),
            ]
            if mnnvl:
                evidence += [
                    _ev("clique id", g.fabric.clique_id, subject=g.label),
                    _ev("cluster uuid", g.fabric.cluster_uuid, subject=g.label),
                ]
        remediation = [_fabric_fix(mnnvl)]
        if what == "in_progress":
            remediation.insert(
                0, "Re-check in a minute; if it stays in progress, the fabric manager is failing."
            )
        findings.append(
            Finding(
                severity,
                _FABRIC_SUMMARY[what].format(who=_names(labels), detail=detail),
                subjects=labels,
                evidence=evidence,
                remediation=remediation,
                confidence="high",
            )
        )
    return findings


def _fabric_pass(
    ctx: Context, kind: str, fabric: list[Gpu], mnnvl: bool, fm_evidence: list[Evidence]
) -> Finding:
    fm = ctx.driver.fabric_manager
    parts = []
    if fabric:
        parts.append(f"fabric registration completed on {len(fabric)} GPU(s)")
    if fm.active:
        parts.append(f"Fabric Manager active ({fm.version or 'version unknown'})")
    elif mnnvl:
        parts.append("clique/cluster assigned")
    return Finding(
        "pass",
        f"{kind}: "
        + ("; ".join(parts) or "no fabric problem reported")
        + (judged_of(ctx, len(fabric)) if fabric else ""),
        evidence=fm_evidence,
        confidence="high" if fabric or fm.active else "medium",
    )


@check("nvlink.fabric")
def nvlink_fabric(ctx: Context) -> list[Finding]:
    """Judge NVLink fabric registration and the Fabric Manager on NVSwitch systems.

    Args:
        ctx: The machine.

    Returns:
        Failures for an unregistered fabric, bad status/health, a stopped or mismatched Fabric
        Manager, or an MNNVL node without clique/cluster, and for each fabric error line of the
        failure catalogue (Fabric Manager and IMEX logs, CUDA's "system not yet initialized");
        a skip (not applicable) on machines without NVSwitch; a skip when the facts cannot
        tell (left out when a logged line is the evidence).
    """
    findings = _fabric_findings(ctx)
    logged = signature_findings(ctx, "nvlink.fabric")
    if not logged:
        return findings
    return logged + [f for f in findings if f.severity != "skip"]


def _fabric_findings(ctx: Context) -> list[Finding]:
    if not ctx.gpus:
        return [_no_gpu(ctx)]
    switch = [g for g in ctx.gpus if _to_switch(g)]
    fabric = [g for g in ctx.gpus if _fabric_reported(g)]
    fm = ctx.driver.fabric_manager
    if not switch and not fabric:
        return [_not_nvswitch(ctx)]
    mnnvl = _is_mnnvl(ctx)
    kind = "multi-node NVLink (MNNVL)" if mnnvl else "NVSwitch"
    fm_evidence = [
        _ev("fabric manager active", fm.active),
        _ev("fabric manager version", fm.version),
        _ev("driver version", ctx.driver.driver_version),
    ]
    # Fabric Manager service (single-node NVSwitch systems; MNNVL compute trays use IMEX).
    findings = [] if mnnvl else _fabric_manager_findings(ctx, kind, fm_evidence)
    findings += _registration_findings(fabric, mnnvl)
    if not fabric and fm.active is None and not mnnvl:
        unknown_state = [g for g in switch if not _fabric_reported(g)]
        return findings or [
            Finding(
                "skip",
                f"{kind} system, but neither the fabric state nor the Fabric Manager service "
                "state is in this capture",
                subjects=[g.label for g in unknown_state],
                needs="run `pcidoc check --only nvlink.fabric` on the machine (reads "
                "`systemctl is-active nvidia-fabricmanager`), or import `nvidia-smi -q`",
            )
        ]
    if not any(f.severity in ("warn", "fail") for f in findings):
        findings.append(_fabric_pass(ctx, kind, fabric, mnnvl, fm_evidence))
    return _with_gap(ctx, findings)

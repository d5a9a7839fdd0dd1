"""The Topology pane's text: what is wrong, a matrix cell's detail, the P2P paths and ceilings.

A cell of the matrix is a device (the diagonal: its facts and PCIe path) or a pair of GPUs or
a GPU and a NIC (the link class, P2P status, what was measured against the path's ceiling from
:mod:`pcidoc.model.linkmodel`, and where their PCIe paths meet). Its binding to the app's state
is at the end: a matrix not on display is marked stale and redrawn when the pane opens.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from rich.text import Text

from pcidoc.model import linkmodel
from pcidoc.model.capture import Capture
from pcidoc.model.facts import P2P_CAPS, P2P_CODES, Gpu, Nic, PcieHop
from pcidoc.model.links import meaning
from pcidoc.model.measurements import P2PMatrixMeasurement
from pcidoc.model.report import Report
from pcidoc.model.units import format_gbps, link_label
from pcidoc.present._common import MARKS, gpu_name
from pcidoc.present.text import CELL_STYLES, SEVERITY_STYLES
from pcidoc.tui.panes.common import inline, kv

if TYPE_CHECKING:
    from pcidoc.tui.screens.main import MainScreen
    from pcidoc.tui.state import Counters, Displayed
    from pcidoc.tui.widgets.topology_pane import TopologyPane

ROLE_NAMES: dict[str, str] = {
    "root_port": "root port",
    "switch_downstream": "switch down",
    "switch_upstream": "switch up",
    "bridge": "bridge",
    "other": "port",
}


def probe_checks_waiting(report: Report) -> int:
    """Checks that measure (``needs="probe"``) and skipped for want of a measurement; a check
    that does not apply (one GPU, no NVLink) says so without naming a missing input."""
    from pcidoc.doctor.registry import REGISTRY

    return sum(
        1
        for c in report.checks
        if c.severity == "skip"
        and c.needs
        and (spec := REGISTRY.get(c.id)) is not None
        and spec.needs == "probe"
    )


def attention_text(report: Report | None, limit: int = 6) -> Text:
    """What is wrong, worst first (fail, error, warn), one entry per check, for the first screen."""
    out = Text()
    if report is None:
        out.append("diagnosing…", style="dim")
        return out
    attention = [c for c in report.sorted_checks() if c.severity in ("fail", "error", "warn")]
    out.append("What is wrong", style="bold")
    out.append("  (w or 3: evidence and fix)\n", style="dim")
    if not attention:
        out.append(
            f"{MARKS['pass']} nothing: no check failed or warned", style=SEVERITY_STYLES["pass"]
        )
        skipped = probe_checks_waiting(report)
        if skipped:
            out.append(
                f"\n{skipped} check{'s need' if skipped != 1 else ' needs'} measurements: "
                "p runs the probes on a live machine",
                style="dim",
            )
        return out
    for pos, check in enumerate(attention[:limit]):
        if pos:
            out.append("\n")
        out.append(f"{MARKS[check.severity]} ", style=SEVERITY_STYLES[check.severity])
        out.append(check.id, style="bold")
        out.append(" ")
        out.append_text(inline(check.summary))
    if len(attention) > limit:
        out.append(f"\n… and {len(attention) - limit} more", style="dim")
    return out


def _matrix_name(m: P2PMatrixMeasurement) -> str:
    parts = [f"P2P {m.p2p}"]
    if m.bidirectional:
        parts.append("bidirectional")
    if m.access:
        parts.append(m.access)
    if m.method:
        parts.append(m.method.upper())
    if m.kind == "latency":
        parts.append("latency")
        if m.latency_side:
            parts.append(f"{m.latency_side}-timed")
    return " ".join(parts)


def measured_p2p(capture: Capture, a: int, b: int) -> list[tuple[P2PMatrixMeasurement, float]]:
    """Every P2P matrix measurement with a value for ``a`` → ``b`` (bandwidth first)."""
    found = []
    for m in capture.measurements.p2p:
        value = m.value(a, b)
        if value is not None:
            found.append((m, value))
    found.sort(key=lambda item: (item[0].kind != "bandwidth", item[0].p2p != "enabled"))
    return found


def best_p2p_bandwidth(capture: Capture) -> P2PMatrixMeasurement | None:
    """The matrix the bandwidth colour mode shows: unidirectional, P2P enabled, bandwidth."""
    candidates = [
        m for m in capture.measurements.p2p if m.kind == "bandwidth" and m.p2p == "enabled"
    ]
    candidates.sort(key=lambda m: (m.bidirectional, m.access not in ("write", None)))
    return candidates[0] if candidates else None


def _gpu_index(label: str) -> int | None:
    if label.startswith("GPU") and label[3:].isdecimal():
        return int(label[3:])
    return None


def _link_state(
    gen: int | None, width: int | None, max_gen: int | None, max_width: int | None
) -> Text:
    """``Gen4 x16 (max)`` or, in yellow, ``Gen3 x8 of Gen4 x16`` when below the maximum."""
    now = link_label(gen, width)
    if max_gen is None and max_width is None:
        return Text(now)
    below = (gen or 0) < (max_gen or 0) or (width or 0) < (max_width or 0)
    if below:
        return Text(f"{now} of {link_label(max_gen, max_width)}", style="yellow")
    return Text(f"{now} (max)")


def _acs_text(hop: PcieHop) -> Text:
    """ACS in the words that matter for P2P: redirect on (and which bits), off, or unknown."""
    if hop.acs is not None:
        acs = hop.acs
        redirect = [
            name
            for name, on in (
                ("ReqRedir", acs.request_redirect),
                ("CmpltRedir", acs.completion_redirect),
                ("EgressCtrl", acs.egress_control),
            )
            if on
        ]
        if redirect:
            return Text(f"ACS redirect ({'+ '.join(redirect)}+)", style="bold red")
        if acs.raw:
            return Text("ACS on, no redirect", style="green")
        return Text("ACS off", style="green")
    if hop.acs_capable is False:
        return Text("no ACS", style="dim")
    reason = hop.why("acs") or hop.why("acs_capable") or "not read"
    return Text(f"ACS {reason}", style="dim")


def _hop_line(hop: PcieHop, turn: bool) -> Text:
    out = Text("   ↑ ")
    out.append(hop.bus_id, style="bold" if turn else "")
    out.append(f" {ROLE_NAMES.get(hop.role or '', 'port')}")
    if hop.current_gen or hop.current_width:
        out.append(" · ", style="dim")
        out.append_text(_link_state(hop.current_gen, hop.current_width, hop.max_gen, hop.max_width))
    out.append(" · ", style="dim")
    out.append_text(_acs_text(hop))
    aer = [
        f"{name} {value}"
        for name, value in (
            ("AER corr", hop.aer_correctable),
            ("nonfatal", hop.aer_nonfatal),
            ("fatal", hop.aer_fatal),
        )
        if value
    ]
    if aer:
        out.append(" · " + ", ".join(aer), style="yellow")
    if turn:
        out.append(" ← first shared port", style="bold cyan")
    return out


def _device_path(label: str, path: Sequence[PcieHop], turn: str | None) -> Text:
    out = Text()
    if not path:
        out.append(f"   (PCIe path of {label} not in this capture)", style="dim")
        return out
    for pos, hop in enumerate(path):
        if pos:
            out.append("\n")
        out.append_text(_hop_line(hop, hop.bus_id == turn))
    return out


def _gpu_link_text(gpu: Gpu) -> Text:
    pcie = gpu.pcie
    if pcie.current_gen is None and pcie.current_width is None:
        return Text("link not in this capture", style="dim")
    out = _link_state(pcie.current_gen, pcie.current_width, pcie.max_gen, pcie.max_width)
    if out.style == "yellow":
        idle = gpu.pstate not in (None, 0)
        out.append(" (idle: may be power saving)" if idle else " (below max)")
    return out


def _device_head(capture: Capture, label: str) -> Text:
    out = Text()
    index = _gpu_index(label)
    if index is not None:
        gpu = capture.gpu(index)
        out.append(label, style="bold")
        if gpu is None:
            out.append("  (no facts)", style="dim")
            return out
        out.append(f"  {gpu.bus_id or 'bus id unknown'}  ")
        out.append_text(_gpu_link_text(gpu))
        return out
    nic = capture.nic(label)
    out.append(label, style="bold")
    if nic is not None:
        bits = [b for b in (nic.name, nic.kind, nic.bus_id) if b]
        out.append("  " + "  ".join(bits))
    return out


def _paths(
    capture: Capture, labels: Sequence[str], heads: bool = True, link: str | None = None
) -> Text:
    paths: list[tuple[str, list[PcieHop]]] = []
    for label in labels:
        index = _gpu_index(label)
        dev: Gpu | Nic | None = capture.gpu(index) if index is not None else capture.nic(label)
        paths.append((label, list(getattr(dev, "path", []) or [])))
    turn: PcieHop | None = None
    if len(paths) == 2:
        other = {h.bus_id for h in paths[1][1]}
        turn = next((h for h in paths[0][1] if h.bus_id in other), None)
    out = Text()
    out.append("PCIe path (nearest port first)\n", style="bold")
    for pos, (label, path) in enumerate(paths):
        if pos:
            out.append("\n")
        if heads:
            out.append_text(_device_head(capture, label))
            if not path:
                out.append(" · path not in this capture", style="dim")
                continue
            out.append("\n")
        out.append_text(_device_path(label, path, turn.bus_id if turn else None))
    if turn is not None:
        below = [
            h for _, path in paths for h in path[: [x.bus_id for x in path].index(turn.bus_id)]
        ]
        if any(h.acs is not None and h.acs.redirects_p2p for h in below):
            out.append(
                f"\n   P2P could turn around at {turn.bus_id}, but ACS redirect below it sends it "
                "up to the root complex (and through the IOMMU).",
                style="bold red",
            )
        elif link is not None and link.upper().startswith("NV"):
            # NVLink carries this pair's P2P traffic; the PCIe ports only join the trees.
            out.append(
                f"\n   Their PCIe paths meet at {turn.bus_id}; P2P traffic between them takes "
                f"NVLink ({link}), not PCIe.",
                style="dim",
            )
        else:
            out.append(f"\n   P2P traffic over PCIe turns around at {turn.bus_id}.", style="dim")
    return out


P2P_CAP_WORDS: dict[str, str] = {"nvlink": "NVLink", "pci": "PCIe"}
"""How the P2P capabilities of ``nvidia-smi topo -p2p r|w|n|a|p`` are named on screen."""


def p2p_refused(capture: Capture, a: int, b: int) -> bool:
    """The driver refuses P2P between GPUs ``a`` and ``b`` (every known ``topo -p2p`` code of
    the pair says so, or ``cudaDeviceCanAccessPeer`` is no): a "P2P enabled" copy between
    them was staged through host memory, so its bandwidth is not a share of the P2P path."""
    p2p = capture.p2p
    codes = [p2p.status(cap, a, b) for cap in P2P_CAPS]
    known = [code for code in codes if code not in (None, "X", "U")]
    if known and "OK" not in known:
        return True
    access = p2p.can_access_peer
    if access is not None and a in p2p.gpus and b in p2p.gpus:
        i, j = p2p.gpus.index(a), p2p.gpus.index(b)
        row = access[i] if i < len(access) else []
        return j < len(row) and row[j] is False
    return False


def _p2p_status(capture: Capture, a: int, b: int) -> Text:
    out = Text()
    out.append("P2P status (nvidia-smi topo -p2p)\n", style="bold")
    codes = {cap: capture.p2p.status(cap, a, b) for cap in P2P_CAPS}
    known = {cap: code for cap, code in codes.items() if code is not None}
    if not known:
        reason = capture.unavailable.get("p2p") or "not in this capture"
        out.append(f"   {reason}", style="dim")
    else:
        out.append("   ")
        for pos, (cap, code) in enumerate(known.items()):
            if pos:
                out.append(" · ", style="dim")
            out.append(f"{P2P_CAP_WORDS.get(cap, cap)} ")
            out.append(code, style="green" if code == "OK" else "bold red")
        for code in sorted({c for c in known.values() if c not in ("OK", "X")}):
            out.append(f"\n   {code}: {P2P_CODES.get(code, 'unknown code')}")
        if "pci" in known:
            out.append(
                "\n   PCIe = P2P over PCIe (-p2p p); read/write/atomics = over any link",
                style="dim",
            )
    access = capture.p2p.can_access_peer
    if access is not None and a in capture.p2p.gpus and b in capture.p2p.gpus:
        i, j = capture.p2p.gpus.index(a), capture.p2p.gpus.index(b)
        try:
            value = access[i][j]
        except IndexError:
            value = None
        if value is not None:
            out.append(f"\n   cudaDeviceCanAccessPeer: {'yes' if value else 'no'}")
    return out


def _measured(capture: Capture, a: int, b: int, link: str | None) -> Text:
    out = Text()
    out.append("Measured\n", style="bold")
    found = measured_p2p(capture, a, b)
    # The ceiling the doctor uses: NVLink = links × the per-link rate (capture, else the GPU
    # model); PCIe = the slower GPU link, raw.
    ceiling = linkmodel.pair_ceiling(capture, a, b, link)
    gbps = ceiling.gbps
    refused = p2p_refused(capture, a, b)
    if not found:
        out.append("   no P2P copy measured for this pair", style="dim")
        if not capture.measurements.p2p:
            out.append(
                " (the probes measure it: p in pcidoc on the GPU machine, or "
                "`pcidoc check --probes quick` there)",
                style="dim",
            )
    width = max((len(_matrix_name(m)) for m, _ in found), default=0) + 2
    for pos, (m, value) in enumerate(found):
        if pos:
            out.append("\n")
        out.append(f"   {_matrix_name(m):<{width}}")
        if m.kind == "bandwidth":
            out.append(format_gbps(value), style="bold")
            if m.p2p == "enabled" and refused:
                out.append("  staged through host memory: the driver refuses P2P here", "dim")
            elif gbps is not None and m.p2p == "enabled":
                # A bidirectional value is the sum of both directions: compare with 2 × ceiling.
                share = value / (gbps * (2 if m.bidirectional else 1)) * 100
                style = "green" if share >= 70 else ("yellow" if share >= 40 else "red")
                basis = "both directions' ceilings" if m.bidirectional else "ceiling"
                out.append(f"  {share:.0f}% of {basis}", style=style)
        else:
            out.append(f"{value:.2f} µs", style="bold")
        if m.source and m.source.startswith("synthetic"):
            out.append("  synthetic", style="bright_blue")
    out.append("\n   ceiling: ", style="dim")
    if gbps is None:
        out.append("unknown (link rate not in this capture)", style="dim")
    else:
        out.append(f"{format_gbps(gbps)} per direction = {ceiling.basis}", style="dim")
    return out


def _gpu_detail(capture: Capture, gpu: Gpu) -> Text:
    out = Text()
    out.append(f"{gpu.label}  ", style="bold")
    out.append(gpu_name(capture, gpu) or "unknown GPU")
    out.append("\n")
    kv(out, "bus id", gpu.bus_id or "unknown")
    if gpu.architecture:
        kv(out, "architecture", gpu.architecture)
    kv(
        out,
        "NUMA node",
        gpu.numa_affinity or ("unknown" if gpu.numa_node is None else str(gpu.numa_node)),
    )
    kv(out, "local CPUs", gpu.cpu_affinity or "unknown")
    kv(out, "PCIe link", _gpu_link_text(gpu))
    if gpu.pstate is not None:
        kv(out, "P-state", f"P{gpu.pstate}")
    counters = []
    if gpu.replay_count is not None:
        counters.append(f"{gpu.replay_count} replays")
    if gpu.aer_correctable is not None:
        counters.append(f"{gpu.aer_correctable} AER correctable")
    if counters:
        kv(out, "PCIe errors", ", ".join(counters) + " (since boot)")
    if gpu.nvlinks:
        kv(out, "NVLinks", _nvlinks_text(capture, gpu))
    if gpu.fabric.state:
        kv(
            out,
            "fabric",
            f"{gpu.fabric.state}" + (f" ({gpu.fabric.status})" if gpu.fabric.status else ""),
        )
    if gpu.mig.enabled:
        kv(out, "MIG", "enabled")
    if gpu.iommu_group_type:
        kv(out, "IOMMU group", gpu.iommu_group_type)
    if gpu.nvml_error:
        kv(out, "NVML error", Text(gpu.nvml_error, style="bold red"))
    out.append("\n")
    out.append_text(_paths(capture, [gpu.label], heads=False))
    return out


def _nvlinks_text(capture: Capture, gpu: Gpu) -> str:
    """``12 of 12 up, 6 more not wired (NVLink 4.0 · 25 GB/s each)``: the counts and the
    nominal rate of the link model, as the Links pane and the doctor say them."""
    from pcidoc.model.linkmodel import nvlink_per_link, unwired_nvlinks

    up = sum(1 for nv in gpu.nvlinks if nv.state == "up")
    unwired = unwired_nvlinks(capture, gpu).count
    rate, version, _, _ = nvlink_per_link(gpu)
    extra = " · ".join(
        x
        for x in (f"NVLink {version}" if version else "", f"{rate:g} GB/s each" if rate else "")
        if x
    )
    text = f"{up} of {len(gpu.nvlinks) - unwired} up"
    if unwired:
        text += f", {unwired} more not wired in this design"
    return text + (f" ({extra})" if extra else "")


def _nic_detail(capture: Capture, nic: Nic) -> Text:
    out = Text()
    out.append(f"{nic.label}  ", style="bold")
    out.append(nic.name or "unnamed NIC")
    out.append("\n")
    kv(out, "bus id", nic.bus_id or "unknown")
    kv(out, "link layer", nic.kind or "unknown")
    kv(out, "NUMA node", "unknown" if nic.numa_node is None else str(nic.numa_node))
    if nic.netdevs:
        kv(out, "netdevs", ", ".join(nic.netdevs))
    out.append("\n")
    out.append_text(_paths(capture, [nic.label], heads=False))
    return out


def describe_cell(capture: Capture, row: str, col: str) -> Text:
    """Detail of one matrix cell: a device (diagonal) or the pair ``row`` ↔ ``col``."""
    if row == col:
        index = _gpu_index(row)
        gpu = capture.gpu(index) if index is not None else None
        if gpu is not None:
            return _gpu_detail(capture, gpu)
        nic = capture.nic(row)
        if nic is not None:
            return _nic_detail(capture, nic)
        return Text(f"{row}: no facts in this capture", style="dim")
    link = capture.topology.link(row, col)
    out = Text()
    out.append(f"{row} ↔ {col}  ", style="bold")
    style = "dim"
    if link is not None:
        from pcidoc.present._matrix import MatrixView

        style = CELL_STYLES[MatrixView(capture).style(link)]
    out.append(link or "?", style=style)
    out.append("\n")
    out.append(meaning(link))
    out.append("\n\n")
    a, b = _gpu_index(row), _gpu_index(col)
    if a is not None and b is not None:
        out.append_text(_p2p_status(capture, a, b))
        out.append("\n\n")
        out.append_text(_measured(capture, a, b, link))
        out.append("\n\n")
    out.append_text(_paths(capture, [row, col], link=link))
    return out


def bullet_lines(lines: Iterable[str], style: str = "") -> Text:
    """Lines as a bulleted block."""
    out = Text()
    for pos, line in enumerate(lines):
        if pos:
            out.append("\n")
        out.append(" • ")
        out.append(line, style=style)
    return out


# ------------------------------------------------------------------ the pane and the app's state


def bind(screen: MainScreen, topology: TopologyPane) -> None:
    """Draw the machine on display, its report and (while on display) its live traffic."""
    state = screen.state

    def machine(displayed: Displayed | None) -> None:
        if displayed is None:
            return  # the matrix keeps its first placeholder
        topology.replay = displayed.replay
        capture = displayed.capture
        if capture is None:
            topology.show_capture(None)
            return
        from pcidoc.doctor.topology_notes import topology_notes

        topology.show_capture(capture, topology_notes(capture))

    def report(old: Report | None, new: Report | None) -> None:
        topology.show_report(new)
        if old is not None and new is not None:
            # A later report of the same machine (probes measured): its capture carries
            # the measurements the matrix colours by. Not the first: it has the facts.
            _changed(screen, topology)

    def counters(value: Counters | None) -> None:
        displayed = state.displayed
        if value is None or value.rates is None:
            return
        if displayed is not None and displayed.replay is not None:
            # A replayed SYNTHETIC trace stays in the Links pane, which labels it; the
            # matrix's traffic colours show only counters read from GPUs.
            return
        if screen.active_pane == "topology":
            topology.show_rates(value.rates)
        else:
            topology.stale = True

    # Bound at mount, before anything is on display: the composed pane is the empty state.
    topology.watch(state, "displayed", machine)
    topology.watch(state, "report", report, init=False)
    topology.watch(state, "counters", counters, init=False)


def _changed(screen: MainScreen, topology: TopologyPane) -> None:
    if screen.active_pane == "topology":
        topology.show_capture(screen.state.capture)
    else:
        topology.stale = True


def shown(screen: MainScreen, topology: TopologyPane) -> None:
    """Bring a stale matrix up to the state: the latest rates and the latest capture."""
    if not topology.stale:
        return
    topology.stale = False
    state = screen.state
    displayed = state.displayed
    real = displayed is None or displayed.replay is None
    topology.show_rates((state.rates or None) if real else None)
    topology.show_capture(state.capture)

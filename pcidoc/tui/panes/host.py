"""The Host pane's text (the host's facts, GPU processes, kernel log events) and its binding."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.text import Text

from pcidoc.model.capture import Capture
from pcidoc.model.facts import GpuProcess, Host
from pcidoc.model.units import format_bytes
from pcidoc.present._common import hostname
from pcidoc.tui.panes.common import driver_versions, kv

if TYPE_CHECKING:
    from pcidoc.tui.screens.main import MainScreen
    from pcidoc.tui.widgets.host_pane import HostPane


def _yes_no(value: bool | None, unknown: str = "unknown") -> str:
    if value is None:
        return unknown
    return "yes" if value else "no"


def _kernel_device(capture: Capture, bus: str | None) -> str:
    if bus is None:
        return "address not printed"
    for gpu in capture.gpus:
        if gpu.bus_id and gpu.bus_id.lower() == bus:
            return f"{gpu.label} ({bus})"
    return bus


def kernel_events(capture: Capture) -> Text:
    """The kernel log's events per device (Host pane): Xid codes, AER, IOMMU faults."""
    out = Text()
    logs = capture.evidence.kernel_logs if capture.evidence is not None else []
    if not logs:
        return out
    out.append("\nKernel log\n", style="bold")
    per: dict[str, list[str]] = {}
    for log in logs:
        if not log.read:
            kv(out, "not read", Text(log.unreadable or "unknown reason", style="yellow"))
            continue
        kv(out, "read", f"{log.lines} line(s) from {log.source or 'the log'}")
        if log.firmware_first:
            kv(out, "AER", Text("handled by firmware: a clean log proves little", "yellow"))
        kinds = (
            [(e.bus_id, f"Xid {e.code}") for e in log.xids]
            + [(e.bus_id, "fallen off the bus") for e in log.fallen_off_bus]
            + [(e.bus_id, f"AER {e.severity}") for e in log.aer]
            + [(e.bus_id, f"{e.iommu} fault") for e in log.iommu_faults]
            + [(e.bus_id, "bandwidth notice") for e in log.link_notices]
        )
        for bus, kind in kinds:
            per.setdefault(_kernel_device(capture, bus), []).append(kind)
    for device, names in per.items():
        counted = ", ".join(f"{k} ×{names.count(k)}" for k in dict.fromkeys(names))
        kv(out, "", Text(f"{device}: {counted}", style="red" if "Xid" in counted else ""))
    if not per and any(log.read for log in logs):
        kv(out, "events", "no Xid, AER or IOMMU fault")
    return out


def host_detail(capture: Capture, title: str, why_no_gpus: str | None = None) -> Text:
    """Host facts: name, kernel, CPU, sockets, NUMA, IOMMU, virtualization, NCCL environment."""
    host = capture.host
    out = Text()
    out.append(title + "\n", style="bold underline")
    if why_no_gpus:
        out.append("\n")
        kv(out, "why no GPUs", Text(why_no_gpus, style="yellow"))
        if capture.driver.nvidia_pci_devices is not None:
            count = capture.driver.nvidia_pci_devices
            kv(out, "", Text(f"NVIDIA devices on the PCI bus: {count}", style="dim"))
    out.append("\n")
    kv(out, "hostname", hostname(capture))
    kv(out, "kernel", host.kernel or "unknown")
    if host.os:
        kv(out, "OS", host.os)
    _cpu_lines(out, host)
    kv(out, "IOMMU", _iommu_text(host))
    kv(out, "virtualization", _virtualization_text(host))
    if host.numa_balancing is not None:
        kv(out, "NUMA balancing", "on" if host.numa_balancing else "off")
    gd = host.gpudirect
    if gd.nvidia_peermem is not None or gd.nv_peer_mem is not None:
        kv(out, "GPUDirect RDMA", f"nvidia_peermem {_yes_no(gd.nvidia_peermem)}")
    kv(out, "privileged", _yes_no(host.privileged))
    live = capture.origin.kind == "live"
    _environment_lines(out, host.environment, live)
    out.append("\n")
    if live:
        driver = capture.driver
        kv(
            out,
            "NVML",
            "available" if driver.nvml_available else (driver.nvml_error or "not available"),
        )
    versions = driver_versions(capture)
    if versions:
        kv(out, "versions", versions)
    _origin_lines(out, capture)
    out.append_text(process_lines(capture))
    out.append_text(kernel_events(capture))
    gaps = [f"{key}: {why}" for key, why in capture.unavailable.items() if key != "gpus"]
    if gaps or capture.origin.warnings:
        out.append("\nNot known\n", style="bold")
        for line in [*gaps, *capture.origin.warnings]:
            out.append(f"  • {line}\n", style="dim")
    out.rstrip()
    return out


def _cpu_lines(out: Text, host: Host) -> None:
    cpu = host.cpu_model or "unknown"
    if host.logical_cpus:
        cpu += f" ({host.logical_cpus} logical CPUs)"
    kv(out, "CPU", cpu)
    kv(out, "sockets", "unknown" if host.sockets is None else str(host.sockets))
    if not host.numa_nodes:
        kv(out, "NUMA nodes", host.why("numa_nodes") or "unknown")
        return
    kv(out, "NUMA nodes", str(len(host.numa_nodes)))
    for node in host.numa_nodes:
        line = f"node {node.id}: CPUs {node.cpus or 'unknown'}"
        if node.distances:
            line += f" · distances {' '.join(map(str, node.distances))}"
        kv(out, "", line)


def _iommu_text(host: Host) -> str:
    iommu = host.iommu
    text = "unknown" if iommu.enabled is None else ("on" if iommu.enabled else "off")
    if iommu.vendor:
        text += f" ({iommu.vendor})"
    if iommu.default_domain_type:
        text += f", GPU groups {iommu.default_domain_type}"
    if iommu.kernel_args:
        text += f", kernel args {' '.join(iommu.kernel_args)}"
    return text


def _virtualization_text(host: Host) -> str:
    virt = host.virtualization
    parts = []
    if virt.hypervisor is not None:
        parts.append(f"VM ({virt.vendor or 'hypervisor'})" if virt.hypervisor else "bare metal")
    if virt.container:
        parts.append(f"container: {virt.container}")
    if virt.confidential_compute:
        parts.append("confidential computing on")
    return ", ".join(parts) or "unknown"


def _environment_lines(out: Text, env: Mapping[str, str], live: bool) -> None:
    if env:
        kv(out, "NCCL env", "")
        for key in sorted(env):
            out.append(f"  {key}={env[key]}\n")
    elif live:
        kv(out, "NCCL env", "no NCCL_* / CUDA_VISIBLE_DEVICES variables set")
    else:
        kv(out, "NCCL env", "not in this capture")


_SOURCES_SHOWN = 6
"""Source files named under ``origin`` (the rest are counted)."""


def _origin_lines(out: Text, capture: Capture) -> None:
    origin = capture.origin
    if origin.kind == "live":
        return
    what = {
        "import": "imported from pasted tool outputs",
        "synthetic": "SYNTHETIC: not a real machine",
    }
    kv(out, "origin", what.get(origin.kind, origin.kind))
    if origin.note:
        kv(out, "", origin.note)
    for source in origin.sources[:_SOURCES_SHOWN]:
        line = os.path.basename(source.path)
        if source.citation:
            line += f" — {source.citation}"
        kv(out, "", line)
    more = len(origin.sources) - _SOURCES_SHOWN
    if more > 0:
        kv(out, "", Text(f"and {more} more source file{'s' if more > 1 else ''}", style="dim"))


def process_placement(capture: Capture, process: GpuProcess) -> tuple[str, str]:
    """Where a GPU process's CPUs are against its GPUs' NUMA nodes: ``(verdict, style)``.

    ``local`` when every allowed CPU is on the GPUs' node(s); ``REMOTE`` when none is; ``spans``
    when the process may run on other nodes too (not pinned); ``unknown`` without the facts.
    """
    from pcidoc.model.cpulist import format_cpulist, parse_cpulist

    gpu_nodes = {
        g.numa_node
        for i in process.gpus
        if (g := capture.gpu(i)) is not None and g.numa_node is not None and g.numa_node >= 0
    }
    allowed = parse_cpulist(process.cpu_affinity)
    node_cpus = {
        node.id: cpus
        for node in capture.host.numa_nodes
        if (cpus := parse_cpulist(node.cpus)) is not None
    }
    if not gpu_nodes or not allowed or not node_cpus:
        return "unknown (no NUMA facts for its CPUs or GPUs)", "dim"
    cpu_nodes = sorted(n for n, cpus in node_cpus.items() if cpus & allowed)
    nodes = format_cpulist(cpu_nodes) or "?"
    gpus = format_cpulist(sorted(gpu_nodes)) or "?"
    if set(cpu_nodes) <= gpu_nodes:
        return f"local: CPUs on node {nodes}, GPUs on node {gpus}", "green"
    if not set(cpu_nodes) & gpu_nodes:
        return f"REMOTE: CPUs on node {nodes}, GPUs on node {gpus}", "bold red"
    return f"spans nodes {nodes} (not pinned); GPUs on node {gpus}", "yellow"


def process_lines(capture: Capture) -> Text:
    """The GPU processes: pid, name, GPUs, memory and CPU placement against the GPUs' NUMA."""
    host = capture.host
    out = Text()
    out.append("\nGPU processes\n", style="bold")
    if not host.processes:
        why = host.why("processes")
        if capture.origin.kind == "live":
            out.append(f"  {why or 'none using the GPUs now'}\n", style="dim")
        else:
            out.append(f"  {why or 'not in this capture'}\n", style="dim")
        return out
    for process in sorted(host.processes, key=lambda p: (p.gpus[:1], p.pid)):
        out.append(f"  {process.pid:>7}  ", style="bold")
        out.append(f"{(process.name or '?')[:20]:<20}  ")
        gpus = ",".join(f"GPU{i}" for i in process.gpus) or "?"
        out.append(f"{gpus:<12}  ")
        memory = process.used_memory_bytes
        out.append(f"{'' if memory is None else format_bytes(memory):>9}  ", style="dim")
        out.append(f"CPUs {process.cpu_affinity or '?'}  ")
        verdict, style = process_placement(capture, process)
        out.append(verdict, style=style)
        out.append("\n")
    return out


# ------------------------------------------------------------------ the pane and the app's state


def bind(screen: MainScreen, host: HostPane) -> None:
    """Show this machine's host (and the displayed machine's, when it is another one)."""
    state = screen.state

    def draw() -> None:
        displayed = state.displayed
        title = "Host of the machine on display"
        if displayed is not None and displayed.source.kind != "live":
            title += f" ({displayed.source.describe()})"
        capture = displayed.capture if displayed is not None else None
        host.show(state.this_machine, capture, title, state.no_gpu_reason)

    host.watch(state, "displayed", draw)
    host.watch(state, "this_machine", draw, init=False)
    host.watch(state, "no_gpu_reason", draw, init=False)


def shown(screen: MainScreen, host: HostPane) -> None:
    """Nothing to catch up: the pane follows the state while hidden."""

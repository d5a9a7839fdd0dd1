"""Collect a :class:`~pcidoc.model.capture.Capture` of this machine: NVML + sysfs + host.

:func:`collect_live` composes the collectors. It never raises: a collector that fails leaves
its section empty with the reason in ``capture.unavailable`` (or the owning object's
``unavailable``), and a GPU that NVML loses mid-way is marked and skipped while the others are
still collected.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable, Mapping
from typing import TypeVar

from pcidoc import __version__
from pcidoc.collect.capture import utc_now
from pcidoc.collect.host import collect_host, collect_processes
from pcidoc.collect.nvml import (
    FABRIC_STATES,
    FI_NVLINK_GET_SPEED,
    FI_NVLINK_GET_STATE,
    FI_NVLINK_LINK_COUNT,
    FI_PCIE_REPLAY_COUNTER,
    FI_PCIE_REPLAY_ROLLOVER_COUNTER,
    NVLINK_COUNT_ERROR_FIELDS,
    NVLINK_ERROR_COUNTERS,
    NVLINK_STATE_TRAFFIC_DISABLED,
    NVLINK_STATES,
    NVML_NVLINK_MAX_LINKS,
    P2P_CAP_INDEX,
    PCIE_COUNTER_FIELDS,
    TOPOLOGY_LEVELS,
    TRAFFIC_DISABLED_REASON,
    NvmlBackend,
    PynvmlBackend,
    Unavailable,
    cuda_version_text,
    decode_fabric_health,
    fabric_status_name,
    nvlink_version_name,
)
from pcidoc.collect.sysfs import EndpointInfo, SysfsReader, normalize_bus_id
from pcidoc.model.base import FactModel
from pcidoc.model.capture import Capture
from pcidoc.model.facts import P2P_CAPS, Gpu, Host, Nic, NvLink, P2PStatus, Topology

T = TypeVar("T")

NOT_SAMPLED = (
    "not sampled at collection time: PCIe throughput comes from the live counter sampler "
    "(two readings of cumulative counters), not from a one-off reading"
)


def _guard(capture: Capture, key: str, fn: Callable[[], T], default: T) -> T:
    """Run one sub-collector; an unexpected exception becomes ``capture.unavailable[key]``."""
    try:
        return fn()
    except Exception as exc:  # a collector bug or a very strange machine: never crash
        reason = f"collector failed: {type(exc).__name__}: {exc}"
        capture.unavailable.setdefault(key, reason)
        capture.origin.warnings.append(f"{key}: {reason}")
        return default


# ------------------------------------------------------------------------------ messages


def nvml_failure_message(error: str, nvidia_pci_devices: int | None, container: str | None) -> str:
    """Plain-language reason GPUs could not be collected, from the NVML init error."""
    if nvidia_pci_devices is None:
        bus = "the PCI bus could not be read"
    elif nvidia_pci_devices == 0:
        bus = "no NVIDIA GPU is on the PCI bus"
    else:
        plural = "s are" if nvidia_pci_devices != 1 else " is"
        bus = f"{nvidia_pci_devices} NVIDIA GPU{plural} on the PCI bus"
    in_container = f" (inside a {container} container)" if container else ""
    if error == "LIBRARY_NOT_FOUND":
        if nvidia_pci_devices == 0:
            return (
                "NVML library libnvidia-ml.so.1 not found: the NVIDIA driver is not installed "
                "(no NVIDIA devices on the PCI bus)"
            )
        hint = (
            "run the container with the NVIDIA container runtime (e.g. `docker run --gpus all`)"
            if container
            else "install the NVIDIA driver"
        )
        return f"NVML library libnvidia-ml.so.1 not found{in_container}, but {bus}: {hint}"
    if error == "DRIVER_NOT_LOADED":
        return (
            f"the NVIDIA kernel driver is not loaded ({bus}): load it (`sudo modprobe nvidia`) "
            "and check `dmesg` for NVRM errors"
        )
    if error == "LIB_RM_VERSION_MISMATCH":
        return (
            "NVML library and NVIDIA kernel driver versions differ (typically after a driver "
            "upgrade without a reboot): reboot, or unload and reload the nvidia kernel modules"
        )
    if error == "NO_PERMISSION":
        return (
            f"no permission to talk to the NVIDIA driver{in_container}: check access to "
            "/dev/nvidia* (a container must be given the devices)"
        )
    if error == "PYNVML_NOT_INSTALLED":
        return f"the nvidia-ml-py package is not installed ({bus}): `pip install nvidia-ml-py`"
    return f"NVML failed to initialise: {error} ({bus})"


def _kernel_module_version(proc_root: str) -> str | None:
    try:
        with open(os.path.join(proc_root, "driver", "nvidia", "version"), encoding="utf-8") as f:
            first = f.readline()
    except OSError:
        return None
    for token in first.split():
        if token[:1].isdecimal() and "." in token:
            return token
    return None


# -------------------------------------------------------------------------- GPU reading


class _GpuReader:
    """Queries one GPU; records reasons; stops after a fatal error (GPU lost)."""

    def __init__(self, backend: NvmlBackend, gpu: Gpu) -> None:
        self.backend = backend
        self.gpu = gpu
        self.lost: Unavailable | None = None

    def call(self, fn: Callable[[], T | Unavailable]) -> T | Unavailable:
        """Run one backend call unless the GPU is lost; remember a fatal error."""
        if self.lost is not None:
            return self.lost
        result = fn()
        if isinstance(result, Unavailable) and result.fatal:
            self.lost = result
            self.gpu.nvml_error = result.error
        return result

    def get(
        self, name: str, fn: Callable[[], T | Unavailable], target: FactModel | None = None
    ) -> T | None:
        """Value of one call, or ``None`` with the reason recorded under ``name``."""
        result = self.call(fn)
        if isinstance(result, Unavailable):
            (target or self.gpu).mark_unavailable(name, result.reason)
            return None
        return result


ProcessEntry = tuple[int, int, int | None]


def _collect_gpu(
    backend: NvmlBackend,
    index: int,
    sysfs: SysfsReader,
    processes: list[ProcessEntry],
    host: Host,
) -> Gpu:
    gpu = Gpu(index=index)
    opened = backend.device_open(index)
    if opened is not None:
        gpu.nvml_error = opened.error
        for name in ("name", "uuid", "bus_id"):
            gpu.mark_unavailable(name, opened.reason)
        return gpu
    r = _GpuReader(backend, gpu)
    i = index
    gpu.name = r.get("name", lambda: backend.name(i))
    uuid = r.call(lambda: backend.uuid(i))
    bus = r.call(lambda: backend.pci_bus_id(i))
    gpu.serial = r.get("serial", lambda: backend.serial(i))
    for name, result in (("uuid", uuid), ("bus_id", bus)):
        if isinstance(result, Unavailable):
            gpu.mark_unavailable(name, result.reason)
    gpu.uuid = None if isinstance(uuid, Unavailable) else uuid
    gpu.bus_id = None if isinstance(bus, Unavailable) else normalize_bus_id(bus)
    if isinstance(uuid, Unavailable) and isinstance(bus, Unavailable) and gpu.nvml_error is None:
        # Neither identity answers: NVML cannot really talk to this GPU.
        gpu.nvml_error = uuid.error
    gpu.architecture = r.get("architecture", lambda: backend.architecture(i))

    pcie = gpu.pcie
    pcie.current_gen = r.get("current_gen", lambda: backend.pcie_current_gen(i), pcie)
    pcie.current_width = r.get("current_width", lambda: backend.pcie_current_width(i), pcie)
    pcie.max_gen = r.get("max_gen", lambda: backend.pcie_max_gen(i), pcie)
    pcie.max_width = r.get("max_width", lambda: backend.pcie_max_width(i), pcie)
    pcie.device_max_gen = r.get("device_max_gen", lambda: backend.pcie_gpu_max_gen(i), pcie)

    _read_pcie_counters(r, i)
    pstate = r.get("pstate", lambda: backend.performance_state(i))
    if pstate is not None and not 0 <= pstate <= 15:
        gpu.mark_unavailable("pstate", "NVML reports an unknown P-state")
        pstate = None
    gpu.pstate = pstate
    gpu.persistence_mode = r.get("persistence_mode", lambda: backend.persistence_mode(i))
    mig = r.call(lambda: backend.mig_mode(i))
    if isinstance(mig, Unavailable):
        gpu.mig.mark_unavailable("enabled", mig.reason)
        gpu.mig.mark_unavailable("pending", mig.reason)
    else:
        gpu.mig.enabled, gpu.mig.pending = mig
    gpu.virtualization_mode = r.get("virtualization_mode", lambda: backend.virtualization_mode(i))
    gpu.cpu_affinity = r.get("cpu_affinity", lambda: backend.cpu_affinity(i))
    gpu.numa_affinity = r.get("numa_affinity", lambda: backend.memory_affinity(i))
    gpu.bar1_total_bytes = r.get("bar1_total_bytes", lambda: backend.bar1_total(i))
    gpu.mark_unavailable("tx_bytes_per_s", NOT_SAMPLED)
    gpu.mark_unavailable("rx_bytes_per_s", NOT_SAMPLED)

    _read_nvlinks(r, i)
    _read_fabric(r, i)
    procs = r.call(lambda: backend.compute_processes(i))
    if isinstance(procs, Unavailable):
        host.mark_unavailable("processes", f"GPU{i}: {procs.reason}")
    else:
        processes.extend((i, proc.pid, proc.used_memory_bytes) for proc in procs)

    _merge_sysfs(gpu, sysfs)
    return gpu


def _read_pcie_counters(r: _GpuReader, i: int) -> None:
    gpu = r.gpu
    fields = [(FI_PCIE_REPLAY_COUNTER, 0), (FI_PCIE_REPLAY_ROLLOVER_COUNTER, 0)]
    fields += [(fid, 0) for fid in PCIE_COUNTER_FIELDS.values()]
    values = r.call(lambda: r.backend.field_values(i, fields))
    if isinstance(values, Unavailable):
        values = [values] * len(fields)
    replay, rollover, *counters = values
    if isinstance(replay, Unavailable):
        # The dedicated call works on some drivers where the field does not.
        gpu.replay_count = r.get("replay_count", lambda: r.backend.pcie_replay_counter(i))
    else:
        gpu.replay_count = int(replay)
    if isinstance(rollover, Unavailable):
        gpu.mark_unavailable("replay_rollover_count", rollover.reason)
    else:
        gpu.replay_rollover_count = int(rollover)
    reasons = []
    for name, value in zip(PCIE_COUNTER_FIELDS, counters, strict=True):
        if isinstance(value, Unavailable):
            reasons.append(value.reason)
        else:
            gpu.pcie_counters[name] = int(value)
    if not gpu.pcie_counters and reasons:
        gpu.mark_unavailable("pcie_counters", reasons[0])


def _read_nvlinks(r: _GpuReader, i: int) -> None:
    gpu, backend = r.gpu, r.backend
    count_values = r.call(lambda: backend.field_values(i, [(FI_NVLINK_LINK_COUNT, 0)]))
    count = None
    if not isinstance(count_values, Unavailable) and not isinstance(count_values[0], Unavailable):
        count = int(count_values[0])
        if count == 0:
            gpu.mark_unavailable("nvlinks", "NVML reports 0 NVLinks on this GPU")
            return
    link_ids = range(count) if count is not None else range(NVML_NVLINK_MAX_LINKS)
    first_error: Unavailable | None = None
    for link_id in link_ids:
        if r.lost is not None:
            gpu.mark_unavailable("nvlinks", r.lost.reason)
            return
        state = r.call(lambda lid=link_id: backend.nvlink_state(i, lid))
        if isinstance(state, Unavailable):
            first_error = first_error or state
            if count is None:
                if link_id == 0 and state.error == "NOT_SUPPORTED":
                    break  # no NVLink on this GPU
                continue  # probing ids beyond the GPU's links
            link = NvLink(link=link_id)
            link.mark_unavailable("state", state.reason)
            gpu.nvlinks.append(link)
            continue
        link = NvLink(link=link_id, state="up" if state else "down")
        raw = r.get("version", lambda lid=link_id: backend.nvlink_version(i, lid), link)
        if raw is not None:
            link.version = nvlink_version_name(raw)
            if link.version is None:
                link.mark_unavailable("version", f"NVML reported unknown NVLink version code {raw}")
        if state:
            remote = r.get(
                "remote_bus_id", lambda lid=link_id: backend.nvlink_remote_bus_id(i, lid), link
            )
            link.remote_bus_id = normalize_bus_id(remote) if remote else None
            link.remote_type = r.get(  # type: ignore[assignment]
                "remote_type", lambda lid=link_id: backend.nvlink_remote_type(i, lid), link
            )
        else:
            link.mark_unavailable("remote_bus_id", "link is down")
            link.mark_unavailable("remote_type", "link is down")
        _read_link_errors(r, i, link)
        gpu.nvlinks.append(link)
    if not gpu.nvlinks:
        reason = first_error.reason if first_error else "NVML reports no NVLink"
        if first_error and first_error.error == "NOT_SUPPORTED":
            reason += " (no NVLink on this GPU)"
        gpu.mark_unavailable("nvlinks", reason)
        return
    _read_link_fields(r, i)


NO_NVLINK_ERROR_COUNTERS = (
    "no NVLink error counter on this GPU and driver: the DL counters (fields 161-163, "
    "nvmlDeviceGetNvLinkErrorCounter) end with Blackwell, and their successors (fields "
    "215/219) need driver branch R570 or later"
)


def _read_link_errors(r: _GpuReader, i: int, link: NvLink) -> None:
    """The DL error counters of one link (pre-Blackwell); a reason when none answers."""
    reasons = []
    for name, code in NVLINK_ERROR_COUNTERS.items():
        value = r.call(lambda c=code: r.backend.nvlink_error_counter(i, link.link, c))
        if isinstance(value, Unavailable):
            reasons.append(value.reason)
        else:
            link.errors[name] = int(value)
    if not link.errors and reasons:
        link.mark_unavailable("errors", reasons[0])


def _read_link_fields(r: _GpuReader, i: int) -> None:
    """Speed and state (field 165: up, down or sleep) of every link in one field-values call,
    plus the R570 error fields for links whose DL error counters did not answer."""
    gpu = r.gpu
    errorless = [link for link in gpu.nvlinks if not link.errors]
    requests = [
        (fid, link.link)
        for link in gpu.nvlinks
        for fid in (FI_NVLINK_GET_SPEED, FI_NVLINK_GET_STATE)
    ]
    requests += [
        (fid, link.link) for link in errorless for fid in NVLINK_COUNT_ERROR_FIELDS.values()
    ]
    values = r.call(lambda: r.backend.field_values(i, requests))
    if isinstance(values, Unavailable):
        values = [values] * len(requests)
    results = dict(zip(requests, values, strict=True))
    for link in gpu.nvlinks:
        state = results[(FI_NVLINK_GET_STATE, link.link)]
        if not isinstance(state, Unavailable) and int(state) in NVLINK_STATES:
            link.state = NVLINK_STATES[int(state)]  # type: ignore[assignment]
            link.unavailable.pop("state", None)
            if int(state) == NVLINK_STATE_TRAFFIC_DISABLED:
                link.mark_unavailable("speed_gbps", TRAFFIC_DISABLED_REASON)
        speed = results[(FI_NVLINK_GET_SPEED, link.link)]
        if link.state in ("up", "sleep"):
            if isinstance(speed, Unavailable):
                link.mark_unavailable("speed_gbps", speed.reason)
            else:
                link.speed_gbps = float(speed) / 1000.0  # MB/s -> GB/s
    for link in errorless:
        for name, fid in NVLINK_COUNT_ERROR_FIELDS.items():
            value = results[(fid, link.link)]
            if not isinstance(value, Unavailable):
                link.errors[name] = int(value)
        first = link.unavailable.pop("errors", None)
        if not link.errors:
            lost = first is not None and r.lost is not None
            link.mark_unavailable("errors", first if lost else NO_NVLINK_ERROR_COUNTERS)


def _read_fabric(r: _GpuReader, i: int) -> None:
    fabric = r.gpu.fabric
    info = r.get("state", lambda: r.backend.fabric_info(i), fabric)
    if info is None:
        for name in ("status", "clique_id", "cluster_uuid"):
            fabric.mark_unavailable(name, fabric.why("state") or "unavailable")
        return
    fabric.state = FABRIC_STATES.get(info.state, f"unknown_{info.state}")
    if info.state == 0:
        for name in ("status", "clique_id", "cluster_uuid"):
            fabric.mark_unavailable(name, "this GPU does not register with an NVLink fabric")
        return
    if info.state == 3:
        fabric.status = fabric_status_name(info.status)
    else:
        fabric.mark_unavailable("status", "meaningful only once fabric registration completed")
    fabric.clique_id = info.clique_id
    fabric.cluster_uuid = info.cluster_uuid
    fabric.health = decode_fabric_health(info.health_mask)
    if info.health_mask is None:
        fabric.mark_unavailable("health", "driver only offers the v1 fabric call (no health mask)")


def _merge_sysfs(gpu: Gpu, sysfs: SysfsReader) -> None:
    """Add what sysfs knows about the GPU's PCI function and its upstream path."""
    if gpu.bus_id is None:
        reason = gpu.why("bus_id") or "bus id unknown"
        for name in ("numa_node", "path", "iommu_group", "aer_correctable"):
            gpu.mark_unavailable(name, f"needs the PCI bus id: {reason}")
        return
    info = sysfs.endpoint(gpu.bus_id)
    if not info.present:
        reason = info.unavailable.get("sysfs", "not in sysfs")
        for name in ("numa_node", "path", "iommu_group", "aer_correctable"):
            gpu.mark_unavailable(name, reason)
        return
    gpu.numa_node = info.numa_node
    if gpu.cpu_affinity is None and info.local_cpulist:
        gpu.cpu_affinity = info.local_cpulist
        gpu.unavailable.pop("cpu_affinity", None)
    gpu.iommu_group, gpu.iommu_group_type = info.iommu_group, info.iommu_group_type
    gpu.aer_correctable, gpu.aer_nonfatal, gpu.aer_fatal = (
        info.aer_correctable,
        info.aer_nonfatal,
        info.aer_fatal,
    )
    for key in (
        "numa_node",
        "iommu_group",
        "iommu_group_type",
        "aer_correctable",
        "aer_nonfatal",
        "aer_fatal",
    ):
        if key in info.unavailable:
            gpu.mark_unavailable(key, info.unavailable[key])
    _merge_sysfs_link(gpu, info)
    gpu.path = sysfs.upstream_path(gpu.bus_id)
    _merge_upstream_port(gpu, info)


def _merge_sysfs_link(gpu: Gpu, info: EndpointInfo) -> None:
    """The GPU's own link from sysfs where NVML did not give it."""
    pcie = gpu.pcie
    for name in ("current_gen", "current_width"):
        if getattr(pcie, name) is None and getattr(info, name) is not None:
            setattr(pcie, name, getattr(info, name))
            pcie.unavailable.pop(name, None)
    if pcie.device_max_gen is None and info.max_gen is not None:
        pcie.device_max_gen = info.max_gen
        pcie.unavailable.pop("device_max_gen", None)
    pcie.device_max_width = info.max_width
    if info.max_width is None:
        pcie.mark_unavailable("device_max_width", info.unavailable.get("max_width", "unknown"))


def _merge_upstream_port(gpu: Gpu, info: EndpointInfo) -> None:
    """What the port above the GPU allows (``gpu.path`` read already)."""
    pcie = gpu.pcie
    if not gpu.path:
        pcie.mark_unavailable("host_max_gen", "no PCIe bridge above the GPU in sysfs")
        return
    port = gpu.path[0]
    # Without NVML's "max possible" values, derive them as min(GPU, upstream port), the
    # way NCCL does from the same sysfs files.
    for name, own in (("max_gen", info.max_gen), ("max_width", info.max_width)):
        theirs = getattr(port, name)
        if getattr(pcie, name) is None and own is not None and theirs is not None:
            setattr(pcie, name, min(own, theirs))
            pcie.unavailable.pop(name, None)
    pcie.host_max_gen = port.max_gen
    if pcie.host_max_gen is None:
        pcie.mark_unavailable(
            "host_max_gen", gpu.path[0].why("max_gen") or "upstream port max speed unknown"
        )


# ---------------------------------------------------------------------------- matrices


_CONNECTED = ("up", "sleep")
"""Link states that still join two devices: a sleeping link wakes on traffic, so it counts in
``NV#`` (as in ``nvidia-smi topo -m``) though never as "up"."""


def _nvlink_class(a: Gpu, b: Gpu) -> str | None:
    """``NV#`` between two GPUs from their connected links, or ``None``."""
    if a.bus_id is None or b.bus_id is None:
        return None
    direct = sum(
        1
        for link in a.nvlinks
        if link.state in _CONNECTED and link.remote_type == "gpu" and link.remote_bus_id == b.bus_id
    )
    if direct == 0:
        direct = sum(
            1
            for link in b.nvlinks
            if link.state in _CONNECTED
            and link.remote_type == "gpu"
            and link.remote_bus_id == a.bus_id
        )
    if direct:
        return f"NV{direct}"
    switch_a = sum(
        1 for link in a.nvlinks if link.state in _CONNECTED and link.remote_type == "switch"
    )
    switch_b = sum(
        1 for link in b.nvlinks if link.state in _CONNECTED and link.remote_type == "switch"
    )
    if switch_a and switch_b:
        return f"NV{min(switch_a, switch_b)}"
    return None


def _build_topology(
    capture: Capture, backend: NvmlBackend | None, sysfs: SysfsReader, usable: set[int]
) -> None:
    gpus, nics = capture.gpus, capture.nics
    labels = [g.label for g in gpus] + [n.label for n in nics]
    size = len(labels)
    links: list[list[str | None]] = [[None] * size for _ in range(size)]
    reasons: list[str] = []
    numa_count = len(capture.host.numa_nodes) or None
    used_nvml = False

    def by_path(bus_a: str | None, bus_b: str | None) -> tuple[str | None, str | None]:
        if bus_a is None or bus_b is None:
            return None, "PCI bus id unknown"
        return sysfs.link_class(bus_a, bus_b, numa_count)

    def put(i: int, j: int, cell: str | None, reason: str | None, names: str) -> None:
        if cell is None:
            reasons.append(f"{names}: {reason}")
        links[i][j] = links[j][i] = cell

    for i in range(size):
        links[i][i] = "X"
    for ia, ga in enumerate(gpus):
        for ib in range(ia + 1, len(gpus)):
            gb = gpus[ib]
            cell, reason, from_nvml = _gpu_pair_class(ga, gb, backend, usable)
            used_nvml = used_nvml or from_nvml
            if cell is None:
                cell, path_reason = by_path(ga.bus_id, gb.bus_id)
                reason = path_reason if cell is None else None
            put(ia, ib, cell, reason, f"{ga.label}↔{gb.label}")
    offset = len(gpus)
    for jn, nic in enumerate(nics):
        for ia, ga in enumerate(gpus):
            put(ia, offset + jn, *by_path(ga.bus_id, nic.bus_id), f"{ga.label}↔{nic.label}")
        for jm in range(jn + 1, len(nics)):
            other = nics[jm]
            put(
                offset + jn,
                offset + jm,
                *by_path(nic.bus_id, other.bus_id),
                f"{nic.label}↔{other.label}",
            )
    source = None
    if labels:
        source = "nvml" if used_nvml or any(g.nvlinks for g in gpus) else "sysfs"
    capture.topology = Topology(labels=labels, links=links, source=source)
    if reasons:
        more = f" (+{len(reasons) - 3} more)" if len(reasons) > 3 else ""
        capture.unavailable["topology"] = "; ".join(reasons[:3]) + more


def _gpu_pair_class(
    ga: Gpu, gb: Gpu, backend: NvmlBackend | None, usable: set[int]
) -> tuple[str | None, str | None, bool]:
    """``(class, why none, from NVML's topology call)`` of a GPU pair from NVLink, else NVML
    (``None`` when neither knows: sysfs decides)."""
    cell = _nvlink_class(ga, gb)
    if cell is not None or backend is None or not {ga.index, gb.index} <= usable:
        return cell, None, False
    level = backend.topology_common_ancestor(ga.index, gb.index)
    if isinstance(level, Unavailable):
        return None, level.reason, False
    cell = TOPOLOGY_LEVELS.get(level)
    return cell, None if cell else f"NVML reported unknown topology level {level}", cell is not None


def _build_p2p(capture: Capture, backend: NvmlBackend, usable: set[int]) -> None:
    indices = [g.index for g in capture.gpus]
    matrices: dict[str, list[list[str | None]]] = {}
    for cap in P2P_CAPS:
        cap_index = P2P_CAP_INDEX[cap]
        matrix: list[list[str | None]] = []
        reasons: list[str] = []
        for a in indices:
            row: list[str | None] = []
            for b in indices:
                if a == b:
                    row.append("X")
                    continue
                if a not in usable or b not in usable:
                    row.append(None)
                    reasons.append(f"GPU{a}↔GPU{b}: GPU not usable through NVML")
                    continue
                status = backend.p2p_status(a, b, cap_index)
                if isinstance(status, Unavailable):
                    row.append(None)
                    reasons.append(f"GPU{a}→GPU{b}: {status.reason}")
                else:
                    row.append(status)
            matrix.append(row)
        matrices[cap] = matrix
        if reasons:
            more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
            capture.unavailable[f"p2p.{cap}"] = reasons[0] + more
    capture.p2p = P2PStatus(gpus=indices, matrices=matrices)


# ------------------------------------------------------------------------------ compose


def _collect_nics(sysfs: SysfsReader) -> list[Nic]:
    """RDMA-capable NICs (InfiniBand or RoCE devices), as ``nvidia-smi topo -m`` lists them.

    Plain Ethernet functions without an RDMA device (a VM's virtio NIC, a management port) are
    left out: GPUDirect RDMA and NCCL's IB transport cannot use them, and listing them would
    make every GPU look "far from its NIC".
    """
    nics: list[Nic] = []
    rdma = [info for info in sysfs.nics() if info.rdma_devices]
    for n, info in enumerate(rdma):
        nic = Nic(
            label=f"NIC{n}",
            name=info.name,
            bus_id=info.bus_id,
            kind=info.kind,  # type: ignore[arg-type]
            netdevs=info.netdevs,
        )
        if info.name is None:
            nic.mark_unavailable(
                "name", "no network interface or RDMA device is bound to this PCI function"
            )
        nic.numa_node, reason = sysfs.numa_node(info.bus_id)
        if reason:
            nic.mark_unavailable("numa_node", reason)
        nic.path = sysfs.upstream_path(info.bus_id)
        nics.append(nic)
    return nics


def _fabric_manager(capture: Capture, proc_root: str) -> None:
    fm = capture.driver.fabric_manager
    nvswitch = any(
        link.state == "up" and link.remote_type == "switch"
        for gpu in capture.gpus
        for link in gpu.nvlinks
    )
    if not capture.gpus:
        fm.mark_unavailable("active", "no GPU was collected")
        return
    if not nvswitch:
        fm.mark_unavailable("active", "not an NVSwitch system (no NVLink to a switch is up)")
        return
    fm.mark_unavailable(
        "version", "not collected: compare `nv-fabricmanager --version` with the driver version"
    )
    try:
        pids = [p for p in os.listdir(proc_root) if p.isdecimal()]
    except OSError as exc:
        fm.mark_unavailable("active", f"{proc_root} unreadable: {exc}")
        return
    for pid in pids:
        try:
            with open(os.path.join(proc_root, pid, "comm"), encoding="utf-8") as handle:
                if handle.read().strip().startswith("nv-fabricmanag"):
                    fm.active = True
                    return
        except OSError:
            continue
    if capture.host.virtualization.container:
        fm.mark_unavailable(
            "active", "no nv-fabricmanager process visible; a container cannot see host processes"
        )
    else:
        fm.active = False


def _default_domain_type(capture: Capture) -> None:
    iommu = capture.host.iommu
    types = {g.bus_id: g.iommu_group_type for g in capture.gpus if g.iommu_group_type}
    if not capture.gpus:
        iommu.mark_unavailable("default_domain_type", "no GPU to read an IOMMU group type from")
    elif not types:
        iommu.mark_unavailable(
            "default_domain_type",
            next(
                (g.why("iommu_group_type") for g in capture.gpus if g.why("iommu_group_type")),
                "GPU IOMMU group types unknown",
            ),
        )
    elif len(set(types.values())) == 1:
        iommu.default_domain_type = next(iter(types.values()))
    else:
        detail = ", ".join(f"{bus}={kind}" for bus, kind in sorted(types.items()))
        iommu.mark_unavailable(
            "default_domain_type", f"GPUs are in IOMMU groups of different types: {detail}"
        )


def collect_live(
    sys_root: str = "/sys",
    proc_root: str = "/proc",
    etc_root: str = "/etc",
    backend: NvmlBackend | None = None,
    environ: Mapping[str, str] | None = None,
    fs_root: str | None = None,
) -> Capture:
    """Collect the facts of this machine (or of fake trees and a fake backend in tests).

    Args:
        sys_root: sysfs mount point.
        proc_root: procfs mount point.
        etc_root: Directory holding ``os-release``.
        backend: NVML backend; a :class:`PynvmlBackend` when ``None``. It is initialised and
            shut down once (reference counted, so a caller's open session stays open).
        environ: Environment to report (``os.environ`` when ``None``).
        fs_root: Root for container marker files; the parent of ``etc_root`` by default.

    Returns:
        A capture with ``origin.kind == "live"`` (``"synthetic"`` when the backend declares
        itself synthetic, as the fake does). Never raises.
    """
    capture = Capture.empty("live")
    capture.origin.created_at = utc_now()
    capture.origin.pcidoc_version = __version__
    capture.origin.tool_versions["python"] = platform.python_version()
    sysfs = SysfsReader(sys_root)

    capture.host = _guard(
        capture,
        "host",
        lambda: collect_host(proc_root, sys_root, etc_root, environ, fs_root),
        Host(),
    )
    nvidia_bus = _guard(capture, "driver.nvidia_pci_devices", sysfs.nvidia_gpus, None)
    if nvidia_bus is not None and sysfs.exists():
        capture.driver.nvidia_pci_devices = len(nvidia_bus)
    else:
        capture.driver.mark_unavailable("nvidia_pci_devices", f"{sys_root}/bus/pci is not readable")

    nvml = backend if backend is not None else PynvmlBackend()
    if getattr(nvml, "synthetic", False):
        capture.origin.kind = "synthetic"
        capture.origin.note = "GPU facts come from a synthetic fake NVML backend, not from NVML"
    version = getattr(nvml, "pynvml_version", None)
    if version:
        capture.origin.tool_versions["nvidia-ml-py"] = version
    capture.nics = _guard(capture, "nics", lambda: _collect_nics(sysfs), [])
    # Everything that asks NVML (GPUs, P2P, processes and the topology matrix) runs inside
    # one session: after the last shutdown NVML answers UNINITIALIZED.
    _guard(capture, "gpus", lambda: _collect_nvml(capture, nvml, sysfs, proc_root), None)
    _guard(capture, "host.iommu", lambda: _default_domain_type(capture), None)
    _guard(capture, "driver.fabric_manager", lambda: _fabric_manager(capture, proc_root), None)
    if capture.host.privileged and sysfs.config_truncated:
        capture.origin.warnings.append(
            "running as root, but PCI config space reads stop at 64 bytes (a user namespace?): "
            "ACS registers could not be read"
        )
    from pcidoc.collect.nccl_topo import attach_topo_file

    _guard(
        capture,
        "evidence",
        lambda: attach_topo_file(capture, dict(environ) if environ is not None else None),
        None,
    )
    if proc_root == "/proc":  # the real machine only: fake trees never read the host's log
        from pcidoc.collect.kernel_live import attach_kernel_log

        _guard(capture, "evidence", lambda: attach_kernel_log(capture), None)
    return _without_control_sequences(capture)


def _without_control_sequences(capture: Capture) -> Capture:
    """Process names, environment values and device names come from outside pcidoc: remove
    terminal control sequences from them once, here (:mod:`pcidoc.sanitize`)."""
    from pcidoc.sanitize import clean_data

    data = capture.model_dump(by_alias=True)
    cleaned = clean_data(data)
    return capture if cleaned is data else Capture.model_validate(cleaned)


def _collect_nvml(
    capture: Capture, backend: NvmlBackend, sysfs: SysfsReader, proc_root: str
) -> None:
    """Fill driver, GPU, P2P, process and topology facts within one NVML session.

    The topology matrix asks NVML for the common ancestor of GPU pairs, so it is built before
    ``shutdown``; without NVML it comes from sysfs alone.
    """
    error = backend.init()
    if error is not None:
        _record_init_failure(capture, error, proc_root)
        _guard(capture, "topology", lambda: _build_topology(capture, None, sysfs, set()), None)
        return
    try:
        usable = _guard(
            capture, "gpus", lambda: _collect_gpus(capture, backend, sysfs, proc_root), set()
        )
        _guard(capture, "topology", lambda: _build_topology(capture, backend, sysfs, usable), None)
    finally:
        backend.shutdown()


def _record_init_failure(capture: Capture, error: Unavailable, proc_root: str) -> None:
    """Driver facts and reasons when NVML does not initialise."""
    driver = capture.driver
    driver.nvml_available = False
    driver.nvml_error = error.error
    message = nvml_failure_message(
        error.error, driver.nvidia_pci_devices, capture.host.virtualization.container
    )
    driver.nvml_error_message = message
    capture.unavailable["gpus"] = message
    module = _kernel_module_version(proc_root)
    if module:
        driver.driver_version = module
        driver.nvml_error_message += f" (loaded kernel module: {module})"
    else:
        driver.mark_unavailable("driver_version", f"NVML: {error.error}")
    for name in ("nvml_version", "cuda_driver_version"):
        driver.mark_unavailable(name, f"NVML: {error.error}")
    virt = capture.host.virtualization
    virt.mark_unavailable("confidential_compute", f"NVML unavailable: {error.error}")
    virt.mark_unavailable("cc_multi_gpu_mode", f"NVML unavailable: {error.error}")


def _collect_gpus(
    capture: Capture, backend: NvmlBackend, sysfs: SysfsReader, proc_root: str
) -> set[int]:
    """Driver, GPU, P2P and process facts from an open NVML session; the usable GPU indices."""
    driver = capture.driver
    driver.nvml_available = True
    for name, call in (
        ("driver_version", backend.driver_version),
        ("nvml_version", backend.nvml_version),
    ):
        value = call()
        if isinstance(value, Unavailable):
            driver.mark_unavailable(name, value.reason)
        else:
            setattr(driver, name, value)
    cuda = backend.cuda_driver_version()
    if isinstance(cuda, Unavailable):
        driver.mark_unavailable("cuda_driver_version", cuda.reason)
    else:
        driver.cuda_driver_version = cuda_version_text(cuda)
    if driver.driver_version:
        capture.origin.tool_versions["nvidia-driver"] = driver.driver_version
    virt = capture.host.virtualization
    cc = backend.conf_compute()
    if isinstance(cc, Unavailable):
        virt.mark_unavailable("confidential_compute", cc.reason)
        virt.mark_unavailable("cc_multi_gpu_mode", cc.reason)
    else:
        virt.confidential_compute = cc.enabled
        virt.cc_multi_gpu_mode = cc.multi_gpu_mode
    count = backend.device_count()
    if isinstance(count, Unavailable):
        capture.unavailable["gpus"] = f"NVML could not count GPUs: {count.reason}"
        return set()
    processes: list[tuple[int, int, int | None]] = []
    for index in range(count):
        gpu = _guard(
            capture,
            f"gpus[{index}]",
            lambda index=index: _collect_gpu(backend, index, sysfs, processes, capture.host),
            None,
        )
        capture.gpus.append(gpu if gpu is not None else Gpu(index=index, nvml_error="UNKNOWN"))
    if count == 0:
        capture.unavailable["gpus"] = "NVML initialised but reports no GPU" + (
            f" although {driver.nvidia_pci_devices} NVIDIA GPUs are on the PCI bus "
            "(in a container: were the GPUs passed in?)"
            if driver.nvidia_pci_devices
            else ""
        )
    usable = {g.index for g in capture.gpus if g.nvml_error is None}
    _build_p2p(capture, backend, usable)
    capture.host.processes = collect_processes(processes, proc_root)
    return usable

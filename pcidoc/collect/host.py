"""Host facts from ``/proc``, ``/sys`` and ``/etc``: OS, CPUs, NUMA, IOMMU, virtualization,
GPUDirect modules, environment, and the CPU binding of processes that use GPUs.

All roots are parameters so tests run over fake trees. Every reader tolerates missing or
unreadable files: the value stays ``None`` and the reason goes into ``unavailable``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from pcidoc.collect.sysfs import SysfsReader, iommu_vendor
from pcidoc.model.cpulist import format_cpulist, parse_cpulist
from pcidoc.model.facts import GpuProcess, Host, Iommu, NumaNode

ENV_PREFIXES: tuple[str, ...] = ("NCCL_", "TORCH_NCCL_")
ENV_NAMES: frozenset[str] = frozenset(
    {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES"}
)

_IOMMU_ARG_KEYS: frozenset[str] = frozenset(
    {
        "intel_iommu",
        "amd_iommu",
        "iommu",
        "iommu.passthrough",
        "iommu.strict",
        "pcie_acs_override",
    }
)

_DMI_VENDORS: tuple[tuple[str, str], ...] = (
    ("kvm", "kvm"),
    ("qemu", "kvm"),
    ("vmware", "vmware"),
    ("virtualbox", "virtualbox"),
    ("innotek", "virtualbox"),
    ("xen", "xen"),
    ("amazon ec2", "amazon"),
    ("google compute engine", "google"),
    ("openstack", "openstack"),
    ("parallels", "parallels"),
    ("bochs", "bochs"),
)
"""Substrings of DMI ``sys_vendor``/``product_name`` that name a hypervisor."""


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _read_error(path: str) -> tuple[str | None, str | None]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(), None
    except PermissionError:
        return None, f"{path}: permission denied"
    except FileNotFoundError:
        return None, f"{path} does not exist"
    except OSError as exc:
        return None, f"{path}: {exc.strerror or exc}"


def _node_id(name: str) -> int | None:
    match = re.fullmatch(r"node(\d+)", name)
    return int(match.group(1)) if match else None


def parse_cpuinfo(text: str) -> dict[str, object]:
    """Summarise ``/proc/cpuinfo``: model, vendor, logical CPUs, packages and hypervisor flag.

    Returns a dict with keys ``model``, ``vendor`` (``intel``/``amd``/``arm``/``ibm`` or None),
    ``logical`` (count of ``processor`` entries), ``packages`` (distinct ``physical id``
    values, or None) and ``hypervisor`` (bool, or None when no flags line exists).
    """
    model: str | None = None
    vendor: str | None = None
    logical = 0
    packages: set[str] = set()
    hypervisor: bool | None = None
    implementer: str | None = None
    part: str | None = None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip().lower(), value.strip()
        if key == "processor":
            logical += 1
        elif key == "model name" and model is None:
            model = value
        elif key == "vendor_id" and vendor is None:
            vendor = {"genuineintel": "intel", "authenticamd": "amd"}.get(value.lower(), value)
        elif key == "physical id":
            packages.add(value)
        elif key in ("flags", "features") and hypervisor is None:
            hypervisor = "hypervisor" in value.split()
        elif key == "cpu implementer" and implementer is None:
            implementer = value
        elif key == "cpu part" and part is None:
            part = value
        elif key == "cpu" and model is None and value.upper().startswith("POWER"):
            model = value
            vendor = "ibm"
    if implementer is not None:
        vendor = vendor or "arm"
        if model is None:
            model = f"ARM implementer {implementer}" + (f" part {part}" if part else "")
    return {
        "model": model,
        "vendor": vendor,
        "logical": logical or None,
        "packages": len(packages) or None,
        "hypervisor": hypervisor,
    }


def iommu_kernel_args(cmdline: str) -> list[str]:
    """IOMMU- and ACS-related arguments of a kernel command line, in order."""
    found: list[str] = []
    for token in cmdline.split():
        key, _, value = token.partition("=")
        if key == "--":
            break
        is_pci_acs = key == "pci" and ("acs" in value or "noats" in value)
        if key in _IOMMU_ARG_KEYS or is_pci_acs:
            found.append(token)
    return found


def detect_container(
    proc_root: str, environ: Mapping[str, str], fs_root: str = "/"
) -> tuple[str | None, list[str]]:
    """Container runtime when detected (``kubernetes``, ``podman``, ``docker``, ``lxc``).

    Returns the runtime (or ``None``) and the evidence that was found.
    """
    evidence: list[str] = []
    cgroup = _read(os.path.join(proc_root, "1", "cgroup")) or ""
    runtime: str | None = None
    if environ.get("KUBERNETES_SERVICE_HOST") or "kubepods" in cgroup:
        runtime = "kubernetes"
        evidence.append(
            "KUBERNETES_SERVICE_HOST is set"
            if environ.get("KUBERNETES_SERVICE_HOST")
            else "/proc/1/cgroup names kubepods"
        )
    if os.path.exists(os.path.join(fs_root, "run", ".containerenv")):
        runtime = runtime or "podman"
        evidence.append("/run/.containerenv exists")
    if os.path.exists(os.path.join(fs_root, ".dockerenv")):
        runtime = runtime or "docker"
        evidence.append("/.dockerenv exists")
    if "docker" in cgroup:
        runtime = runtime or "docker"
        evidence.append("/proc/1/cgroup names docker")
    if "lxc" in cgroup:
        runtime = runtime or "lxc"
        evidence.append("/proc/1/cgroup names lxc")
    return runtime, evidence


def _hypervisor_vendor(sys_root: str) -> tuple[str | None, str | None]:
    texts = []
    for name in ("sys_vendor", "product_name"):
        text = _read(os.path.join(sys_root, "class", "dmi", "id", name))
        if text:
            texts.append(text.strip())
    hyp_type = _read(os.path.join(sys_root, "hypervisor", "type"))
    if hyp_type and hyp_type.strip():
        texts.append(hyp_type.strip())
    if not texts:
        return None, "no DMI vendor strings (/sys/class/dmi/id is missing or unreadable)"
    joined = " ".join(texts).lower()
    for needle, vendor in _DMI_VENDORS:
        if needle in joined:
            return vendor, None
    if "microsoft" in joined and "virtual" in joined:
        return "microsoft", None
    return None, f"DMI strings do not name a known hypervisor: {' / '.join(texts)}"


def _numa_nodes(sys_root: str) -> tuple[list[NumaNode], str | None]:
    folder = os.path.join(sys_root, "devices", "system", "node")
    try:
        names = os.listdir(folder)
    except OSError:
        return [], f"{folder} does not exist (kernel without NUMA support)"
    nodes: list[NumaNode] = []
    for node_id in sorted(n for n in (_node_id(name) for name in names) if n is not None):
        base = os.path.join(folder, f"node{node_id}")
        cpus = (_read(os.path.join(base, "cpulist")) or "").strip() or None
        distance_text = _read(os.path.join(base, "distance"))
        distances = None
        if distance_text:
            try:
                distances = [int(x) for x in distance_text.split()]
            except ValueError:
                distances = None
        memory = None
        meminfo = _read(os.path.join(base, "meminfo")) or ""
        match = re.search(r"MemTotal:\s+(\d+)\s*kB", meminfo)
        if match:
            memory = int(match.group(1)) * 1024
        nodes.append(
            NumaNode(id=node_id, cpus=cpus, distances=distances, memory_total_bytes=memory)
        )
    return nodes, None


def _sockets(sys_root: str) -> int | None:
    folder = os.path.join(sys_root, "devices", "system", "cpu")
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    packages: set[str] = set()
    for name in names:
        if not re.fullmatch(r"cpu\d+", name):
            continue
        text = _read(os.path.join(folder, name, "topology", "physical_package_id"))
        if text is not None and text.strip() not in ("", "-1"):
            packages.add(text.strip())
    return len(packages) or None


def _os_pretty_name(etc_root: str) -> str | None:
    candidates = [
        os.path.join(etc_root, "os-release"),
        os.path.join(os.path.dirname(etc_root.rstrip("/")) or "/", "usr", "lib", "os-release"),
    ]
    for path in candidates:
        text = _read(path)
        if not text:
            continue
        for line in text.splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.partition("=")[2].strip().strip('"').strip("'") or None
    return None


def collect_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The NCCL/CUDA/torch variables of ``environ`` that change GPU communication."""
    return {
        key: value
        for key, value in sorted(environ.items())
        if key.startswith(ENV_PREFIXES) or key in ENV_NAMES
    }


def collect_host(
    proc_root: str = "/proc",
    sys_root: str = "/sys",
    etc_root: str = "/etc",
    environ: Mapping[str, str] | None = None,
    fs_root: str | None = None,
) -> Host:
    """Collect host facts; never raises.

    Args:
        proc_root: Where procfs is mounted.
        sys_root: Where sysfs is mounted.
        etc_root: Where ``/etc`` is (for ``os-release``).
        environ: Environment to report (``os.environ`` when ``None``).
        fs_root: Root used for container marker files (``/.dockerenv``,
            ``/run/.containerenv``); defaults to the parent of ``etc_root``.

    Returns:
        A :class:`Host` with every unknown field's reason in ``unavailable``.
    """
    env = os.environ if environ is None else environ
    root = fs_root if fs_root is not None else (os.path.dirname(etc_root.rstrip("/")) or "/")
    host = Host()

    def text_of(path: str, field_name: str) -> str | None:
        text, error = _read_error(path)
        if text is None:
            host.mark_unavailable(field_name, error or f"{path} unreadable")
            return None
        return text.strip()

    host.hostname = text_of(os.path.join(proc_root, "sys", "kernel", "hostname"), "hostname")
    host.kernel = text_of(os.path.join(proc_root, "sys", "kernel", "osrelease"), "kernel")
    host.os = _os_pretty_name(etc_root)
    if host.os is None:
        host.mark_unavailable("os", f"no PRETTY_NAME in {etc_root}/os-release")
    host.cmdline = text_of(os.path.join(proc_root, "cmdline"), "cmdline")

    cpuinfo, error = _read_error(os.path.join(proc_root, "cpuinfo"))
    summary = parse_cpuinfo(cpuinfo) if cpuinfo else {}
    if not cpuinfo:
        for name in ("cpu_model", "cpu_vendor", "logical_cpus"):
            host.mark_unavailable(name, error or "/proc/cpuinfo is empty")
    host.cpu_model = summary.get("model")  # type: ignore[assignment]
    host.cpu_vendor = summary.get("vendor")  # type: ignore[assignment]
    host.logical_cpus = summary.get("logical")  # type: ignore[assignment]
    if cpuinfo and host.cpu_model is None:
        host.mark_unavailable("cpu_model", "/proc/cpuinfo names no CPU model")
    if host.logical_cpus is None:
        online = parse_cpulist(_read(os.path.join(sys_root, "devices", "system", "cpu", "online")))
        if online:
            host.logical_cpus = len(online)
    host.sockets = _sockets(sys_root) or summary.get("packages")  # type: ignore[assignment]
    if host.sockets is None:
        host.mark_unavailable(
            "sockets", "neither sysfs topology nor /proc/cpuinfo gives physical package ids"
        )

    uptime = text_of(os.path.join(proc_root, "uptime"), "uptime_s")
    if uptime:
        try:
            host.uptime_s = float(uptime.split()[0])
        except (ValueError, IndexError):
            host.mark_unavailable("uptime_s", f"/proc/uptime reads {uptime!r}")

    host.numa_nodes, reason = _numa_nodes(sys_root)
    if reason:
        host.mark_unavailable("numa_nodes", reason)
    balancing = text_of(
        os.path.join(proc_root, "sys", "kernel", "numa_balancing"), "numa_balancing"
    )
    if balancing is not None:
        host.numa_balancing = balancing not in ("0", "")

    host.iommu = collect_iommu(SysfsReader(sys_root), host.cmdline or "")
    _fill_virtualization(host, proc_root, sys_root, env, root, summary.get("hypervisor"))
    _fill_gpudirect(host, sys_root)
    host.environment = collect_environment(env)
    try:
        host.privileged = os.geteuid() == 0
    except AttributeError:  # pragma: no cover - not POSIX
        host.mark_unavailable("privileged", "no effective uid on this platform")
    return host


def collect_iommu(sysfs: SysfsReader, cmdline: str) -> Iommu:
    """IOMMU state from ``/sys/class/iommu``, ``/sys/kernel/iommu_groups`` and the cmdline."""
    iommu = Iommu(kernel_args=iommu_kernel_args(cmdline))
    units = sysfs.iommu_units()
    groups = sysfs.iommu_group_count()
    iommu.group_count = groups
    if groups is None:
        iommu.mark_unavailable("group_count", "/sys/kernel/iommu_groups does not exist")
    if units is None and groups is None:
        iommu.mark_unavailable("enabled", "neither /sys/class/iommu nor iommu_groups exist")
    else:
        iommu.enabled = bool(units) or bool(groups)
    iommu.vendor = iommu_vendor(units or [])
    if iommu.vendor is None:
        iommu.mark_unavailable("vendor", "no IOMMU unit in /sys/class/iommu")
    return iommu


def _fill_virtualization(
    host: Host,
    proc_root: str,
    sys_root: str,
    environ: Mapping[str, str],
    fs_root: str,
    hypervisor: object,
) -> None:
    virt = host.virtualization
    if isinstance(hypervisor, bool):
        virt.hypervisor = hypervisor
    else:
        virt.mark_unavailable("hypervisor", "no CPU flags line in /proc/cpuinfo")
    vendor, reason = _hypervisor_vendor(sys_root)
    if virt.hypervisor is False and vendor is None:
        pass  # bare metal: no vendor to name
    elif vendor is None:
        virt.mark_unavailable("vendor", reason or "hypervisor vendor unknown")
    else:
        virt.vendor = vendor
        if virt.hypervisor is None:
            virt.hypervisor = True
    virt.container, _ = detect_container(proc_root, environ, fs_root)


def _fill_gpudirect(host: Host, sys_root: str) -> None:
    modules = os.path.join(sys_root, "module")
    if not os.path.isdir(modules):
        reason = f"{modules} does not exist"
        host.gpudirect.mark_unavailable("nvidia_peermem", reason)
        host.gpudirect.mark_unavailable("nv_peer_mem", reason)
        return
    host.gpudirect.nvidia_peermem = os.path.isdir(os.path.join(modules, "nvidia_peermem"))
    host.gpudirect.nv_peer_mem = os.path.isdir(os.path.join(modules, "nv_peer_mem"))


# ---------------------------------------------------------------------------- processes


def _status_field(status: str, name: str) -> str | None:
    for line in status.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == name:
            return value.strip()
    return None


def collect_processes(
    entries: Iterable[tuple[int, int, int | None]], proc_root: str = "/proc"
) -> list[GpuProcess]:
    """Describe processes that use GPUs: name, CPU affinity and allowed memory nodes.

    Args:
        entries: ``(gpu_index, pid, used_memory_bytes)`` as NVML reports them.
        proc_root: Where procfs is mounted; psutil is used for affinity only on ``/proc``.

    Returns:
        One :class:`GpuProcess` per pid (GPU indices merged), in pid order; fields that could
        not be read are ``None`` with the reason in ``unavailable``.
    """
    by_pid: dict[int, GpuProcess] = {}
    for gpu_index, pid, used in entries:
        proc = by_pid.get(pid)
        if proc is None:
            proc = GpuProcess(pid=pid)
            by_pid[pid] = proc
        if gpu_index not in proc.gpus:
            proc.gpus.append(gpu_index)
        if used is not None:
            proc.used_memory_bytes = (proc.used_memory_bytes or 0) + used
    for pid, proc in by_pid.items():
        _describe_process(proc, pid, proc_root)
    return [by_pid[pid] for pid in sorted(by_pid)]


def _describe_process(proc: GpuProcess, pid: int, proc_root: str) -> None:
    base = os.path.join(proc_root, str(pid))
    if not os.path.isdir(base):
        reason = (
            f"pid {pid} is not visible in {proc_root} (another PID namespace, e.g. a container: "
            "NVML reports host pids) or it has exited"
        )
        for name in ("name", "cpu_affinity", "mems_allowed"):
            proc.mark_unavailable(name, reason)
        return
    comm, error = _read_error(os.path.join(base, "comm"))
    proc.name = comm.strip() if comm else None
    if proc.name is None:
        proc.mark_unavailable("name", error or "empty comm")
    status, status_error = _read_error(os.path.join(base, "status"))
    affinity: str | None = None
    affinity_error: str | None = None
    if proc_root == "/proc":
        try:
            import psutil

            affinity = format_cpulist(psutil.Process(pid).cpu_affinity())
        except Exception as exc:  # psutil.AccessDenied, NoSuchProcess, platform gaps
            affinity_error = f"sched_getaffinity({pid}) failed: {type(exc).__name__}"
    if affinity is None and status:
        affinity = _status_field(status, "Cpus_allowed_list")
    proc.cpu_affinity = affinity
    if affinity is None:
        proc.mark_unavailable("cpu_affinity", affinity_error or status_error or "not reported")
    proc.mems_allowed = _status_field(status, "Mems_allowed_list") if status else None
    if proc.mems_allowed is None:
        proc.mark_unavailable(
            "mems_allowed", status_error or f"no Mems_allowed_list in {base}/status"
        )

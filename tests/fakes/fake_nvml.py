"""A scriptable, in-memory NVML backend for tests, TUI tests and benchmarks.

Everything here is **synthetic**: names, UUIDs, bus ids and counter values describe no real
machine and were not measured. Product names carry ``(synthetic)`` and the driver version reads
``synthetic`` so that a fake capture can never pass for a recorded one.

A machine is described declaratively with :class:`FakeGpu` / :class:`FakeNvLink` records. Any
call can be made to fail with any NVML error name:

* ``FakeNvmlBackend(init_error="LIB_RM_VERSION_MISMATCH")`` - NVML does not initialise;
* ``FakeNvmlBackend(system_errors={"driver_version": "NO_PERMISSION"})`` - a system call fails;
* ``FakeGpu(errors={"pcie_replay_counter": "NOT_SUPPORTED"})`` - one device call fails;
* ``FakeGpu(lost=True)`` - every call on that GPU returns ``GPU_IS_LOST``;
* ``FakeGpu(field_errors={197: "NOT_SUPPORTED"})`` - one field in ``field_values`` fails.

Counters (PCIe bytes, NVLink KiB, replays) advance with :meth:`FakeNvmlBackend.advance`, driven
by per-GPU and per-link rates, so a sampler sees deterministic rates.

The fake is as strict as the real library where pcidoc depends on it:

* ``driver_branch`` (:data:`DRIVER_BRANCHES`: R535, R550, R570, R580) decides which field ids
  answer; every other field is NOT_SUPPORTED (fields 197/198 first appear with R555, the
  per-link NVLink counters 201-222 with R570). The fabric health mask needs the versioned
  fabric call (R550 and later). Blackwell GPUs answer NOT_SUPPORTED for the DL error fields
  161-163 and ``nvmlDeviceGetNvLinkErrorCounter`` on every branch.
* ``init``/``shutdown`` are reference counted and every call after the last ``shutdown``
  answers UNINITIALIZED.
* A sleeping link (``FakeNvLink(sleep=True)``) reports "enabled" through
  ``nvlink_state`` and 2 (SLEEP) through field 165, as NVML does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pcidoc.collect.nvml import (
    FI_NVLINK_ERROR_DL_CRC,
    FI_NVLINK_ERROR_DL_RECOVERY,
    FI_NVLINK_ERROR_DL_REPLAY,
    FI_NVLINK_GET_SPEED,
    FI_NVLINK_GET_STATE,
    FI_NVLINK_LINK_COUNT,
    FI_NVLINK_THROUGHPUT_DATA_RX,
    FI_NVLINK_THROUGHPUT_DATA_TX,
    FI_PCIE_COUNT_RX_BYTES,
    FI_PCIE_COUNT_TX_BYTES,
    FI_PCIE_REPLAY_COUNTER,
    FI_PCIE_REPLAY_ROLLOVER_COUNTER,
    NVLINK_ERROR_COUNTERS,
    PCIE_THROUGHPUT_KB,
    ComputeProcess,
    ConfCompute,
    FabricInfo,
    FieldRequest,
    FieldResult,
    Maybe,
    NvmlError,
    Unavailable,
    query,
)

T = TypeVar("T")

SYNTHETIC_DRIVER = "000.00-synthetic"

_BASE_FIELDS = frozenset({91, 94, 95, 138, 139, 161, 162, 163, 164, 165, 169, *range(173, 184)})
_R555_FIELDS = frozenset({197, 198})
_R570_FIELDS = frozenset(range(201, 223)) - {205, 216, 217, 218}  # 205, 216-218: deprecated


@dataclass(frozen=True)
class DriverBranch:
    """What one NVIDIA driver branch offers pcidoc (facts from ``nvml.h`` history).

    Attributes:
        name: ``R535``...
        fields: Field ids (among those pcidoc reads) that the branch answers.
        fabric_versions: Versions of the versioned fabric structure the driver accepts (empty:
            only the legacy ``nvmlDeviceGetGpuFabricInfo``, no health mask).
        missing_functions: C symbols the branch's ``libnvidia-ml`` does not export.
    """

    name: str
    fields: frozenset[int]
    fabric_versions: tuple[int, ...]
    missing_functions: frozenset[str] = frozenset()


DRIVER_BRANCHES: dict[str, DriverBranch] = {
    "R535": DriverBranch(
        "R535",
        _BASE_FIELDS,
        (),
        frozenset({"nvmlDeviceGetGpuFabricInfoV", "nvmlSystemGetConfComputeSettings"}),
    ),
    "R550": DriverBranch("R550", _BASE_FIELDS, (2,)),
    "R570": DriverBranch("R570", _BASE_FIELDS | _R555_FIELDS | _R570_FIELDS, (2,)),
    "R580": DriverBranch("R580", _BASE_FIELDS | _R555_FIELDS | _R570_FIELDS, (2, 3)),
}
"""The driver branches the fakes model (synthetic stand-ins, not recordings of drivers)."""

BLACKWELL_UNSUPPORTED_FIELDS = frozenset({161, 162, 163})
"""Per-link DL error fields that Blackwell (and later) GPUs answer NOT_SUPPORTED."""

_NVLINK_COUNT_FIELDS = {215: "recovery_events", 219: "effective_errors", 221: "symbol_errors"}

_NVLINK_ERROR_FIELDS = {
    FI_NVLINK_ERROR_DL_REPLAY: "replay",
    FI_NVLINK_ERROR_DL_RECOVERY: "recovery",
    FI_NVLINK_ERROR_DL_CRC: "crc_flit",
}


@dataclass
class FakeNvLink:
    """One NVLink of a fake GPU (raw NVML encodings, so mapping code is exercised).

    Attributes:
        link: Link id.
        up: Whether the link is active.
        version: Raw ``nvmlNvlinkVersion_t`` (6 maps to "4.0").
        remote_bus_id: PCI address of the peer (a GPU or an NVSwitch).
        remote_type: ``gpu``, ``switch``, ``ibmnpu`` or ``unknown``.
        speed_mbps: Value of field 164 (``None`` -> NOT_SUPPORTED).
        errors: Cumulative error counters by pcidoc name (``replay``, ``recovery``...).
        tx_kib: Cumulative TX data counter (field 138, KiB).
        rx_kib: Cumulative RX data counter (field 139, KiB).
        tx_kib_per_s: How fast ``tx_kib`` grows under :meth:`FakeNvmlBackend.advance`.
        rx_kib_per_s: How fast ``rx_kib`` grows.
        sleep: The link is in its low-power SLEEP state (field 165 reads 2).
        traffic_disabled: Trained but carrying no traffic: ``nvlink_state`` says "enabled",
            field 165 reads 3 (ACTIVE_TRAFFIC_DISABLED, nvml.h 13).
    """

    link: int
    up: bool = True
    version: int = 6
    remote_bus_id: str | None = None
    remote_type: str = "switch"
    speed_mbps: int | None = None
    errors: dict[str, int] = field(default_factory=dict)
    tx_kib: int = 0
    rx_kib: int = 0
    tx_kib_per_s: float = 0.0
    rx_kib_per_s: float = 0.0
    sleep: bool = False
    traffic_disabled: bool = False


@dataclass
class FakeFabric:
    """Raw fabric registration state (see :class:`pcidoc.collect.nvml.FabricInfo`)."""

    state: int = 3
    status: int = 0
    clique_id: int = 0
    cluster_uuid: str = "00000000-0000-0000-0000-000000000000"
    health_mask: int | None = 0


@dataclass
class FakeGpu:
    """A synthetic GPU. ``None`` in a value field makes that call return NOT_SUPPORTED."""

    bus_id: str
    name: str | None = "Fake GPU (synthetic)"
    uuid: str | None = None
    serial: str | None = None
    architecture: str | None = "unknown"
    pcie_current_gen: int | None = 4
    pcie_current_width: int | None = 16
    pcie_max_gen: int | None = 4
    pcie_max_width: int | None = 16
    pcie_gpu_max_gen: int | None = 4
    replay_count: int | None = 0
    replay_rollover_count: int | None = 0
    pcie_counters: dict[int, int] = field(default_factory=dict)
    """Other field values by field id (169, 173..182)."""
    pcie_tx_bytes: int | None = 0
    pcie_rx_bytes: int | None = 0
    pcie_tx_bytes_per_s: float = 0.0
    pcie_rx_bytes_per_s: float = 0.0
    replays_per_s: float = 0.0
    pstate: int | None = 0
    persistence_mode: bool | None = True
    mig_mode: tuple[bool, bool] | None = (False, False)
    virtualization_mode: str | None = "none"
    cpu_affinity: str | None = None
    memory_affinity: str | None = None
    numa_node_id: int | None = None
    bar1_total: int | None = None
    nvlinks: list[FakeNvLink] | None = None
    """``None``: NVLink calls return NOT_SUPPORTED (a PCIe-only GPU)."""
    fabric: FakeFabric | None = None
    processes: list[tuple[int, int | None]] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    """Protocol method name -> NVML error name returned by that call."""
    field_errors: dict[int | tuple[int, int], str] = field(default_factory=dict)
    """Field id (any scope) or ``(field id, scope)`` -> NVML error name for that value."""
    lost: bool = False
    """Every call on this GPU returns GPU_IS_LOST (as after Xid 79)."""

    def link(self, link_id: int) -> FakeNvLink | None:
        """The link with id ``link_id``, or ``None``."""
        for item in self.nvlinks or []:
            if item.link == link_id:
                return item
        return None


_PER_LINK = frozenset(
    {
        FI_NVLINK_THROUGHPUT_DATA_TX,
        FI_NVLINK_THROUGHPUT_DATA_RX,
        FI_NVLINK_GET_SPEED,
        FI_NVLINK_GET_STATE,
        *_NVLINK_ERROR_FIELDS,
        *_NVLINK_COUNT_FIELDS,
    }
)


def _link_field(link: FakeNvLink, field_id: int) -> Any:
    """One per-link field's raw value (``None``: not supported)."""
    if field_id == FI_NVLINK_THROUGHPUT_DATA_TX:
        return link.tx_kib
    if field_id == FI_NVLINK_THROUGHPUT_DATA_RX:
        return link.rx_kib
    if field_id == FI_NVLINK_GET_SPEED:
        return link.speed_mbps
    if field_id == FI_NVLINK_GET_STATE:
        return (3 if link.traffic_disabled else 2 if link.sleep else 1) if link.up else 0
    if field_id in _NVLINK_COUNT_FIELDS:
        return link.errors.get(_NVLINK_COUNT_FIELDS[field_id])
    return link.errors.get(_NVLINK_ERROR_FIELDS[field_id])


def _gpu_field(gpu: FakeGpu, field_id: int) -> Any:
    """One per-GPU field's raw value (``None``: not supported)."""
    simple = {
        FI_PCIE_COUNT_TX_BYTES: gpu.pcie_tx_bytes,
        FI_PCIE_COUNT_RX_BYTES: gpu.pcie_rx_bytes,
        FI_PCIE_REPLAY_COUNTER: gpu.replay_count,
        FI_PCIE_REPLAY_ROLLOVER_COUNTER: gpu.replay_rollover_count,
        FI_NVLINK_LINK_COUNT: None if gpu.nvlinks is None else len(gpu.nvlinks),
    }
    if field_id in simple:
        return simple[field_id]
    return gpu.pcie_counters.get(field_id)


class FakeNvmlBackend:
    """:class:`pcidoc.collect.nvml.NvmlBackend` over synthetic :class:`FakeGpu` records.

    Args:
        gpus: The GPUs in NVML index order.
        init_error: NVML error name ``init`` returns (``LIBRARY_NOT_FOUND``...).
        system_errors: Method name -> error for system-level calls (``driver_version``,
            ``device_count``, ``conf_compute``...).
        topology: ``(i, j)`` -> ``nvmlGpuTopologyLevel_t``; unordered pairs.
        default_topology: Level for pairs missing from ``topology`` (``None`` ->
            NOT_SUPPORTED).
        p2p: ``(i, j, cap_index)`` or ``(i, j)`` -> status code (``OK``, ``CNS``...).
        default_p2p: Status for pairs missing from ``p2p`` (``None`` -> NOT_SUPPORTED).
        driver_version: Driver version string.
        nvml_version: NVML version string.
        cuda_driver_version: NVML's CUDA version integer (``12040`` = 12.4).
        conf_compute: Confidential-computing state, ``None`` -> NOT_SUPPORTED.
        driver_branch: Key of :data:`DRIVER_BRANCHES` (which fields and calls exist).
    """

    synthetic = True
    """Captures made with this backend are marked ``origin.kind = "synthetic"``."""

    def __init__(
        self,
        gpus: Sequence[FakeGpu] = (),
        *,
        init_error: str | None = None,
        system_errors: Mapping[str, str] | None = None,
        topology: Mapping[tuple[int, int], int] | None = None,
        default_topology: int | None = 50,
        p2p: Mapping[tuple[int, ...], str] | None = None,
        default_p2p: str | None = "NS",
        driver_version: str = SYNTHETIC_DRIVER,
        nvml_version: str = "00.000.00-synthetic",
        cuda_driver_version: int = 12040,
        conf_compute: ConfCompute | None = None,
        driver_branch: str = "R580",
    ) -> None:
        self.branch = DRIVER_BRANCHES[driver_branch]
        self.gpus: list[FakeGpu] = list(gpus)
        for index, gpu in enumerate(self.gpus):
            if gpu.uuid is None:
                gpu.uuid = f"GPU-00000000-0000-4000-8000-{index:012d}"
        self.init_error = init_error
        self.system_errors: dict[str, str] = dict(system_errors or {})
        self.topology: dict[tuple[int, int], int] = {}
        for (a, b), level in (topology or {}).items():
            self.topology[(a, b)] = level
            self.topology[(b, a)] = level
        self.default_topology = default_topology
        self.p2p: dict[tuple[int, ...], str] = dict(p2p or {})
        self.default_p2p = default_p2p
        self._driver_version = driver_version
        self._nvml_version = nvml_version
        self._cuda_driver_version = cuda_driver_version
        self._conf_compute = conf_compute
        self.refs = 0
        self.calls: Counter[str] = Counter()
        """How many times each protocol method was called (for cost assertions)."""

    # -- factories ------------------------------------------------------------------------

    @classmethod
    def hgx(cls, n: int = 8, links: int = 18, numa_nodes: int = 2) -> FakeNvmlBackend:
        """A synthetic NVSwitch baseboard: ``n`` GPUs, ``links`` up NVLinks each to switches.

        GPUs are split evenly over ``numa_nodes`` sockets; pairs on one socket are NODE, pairs
        across sockets SYS; P2P is OK everywhere; the fabric is registered. All values are
        synthetic.
        """
        per_node = max(1, n // max(1, numa_nodes))
        gpus = []
        for i in range(n):
            node = min(i // per_node, numa_nodes - 1)
            gpus.append(
                FakeGpu(
                    bus_id=f"0000:{0x18 + 0x10 * i:02x}:00.0",
                    name="Fake NVSwitch GPU (synthetic)",
                    serial=f"SYN{i:010d}",
                    architecture="hopper",
                    pcie_current_gen=5,
                    pcie_max_gen=5,
                    pcie_gpu_max_gen=5,
                    cpu_affinity=f"{node * 32}-{node * 32 + 31}",
                    memory_affinity=str(node),
                    nvlinks=[
                        FakeNvLink(
                            link=k,
                            version=6,
                            remote_bus_id=f"0000:{0xA0 + k % 4:02x}:00.0",
                            remote_type="switch",
                            errors={"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0},
                        )
                        for k in range(links)
                    ],
                    fabric=FakeFabric(state=3, status=0, health_mask=0),
                )
            )
        topology = {}
        for i in range(n):
            for j in range(i + 1, n):
                same = min(i // per_node, numa_nodes - 1) == min(j // per_node, numa_nodes - 1)
                topology[(i, j)] = 40 if same else 50
        return cls(gpus, topology=topology, default_p2p="OK")

    @classmethod
    def pcie_pair(cls, p2p: str = "OK") -> FakeNvmlBackend:
        """Two synthetic PCIe-only GPUs behind one PCIe switch (SINGLE / PIX), no NVLink."""
        gpus = [
            FakeGpu(
                bus_id=f"0000:{bus:02x}:00.0",
                name="Fake PCIe GPU (synthetic)",
                serial=f"SYN{i:010d}",
                architecture="ada",
                cpu_affinity="0-15",
                memory_affinity="0",
                nvlinks=None,
            )
            for i, bus in enumerate((0x03, 0x04))
        ]
        return cls(gpus, topology={(0, 1): 10}, default_p2p=p2p)

    @classmethod
    def nvlink_bridge_pair(cls, links: int = 4) -> FakeNvmlBackend:
        """Two synthetic GPUs joined directly by ``links`` NVLinks (a bridge), on one host
        bridge (PHB) over PCIe."""
        buses = ("0000:41:00.0", "0000:61:00.0")
        gpus = []
        for i, bus in enumerate(buses):
            peer = buses[1 - i]
            gpus.append(
                FakeGpu(
                    bus_id=bus,
                    name="Fake bridged GPU (synthetic)",
                    architecture="ampere",
                    cpu_affinity="0-15",
                    nvlinks=[
                        FakeNvLink(link=k, version=4, remote_bus_id=peer, remote_type="gpu")
                        for k in range(links)
                    ],
                )
            )
        return cls(gpus, topology={(0, 1): 30}, default_p2p="OK")

    # -- counters -------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        """Advance every cumulative counter by its rate times ``seconds``."""
        for gpu in self.gpus:
            if gpu.pcie_tx_bytes is not None:
                gpu.pcie_tx_bytes += int(gpu.pcie_tx_bytes_per_s * seconds)
            if gpu.pcie_rx_bytes is not None:
                gpu.pcie_rx_bytes += int(gpu.pcie_rx_bytes_per_s * seconds)
            if gpu.replay_count is not None:
                gpu.replay_count += int(gpu.replays_per_s * seconds)
            for link in gpu.nvlinks or []:
                link.tx_kib += int(link.tx_kib_per_s * seconds)
                link.rx_kib += int(link.rx_kib_per_s * seconds)

    # -- plumbing -------------------------------------------------------------------------

    def _system(self, method: str, getter: Callable[[], T | None]) -> Maybe[T]:
        self.calls[method] += 1

        def run() -> T:
            if self.refs <= 0:
                raise NvmlError("UNINITIALIZED")
            error = self.system_errors.get(method)
            if error:
                raise NvmlError(error)
            value = getter()
            if value is None:
                raise NvmlError("NOT_SUPPORTED")
            return value

        return query(run)

    def _gpu(self, index: int) -> FakeGpu:
        if self.refs <= 0:
            raise NvmlError("UNINITIALIZED")
        if not 0 <= index < len(self.gpus):
            raise NvmlError("INVALID_ARGUMENT")
        gpu = self.gpus[index]
        if gpu.lost:
            raise NvmlError("GPU_IS_LOST")
        return gpu

    def _device(self, method: str, index: int, getter: Callable[[FakeGpu], T | None]) -> Maybe[T]:
        self.calls[method] += 1

        def run() -> T:
            gpu = self._gpu(index)
            error = gpu.errors.get(method)
            if error:
                raise NvmlError(error)
            value = getter(gpu)
            if value is None:
                raise NvmlError("NOT_SUPPORTED")
            return value

        return query(run)

    def _link(self, gpu: FakeGpu, link_id: int) -> FakeNvLink:
        if gpu.nvlinks is None:
            raise NvmlError("NOT_SUPPORTED")
        link = gpu.link(link_id)
        if link is None:
            raise NvmlError("INVALID_ARGUMENT")
        return link

    # -- session --------------------------------------------------------------------------

    def init(self) -> Unavailable | None:
        """Initialise (reference counted) unless ``init_error`` is set."""
        self.calls["init"] += 1
        if self.init_error:
            return Unavailable.from_name(self.init_error)
        self.refs += 1
        return None

    def shutdown(self) -> None:
        """Release one ``init``."""
        self.calls["shutdown"] += 1
        if self.refs > 0:
            self.refs -= 1

    # -- system ---------------------------------------------------------------------------

    def driver_version(self) -> Maybe[str]:
        """Driver version."""
        return self._system("driver_version", lambda: self._driver_version)

    def nvml_version(self) -> Maybe[str]:
        """NVML version."""
        return self._system("nvml_version", lambda: self._nvml_version)

    def cuda_driver_version(self) -> Maybe[int]:
        """CUDA driver version integer."""
        return self._system("cuda_driver_version", lambda: self._cuda_driver_version)

    def device_count(self) -> Maybe[int]:
        """Number of fake GPUs."""
        return self._system("device_count", lambda: len(self.gpus))

    def conf_compute(self) -> Maybe[ConfCompute]:
        """Confidential-computing state."""

        def read() -> ConfCompute | None:
            cc = self._conf_compute
            if (
                cc is not None
                and "nvmlSystemGetConfComputeSettings" in self.branch.missing_functions
            ):
                return ConfCompute(enabled=cc.enabled)  # no settings call: mode unknown
            return cc

        return self._system("conf_compute", read)

    # -- device ---------------------------------------------------------------------------

    def device_open(self, index: int) -> Unavailable | None:
        """Open a GPU; fails like ``nvmlDeviceGetHandleByIndex`` would."""
        result = self._device("device_open", index, lambda g: True)
        return result if isinstance(result, Unavailable) else None

    def name(self, index: int) -> Maybe[str]:
        """Name."""
        return self._device("name", index, lambda g: g.name)

    def uuid(self, index: int) -> Maybe[str]:
        """UUID."""
        return self._device("uuid", index, lambda g: g.uuid)

    def serial(self, index: int) -> Maybe[str]:
        """Serial."""
        return self._device("serial", index, lambda g: g.serial)

    def pci_bus_id(self, index: int) -> Maybe[str]:
        """Bus id."""
        return self._device("pci_bus_id", index, lambda g: g.bus_id)

    def architecture(self, index: int) -> Maybe[str]:
        """Architecture."""
        return self._device("architecture", index, lambda g: g.architecture)

    def pcie_current_gen(self, index: int) -> Maybe[int]:
        """Current gen."""
        return self._device("pcie_current_gen", index, lambda g: g.pcie_current_gen)

    def pcie_current_width(self, index: int) -> Maybe[int]:
        """Current width."""
        return self._device("pcie_current_width", index, lambda g: g.pcie_current_width)

    def pcie_max_gen(self, index: int) -> Maybe[int]:
        """Max gen (GPU and slot)."""
        return self._device("pcie_max_gen", index, lambda g: g.pcie_max_gen)

    def pcie_max_width(self, index: int) -> Maybe[int]:
        """Max width (GPU and slot)."""
        return self._device("pcie_max_width", index, lambda g: g.pcie_max_width)

    def pcie_gpu_max_gen(self, index: int) -> Maybe[int]:
        """Max gen of the GPU."""
        return self._device("pcie_gpu_max_gen", index, lambda g: g.pcie_gpu_max_gen)

    def pcie_replay_counter(self, index: int) -> Maybe[int]:
        """Replay counter."""
        return self._device("pcie_replay_counter", index, lambda g: g.replay_count)

    def _field(self, gpu: FakeGpu, field_id: int, scope: int) -> FieldResult:
        error = gpu.field_errors.get((field_id, scope)) or gpu.field_errors.get(field_id)
        if error:
            return Unavailable.from_name(error)
        if field_id not in self.branch.fields or (
            gpu.architecture == "blackwell" and field_id in BLACKWELL_UNSUPPORTED_FIELDS
        ):
            return Unavailable.from_name("NOT_SUPPORTED")
        if field_id in _PER_LINK:
            link = gpu.link(scope) if gpu.nvlinks is not None else None
            if link is None:
                return Unavailable.from_name(
                    "NOT_SUPPORTED" if gpu.nvlinks is None else "INVALID_ARGUMENT"
                )
            value = _link_field(link, field_id)
        else:
            value = _gpu_field(gpu, field_id)
        if value is None:
            return Unavailable.from_name("NOT_SUPPORTED")
        return value

    def field_values(self, index: int, fields: Sequence[FieldRequest]) -> Maybe[list[FieldResult]]:
        """Field values; each result carries its own error, as NVML's ``nvmlReturn``."""
        return self._device(
            "field_values",
            index,
            lambda g: [self._field(g, fid, scope) for fid, scope in fields],
        )

    def performance_state(self, index: int) -> Maybe[int]:
        """P-state."""
        return self._device("performance_state", index, lambda g: g.pstate)

    def persistence_mode(self, index: int) -> Maybe[bool]:
        """Persistence mode."""
        return self._device("persistence_mode", index, lambda g: g.persistence_mode)

    def mig_mode(self, index: int) -> Maybe[tuple[bool, bool]]:
        """MIG mode."""
        return self._device("mig_mode", index, lambda g: g.mig_mode)

    def virtualization_mode(self, index: int) -> Maybe[str]:
        """Virtualization mode."""
        return self._device("virtualization_mode", index, lambda g: g.virtualization_mode)

    def cpu_affinity(self, index: int) -> Maybe[str]:
        """CPU affinity."""
        return self._device("cpu_affinity", index, lambda g: g.cpu_affinity)

    def memory_affinity(self, index: int) -> Maybe[str]:
        """Memory affinity."""
        return self._device("memory_affinity", index, lambda g: g.memory_affinity)

    def numa_node_id(self, index: int) -> Maybe[int]:
        """GPU NUMA node id."""
        return self._device("numa_node_id", index, lambda g: g.numa_node_id)

    def bar1_total(self, index: int) -> Maybe[int]:
        """BAR1 size."""
        return self._device("bar1_total", index, lambda g: g.bar1_total)

    def pcie_throughput(self, index: int, counter: int) -> Maybe[int]:
        """KB/s over NVML's sample window: the GPU's steady PCIe rate (every branch)."""

        def read(gpu: FakeGpu) -> int | None:
            if counter not in (0, 1):
                raise NvmlError("INVALID_ARGUMENT")
            rate = (gpu.pcie_tx_bytes_per_s, gpu.pcie_rx_bytes_per_s)[counter]
            return int(rate // PCIE_THROUGHPUT_KB)

        return self._device("pcie_throughput", index, read)

    def _pair(self, method: str, a: int, b: int, getter: Callable[[], T | None]) -> Maybe[T]:
        self.calls[method] += 1

        def run() -> T:
            gpu_a, gpu_b = self._gpu(a), self._gpu(b)
            error = gpu_a.errors.get(method) or gpu_b.errors.get(method)
            if error:
                raise NvmlError(error)
            value = getter()
            if value is None:
                raise NvmlError("NOT_SUPPORTED")
            return value

        return query(run)

    def topology_common_ancestor(self, index_a: int, index_b: int) -> Maybe[int]:
        """Topology level."""
        return self._pair(
            "topology_common_ancestor",
            index_a,
            index_b,
            lambda: self.topology.get((index_a, index_b), self.default_topology),
        )

    def p2p_status(self, index_a: int, index_b: int, cap_index: int) -> Maybe[str]:
        """P2P status code."""

        def status() -> str | None:
            return (
                self.p2p.get((index_a, index_b, cap_index))
                or self.p2p.get((index_a, index_b))
                or self.default_p2p
            )

        return self._pair("p2p_status", index_a, index_b, status)

    def nvlink_state(self, index: int, link: int) -> Maybe[bool]:
        """Link state."""
        return self._device("nvlink_state", index, lambda g: self._link(g, link).up)

    def nvlink_version(self, index: int, link: int) -> Maybe[int]:
        """Raw link version."""
        return self._device("nvlink_version", index, lambda g: self._link(g, link).version)

    def nvlink_remote_bus_id(self, index: int, link: int) -> Maybe[str]:
        """Remote bus id."""
        return self._device(
            "nvlink_remote_bus_id", index, lambda g: self._link(g, link).remote_bus_id
        )

    def nvlink_remote_type(self, index: int, link: int) -> Maybe[str]:
        """Remote device type."""
        return self._device("nvlink_remote_type", index, lambda g: self._link(g, link).remote_type)

    def nvlink_error_counter(self, index: int, link: int, counter: int) -> Maybe[int]:
        """Link error counter."""
        names = {v: k for k, v in NVLINK_ERROR_COUNTERS.items()}

        def read(gpu: FakeGpu) -> int | None:
            found = self._link(gpu, link)
            if gpu.architecture == "blackwell":
                raise NvmlError("NOT_SUPPORTED")
            return found.errors.get(names.get(counter, ""))

        return self._device("nvlink_error_counter", index, read)

    def fabric_info(self, index: int) -> Maybe[FabricInfo]:
        """Fabric info."""

        def read(gpu: FakeGpu) -> FabricInfo | None:
            fabric = gpu.fabric
            if fabric is None:
                return None
            return FabricInfo(
                state=fabric.state,
                status=fabric.status,
                clique_id=fabric.clique_id,
                cluster_uuid=fabric.cluster_uuid,
                # Without the versioned call only the legacy v1 structure (no mask) exists.
                health_mask=fabric.health_mask if self.branch.fabric_versions else None,
            )

        return self._device("fabric_info", index, read)

    def compute_processes(self, index: int) -> Maybe[list[ComputeProcess]]:
        """Compute processes."""
        return self._device(
            "compute_processes",
            index,
            lambda g: [ComputeProcess(pid=pid, used_memory_bytes=mem) for pid, mem in g.processes],
        )

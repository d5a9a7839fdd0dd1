"""NVML access behind a small backend protocol; the only module that imports ``pynvml``.

pcidoc talks to NVML through :class:`NvmlBackend`, a protocol of plain, handle-free calls keyed
by GPU index. Every call returns either its value or an :class:`Unavailable` carrying the NVML
error name and a one-line reason (``"NVML: NOT_SUPPORTED"``); no call raises. Two
implementations exist:

* :class:`PynvmlBackend` over the official bindings (``nvidia-ml-py``), imported lazily in
  :meth:`PynvmlBackend.init`;
* :class:`tests.fakes.fake_nvml.FakeNvmlBackend`, a scriptable fake for tests, the TUI tests
  and benchmarks.

Both funnel every call through :func:`query`, the single place where NVML exceptions become
:class:`Unavailable` values. ``NOT_SUPPORTED`` is therefore an ordinary value, never a failure.

``init``/``shutdown`` are reference counted like NVML itself: a caller that keeps a backend
open (the TUI's counter sampler) can hand it to :func:`pcidoc.collect.live.collect_live`, which
calls ``init`` and ``shutdown`` once each without closing the caller's session.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from pcidoc.model.busid import bus_id_or_text as normalize_bus_id
from pcidoc.model.cpulist import format_cpulist, parse_cpulist

T = TypeVar("T")

# ------------------------------------------------------------------------- error values

NVML_ERROR_NAMES: dict[int, str] = {
    1: "UNINITIALIZED",
    2: "INVALID_ARGUMENT",
    3: "NOT_SUPPORTED",
    4: "NO_PERMISSION",
    5: "ALREADY_INITIALIZED",
    6: "NOT_FOUND",
    7: "INSUFFICIENT_SIZE",
    8: "INSUFFICIENT_POWER",
    9: "DRIVER_NOT_LOADED",
    10: "TIMEOUT",
    11: "IRQ_ISSUE",
    12: "LIBRARY_NOT_FOUND",
    13: "FUNCTION_NOT_FOUND",
    14: "CORRUPTED_INFOROM",
    15: "GPU_IS_LOST",
    16: "RESET_REQUIRED",
    17: "OPERATING_SYSTEM",
    18: "LIB_RM_VERSION_MISMATCH",
    19: "IN_USE",
    20: "MEMORY",
    21: "NO_DATA",
    22: "VGPU_ECC_NOT_SUPPORTED",
    23: "INSUFFICIENT_RESOURCES",
    24: "FREQ_NOT_SUPPORTED",
    25: "ARGUMENT_VERSION_MISMATCH",
    26: "DEPRECATED",
    27: "NOT_READY",
    28: "GPU_NOT_FOUND",
    29: "INVALID_STATE",
    30: "RESET_TYPE_NOT_SUPPORTED",
    999: "UNKNOWN",
}
"""``nvmlReturn_t`` codes -> names without the ``NVML_ERROR_`` prefix (from ``nvml.h``)."""

NVML_ERROR_CODES: dict[str, int] = {name: code for code, name in NVML_ERROR_NAMES.items()}

_REASON_HINTS: dict[str, str] = {
    "FUNCTION_NOT_FOUND": "driver too old for this call",
    "OPERATING_SYSTEM": "blocked by the operating system or cgroups",
    "PYNVML_NOT_INSTALLED": "the nvidia-ml-py package is not installed",
}

FATAL_DEVICE_ERRORS: frozenset[str] = frozenset({"GPU_IS_LOST", "RESET_REQUIRED"})
"""Per-device errors after which a GPU is not queried any further."""


@dataclass(frozen=True)
class Unavailable:
    """An NVML call that produced no value, and why.

    Attributes:
        error: NVML error name without prefix (``NOT_SUPPORTED``, ``GPU_IS_LOST``...), or a
            pcidoc name such as ``UNEXPECTED`` for an exception that was not an NVML error.
        reason: One line for humans and for ``unavailable`` maps, e.g. ``"NVML: NOT_SUPPORTED"``.
    """

    error: str
    reason: str

    @classmethod
    def from_name(cls, name: str) -> Unavailable:
        """The value for NVML error ``name`` with pcidoc's standard reason text."""
        hint = _REASON_HINTS.get(name)
        return cls(error=name, reason=f"NVML: {name}" + (f" ({hint})" if hint else ""))

    @classmethod
    def from_code(cls, code: int) -> Unavailable:
        """The value for an ``nvmlReturn_t`` code."""
        return cls.from_name(NVML_ERROR_NAMES.get(code, f"ERROR_{code}"))

    @property
    def fatal(self) -> bool:
        """True for errors after which the GPU should not be queried again."""
        return self.error in FATAL_DEVICE_ERRORS


Maybe = T | Unavailable
"""A value of type ``T`` or the reason there is none."""


class NvmlError(Exception):
    """An NVML error raised by pcidoc code (the fake backend); :func:`query` maps it.

    Args:
        name: NVML error name without prefix, e.g. ``"NOT_SUPPORTED"``.
    """

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _nvml_error_name(exc: BaseException) -> str | None:
    """Name of an exception raised by the pynvml bindings, without importing them."""
    mro_names = {klass.__name__ for klass in type(exc).__mro__}
    if "NVMLError" in mro_names:
        value = getattr(exc, "value", None)
        if isinstance(value, int):
            return NVML_ERROR_NAMES.get(value, f"ERROR_{value}")
    if "NVMLLibraryMismatchError" in mro_names:
        # Raised by the bindings' unversioned wrappers in place of FUNCTION_NOT_FOUND.
        return "FUNCTION_NOT_FOUND"
    return None


def query(fn: Callable[..., T], *args: Any) -> T | Unavailable:
    """Call ``fn(*args)``; turn any NVML error into an :class:`Unavailable` value.

    This is the one choke point for NVML calls in pcidoc. It never raises for an NVML error
    (nor for an unexpected exception inside the bindings, which becomes ``UNEXPECTED``).

    Args:
        fn: A pynvml function or a fake backend's implementation.
        *args: Its arguments.

    Returns:
        The function's result, or :class:`Unavailable`.
    """
    try:
        return fn(*args)
    except NvmlError as exc:
        return Unavailable.from_name(exc.name)
    except Exception as exc:
        name = _nvml_error_name(exc)
        if name is not None:
            return Unavailable.from_name(name)
        return Unavailable(
            error="UNEXPECTED", reason=f"NVML: unexpected {type(exc).__name__}: {exc}"
        )


def is_unavailable(value: object) -> bool:
    """True when ``value`` is an :class:`Unavailable`."""
    return isinstance(value, Unavailable)


# ----------------------------------------------------------------------- enum mappings

NVLINK_VERSIONS: dict[int, str] = {
    1: "1.0",
    2: "2.0",
    3: "2.2",
    4: "3.0",
    5: "3.1",
    6: "4.0",
    7: "5.0",
    8: "6.0",
}
"""``nvmlNvlinkVersion_t`` as defined by current ``nvml.h`` (NVML API 12.8 and later).

Older headers only said "requested NvLink version"; the integers returned by older driver
branches have not been verified against this table (research/checks.md §5).
"""


def nvlink_version_name(raw: int | None) -> str | None:
    """Map NVML's NVLink version integer to its version string (``6`` -> ``"4.0"``)."""
    if raw is None:
        return None
    return NVLINK_VERSIONS.get(raw)


TOPOLOGY_LEVELS: dict[int, str] = {
    0: "PIX",  # NVML_TOPOLOGY_INTERNAL: two GPUs on one board (behind the board's own switch)
    10: "PIX",  # SINGLE: through a single PCIe switch
    20: "PXB",  # MULTIPLE: several switches, no host bridge
    30: "PHB",  # HOSTBRIDGE
    40: "NODE",  # NODE (alias CPU): host bridges within one NUMA node
    50: "SYS",  # SYSTEM: across the SMP interconnect
}
"""``nvmlGpuTopologyLevel_t`` -> the ``nvidia-smi topo -m`` class."""

P2P_STATUS_CODES: dict[int, str] = {
    0: "OK",
    1: "CNS",
    2: "GNS",
    3: "TNS",
    4: "DR",
    5: "NS",
    6: "U",
}
"""``nvmlGpuP2PStatus_t`` -> the code printed by ``nvidia-smi topo -p2p``."""

P2P_CAP_INDEX: dict[str, int] = {"read": 0, "write": 1, "nvlink": 2, "atomics": 3, "pci": 4}
"""pcidoc capability name -> ``nvmlGpuP2PCapsIndex_t``.

Literal integers on purpose: some versions of the bindings define
``NVML_P2P_CAPS_INDEX_READ = 0,`` (a tuple).
"""

REMOTE_DEVICE_TYPES: dict[int, str] = {0: "gpu", 1: "ibmnpu", 2: "switch", 0xFF: "unknown"}
VIRTUALIZATION_MODES: dict[int, str] = {
    0: "none",
    1: "passthrough",
    2: "vgpu",
    3: "host_vgpu",
    4: "host_vsga",
}
ARCHITECTURES: dict[int, str] = {
    2: "kepler",
    3: "maxwell",
    4: "pascal",
    5: "volta",
    6: "turing",
    7: "ampere",
    8: "ada",
    9: "hopper",
    10: "blackwell",
    13: "rubin",
}
FABRIC_STATES: dict[int, str] = {
    0: "not_supported",
    1: "not_started",
    2: "in_progress",
    3: "completed",
}
CC_MULTI_GPU_MODES: dict[int, str] = {0: "none", 1: "protected_pcie", 2: "nvle"}

NVLINK_ERROR_COUNTERS: dict[str, int] = {
    "replay": 0,
    "recovery": 1,
    "crc_flit": 2,
    "crc_data": 3,
    "ecc_data": 4,
}
"""pcidoc counter name -> ``nvmlNvLinkErrorCounter_t``."""

# Field ids (nvml.h ``NVML_FI_*``) pcidoc reads.
FI_NVLINK_LINK_COUNT = 91
FI_PCIE_REPLAY_COUNTER = 94
FI_PCIE_REPLAY_ROLLOVER_COUNTER = 95
FI_NVLINK_THROUGHPUT_DATA_TX = 138
FI_NVLINK_THROUGHPUT_DATA_RX = 139
FI_NVLINK_ERROR_DL_REPLAY = 161
FI_NVLINK_ERROR_DL_RECOVERY = 162
FI_NVLINK_ERROR_DL_CRC = 163
FI_NVLINK_GET_SPEED = 164
FI_NVLINK_GET_STATE = 165
FI_PCIE_COUNT_TX_BYTES = 197  # first in driver branch R555 (nvml.h 12.5)
FI_PCIE_COUNT_RX_BYTES = 198  # first in driver branch R555
# Per-link NVLink counters of nvml.h 12.8 (driver branch R570). On Blackwell the DL error
# fields 161-163 and nvmlDeviceGetNvLinkErrorCounter answer NOT_SUPPORTED; these are what NVML
# offers there instead (scopeId = link id).
FI_NVLINK_COUNT_LINK_RECOVERY_EVENTS = 215
FI_NVLINK_COUNT_EFFECTIVE_ERRORS = 219

NVLINK_DL_ERROR_FIELDS: dict[str, int] = {
    "replay": FI_NVLINK_ERROR_DL_REPLAY,
    "recovery": FI_NVLINK_ERROR_DL_RECOVERY,
    "crc_flit": FI_NVLINK_ERROR_DL_CRC,
}
"""The pre-Blackwell per-link error fields (unsupported from Blackwell on)."""

NVLINK_COUNT_ERROR_FIELDS: dict[str, int] = {
    "recovery_events": FI_NVLINK_COUNT_LINK_RECOVERY_EVENTS,
    "effective_errors": FI_NVLINK_COUNT_EFFECTIVE_ERRORS,
}
"""The R570+ per-link error fields, read where the DL fields are not supported (Blackwell).

Field 221 (symbol errors) is left out on purpose: it counts raw errors before forward error
correction, which are normal on a healthy link, and would read as link errors."""

NVLINK_STATE_TRAFFIC_DISABLED = 3
"""Field 165's ``NVML_NVLINK_STATE_ACTIVE_TRAFFIC_DISABLED`` (``nvml.h`` 13): trained, but the
link carries no traffic."""

NVLINK_STATES: dict[int, str] = {
    0: "down",
    1: "up",
    2: "sleep",
    NVLINK_STATE_TRAFFIC_DISABLED: "down",
}
"""Field 165 (``NVML_FI_DEV_NVLINK_GET_STATE``): INACTIVE, ACTIVE, SLEEP (``nvml.h``), and
ACTIVE_TRAFFIC_DISABLED, which is down for every use pcidoc makes of a link (it moves no data):
never "up"."""

TRAFFIC_DISABLED_REASON = "NVML: link trained but traffic disabled (ACTIVE_TRAFFIC_DISABLED)"

PCIE_UTIL_TX_BYTES = 0
PCIE_UTIL_RX_BYTES = 1
"""``nvmlPcieUtilCounter_t`` for ``nvmlDeviceGetPcieThroughput`` (KB/s, 1 KB granularity)."""

PCIE_THROUGHPUT_KB = 1024
"""Bytes per "KB" of ``nvmlDeviceGetPcieThroughput`` (NVML counts in KiB like its NVLink
data fields)."""

PCIE_COUNTER_FIELDS: dict[str, int] = {
    "l0_to_recovery": 169,
    "correctable_errors": 173,
    "naks_received": 174,
    "receiver_error": 175,
    "bad_tlp": 176,
    "naks_sent": 177,
    "bad_dllp": 178,
    "non_fatal_error": 179,
    "fatal_error": 180,
    "unsupported_req": 181,
    "lcrc_error": 182,
}
"""Cumulative NVML PCIe counters kept in ``Gpu.pcie_counters`` (field ids from nvml.h)."""

NVML_NVLINK_MAX_LINKS = 36
"""Upper bound of link ids to probe when the link-count field is not available."""

_FABRIC_HEALTH_BITS: tuple[tuple[str, int], ...] = (
    ("degraded_bandwidth", 0),
    ("route_recovery", 2),
    ("route_unhealthy", 4),
    ("access_timeout_recovery", 6),
)
_FABRIC_INCORRECT_CONFIGURATION: dict[int, str] = {
    2: "incorrect_sysguid",
    3: "incorrect_chassis_sn",
    4: "no_partition",
    5: "insufficient_nvlinks",
    6: "incompatible_gpu_fw",
    7: "invalid_location",
    8: "gpu_state_invalid",
}


def decode_fabric_health(mask: int | None) -> list[str]:
    """Unhealthy conditions set in an NVML fabric health mask (empty when healthy or unknown).

    Each 2-bit condition reads 0 = not supported, 1 = true, 2 = false; the 4-bit
    incorrect-configuration group at bit 8 reads 0 = not supported, 1 = none, >= 2 = the problem.
    """
    if not mask:
        return []
    found = [name for name, shift in _FABRIC_HEALTH_BITS if (mask >> shift) & 0x3 == 1]
    config = (mask >> 8) & 0xF
    if config >= 2:
        found.append(
            "incorrect_configuration:" + _FABRIC_INCORRECT_CONFIGURATION.get(config, str(config))
        )
    return found


def fabric_status_name(code: int) -> str:
    """``"success"`` or the lower-case NVML error name carried in the fabric ``status``."""
    if code == 0:
        return "success"
    return NVML_ERROR_NAMES.get(code, f"error_{code}").lower()


def cuda_version_text(raw: int) -> str:
    """NVML's CUDA driver version integer to text (``12060`` -> ``"12.6"``)."""
    return f"{raw // 1000}.{(raw % 1000) // 10}"


def format_uuid_bytes(raw: bytes) -> str:
    """16 raw bytes as a canonical UUID string."""
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:32]}"


def _bits_to_ids(words: Sequence[int], word_bits: int = 64) -> list[int]:
    ids: list[int] = []
    for n, word in enumerate(words):
        value = int(word)
        bit = 0
        while value:
            if value & 1:
                ids.append(n * word_bits + bit)
            value >>= 1
            bit += 1
    return ids


# ----------------------------------------------------------------------- plain records


@dataclass(frozen=True)
class FabricInfo:
    """Raw NVLink fabric registration state of a GPU (``nvmlDeviceGetGpuFabricInfoV``).

    Attributes:
        state: ``nvmlGpuFabricState_t`` (0 not supported ... 3 completed).
        status: ``nvmlReturn_t`` of the registration; meaningful only when completed.
        clique_id: Fabric clique id.
        cluster_uuid: Cluster UUID as text.
        health_mask: Health bit field (v2 and later), ``None`` from the v1 call.
    """

    state: int
    status: int
    clique_id: int
    cluster_uuid: str
    health_mask: int | None = None


@dataclass(frozen=True)
class ComputeProcess:
    """A process holding a compute context on a GPU."""

    pid: int
    used_memory_bytes: int | None = None


@dataclass(frozen=True)
class ConfCompute:
    """System confidential-computing state."""

    enabled: bool
    multi_gpu_mode: str | None = None


FieldRequest = tuple[int, int]
"""``(field_id, scope_id)``; the scope is the NVLink id for per-link fields, else 0."""

FieldResult = int | float | Unavailable
"""One field's value, or why it has none (its own ``nvmlReturn``)."""


# ---------------------------------------------------------------------------- protocol


@runtime_checkable
class NvmlBackend(Protocol):
    """The NVML operations pcidoc needs; every call returns a value or :class:`Unavailable`."""

    def init(self) -> Unavailable | None:
        """Initialise NVML (reference counted); ``None`` on success."""

    def shutdown(self) -> None:
        """Release one ``init``; never raises."""

    def driver_version(self) -> Maybe[str]:
        """Driver version, e.g. ``"550.54.15"``."""

    def nvml_version(self) -> Maybe[str]:
        """NVML library version."""

    def cuda_driver_version(self) -> Maybe[int]:
        """CUDA version the driver supports, as NVML's integer (``12060``)."""

    def device_count(self) -> Maybe[int]:
        """Number of GPUs NVML sees."""

    def device_open(self, index: int) -> Unavailable | None:
        """Acquire the handle of GPU ``index``; ``None`` when it can be queried."""

    def name(self, index: int) -> Maybe[str]:
        """Product name."""

    def uuid(self, index: int) -> Maybe[str]:
        """``GPU-...`` UUID."""

    def serial(self, index: int) -> Maybe[str]:
        """Board serial number."""

    def pci_bus_id(self, index: int) -> Maybe[str]:
        """PCI address in sysfs form ``dddd:bb:dd.f``."""

    def architecture(self, index: int) -> Maybe[str]:
        """Architecture name (``hopper``...)."""

    def pcie_current_gen(self, index: int) -> Maybe[int]:
        """Current PCIe link generation."""

    def pcie_current_width(self, index: int) -> Maybe[int]:
        """Current PCIe link width."""

    def pcie_max_gen(self, index: int) -> Maybe[int]:
        """Max generation possible with this GPU and this slot."""

    def pcie_max_width(self, index: int) -> Maybe[int]:
        """Max width possible with this GPU and this slot."""

    def pcie_gpu_max_gen(self, index: int) -> Maybe[int]:
        """Max generation the GPU alone supports."""

    def pcie_replay_counter(self, index: int) -> Maybe[int]:
        """Cumulative PCIe replay counter."""

    def field_values(self, index: int, fields: Sequence[FieldRequest]) -> Maybe[list[FieldResult]]:
        """Read several fields in one call; each result carries its own error."""

    def performance_state(self, index: int) -> Maybe[int]:
        """P-state (0 = P0); 32 means unknown."""

    def persistence_mode(self, index: int) -> Maybe[bool]:
        """Persistence mode."""

    def mig_mode(self, index: int) -> Maybe[tuple[bool, bool]]:
        """MIG mode ``(current, pending)``."""

    def virtualization_mode(self, index: int) -> Maybe[str]:
        """``none``, ``passthrough``, ``vgpu``, ``host_vgpu`` or ``host_vsga``."""

    def cpu_affinity(self, index: int) -> Maybe[str]:
        """CPUs local to the GPU as a cpulist."""

    def memory_affinity(self, index: int) -> Maybe[str]:
        """NUMA nodes local to the GPU, as a list such as ``"0"`` or ``"0-1"``."""

    def numa_node_id(self, index: int) -> Maybe[int]:
        """The GPU's own NUMA node on platforms where GPU memory is a node (Grace)."""

    def bar1_total(self, index: int) -> Maybe[int]:
        """BAR1 size in bytes."""

    def pcie_throughput(self, index: int, counter: int) -> Maybe[int]:
        """``nvmlDeviceGetPcieThroughput`` in KB/s (NVML samples 20 ms per call)."""

    def topology_common_ancestor(self, index_a: int, index_b: int) -> Maybe[int]:
        """``nvmlGpuTopologyLevel_t`` between two GPUs."""

    def p2p_status(self, index_a: int, index_b: int, cap_index: int) -> Maybe[str]:
        """P2P status code (``OK``, ``CNS``...) for one capability index."""

    def nvlink_state(self, index: int, link: int) -> Maybe[bool]:
        """True when the link is active."""

    def nvlink_version(self, index: int, link: int) -> Maybe[int]:
        """Raw ``nvmlNvlinkVersion_t`` (map with :func:`nvlink_version_name`)."""

    def nvlink_remote_bus_id(self, index: int, link: int) -> Maybe[str]:
        """PCI address of the device at the other end of the link."""

    def nvlink_remote_type(self, index: int, link: int) -> Maybe[str]:
        """``gpu``, ``switch``, ``ibmnpu`` or ``unknown``."""

    def nvlink_error_counter(self, index: int, link: int, counter: int) -> Maybe[int]:
        """Cumulative ``nvmlNvLinkErrorCounter_t`` value."""

    def fabric_info(self, index: int) -> Maybe[FabricInfo]:
        """NVLink fabric registration (Hopper and newer)."""

    def compute_processes(self, index: int) -> Maybe[list[ComputeProcess]]:
        """Processes with a compute context on the GPU."""

    def conf_compute(self) -> Maybe[ConfCompute]:
        """System confidential-computing state."""


# ---------------------------------------------------------------------- pynvml backend


def _field_value(value: Any) -> int | float:
    """Decode a ``c_nvmlFieldValue_t`` union by its ``valueType``."""
    kind = int(value.valueType)
    union = value.value
    if kind == 0:
        return float(union.dVal)
    if kind == 1:
        return int(union.uiVal)
    if kind == 2:
        return int(union.ulVal)
    if kind == 4:
        return int(union.sllVal)
    if kind == 5:
        return int(union.siVal)
    if kind == 6:
        return int(union.usVal)
    return int(union.ullVal)


def _pci_info_bus_id(info: Any) -> str:
    raw = info.busId or info.busIdLegacy
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    if not text:
        text = f"{int(info.domain):04x}:{int(info.bus):02x}:{int(info.device):02x}.0"
    return normalize_bus_id(text)


def _as_text(value: Any) -> str:
    """Bindings before nvidia-ml-py 11.515 return ``bytes`` for names, UUIDs, versions."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def possible_cpu_count(sys_root: str = "/sys") -> int:
    """Highest possible CPU id + 1, for sizing NVML's CPU-affinity mask.

    ``os.cpu_count()`` counts CPUs, not ids: with offline or sparse ids (``0-3,64-67``) a mask
    sized from it drops the high ids. ``/sys/devices/system/cpu/possible`` names every id the
    kernel may ever use.
    """
    try:
        with open(os.path.join(sys_root, "devices", "system", "cpu", "possible")) as handle:
            ids = parse_cpulist(handle.read())
    except (OSError, ValueError):
        ids = None
    highest = max(ids) + 1 if ids else 0
    return max(highest, os.cpu_count() or 1, 1)


class _FabricInfoV1(ctypes.Structure):
    """``nvmlGpuFabricInfo_t`` as ``nvml.h`` lays it out (the legacy call's structure)."""

    _fields_ = [
        ("clusterUuid", ctypes.c_ubyte * 16),  # NVML_GPU_FABRIC_UUID_LEN
        ("status", ctypes.c_uint),  # nvmlReturn_t
        ("cliqueId", ctypes.c_uint),
        ("state", ctypes.c_ubyte),  # nvmlGpuFabricState_t is an unsigned char
    ]


class _FabricInfoV2(ctypes.Structure):
    """``nvmlGpuFabricInfo_v2_t`` (36 bytes, version ``0x02000024``)."""

    _fields_ = [("version", ctypes.c_uint), *_FabricInfoV1._fields_, ("healthMask", ctypes.c_uint)]


class _FabricInfoV3(ctypes.Structure):
    """``nvmlGpuFabricInfo_v3_t`` (40 bytes, version ``0x03000028``)."""

    _fields_ = [*_FabricInfoV2._fields_, ("healthSummary", ctypes.c_ubyte)]


FABRIC_STRUCTS: tuple[tuple[type[ctypes.Structure], int], ...] = (
    (_FabricInfoV3, 3),
    (_FabricInfoV2, 2),
)
"""The versioned fabric structures, newest first, declared here from ``nvml.h`` rather than
taken from the bindings: nvidia-ml-py 12.535-12.575 declare ``clusterUuid`` as 80 ``c_char``
(so every later field is read at the wrong offset), 12.535 names ``cliqueId`` ``partitionId``,
12.570/12.575 decode the UUID as text, and every release reads the one-byte ``state`` as a
four-byte integer (padding included). Only the call goes through the bindings."""


class _ConfComputeSettingsV1(ctypes.Structure):
    """``nvmlSystemConfComputeSettings_v1_t`` (nvidia-ml-py 12.535 does not declare it)."""

    _fields_ = [
        (name, ctypes.c_uint)
        for name in ("version", "environment", "ccFeature", "devToolsMode", "multiGpuMode")
    ]


def _fabric_record(record: Any, health_mask: int | None) -> FabricInfo:
    """A :class:`FabricInfo` from one of :data:`FABRIC_STRUCTS` (or the legacy structure);
    the cluster UUID is 16 raw bytes, whatever they hold."""
    return FabricInfo(
        state=int(record.state),
        status=int(record.status),
        clique_id=int(record.cliqueId),
        cluster_uuid=format_uuid_bytes(bytes(record.clusterUuid)),
        health_mask=health_mask,
    )


def _struct_version(record: Any, version: int) -> int:
    """``NVML_STRUCT_VERSION``: the structure size with the version in the top byte."""
    return ctypes.sizeof(record) | (version << 24)


class PynvmlBackend:
    """:class:`NvmlBackend` over the ``pynvml`` module of nvidia-ml-py.

    The module is imported in :meth:`init`, so constructing this object costs nothing and
    importing :mod:`pcidoc.collect.nvml` never loads NVML.
    """

    def __init__(self, bindings: Any = None, sys_root: str = "/sys") -> None:
        self._nvml: Any = bindings
        self._refs = 0
        self._handles: dict[int, Any] = {}
        self._sys_root = sys_root

    # -- session --------------------------------------------------------------------------

    def init(self) -> Unavailable | None:
        """Import the bindings and initialise NVML; ``None`` on success."""
        if self._nvml is None:
            try:
                import pynvml
            except ImportError:
                return Unavailable(
                    error="PYNVML_NOT_INSTALLED",
                    reason="NVML bindings missing: the nvidia-ml-py package is not installed",
                )
            self._nvml = pynvml
        result = query(self._nvml.nvmlInit)
        if isinstance(result, Unavailable):
            return result
        self._refs += 1
        return None

    def shutdown(self) -> None:
        """Release one :meth:`init`; handles are dropped when the last one is released."""
        if self._nvml is None or self._refs == 0:
            return
        query(self._nvml.nvmlShutdown)
        self._refs -= 1
        if self._refs == 0:
            self._handles.clear()

    @property
    def pynvml_version(self) -> str | None:
        """Version of the installed nvidia-ml-py package, when known."""
        try:
            from importlib.metadata import version

            return version("nvidia-ml-py")
        except Exception:
            return None

    def _handle(self, index: int) -> Any:
        """The handle of GPU ``index``; only a handle is cached, never a failure (a GPU that
        was busy or not yet visible is asked again on the next call)."""
        handle = self._handles.get(index)
        if handle is None:
            handle = query(self._nvml.nvmlDeviceGetHandleByIndex, index)
            if not isinstance(handle, Unavailable):
                self._handles[index] = handle
        return handle

    @property
    def _closed(self) -> bool:
        """No session open: NVML would answer UNINITIALIZED, and cached handles are stale."""
        return self._nvml is None or self._refs == 0

    def _device(self, index: int, fn: Callable[..., T], *args: Any) -> T | Unavailable:
        if self._closed:
            return Unavailable.from_name("UNINITIALIZED")
        handle = self._handle(index)
        if isinstance(handle, Unavailable):
            return handle
        return query(fn, handle, *args)

    def _pair(self, a: int, b: int, fn: Callable[..., T], *args: Any) -> T | Unavailable:
        if self._closed:
            return Unavailable.from_name("UNINITIALIZED")
        ha, hb = self._handle(a), self._handle(b)
        if isinstance(ha, Unavailable):
            return ha
        if isinstance(hb, Unavailable):
            return hb
        return query(fn, ha, hb, *args)

    def _system(self, fn: Callable[..., T], *args: Any) -> T | Unavailable:
        if self._closed:
            return Unavailable.from_name("UNINITIALIZED")
        return query(fn, *args)

    # -- system ---------------------------------------------------------------------------

    def driver_version(self) -> Maybe[str]:
        """Driver version."""
        result = self._system(lambda: _as_text(self._nvml.nvmlSystemGetDriverVersion()))
        return result

    def nvml_version(self) -> Maybe[str]:
        """NVML library version."""
        return self._system(lambda: _as_text(self._nvml.nvmlSystemGetNVMLVersion()))

    def cuda_driver_version(self) -> Maybe[int]:
        """CUDA driver version integer."""
        return self._system(lambda: int(self._nvml.nvmlSystemGetCudaDriverVersion()))

    def device_count(self) -> Maybe[int]:
        """Number of GPUs."""
        return self._system(lambda: int(self._nvml.nvmlDeviceGetCount()))

    def conf_compute(self) -> Maybe[ConfCompute]:
        """Confidential-computing state and multi-GPU mode."""
        nvml = self._nvml
        if self._closed:
            return Unavailable.from_name("UNINITIALIZED")
        state = query(nvml.nvmlSystemGetConfComputeState)
        if isinstance(state, Unavailable):
            return state

        def settings() -> int:
            record = _ConfComputeSettingsV1()
            record.version = _struct_version(record, 1)
            self._c_function("nvmlSystemGetConfComputeSettings")(ctypes.byref(record))
            return int(record.multiGpuMode)

        mode = query(settings)
        return ConfCompute(
            enabled=int(state.ccFeature) == 1,
            multi_gpu_mode=None
            if isinstance(mode, Unavailable)
            else CC_MULTI_GPU_MODES.get(mode, str(mode)),
        )

    # -- device ---------------------------------------------------------------------------

    def device_open(self, index: int) -> Unavailable | None:
        """Acquire (and cache) the handle of GPU ``index``."""
        if self._closed:
            return Unavailable.from_name("UNINITIALIZED")
        handle = self._handle(index)
        return handle if isinstance(handle, Unavailable) else None

    def name(self, index: int) -> Maybe[str]:
        """Product name."""
        return self._device(index, lambda h: _as_text(self._nvml.nvmlDeviceGetName(h)))

    def uuid(self, index: int) -> Maybe[str]:
        """UUID."""
        return self._device(index, lambda h: _as_text(self._nvml.nvmlDeviceGetUUID(h)))

    def serial(self, index: int) -> Maybe[str]:
        """Board serial."""
        return self._device(index, lambda h: _as_text(self._nvml.nvmlDeviceGetSerial(h)))

    def pci_bus_id(self, index: int) -> Maybe[str]:
        """Bus id, normalized."""
        return self._device(index, lambda h: _pci_info_bus_id(self._nvml.nvmlDeviceGetPciInfo(h)))

    def architecture(self, index: int) -> Maybe[str]:
        """Architecture name."""
        return self._device(
            index,
            lambda h: ARCHITECTURES.get(int(self._nvml.nvmlDeviceGetArchitecture(h)), "unknown"),
        )

    def pcie_current_gen(self, index: int) -> Maybe[int]:
        """Current link generation."""
        return self._device(index, self._nvml_fn("nvmlDeviceGetCurrPcieLinkGeneration"))

    def pcie_current_width(self, index: int) -> Maybe[int]:
        """Current link width."""
        return self._device(index, self._nvml_fn("nvmlDeviceGetCurrPcieLinkWidth"))

    def pcie_max_gen(self, index: int) -> Maybe[int]:
        """Max generation of GPU and slot."""
        return self._device(index, self._nvml_fn("nvmlDeviceGetMaxPcieLinkGeneration"))

    def pcie_max_width(self, index: int) -> Maybe[int]:
        """Max width of GPU and slot."""
        return self._device(index, self._nvml_fn("nvmlDeviceGetMaxPcieLinkWidth"))

    def pcie_gpu_max_gen(self, index: int) -> Maybe[int]:
        """Max generation of the GPU alone."""
        return self._device(index, self._nvml_fn("nvmlDeviceGetGpuMaxPcieLinkGeneration"))

    def pcie_replay_counter(self, index: int) -> Maybe[int]:
        """PCIe replay counter."""
        return self._device(index, self._nvml_fn("nvmlDeviceGetPcieReplayCounter"))

    def _nvml_fn(self, name: str) -> Callable[..., Any]:
        """A pynvml function looked up at call time (so a missing one maps to an error)."""

        def call(*args: Any) -> Any:
            if self._nvml is None:
                raise NvmlError("UNINITIALIZED")
            fn = getattr(self._nvml, name, None)
            if fn is None:
                raise NvmlError("FUNCTION_NOT_FOUND")
            return fn(*args)

        return call

    def field_values(self, index: int, fields: Sequence[FieldRequest]) -> Maybe[list[FieldResult]]:
        """Several fields in one ``nvmlDeviceGetFieldValues`` call; each value checked."""

        def read(handle: Any) -> list[FieldResult]:
            values = self._nvml.nvmlDeviceGetFieldValues(handle, [tuple(f) for f in fields])
            out: list[FieldResult] = []
            for value in values:
                code = int(value.nvmlReturn)
                out.append(Unavailable.from_code(code) if code else _field_value(value))
            return out

        if not fields:
            return []
        return self._device(index, read)

    def performance_state(self, index: int) -> Maybe[int]:
        """P-state."""
        return self._device(index, self._nvml_fn("nvmlDeviceGetPerformanceState"))

    def persistence_mode(self, index: int) -> Maybe[bool]:
        """Persistence mode."""
        return self._device(index, lambda h: bool(self._nvml.nvmlDeviceGetPersistenceMode(h)))

    def mig_mode(self, index: int) -> Maybe[tuple[bool, bool]]:
        """MIG (current, pending)."""

        def read(handle: Any) -> tuple[bool, bool]:
            current, pending = self._nvml.nvmlDeviceGetMigMode(handle)
            return bool(current), bool(pending)

        return self._device(index, read)

    def virtualization_mode(self, index: int) -> Maybe[str]:
        """Virtualization mode name."""
        return self._device(
            index,
            lambda h: VIRTUALIZATION_MODES.get(
                int(self._nvml.nvmlDeviceGetVirtualizationMode(h)), "unknown"
            ),
        )

    def cpu_affinity(self, index: int) -> Maybe[str]:
        """Local CPUs as a cpulist (the mask covers every possible CPU id)."""
        words = max(1, (possible_cpu_count(self._sys_root) + 63) // 64)

        def read(handle: Any) -> str:
            mask = self._nvml.nvmlDeviceGetCpuAffinity(handle, words)
            ids = _bits_to_ids(list(mask))
            if not ids:
                raise NvmlError("NO_DATA")  # an all-zero mask says nothing
            return format_cpulist(ids) or ""

        return self._device(index, read)

    def memory_affinity(self, index: int) -> Maybe[str]:
        """Local NUMA nodes."""

        def read(handle: Any) -> str:
            mask = self._nvml.nvmlDeviceGetMemoryAffinity(handle, 4, 0)  # scope NODE
            ids = _bits_to_ids(list(mask))
            if not ids:
                raise NvmlError("NO_DATA")
            return format_cpulist(ids) or ""

        return self._device(index, read)

    def numa_node_id(self, index: int) -> Maybe[int]:
        """GPU memory NUMA node (C2C platforms)."""
        return self._device(index, self._nvml_fn("nvmlDeviceGetNumaNodeId"))

    def bar1_total(self, index: int) -> Maybe[int]:
        """BAR1 size."""
        return self._device(
            index, lambda h: int(self._nvml.nvmlDeviceGetBAR1MemoryInfo(h).bar1Total)
        )

    def pcie_throughput(self, index: int, counter: int) -> Maybe[int]:
        """PCIe throughput in KB/s over NVML's 20 ms sample window."""
        return self._device(
            index,
            lambda h: int(self._nvml.nvmlDeviceGetPcieThroughput(h, counter)),
        )

    def topology_common_ancestor(self, index_a: int, index_b: int) -> Maybe[int]:
        """Topology level between two GPUs."""
        return self._pair(index_a, index_b, self._nvml_fn("nvmlDeviceGetTopologyCommonAncestor"))

    def p2p_status(self, index_a: int, index_b: int, cap_index: int) -> Maybe[str]:
        """P2P status code."""

        def read(ha: Any, hb: Any) -> str:
            raw = int(self._nvml.nvmlDeviceGetP2PStatus(ha, hb, cap_index))
            return P2P_STATUS_CODES.get(raw, "U")

        return self._pair(index_a, index_b, read)

    def nvlink_state(self, index: int, link: int) -> Maybe[bool]:
        """Link active."""
        return self._device(index, lambda h: bool(self._nvml.nvmlDeviceGetNvLinkState(h, link)))

    def nvlink_version(self, index: int, link: int) -> Maybe[int]:
        """Raw link version."""
        return self._device(index, lambda h: int(self._nvml.nvmlDeviceGetNvLinkVersion(h, link)))

    def nvlink_remote_bus_id(self, index: int, link: int) -> Maybe[str]:
        """Remote PCI address."""
        return self._device(
            index,
            lambda h: _pci_info_bus_id(self._nvml.nvmlDeviceGetNvLinkRemotePciInfo(h, link)),
        )

    def nvlink_remote_type(self, index: int, link: int) -> Maybe[str]:
        """Remote device type."""
        return self._device(
            index,
            lambda h: REMOTE_DEVICE_TYPES.get(
                int(self._nvml.nvmlDeviceGetNvLinkRemoteDeviceType(h, link)), "unknown"
            ),
        )

    def nvlink_error_counter(self, index: int, link: int, counter: int) -> Maybe[int]:
        """Link error counter."""
        return self._device(
            index, lambda h: int(self._nvml.nvmlDeviceGetNvLinkErrorCounter(h, link, counter))
        )

    def fabric_info(self, index: int) -> Maybe[FabricInfo]:
        """Fabric info: the versioned call with the newest structure the driver accepts (v3,
        then v2), else the legacy call (no health mask). The structures are pcidoc's own
        (:data:`FABRIC_STRUCTS`), so every nvidia-ml-py release reads the same bytes."""
        if self._closed:
            return Unavailable.from_name("UNINITIALIZED")
        for struct, version in FABRIC_STRUCTS:
            result = self._device(index, self._fabric_versioned, struct, version)
            if not (
                isinstance(result, Unavailable)
                and result.error in ("ARGUMENT_VERSION_MISMATCH", "FUNCTION_NOT_FOUND")
            ):
                return result
        return self._device(index, self._fabric_legacy)

    def _fabric_versioned(
        self, handle: Any, struct: type[ctypes.Structure], version: int
    ) -> FabricInfo:
        record: Any = struct()
        record.version = _struct_version(record, version)
        self._c_function("nvmlDeviceGetGpuFabricInfoV")(handle, ctypes.byref(record))
        return _fabric_record(record, int(record.healthMask))

    def _fabric_legacy(self, handle: Any) -> FabricInfo:
        record = _FabricInfoV1()
        self._c_function("nvmlDeviceGetGpuFabricInfo")(handle, ctypes.byref(record))
        return _fabric_record(record, None)

    def _c_function(self, name: str) -> Callable[..., Any]:
        """C function ``name`` of the bindings' library, its return code checked here: some
        releases have no wrapper for it (12.535 lacks ``nvmlDeviceGetGpuFabricInfoV``), and
        some wrappers return the code unchecked (``nvmlSystemGetConfComputeSettings``)."""
        lookup = getattr(self._nvml, "_nvmlGetFunctionPointer", None)
        symbol = lookup(name) if lookup is not None else getattr(self._nvml, name, None)
        if symbol is None:
            raise NvmlError("FUNCTION_NOT_FOUND")

        def call(*args: Any) -> int:
            code = symbol(*args)
            if isinstance(code, int) and code:
                raise NvmlError(NVML_ERROR_NAMES.get(code, f"ERROR_{code}"))
            return 0

        return call

    def compute_processes(self, index: int) -> Maybe[list[ComputeProcess]]:
        """Compute processes (v3 call, falling back to v2)."""

        def read(handle: Any, fn_name: str) -> list[ComputeProcess]:
            fn = getattr(self._nvml, fn_name, None)
            if fn is None:
                raise NvmlError("FUNCTION_NOT_FOUND")
            return [
                ComputeProcess(
                    pid=int(proc.pid),
                    used_memory_bytes=None
                    if proc.usedGpuMemory is None
                    else int(proc.usedGpuMemory),
                )
                for proc in fn(handle)
            ]

        result = self._device(index, read, "nvmlDeviceGetComputeRunningProcesses_v3")
        if isinstance(result, Unavailable) and result.error == "FUNCTION_NOT_FOUND":
            result = self._device(index, read, "nvmlDeviceGetComputeRunningProcesses_v2")
        return result

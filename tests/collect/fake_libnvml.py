"""A stand-in for ``libnvidia-ml.so.1`` at the C-call level, to drive the real ``pynvml``
bindings (and so :class:`pcidoc.collect.nvml.PynvmlBackend`) without a GPU.

The real bindings look C symbols up with ``getattr(nvmlLib, name)`` and call them with ctypes
arguments (``byref(...)`` out-parameters, string buffers). :class:`FakeLibNvml` implements a
few of those symbols in Python and writes results into the ctypes objects the bindings pass.
It is as strict as the real library where pcidoc depends on it:

* a symbol it does not define, or one its driver branch lacks
  (:data:`tests.fakes.fake_nvml.DRIVER_BRANCHES`), makes the bindings raise FUNCTION_NOT_FOUND;
* ``nvmlInitWithFlags``/``nvmlShutdown`` are reference counted, and every other call answers
  UNINITIALIZED (1) when no session is open;
* field ids the branch does not know answer NOT_SUPPORTED in their own ``nvmlReturn``;
* versioned structures must carry a version the branch accepts (ARGUMENT_VERSION_MISMATCH);
* the CPU-affinity mask is written only as far as the caller's ``cpuSetSize``.

All values are synthetic.
"""

from __future__ import annotations

import ctypes
import types
from dataclasses import dataclass
from typing import Any

import pytest

from tests.fakes.fake_nvml import BLACKWELL_UNSUPPORTED_FIELDS, DRIVER_BRANCHES

HANDLE_BASE = 0x1000
SUCCESS, UNINITIALIZED, INVALID_ARGUMENT, NOT_SUPPORTED = 0, 1, 2, 3
GPU_IS_LOST, ARGUMENT_VERSION_MISMATCH = 15, 25

_SESSIONLESS = frozenset({"nvmlInitWithFlags", "nvmlInit_v2", "nvmlInit", "nvmlShutdown"})

LOCAL_CPUS = (0, 1, 2, 3, 33, 200)
"""CPUs local to every fake GPU; 200 lies beyond a mask sized for a few CPUs."""


def _out(ref: Any) -> Any:
    """The ctypes object behind a ``byref(...)`` argument."""
    return ref._obj


def _index(handle: Any) -> int:
    address = ctypes.cast(handle, ctypes.c_void_p).value or 0
    return address - HANDLE_BASE


class FakeLibNvml:
    """Two synthetic GPUs; GPU 1's handle cannot be opened (GPU_IS_LOST).

    Args:
        branch: Key of ``DRIVER_BRANCHES``: which fields, calls and structure versions exist.
        architecture: ``nvmlDeviceArchitecture_t`` of the GPUs (9 Hopper, 10 Blackwell).
    """

    bus_ids = (b"00000000:03:00.0", b"00000000:04:00.0")

    def __init__(self, branch: str = "R580", architecture: int = 9) -> None:
        self.branch = DRIVER_BRANCHES[branch]
        self.architecture = architecture
        self.refs = 0
        self.fields: dict[int, int] = {197: 123_456_789_012, 94: 7, 165: 2, 215: 4, 219: 1}
        self.lost: set[int] = {1}
        self.handle_calls = 0
        self.fabric = FabricState()

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("nvml"):
            branch = object.__getattribute__(self, "branch")
            if name in branch.missing_functions:
                raise AttributeError(name)  # the bindings turn this into FUNCTION_NOT_FOUND
            fn = object.__getattribute__(self, name)
            if name not in _SESSIONLESS and object.__getattribute__(self, "refs") <= 0:
                return lambda *args: UNINITIALIZED
            return fn
        return object.__getattribute__(self, name)

    # -- session --------------------------------------------------------------------------

    def nvmlInitWithFlags(self, flags: Any) -> int:
        self.refs += 1
        return SUCCESS

    def nvmlShutdown(self) -> int:
        if self.refs <= 0:
            return UNINITIALIZED
        self.refs -= 1
        return SUCCESS

    # -- system ---------------------------------------------------------------------------

    def nvmlSystemGetDriverVersion(self, buffer: Any, size: Any) -> int:
        buffer.value = b"000.00-synthetic"
        return SUCCESS

    def nvmlSystemGetNVMLVersion(self, buffer: Any, size: Any) -> int:
        buffer.value = b"00.000.00-synthetic"
        return SUCCESS

    def nvmlSystemGetCudaDriverVersion(self, ref: Any) -> int:
        _out(ref).value = 12060
        return SUCCESS

    def nvmlSystemGetConfComputeState(self, ref: Any) -> int:
        record = _out(ref)
        record.environment, record.ccFeature, record.devToolsMode = 1, 1, 0
        return SUCCESS

    def nvmlSystemGetConfComputeSettings(self, ref: Any) -> int:
        if ctypes.c_uint.from_address(_address(ref)).value != 0x01000014:  # v1, 20 bytes
            return ARGUMENT_VERSION_MISMATCH
        record = _ConfComputeC(version=0x01000014, environment=1, ccFeature=1, multiGpuMode=1)
        _write_c(ref, record)
        return SUCCESS

    def nvmlDeviceGetCount_v2(self, ref: Any) -> int:
        _out(ref).value = 2
        return SUCCESS

    def nvmlDeviceGetHandleByIndex_v2(self, index: Any, ref: Any) -> int:
        self.handle_calls += 1
        if index.value in self.lost:
            return GPU_IS_LOST
        slot = ctypes.cast(ctypes.pointer(_out(ref)), ctypes.POINTER(ctypes.c_void_p))
        slot[0] = HANDLE_BASE + index.value
        return SUCCESS

    # -- device ---------------------------------------------------------------------------

    def nvmlDeviceGetName(self, handle: Any, buffer: Any, size: Any) -> int:
        buffer.value = f"Fake C-level GPU {_index(handle)} (synthetic)".encode()
        return SUCCESS

    def nvmlDeviceGetUUID(self, handle: Any, buffer: Any, size: Any) -> int:
        buffer.value = f"GPU-00000000-0000-4000-8000-{_index(handle):012d}".encode()
        return SUCCESS

    def nvmlDeviceGetPciInfo_v3(self, handle: Any, ref: Any) -> int:
        _out(ref).busId = self.bus_ids[_index(handle)]
        return SUCCESS

    def nvmlDeviceGetArchitecture(self, handle: Any, ref: Any) -> int:
        _out(ref).value = self.architecture
        return SUCCESS

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: Any, ref: Any) -> int:
        _out(ref).value = 4
        return SUCCESS

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: Any, ref: Any) -> int:
        _out(ref).value = 16
        return SUCCESS

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: Any, ref: Any) -> int:
        _out(ref).value = 4
        return SUCCESS

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: Any, ref: Any) -> int:
        return NOT_SUPPORTED

    def nvmlDeviceGetPerformanceState(self, handle: Any, ref: Any) -> int:
        _out(ref).value = 8
        return SUCCESS

    def nvmlDeviceGetMigMode(self, handle: Any, current: Any, pending: Any) -> int:
        _out(current).value = 0
        _out(pending).value = 1
        return SUCCESS

    def nvmlDeviceGetCpuAffinity(self, handle: Any, size: Any, ref: Any) -> int:
        words = _out(ref)
        for cpu in LOCAL_CPUS:
            if cpu // 64 < size:  # like the driver: never past the caller's buffer
                words[cpu // 64] |= 1 << (cpu % 64)
        return SUCCESS

    def nvmlDeviceGetPcieThroughput(self, handle: Any, counter: Any, ref: Any) -> int:
        if int(counter.value) not in (0, 1):
            return INVALID_ARGUMENT
        _out(ref).value = (2_000_000, 1_000_000)[int(counter.value)]  # KB/s, synthetic
        return SUCCESS

    def nvmlDeviceGetFieldValues(self, handle: Any, count: Any, ref: Any) -> int:
        values = _out(ref)
        for i in range(count.value):
            value = values[i]
            fid = int(value.fieldId)
            known = fid in self.branch.fields and not (
                self.architecture >= 10 and fid in BLACKWELL_UNSUPPORTED_FIELDS
            )
            if known and fid in self.fields:
                value.valueType = 3  # unsigned long long
                value.value.ullVal = self.fields[fid]
                value.nvmlReturn = SUCCESS
            else:
                value.nvmlReturn = NOT_SUPPORTED
        return SUCCESS

    def nvmlDeviceGetNvLinkState(self, handle: Any, link: Any, ref: Any) -> int:
        if link >= 2:
            return INVALID_ARGUMENT  # no such link
        _out(ref).value = 1
        return SUCCESS

    def nvmlDeviceGetNvLinkVersion(self, handle: Any, link: Any, ref: Any) -> int:
        _out(ref).value = 4
        return SUCCESS

    def nvmlDeviceGetNvLinkRemotePciInfo_v2(self, handle: Any, link: Any, ref: Any) -> int:
        _out(ref).busId = b"00000000:A0:00.0"
        return SUCCESS

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle: Any, link: Any, ref: Any) -> int:
        _out(ref).value = 2
        return SUCCESS

    def nvmlDeviceGetNvLinkErrorCounter(
        self, handle: Any, link: Any, counter: Any, ref: Any
    ) -> int:
        if self.architecture >= 10:
            return NOT_SUPPORTED  # Blackwell: the DL counters are gone
        _out(ref).value = 3
        return SUCCESS

    def nvmlDeviceGetGpuFabricInfoV(self, handle: Any, ref: Any) -> int:
        version = ctypes.c_uint.from_address(_address(ref)).value
        layouts = {_c_version(_FABRIC_C[v], v): _FABRIC_C[v] for v in self.branch.fabric_versions}
        layout = layouts.get(version)
        if layout is None:
            return ARGUMENT_VERSION_MISMATCH
        record = layout(version=version, healthMask=self.fabric.health_mask)
        _write_c(ref, self._fabric_fields(record))
        return SUCCESS

    def nvmlDeviceGetGpuFabricInfo(self, handle: Any, ref: Any) -> int:
        _write_c(ref, self._fabric_fields(_FabricC1()))
        return SUCCESS

    def _fabric_fields(self, record: Any) -> Any:
        fabric = self.fabric
        record.clusterUuid[:] = list(fabric.cluster_uuid)
        record.status, record.cliqueId, record.state = fabric.status, fabric.clique_id, fabric.state
        return record


@dataclass
class FabricState:
    """What the fake driver reports for every GPU's fabric registration (synthetic)."""

    state: int = 3
    status: int = SUCCESS
    clique_id: int = 5
    cluster_uuid: bytes = bytes(range(0xF0, 0x100))
    """16 raw bytes; not text (real cluster UUIDs are binary)."""
    health_mask: int = 1  # degraded bandwidth: true


# The fabric structures as nvml.h lays them out, written here independently of pcidoc and of
# the bindings. ``state`` is an unsigned char: the padding after it is filled with garbage, as
# memory the driver does not define, so a reader that takes four bytes there reads nonsense.
_FABRIC_BASE = [
    ("clusterUuid", ctypes.c_uint8 * 16),
    ("status", ctypes.c_int),
    ("cliqueId", ctypes.c_uint32),
    ("state", ctypes.c_uint8),
]


class _FabricC1(ctypes.Structure):
    _fields_ = _FABRIC_BASE


class _FabricC2(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), *_FABRIC_BASE, ("healthMask", ctypes.c_uint32)]


class _FabricC3(ctypes.Structure):
    _fields_ = [*_FabricC2._fields_, ("healthSummary", ctypes.c_uint8)]


class _ConfComputeC(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint32)
        for name in ("version", "environment", "ccFeature", "devToolsMode", "multiGpuMode")
    ]


_FABRIC_C: dict[int, type[ctypes.Structure]] = {2: _FabricC2, 3: _FabricC3}
assert ctypes.sizeof(_FabricC1) == 28 and ctypes.sizeof(_FabricC2) == 0x24
assert ctypes.sizeof(_FabricC3) == 0x28

PADDING_GARBAGE = 0xA5


def _c_version(layout: type[ctypes.Structure], version: int) -> int:
    return ctypes.sizeof(layout) | (version << 24)


def _address(ref: Any) -> int:
    return ctypes.addressof(_out(ref))


def _write_c(ref: Any, record: Any) -> None:
    """Copy ``record`` over the caller's buffer byte for byte, as the C library does; a buffer
    smaller than the structure would be overrun by the real library: refused here."""
    target = _out(ref)
    size = ctypes.sizeof(record)
    assert ctypes.sizeof(target) >= size, "the caller's buffer is smaller than nvml.h's struct"
    raw = bytearray(bytes(record))
    described = {
        offset
        for name, *_ in type(record)._fields_
        for offset in range(
            getattr(type(record), name).offset,
            getattr(type(record), name).offset + getattr(type(record), name).size,
        )
    }
    for offset in range(size):
        if offset not in described:
            raw[offset] = PADDING_GARBAGE
    ctypes.memmove(ctypes.addressof(target), bytes(raw), size)


def install(monkeypatch: pytest.MonkeyPatch, lib: object | None = None) -> Any:
    """Make the real ``pynvml`` module call ``lib`` instead of libnvidia-ml."""
    import pynvml

    monkeypatch.setattr(pynvml, "nvmlLib", lib or FakeLibNvml())
    monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer_cache", {})
    monkeypatch.setattr(pynvml, "_nvmlLib_refcount", 0)
    return pynvml


_STRING_CALLS = (
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetSerial",
    "nvmlSystemGetDriverVersion",
    "nvmlSystemGetNVMLVersion",
)


def old_bindings(generation: str) -> types.SimpleNamespace:
    """The installed ``pynvml`` as nvidia-ml-py before 11.515 presented itself
    (``generation="11.495"``): names, UUIDs, serials and versions come back as ``bytes``.

    Passed to :class:`pcidoc.collect.nvml.PynvmlBackend` as its bindings; the C library
    underneath is whatever :func:`install` put there. The supported 12.x/13.x releases are
    tested with their real modules (:mod:`tests.collect.nvml_releases`).
    """
    import pynvml

    if generation != "11.495":
        raise ValueError(generation)
    names = {name: getattr(pynvml, name) for name in dir(pynvml) if not name.startswith("__")}
    for call in _STRING_CALLS:
        names[call] = _returning_bytes(getattr(pynvml, call))
    return types.SimpleNamespace(**names)


def _returning_bytes(fn: Any) -> Any:
    def call(*args: Any) -> Any:
        result = fn(*args)
        return result.encode() if isinstance(result, str) else result

    return call

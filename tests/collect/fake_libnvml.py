"""A stand-in for ``libnvidia-ml.so.1`` at the C-call level, to drive the real ``pynvml``
bindings (and so :class:`pcidoc.collect.nvml.PynvmlBackend`) without a GPU.

The real bindings look C symbols up with ``getattr(nvmlLib, name)`` and call them with ctypes
arguments (``byref(...)`` out-parameters, string buffers). :class:`FakeLibNvml` implements a
few of those symbols in Python and writes results into the ctypes objects the bindings pass.
A symbol it does not define makes the bindings raise FUNCTION_NOT_FOUND, exactly as an old
driver would. All values are synthetic.
"""

from __future__ import annotations

import ctypes
from typing import Any

import pytest

HANDLE_BASE = 0x1000
SUCCESS, NOT_SUPPORTED, GPU_IS_LOST = 0, 3, 15


def _out(ref: Any) -> Any:
    """The ctypes object behind a ``byref(...)`` argument."""
    return ref._obj


def _index(handle: Any) -> int:
    address = ctypes.cast(handle, ctypes.c_void_p).value or 0
    return address - HANDLE_BASE


class FakeLibNvml:
    """Two synthetic GPUs; GPU 1's handle cannot be opened (GPU_IS_LOST)."""

    bus_ids = (b"00000000:03:00.0", b"00000000:04:00.0")

    def nvmlInitWithFlags(self, flags: Any) -> int:
        return SUCCESS

    def nvmlShutdown(self) -> int:
        return SUCCESS

    def nvmlSystemGetDriverVersion(self, buffer: Any, size: Any) -> int:
        buffer.value = b"000.00-synthetic"
        return SUCCESS

    def nvmlSystemGetNVMLVersion(self, buffer: Any, size: Any) -> int:
        buffer.value = b"00.000.00-synthetic"
        return SUCCESS

    def nvmlSystemGetCudaDriverVersion(self, ref: Any) -> int:
        _out(ref).value = 12060
        return SUCCESS

    def nvmlDeviceGetCount_v2(self, ref: Any) -> int:
        _out(ref).value = 2
        return SUCCESS

    def nvmlDeviceGetHandleByIndex_v2(self, index: Any, ref: Any) -> int:
        if index.value == 1:
            return GPU_IS_LOST
        slot = ctypes.cast(ctypes.pointer(_out(ref)), ctypes.POINTER(ctypes.c_void_p))
        slot[0] = HANDLE_BASE + index.value
        return SUCCESS

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
        _out(ref).value = 9
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
        _out(ref)[0] = 0b1111 | (1 << 33)
        return SUCCESS

    def nvmlDeviceGetFieldValues(self, handle: Any, count: Any, ref: Any) -> int:
        values = _out(ref)
        for i in range(count.value):
            value = values[i]
            if value.fieldId == 197:
                value.valueType = 3  # unsigned long long
                value.value.ullVal = 123_456_789_012
                value.nvmlReturn = SUCCESS
            elif value.fieldId == 94:
                value.valueType = 1  # unsigned int
                value.value.uiVal = 7
                value.nvmlReturn = SUCCESS
            else:
                value.nvmlReturn = NOT_SUPPORTED
        return SUCCESS

    def nvmlDeviceGetNvLinkState(self, handle: Any, link: Any, ref: Any) -> int:
        if link >= 2:
            return 2  # INVALID_ARGUMENT: no such link
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

    def nvmlDeviceGetGpuFabricInfoV(self, handle: Any, ref: Any) -> int:
        record = _out(ref)
        record.state = 3
        record.status = 0
        record.cliqueId = 5
        record.healthMask = 1  # degraded bandwidth: true
        return SUCCESS


def install(monkeypatch: pytest.MonkeyPatch, lib: object | None = None) -> Any:
    """Make the real ``pynvml`` module call ``lib`` instead of libnvidia-ml."""
    import pynvml

    monkeypatch.setattr(pynvml, "nvmlLib", lib or FakeLibNvml())
    monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer_cache", {})
    monkeypatch.setattr(pynvml, "_nvmlLib_refcount", 0)
    return pynvml

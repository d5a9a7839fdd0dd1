"""A CPU stand-in for ``torch.cuda``, to execute the CUDA probes' code paths without a GPU.

It wraps the real (CPU) torch: "device" tensors are CPU tensors, copies are synchronous CPU
copies, events read the host clock when recorded. The numbers it yields are meaningless; the
point is to run every line of the transfer and P2P probes (buffer handling, stream/event
choreography, statistics, verification, result records) on any machine.
"""

from __future__ import annotations

import contextlib
import ctypes
import time
import types
from typing import Any

import torch as real_torch


class FakeEvent:
    def __init__(self, enable_timing: bool = False) -> None:
        self.enable_timing = enable_timing
        self.t: float | None = None

    def record(self, stream: Any = None) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        assert self.t is not None, "synchronize() on an event that was never recorded"

    def query(self) -> bool:
        assert self.t is not None, "query() on an event that was never recorded"
        return True

    def wait(self, stream: Any = None) -> None:
        pass

    def elapsed_time(self, end: FakeEvent) -> float:
        assert self.enable_timing, "timing needs enable_timing=True"
        assert end.enable_timing, "timing needs enable_timing=True"
        assert self.t is not None
        assert end.t is not None
        return max((end.t - self.t) * 1e3, 1e-4)


class FakeStream:
    _handles = 0

    def __init__(self, device: Any = None) -> None:
        self.device = device
        FakeStream._handles += 1
        self.cuda_stream = 0x1000 + FakeStream._handles

    def synchronize(self) -> None:
        pass

    def wait_event(self, event: FakeEvent) -> None:
        assert event.t is not None, "waiting on an event that was never recorded"

    def wait_stream(self, stream: Any) -> None:
        pass


class FakeCudart:
    def __init__(self, register_error: int = 0) -> None:
        self.registered: set[int] = set()
        self.register_calls = 0
        self.register_error = register_error

    def cudaHostRegister(self, ptr: int, size: int, flags: int) -> int:
        self.register_calls += 1
        if self.register_error:
            return self.register_error
        assert ptr not in self.registered, "memory registered twice"
        self.registered.add(ptr)
        return 0

    def cudaHostUnregister(self, ptr: int) -> int:
        self.registered.discard(ptr)
        return 0


class FakeLibcudart:
    """The CUDA runtime entry points the probes call through ctypes; "device" memory is host
    memory here, so a peer copy is a ``memmove``. As strict as the runtime where the probe
    depends on it:

    * ``cudaDeviceEnablePeerAccess`` answers 704 when already enabled, and 711
      (``cudaErrorTooManyPeers``) when the current device already has ``max_peers`` peers
      (8 on GPUs without NVSwitch); ``refuse`` forces a code for given (device, peer) pairs;
      the error stays as the last error until ``cudaGetLastError`` clears it;
    * every peer copy is logged with whether peer access was on for its direction
      (``copy_log``: ``(src, dst, peer_access_on)``): the runtime stages a copy without it.
    """

    def __init__(
        self,
        peer_data: str = "copy",
        bus_ids: tuple[str, ...] = (),
        max_peers: int = 8,
        refuse: dict[tuple[int, int], int] | None = None,
    ) -> None:
        self.bus_ids = bus_ids
        """What ``cudaDeviceGetPCIBusId`` answers for each ordinal (upper case, as CUDA)."""
        self.peer_data = peer_data
        """``copy`` (a correct copy) or ``zeros`` (the destination reads back zeros, as peer
        copies through a broken IOMMU mapping do)."""
        self.max_peers = max_peers
        self.refuse = dict(refuse or {})
        self.peer_copies = 0
        self.peer_access: set[tuple[int, int]] = set()
        self.disabled_calls = 0
        self.current = 0
        self.last_error = 0
        self.copy_log: list[tuple[int, int, bool]] = []
        self.most_peers = 0
        """The most peers any device held at once (the probe enables one pair at a time)."""

    def cudaSetDevice(self, device: int) -> int:
        self.current = device
        return 0

    def cudaGetLastError(self) -> int:
        error, self.last_error = self.last_error, 0
        return error

    def cudaDeviceGetPCIBusId(self, buffer: Any, length: Any, device: Any) -> int:
        ordinal = int(device.value)
        if not 0 <= ordinal < len(self.bus_ids):
            return 101  # cudaErrorInvalidDevice
        text = self.bus_ids[ordinal].encode()
        if len(text) + 1 > int(length.value):
            return 1  # cudaErrorInvalidValue: the buffer is too short
        buffer.value = text
        return 0

    def _fail(self, code: int) -> int:
        self.last_error = code
        return code

    def cudaDeviceEnablePeerAccess(self, peer: int, flags: int) -> int:
        assert flags == 0, "flags is reserved and must be 0"
        pair = (self.current, peer)
        if pair in self.refuse:
            return self._fail(self.refuse[pair])
        if pair in self.peer_access:
            return self._fail(704)
        held = sum(1 for device, _ in self.peer_access if device == self.current)
        if held >= self.max_peers:
            return self._fail(711)  # cudaErrorTooManyPeers
        self.peer_access.add(pair)
        self.most_peers = max(self.most_peers, held + 1)
        return 0

    def cudaDeviceDisablePeerAccess(self, peer: int) -> int:
        self.disabled_calls += 1
        if (self.current, peer) not in self.peer_access:
            return self._fail(705)
        self.peer_access.discard((self.current, peer))
        return 0

    def cudaMemcpyPeerAsync(
        self, dst: int, dst_device: int, src: int, src_device: int, size: int, stream: int
    ) -> int:
        assert stream, "peer copies go on an explicit stream"
        if self.peer_data == "zeros":
            ctypes.memset(dst, 0, size)
        else:
            ctypes.memmove(dst, src, size)
        self.peer_copies += 1
        self.copy_log.append((src_device, dst_device, (src_device, dst_device) in self.peer_access))
        return 0


class FakeCuda:
    Event = FakeEvent
    Stream = FakeStream

    def __init__(self, count: int, peer: bool = True, corrupt: bool = False) -> None:
        self.count = count
        self.pci_fields = True
        self.peer = peer
        self._cudart = FakeCudart()
        self.sleeps = 0

    def is_available(self) -> bool:
        return self.count > 0

    def device_count(self) -> int:
        return self.count

    def stream(self, stream: Any) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def device(self, device: Any) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def set_device(self, device: Any) -> None:
        pass

    def current_device(self) -> int:
        return 0

    def synchronize(self, device: Any = None) -> None:
        pass

    def empty_cache(self) -> None:
        pass

    def mem_get_info(self, device: Any = None) -> tuple[int, int]:
        return 8 * 2**30, 16 * 2**30

    def can_device_access_peer(self, a: int, b: int) -> bool:
        return self.peer

    def get_allocator_backend(self) -> str:
        """As torch: from the allocator settings it read (``backend:cudaMallocAsync``)."""
        import os

        conf = ",".join(
            os.environ.get(name) or "" for name in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")
        )
        return "cudaMallocAsync" if "backend:cudaMallocAsync" in conf.replace(" ", "") else "native"

    def get_device_properties(self, device: int) -> Any:
        """Properties as torch 2.5+ has them (``pci_*`` fields); ``OldTorch`` drops those."""
        if not 0 <= int(device) < self.count:
            raise AssertionError(f"invalid device ordinal {device}")
        props = types.SimpleNamespace(
            name="Fake GPU (synthetic)",
            total_memory=16 * 2**30,
            uuid=None,
            pci_domain_id=0,
            pci_bus_id=0x10 + int(device),
            pci_device_id=0,
        )
        if not self.pci_fields:
            for name in ("pci_domain_id", "pci_bus_id", "pci_device_id"):
                delattr(props, name)
        return props

    def _sleep(self, cycles: int) -> None:
        self.sleeps += 1

    def cudart(self) -> FakeCudart:
        return self._cudart


class FakeTorch:
    """``torch`` with ``cuda`` replaced; device/pinning arguments are dropped (and pinned
    allocations counted, in ``pinned_allocations``)."""

    def __init__(self, count: int = 2, peer: bool = True) -> None:
        self.cuda = FakeCuda(count, peer)
        self.pinned_allocations = 0
        self._C = _C(host_cache=True)  # torch 2.5+ on CUDA builds (CPU builds lack it)
        self.accelerator = None

    def __getattr__(self, name: str) -> Any:
        return getattr(real_torch, name)

    def device(self, kind: str, index: int | None = None) -> Any:
        return real_torch.device("cpu")

    def set_num_threads(self, n: int) -> None:
        pass

    def _strip(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        kwargs.pop("device", None)
        if kwargs.pop("pin_memory", False):
            self.pinned_allocations += 1
        return kwargs

    def empty(self, *args: Any, **kwargs: Any) -> Any:
        return real_torch.empty(*args, **self._strip(kwargs))

    def zeros(self, *args: Any, **kwargs: Any) -> Any:
        return real_torch.zeros(*args, **self._strip(kwargs))

    def ones(self, *args: Any, **kwargs: Any) -> Any:
        return real_torch.ones(*args, **self._strip(kwargs))


class _C:
    """``torch._C`` with ``_host_emptyCache`` (counted), whatever the real build has."""

    def __init__(self, host_cache: bool) -> None:
        self.host_cache_releases = 0
        if host_cache:
            self._host_emptyCache = self._release

    def _release(self) -> None:
        self.host_cache_releases += 1

    def __getattr__(self, name: str) -> Any:
        if name == "_host_emptyCache":  # absent here, whatever the real build has
            raise AttributeError(name)
        return getattr(real_torch._C, name)


class OldTorch(FakeTorch):
    """A torch <= 2.4 stand-in: no ``torch._C._host_emptyCache`` nor ``torch.accelerator``
    (freed pinned blocks stay in torch's cache and go to the next allocation)."""

    def __init__(self, count: int = 2, peer: bool = True) -> None:
        super().__init__(count, peer)
        self._C = _C(host_cache=False)
        self.accelerator = None
        self.cuda.pci_fields = False  # pci_bus_id came with torch 2.5

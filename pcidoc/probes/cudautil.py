"""Helpers of the CUDA probes, run in the child process only.

* CPU affinity for every thread of the process, and NUMA memory policy / page placement via the
  ``set_mempolicy`` and ``move_pages`` system calls (no libnuma needed);
* the copy timing routine of ``research/probes.md`` §2.3: pre-allocated buffers, a dedicated
  stream, CUDA events recorded on the issuing stream, optional gate kernel
  (``torch.cuda._sleep``, a private API: guarded) so host enqueue cost stays out of the window;
* byte patterns for verifying copies.

Functions take the ``torch`` module as an argument; this module never imports torch itself.
"""

from __future__ import annotations

import ctypes
import os
import platform
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

# ----------------------------------------------------------------------------- CPU affinity


def set_process_affinity(cpus: Iterable[int]) -> list[int] | None:
    """Bind every thread of this process (and threads it creates later) to ``cpus``.

    Returns:
        The CPUs the kernel actually allowed (read back: a container's cpuset silently narrows
        a request), or ``None`` when nothing could be applied (empty intersection, no
        permission).
    """
    wanted = set(cpus)
    try:
        allowed = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return None
    # Start from the whole machine: a previous binding may have narrowed `allowed`.
    online = _online_cpus() or allowed
    target = wanted & online
    if not target:
        return None
    applied = False
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tids = [0]
    for tid in tids:
        try:
            os.sched_setaffinity(tid, target)
            applied = True
        except OSError:
            continue
    if not applied:
        return None
    try:
        return sorted(os.sched_getaffinity(0))
    except OSError:  # pragma: no cover - it worked a moment ago
        return sorted(target)


def _online_cpus() -> set[int] | None:
    try:
        with open("/sys/devices/system/cpu/online", encoding="ascii") as handle:
            text = handle.read().strip()
    except OSError:
        return None
    from pcidoc.model.cpulist import parse_cpulist

    parsed = parse_cpulist(text)
    return set(parsed) if parsed else None


# ------------------------------------------------------------------------------ NUMA memory

MPOL_DEFAULT = 0
MPOL_BIND = 2

_SYSCALLS: dict[str, dict[str, int]] = {
    # arch/x86/entry/syscalls/syscall_64.tbl
    "x86_64": {"set_mempolicy": 238, "move_pages": 279},
    # include/uapi/asm-generic/unistd.h (arm64, riscv64)
    "aarch64": {"set_mempolicy": 237, "move_pages": 239},
    "riscv64": {"set_mempolicy": 237, "move_pages": 239},
    # arch/powerpc/kernel/syscalls/syscall.tbl
    "ppc64le": {"set_mempolicy": 261, "move_pages": 301},
}


def _syscall(name: str) -> tuple[Any, int] | None:
    number = _SYSCALLS.get(platform.machine(), {}).get(name)
    if number is None:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    return libc.syscall, number


def set_memory_policy(node: int | None) -> bool:
    """Bind this thread's future allocations to NUMA ``node`` (``None``: back to default).

    Returns:
        True when the kernel accepted the policy.
    """
    call = _syscall("set_mempolicy")
    if call is None:
        return False
    syscall, number = call
    if node is None:
        return (
            syscall(ctypes.c_long(number), ctypes.c_long(MPOL_DEFAULT), None, ctypes.c_ulong(0))
            == 0
        )
    bits = 64
    words = node // bits + 1
    mask = (ctypes.c_ulong * words)()
    mask[node // bits] = 1 << (node % bits)
    # The kernel reads maxnode - 1 bits (libnuma passes nbits + 1).
    return (
        syscall(
            ctypes.c_long(number), ctypes.c_long(MPOL_BIND), mask, ctypes.c_ulong(words * bits + 1)
        )
        == 0
    )


def page_nodes(address: int, length: int, samples: int = 16) -> list[int] | None:
    """NUMA nodes of up to ``samples`` pages spread over ``[address, address + length)``.

    Uses ``move_pages`` with no target nodes, which only reports where pages are. Negative
    entries are errors for that page (``-ENOENT``: not present). ``None`` when unsupported.
    """
    call = _syscall("move_pages")
    if call is None or length <= 0:
        return None
    syscall, number = call
    page = os.sysconf("SC_PAGE_SIZE")
    first = address - address % page
    count = max(1, min(samples, length // page))
    step = max(page, (length // count) // page * page)
    pages = (ctypes.c_void_p * count)(*[first + i * step for i in range(count)])
    status = (ctypes.c_int * count)()
    result = syscall(
        ctypes.c_long(number),
        ctypes.c_long(0),
        ctypes.c_ulong(count),
        pages,
        None,
        status,
        ctypes.c_long(0),
    )
    if result != 0:
        return None
    return list(status)


def node_share(nodes: list[int] | None, node: int) -> float | None:
    """Share of sampled pages on ``node`` (``None`` when nothing was sampled)."""
    if not nodes:
        return None
    valid = [n for n in nodes if n >= 0]
    if not valid:
        return None
    return sum(1 for n in valid if n == node) / len(valid)


# ------------------------------------------------------------------------------ copy timing


@dataclass
class Gate:
    """A time-bounded spin kernel that holds a stream while copies are queued behind it.

    ``torch.cuda._sleep(cycles)`` is private; when it is missing, gating is off and only sizes
    whose copies last long enough are trusted (``research/probes.md`` §8).
    """

    sleep: Callable[[int], None] | None
    cycles_per_ms: float | None

    @property
    def available(self) -> bool:
        """True when gating works."""
        return self.sleep is not None and bool(self.cycles_per_ms)

    def hold(self, milliseconds: float) -> None:
        """Enqueue a spin of about ``milliseconds`` on the current stream."""
        if self.sleep is not None and self.cycles_per_ms:
            self.sleep(max(1, int(self.cycles_per_ms * milliseconds)))


def calibrate_gate(torch: Any, stream: Any) -> Gate:
    """Measure how many ``_sleep`` cycles make a millisecond on this GPU (events, 2 runs)."""
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        return Gate(None, None)
    try:
        cycles = 10_000_000
        rates = []
        with torch.cuda.stream(stream):
            for _ in range(2):
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record(stream)
                sleep(cycles)
                end.record(stream)
                end.synchronize()
                ms = start.elapsed_time(end)
                if ms > 0:
                    rates.append(cycles / ms)
        return Gate(sleep, max(rates) if rates else None)
    except Exception:
        return Gate(None, None)


def time_copies(
    torch: Any,
    stream: Any,
    copy: Callable[[], None],
    count: int,
    gate: Gate | None = None,
    gate_ms: float = 0.0,
) -> float:
    """Seconds for ``count`` calls of ``copy`` on ``stream``, by CUDA events on that stream.

    Args:
        torch: The torch module.
        stream: The issuing stream (events are recorded on it).
        copy: Enqueues one copy (must use the current stream, i.e. ``non_blocking=True``).
        count: Copies per trial.
        gate: When given and available, ``gate_ms`` of spin are enqueued before the start
            event so the copies are all queued before the first one starts.
        gate_ms: Gate length in milliseconds.
    """
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        if gate is not None and gate.available and gate_ms > 0:
            gate.hold(gate_ms)
        start.record(stream)
        for _ in range(count):
            copy()
        end.record(stream)
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def time_host(torch: Any, copy: Callable[[], None], count: int) -> float:
    """Seconds for ``count`` synchronous copies by the host clock (pageable memory)."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(count):
        copy()
    torch.cuda.synchronize()
    return time.perf_counter() - start


# --------------------------------------------------------------------------------- patterns

PATTERN_BLOCK = 64 * 1024


def pattern_block(torch: Any, seed: int) -> Any:
    """A pseudo-random 64 KiB uint8 block (CPU) for ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (PATTERN_BLOCK,), dtype=torch.uint8, generator=generator)


def fill_pattern(torch: Any, buffer: Any, seed: int) -> None:
    """Fill a uint8 buffer (length a multiple of 64 KiB) with the block for ``seed``."""
    block = pattern_block(torch, seed).to(buffer.device)
    rows = buffer.numel() // PATTERN_BLOCK
    buffer[: rows * PATTERN_BLOCK].view(rows, PATTERN_BLOCK).copy_(block.expand(rows, -1))


def count_mismatches(torch: Any, buffer: Any, seed: int) -> int:
    """Bytes of ``buffer`` that differ from the pattern for ``seed`` (compared where it lives)."""
    block = pattern_block(torch, seed).to(buffer.device)
    rows = buffer.numel() // PATTERN_BLOCK
    view = buffer[: rows * PATTERN_BLOCK].view(rows, PATTERN_BLOCK)
    return int((view != block.expand(rows, -1)).sum().item())


def round_down_pow2(value: int, floor: int = 1 << 20) -> int:
    """Largest power of two <= ``value`` (at least ``floor``)."""
    if value <= floor:
        return floor
    return 1 << (int(value).bit_length() - 1)


# ------------------------------------------------------------------ raw peer copies (cudart)

CUDA_SUCCESS = 0
CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704
CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705
CUDA_ERROR_TOO_MANY_PEERS = 711

CUDA_ERROR_NAMES: dict[int, str] = {
    0: "cudaSuccess",
    1: "cudaErrorInvalidValue",
    101: "cudaErrorInvalidDevice",
    217: "cudaErrorPeerAccessUnsupported",
    704: "cudaErrorPeerAccessAlreadyEnabled",
    705: "cudaErrorPeerAccessNotEnabled",
    711: "cudaErrorTooManyPeers",
}
"""The ``cudaError_t`` values the peer-access calls return (``driver_types.h``)."""


def cuda_error_text(code: int) -> str:
    """``cudaErrorTooManyPeers (711)``."""
    return f"{CUDA_ERROR_NAMES.get(int(code), 'cudaError')} ({int(code)})"


def allocator_in_effect(torch: Any, environ: Any = None) -> tuple[str, bool]:
    """Which CUDA allocator torch's buffers come from, and whether ``cudaDeviceEnablePeerAccess``
    applies to them (True only for plain ``cudaMalloc`` segments).

    ``expandable_segments`` maps memory with ``cuMemMap`` (its peers need ``cuMemSetAccess``) and
    ``backend:cudaMallocAsync`` allocates from pools (``cudaMemPoolSetAccess``): peer access
    enabled through the runtime does not reach either, so a raw peer copy between them would
    be staged or fault. torch reads ``PYTORCH_ALLOC_CONF`` and, before 2.9 only,
    ``PYTORCH_CUDA_ALLOC_CONF``: both are looked at.
    """
    env = os.environ if environ is None else environ
    backend = "native"
    get_backend = getattr(torch.cuda, "get_allocator_backend", None)
    if get_backend is not None:
        try:
            backend = str(get_backend())
        except Exception:
            backend = "unknown"
    conf = ",".join(env.get(name) or "" for name in ALLOCATOR_VARIABLES).replace(" ", "").lower()
    if backend != "native":
        return f"torch's {backend} allocator (memory pools)", False
    if "expandable_segments:true" in conf:
        return "torch caching allocator with expandable segments (cuMemMap)", False
    return "torch caching allocator, cudaMalloc segments", True


ALLOCATOR_VARIABLES = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")
"""Where torch reads its allocator settings (the first is torch 2.9's name)."""


def cudart_candidates(torch: Any) -> list[str]:
    """Where the CUDA runtime torch uses may be: its soname (already loaded by torch, so
    ``dlopen`` returns the same library), then the wheels' ``nvidia/*/lib`` and ``torch/lib``."""
    import glob

    names = []
    version = getattr(getattr(torch, "version", None), "cuda", None)
    if version:
        names.append(f"libcudart.so.{str(version).split('.')[0]}")
    names.append("libcudart.so")
    base = os.path.dirname(getattr(torch, "__file__", "") or "")
    if base:
        for pattern in (
            os.path.join(base, "..", "nvidia", "cuda_runtime", "lib", "libcudart.so*"),
            os.path.join(base, "..", "nvidia", "cu*", "lib", "libcudart.so*"),
            os.path.join(base, "lib", "libcudart*.so*"),
        ):
            names.extend(sorted(glob.glob(pattern)))
    return names


def find_cudart(torch: Any) -> tuple[Any | None, str]:
    """The CUDA runtime library (ctypes) with the peer-copy entry points, or why not."""
    tried = []
    for name in cudart_candidates(torch):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            tried.append(name)
            continue
        if hasattr(lib, "cudaMemcpyPeerAsync") and hasattr(lib, "cudaDeviceEnablePeerAccess"):
            return lib, name
    return None, "libcudart not found (" + ", ".join(tried[:3]) + ")"


class PeerCopier:
    """``cudaMemcpyPeerAsync`` on a stream of the source GPU, without torch's ``copy_``, whose
    every cross-device copy makes the two devices' streams wait on each other
    (``research/probes.md`` §2.1): back-to-back copies then run as nvbandwidth's write-CE test
    and p2pBandwidthLatencyTest issue them. Also switches peer access off and on, to time the
    driver's own staging of a capable pair (p2pBandwidthLatencyTest's "P2P disabled").

    Args:
        lib: The CUDA runtime (ctypes library or a stand-in with the same functions); ``None``
            when unavailable (``reason`` says why; callers fall back to ``copy_``).
        reason: Why ``lib`` is ``None``, or where it came from.
    """

    def __init__(self, lib: Any | None, reason: str) -> None:
        self.lib = lib
        self.reason = reason
        if lib is not None and isinstance(lib, ctypes.CDLL):
            lib.cudaMemcpyPeerAsync.argtypes = [
                ctypes.c_void_p,
                ctypes.c_int,
                ctypes.c_void_p,
                ctypes.c_int,
                ctypes.c_size_t,
                ctypes.c_void_p,
            ]
            lib.cudaMemcpyPeerAsync.restype = ctypes.c_int
            for name in ("cudaDeviceEnablePeerAccess", "cudaDeviceDisablePeerAccess"):
                getattr(lib, name).restype = ctypes.c_int

    @property
    def available(self) -> bool:
        """True when raw peer copies can be issued."""
        return self.lib is not None

    @property
    def method(self) -> str:
        """How peer copies are issued, for the measurement's conditions."""
        if self.available:
            return "cudaMemcpyPeerAsync on the source GPU's stream (libcudart via ctypes)"
        return f"torch copy_ (cross-device stream barrier per copy; {self.reason})"

    def copy(self, dst: Any, dst_device: int, src: Any, src_device: int, stream: Any) -> None:
        """Enqueue one copy of ``src`` (bytes) into ``dst`` on ``stream``."""
        assert self.lib is not None
        nbytes = int(src.numel()) * int(src.element_size())
        code = self.lib.cudaMemcpyPeerAsync(
            dst.data_ptr(),
            int(dst_device),
            src.data_ptr(),
            int(src_device),
            nbytes,
            int(stream.cuda_stream),
        )
        if code != CUDA_SUCCESS:
            raise RuntimeError(f"cudaMemcpyPeerAsync failed with CUDA error {code}")

    def enable(self, device: int, peer: int, restore: int) -> int:
        """``cudaDeviceEnablePeerAccess(peer)`` on ``device``; the return code as CUDA gave it
        (0, 704 already enabled, 711 too many peers...). ``restore`` is made current again."""
        return self._peer_call(device, restore, "cudaDeviceEnablePeerAccess", int(peer), 0)

    def disable(self, device: int, peer: int, restore: int) -> int:
        """``cudaDeviceDisablePeerAccess(peer)`` on ``device``; its return code."""
        return self._peer_call(device, restore, "cudaDeviceDisablePeerAccess", int(peer))

    def _peer_call(self, device: int, restore: int, name: str, *args: int) -> int:
        lib = self.lib
        if lib is None:
            return 1  # cudaErrorInvalidValue: there is no runtime to ask
        code = int(lib.cudaSetDevice(int(device)))
        try:
            if code == CUDA_SUCCESS:
                code = int(getattr(lib, name)(*args))
            if code != CUDA_SUCCESS:
                lib.cudaGetLastError()  # clear it: torch checks the last error later
            return code
        finally:
            lib.cudaSetDevice(int(restore))


def pci_bus_id(lib: Any, ordinal: int) -> str | None:
    """``cudaDeviceGetPCIBusId`` of CUDA device ``ordinal`` (lower-case ``dddd:bb:dd.f``), or
    ``None`` when the runtime cannot say."""
    fn = getattr(lib, "cudaDeviceGetPCIBusId", None)
    if fn is None:
        return None
    buffer = ctypes.create_string_buffer(32)
    try:
        code = fn(buffer, ctypes.c_int(len(buffer)), ctypes.c_int(int(ordinal)))
    except Exception:
        return None
    if code != CUDA_SUCCESS:
        getattr(lib, "cudaGetLastError", lambda: 0)()
        return None
    text = buffer.value.decode("ascii", errors="replace").strip().lower()
    return text or None


def load_peer_copier(torch: Any) -> PeerCopier:
    """A :class:`PeerCopier` on the CUDA runtime torch loaded, or one that says why not."""
    lib, where = find_cudart(torch)
    return PeerCopier(lib, where)

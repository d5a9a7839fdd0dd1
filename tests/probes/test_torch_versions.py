"""What older torch releases do differently, simulated on CPU (issue 20).

* torch 2.4-2.7: the libuv ``TCPStore`` raises ``NotImplementedError`` for ``master_listen_fd``;
* torch 2.1/2.2: ``init_process_group`` has no ``device_id``, so NCCL barriers must name their
  GPU (``device_ids``);
* torch <= 2.4: no ``torch._C._host_emptyCache``, so the transfer probe must not take the next
  GPU's pinned buffer from torch's cache;
* one rank: no all-reduce bandwidth.

``tools/compat_matrix.py`` runs the probes against the real releases.
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from pcidoc.probes import allreduce, distributed
from pcidoc.probes.distributed import WorkerContext, init_process_group, loopback_store

# ------------------------------------------------------------------------ the rendezvous store


class _Store:
    def __init__(self, host: str, port: int, world: int, is_master: bool, **kwargs: Any):
        self.host, self.world, self.is_master, self.kwargs = host, world, is_master, kwargs
        fd = kwargs.get("master_listen_fd")
        # Like torch: the port is the listening socket's when a socket is handed over.
        self.port = socket.socket(fileno=os.dup(fd)).getsockname()[1] if fd is not None else port


def _dist(store_class: type) -> SimpleNamespace:
    return SimpleNamespace(TCPStore=store_class)


def _listening(port: int) -> bool:
    probe = socket.socket()
    try:
        return probe.connect_ex(("127.0.0.1", port)) == 0
    finally:
        probe.close()


def test_store_on_a_libuv_torch_keeps_the_loopback_socket() -> None:
    """torch 2.4-2.7: NotImplementedError for a listen fd unless ``use_libuv=False``."""

    class LibuvStore(_Store):
        def __init__(self, *args: Any, use_libuv: bool = True, **kwargs: Any) -> None:
            if use_libuv and "master_listen_fd" in kwargs:
                raise NotImplementedError(
                    "The libuv TCPStore backend does not support initialization with an listen fd"
                )
            super().__init__(*args, use_libuv=use_libuv, **kwargs)

    store = loopback_store(_dist(LibuvStore), 2, timedelta(seconds=5))
    assert store.kwargs["use_libuv"] is False
    assert store.kwargs["master_listen_fd"] is not None
    assert store.port != 0 and _listening(store.port)


def test_store_that_refuses_any_listen_fd_falls_back_to_a_port() -> None:
    class NoFdStore(_Store):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            if "master_listen_fd" in kwargs:
                raise NotImplementedError("no listen fd here")
            super().__init__(*args, **kwargs)

    store = loopback_store(_dist(NoFdStore), 3, timedelta(seconds=5))
    assert "master_listen_fd" not in store.kwargs
    assert (store.host, store.port, store.world, store.is_master) == ("127.0.0.1", 0, 3, True)


def test_store_without_the_listen_fd_argument_falls_back_to_a_port() -> None:
    class OldStore(_Store):
        def __init__(self, host, port, world, is_master, timeout=None, wait_for_workers=True):
            super().__init__(host, port, world, is_master)

    store = loopback_store(_dist(OldStore), 2, timedelta(seconds=5))
    assert store.port == 0 and store.kwargs == {}


def test_the_real_store_opens_on_loopback() -> None:
    pytest.importorskip("torch")
    import torch.distributed as dist

    store = loopback_store(dist, 1, timedelta(seconds=10))
    store.set("k", "v")
    assert store.get("k") == b"v"


# --------------------------------------------------------------- process group without device_id


class _Dist:
    """``torch.distributed`` as far as the launcher uses it; records the calls."""

    def __init__(self, with_device_id: bool) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.ReduceOp = SimpleNamespace(MAX="max", SUM="sum")
        if with_device_id:
            self.init_process_group = self._init_new
        else:
            self.init_process_group = self._init_old

    def _init_old(self, backend=None, store=None, rank=-1, world_size=-1, timeout=None):
        self.calls.append(("init", {"backend": backend}))

    def _init_new(
        self, backend=None, store=None, rank=-1, world_size=-1, timeout=None, device_id=None
    ):
        self.calls.append(("init", {"backend": backend, "device_id": device_id}))

    def barrier(self, group=None, device_ids=None) -> None:
        self.calls.append(("barrier", {"group": group, "device_ids": device_ids}))

    def all_reduce(self, tensor, op=None, group=None) -> None:
        pass


def test_init_without_device_id_works_and_says_so() -> None:
    dist = _Dist(with_device_id=False)
    bound = init_process_group(dist, "cuda:1", backend="nccl", rank=0, world_size=2)
    assert bound is False
    assert dist.calls == [("init", {"backend": "nccl"})]


def test_init_with_device_id_binds_the_device() -> None:
    dist = _Dist(with_device_id=True)
    assert init_process_group(dist, "cuda:1", backend="nccl", rank=0, world_size=2) is True
    assert dist.calls == [("init", {"backend": "nccl", "device_id": "cuda:1"})]


def test_init_behind_a_kwargs_wrapper_retries_without_device_id() -> None:
    calls = []

    def wrapper(**kwargs: Any) -> None:
        if "device_id" in kwargs:
            raise TypeError("init_process_group() got an unexpected keyword argument 'device_id'")
        calls.append(kwargs)

    assert (
        init_process_group(SimpleNamespace(init_process_group=wrapper), "cuda:0", rank=0) is False
    )
    assert calls == [{"rank": 0}]


def _ctx(dist: _Dist, backend: str, torch: Any, device: Any) -> WorkerContext:
    return WorkerContext(
        rank=0,
        world=2,
        backend=backend,
        torch=torch,
        dist=dist,
        device=device,
        params={},
        members={1: [0]},
        groups={1: "sub"},
        meta="meta",
        send=lambda message: None,
    )


def test_nccl_barriers_name_the_gpu_and_meta_barriers_do_not() -> None:
    dist = _Dist(with_device_id=False)
    ctx = _ctx(dist, "nccl", None, SimpleNamespace(index=3))
    ctx.barrier("sub")
    ctx.barrier(None)
    ctx.barrier("meta")
    assert [c[1]["device_ids"] for c in dist.calls] == [[3], [3], None]
    gloo = _Dist(with_device_id=False)
    _ctx(gloo, "gloo", None, SimpleNamespace(index=None)).barrier("sub")
    assert gloo.calls[0][1]["device_ids"] is None


def test_allreduce_timing_barriers_name_the_gpu() -> None:
    pytest.importorskip("torch")
    import torch

    from tests.probes.fake_cuda import FakeTorch

    dist = _Dist(with_device_id=False)
    ctx = _ctx(dist, "nccl", FakeTorch(count=1), torch.device("cpu"))
    p = allreduce.CollectiveParams((4096,), 1, 2, 2, 0.001)
    rows = allreduce.time_allreduce(ctx, "sub", 1, 0, p, [4096])
    barriers = [c[1] for c in dist.calls if c[0] == "barrier"]
    assert rows and len(barriers) >= 2
    assert all(b["group"] == "sub" and b["device_ids"] == [None] for b in barriers)


# ----------------------------------------------------------------------------------- one rank


def test_one_rank_allreduce_has_no_bandwidth() -> None:
    rows = [
        {"size_bytes": 1 << 20, "time_us": 6.5, "time_max_us": 7.0, "iterations": 5, "wrong": 0}
    ]
    one, _extra = allreduce.measurement_from_rows(rows, 1, "gloo", [])
    two, _extra = allreduce.measurement_from_rows(rows, 2, "gloo", [])
    assert one["rows"][0]["algbw_gbps"] is None and one["rows"][0]["busbw_gbps"] is None
    assert two["rows"][0]["algbw_gbps"] == pytest.approx((1 << 20) / 6.5e-6 / 1e9, rel=1e-4)
    assert two["rows"][0]["busbw_gbps"] is not None


def test_launcher_module_exposes_the_helpers() -> None:
    assert distributed.loopback_store is loopback_store

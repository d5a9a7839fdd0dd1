"""Child probe ``allreduce``: all-reduce bus bandwidth per rank count, nccl-tests style.

Methodology (``research/probes.md`` §3, nccl-tests ``src/common.cu``):

1. barrier, then warm up **every** size before timing any of them;
2. per size: barrier, host timer around ``n`` back-to-back ``all_reduce`` calls and one device
   synchronisation (``n`` adapts so the loop lasts about the target time, at least
   ``min_iters``), ``t = elapsed / n``;
3. ``t`` is averaged across ranks (nccl-tests' default) and its maximum kept too (the slowest
   rank);
4. ``algbw = S / t``, ``busbw = algbw × 2(n−1)/n``; with one rank bus bandwidth does not apply
   and is left empty;
5. correctness: rank r fills its buffer with r+1, every element must then be n(n+1)/2.

Runs the same code with NCCL on GPUs and gloo on CPU tensors.
"""

from __future__ import annotations

import time
from typing import Any

from pcidoc.probes import stats
from pcidoc.probes.child import Emitter
from pcidoc.probes.distributed import WorkerContext, launch
from pcidoc.probes.params import COLLECTIVE, CollectiveParams


def run(params: dict[str, Any], emit: Emitter) -> None:
    """Launch the workers (see :mod:`pcidoc.probes.distributed`)."""
    params = {**params, "probe": "allreduce"}
    launch(params, emit, __name__)


def collective_params(params: dict[str, Any]) -> CollectiveParams:
    """Mode defaults, with ``sizes``/iteration overrides from ``params`` (tests use tiny sizes)."""
    base = COLLECTIVE[(params["backend"], params.get("mode", "quick"))]
    return CollectiveParams(
        sizes=tuple(int(s) for s in params.get("sizes", base.sizes)),
        warmup=int(params.get("warmup", base.warmup)),
        min_iters=int(params.get("min_iters", base.min_iters)),
        max_iters=int(params.get("max_iters", base.max_iters)),
        target_s=float(params.get("target_s", base.target_s)),
    )


def _fit_sizes(ctx: WorkerContext, sizes: tuple[int, ...]) -> list[int]:
    """Sizes that are whole float32 counts and fit in a quarter of free device memory."""
    sizes_ok = sorted({max(4, s - s % 4) for s in sizes})
    if ctx.is_cuda:
        free, _total = ctx.torch.cuda.mem_get_info(ctx.device)
        limit = free // 4
        fitted = [s for s in sizes_ok if s <= limit]
        if len(fitted) < len(sizes_ok) and ctx.rank == 0:
            from pcidoc.probes import protocol

            ctx.send(protocol.log("warning", f"skipped sizes above {limit} bytes (GPU memory)"))
        sizes_ok = fitted or sizes_ok[:1]
    return sizes_ok


def time_allreduce(
    ctx: WorkerContext,
    group: Any,
    group_size: int,
    group_rank: int,
    p: CollectiveParams,
    sizes: list[int],
) -> list[dict[str, Any]]:
    """Time all-reduce at each size inside ``group``; every member calls this.

    Returns:
        One dict per size: ``size_bytes``, ``time_us`` (mean over ranks), ``time_max_us``,
        ``iterations``, ``wrong``.
    """
    torch, dist = ctx.torch, ctx.dist
    largest = max(sizes)
    buffer = torch.ones(largest // 4, dtype=torch.float32, device=ctx.device)
    ctx.barrier(group)
    # Warm up every size first (nccl-tests), keeping a per-iteration estimate of each.
    estimates: dict[int, float] = {}
    for size in sizes:
        view = buffer[: size // 4]
        ctx.sync()
        start = time.perf_counter()
        for _ in range(p.warmup):
            dist.all_reduce(view, group=group)
        ctx.sync()
        estimates[size] = (time.perf_counter() - start) / max(1, p.warmup)
    rows: list[dict[str, Any]] = []
    for size in sizes:
        view = buffer[: size // 4]
        iters = stats.adaptive_iterations(estimates[size], p.target_s, p.min_iters, p.max_iters)
        agreed = torch.tensor([iters], dtype=torch.int64, device=ctx.device)
        dist.all_reduce(agreed, op=dist.ReduceOp.MAX, group=group)
        iters = int(agreed.item())
        ctx.barrier(group)
        ctx.sync()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(view, group=group)
        ctx.sync()
        elapsed = (time.perf_counter() - start) / iters
        times = torch.tensor([elapsed], dtype=torch.float64, device=ctx.device)
        slowest = times.clone()
        dist.all_reduce(times, op=dist.ReduceOp.SUM, group=group)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX, group=group)
        # Correctness (nccl-tests -c): rank r contributes r+1.
        view.fill_(float(group_rank + 1))
        dist.all_reduce(view, group=group)
        expected = stats.allreduce_expected_sum(group_size)
        wrong = (view != expected).sum().to(torch.int64).reshape(1)
        dist.all_reduce(wrong, op=dist.ReduceOp.SUM, group=group)
        view.fill_(1.0)
        rows.append(
            {
                "size_bytes": size,
                "time_us": float(times.item()) / group_size * 1e6,
                "time_max_us": float(slowest.item()) * 1e6,
                "iterations": iters,
                "wrong": int(wrong.item()),
            }
        )
    del buffer
    if ctx.is_cuda:
        torch.cuda.empty_cache()
    return rows


def measurement_from_rows(
    rows: list[dict[str, Any]], ranks: int, backend: str, gpus: list[int]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``CollectiveMeasurement`` dump and its ``extra`` from timed rows."""
    out_rows = []
    extra_rows = []
    for row in rows:
        t = row["time_us"] * 1e-6
        t_max = row["time_max_us"] * 1e-6
        # One rank moves nothing: S/t would be a memory-copy speed, not a bandwidth.
        algbw = stats.algbw_gbps(row["size_bytes"], t) if ranks > 1 else None
        out_rows.append(
            {
                "size_bytes": row["size_bytes"],
                "time_us": _round(row["time_us"]),
                "algbw_gbps": _round(algbw),
                "busbw_gbps": _round(stats.busbw_gbps("all_reduce", row["size_bytes"], t, ranks)),
                "wrong": row["wrong"],
                "in_place": True,
            }
        )
        extra_rows.append(
            {
                "size_bytes": row["size_bytes"],
                "time_max_us": _round(row["time_max_us"]),
                "busbw_max_gbps": _round(
                    stats.busbw_gbps("all_reduce", row["size_bytes"], t_max, ranks)
                ),
                "iterations": row["iterations"],
            }
        )
    avg = stats.mean_or_none([r["busbw_gbps"] for r in out_rows])
    measurement = {
        "op": "all_reduce",
        "backend": backend,
        "ranks": ranks,
        "nodes": 1,
        "gpus": gpus,
        "rows": out_rows,
        "avg_busbw_gbps": _round(avg),
        "correct": all(r["wrong"] == 0 for r in rows),
        "tool": "pcidoc",
        "source": "probe",
    }
    extra = {
        "rows": extra_rows,
        "busbw_factor": stats.busbw_factor("all_reduce", ranks),
        "note": "one rank: nothing crosses a link, so busbw does not apply" if ranks == 1 else None,
        "time": "mean over ranks (time_max_us: slowest rank)",
    }
    return measurement, extra


def _round(value: float | None) -> float | None:
    return stats.round_sig(value, 6)


def worker(ctx: WorkerContext) -> None:
    """Per-rank body: every rank count in turn, idle ranks wait at the meta barrier."""
    p = collective_params(ctx.params)
    sizes = _fit_sizes(ctx, p.sizes)
    counts = sorted(ctx.members)
    gpu_sets = {int(k): v for k, v in ctx.params.get("gpus_by_count", {}).items()}
    for step, count in enumerate(counts):
        ctx.progress(step / len(counts), f"all_reduce on {count} rank(s) ({ctx.backend})")
        ctx.dist.barrier(group=ctx.meta)
        rows = None
        members = ctx.members[count]
        if ctx.rank in members:
            rows = time_allreduce(
                ctx, ctx.groups[count], len(members), members.index(ctx.rank), p, sizes
            )
        rows = ctx.collect(count, rows)
        if ctx.rank == 0 and rows is not None:
            measurement, extra = measurement_from_rows(
                rows, count, ctx.backend, gpu_sets.get(count, [])
            )
            extra.update(
                {
                    "warmup_iterations": p.warmup,
                    "iterations_min_max": [p.min_iters, p.max_iters],
                    "target_s_per_size": p.target_s,
                    "threads_per_rank": ctx.params.get("threads_per_rank"),
                    "timer": "host perf_counter around n back-to-back all_reduce + one sync "
                    "(nccl-tests)",
                }
            )
            from pcidoc.probes import protocol

            ctx.send(protocol.result("collective", measurement, extra))
    ctx.progress(1.0, "done")

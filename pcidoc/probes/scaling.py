"""Child probe ``scaling``: a synthetic data-parallel training step at 1 → N ranks.

A plain MLP (``depth`` × Linear(width, width) + ReLU; it has no buffers to broadcast) trained
with DDP (default 25 MB buckets) and SGD on random data, with a **fixed per-rank batch** (weak
scaling, the usual DDP case). Per rank count: fresh model and DDP wrapper, warm-up steps, then
timed steps (host timer around forward + backward + optimizer step + device sync). The step
time of a rank count is the slowest rank's median; throughput = ranks × batch / step time;
efficiency E(N) = throughput(N) / (N × throughput(1)) (``research/probes.md`` §3.3). In the
same run it times an all-reduce of the gradient size on the largest rank count, the bus
bandwidth the alpha-beta model of the ``scaling.efficiency`` check needs.

Follows PyTorch's ``benchmarks/distributed/ddp/benchmark.py`` in spirit; sizes are ours.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from pcidoc.probes import protocol, stats
from pcidoc.probes.child import Emitter
from pcidoc.probes.distributed import WorkerContext, launch
from pcidoc.probes.params import SCALING, ScalingParams


def run(params: dict[str, Any], emit: Emitter) -> None:
    """Launch the workers (see :mod:`pcidoc.probes.distributed`)."""
    params = {**params, "probe": "scaling"}
    launch(params, emit, __name__)


def scaling_params(params: dict[str, Any]) -> ScalingParams:
    """Mode defaults with overrides from ``params`` (tests shrink the model)."""
    base = SCALING[(params["backend"], params.get("mode", "quick"))]
    return ScalingParams(
        width=int(params.get("width", base.width)),
        depth=int(params.get("depth", base.depth)),
        batch=int(params.get("batch", base.batch)),
        warmup_steps=int(params.get("warmup_steps", base.warmup_steps)),
        steps=int(params.get("steps", base.steps)),
        busbw_iters=int(params.get("busbw_iters", base.busbw_iters)),
    )


def build_model(torch: Any, p: ScalingParams) -> Any:
    """The synthetic MLP (deterministic initialisation)."""
    torch.manual_seed(0)
    layers: list[Any] = []
    for i in range(p.depth):
        layers.append(torch.nn.Linear(p.width, p.width))
        if i < p.depth - 1:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def _train_steps(ctx: WorkerContext, group: Any, p: ScalingParams) -> list[float]:
    torch = ctx.torch
    from torch.nn.parallel import DistributedDataParallel

    model = build_model(torch, p).to(ctx.device)
    ddp = DistributedDataParallel(
        model,
        device_ids=[ctx.device.index] if ctx.is_cuda else None,
        process_group=group,
    )
    optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-4)
    generator = torch.Generator(device=ctx.device).manual_seed(1000 + ctx.rank)
    inputs = torch.randn(p.batch, p.width, device=ctx.device, generator=generator)
    targets = torch.randn(p.batch, p.width, device=ctx.device, generator=generator)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(ddp(inputs), targets)
        loss.backward()
        optimizer.step()

    for _ in range(p.warmup_steps):
        step()
    ctx.sync()
    ctx.barrier(group)
    times: list[float] = []
    for _ in range(p.steps):
        ctx.sync()
        start = time.perf_counter()
        step()
        ctx.sync()
        times.append(time.perf_counter() - start)
    return times


def _gradient_busbw(ctx: WorkerContext, group: Any, n: int, p: ScalingParams) -> float | None:
    """All-reduce bus bandwidth at the gradient size (GB/s); ``None`` for one rank."""
    torch, dist = ctx.torch, ctx.dist
    flat = torch.ones(p.model_params, dtype=torch.float32, device=ctx.device)
    for _ in range(2):
        dist.all_reduce(flat, group=group)
    ctx.sync()
    ctx.barrier(group)
    start = time.perf_counter()
    for _ in range(p.busbw_iters):
        dist.all_reduce(flat, group=group)
    ctx.sync()
    elapsed = torch.tensor(
        [(time.perf_counter() - start) / p.busbw_iters], dtype=torch.float64, device=ctx.device
    )
    dist.all_reduce(elapsed, op=dist.ReduceOp.SUM, group=group)
    return stats.busbw_gbps("all_reduce", 4 * p.model_params, float(elapsed.item()) / n, n)


def _ladder(
    ctx: WorkerContext, p: ScalingParams, points: list[dict[str, Any]], busbw: float | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ScalingMeasurement dump (and its extra) of the rank counts measured so far."""
    efficiency = stats.scaling_efficiency(
        {pt["ranks"]: pt["throughput_samples_per_s"] for pt in points}
    )
    out_points = [
        {
            **pt,
            "efficiency": efficiency.get(pt["ranks"]),
            "throughput_samples_per_s": stats.round_sig(pt["throughput_samples_per_s"]),
        }
        for pt in points
    ]
    measurement = {
        "backend": ctx.backend,
        "model_params": p.model_params,
        "gradient_bytes": 4 * p.model_params,
        "per_rank_batch": p.batch,
        "points": out_points,
        "allreduce_busbw_gbps": stats.round_sig(busbw),
        "source": "probe",
    }
    extra = {
        "model": f"MLP {p.depth} x Linear({p.width}, {p.width}), fp32, SGD, DDP (25 MB buckets)",
        "model_width": p.width,
        "model_depth": p.depth,
        "warmup_steps": p.warmup_steps,
        "timed_steps": p.steps,
        "busbw_iterations": p.busbw_iters,
        "threads_per_rank": ctx.params.get("threads_per_rank"),
        "timer": "host perf_counter around forward+backward+step and a device sync; the "
        "slowest rank's median",
        "efficiency": {str(k): v for k, v in efficiency.items()},
    }
    return measurement, extra


def worker(ctx: WorkerContext) -> None:
    """Per-rank body: each rank count in turn; rank 0 reports the ladder after every rank
    count (the latest report holds all counts so far, so a deadline keeps what was measured)."""
    p = scaling_params(ctx.params)
    counts = sorted(ctx.members)
    gpu_sets = {int(k): v for k, v in ctx.params.get("gpus_by_count", {}).items()}
    torch = ctx.torch
    points: list[dict[str, Any]] = []
    busbw: float | None = None
    for step, count in enumerate(counts):
        ctx.progress(step / len(counts), f"DDP steps on {count} rank(s) ({ctx.backend})")
        ctx.dist.barrier(group=ctx.meta)
        summary = None
        members = ctx.members[count]
        if ctx.rank in members:
            group = ctx.groups[count]
            times = _train_steps(ctx, group, p)
            if ctx.is_cuda:
                torch.cuda.empty_cache()  # the model of this rank count is gone
            local = torch.tensor(
                [statistics.median(times), stats.percentile(times, 90)],
                dtype=torch.float64,
                device=ctx.device,
            )
            ctx.dist.all_reduce(local, op=ctx.dist.ReduceOp.MAX, group=group)
            summary = {"median_s": float(local[0].item()), "p90_s": float(local[1].item())}
            if count > 1:
                summary["busbw_gbps"] = _gradient_busbw(ctx, group, count, p)
        summary = ctx.collect(count, summary)
        if ctx.rank == 0 and summary is not None:
            point_busbw = summary.get("busbw_gbps")
            points.append(
                {
                    "ranks": count,
                    "gpus": gpu_sets.get(count, []),
                    "throughput_samples_per_s": count * p.batch / summary["median_s"],
                    "step_time_ms": stats.round_sig(summary["median_s"] * 1e3),
                    "step_time_p90_ms": stats.round_sig(summary["p90_s"] * 1e3),
                    "allreduce_busbw_gbps": stats.round_sig(point_busbw),
                }
            )
            if point_busbw is not None:
                busbw = point_busbw
            measurement, extra = _ladder(ctx, p, points, busbw)
            ctx.send(protocol.result("scaling", measurement, extra))
    ctx.progress(1.0, "done")

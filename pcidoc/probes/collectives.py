"""Child probe ``collectives``: the all-reduce and scaling probes in one launch.

:func:`pcidoc.probes.session.measure` uses it to pay torch import, CUDA and NCCL initialisation
once for both (about a quarter of the quick budget on an 8-GPU machine); ``pcidoc probe
allreduce|scaling`` runs them separately.
"""

from __future__ import annotations

from typing import Any

from pcidoc.probes import allreduce, scaling
from pcidoc.probes.child import Emitter
from pcidoc.probes.distributed import WorkerContext, launch


def run(params: dict[str, Any], emit: Emitter) -> None:
    """Launch the workers (see :mod:`pcidoc.probes.distributed`)."""
    params = {**params, "probe": "collectives"}
    launch(params, emit, __name__)


def worker(ctx: WorkerContext) -> None:
    """All-reduce ladder, then the scaling ladder, on the same process groups."""
    ctx.progress_offset, ctx.progress_span = 0.0, 0.4
    allreduce.worker(ctx)
    ctx.dist.barrier(group=ctx.meta)
    ctx.progress_offset, ctx.progress_span = 0.4, 0.6
    scaling.worker(ctx)

"""Helpers shared by several ``nvlink.*`` checks."""

from __future__ import annotations

from collections import Counter

from pcidoc.doctor.context import Context
from pcidoc.model.facts import Gpu
from pcidoc.model.links import is_nvlink

_NVLINK_RESET = (
    "With no process on the GPU, reset it (`sudo nvidia-smi -r -i {index}`) or reboot; if the "
    "links stay down, run `dcgmi diag -r 3`, collect `sudo nvidia-bug-report.sh` and ask for "
    "baseboard/NVSwitch service."
)


def _links_known(gpu: Gpu) -> bool | None:
    """True when the GPU's NVLink list was read (possibly empty because it has none)."""
    reason = (gpu.why("nvlinks") or "").upper()
    if gpu.nvlinks:
        # A list with a recorded gap is partial (an elided paste): not a full count.
        return None if reason else True
    if any(tag in reason for tag in ("NOT_SUPPORTED", "NOT SUPPORTED", "NO NVLINK", "0 NVLINK")):
        return True
    return None


def _to_switch(gpu: Gpu) -> bool:
    return any(link.remote_type == "switch" for link in gpu.nvlinks)


def _common_nv(ctx: Context, gpus: list[Gpu]) -> str | None:
    """The most common NV# class among the pairs of ``gpus`` (ties: the first pair's)."""
    memo = ctx.memo.setdefault("nvlink.common_nv", {})
    key = tuple(map(id, gpus))
    if key not in memo:
        tally: Counter[str | None] = Counter()
        if key == tuple(map(id, ctx.gpus)):
            tally = ctx.pair_classes  # the same pairs, in the same order
        else:
            for i, a in enumerate(gpus):
                get = ctx.gpu_link_row(a.index).get
                tally.update([get(b.index) for b in gpus[i + 1 :]])
        # Counter keeps first-seen order, so among equal counts the first pair's class wins,
        # as it did when the NV# classes were counted pair by pair.
        classes = Counter({link: n for link, n in tally.items() if is_nvlink(link)})
        # max() is most_common(1) (the first of equal counts) without importing heapq.
        memo[key] = max(classes.items(), key=lambda item: item[1])[0] if classes else None
    return memo[key]  # type: ignore[return-value]

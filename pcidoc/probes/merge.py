"""Merging what a probe emitted piece by piece, and saying what a deadline cut off (pure).

Probes emit results as they finish (DESIGN.md §7, issue 9): the P2P probe one matrix cell per
ordered pair and phase, the scaling probe its ladder after every rank count. A probe that is
killed at its deadline (a translating IOMMU makes peer copies crawl) therefore leaves what it
had measured. This module folds those pieces into the records a capture keeps, and writes the
sentence that says which pairs / rank counts / GPUs were not measured.

It also stamps every measurement with the conditions it was taken under (``conditions``): the
result's ``extra`` (copies, sizes, gating...), the probe's mode, and the torch/CUDA/NCCL versions
and NCCL tuning variables the child reported.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pcidoc.model.measurements import (
    P2PMatrixMeasurement,
    ScalingMeasurement,
)
from pcidoc.probes.protocol import nccl_settings

VERSION_KEYS = ("torch_version", "cuda_build", "nccl_version", "python", "python_version")


def _matrix_key(m: P2PMatrixMeasurement) -> tuple[Any, ...]:
    return (m.kind, m.bidirectional, m.p2p, m.unit, m.access, m.method, m.latency_side, m.source)


def merge_dicts(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """``update`` over ``base``; dict values are merged one level deep (per-pair tables)."""
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def _overlay(target: P2PMatrixMeasurement, piece: P2PMatrixMeasurement) -> None:
    """Copy the known cells of ``piece`` into ``target`` (GPU lists may differ)."""
    for i, src in enumerate(piece.gpus):
        for j, dst in enumerate(piece.gpus):
            value = (
                piece.values[i][j] if i < len(piece.values) and j < len(piece.values[i]) else None
            )
            if value is None:
                continue
            if src not in target.gpus or dst not in target.gpus:
                continue
            target.values[target.gpus.index(src)][target.gpus.index(dst)] = value
    if piece.size_bytes is not None:
        target.size_bytes = max(target.size_bytes or 0, piece.size_bytes)


def merge_results(kinds_and_models: Sequence[tuple[str, Any]]) -> list[int]:
    """Indices of the results to keep after folding partial P2P cells and scaling ladders.

    P2P matrices with the same kind/direction/mode are overlaid cell by cell into the first of
    them (their ``conditions`` merged); of the scaling ladders of one backend, the last (the
    most rank counts) is kept. Everything else is kept as it is. The kept models are updated in
    place.
    """
    keep: list[int] = []
    first_matrix: dict[tuple[Any, ...], int] = {}
    last_scaling: dict[Any, int] = {}
    for position, (kind, model) in enumerate(kinds_and_models):
        if kind == "p2p" and isinstance(model, P2PMatrixMeasurement):
            key = _matrix_key(model)
            if key in first_matrix:
                target = kinds_and_models[first_matrix[key]][1]
                if model.gpus != target.gpus:
                    target.gpus, target.values = _union(target, model)
                _overlay(target, model)
                target.conditions = merge_dicts(target.conditions, model.conditions)
                continue
            model.values = [list(row) for row in model.values]
            first_matrix[key] = position
        elif kind == "scaling" and isinstance(model, ScalingMeasurement):
            key = (model.backend, model.model_params, model.per_rank_batch)
            if key in last_scaling:
                keep.remove(last_scaling[key])
            last_scaling[key] = position
        keep.append(position)
    return keep


def _union(
    target: P2PMatrixMeasurement, piece: P2PMatrixMeasurement
) -> tuple[list[int], list[list[float | None]]]:
    gpus = sorted(set(target.gpus) | set(piece.gpus))
    values: list[list[float | None]] = [[None] * len(gpus) for _ in gpus]
    for i, src in enumerate(target.gpus):
        for j, dst in enumerate(target.gpus):
            values[gpus.index(src)][gpus.index(dst)] = target.values[i][j]
    return gpus, values


def run_conditions(mode: str | None, info: dict[str, Any]) -> dict[str, Any]:
    """Conditions shared by every measurement of one probe run."""
    out: dict[str, Any] = {}
    if mode:
        out["mode"] = mode
    for key in VERSION_KEYS:
        if info.get(key) is not None:
            out[key] = info[key]
    nccl_env = info.get("nccl_env")
    if not isinstance(nccl_env, dict):
        nccl_env = nccl_settings(os.environ)
    if nccl_env:
        out["nccl_env"] = nccl_env
    return out


def not_measured(info: dict[str, Any], results: Sequence[tuple[str, Any]]) -> str | None:
    """What a run that was cut short had not measured yet, as a clause (``None``: nothing
    known to be missing). Uses the plan the child announced (``info["plan"]``)."""
    plan = info.get("plan")
    if not isinstance(plan, dict):
        return None
    if isinstance(plan.get("pairs"), list):
        done = _measured_pairs(results)
        pairs = [tuple(p) for p in plan["pairs"] if isinstance(p, list) and len(p) == 2]
        missing = [p for p in pairs if p not in done]
        if missing:
            shown = ", ".join(f"GPU{a}->GPU{b}" for a, b in missing[:6])
            more = f" and {len(missing) - 6} more" if len(missing) > 6 else ""
            return (
                f"{len(pairs) - len(missing)} of {len(pairs)} ordered pairs measured; "
                f"timed out before {shown}{more}"
            )
    if isinstance(plan.get("rank_counts"), list):
        done_counts = {
            p.ranks
            for kind, m in results
            if kind == "scaling" and isinstance(m, ScalingMeasurement)
            for p in m.points
        }
        done_counts |= {getattr(m, "ranks", None) for kind, m in results if kind == "collective"}
        missing_counts = [n for n in plan["rank_counts"] if n not in done_counts]
        if missing_counts:
            return "timed out before rank count(s) " + ", ".join(map(str, missing_counts))
    if isinstance(plan.get("gpus"), list):
        done_gpus = {getattr(m, "gpu", None) for kind, m in results if kind == "transfer"}
        missing_gpus = [g for g in plan["gpus"] if g not in done_gpus]
        if missing_gpus:
            return "timed out before " + ", ".join(f"GPU{g}" for g in missing_gpus)
    return None


def _measured_pairs(results: Sequence[tuple[str, Any]]) -> set[tuple[int, int]]:
    """Ordered pairs with a unidirectional bandwidth value (enabled or disabled)."""
    done: set[tuple[int, int]] = set()
    for kind, m in results:
        if kind != "p2p" or not isinstance(m, P2PMatrixMeasurement):
            continue
        if m.kind != "bandwidth" or m.bidirectional or m.p2p == "staged":
            continue
        for i, src in enumerate(m.gpus):
            for j, dst in enumerate(m.gpus):
                if i != j and m.values[i][j] is not None:
                    done.add((src, dst))
    return done

"""Helpers shared by several ``transfer.*`` checks."""

from __future__ import annotations

from pcidoc.model.measurements import TransferMeasurement

_DIRECTION = {"h2d": "H2D", "d2h": "D2H"}


def _best(transfers: list[TransferMeasurement]) -> TransferMeasurement:
    return max(transfers, key=lambda t: t.bandwidth_gbps)


def _group(
    transfers: list[TransferMeasurement],
) -> dict[tuple[int, str], list[TransferMeasurement]]:
    groups: dict[tuple[int, str], list[TransferMeasurement]] = {}
    for t in transfers:
        if t.direction in _DIRECTION:
            groups.setdefault((t.gpu, t.direction), []).append(t)
    return groups

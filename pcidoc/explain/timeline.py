"""One timeline across hosts: each host's clock aligned on the steps every rank completes
together.

A synchronous data-parallel step ends with a collective that no rank leaves before every rank
entered it, so the ranks of a job log the end of step *s* at the same moment, give or take
milliseconds. The median difference between a host's and the reference host's times for the
same steps is that host's clock offset. A host with no step in common with the reference keeps
an unknown offset (its events are shown on its own clock, and said to be so).
"""

from __future__ import annotations

from statistics import median

from pcidoc._record import field, record
from pcidoc.explain.facts import Event
from pcidoc.explain.ranks import RankView


@record
class Clocks:
    """The clock offset of every host against the reference host (seconds to subtract)."""

    reference: str | None = None
    offsets: dict[str, float | None] = field(default_factory=dict)
    steps_compared: dict[str, int] = field(default_factory=dict)

    def aligned(self, event: Event) -> float | None:
        """The event's time on the reference clock, or None (no time, or unknown offset)."""
        if event.time is None:
            return None
        if event.host is None or event.host not in self.offsets:
            return event.time if len(self.offsets) <= 1 else None
        offset = self.offsets[event.host]
        return None if offset is None else event.time - offset


def _step_times(views: dict[int, RankView]) -> dict[str, dict[int, float]]:
    """Per host, per step: the median time its ranks logged that step's end."""
    raw: dict[str, dict[int, list[float]]] = {}
    for view in views.values():
        if view.host is None:
            continue
        for step, event in view.steps.items():
            if event.time is not None:
                raw.setdefault(view.host, {}).setdefault(step, []).append(event.time)
    return {host: {s: median(t) for s, t in steps.items()} for host, steps in raw.items()}


def align(views: dict[int, RankView], hosts: list[str]) -> Clocks:
    """Offsets of every host's clock against the host of the lowest rank that logged steps."""
    times = _step_times(views)
    clocks = Clocks()
    ordered = sorted(views.values(), key=lambda v: v.rank)
    reference = next((v.host for v in ordered if v.host in times), None)
    clocks.reference = reference
    everyone = list(dict.fromkeys([*hosts, *(v.host for v in ordered if v.host)]))
    for host in everyone:
        if host == reference:
            clocks.offsets[host] = 0.0
            clocks.steps_compared[host] = len(times.get(host, {}))
            continue
        common = sorted(set(times.get(host, {})) & set(times.get(reference or "", {})))
        clocks.steps_compared[host] = len(common)
        if reference is None or not common:
            clocks.offsets[host] = None
            continue
        diffs = [times[host][s] - times[reference][s] for s in common]
        clocks.offsets[host] = round(median(diffs), 3)
    return clocks

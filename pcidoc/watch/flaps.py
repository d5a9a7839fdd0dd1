"""The link history ``pcidoc watch`` keeps: every change of negotiated PCIe generation or width
of each GPU (NVML, each sample) and of the port it hangs off (sysfs ``current_link_speed`` /
``current_link_width``, each sample), with its time, and transitions per minute.

Only changes are stored (plus the latest reading, whose time closes the span), so a week of
samples costs as much as its transitions; at most :data:`MAX_CHANGES` per device are kept, the
count goes on. :meth:`FlapRecorder.history` is what ``pcie.link-flap`` judges.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pcidoc.model.kernel import LinkHistory, LinkSample, LinkTrace

MAX_CHANGES = 5000
"""Changes kept per device."""

_GTS_TO_GEN = {"2.5": 1, "5.0": 2, "5": 2, "8.0": 3, "8": 3, "16.0": 4, "32.0": 5, "64.0": 6}

PortReader = Callable[[str], "tuple[int | None, int | None]"]


def sysfs_port_link(
    bus_id: str, root: str = "/sys/bus/pci/devices"
) -> tuple[int | None, int | None]:
    """(generation, width) of a PCI device's link from sysfs; (None, None) when unreadable."""
    base = Path(root) / bus_id
    try:
        speed = (base / "current_link_speed").read_text(encoding="ascii").split()[0]
        width = int((base / "current_link_width").read_text(encoding="ascii").strip())
    except (OSError, ValueError, IndexError):
        return None, None
    return _GTS_TO_GEN.get(speed), width


class _Trace:
    def __init__(self, device: str, bus_id: str | None, kind: str) -> None:
        self.device, self.bus_id, self.kind = device, bus_id, kind
        self.changes: list[LinkSample] = []
        self.latest: LinkSample | None = None
        self.transitions = 0
        self.first_t: float | None = None

    def add(
        self,
        t: float,
        gen: int | None,
        width: int | None,
        max_gen: int | None,
        max_width: int | None,
    ) -> bool:
        """Record one reading; True when it changed the link."""
        if gen is None and width is None:
            return False
        if self.first_t is None:
            self.first_t = t
        rel = round(t - self.first_t, 3)
        sample = LinkSample(
            sample=0, time_s=rel, gen=gen, width=width, max_gen=max_gen, max_width=max_width
        )
        changed = self.latest is not None and (self.latest.gen, self.latest.width) != (gen, width)
        if changed:
            self.transitions += 1
        if (self.latest is None or changed) and len(self.changes) < MAX_CHANGES:
            self.changes.append(sample)
        self.latest = sample
        return changed

    def per_minute(self) -> float | None:
        if self.latest is None or not self.latest.time_s:
            return None
        return round(self.transitions / (self.latest.time_s / 60), 3)

    def trace(self) -> LinkTrace:
        samples = list(self.changes)
        if self.latest is not None and (not samples or samples[-1] is not self.latest):
            samples.append(self.latest)
        numbered = [s.model_copy(update={"sample": i}) for i, s in enumerate(samples)]
        return LinkTrace(device=self.device, bus_id=self.bus_id, kind=self.kind, samples=numbered)


class FlapRecorder:
    """Link readings per device across the samples of one ``watch``."""

    def __init__(self, port_reader: PortReader | None = None) -> None:
        self.port_reader = port_reader
        self.traces: dict[str, _Trace] = {}

    def record(
        self,
        t: float,
        device: str,
        bus_id: str | None,
        kind: str,
        gen: int | None,
        width: int | None,
        max_gen: int | None = None,
        max_width: int | None = None,
    ) -> bool:
        """One reading of one device; True when its link changed."""
        trace = self.traces.get(device)
        if trace is None:
            trace = self.traces[device] = _Trace(device, bus_id, kind)
        return trace.add(t, gen, width, max_gen, max_width)

    def read_port(
        self, t: float, gpu_label: str, port: str
    ) -> tuple[int | None, int | None] | None:
        """Read the upstream port's link (when a reader is set); the new state if it changed."""
        if self.port_reader is None:
            return None
        gen, width = self.port_reader(port)
        changed = self.record(t, f"{gpu_label} upstream", port, "port", gen, width)
        return (gen, width) if changed else None

    def counts(self) -> dict[str, tuple[int, float | None]]:
        """Device -> (transitions, transitions per minute)."""
        return {name: (tr.transitions, tr.per_minute()) for name, tr in self.traces.items()}

    def history(self) -> LinkHistory:
        """The history so far, for ``pcie.link-flap``."""
        traces = [tr.trace() for tr in self.traces.values() if tr.latest is not None]
        spans = [tr.latest.time_s for tr in self.traces.values() if tr.latest and tr.latest.time_s]
        return LinkHistory(
            tool="watch",
            readings=max((len(t.samples) for t in traces), default=0),
            span_s=max(spans) if spans else None,
            traces=traces,
        )

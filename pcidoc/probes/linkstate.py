"""Read a GPU's PCIe link generation/width and P-state while a transfer is running.

An idle GPU may train its link down (``nvidia-smi``: the current generation "may be reduced when
the GPU is not in use"), so the negotiated link is only meaningful under load
(``research/probes.md`` §2.2). A sampler thread reads sysfs (``current_link_speed`` and
``current_link_width`` of the GPU's PCI function; no privileges needed) and NVML (through
:mod:`pcidoc.collect.nvml`, the one module that talks to NVML) while the plateau copies run, and
keeps the highest generation/width and the lowest P-state seen.
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass
from typing import Any

from pcidoc.model.units import parse_link_speed


@dataclass
class LinkReading:
    """What the link looked like during the load window."""

    gen: int | None = None
    width: int | None = None
    pstate: int | None = None
    samples: int = 0
    source: str | None = None
    """``sysfs``, ``nvml`` or ``sysfs+nvml``."""
    nvml_missing: str | None = None
    """Why NVML was not read (no bindings in this Python, no driver...), else ``None``."""


def read_sysfs_link(bus_id: str | None, sys_root: str = "/sys") -> tuple[int | None, int | None]:
    """``(gen, width)`` from ``<sys_root>/bus/pci/devices/<bus_id>/current_link_*``."""
    if not bus_id:
        return None, None
    base = os.path.join(sys_root, "bus", "pci", "devices", bus_id)
    gen = width = None
    try:
        with open(os.path.join(base, "current_link_speed"), encoding="ascii") as handle:
            gen = parse_link_speed(handle.read())
    except OSError:
        pass
    try:
        with open(os.path.join(base, "current_link_width"), encoding="ascii") as handle:
            text = handle.read().strip()
            width = int(text) if text.isdecimal() and int(text) > 0 else None
    except OSError:
        pass
    return gen, width


class _Nvml:
    """NVML reads through pcidoc's backend; absent (with :attr:`missing` saying why) when NVML
    cannot be opened. :mod:`pcidoc.collect.nvml` needs only the standard library and the
    bindings, so this works under a ``--python`` that has torch and nothing else of pcidoc's."""

    def __init__(self) -> None:
        self.backend: Any = None
        self.missing: str | None = None
        try:
            from pcidoc.collect.nvml import PynvmlBackend

            backend = PynvmlBackend()
            failed = backend.init()
        except Exception as exc:  # never let the sampler break a measurement
            self.missing = f"NVML not read: {type(exc).__name__}: {exc}"
            return
        if failed is None:
            self.backend = backend
        else:
            self.missing = f"NVML not read: {failed.reason}"

    def read(self, index: int | None) -> tuple[int | None, int | None, int | None]:
        if self.backend is None or index is None:
            return None, None, None
        from pcidoc.collect.nvml import is_unavailable

        values = []
        for call in (
            self.backend.pcie_current_gen,
            self.backend.pcie_current_width,
            self.backend.performance_state,
        ):
            try:
                value = call(index)
            except Exception:
                value = None
            values.append(None if value is None or is_unavailable(value) else int(value))
        gen, width, pstate = values
        if pstate == 32:  # NVML's "unknown" P-state
            pstate = None
        return gen, width, pstate

    def close(self) -> None:
        if self.backend is not None:
            with contextlib.suppress(Exception):
                self.backend.shutdown()


def _best(current: int | None, new: int | None, lowest: bool = False) -> int | None:
    if new is None:
        return current
    if current is None:
        return new
    return min(current, new) if lowest else max(current, new)


class LinkSampler:
    """Samples the link of one GPU on a background thread between :meth:`start` and
    :meth:`stop`.

    Args:
        bus_id: The GPU's PCI address (sysfs form).
        nvml_index: The GPU's NVML index.
        interval_s: Time between samples.
        sys_root: sysfs root (tests).
        use_nvml: Also read NVML.
    """

    def __init__(
        self,
        bus_id: str | None,
        nvml_index: int | None,
        interval_s: float = 0.02,
        sys_root: str = "/sys",
        use_nvml: bool = True,
    ) -> None:
        self.bus_id = bus_id
        self.nvml_index = nvml_index
        self.interval_s = interval_s
        self.sys_root = sys_root
        self._nvml = _Nvml() if use_nvml else None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.reading = LinkReading()
        self._sources: set[str] = set()

    def sample(self) -> None:
        """Take one sample now."""
        gen, width = read_sysfs_link(self.bus_id, self.sys_root)
        if gen is not None or width is not None:
            self._sources.add("sysfs")
        ngen = nwidth = pstate = None
        if self._nvml is not None:
            ngen, nwidth, pstate = self._nvml.read(self.nvml_index)
            if ngen is not None or nwidth is not None or pstate is not None:
                self._sources.add("nvml")
        reading = self.reading
        reading.gen = _best(_best(reading.gen, gen), ngen)
        reading.width = _best(_best(reading.width, width), nwidth)
        reading.pstate = _best(reading.pstate, pstate, lowest=True)
        reading.samples += 1

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def start(self) -> LinkSampler:
        """Start sampling in the background."""
        self._thread = threading.Thread(target=self._loop, name="pcidoc-link-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> LinkReading:
        """Stop sampling and return the reading (one last sample is taken)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        self.sample()
        if self._nvml is not None:
            self._nvml.close()
        self.reading.source = "+".join(sorted(self._sources)) or None
        if self._nvml is not None:
            self.reading.nvml_missing = self._nvml.missing
        return self.reading

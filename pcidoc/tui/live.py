"""The TUI's default collaborators on a real machine: live collection, the NVML counter sampler,
the bundled samples and the doctor. They are the defaults of
:class:`pcidoc.tui.services.TuiServices`; tests pass fakes in their place.

Everything heavy is imported inside the functions, so importing this module costs nothing and a
``--demo`` start never loads the live collectors.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pcidoc.collect.counters import CounterSampler
    from pcidoc.model.capture import Capture, SampleInfo
    from pcidoc.model.report import Report, ReportSource


class LiveMachine:
    """One NVML session shared by the live collection and the counter sampler.

    :meth:`collect` initialises NVML once and keeps it open so that the sampler reuses the
    same handles; :meth:`close` ends the session (called when the app exits).

    Args:
        backend_factory: Makes the NVML backend (default: the real one; tests pass a fake).
    """

    def __init__(self, backend_factory: Callable[[], Any] | None = None) -> None:
        self._backend_factory = backend_factory
        self._backend: Any = None
        self._opened = False
        self._lock = threading.Lock()

    def collect(self) -> Capture:
        """Collect this machine's facts (never raises; gaps carry their reasons)."""
        from pcidoc.collect.live import collect_live

        with self._lock:
            if self._backend is None:
                factory = self._backend_factory
                if factory is None:
                    from pcidoc.collect.nvml import PynvmlBackend

                    factory = PynvmlBackend
                self._backend = factory()
                self._opened = self._backend.init() is None
        return collect_live(backend=self._backend)

    def sampler(self, capture: Capture) -> CounterSampler | None:
        """A counter sampler over the GPUs of ``capture``, or ``None`` without NVML/GPUs."""
        if not self._opened or not capture.gpus:
            return None
        from pcidoc.collect.counters import CounterSampler

        return CounterSampler.for_capture(self._backend, capture)

    def close(self) -> None:
        """End the NVML session opened by :meth:`collect`."""
        with self._lock:
            if self._backend is not None and self._opened:
                self._backend.shutdown()
                self._opened = False


def load_demo(name: str | None) -> tuple[Capture, ReportSource]:
    """A bundled sample by name (the default demo when ``None``) and its report source."""
    from pcidoc.model.report import ReportSource
    from pcidoc.samples import default_demo, load_sample

    chosen = name or default_demo()
    return load_sample(chosen), ReportSource(kind="demo", name=chosen)


def list_demos() -> list[SampleInfo]:
    """The bundled samples (real ones first)."""
    from pcidoc.samples import list_samples

    return list_samples()


def diagnose(
    capture: Capture, source: ReportSource, probes_requested: bool, generated_at: str
) -> Report:
    """Run the doctor once over ``capture``."""
    from pcidoc.doctor import run

    return run(capture, source, probes_requested=probes_requested, generated_at=generated_at)


def busy_processes(capture: Capture, gpus: list[int]) -> list[Any]:
    """Other processes using the GPUs the probes would measure (NVML read now)."""
    from pcidoc.probes import preflight

    return preflight.busy_processes(capture, gpus, preflight.live_gpu_processes(gpus))


def wait_tick(interval: float, stop: threading.Event) -> bool:
    """The sampler's default ticker: wait ``interval`` seconds; True when asked to stop."""
    return stop.wait(interval)

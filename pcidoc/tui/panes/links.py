"""The Links pane's text (how often the GPUs' links changed speed or width) and its binding."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pcidoc.model.capture import Capture

if TYPE_CHECKING:
    from pcidoc.tui.screens.main import MainScreen
    from pcidoc.tui.state import Counters, Displayed
    from pcidoc.tui.widgets.links_pane import LinksPane


def link_changes(capture: Capture | None) -> str:
    """``GPU1 4×, GPU0 upstream 1×`` from the capture's link histories ('' when none)."""
    if capture is None or capture.evidence is None:
        return ""
    counts: dict[str, int] = {}
    for history in capture.evidence.link_histories:
        for trace in history.traces:
            counts[trace.device] = counts.get(trace.device, 0) + trace.transitions()
    if not counts:
        return ""
    changed = [f"{device} {n}×" for device, n in counts.items() if n]
    return ", ".join(changed[:8]) if changed else f"none in {len(counts)} link(s)"


def live_link_changes(
    capture: Capture, changes: Mapping[int, tuple[int, int]], minutes: float | None
) -> str:
    """``GPU3 width 2×, gen 5× in 12 min`` from the live link changes counted per GPU index
    ('' when none: the Links pane then says nothing about them)."""
    parts = []
    for index, (gen, width) in sorted(changes.items()):
        gpu = capture.gpu(index)
        label = gpu.label if gpu is not None else f"GPU{index}"
        said = [f"{what} {n}×" for what, n in (("width", width), ("gen", gen)) if n]
        if said:
            parts.append(f"{label} {', '.join(said)}")
    if not parts:
        return ""
    shown = "; ".join(parts[:8]) + (f"; +{len(parts) - 8} GPUs" if len(parts) > 8 else "")
    if minutes is not None:
        shown += f" in {minutes:.0f} min" if minutes >= 1 else " in under a minute"
    return shown


# ------------------------------------------------------------------ the pane and the app's state


def bind(screen: MainScreen, links: LinksPane) -> None:
    """Show the machine on display and each counter sample of it."""
    state = screen.state

    def machine(displayed: Displayed | None) -> None:
        if displayed is None:
            links.show_capture(None, False, None)
            return
        links.show_capture(
            displayed.capture,
            displayed.moving_counters,
            displayed.interval,
            replay=displayed.replay,
        )

    def counters(value: Counters | None) -> None:
        if value is not None:
            links.show_sample(value.sample, value.rates or {}, value.link_changes, value.since)

    links.watch(state, "displayed", machine)
    links.watch(state, "counters", counters)


def shown(screen: MainScreen, links: LinksPane) -> None:
    """Nothing to catch up: the pane follows the state while hidden."""

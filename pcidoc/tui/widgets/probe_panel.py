"""Per-probe progress bars of a probe run started from the TUI."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label, ProgressBar, Static

from pcidoc.model.measurements import ProbeError
from pcidoc.model.units import plurals

_SAFE = str.maketrans({c: "-" for c in " ()/+,.:;"})

SHORT_NAMES: dict[str, str] = {
    "env": "torch + CUDA",
    "transfer": "host↔GPU copies",
    "p2p": "GPU↔GPU copies",
    "collectives": "all-reduce, scaling",
    "allreduce": "all-reduce",
    "scaling": "scaling",
}
"""Row names; the full label (GPUs, ranks) is shown until the probe reports progress."""


def _row_id(probe: str) -> str:
    return "probe-" + probe.translate(_SAFE)


class ProbePanel(Vertical):
    """A title line and one row per probe: name, progress bar, status."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.mode: str | None = None
        self.running = False
        self.status: dict[str, str] = {}
        """Probe name -> last status text (tests read it)."""
        self._last_title: Text | None = None
        self._rows: dict[str, Horizontal] = {}

    def compose(self) -> ComposeResult:
        yield Static("", id="probe-title")
        yield Vertical(id="probe-rows")

    def _title(self, state: str) -> None:
        text = Text()
        text.append(f"Probes ({self.mode})", style="bold")
        text.append(f"  {state}")
        if self.running:
            text.append("   ")
            text.append("x", style="bold reverse")
            text.append(" cancel")
        if text != self._last_title:
            self._last_title = text
            self.query_one("#probe-title", Static).update(text, layout=False)

    async def start(self, mode: str) -> None:
        """A new run: clear the rows."""
        self.mode = mode
        self.running = True
        self.status.clear()
        self._rows.clear()
        await self.query_one("#probe-rows").remove_children()
        self.display = True
        self._title("checking torch and CUDA…")

    async def _row(self, probe: str, label: str | None = None) -> Horizontal:
        row = self._rows.get(probe)
        if row is not None:
            return row
        detail = label if label and label != probe else ""
        row = Horizontal(
            Label(SHORT_NAMES.get(probe, probe), classes="probe-label"),
            ProgressBar(total=100, show_eta=False, classes="probe-bar"),
            Label(
                Text(f"waiting · {detail}" if detail else "waiting", style="dim"),
                classes="probe-status",
            ),
            id=_row_id(probe),
            classes="probe-row",
        )
        self._rows[probe] = row
        await self.query_one("#probe-rows").mount(row)
        return row

    async def _set(
        self,
        probe: str,
        status: str,
        style: str = "",
        progress: float | None = None,
        label: str | None = None,
    ) -> None:
        row = await self._row(probe, label)
        self.status[probe] = status
        # Fixed-size rows: no relayout per progress message (a probe may send hundreds).
        row.query_one(".probe-status", Label).update(Text(status, style=style), layout=False)
        if progress is not None:
            row.query_one(ProgressBar).update(progress=progress)

    def cancelling(self) -> None:
        """The cancel key was pressed; the runner is ending the probe's processes."""
        self._title("cancelling…")

    async def plan(
        self, probes: list[tuple[str, str]], errors: list[ProbeError], notes: list[str]
    ) -> None:
        """The probes that will run (rows) and those that will not (with why)."""
        for name, label in probes:
            await self._row(name, label)
            self.status.setdefault(name, "waiting")
        for error in errors:
            await self._set(
                error.probe, f"{error.kind}: {error.message}", "yellow", label=error.probe
            )
        count = len(probes)
        self._title(
            f"{count} probe{'s' if count != 1 else ''} planned"
            + (f" · {notes[0]}" if notes else "")
        )

    async def progress(self, probe: str, fraction: float, message: str) -> None:
        """A progress report of a running probe."""
        if self.running:
            self._title(f"running {probe}…")
        await self._set(probe, message or "running", progress=max(0.0, min(1.0, fraction)) * 100)

    async def finish(
        self, probe: str, results: int, errors: list[ProbeError], wall_s: float
    ) -> None:
        """A probe ended."""
        if errors:
            error = errors[0]
            style = "yellow" if error.kind == "interrupted" else "bold red"
            await self._set(probe, f"{error.kind}: {error.message}", style)
        else:
            took = f" in {wall_s:.0f} s" if wall_s >= 1 else ""
            what = plurals(f" · {results} measurement(s)") if results else ""
            await self._set(probe, f"done{took}{what}", "green", progress=100)

    def end(self, cancelled: bool) -> None:
        """The run is over."""
        self.running = False
        self._title(
            "cancelled" if cancelled else "finished: the checks below include the measurements"
        )

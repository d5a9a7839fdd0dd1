"""The Links pane: per-GPU PCIe/NVLink state and throughput, the selected GPU's NVLinks and a
history chart.

With a live GPU machine the numbers come from the counter sampler (rates between two samples of
cumulative counters). From a capture or a demo they are the capture's own fields and the pane
says so: a capture holds one moment, not a stream.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal, Vertical
from textual.widgets import DataTable, Static

from pcidoc.model.capture import Capture
from pcidoc.model.counters import CounterSample, GpuCounters, GpuRates
from pcidoc.model.facts import Gpu
from pcidoc.model.linkmodel import (
    gpu_model_of,
    gpu_pcie_ceiling,
    nvlink_link_rate_gbps,
    unwired_nvlinks,
)
from pcidoc.model.units import link_label
from pcidoc.tui.hanging import Phrases
from pcidoc.tui.panes.links import link_changes, live_link_changes

HISTORY = 120
"""Samples kept per series for the chart."""

STATIC_NOTE = "static values from the capture — live counters need a live GPU machine"

GPU_COLUMNS: tuple[tuple[str, str], ...] = (
    ("gpu", "GPU"),
    ("link", "PCIe link"),
    ("tx", "TX"),
    ("rx", "RX"),
    ("util", "Util"),
    ("replays", "Replay"),
    ("aer", "AER"),
    ("nvl", "NVL"),
    ("nvtx", "NVL TX"),
    ("nvrx", "NVL RX"),
)
"""Short headers, so that the table fits 80 columns uncut; the note says the unit (GB/s)."""

LINK_COLUMNS: tuple[tuple[str, str], ...] = (
    ("link", "Link"),
    ("state", "State"),
    ("tx", "TX"),
    ("rx", "RX"),
    ("errors", "Errors"),
    ("version", "Ver"),
    ("speed", "Rated"),
    ("remote", "Remote"),
)
"""The selected GPU's NVLinks; its title says the unit (GB/s)."""

_LINK_WIDTHS = {"speed": 6}
"""Fixed column widths: the rated speed ("25.0", "14.1", "—") keeps the width of a reported one,
so the columns beside the chart end where they did at 80 columns (never one letter of the
next column)."""


def _num(value: float | None, digits: int = 2) -> Text:
    """A rate in GB/s: three significant digits at most (``0.63``, ``12.3``, ``123``), so the
    table fits 80 columns."""
    if value is None:
        return Text("—", style="dim", justify="right")
    if digits == 2 and abs(value) >= 10:
        digits = 1 if abs(value) < 100 else 0
    return Text(f"{value:.{digits}f}", justify="right")


_STATE_STYLES = {"up": "green", "unwired": "dim"}


def _nvl_cell(up: int, wired: int) -> Text:
    """``12/12``: NVLinks up of those the design wires (yellow when some are down)."""
    return Text(f"{up}/{wired}", justify="right", style="bold yellow" if up < wired else "")


def _no_gpus_note(capture: Capture) -> Text:
    """Why the pane is empty: no GPU on this machine (NVML's reason) or in this capture."""
    where = "this machine" if capture.origin.kind == "live" else "this capture"
    text = Text(f"No GPUs in {where}, so no links to show", style="bold yellow")
    reason = capture.unavailable.get("gpus")
    text.append(f": {reason}" if reason else ".")
    text.append(
        "\nThe Host pane (4) shows what was found; `pcidoc --demo` opens a sample machine.",
        style="dim",
    )
    return text


def _count(value: int | None, warn: bool = True) -> Text:
    if value is None:
        return Text("—", style="dim", justify="right")
    return Text(str(value), style="bold yellow" if warn and value > 0 else "", justify="right")


def _total(value: int | None, delta: int | None) -> Text:
    """A cumulative error counter and, when it grew since the last sample, by how much: the
    total is what the doctor judges (4200 replays since boot), the ``+N`` what happens now."""
    if value is None:
        return _count(delta) if delta else Text("—", style="dim", justify="right")
    text = Text(str(value), style="bold yellow" if value > 0 else "", justify="right")
    if delta:
        text.append(f" +{delta}", style="bold yellow")
    return text


def _link_cell(gpu: Gpu, gen: int | None = None, width: int | None = None) -> Text:
    pcie = gpu.pcie
    gen = gen if gen is not None else pcie.current_gen
    width = width if width is not None else pcie.current_width
    if gen is None and width is None:
        if _model_link(gpu):
            # No negotiated link in the capture: Util % is against the GPU model's own link
            # (the link model's ceiling), so say which, marked as not read from this GPU.
            model = gpu_model_of(gpu)
            if model is not None:
                label = link_label(model.pcie_gen, model.pcie_width)
            else:
                label = link_label(pcie.max_gen, pcie.max_width)
            return Text(f"{label}?", style="dim")
        return Text("not known", style="dim")
    now = link_label(gen, width)
    top = link_label(pcie.max_gen, pcie.max_width)
    below = (gen or 0) < (pcie.max_gen or 0) or (width or 0) < (pcie.max_width or 0)
    if below:
        # The maximum in brackets, short ("Gen4 x8 (x16)", "Gen3 x8 (G4 x16)"): the table
        # fits 80 columns.
        if gen == pcie.max_gen and pcie.max_width:
            top = f"x{pcie.max_width}"
        elif width == pcie.max_width and pcie.max_gen:
            top = f"Gen{pcie.max_gen}"
        elif pcie.max_gen and pcie.max_width:
            top = f"G{pcie.max_gen} x{pcie.max_width}"
        return Text(f"{now} ({top})", style="yellow")
    return Text(now)


def _model_link(gpu: Gpu) -> bool:
    """The GPU's PCIe ceiling comes from its model, not from a link read on it."""
    pcie = gpu.pcie
    return (
        pcie.current_gen is None
        and pcie.current_width is None
        and gpu_pcie_ceiling(gpu).provenance == "model"
    )


def _no_link(gpu: Gpu) -> bool:
    """Neither the negotiated link nor the model's own is known (an imported matrix)."""
    return gpu.pcie.current_gen is None and gpu.pcie.current_width is None and not _model_link(gpu)


def _util(
    gpu: Gpu, tx: float | None, rx: float | None, gen: int | None = None, width: int | None = None
) -> Text:
    if tx is None and rx is None:
        return Text("—", style="dim", justify="right")
    if gen is not None and width is not None:
        from pcidoc.model.linkmodel import pcie_rate_gbps

        # The same rate table as the doctor and the pair detail (pcidoc.model.linkmodel).
        ceiling = pcie_rate_gbps(gen, width)
    else:
        ceiling = gpu_pcie_ceiling(gpu).gbps
    if not ceiling:
        return Text("—", style="dim", justify="right")  # no link known: no ceiling to divide by
    share = max(tx or 0.0, rx or 0.0) / ceiling * 100
    style = "bold magenta" if share >= 70 else ("bold cyan" if share >= 20 else "")
    return Text(f"{share:.0f}%", style=style, justify="right")


SORTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("gpu", "GPU order", ()),
    ("replays", "replays (most first)", ("replays", "aer")),
    ("util", "utilisation (busiest first)", ("util", "tx", "rx")),
)
"""``o`` cycles through these orders of the GPU table: (name, words, columns compared)."""


def _sort_value(cell: object) -> float:
    """A table cell as a number for sorting ("—", "?" and "…" last; ``4200 +3`` is 4200)."""
    text = cell.plain if isinstance(cell, Text) else str(cell)
    words = text.split()
    try:
        return float(words[0].rstrip("%")) if words else float("-inf")
    except ValueError:
        return float("-inf")


class LinksPane(Container):
    """Per-GPU link table, the selected GPU's NVLinks and (live) a throughput history chart."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "cycle_sort", "Sort", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.replay: str | None = None
        """The replayed trace on display (SYNTHETIC...), or ``None`` for real counters."""
        self.sort = "gpu"
        """Order of the GPU table (a name of :data:`SORTS`)."""
        self.capture: Capture | None = None
        self.live = False
        self.interval: float | None = None
        self.selected_gpu: int | None = None
        self.selected_link: int | None = None
        self.last_sample: CounterSample | None = None
        self.rates: dict[int, GpuRates] = {}
        self.history: dict[int, deque[tuple[float, float | None, float | None]]] = {}
        self.link_history: dict[
            tuple[int, int], deque[tuple[float, float | None, float | None]]
        ] = {}
        self._chart: object | None = None
        self._counters: dict[int, GpuCounters] = {}
        self.link_changes: Mapping[int, tuple[int, int]] = {}
        """Live machines: (generation, width) changes per GPU index since it was opened."""
        self.changes_since: float | None = None

    def on_resize(self) -> None:
        """Side by side from 120 columns, stacked below."""
        self.set_class(self.size.width >= 120, "-wide")

    def compose(self) -> ComposeResult:
        yield Static(Text("collecting…", style="dim"), id="links-note")
        yield DataTable(id="gpu-table", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="links-bottom"):
            with Vertical(id="nvlink-box"):
                yield Static("", id="nvlink-title")
                yield DataTable(id="nvlink-table", cursor_type="row")
            yield Container(id="chart-box")

    def on_mount(self) -> None:
        table = self.query_one("#gpu-table", DataTable)
        for key, label in GPU_COLUMNS:
            table.add_column(label, key=key)
        links = self.query_one("#nvlink-table", DataTable)
        for key, label in LINK_COLUMNS:
            links.add_column(label, key=key, width=_LINK_WIDTHS.get(key))
        self.query_one("#chart-box").display = False

    # -------------------------------------------------------------------------- data

    def show_capture(
        self,
        capture: Capture | None,
        live: bool,
        interval: float | None,
        replay: str | None = None,
    ) -> None:
        """Show a machine: live (counters will arrive) or static (the capture's values).

        ``replay`` names a replayed counter trace (SYNTHETIC...) that stands in for live
        counters on a demo; the pane then says so in its first line and in the chart's title.
        """
        self.capture = capture
        self.live = live
        self.replay = replay
        self.interval = interval
        self.last_sample = None
        self.rates = {}
        self._counters = {}
        self.link_changes, self.changes_since = {}, None
        self.history.clear()
        self.link_history.clear()
        table = self.query_one("#gpu-table", DataTable)
        table.clear()
        table.display = capture is None or bool(capture.gpus)
        if capture is None:
            return
        if not capture.gpus:
            # An empty table says nothing: say why there is nothing to show.
            self.query_one("#links-note", Static).update(_no_gpus_note(capture))
            self.selected_gpu = None
            self._show_links()
            return
        self._show_note()
        for gpu in capture.gpus:
            table.add_row(*self._static_row(gpu), key=str(gpu.index))
        # The selection first, then the order: the GPU selected on the machine before (GPU3
        # of 72) may not exist on this one (2 GPUs), and the sort restores the selection.
        keep = self.selected_gpu if capture.gpu(self.selected_gpu or -1) is not None else None
        if keep is None and capture.gpus:
            keep = capture.gpus[0].index
        self.selected_gpu = keep
        self._apply_sort()
        self._show_links()

    def _show_note(self) -> None:
        # Phrases, broken between and never inside (a note that wraps at 80 or 100 columns).
        phrases: list[Text] = []
        if self.live and self.replay:
            every = f" every {self.interval:g} s" if self.interval else ""
            head = Text(self.replay, style="bold bright_blue")
            head.append(f": a generated training loop on the demo's links{every},")
            phrases += [head, Text("to show how this pane moves on a live GPU machine.")]
        elif self.live:
            every = f" every {self.interval:g} s" if self.interval else ""
            head = Text("LIVE", style="bold green")
            head.append(f" counters{every}: rates between the last two samples.")
            phrases.append(head)
        else:
            phrases.append(Text(f"{STATIC_NOTE}.", style="bold yellow"))
        phrases += [
            Text("TX, RX in GB/s; NVL: NVLinks up of those wired.", "dim"),
            Text("Util: busier direction ÷ raw ceiling of the current PCIe link.", "dim"),
        ]
        if self.capture is not None and any(self._unwired(g) for g in self.capture.gpus):
            phrases.append(
                Text(
                    "unwired: NVLinks the board leaves unconnected (nvlink.state), not down.",
                    "dim",
                )
            )
        if self.capture is not None and any(_model_link(g) for g in self.capture.gpus):
            phrases.append(
                Text("Link? = the GPU model's own link: the capture has no negotiated one.", "dim")
            )
        if self.capture is not None and any(_no_link(g) for g in self.capture.gpus):
            phrases.append(
                Text("PCIe link not known: not in the capture, so no Util % either.", "dim")
            )
        if self.live:
            phrases.append(Text("Errors: totals since boot, +N since the last sample.", "dim"))
        else:
            phrases.append(Text("Errors: totals since boot.", style="dim"))
        flaps = link_changes(self.capture)
        if flaps:
            phrases.append(Text(f"Link changes (pcie.link-flap): {flaps}.", style="bold"))
        live_flaps = self._live_link_changes()
        if live_flaps:
            phrases += [
                Text(f"Link changes since opened: {live_flaps}.", style="bold yellow"),
                Text(
                    "A generation that drops at idle is power management; a width change is "
                    "not. `pcidoc watch` judges them (pcie.link-flap).",
                    style="dim",
                ),
            ]
        if self.sort != "gpu":
            words = next(w for name, w, _ in SORTS if name == self.sort)
            phrases.append(Text(f"Sorted by {words} (o).", style="bold"))
        self.query_one("#links-note", Static).update(Phrases(phrases))

    def _live_link_changes(self) -> str:
        if self.capture is None or not self.link_changes:  # the app counts live machines only
            return ""
        minutes = None
        if self.last_sample is not None and self.changes_since is not None:
            minutes = (self.last_sample.t - self.changes_since) / 60
        return live_link_changes(self.capture, self.link_changes, minutes)

    def _static_row(self, gpu: Gpu) -> list[Text]:
        tx = None if gpu.tx_bytes_per_s is None else gpu.tx_bytes_per_s / 1e9
        rx = None if gpu.rx_bytes_per_s is None else gpu.rx_bytes_per_s / 1e9
        if self.live:
            tx = rx = None
        up = sum(1 for nv in gpu.nvlinks if nv.state == "up")
        nvl = (
            _nvl_cell(up, self._wired(gpu))
            if gpu.nvlinks
            else Text("—", style="dim", justify="right")
        )
        return [
            Text(gpu.label, style="bold"),
            _link_cell(gpu),
            _num(tx),
            _num(rx),
            _util(gpu, tx, rx),
            Text("…", justify="right", style="dim") if self.live else _count(gpu.replay_count),
            Text("…", justify="right", style="dim") if self.live else _count(gpu.aer_correctable),
            nvl,
            _num(None),
            _num(None),
        ]

    def _unwired(self, gpu: Gpu) -> int:
        """Its inactive NVLinks that its design does not wire (the doctor's rule)."""
        return 0 if self.capture is None else unwired_nvlinks(self.capture, gpu).count

    def _wired(self, gpu: Gpu) -> int:
        return len(gpu.nvlinks) - self._unwired(gpu)

    def show_sample(
        self,
        sample: CounterSample,
        rates: Mapping[int, GpuRates],
        link_changes: Mapping[int, tuple[int, int]] | None = None,
        since: float | None = None,
    ) -> None:
        """A new live sample, the rates since the previous one and (live machines) the link
        changes counted since the machine was opened."""
        if self.capture is None:
            return
        self.last_sample = sample
        changes = dict(link_changes or {})
        if changes or self.link_changes:  # the note's "in N min" moves on with every sample
            self.link_changes, self.changes_since = changes, since
            self._show_note()
        self.rates = dict(rates)
        self._counters = {g.index: g for g in sample.gpus}
        table = self.query_one("#gpu-table", DataTable)
        for counters in sample.gpus:
            gpu = self.capture.gpu(counters.index)
            if gpu is None:
                continue
            key = str(counters.index)
            rate = rates.get(counters.index)
            tx = rate.pcie_tx_gbps if rate else None
            rx = rate.pcie_rx_gbps if rate else None
            up = [nv.up for nv in counters.nvlinks]
            values = {
                "link": _link_cell(gpu, counters.link_gen, counters.link_width),
                "tx": _num(tx),
                "rx": _num(rx),
                "util": _util(gpu, tx, rx, counters.link_gen, counters.link_width),
                "replays": _total(counters.replay_count, rate.replays_delta if rate else None),
                "aer": _total(counters.aer_correctable, rate.aer_delta if rate else None),
                "nvtx": _num(
                    sum(rate.nvlink_tx_gbps.values()) if rate and rate.nvlink_tx_gbps else None
                ),
                "nvrx": _num(
                    sum(rate.nvlink_rx_gbps.values()) if rate and rate.nvlink_rx_gbps else None
                ),
            }
            if up:
                values["nvl"] = _nvl_cell(sum(1 for u in up if u), len(up) - self._unwired(gpu))
            for column, value in values.items():
                table.update_cell(key, column, value, update_width=True)
            history = self.history.setdefault(counters.index, deque(maxlen=HISTORY))
            history.append((sample.t, tx, rx))
            if rate is not None:
                for link in counters.nvlinks:
                    series = self.link_history.setdefault(
                        (counters.index, link.link), deque(maxlen=HISTORY)
                    )
                    series.append(
                        (
                            sample.t,
                            rate.nvlink_tx_gbps.get(link.link),
                            rate.nvlink_rx_gbps.get(link.link),
                        )
                    )
        self._apply_sort()
        self._show_links()

    # ------------------------------------------------------------------------ sort

    def action_cycle_sort(self) -> None:
        """``o``: GPU order → most replays first → busiest first."""
        names = [name for name, _, _ in SORTS]
        self.sort = names[(names.index(self.sort) + 1) % len(names)]
        self._apply_sort()
        self._show_note()

    def _apply_sort(self) -> None:
        table = self.query_one("#gpu-table", DataTable)
        if not table.row_count:
            return
        selected = self.selected_gpu
        _, _, columns = next(s for s in SORTS if s[0] == self.sort)
        if columns:
            table.sort(
                *columns, key=lambda cells: tuple(_sort_value(c) for c in cells), reverse=True
            )
        else:
            table.sort("gpu", key=lambda cell: int(cell.plain.removeprefix("GPU") or 0))
        if selected is not None and str(selected) in table.rows:
            table.move_cursor(row=table.get_row_index(str(selected)), animate=False)

    # ------------------------------------------------------------------- selection

    @on(DataTable.RowHighlighted, "#gpu-table")
    def _gpu_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is None:
            return
        index = int(event.row_key.value)
        if index != self.selected_gpu:
            self.selected_gpu = index
            self.selected_link = None
            self._show_links()

    @on(DataTable.RowHighlighted, "#nvlink-table")
    def _link_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is None:
            return
        link = int(event.row_key.value)
        if link != self.selected_link:
            self.selected_link = link
            self._show_chart()

    def _show_links(self) -> None:
        title = self.query_one("#nvlink-title", Static)
        table = self.query_one("#nvlink-table", DataTable)
        gpu = (
            None
            if self.capture is None or self.selected_gpu is None
            else self.capture.gpu(self.selected_gpu)
        )
        if gpu is None:
            title.update("")
            table.clear()
            table.display = False
            self._show_chart()
            return
        head = Text()
        head.append(f"{gpu.label} NVLinks", style="bold")
        if gpu.nvlinks:
            head.append("  TX, RX, rated: GB/s", style="dim")
        if not gpu.nvlinks:
            head.append(f"  {self._no_nvlink_facts(gpu)}", style="dim")
        title.update(head)
        table.display = bool(gpu.nvlinks)
        rate = self.rates.get(gpu.index)
        counters = self._counters.get(gpu.index)
        live_links = {c.link: c for c in counters.nvlinks} if counters else {}
        cursor = table.cursor_row
        table.clear()
        unwired = self._unwired(gpu) > 0  # then every link down in the capture is unwired
        for nv in gpu.nvlinks:
            state: str | None = nv.state
            live = live_links.get(nv.link)
            if live is not None and live.state is not None:
                state = live.state
            if unwired and nv.state == "down" and state == "down":
                state = "unwired"
            if self.live:
                errors = _total(
                    live.errors if live is not None else None,
                    rate.nvlink_errors_delta.get(nv.link) if rate else None,
                )
            else:
                errors = _count(sum(nv.errors.values()) if nv.errors else None)
            remote = nv.remote_type or ""
            if nv.remote_bus_id:
                peer = (
                    next((g.label for g in self.capture.gpus if g.bus_id == nv.remote_bus_id), None)
                    if self.capture
                    else None
                )
                remote = f"{remote} {peer or nv.remote_bus_id}".strip()
            table.add_row(
                Text(str(nv.link), justify="right"),
                Text(state or "?", style=_STATE_STYLES.get(state or "", "yellow")),
                _num(rate.nvlink_tx_gbps.get(nv.link) if rate else None),
                _num(rate.nvlink_rx_gbps.get(nv.link) if rate else None),
                errors,
                Text(nv.version or "?"),
                _num(nvlink_link_rate_gbps(gpu, nv), 1),
                Text(remote or "?"),
                key=str(nv.link),
            )
        if gpu.nvlinks:
            table.move_cursor(row=min(cursor, len(gpu.nvlinks) - 1), animate=False)
        self._show_chart()

    def _no_nvlink_facts(self, gpu: Gpu) -> str:
        """Why a GPU has no NVLink rows: none in its topology, or the capture only has the
        matrix (an imported ``nvidia-smi topo -m`` says NV12 without per-link facts; saying
        "PCIe only" there contradicts the Topology pane)."""
        capture = self.capture
        classes: dict[str, list[str]] = {}
        if capture is not None:
            for peer in capture.gpus:
                if peer.index == gpu.index:
                    continue
                link = capture.topology.link(gpu.label, peer.label)
                if link and link.startswith("NV"):
                    classes.setdefault(link, []).append(peer.label)
        if not classes:
            return (
                "none: this GPU talks to its peers over PCIe only "
                "(or the capture has no NVLink facts)"
            )
        seen = ", ".join(
            f"{link} to {peers[0]}" if len(peers) == 1 else f"{link} to {len(peers)} GPUs"
            for link, peers in classes.items()
        )
        return (
            f"the topology matrix shows {seen}, but the capture has no per-link NVLink "
            "facts (states, speeds, errors): capture on the machine with `pcidoc capture`"
        )

    # ------------------------------------------------------------------------ chart

    def _show_chart(self) -> None:
        box = self.query_one("#chart-box")
        if not self.live or self.selected_gpu is None or self.last_sample is None:
            box.display = False
            return
        box.display = True
        if self._chart is None:
            from pcidoc.tui.widgets.link_chart import LinkChart

            self._chart = LinkChart(id="link-chart")
            box.mount(self._chart)
        now = self.last_sample.t
        series: dict[str, tuple[list[float], list[float]]] = {}
        history = self.history.get(self.selected_gpu, ())
        for name, pos in (("PCIe TX", 1), ("PCIe RX", 2)):
            points = [(h[0] - now, h[pos]) for h in history if h[pos] is not None]
            series[name] = ([p[0] for p in points], [float(p[1]) for p in points])
        link = self.selected_link
        gpu = self.capture.gpu(self.selected_gpu) if self.capture else None
        if link is None and gpu is not None and gpu.nvlinks:
            link = gpu.nvlinks[0].link
        title = f"{'SYNTHETIC ' if self.replay else ''}GPU{self.selected_gpu} PCIe"
        if link is not None:
            link_series = self.link_history.get((self.selected_gpu, link), ())
            for name, pos in (("NVLink TX", 1), ("NVLink RX", 2)):
                points = [(h[0] - now, h[pos]) for h in link_series if h[pos] is not None]
                series[name] = ([p[0] for p in points], [float(p[1]) for p in points])
            title += f" + NVLink {link}"
        self._chart.plot(title, series)  # type: ignore[attr-defined]

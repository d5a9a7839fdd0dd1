"""Wrapped fact lines continue under their value (Host pane) or their hop (PCIe path)."""

from __future__ import annotations

import io

from rich.console import Console
from rich.text import Text

from pcidoc.model.facts import PcieHop
from pcidoc.tui.hanging import Hanging
from pcidoc.tui.panes.topology import _hop_line


def _render(renderable: object, width: int) -> list[str]:
    console = Console(width=width, file=io.StringIO(), color_system=None, record=True)
    console.print(renderable)
    return console.export_text().splitlines()


def test_key_value_line_hangs_under_its_value() -> None:
    text = Text("kernel          6.8.0-45-generic #45~22.04.1-Ubuntu SMP PREEMPT_DYNAMIC\n")
    text.append("\nafter a blank line")
    lines = _render(Hanging(text), 40)
    assert lines[0].startswith("kernel          6.8.0")
    assert len(lines) >= 3
    assert lines[1].startswith(" " * 16) and lines[1][16] != " "
    assert "" in lines and lines[-1] == "after a blank line"


def test_pcie_hop_line_hangs_under_the_hop() -> None:
    hop = PcieHop(
        bus_id="0000:3a:00.0",
        role="switch_downstream",
        current_gen=4,
        current_width=16,
        max_gen=5,
        max_width=16,
        aer_correctable=12,
        aer_nonfatal=1,
    )
    lines = _render(Hanging(_hop_line(hop, True)), 36)
    assert lines[0].startswith("   ↑ 0000:3a:00.0")
    assert len(lines) >= 2
    assert all(line.startswith("     ") and line[5] != " " for line in lines[1:])
    # Nothing lost to the wrap.
    joined = " ".join(line.strip() for line in lines)
    assert "AER corr 12" in joined and "first shared port" in joined


def test_a_line_that_fits_is_unchanged() -> None:
    assert _render(Hanging(Text("CPU             AMD EPYC 9654")), 80) == [
        "CPU             AMD EPYC 9654"
    ]


def test_phrases_break_between_phrases_never_inside_one() -> None:
    from pcidoc.tui.hanging import Phrases

    phrases = [Text("static values from the capture"), Text("errors: totals since boot.")]
    phrases.append(Text("a phrase much longer than the narrow width it is rendered at here"))
    assert _render(Phrases(phrases), 80) == [
        "static values from the capture errors: totals since boot.",
        "a phrase much longer than the narrow width it is rendered at here",
    ]
    lines = _render(Phrases(phrases), 40)
    assert lines[:2] == ["static values from the capture", "errors: totals since boot."]
    # A phrase wider than the line still wraps (between its words).
    assert all(len(line) <= 40 for line in lines) and len(lines) == 4


def test_hanging_wraps_once_per_width(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # A pane's text is measured and painted several times at one width before the first
    # screen; wrapping it again each time cost ~10 ms of start-up.
    calls: list[int] = []
    original = Text.wrap

    def counting_wrap(self: Text, console: Console, width: int, **kwargs: object):  # type: ignore[no-untyped-def]
        calls.append(width)
        return original(self, console, width, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Text, "wrap", counting_wrap)
    hanging = Hanging(
        Text("kernel          6.8.0-45-generic #45~22.04.1-Ubuntu SMP PREEMPT_DYNAMIC")
    )
    first = _render(hanging, 40)
    assert _render(hanging, 40) == first
    assert calls == [40 - 16]  # one wrap of the value, at its width after the indent
    assert _render(hanging, 60) != first and len(calls) == 2


def test_a_phrase_after_a_wrapped_one_continues_on_its_last_row() -> None:
    # The demo's Links note at 80 columns: "…training loop on" / "the demo's links every 1 s,"
    # / "to show how…" on a third line although it fitted after the second.
    from pcidoc.tui.hanging import Phrases

    long = Text("SYNTHETIC counter trace: a generated training loop on the demo's links every 1 s,")
    short = Text("to show how it moves.")
    lines = _render(Phrases([long, short]), 60)
    assert lines == [
        "SYNTHETIC counter trace: a generated training loop on the",
        "demo's links every 1 s, to show how it moves.",
    ]

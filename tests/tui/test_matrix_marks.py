"""The TUI matrix marks the devices and pairs named by failing or warning checks."""

from __future__ import annotations

from rich.style import Style

from pcidoc.present.text import CELL_STYLES, SEVERITY_STYLES
from pcidoc.tui.widgets.topology_matrix import MARK_STYLES, TopologyMatrix
from tests.tui.conftest import demo_app, refused_pix_pair_app, settle


def _text(strip) -> str:  # type: ignore[no-untyped-def]
    return "".join(segment.text for segment in strip)


async def test_gpu_with_a_warning_is_marked_in_the_matrix() -> None:
    # synthetic-72gpu: pcie.errors warns about GPU41 (4200 replays), nothing else is marked
    app = demo_app("synthetic-72gpu")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        matrix = app.main.query_one(TopologyMatrix)
        assert matrix.marks.device("GPU41") == "warn"
        assert matrix.marks.device("GPU40") is None
        header_h = matrix.header_height
        rows = matrix.render_all()[header_h:]
        gpu41 = next(strip for strip in rows if _text(strip).startswith("GPU41"))
        gpu40 = next(strip for strip in rows if _text(strip).startswith("GPU40 "))
        assert _text(gpu41).startswith("GPU41!")
        label = next(seg for seg in gpu41 if seg.text.startswith("GPU41"))
        warn = Style.parse(MARK_STYLES["warn"])
        assert label.style is not None and label.style.color == warn.color
        assert not _text(gpu40).startswith("GPU40!")


async def test_pair_named_by_a_warning_is_underlined() -> None:
    # p2p.capability warns about the pair GPU0-GPU1
    app = refused_pix_pair_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        matrix = app.main.query_one(TopologyMatrix)
        assert matrix.marks.pair("GPU1", "GPU0") == "warn"
        rows = matrix.render_all()[matrix.header_height :]
        pix = [seg for seg in rows[0] if seg.text == "PIX"]
        assert pix and pix[0].style is not None and pix[0].style.underline


def test_mark_styles_are_the_verdict_colours_and_not_link_colours() -> None:
    for severity, style in MARK_STYLES.items():
        assert Style.parse(style).color == Style.parse(SEVERITY_STYLES[severity]).color
        assert style not in CELL_STYLES.values()

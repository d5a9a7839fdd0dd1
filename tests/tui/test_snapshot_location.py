"""The SVG baselines must live in ``<repo>/snapshots``; this fails if the redirect stops working
(a pytest-textual-snapshot or syrupy upgrade that changes how ``snap_compare`` picks its
extension would silently send new baselines back to ``tests/**/__snapshots__``)."""

from __future__ import annotations

from pathlib import Path

from pytest_textual_snapshot import SVGImageExtension
from syrupy.assertion import SnapshotAssertion

from tests.tui import test_snapshots
from tests.tui.conftest import ROOT, SNAPSHOT_ROOT


def test_snap_compare_extension_resolves_into_top_level_snapshots(
    snapshot: SnapshotAssertion,
) -> None:
    # snap_compare calls exactly this: snapshot.use_extension(SVGImageExtension).
    svg = snapshot.use_extension(SVGImageExtension)
    folder = Path(svg.extension_class.dirname(test_location=svg.test_location)).resolve()
    assert folder.is_relative_to(SNAPSHOT_ROOT.resolve()), folder
    assert svg.extension_class is not SVGImageExtension
    assert issubclass(svg.extension_class, SVGImageExtension)


def test_baselines_exist_in_snapshots_and_nowhere_under_tests() -> None:
    stored = sorted((SNAPSHOT_ROOT / "test_snapshots").glob("*.svg"))
    tests = [name for name in dir(test_snapshots) if name.startswith("test_")]
    assert stored, "no baseline in snapshots/test_snapshots"
    for name in tests:
        assert any(
            path.name.startswith(name + "[") or path.name == f"{name}.svg" for path in stored
        ), name
    strays = [p for p in (ROOT / "tests").rglob("__snapshots__") if any(p.rglob("*.svg"))]
    assert strays == [], f"SVG snapshots written under tests/: {strays}"
    assert not (ROOT / "tests" / "tui" / "__snapshots__").exists()


def test_snapshot_budget_stays_small() -> None:
    stored = list((SNAPSHOT_ROOT / "test_snapshots").glob("*.svg"))
    assert len(stored) <= 60

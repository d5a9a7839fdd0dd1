"""Test fleets made from one bundled sample capture, with synthetic per-node changes.

The base is the real A100 SXM4 sample; the PCIe link facts it lacks (Gen4 x16, P0, no replays)
are filled in identically on every node so that a single node's change stands out. Every such
value is synthetic and the captures say so (``origin.kind = "synthetic"``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pcidoc.collect.capture import save_capture
from pcidoc.model.capture import Capture
from pcidoc.samples import load_sample

BASE_SAMPLE = "a100-sxm4-8gpu-nvswitch"


def base_node(hostname: str) -> Capture:
    """The A100 sample as one healthy synthetic node called ``hostname``."""
    cap = load_sample(BASE_SAMPLE)
    cap.origin.kind = "synthetic"
    cap.origin.note = f"test fleet node built from the {BASE_SAMPLE} sample"
    cap.host.hostname = hostname
    cap.driver.driver_version = "550.54.15"
    for gpu in cap.gpus:
        gpu.pcie.current_gen = gpu.pcie.max_gen = gpu.pcie.device_max_gen = 4
        gpu.pcie.current_width = gpu.pcie.max_width = gpu.pcie.device_max_width = 16
        gpu.pstate = 0
        gpu.replay_count = 0
    return cap


def write_fleet(
    folder: Path, count: int, change: Callable[[int, Capture], None] | None = None
) -> list[Path]:
    """Write ``count`` nodes ``node01``... into ``folder``; ``change(i, capture)`` alters one."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        cap = base_node(f"node{i + 1:02d}")
        if change is not None:
            change(i, cap)
        paths.append(save_capture(cap, folder / f"node{i + 1:02d}.json"))
    return paths


def downtrain_and_replays(i: int, cap: Capture) -> None:
    """Node05: GPU3 trained at x8; node12: 5,000 replays on GPU6."""
    if i == 4:
        cap.gpus[3].pcie.current_width = 8
    if i == 11:
        cap.gpus[6].replay_count = 5000


@pytest.fixture
def fleet_dir(tmp_path: Path) -> Path:
    """24 nodes, one downtrained GPU link on node05 and replays on node12."""
    folder = tmp_path / "caps"
    write_fleet(folder, 24, downtrain_and_replays)
    return folder


@pytest.fixture(autouse=True)
def _collect_garbage_after():
    """Fleet tests build and diagnose dozens of captures; collect their garbage before the next
    test so that a later test timing the UI's responsiveness in the same worker does not pay
    for a full collection of it."""
    yield
    import gc

    gc.collect()

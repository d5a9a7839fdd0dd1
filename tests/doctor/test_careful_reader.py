"""Issue 30, "what a careful reader notices", in the doctor's words: numbers that belong to the
machine at hand (an A100 has 12 NVLinks, not 18), and the remedies a finding was missing."""

from __future__ import annotations

import pytest

from tests.builders import machine
from tests.doctor.test_nvlink import result


@pytest.mark.parametrize(
    ("name", "gpus", "link", "has"),
    [
        ("NVIDIA A100-SXM4-80GB", 8, "NV12", "the 12 of one NVIDIA A100-SXM4-80GB"),
        ("NVIDIA A800-SXM4-80GB", 8, "NV8", "the 8 of one NVIDIA A800-SXM4-80GB"),
        ("Tesla V100-SXM3-32GB", 16, "NV6", "the 6 of one Tesla V100-SXM3-32GB"),
        ("NVIDIA H100 80GB HBM3", 8, "NV18", "the 18 of one NVIDIA H100 80GB HBM3"),
        ("Some Future GPU", 8, "NV4", "the 18 any GPU has"),
    ],
)
def test_a_mesh_only_nvswitches_can_wire_names_the_links_this_gpu_has(
    name: str, gpus: int, link: str, has: str
) -> None:
    cap = machine(gpus, link=link, gpu_fields={"name": name})
    for gpu in cap.gpus:
        gpu.nvlinks = []  # a paste of the matrix: the count comes from the GPU model
    summary = result(cap, "nvlink.fabric").summary
    assert f"more than {has})" in summary, summary

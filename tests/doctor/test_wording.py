"""The checks' wording helpers against the rules they are written from."""

from __future__ import annotations

import re

import pytest

from pcidoc.doctor.wording import gpu_names, is_gpu_label

LABELS = [
    "GPU0",
    "GPU71",
    "GPU007",
    "GPU",
    "gpu1",
    "GPU 1",
    "GPU1 ",
    "GPU1\n",
    "GPU-1",
    "GPU+1",
    "GPU1.0",
    "GPU٣",  # ARABIC-INDIC DIGIT THREE: a decimal digit for \d and isdecimal
    "GPU²",  # SUPERSCRIPT TWO: a digit for isdigit, not for \d
    "GPU½",
    "NIC0",
    "",
]


@pytest.mark.parametrize("label", LABELS)
def test_gpu_labels_are_what_the_pattern_matches(label: str) -> None:
    assert is_gpu_label(label) is bool(re.fullmatch(r"GPU\d+", label))


def test_five_or_more_gpu_labels_read_as_ranges_and_anything_else_as_a_list() -> None:
    assert gpu_names(["GPU0", "GPU1", "GPU2", "GPU3"]) == "GPU0, GPU1, GPU2, GPU3"
    assert gpu_names(f"GPU{i}" for i in (5, 0, 1, 2, 3, 9)) == "GPUs 0-3,5,9"
    assert gpu_names(["GPU0", "GPU1", "GPU2", "GPU3", "GPU٣"]) == "GPUs 0-3"
    mixed = ["GPU0", "GPU1", "GPU2", "GPU3", "GPU4\n"]
    assert gpu_names(mixed) == ", ".join(mixed)
    assert gpu_names(["GPU0", "GPU1", "NIC0", "GPU2", "GPU3"]) == "GPU0, GPU1, NIC0, GPU2, GPU3"


@pytest.mark.parametrize("label", [*LABELS, "GPU1\n\n", "GPU\n", "GPU12\n"])
def test_topology_notes_read_gpu_indices_as_the_pattern_does(label: str) -> None:
    from pcidoc.doctor.topology_notes import _gpu_index

    match = re.match(r"^GPU(\d+)$", label)
    assert _gpu_index(label) == (int(match.group(1)) if match else None)

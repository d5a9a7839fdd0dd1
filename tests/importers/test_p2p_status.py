"""nvidia-smi topo -p2p parser."""

from __future__ import annotations

import pytest

from tests.importers.helpers import load, warnings_of

MATRIX = (
    "        GPU0    GPU1    GPU2\n"
    " GPU0   X       OK      TNS\n"
    " GPU1   OK      X       TNS\n"
    " GPU2   TNS     TNS     X\n"
    "\n"
    "Legend:\n"
    "\n"
    "  X    = Self\n"
    "  OK   = Status Ok\n"
    "  TNS  = Topology not supported\n"
)


@pytest.mark.parametrize(
    ("command", "caps"),
    [
        ("$ nvidia-smi topo -p2p r", ["read"]),
        ("root@node:~# nvidia-smi topo -p2p w", ["write"]),
        ("$ nvidia-smi topo -p2p n", ["nvlink"]),
        ("$ nvidia-smi topo -p2p a", ["atomics"]),
        ("$ nvidia-smi topo --p2pstatus p", ["pci"]),
        ("$ nvidia-smi topo -p2p rw", ["read", "write"]),
    ],
)
def test_capability_comes_from_the_command(command: str, caps: list[str]) -> None:
    cap = load(command + "\n" + MATRIX)
    assert sorted(cap.p2p.matrices) == sorted(caps)
    assert cap.p2p.gpus == [0, 1, 2]
    for name in caps:
        assert cap.p2p.status(name, 0, 1) == "OK"
        assert cap.p2p.status(name, 2, 0) == "TNS"
        assert cap.p2p.status(name, 1, 1) == "X"
    assert "stored as 'read'" not in warnings_of(cap)
    assert len(cap.gpus) == 3


def test_rw_is_noted_in_what_was_read() -> None:
    cap = load("$ nvidia-smi topo -p2p rw\n" + MATRIX)
    assert "stored under both" in cap.origin.sources[0].read[0]


def test_unknown_capability_is_stored_as_read_with_a_warning() -> None:
    cap = load(MATRIX)
    assert list(cap.p2p.matrices) == ["read"]
    assert "capability (r/w/n/a/p) is not shown; stored as 'read'" in warnings_of(cap)


def test_tab_separated_rows_with_leading_space_and_trailing_tab() -> None:
    text = " \tGPU0\tGPU1\t\n GPU0\tX\tGNS\t\n GPU1\tGNS\tX\t\n"
    cap = load("$ nvidia-smi topo -p2p n\n" + text)
    assert cap.p2p.status("nvlink", 0, 1) == "GNS"
    assert cap.p2p.status("nvlink", 1, 0) == "GNS"


def test_all_codes_are_kept() -> None:
    text = (
        "        GPU0    GPU1    GPU2    GPU3    GPU4    GPU5    GPU6\n"
        " GPU0   X       OK      NS      CNS     GNS     DR      U\n"
    )
    cap = load("$ nvidia-smi topo -p2p p\n" + text)
    row = cap.p2p.matrices["pci"][0]
    assert row == ["X", "OK", "NS", "CNS", "GNS", "DR", "U"]
    assert "rows GPU1-GPU6 missing" in warnings_of(cap)
    assert cap.p2p.status("pci", 1, 0) is None


def test_single_x_matrix_is_p2p_when_the_command_says_so() -> None:
    cap = load("$ nvidia-smi topo -p2p r\n        GPU0\n GPU0   X\n")
    assert cap.p2p.matrices == {"read": [["X"]]}
    assert cap.topology.labels == []

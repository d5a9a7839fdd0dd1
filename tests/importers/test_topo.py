"""nvidia-smi topo -m parser: every layout quirk on small hand-written snippets."""

from __future__ import annotations

from tests.importers.helpers import load, warnings_of

MODERN_TAB = (
    "\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNV4\tNV4\tSYS\tPIX\tSYS\t0-15,32-47\t0\t\tN/A\n"
    "GPU1\tNV4\t X \tSYS\tNV4\tSYS\tSYS\t0-15,32-47\t0\t\tN/A\n"
    "GPU2\tNV4\tSYS\t X \tNV4\tSYS\tPXB\t16-31,48-63\t1\t\tN/A\n"
    "GPU3\tSYS\tNV4\tNV4\t X \tSYS\tSYS\t16-31,48-63\t1\t\tN/A\n"
    "NIC0\tPIX\tSYS\tSYS\tSYS\t X \tSYS\t\t\t\t\n"
    "NIC1\tSYS\tSYS\tPXB\tSYS\tSYS\t X \t\t\t\t\n"
    "\n"
    "Legend:\n"
    "\n"
    "  X    = Self\n"
    "  SYS  = crossing the inter-socket link\n"
    "  NV#  = bonded NVLinks\n"
    "\n"
    "NIC Legend:\n"
    "\n"
    "  NIC0: mlx5_4\n"
    "  NIC1: mlx5_5   \n"
)


def test_tab_separated_matrix_with_nic_legend() -> None:
    cap = load(MODERN_TAB)
    topo = cap.topology
    assert topo.labels == ["GPU0", "GPU1", "GPU2", "GPU3", "NIC0", "NIC1"]
    assert topo.source == "import"
    assert topo.link("GPU0", "GPU1") == "NV4"
    assert topo.link("GPU1", "GPU2") == "SYS"
    assert topo.link("GPU2", "NIC1") == "PXB"
    assert topo.link("NIC1", "GPU2") == "PXB"
    assert topo.link("NIC0", "NIC0") == "X"
    assert [(n.label, n.name) for n in cap.nics] == [("NIC0", "mlx5_4"), ("NIC1", "mlx5_5")]
    gpu2 = cap.gpu(2)
    assert gpu2 is not None
    assert gpu2.cpu_affinity == "16-31,48-63"
    assert gpu2.numa_node == 1
    assert gpu2.numa_affinity == "1"
    assert [(n.id, n.cpus) for n in cap.host.numa_nodes] == [(0, "0-15,32-47"), (1, "16-31,48-63")]
    assert cap.host.logical_cpus is None
    assert cap.host.why("logical_cpus")
    assert cap.origin.sources[0].formats == ["nvidia-smi-topo"]
    assert cap.origin.sources[0].read[0] == "topology: 4 GPUs, 2 NICs"
    assert cap.origin.warnings == []
    assert cap.driver.nvml_available is True


def test_hand_compacted_columns_and_header_without_indent() -> None:
    text = (
        "GPU0  GPU1  GPU2  CPU Affinity  NUMA Affinity\n"
        "GPU0   X    NV6   PHB   0-7           0\n"
        "GPU1  NV6    X    PHB   0-7           0\n"
        "GPU2  PHB   PHB    X    8-15          1\n"
    )
    cap = load(text)
    assert cap.topology.link("GPU0", "GPU1") == "NV6"
    assert cap.topology.link("GPU2", "GPU0") == "PHB"
    assert cap.gpu(2).numa_node == 1  # type: ignore[union-attr]
    assert cap.gpu(2).cpu_affinity == "8-15"  # type: ignore[union-attr]


def test_legacy_nic_columns_are_labelled_in_column_order() -> None:
    text = (
        "        GPU0    GPU1    mlx4_0  mlx5_bond_0     CPU Affinity\n"
        "GPU0     X      SOC     PHB     SOC     0-5,12-17\n"
        "GPU1    SOC      X      SOC     PHB     6-11,18-23\n"
        "mlx4_0  PHB     SOC      X      SOC\n"
        "mlx5_bond_0     SOC     PHB     SOC      X\n"
    )
    cap = load(text)
    assert cap.topology.labels == ["GPU0", "GPU1", "NIC0", "NIC1"]
    assert [(n.label, n.name) for n in cap.nics] == [("NIC0", "mlx4_0"), ("NIC1", "mlx5_bond_0")]
    assert cap.topology.link("GPU0", "GPU1") == "SYS"  # SOC is the old name of SYS
    assert cap.topology.link("GPU1", "NIC1") == "PHB"
    assert "SOC cells read as SYS" in cap.origin.sources[0].read[0]
    # Old format: no NUMA column at all.
    gpu0 = cap.gpu(0)
    assert gpu0 is not None
    assert gpu0.numa_node is None
    assert gpu0.why("numa_node") == "not in this nvidia-smi topo -m output"
    assert gpu0.cpu_affinity == "0-5,12-17"


def test_glued_header_tokens_are_split() -> None:
    text = (
        "        GPU0    GPU1NIC0        NIC1    CPU Affinity    NUMA Affinity\n"
        "GPU0     X      PIX     NODE    SYS     0-9     0\n"
        "GPU1    PIX      X      NODE    SYS     0-9     0\n"
        "NIC0    NODE    NODE     X      SYS\n"
        "NIC1    SYS     SYS     SYS      X\n"
    )
    cap = load(text)
    assert cap.topology.labels == ["GPU0", "GPU1", "NIC0", "NIC1"]
    assert cap.topology.link("GPU1", "NIC0") == "NODE"
    assert cap.topology.link("NIC1", "GPU0") == "SYS"


def test_prompt_and_header_on_one_line() -> None:
    text = (
        "me@box:~$ nvidia-smi topo -m          GPU0    GPU1    CPU Affinity    NUMA Affinity\n"
        "GPU0     X      NODE    0-31    0\n"
        "GPU1    NODE     X      0-31    0\n"
    )
    cap = load(text)
    assert cap.topology.link("GPU0", "GPU1") == "NODE"
    assert len(cap.gpus) == 2


def test_missing_rows_are_filled_from_symmetry_and_counted() -> None:
    text = (
        "        GPU0    GPU1    GPU2    NIC0    CPU Affinity    NUMA Affinity\n"
        "GPU0     X      NV2     PXB     PIX     0-3     0\n"
        "GPU1    NV2      X      PXB     PXB     0-3     0\n"
    )
    cap = load(text)
    topo = cap.topology
    assert topo.link("GPU2", "GPU0") == "PXB"
    assert topo.link("NIC0", "GPU1") == "PXB"
    assert topo.link("GPU2", "NIC0") is None
    assert topo.link("GPU2", "GPU2") == "X"
    assert (
        "topo matrix: rows GPU2, NIC0 missing; filled 4 cells from symmetry, 2 unknown"
        in warnings_of(cap)
    )
    assert cap.gpu(2).cpu_affinity is None  # type: ignore[union-attr]
    assert cap.gpu(2).why("cpu_affinity") == "row missing from the pasted topo matrix"  # type: ignore[union-attr]
    assert len(cap.gpus) == 3


def test_nic_rows_without_nic_columns() -> None:
    text = (
        "        GPU0    GPU1    CPU Affinity    NUMA Affinity\n"
        "GPU0     X      NV8     0-11    0\n"
        "GPU1    NV8      X      12-23   1\n"
        "NIC0    PIX     SYS\n"
        "NIC1    SYS     PIX\n"
    )
    cap = load(text)
    topo = cap.topology
    assert topo.labels == ["GPU0", "GPU1", "NIC0", "NIC1"]
    assert topo.link("GPU0", "NIC0") == "PIX"
    assert topo.link("GPU1", "NIC1") == "PIX"
    assert topo.link("NIC0", "NIC1") is None
    assert "header lacks the columns NIC0, NIC1" in warnings_of(cap)
    assert "filled 4 cells from symmetry, 2 unknown" in warnings_of(cap)


def test_cells_past_a_clipped_header_belong_to_row_only_devices() -> None:
    text = (
        "        GPU0    GPU1    CPU Affinity    NUMA Affinity\n"
        "GPU0     X      NV8     PIX     SYS     0-11    0\n"
        "GPU1    NV8      X      SYS     PIX     12-23   1\n"
        "NIC0    PIX     SYS      X      SYS\n"
        "NIC1    SYS     PIX     SYS      X\n"
    )
    cap = load(text)
    topo = cap.topology
    assert topo.labels == ["GPU0", "GPU1", "NIC0", "NIC1"]
    assert topo.link("NIC0", "NIC1") == "SYS"
    assert topo.link("GPU1", "NIC1") == "PIX"
    assert cap.gpu(1).cpu_affinity == "12-23"  # type: ignore[union-attr]
    assert "cells past the header read as those columns" in warnings_of(cap)
    assert "unknown" not in warnings_of(cap)


def test_short_rows_leave_cells_unknown() -> None:
    text = (
        "        GPU0    GPU1    GPU2    CPU Affinity    NUMA Affinity\n"
        "GPU0     X      SYS     SYS     0-3     0\n"
        "GPU1    SYS      X\n"
        "GPU2    SYS\n"
    )
    cap = load(text)
    assert cap.topology.link("GPU1", "GPU2") is None
    assert "rows GPU1, GPU2 have fewer cells than the header" in warnings_of(cap)


def test_missing_header_takes_labels_from_rows() -> None:
    text = "GPU0     X      PHB     0-7     0\nGPU1    PHB      X      0-7     0\n"
    cap = load(text)
    assert cap.topology.labels == ["GPU0", "GPU1"]
    assert cap.topology.link("GPU0", "GPU1") == "PHB"
    assert "no header row" in warnings_of(cap)
    assert cap.gpu(1).numa_node == 0  # type: ignore[union-attr]


def test_clipped_affinity_values_stay_unknown_with_reason() -> None:
    text = (
        "        GPU0    GPU1    GPU2    GPU3  CPU Affinity    NUMA Affinity\n"
        "GPU0     X      NV4     NV4     NV4   -23,48-71       0\n"
        "GPU1    NV4      X      NV4     NV4   -23,48-71       0\n"
        "GPU2    NV4     NV4      X      NV4   24-47,72-95     1\n"
        "GPU3    NV4     NV4     NV4      X    4-47,72-95      1\n"
    )
    cap = load(text)
    gpu0, gpu2, gpu3 = cap.gpu(0), cap.gpu(2), cap.gpu(3)
    assert gpu0 is not None
    assert gpu2 is not None
    assert gpu3 is not None
    assert gpu0.cpu_affinity is None
    assert gpu0.why("cpu_affinity") == "clipped in the paste: '-23,48-71'"
    assert gpu2.cpu_affinity == "24-47,72-95"
    assert gpu3.cpu_affinity is None  # '4-47,72-95' is the tail of '24-47,72-95'
    assert gpu3.why("cpu_affinity") == "clipped in the paste: '4-47,72-95'"
    assert gpu0.numa_node == 0
    assert "CPU affinity of GPU0, GPU1, GPU3 clipped in the paste" in warnings_of(cap)
    nodes = {n.id: n.cpus for n in cap.host.numa_nodes}
    assert nodes == {0: None, 1: "24-47,72-95"}


def test_numa_affinity_range_and_na() -> None:
    text = (
        "        GPU0    GPU1    CPU Affinity    NUMA Affinity\n"
        "GPU0     X      NV4     3       0-1\n"
        "GPU1    NV4      X      N/A     N/A\n"
    )
    cap = load(text)
    gpu0, gpu1 = cap.gpu(0), cap.gpu(1)
    assert gpu0 is not None
    assert gpu1 is not None
    assert gpu0.numa_affinity == "0-1"
    assert gpu0.numa_node is None
    assert gpu0.why("numa_node") == "NUMA affinity is 0-1: the GPU is not local to a single node"
    assert gpu0.cpu_affinity == "3"
    assert gpu1.cpu_affinity is None
    assert gpu1.why("cpu_affinity") == "N/A in nvidia-smi topo -m"
    assert gpu1.numa_node is None
    assert gpu1.why("numa_node") is not None


def test_indented_wrapped_paste_followed_by_p2p_matrix() -> None:
    text = (
        "          GPU0 GPU1    CPU Affinity    NUMA Affinity   GPU NUMA ID\n"
        "    GPU0  X      PXB     0-7     0               N/A\n"
        "    GPU1 PXB     X       0-7     0               N/A\n"
        "\n"
        "    Legend:\n"
        "\n"
        "      X    = Self\n"
        "      SYS  = Connection traversing PCIe and the link between\n"
        "  sockets, wrapped by the terminal\n"
        "\n"
        "          GPU0 GPU1\n"
        "     GPU0        X       CNS\n"
        "     GPU1        CNS      X\n"
    )
    cap = load(text)
    assert cap.topology.link("GPU0", "GPU1") == "PXB"
    assert cap.p2p.status("read", 0, 1) == "CNS"
    assert cap.origin.sources[0].formats == ["nvidia-smi-topo", "nvidia-smi-p2p"]


def test_markdown_fence_quote_and_section_prefix() -> None:
    text = (
        "Here is my topology:\n"
        "> ```\n"
        "> GPU Topology:\n"
        ">         GPU0    GPU1    CPU Affinity\n"
        "> GPU0     X      NV1     0-3\n"
        "> GPU1    NV1      X      0-3\n"
        "> ```\n"
        "Any idea why it is slow?\n"
    )
    cap = load(text)
    assert cap.topology.link("GPU1", "GPU0") == "NV1"


def test_asymmetric_cells_are_reported() -> None:
    text = (
        "        GPU0    GPU1    CPU Affinity\n"
        "GPU0     X      PIX     0-3\n"
        "GPU1    PHB      X      0-3\n"
    )
    cap = load(text)
    assert cap.topology.link("GPU0", "GPU1") == "PIX"
    assert "asymmetric cells GPU0-GPU1 PIX vs PHB" in warnings_of(cap)


def test_trailing_empty_tab_cells_are_ignored() -> None:
    text = (
        "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
        "GPU0\t X \tNV18\tPIX\t0-7\t0\t\tN/A\n"
        "GPU1\tNV18\t X \tSYS\t8-15\t1\t\tN/A\n"
        "NIC0\tPIX\tSYS\t X \t\t\t\t\n"
    )
    cap = load(text)
    assert cap.origin.warnings == []
    assert cap.gpu(1).numa_node == 1  # type: ignore[union-attr]
    assert cap.topology.link("NIC0", "GPU1") == "SYS"

"""The TUI's kernel-events view (Host pane) and link-change counts (Links pane), as text."""

from __future__ import annotations

from pcidoc.collect.importers import import_texts
from pcidoc.tui.panes.host import host_detail, kernel_events
from pcidoc.tui.panes.links import link_changes

QUERY = (
    "==============NVSMI LOG==============\n\nAttached GPUs : 1\n"
    "GPU 00000000:3B:00.0\n    Product Name : NVIDIA H100 80GB HBM3\n"
)
LOG = (
    "[ 6.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"
    "[ 7.0] nvidia 0000:3b:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x1 address=0x10 "
    "flags=0x0]\n"
    "[ 8.0] nvidia 0000:3b:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x1 address=0x20 "
    "flags=0x0]\n"
)


def test_host_pane_lists_kernel_events_per_gpu() -> None:
    capture = import_texts([("q.txt", QUERY), ("dmesg.txt", LOG)]).capture
    text = kernel_events(capture).plain
    assert "GPU0 (0000:3b:00.0): Xid 79 ×1, AMD-Vi fault ×2" in text
    assert "Kernel log" in host_detail(capture, "imported").plain
    assert kernel_events(import_texts([("q.txt", QUERY)]).capture).plain == ""


def test_links_pane_counts_link_changes() -> None:
    rows = [
        "pci.bus_id, pcie.link.gen.current, pcie.link.width.current",
        "00000000:3B:00.0, 5, 16",
        "00000000:3C:00.0, 5, 16",
        "00000000:3B:00.0, 5, 8",
        "00000000:3C:00.0, 5, 16",
        "00000000:3B:00.0, 5, 16",
        "00000000:3C:00.0, 5, 16",
    ]
    capture = import_texts([("links.txt", "\n".join(rows) + "\n")]).capture
    assert link_changes(capture) == "0000:3b:00.0 2×"
    assert link_changes(import_texts([("q.txt", QUERY)]).capture) == ""

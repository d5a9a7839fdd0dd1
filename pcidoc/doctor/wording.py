"""Wording helpers shared by every check: numbers, GPU names and lists, in one place.

Checks build their summaries with these so that the same thing reads the same everywhere
(``"GPU3 (0000:3b:00.0)"``, ``"265–276"``, ``"GPU0, GPU1 and 6 more"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pcidoc.model.cpulist import format_cpulist
from pcidoc.model.facts import Gpu


def gbps(value: float) -> str:
    """A GB/s figure without its unit: no decimals from 100 up (``"276"``, ``"25.1"``)."""
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def span(values: Sequence[float]) -> str:
    """``"265–276"``, or one number when both ends round alike."""
    low, high = gbps(min(values)), gbps(max(values))
    return low if low == high else f"{low}–{high}"


def short_list(items: Sequence[str], limit: int = 4) -> str:
    """The first ``limit`` items and how many more: ``"a, b, c, d and 3 more"``."""
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def counted(count: int | None, noun: str, plural: str | None = None) -> str:
    """``"8 ranks"``, ``"1 rank"``, or ``"an unknown number of ranks"`` (never ``"? ranks"``)."""
    many = plural or f"{noun}s"
    if not count:
        return f"an unknown number of {many}"
    return f"{count} {noun if count == 1 else many}"


def by_card(bus_ids: Iterable[str]) -> list[tuple[str, list[str]]]:
    """PCI functions grouped by card, in order: ``[("0000:03:00.0", [".1"])]`` for a GPU and
    its HDMI audio function (same bus and device). The first function seen names the card,
    function 0 when present; the others are listed by their function number."""
    cards: dict[str, list[str]] = {}
    for bus in dict.fromkeys(bus_ids):
        cards.setdefault(bus.rsplit(".", 1)[0], []).append(bus)
    grouped = []
    for functions in cards.values():
        head = next((f for f in functions if f.endswith(".0")), functions[0])
        grouped.append((head, ["." + f.rsplit(".", 1)[-1] for f in functions if f != head]))
    return grouped


def joined(labels: Iterable[str]) -> str:
    """``"GPU0, GPU2"``: every label, comma-separated."""
    return ", ".join(labels)


def gpu_names(labels: Iterable[str]) -> str:
    """``"GPU0, GPU2"``; five or more GPUs as ranges (``"GPUs 0-15"``) to keep lines short."""
    labels = list(labels)
    if len(labels) > 4 and all(map(is_gpu_label, labels)):
        return f"GPUs {format_cpulist({int(label[3:]) for label in labels})}"
    return ", ".join(labels)


def is_gpu_label(label: str) -> bool:
    """True for ``GPU<n>`` (``re.fullmatch(r"GPU\\d+", label)``: ``\\d`` is any Unicode decimal
    digit, as for ``str.isdecimal``), without a regex: checks ask for hundreds of labels."""
    return label[:3] == "GPU" and label[3:].isdecimal()


def gpu_ref(gpu: Gpu) -> str:
    """A GPU as a person finds it in the machine: ``"GPU3 (0000:3b:00.0)"``."""
    return f"{gpu.label} ({gpu.bus_id})" if gpu.bus_id else gpu.label


def all_pairs(count: int) -> str:
    """``"the GPU pair"`` or ``"all 28 pairs"``."""
    return "the GPU pair" if count == 1 else f"all {count} pairs"


def outlier_factor(value: float, peers_median: float) -> str:
    """How far a value sits from its peers: ``"12x the peers' median"``, or ``"peers have none"``
    when the peers' median is 0 (no finite factor exists)."""
    if peers_median <= 0:
        return "peers have none" if value > 0 else "same as peers"
    return f"{value / peers_median:.3g}x the peers' median"


def gpu_set(indices: list[int] | set[int]) -> str:
    """``[0, 1, 2, 3]`` -> ``"GPUs 0-3"``; one GPU -> ``"GPU0"``."""
    ordered = sorted(indices)
    if len(ordered) == 1:
        return f"GPU{ordered[0]}"
    return f"GPUs {format_cpulist(set(ordered))}"

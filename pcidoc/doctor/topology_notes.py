"""Notable facts about how a machine is wired, read off the topology matrix and GPU facts.

:func:`topology_notes` turns the ``nvidia-smi topo -m`` style matrix plus the GPUs' NUMA and
CPU-affinity facts into short sentences ("all 8 GPUs are NV18 to each other (NVSwitch-class full
mesh)", "GPU1, GPU3 have no NIC at PIX/PXB distance"). It is a pure function (no I/O), runs in
O(devices²) and states only what the data shows: unknown cells are never counted as a class,
and inferences are worded as such ("likely", "typically").

The notes describe wiring; they are not findings. Judgements (is this bad, what to do) belong to
the checks in :mod:`pcidoc.doctor.checks`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cached_property
from itertools import chain, repeat

from pcidoc.model.capture import Capture
from pcidoc.model.cpulist import format_cpulist, parse_cpulist
from pcidoc.model.linkmodel import NVLINK_MAX_LINKS_PER_GPU, nvlinks_of
from pcidoc.model.links import is_nvlink, nvlink_count, rank

NEAR_NIC_CLASSES: frozenset[str] = frozenset({"PIX", "PXB"})
"""GPU-NIC classes that keep RDMA traffic below the CPU (GPUDirect RDMA friendly)."""

_MAX_LISTED = 6
"""Items listed by name in one note before it says ``+N more``."""


def _gpu_index(label: str) -> int | None:
    """The index of a ``GPU<n>`` label, else ``None``: ``re.match(r"^GPU(\\d+)$", label)``
    (whose ``$`` also matches before a final newline) without compiling a pattern."""
    digits = label[3:-1] if label.endswith("\n") else label[3:]
    return int(digits) if label[:3] == "GPU" and digits.isdecimal() else None


# ----------------------------------------------------------------------------- formatting


def _plural(count: int, singular: str, plural: str | None = None) -> str:
    return singular if count == 1 else (plural or singular + "s")


def gpu_list(indices: Iterable[int]) -> str:
    """Name a set of GPUs compactly: ``GPU3``, ``GPU1, GPU3, GPU5, GPU7`` or ``GPUs 0-3,8``.

    Args:
        indices: GPU indices (any order, duplicates ignored).
    """
    ordered = sorted(set(indices))
    if len(ordered) == 1:
        return f"GPU{ordered[0]}"
    compact = format_cpulist(ordered) or ""
    if len(ordered) <= 4 and "-" not in compact:
        return ", ".join(f"GPU{i}" for i in ordered)
    return f"GPUs {compact}"


def _limited(items: Sequence[str], sep: str = ", ") -> str:
    shown = sep.join(items[:_MAX_LISTED])
    if len(items) > _MAX_LISTED:
        shown += f"{sep}+{len(items) - _MAX_LISTED} more"
    return shown


def _class_sort_key(link: str) -> tuple[int, int]:
    # NVLink classes first, most links first; then PCIe classes nearest first.
    return (rank(link) or 9, -nvlink_count(link))


def _class_counts(counter: Counter[str]) -> str:
    """``"4 × PIX, 8 × PHB, 16 × SYS"`` ordered nearest first."""
    return ", ".join(f"{counter[c]} × {c}" for c in sorted(counter, key=_class_sort_key))


def _class_names(classes: Iterable[str]) -> str:
    """``"PIX or PHB"`` ordered nearest first."""
    ordered = sorted(set(classes), key=_class_sort_key)
    if len(ordered) <= 1:
        return "".join(ordered)
    return ", ".join(ordered[:-1]) + " or " + ordered[-1]


def _pair(a: int, b: int) -> str:
    return f"({a},{b})"


# ------------------------------------------------------------------------------- the view


class _Wiring:
    """The matrix indexed once: GPU positions, NIC positions, GPU pair classes and GPU-NIC
    classes (a cell missing from a short row is unknown)."""

    def __init__(self, capture: Capture) -> None:
        topo = capture.topology
        self.labels: list[str] = list(topo.labels)
        self.links = topo.links
        self.gpu_pos: dict[int, int] = {}
        self.nic_pos: list[tuple[str, int]] = []
        for pos, label in enumerate(self.labels):
            index = _gpu_index(label)
            if index is not None:
                self.gpu_pos[index] = pos
            else:
                self.nic_pos.append((label, pos))
        self.gpus: list[int] = sorted(self.gpu_pos)
        # The matrix squared to the labels (None where a row is short or missing) and its
        # transpose: a cell and its mirror are then the same position of two rows.
        size = len(self.labels)
        grid = self.links  # read only; squared below unless it is square already
        if len(grid) != size or any(len(row) != size for row in grid):
            grid = [[*row[:size], *[None] * (size - len(row))] for row in self.links[:size]]
            grid += [[None] * size for _ in range(size - len(grid))]
        mirror = [list(column) for column in zip(*grid, strict=True)]
        # The usual matrix equals its transpose: no cell then needs its mirror's.
        symmetric = grid == mirror
        self.asymmetric: list[tuple[str, str, str, str]] = []
        # By rows: GPU a -> the classes of its pairs with the GPUs after it (in ``gpus`` order).
        self.rows: dict[int, list[str | None]] = {}
        columns = [self.gpu_pos[g] for g in self.gpus]
        for k, a in enumerate(self.gpus):
            i = self.gpu_pos[a]
            rest = columns[k + 1 :]
            forward = _gather(grid[i], rest)
            backward = forward if symmetric else _gather(mirror[i], rest)
            if forward != backward:  # an asymmetric row: say where, take the known cell
                for j, fwd, back in zip(rest, forward, backward, strict=True):
                    if fwd is not None and back is not None and fwd != back:
                        self.asymmetric.append((self.labels[i], self.labels[j], fwd, back))
                forward = _known_of(forward, backward)
            self.rows[a] = forward
        self.classes: Counter[str | None] = Counter(chain.from_iterable(self.rows.values()))
        """How many GPU pairs have each class (``None``: unknown), in first-seen order."""
        self.pair_count = len(self.gpus) * (len(self.gpus) - 1) // 2
        """How many GPU pairs there are (``len(self.pairs)``)."""
        # GPU -> its class to each NIC, in nic_pos order (the mirror cell when one is missing).
        nic_columns = [pos for _, pos in self.nic_pos]
        self.nic_cells: dict[int, list[str | None]] = {}
        for g in self.gpus:
            i = self.gpu_pos[g]
            forward = _gather(grid[i], nic_columns)
            backward = forward if symmetric else _gather(mirror[i], nic_columns)
            self.nic_cells[g] = forward if forward == backward else _known_of(forward, backward)

    @cached_property
    def pairs(self) -> dict[tuple[int, int], str | None]:
        """GPU pair -> class (``None`` when unknown), ``a < b``, in row order. Built when a
        note needs the pairs themselves: the counts in :attr:`classes` answer most questions,
        and a 72-GPU box has 2,556 pairs."""
        pairs: dict[tuple[int, int], str | None] = {}
        for k, a in enumerate(self.gpus):
            pairs.update(zip(zip(repeat(a), self.gpus[k + 1 :]), self.rows[a], strict=True))
        return pairs


def _known_of(cells: list[str | None], mirrors: list[str | None]) -> list[str | None]:
    """Each cell, or its mirror where the cell is unknown."""
    return [c if c is not None else m for c, m in zip(cells, mirrors, strict=True)]


def _gather(row: list[str | None], columns: list[int]) -> list[str | None]:
    """``[row[j] for j in columns]``, gathered in C."""
    return list(map(row.__getitem__, columns))


def _components(nodes: Iterable[int], edges: Iterable[tuple[int, int]]) -> list[list[int]]:
    """Connected components (sorted lists, ordered by their first member)."""
    parent: dict[int, int] = {n: n for n in nodes}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for n in parent:
        groups.setdefault(find(n), []).append(n)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: g[0])


def _is_clique(group: Sequence[int], edges: set[tuple[int, int]]) -> bool:
    return all((a, b) in edges for i, a in enumerate(group) for b in group[i + 1 :])


def _groups_text(groups: list[list[int]]) -> str:
    """``(0,1) (2,3)`` for pairs, ``GPUs 0-3`` for bigger groups."""
    parts = [_pair(g[0], g[1]) if len(g) == 2 else gpu_list(g) for g in groups]
    return _limited(parts, sep=" " if all(len(g) == 2 for g in groups) else "; ")


# ---------------------------------------------------------------------------------- notes


def _nvlink_notes(w: _Wiring, capture: Capture) -> list[str]:
    n = len(w.gpus)
    if n < 2:
        return []
    counts: Counter[str] = Counter({c: n for c, n in w.classes.items() if c and is_nvlink(c)})
    if not counts:
        return []
    nv_count = sum(counts.values())  # GPU pairs joined by NVLink
    notes: list[str] = []
    classes = _class_names(counts)
    unknown = [pair for pair, link in w.pairs.items() if link is None] if None in w.classes else []
    unknown_members = {g for pair in unknown for g in pair}
    if unknown:
        # Structure claims (mesh, islands, bridge pairs) need every pair; say what is known.
        known = w.pair_count - len(unknown)
        if nv_count == known:
            notes.append(
                f"every known GPU pair has NVLink ({classes}); "
                f"{len(unknown)} {_plural(len(unknown), 'pair')} unknown"
            )
        else:
            notes.append(f"NVLink joins {nv_count} of the {known} known GPU pairs ({classes})")
    elif nv_count == w.pair_count:
        if len(counts) == 1:
            link = next(iter(counts))
            if n == 2:
                notes.append(
                    f"GPU{w.gpus[0]} and GPU{w.gpus[1]} are joined by {link}"
                    + _mesh_kind(capture, w.gpus, nvlink_count(link), pair=True)
                )
            else:
                notes.append(
                    f"all {n} GPUs are {link} to each other"
                    + _mesh_kind(capture, w.gpus, nvlink_count(link), pair=False)
                )
        else:
            # Name the pairs of the rarer classes when they are few (e.g. one degraded pair).
            common = max(counts.items(), key=lambda item: item[1])[0]  # most_common(1)
            rare = sorted(pair for pair, link in w.pairs.items() if link != common)
            if len(rare) <= 4:
                listed = " ".join(f"{_pair(*p)} {w.pairs[p]}" for p in rare)
                detail = f": {listed}, the others {common}"
            else:
                detail = f" ({_class_counts(counts)})"
            notes.append(f"every GPU pair has NVLink but not the same number of links{detail}")
        return notes

    nv = {pair: link for pair, link in w.pairs.items() if is_nvlink(link)}
    degree: Counter[int] = Counter()
    for a, b in nv:
        degree[a] += 1
        degree[b] += 1
    linked = sorted(degree)
    lonely = [g for g in w.gpus if degree[g] == 0 and g not in unknown_members]
    if not unknown:
        components = _components(linked, nv)
        edges = set(nv)
        if all(len(c) == 2 for c in components):
            notes.append(
                f"NVLink bridge pairs: {_groups_text(components)} ({classes}); "
                "other GPU pairs use PCIe"
            )
        elif len(components) > 1:
            parts = []
            for comp in components:
                inner = {
                    nv[(a, b)] for i, a in enumerate(comp) for b in comp[i + 1 :] if (a, b) in nv
                }
                mesh = " full mesh" if _is_clique(comp, edges) and len(inner) == 1 else ""
                parts.append(f"{gpu_list(comp)} ({_class_names(inner)}{mesh})")
            island = {g: k for k, comp in enumerate(components) for g in comp}
            between = Counter(
                link
                for (a, b), link in w.pairs.items()
                if link is not None
                and not is_nvlink(link)
                and a in island
                and island.get(b) != island[a]
            )
            tail = f"; pairs between islands use {_class_names(between)}" if between else ""
            notes.append(f"NVLink islands: {'; '.join(parts)}{tail}")
        else:
            others = Counter(link for pair, link in w.pairs.items() if pair not in nv and link)
            tail = f"; the other pairs use {_class_names(others)}" if others else ""
            notes.append(
                f"NVLink joins {nv_count} of {w.pair_count} GPU pairs directly ({classes}){tail}"
            )
    if lonely and linked:
        verb = "has no NVLink peer" if len(lonely) == 1 else "have no NVLink peers"
        notes.append(f"{gpu_list(lonely)} {verb} while the other GPUs have {classes} between them")
    return notes


def _mesh_kind(capture: Capture, gpus: list[int], per_pair: int, pair: bool) -> str:
    """How an all-NVLink matrix is built, as far as the facts tell."""
    wanted = set(gpus)
    facts = [g for g in capture.gpus if g.index in wanted]
    if any(link.remote_type == "switch" for g in facts for link in g.nvlinks):
        return " (through NVSwitch)" if pair else " (full mesh through NVSwitch)"
    needed = per_pair * (len(gpus) - 1)
    most_links = max(map(nvlinks_of, facts), default=NVLINK_MAX_LINKS_PER_GPU)
    if needed > most_links:
        return "" if pair else " (NVSwitch-class full mesh)"
    remote = {link.remote_type for g in facts for link in g.nvlinks if link.remote_type}
    if remote == {"gpu"}:
        return " (direct links)" if pair else " (direct NVLink full mesh)"
    return "" if pair else " (full NVLink mesh)"


def _pcie_pair_notes(w: _Wiring) -> list[str]:
    if len(w.gpus) < 2:
        return []
    notes: list[str] = []
    counts: Counter[str] = Counter({c: n for c, n in w.classes.items() if c is not None})
    # The known pairs that are not NVLink (none to list on an all-NVLink box).
    pcie = (
        {pair: link for pair, link in w.pairs.items() if link is not None and not is_nvlink(link)}
        if not all(is_nvlink(c) for c in counts)
        else {}
    )
    if len(counts) == 1 and None not in w.classes:
        link = next(iter(counts))
        if not is_nvlink(link):
            if len(w.gpus) == 2:
                notes.append(f"GPU{w.gpus[0]} and GPU{w.gpus[1]} are {link} to each other")
            else:
                notes.append(f"every GPU pair is {link}")
    elif len(counts) > 1 and pcie:
        notes.append(f"GPU pair paths: {_class_counts(counts)} (of {w.pair_count} pairs)")
    for link, meaning in (
        ("PIX", "share a PCIe switch (PIX)"),
        ("PXB", "connect through several PCIe bridges without the CPU (PXB)"),
    ):
        edges = {pair for pair, cls in pcie.items() if cls == link}
        if not edges or len(edges) == w.pair_count:
            continue
        groups = _components({g for pair in edges for g in pair}, edges)
        if all(_is_clique(g, edges) for g in groups):
            subject = _groups_text(groups)
            prefix = "pairs " if all(len(g) == 2 for g in groups) else ""
            notes.append(f"{prefix}{subject} {meaning}")
        else:
            pairs = [_pair(*p) for p in sorted(edges)]
            notes.append(f"pairs {_limited(pairs, sep=' ')} {meaning}")
    return notes


def _pairs_by_node(w: _Wiring, nodes: dict[int, int]) -> tuple[Counter[str], Counter[str]]:
    """The known classes of the GPU pairs within a NUMA node and across nodes, counted, in
    first-seen order (pairs with a GPU whose node is unknown are left out)."""
    within: Counter[str] = Counter()
    across: Counter[str] = Counter()
    # Row by row: the pairs of a GPU with the GPUs after it, counted by (their node, class).
    node_of = [nodes.get(g) for g in w.gpus]
    for k, a in enumerate(w.gpus):
        if a not in nodes:
            continue
        row = w.rows[a]
        later = node_of[k + 1 :]
        if row and row.count(row[0]) == len(row):
            # One class in the whole row (every row of a switched box): count the nodes.
            if row[0] is not None:
                same = later.count(nodes[a])
                other = len(later) - same - later.count(None)
                if same:
                    within[row[0]] += same
                if other:
                    across[row[0]] += other
            continue
        for (node, link), count in Counter(zip(later, row, strict=True)).items():
            if node is not None and link is not None:
                (within if node == nodes[a] else across)[link] += count
    return within, across


def _numa_notes(w: _Wiring, capture: Capture) -> list[str]:
    notes: list[str] = []
    gpus = sorted(capture.gpus, key=lambda g: g.index)
    if not gpus:
        return notes
    nodes = {g.index: g.numa_node for g in gpus if g.numa_node is not None}
    unknown = [g.index for g in gpus if g.numa_node is None]
    by_node: dict[int, list[int]] = {}
    for index, node in nodes.items():
        by_node.setdefault(node, []).append(index)
    if len(by_node) >= 3 and all(len(m) == 1 for m in by_node.values()):
        notes.append(f"each GPU is on its own NUMA node ({len(by_node)} nodes)")
    elif len(by_node) >= 2:
        ordered = sorted(by_node.items(), key=lambda item: min(item[1]))
        if all(len(members) > 1 for _, members in ordered):
            spread = [f"{format_cpulist(m)} on NUMA {node}" for node, m in ordered]
            spread[0] = "GPUs " + spread[0]
        else:
            spread = [f"{gpu_list(m)} on NUMA {node}" for node, m in ordered]
        text = " and ".join(spread) if len(spread) == 2 else ", ".join(spread)
        within, across = _pairs_by_node(w, nodes)
        if across and set(across) == set(within) and len(across) == 1:
            link = next(iter(across))
            if not is_nvlink(link):  # uniform NVLink was already said by the NVLink note
                text += f"; pairs are {link} both across and within nodes"
        else:
            if across:
                text += f"; pairs across nodes are {_class_names(across)}"
            if within:
                text += f", within a node {_class_names(within)}"
        notes.append(text)
    elif len(by_node) == 1 and len(gpus) > 1:
        node = next(iter(by_node))
        host_nodes = len(capture.host.numa_nodes)
        if host_nodes > 1 and not unknown:
            notes.append(
                f"all {len(gpus)} GPUs are on NUMA {node} (the host has {host_nodes} NUMA nodes)"
            )
    if unknown and nodes:
        notes.append(f"NUMA node of {gpu_list(unknown)} is not reported")
    return notes


def _flattening_notes(w: _Wiring, capture: Capture) -> list[str]:
    """SYS paths where NUMA says there is only one node: a VM or hidden NUMA."""
    gpus = capture.gpus
    if not gpus or any(g.numa_node is None for g in gpus):
        return []
    nodes = {g.numa_node for g in gpus}
    if len(nodes) != 1:
        return []
    node = next(iter(nodes))
    hypervisor = capture.host.virtualization.hypervisor
    all_sys = len(w.gpus) >= 2 and list(w.classes) == ["SYS"]  # every pair SYS
    if all_sys:
        if hypervisor:
            cause = "topology flattened by the hypervisor (this host is a VM)"
        elif hypervisor is False:
            cause = (
                "the reported NUMA layout does not match the PCIe paths "
                "(NUMA hidden by firmware settings?)"
            )
        else:
            cause = "topology likely flattened by a hypervisor"
        owner = "both GPUs report" if len(gpus) == 2 else "all GPUs report"
        return [f"every GPU pair is SYS while {owner} NUMA {node}: {cause}"]
    if node != 0 or len(capture.host.numa_nodes) > 1:
        return []  # the machine has other NUMA nodes: SYS to devices on them is expected
    sys_paths = w.classes.get("SYS", 0)
    sys_paths += sum(cells.count("SYS") for cells in w.nic_cells.values())
    if not sys_paths:
        return []
    who = "this VM" if hypervisor else "the OS"
    return [
        f"{sys_paths} SYS {_plural(sys_paths, 'path')} (SYS crosses NUMA nodes) while every GPU "
        f"reports NUMA {node}: {who} likely sees fewer NUMA nodes than the hardware has"
    ]


def _nic_name(capture: Capture, label: str) -> str:
    nic = capture.nic(label)
    if nic is not None and nic.name and nic.name != label:
        return f"{label} ({nic.name})"
    return label


def _nic_notes(w: _Wiring, capture: Capture) -> list[str]:
    if not w.nic_pos or not w.gpus:
        return []
    notes: list[str] = []
    far: list[int] = []
    nearest: Counter[str] = Counter()
    judged = 0
    for g in w.gpus:
        cells = w.nic_cells[g]
        known = [c for c in cells if c is not None]
        if not known:
            continue
        judged += 1
        if NEAR_NIC_CLASSES.isdisjoint(known):
            far.append(g)
            nearest[min(known, key=lambda c: rank(c) if rank(c) is not None else 9)] += 1
    if far and len(far) == judged == len(w.gpus):
        notes.append(f"no GPU has a NIC at PIX/PXB distance (nearest: {_class_names(nearest)})")
    elif far:
        verb = "has" if len(far) == 1 else "have"
        notes.append(f"{gpu_list(far)} {verb} no NIC at PIX/PXB distance")
    elif judged == len(w.gpus):
        notes.append("every GPU has a NIC at PIX/PXB distance")

    sys_nics: list[str] = []
    per_nic = zip(*(w.nic_cells[g] for g in w.gpus), strict=True)
    for (label, _), cells in zip(w.nic_pos, per_nic, strict=False):
        if cells and cells.count("SYS") == len(cells):
            sys_nics.append(label)
    if sys_nics and len(sys_nics) == len(w.nic_pos) and len(sys_nics) > 1:
        notes.append("every NIC is SYS to every GPU")
    elif sys_nics:
        names = [_nic_name(capture, label) for label in sys_nics]
        verb = "is" if len(names) == 1 else "are"
        notes.append(f"{_limited(names)} {verb} SYS to every GPU")
    return notes


def _data_notes(w: _Wiring, capture: Capture) -> list[str]:
    notes: list[str] = []
    missing = [g.index for g in capture.gpus if g.index not in w.gpu_pos]
    if missing and w.labels:
        verb = "is" if len(missing) == 1 else "are"
        notes.append(f"{gpu_list(missing)} {verb} not in the topology matrix")
    unknown_pairs = (
        [pair for pair, link in w.pairs.items() if link is None] if None in w.classes else []
    )
    if unknown_pairs:
        listed = _limited([_pair(*p) for p in unknown_pairs], sep=" ")
        notes.append(
            f"the link class of {len(unknown_pairs)} GPU "
            f"{_plural(len(unknown_pairs), 'pair')} is unknown: {listed}"
        )
    if w.nic_pos:
        unknown_nic = sum(cells.count(None) for cells in w.nic_cells.values())
        if unknown_nic:
            notes.append(
                f"{unknown_nic} GPU-NIC {_plural(unknown_nic, 'path')} "
                f"{_plural(unknown_nic, 'is', 'are')} unknown"
            )
    if w.asymmetric:
        a, b, fwd, back = w.asymmetric[0]
        more = f" (+{len(w.asymmetric) - 1} more)" if len(w.asymmetric) > 1 else ""
        notes.append(f"the matrix is not symmetric: {a}→{b} is {fwd} but {b}→{a} is {back}{more}")
    # CPU affinity that is not a CPU list (a clipped paste) or is missing with a reason.
    invalid: dict[str, list[int]] = {}
    reasons: dict[str, list[int]] = {}
    for gpu in sorted(capture.gpus, key=lambda g: g.index):
        text = gpu.cpu_affinity
        if text is not None:
            if text.strip().upper() != "N/A" and parse_cpulist(text) is None:
                invalid.setdefault(gpu.cpu_affinity.strip(), []).append(gpu.index)
        else:
            reason = gpu.why("cpu_affinity")
            if reason:
                reasons.setdefault(reason, []).append(gpu.index)
    for text, members in invalid.items():
        notes.append(
            f"CPU affinity of {gpu_list(members)} ({text!r}) is not a valid CPU list: "
            "likely clipped in the paste"
        )
    for reason, members in reasons.items():
        notes.append(f"CPU affinity of {gpu_list(members)} is unknown: {reason}")
    notes += _affinity_mismatch_notes(capture, skip=set(invalid))
    return notes


def _affinity_mismatch_notes(capture: Capture, skip: set[str]) -> list[str]:
    """GPUs on one NUMA node whose CPU affinity differs from the node's usual one."""
    notes: list[str] = []
    by_node: dict[int, list[tuple[int, str]]] = {}
    for gpu in sorted(capture.gpus, key=lambda g: g.index):
        if gpu.numa_node is not None and gpu.cpu_affinity:
            by_node.setdefault(gpu.numa_node, []).append((gpu.index, gpu.cpu_affinity.strip()))
    for node, members in sorted(by_node.items()):
        counts = Counter(text for _, text in members)
        if len(counts) < 2:
            continue
        usual, usual_count = max(counts.items(), key=lambda item: item[1])  # most_common(1)
        if usual_count * 2 <= len(members):
            continue  # no clear majority to compare against
        odd = [(i, t) for i, t in members if t != usual and t not in skip]
        for text in dict.fromkeys(t for _, t in odd):
            who = [i for i, t in odd if t == text]
            peers = [i for i, t in members if t == usual]
            verb = "reports" if len(who) == 1 else "report"
            notes.append(
                f"{gpu_list(who)} on NUMA {node} {verb} CPU affinity {text!r}, unlike "
                f"{gpu_list(peers)} ({usual!r})"
            )
    return notes


def topology_notes(capture: Capture) -> list[str]:
    """Notable facts about the wiring of a machine, one sentence each (no trailing period).

    Covers NVLink structure (full mesh, islands, bridge pairs, GPUs without NVLink), PCIe
    classes between GPUs (shared switches), NUMA placement and paths across sockets, signs of a
    flattened (virtualized) topology, NIC proximity, and gaps in the data (unknown cells,
    clipped CPU affinity). Unknown cells are never counted as any class.

    Args:
        capture: The machine.

    Returns:
        Sentences, most structural first; empty when there is nothing to say.
    """
    w = _Wiring(capture)
    if not w.labels:
        reason = capture.unavailable.get("topology")
        return [f"no topology matrix{': ' + reason if reason else ''}"]
    notes: list[str] = []
    notes += _nvlink_notes(w, capture)
    pcie = _pcie_pair_notes(w)
    numa = _numa_notes(w, capture)
    flattened = _flattening_notes(w, capture)
    if flattened and flattened[0].startswith("every GPU pair is SYS"):
        pcie = [n for n in pcie if n != "every GPU pair is SYS"]
    notes += pcie + numa + flattened
    notes += _nic_notes(w, capture)
    notes += _data_notes(w, capture)
    return notes

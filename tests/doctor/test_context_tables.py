"""The per-run tables of the doctor's Context (and of the topology notes) against the per-cell
rules they replace: every bundled sample, every real paste of ../shared/realdata, and hand-built
damaged matrices (ragged rows, repeated GPUs, codes outside the known order).

The references below are written from the rules' wording, cell by cell, so that a table that
drifts from them (a wrong transpose, a padding cell read as a code) fails here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from pcidoc.collect.importers import import_texts
from pcidoc.doctor.context import Context
from pcidoc.doctor.placement import locality_groups
from pcidoc.doctor.topology_notes import _Wiring, topology_notes
from pcidoc.model.capture import Capture
from pcidoc.model.facts import P2PStatus, Topology
from pcidoc.samples import load_sample, sample_names
from tests.builders import machine
from tests.conftest import REALDATA, read_realdata

_ORDER = ("OK", "U", "DR", "NS", "TNS", "CNS", "GNS")


def _cell(matrix: list[list[str | None]], x: int, y: int) -> str | None:
    return matrix[x][y] if x < len(matrix) and y < len(matrix[x]) else None


def ref_p2p_code(capture: Capture, a: int, b: int) -> str | None:
    """The most telling code of read/write/pci, a->b then b->a; the first seen among equals;
    codes outside the order rank as ``U``; ``X`` and empty cells are not codes."""
    gpus = capture.p2p.gpus
    if a not in gpus or b not in gpus:
        return None
    i, j = gpus.index(a), gpus.index(b)
    best, best_rank = None, -1
    for cap in ("read", "write", "pci"):
        matrix = capture.p2p.matrices.get(cap)
        if matrix is None:
            continue
        for x, y in ((i, j), (j, i)):
            code = _cell(matrix, x, y)
            if code and code != "X":
                rank = _ORDER.index(code) if code in _ORDER else 1
                if rank > best_rank:
                    best, best_rank = code, rank
    return best


def ref_link(capture: Capture, a: str, b: str) -> str | None:
    """The cell of label ``a``'s row at label ``b`` (the last position of a repeated label)."""
    labels = capture.topology.labels
    if a not in labels or b not in labels:
        return None
    i = len(labels) - 1 - labels[::-1].index(a)
    j = len(labels) - 1 - labels[::-1].index(b)
    return _cell(capture.topology.links, i, j)


def _damaged() -> Iterator[tuple[str, Capture]]:
    # Ragged P2P rows, a GPU listed twice, a GPU missing from the P2P list.
    cap = machine(4, link="NV4")
    cap.p2p = P2PStatus(
        gpus=[0, 1, 2, 1],
        matrices={
            "read": [["X", "OK", "NS"], ["OK", "X"], ["CNS", "OK", "X", "OK"]],
            "write": [["X", "TNS", "OK", "OK"], ["OK", "X", "OK", "DR"]],
        },
    )
    yield "ragged", cap
    # U together with a code outside the order: ties depend on the order, cell by cell.
    cap = machine(3, link="PIX")
    cap.p2p = P2PStatus(
        gpus=[0, 1, 2],
        matrices={
            "read": [["X", "U", "OK"], ["WEIRD", "X", "OK"], ["OK", "OK", "X"]],
            "pci": [["X", "OK", "WEIRD"], ["U", "X", "OK"], ["OK", "", "X"]],
        },
    )
    yield "tied", cap
    # A code outside the order on its own, and empty matrices.
    cap = machine(3, link="SYS")
    cap.p2p = P2PStatus(gpus=[2, 0, 1], matrices={"read": [["X", "ODD"], ["OK"]], "write": []})
    yield "odd", cap
    # A short, asymmetric topology matrix with a repeated label and NICs.
    cap = machine(4, link="PXB", nics=["NIC0", "NIC1"])
    cap.topology = Topology(
        labels=["GPU0", "GPU1", "GPU2", "NIC0", "GPU3", "NIC1", "GPU1"],
        links=[
            ["X", "NV2", "SYS", "PIX", "NODE"],
            ["NV2", "X", "PHB"],
            ["SYS", "NV1", "X", "SYS", "SYS", "PXB", "PIX", "extra"],
            ["PIX", None, "SYS", "X", "SYS", "SYS", "SYS"],
            ["NODE", "SYS", None, "SYS", "X", "SYS", "NODE"],
        ],
    )
    yield "short-topology", cap
    # A row too short to hold its own diagonal cell: GPU2's view must leave that cell out.
    cap = machine(3, link="NV2")
    cap.topology = Topology(
        labels=["GPU0", "GPU1", "GPU2"],
        links=[["X", "NV2", "NV2"], ["NV2", "X", "NV1"], ["NV2", "NV1"]],
    )
    yield "short-diagonal", cap
    # Read codes on one side of the diagonal only (not symmetric), write the same matrix, pci
    # its transpose: equal tables are merged, and the max must still see both directions.
    cap = machine(3, link="PIX")
    one_sided = [["X", "NS", "OK"], [None, "X", "CNS"], [None, None, "X"]]
    cap.p2p = P2PStatus(
        gpus=[0, 1, 2],
        matrices={
            "read": one_sided,
            "write": [list(row) for row in one_sided],
            "pci": [list(column) for column in zip(*one_sided, strict=True)],
        },
    )
    yield "one-sided", cap
    # NICs the matrix does not hold, a NIC listed twice, a NIC column beyond a short row.
    cap = machine(2, link="PIX", nics=["NIC0", "NIC1"])
    cap.nics = [*cap.nics, cap.nics[0], *machine(1, nics=["NIC7"]).nics]
    cap.topology = Topology(
        labels=["GPU0", "GPU1", "NIC0", "NIC1"],
        links=[["X", "PIX", "PXB"], ["PIX", "X", "SYS", "PIX"], ["PXB", "SYS", "X", "SYS"]],
    )
    yield "stray-nics", cap
    # NUMA nodes with uniform rows, a GPU without a node, an unknown cell in one row.
    cap = machine(6, link="NV4", numa_nodes=3)
    cap.gpus[4].numa_node = None
    cap.topology.links[1][3] = None
    yield "numa-rows", cap


def _captures() -> Iterator[tuple[str, Capture]]:
    for name in sample_names():
        yield f"sample {name}", load_sample(name)
    if REALDATA.is_dir():
        for path in sorted(REALDATA.glob("*/*.txt")):
            rel = str(path.relative_to(REALDATA))
            yield rel, import_texts([(rel, read_realdata(rel))]).capture
    yield from _damaged()


CAPTURES = list(_captures())


@pytest.fixture(params=CAPTURES, ids=[name for name, _ in CAPTURES])
def capture(request: pytest.FixtureRequest) -> Capture:
    return request.param[1]  # type: ignore[no-any-return]


def _gpu_indices(capture: Capture) -> list[int]:
    return sorted({g.index for g in capture.gpus} | set(capture.p2p.gpus) | {99})


def test_p2p_codes_agree_with_the_cell_by_cell_rule(capture: Capture) -> None:
    ctx = Context(capture)
    indices = _gpu_indices(capture)
    for a in indices:
        expected = [ref_p2p_code(capture, a, b) for b in indices]
        assert [ctx.p2p_code(a, b) for b in indices] == expected, a
        assert ctx.p2p_codes_from(a, indices) == expected, a
        assert ctx.can_access_peer_from(a, indices) == [ctx.can_access_peer(a, b) for b in indices]


def test_p2p_codes_seen_are_every_code_of_the_matrices(capture: Capture) -> None:
    ctx = Context(capture)
    cells = {
        cell
        for cap in ("read", "write", "pci")
        for row in capture.p2p.matrices.get(cap) or []
        for cell in row
    }
    assert ctx.p2p_codes_seen == cells - {None, "", "X"}
    indices = _gpu_indices(capture)
    answers = {ctx.p2p_code(a, b) for a in indices for b in indices}
    assert answers - {None} <= ctx.p2p_codes_seen


def test_the_rank_table_is_skipped_when_equal_ranks_tie() -> None:
    ctx = Context(dict(_damaged())["tied"])
    assert ctx._p2p_rank_table is None
    # read 0->1 is U, read 1->0 is WEIRD: the first seen wins, so the order of the GPUs matters.
    assert (ctx.p2p_code(0, 1), ctx.p2p_code(1, 0)) == ("U", "WEIRD")


def test_matrix_rows_agree_with_the_cell_lookup(capture: Capture) -> None:
    ctx = Context(capture)
    labels = [*capture.topology.labels, "GPU99", "NIC99"]
    for a in labels:
        row = ctx.link_row(a)
        assert [row.get(b) for b in labels] == [ref_link(capture, a, b) for b in labels], a
    gpus = _gpu_indices(capture)
    for a in gpus:
        row = ctx.gpu_link_row(a)
        expected = [ref_link(capture, f"GPU{a}", f"GPU{b}") for b in gpus]
        if f"GPU{a}" not in ctx._label_pos:
            expected = [None] * len(gpus)
        assert [row.get(b) for b in gpus] == expected, a
        assert [ctx.gpu_link(a, b) for b in gpus] == expected, a


def test_nic_rows_are_the_matrix_rows_at_the_nics(capture: Capture) -> None:
    ctx = Context(capture)
    nics = [nic.label for nic in capture.nics]
    for a in [*capture.topology.labels, "GPU99", "NIC99"]:
        row = ctx.nic_row(a)
        assert [row.get(b) for b in nics] == [ref_link(capture, a, b) for b in nics], a
        assert set(row) <= set(nics), a  # the NICs only
        assert ctx.nic_row(a) is row  # built once per run


def test_nic_columns_are_every_gpus_cell_at_the_nic(capture: Capture) -> None:
    ctx = Context(capture)
    for nic in [*(n.label for n in capture.nics), "NIC99", "GPU0"]:
        expected = tuple(ref_link(capture, g.label, nic) for g in ctx.gpus)
        if nic not in {n.label for n in capture.nics}:
            expected = (None,) * len(ctx.gpus)  # the NICs' cells only
        assert ctx.nic_column(nic) == expected, nic


def test_has_nvlink_pair_tells_whether_the_set_of_nvlink_pairs_is_empty(capture: Capture) -> None:
    from pcidoc.model.links import is_nvlink

    ctx = Context(capture)
    expected = any(is_nvlink(link) for _, _, link in ctx.gpu_pairs())
    assert ctx.has_nvlink_pair is expected is bool(ctx.nvlink_pairs)


def test_gpu_links_are_the_cells_of_the_gpus_asked(capture: Capture) -> None:
    ctx = Context(capture)
    order = [g.index for g in ctx.gpus]
    asks = [order[k:] for k in range(len(order) + 1)]  # the GPUs from each position on
    asks += [order[::2], order[::-1], [*order, 99], [99, *order[1:]]]
    for a in [*order, 99]:
        for others in asks:
            links = ctx.gpu_links(a, others)
            assert links == [ref_link(capture, f"GPU{a}", f"GPU{b}") for b in others]
            if a in ctx._gpu_pos or not others:  # GPU99 has no row: every cell unknown
                links.append("new")  # a new list: the table is not touched
                assert ctx.gpu_links(a, others) == links[:-1]


def test_the_gpu_cell_table_is_used_for_whole_matrices_only() -> None:
    samples = [Context(load_sample(name)) for name in sample_names()]
    assert all(ctx._gpu_cells is not None for ctx in samples if len(ctx.gpus) > 1)
    damaged = dict(_damaged())
    for name in ("short-topology", "short-diagonal"):  # short rows
        assert Context(damaged[name])._gpu_cells is None, name
    outside = machine(3, link="NV4")  # GPU2 is not in the matrix
    outside.topology = Topology(labels=["GPU0", "GPU1"], links=[["X", "NV4"], ["NV4", "X"]])
    twice = machine(2, link="NV4")  # GPU1 listed twice
    twice.gpus.append(twice.gpus[1].model_copy())
    for cap in (outside, twice):
        assert Context(cap)._gpu_cells is None
        assert Context(cap).gpu_links(0, [0, 1, 2]) == [
            ref_link(cap, "GPU0", f"GPU{b}") for b in (0, 1, 2)
        ]


def ref_locality_groups(ctx: Context, indices: list[int]) -> list[list[int]]:
    """Connected components over cells (a, b), a before b, of a known class other than SYS."""
    groups = [{i} for i in dict.fromkeys(indices)]
    for pos, a in enumerate(indices):
        for b in indices[pos + 1 :]:
            if ctx.gpu_link(a, b) not in (None, "SYS"):
                ga = next(g for g in groups if a in g)
                gb = next(g for g in groups if b in g)
                if ga is not gb:
                    ga |= gb
                    groups.remove(gb)
    return sorted(sorted(g) for g in groups)


def test_locality_groups_are_the_components_of_the_better_than_sys_cells(
    capture: Capture,
) -> None:
    ctx = Context(capture)
    every = [g.index for g in ctx.gpus]
    for indices in (every, [*every, 99], every[::2]):  # 99: a GPU the matrix does not hold
        expected = ref_locality_groups(ctx, indices)
        # Components of one GPU each are regrouped by socket; otherwise the components.
        if not (all(len(g) == 1 for g in expected) and len(expected) > 1):
            assert locality_groups(ctx, indices) == expected, indices


def test_topology_note_wiring_agrees_with_the_cells(capture: Capture) -> None:
    w = _Wiring(capture)
    links = capture.topology.links
    asymmetric = []
    for k, a in enumerate(w.gpus):
        for b in w.gpus[k + 1 :]:
            i, j = w.gpu_pos[a], w.gpu_pos[b]
            fwd, back = _cell(links, i, j), _cell(links, j, i)
            if fwd is not None and back is not None and fwd != back:
                asymmetric.append((w.labels[i], w.labels[j], fwd, back))
            assert w.pairs[(a, b)] == (fwd if fwd is not None else back)
    assert w.asymmetric == asymmetric
    for g in w.gpus:
        i = w.gpu_pos[g]
        expected = [
            _cell(links, i, pos) if _cell(links, i, pos) is not None else _cell(links, pos, i)
            for _, pos in w.nic_pos
        ]
        assert w.nic_cells[g] == expected
    assert w.pair_count == len(w.pairs)
    # The class counts in first-seen order of the pairs (a < b, row by row).
    assert list(w.classes.items()) == list(Counter(w.pairs.values()).items())
    assert topology_notes(capture) is not None


def test_topology_note_pairs_by_node_count_every_known_pair(capture: Capture) -> None:
    from pcidoc.doctor.topology_notes import _pairs_by_node

    w = _Wiring(capture)
    nodes = {g.index: g.numa_node for g in capture.gpus if g.numa_node is not None}
    within: Counter[str] = Counter()
    across: Counter[str] = Counter()
    for k, a in enumerate(w.gpus):
        for b in w.gpus[k + 1 :]:
            link = w.pairs[(a, b)]
            if a in nodes and nodes.get(b) is not None and link is not None:
                (within if nodes[b] == nodes[a] else across)[link] += 1
    got_within, got_across = _pairs_by_node(w, nodes)
    assert list(got_within.items()) == list(within.items())  # counts and first-seen order
    assert list(got_across.items()) == list(across.items())


def test_the_empty_evidence_stand_in_reads_like_an_empty_imported_evidence() -> None:
    from pcidoc.doctor.evidence import NoEvidence, evidence
    from pcidoc.model.evidence import ImportedEvidence

    empty = ImportedEvidence().model_dump()
    stand_in = {name: getattr(NoEvidence(), name) for name in NoEvidence.__annotations__}
    assert set(stand_in) == set(empty)  # a new evidence kind must be added to the stand-in
    assert {
        k: v if v is None or isinstance(v, int) else list(v) for k, v in stand_in.items()
    } == empty
    assert isinstance(evidence(Context(machine(2))), NoEvidence)


def _path_fields(path: object) -> tuple[object, ...]:
    names = ("a", "b", "link", "kind", "uses_pcie_p2p", "hops", "paths_known")
    return tuple(getattr(path, name) for name in names)


def test_pcie_pair_paths_are_the_pair_paths_of_the_pairs_without_nvlink(capture: Capture) -> None:
    from pcidoc.doctor.checks.p2p._shared import _pairs, pair_path, pcie_pair_paths
    from pcidoc.model.links import is_nvlink

    ctx = Context(capture)
    indices = ctx.p2p_gpu_indices()
    every = [pair_path(ctx, a, b) for a, b in _pairs(indices)]
    paths, nvlink = pcie_pair_paths(ctx, indices)
    assert [_path_fields(p) for p in paths] == [
        _path_fields(p) for p in every if p.kind != "nvlink"
    ]
    assert nvlink == sum(1 for p in every if is_nvlink(p.link))
    for p in every:  # the hops: below the first port the two paths share, or all of them
        ga, gb = ctx.gpu_by_index.get(p.a), ctx.gpu_by_index.get(p.b)
        if ga is None or gb is None or not ga.path or not gb.path:
            assert p.hops == [] and not p.paths_known
            continue
        ids_b = [h.bus_id for h in gb.path]
        common = next((i for i, h in enumerate(ga.path) if h.bus_id in ids_b), None)
        if common is None:
            assert p.hops == [*ga.path, *gb.path]
        else:
            k = ids_b.index(ga.path[common].bus_id)
            assert p.hops == [*ga.path[:common], *gb.path[:k]]


def test_nvlink_views_and_common_class_agree_with_the_pairwise_count(capture: Capture) -> None:
    from collections import Counter

    from pcidoc.doctor.checks.nvlink._shared import _common_nv
    from pcidoc.doctor.checks.nvlink.state import _topo_view
    from pcidoc.model.links import is_nvlink, nvlink_count

    ctx = Context(capture)
    halves = [ctx.gpus, ctx.gpus[::2], [*ctx.gpus, *ctx.gpus[-1:]]]  # the last lists a GPU twice
    for among in halves:
        for gpu in among:
            links = [ctx.gpu_link(gpu.index, o.index) for o in among if o is not gpu]
            view = _topo_view(ctx, gpu, among)
            if not links or None in links:
                assert view is None
                continue
            counts = [nvlink_count(link) for link in links if is_nvlink(link)]
            assert view is not None
            assert (view.peers, view.total, view.widest) == (
                len(counts),
                sum(counts),
                max(counts, default=0),
            )
        pairs = [
            ctx.gpu_link(a.index, b.index) for i, a in enumerate(among) for b in among[i + 1 :]
        ]
        classes = [link for link in pairs if is_nvlink(link)]
        expected = Counter(classes).most_common(1)[0][0] if classes else None
        assert _common_nv(ctx, among) == expected


def test_nvlink_up_and_down_counts_are_the_links_in_each_state(capture: Capture) -> None:
    from pcidoc.doctor.checks.nvlink.state import _up_down

    ctx = Context(capture)
    for gpu in ctx.gpus:
        up = sum(1 for link in gpu.nvlinks if link.state == "up")
        down = sum(1 for link in gpu.nvlinks if link.state == "down")
        assert _up_down(ctx, gpu) == (up, down), gpu.label


def test_pair_classes_count_the_gpu_pairs_in_first_seen_order(capture: Capture) -> None:
    ctx = Context(capture)
    gpus = [g.index for g in ctx.gpus]
    pairs = [(a, b) for k, a in enumerate(gpus) for b in gpus[k + 1 :]]
    links = [ctx.gpu_link(a, b) for a, b in pairs]
    assert list(ctx.gpu_pairs()) == [
        (a, b, link) for (a, b), link in zip(pairs, links, strict=True)
    ]
    assert list(ctx.pair_classes.items()) == list(Counter(links).items())

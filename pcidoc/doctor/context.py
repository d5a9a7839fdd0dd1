"""A read-only view of one capture with the lookups checks need, computed once.

Checks receive a :class:`Context`; they must not mutate the capture.
"""

from __future__ import annotations

import operator
import re
from collections import Counter
from collections.abc import Iterator
from functools import cached_property
from itertools import repeat

from pcidoc.doctor.finding import Finding
from pcidoc.model import linkmodel
from pcidoc.model.capture import Capture
from pcidoc.model.cpulist import parse_cpulist
from pcidoc.model.facts import Gpu, Nic
from pcidoc.model.links import is_nvlink
from pcidoc.model.measurements import P2PMatrixMeasurement, ProbeError, TransferMeasurement

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import ClassVar


class Context:
    """Facts and measurements of one machine, indexed for the checks.

    Args:
        capture: The machine.
        probes_requested: Whether probes were asked for in this run (changes skip hints).
    """

    def __init__(self, capture: Capture, probes_requested: bool = False) -> None:
        self.capture = capture
        self.probes_requested = probes_requested
        self.gpus: list[Gpu] = sorted(capture.gpus, key=lambda g: g.index)
        self.gpu_by_index: dict[int, Gpu] = {g.index: g for g in self.gpus}
        self.nics: list[Nic] = list(capture.nics)
        topo = capture.topology
        self._label_pos = {label: i for i, label in enumerate(topo.labels)}
        # Checks over pairs ask for GPU links and P2P codes thousands of times on big boxes:
        # index them once (O(1) per lookup instead of label formatting and list.index).
        self._gpu_pos = {
            g.index: self._label_pos[g.label] for g in self.gpus if g.label in self._label_pos
        }
        # Position of each GPU in the P2P matrices (the first one if a paste repeats it).
        self._p2p_pos: dict[int, int] = {}
        for pos, idx in enumerate(capture.p2p.gpus):
            self._p2p_pos.setdefault(idx, pos)
        self.measurements = capture.measurements
        self._link_rows: dict[str, dict[str, str | None]] = {}
        self._nic_rows: dict[str, dict[str, str | None]] = {}
        self._gpu_models: dict[str | None, linkmodel.GpuModel | None] = {}
        self.memo: dict[str, dict[object, object]] = {}
        """Per-run caches of check helpers (a check module's results for this capture)."""
        self.host = capture.host
        self.driver = capture.driver

    # -------------------------------------------------------------------- topology lookups

    def link(self, a: str, b: str) -> str | None:
        """Link class between two labels (``GPU0``, ``NIC1``), ``None`` when unknown."""
        i = self._label_pos.get(a)
        j = self._label_pos.get(b)
        if i is None or j is None:
            return None
        links = self.capture.topology.links
        if i >= len(links) or j >= len(links[i]):
            return None
        return links[i][j]

    def link_row(self, a: str) -> dict[str, str | None]:
        """Label ``a``'s row of the matrix: other label -> class (read only; a label whose cell
        is missing is absent, as :meth:`link` then answers ``None``). Built once per label."""
        rows = self._link_rows
        row = rows.get(a)
        if row is None:
            cells = self._row_cells(a)
            labels, columns = self._label_columns
            if columns and max(columns) < len(cells):  # every cell there: gathered in C
                row = dict(zip(labels, map(cells.__getitem__, columns), strict=True))
            else:
                width = len(cells)
                row = {b: cells[j] for b, j in self._label_pos.items() if j < width}
            rows[a] = row
        return row

    def _row_cells(self, a: str) -> list[str | None]:
        """Label ``a``'s row of the matrix as stored (empty when the label has none)."""
        i = self._label_pos.get(a)
        links = self.capture.topology.links
        return links[i] if i is not None and i < len(links) else []

    @cached_property
    def _label_columns(self) -> tuple[list[str], list[int]]:
        """The labels of the matrix and their positions (the last one of a repeated label)."""
        return list(self._label_pos), list(self._label_pos.values())

    def nic_row(self, a: str) -> dict[str, str | None]:
        """:meth:`link_row` of label ``a`` restricted to the capture's NICs: NIC label -> class
        (read only). The NIC checks ask every GPU's row for the NICs only; a 72-GPU box has
        18 NICs among 90 labels. Built once per label."""
        rows = self._nic_rows
        row = rows.get(a)
        if row is None:
            cells = self._row_cells(a)
            width = len(cells)
            row = rows[a] = {b: cells[j] for b, j in self._nic_columns if j < width}
        return row

    def nic_column(self, label: str) -> tuple[str | None, ...]:
        """Every GPU's class to the NIC ``label``, in :attr:`gpus` order (``None`` where
        unknown): the column of :meth:`nic_row` (checks ask it for every NIC)."""
        found = self._nic_column_table.get(label)
        return (None,) * len(self.gpus) if found is None else found

    @cached_property
    def _nic_column_table(self) -> dict[str, tuple[str | None, ...]]:
        if not self.gpus:
            return {}
        labels = [label for label, _ in self._nic_columns]
        rows = [list(map(self.nic_row(g.label).get, labels)) for g in self.gpus]
        return dict(zip(labels, zip(*rows, strict=True), strict=True))

    @cached_property
    def _nic_columns(self) -> list[tuple[str, int]]:
        """The NICs' labels that are in the matrix and their positions (as :meth:`link_row`
        reads them: the last position of a repeated label)."""
        positions = self._label_pos
        labels = dict.fromkeys(nic.label for nic in self.nics)
        return [(label, positions[label]) for label in labels if label in positions]

    def gpu_link(self, a: int, b: int) -> str | None:
        """Link class between GPU ``a`` and GPU ``b``."""
        table = self._gpu_cells
        if table is not None:
            where, cells = table
            i = where.get(a)
            j = where.get(b)
            return None if i is None or j is None else cells[i][j]
        row = self._gpu_link_rows.get(a)
        return None if row is None else row.get(b)

    def gpu_links(self, a: int, others: list[int]) -> list[str | None]:
        """``[self.gpu_link(a, b) for b in others]``, as a new list: a slice of GPU ``a``'s
        cells when ``others`` are the GPUs from some position of :attr:`gpus` on (the GPUs
        after ``a``, or all of them: what checks over every pair ask, row by row)."""
        table = self._gpu_cells
        if table is not None:
            where, cells = table
            i = where.get(a)
            start = len(self._gpu_order) - len(others)
            if i is not None and start >= 0 and self._gpu_order[start:] == others:
                return cells[i][start:]
        return list(map(self.gpu_link_row(a).get, others))

    @cached_property
    def _gpu_order(self) -> list[int]:
        """The GPU indices in :attr:`gpus` order."""
        return [g.index for g in self.gpus]

    @cached_property
    def _gpu_cells(self) -> tuple[dict[int, int], list[list[str | None]]] | None:
        """Each GPU's position in :attr:`gpus` and its cells towards every GPU in that order,
        gathered from the matrix in C. ``None`` unless every GPU is in the matrix once and its
        row reaches every GPU's column (the usual matrix): :meth:`gpu_link_row` answers then."""
        order = self._gpu_order
        if len(order) < 2 or len(self._gpu_pos) != len(order):
            return None  # a GPU outside the matrix, or an index listed twice
        links = self.capture.topology.links
        columns = [self._gpu_pos[a] for a in order]
        gather = operator.itemgetter(*columns)
        last = max(columns)
        cells: list[list[str | None]] = []
        for i in columns:
            if i >= len(links) or last >= len(links[i]):
                return None  # a short row
            cells.append(list(gather(links[i])))
        return {a: k for k, a in enumerate(order)}, cells

    def gpu_link_row(self, a: int) -> dict[int, str | None]:
        """GPU ``a``'s row of the matrix: other GPU index -> link class (read only; GPUs whose
        cell is missing are absent, as :meth:`gpu_link` then answers ``None``)."""
        return self._gpu_link_rows.get(a) or {}

    @cached_property
    def _gpu_link_rows(self) -> dict[int, dict[int, str | None]]:
        """Every GPU's row of the matrix by GPU index (checks ask thousands of times)."""
        links = self.capture.topology.links
        positions = list(self._gpu_pos.items())
        indices = [b for b, _ in positions]
        columns = [j for _, j in positions]
        # One C-level gather per row when the row has every GPU's cell (the usual case).
        gather = operator.itemgetter(*columns) if len(columns) > 1 else None
        last = max(columns, default=-1)
        out: dict[int, dict[int, str | None]] = {}
        for a, i in positions:
            row = links[i] if i < len(links) else []
            width = len(row)
            if gather is not None and last < width:
                out[a] = dict(zip(indices, gather(row), strict=True))
            else:
                out[a] = {b: row[j] for b, j in positions if j < width}
        return out

    def gpu_pairs(self) -> Iterator[tuple[int, int, str | None]]:
        """Unordered GPU pairs ``(a, b, link)`` with ``a < b``."""
        return iter(self._pair_list)

    @cached_property
    def _pair_list(self) -> list[tuple[int, int, str | None]]:
        indices = self._gpu_order
        out: list[tuple[int, int, str | None]] = []
        for pos, a in enumerate(indices):
            rest = indices[pos + 1 :]
            out += zip(repeat(a), rest, self.gpu_links(a, rest))
        return out

    @cached_property
    def pair_classes(self) -> Counter[str | None]:
        """How many GPU pairs (of :meth:`gpu_pairs`) have each link class (``None``:
        unknown), in first-seen order (read only)."""
        # Row by row, as gpu_pairs() lists them, without a tuple per pair.
        indices = self._gpu_order
        tally: Counter[str | None] = Counter()
        for pos, a in enumerate(indices):
            tally.update(self.gpu_links(a, indices[pos + 1 :]))
        return tally

    @cached_property
    def has_topology(self) -> bool:
        """True when at least one GPU pair (or GPU-NIC pair) has a known link class."""
        return any(cell not in (None, "X") for row in self.capture.topology.links for cell in row)

    @cached_property
    def nvlink_pairs(self) -> set[frozenset[int]]:
        """GPU pairs joined by NVLink according to the topology matrix."""
        return {frozenset((a, b)) for a, b, link in self.gpu_pairs() if is_nvlink(link)}

    @cached_property
    def has_nvlink_pair(self) -> bool:
        """``bool(self.nvlink_pairs)``, read off the class counts (the set of a big NVLink box
        holds thousands of pairs, and most checks only ask whether there is one)."""
        return any(is_nvlink(link) for link in self.pair_classes)

    # --------------------------------------------------------------------- environment

    @cached_property
    def flattened_view(self) -> str | None:
        """Why the topology looks like a hypervisor's flattened view, or ``None``.

        Every GPU pair at PHB/SYS (no switch, no NVLink, no NODE) while the GPUs' NUMA facts
        carry no locality: all report the same multi-node set (``0-1``), NUMA -1, or one node
        with SYS between them. Old-driver matrices (no NUMA column, CPU affinity only) whose
        affinity differs per GPU are two sockets, not a hypervisor. A host known to be bare
        metal is never flattened.
        """
        if self.is_vm is False or len(self.gpus) < 2:
            return None
        links = [link for _, _, link in self.gpu_pairs()]
        if not links or not all(link in ("PHB", "SYS") for link in links):
            return None
        nodes = {g.numa_node for g in self.gpus}
        sets = {(g.numa_affinity or "").strip() for g in self.gpus}
        cpus = {g.cpu_affinity for g in self.gpus if g.cpu_affinity}
        no_node = all(n is None or n < 0 for n in nodes)
        if no_node and len(cpus) > 1:
            return None  # per-GPU CPU affinity: the sockets are visible
        if len(sets) == 1 and _several_nodes(next(iter(sets))):
            return f"every GPU reports the same NUMA set {next(iter(sets))}"
        if (nodes and all(n is not None and n < 0 for n in nodes)) or sets == {"-1"}:
            return "every GPU reports NUMA -1"
        all_sys = all(link == "SYS" for link in links)
        if all_sys and len(nodes) == 1 and not no_node:
            return f"every GPU pair is SYS while every GPU reports NUMA {next(iter(nodes))}"
        if all_sys and no_node:
            return "every GPU pair is SYS while no GPU reports a NUMA node"
        return None

    @cached_property
    def is_vm(self) -> bool | None:
        """True when the OS runs in a VM or a GPU is passed through / a vGPU."""
        modes = {g.virtualization_mode for g in self.gpus if g.virtualization_mode}
        if modes & {"passthrough", "vgpu"}:
            return True
        hyper = self.host.virtualization.hypervisor
        if hyper is not None:
            return hyper
        if modes == {"none"}:
            return False
        return None

    @cached_property
    def single_numa_node(self) -> bool | None:
        """Whether the host has exactly one NUMA node; ``None`` when that is not known.

        Linux numbers NUMA nodes from 0, so a node id above 0 (of the host or of a GPU) means
        there are several. An imported ``nvidia-smi topo -m`` lists only the nodes its GPUs sit
        on, so one node there does not prove the host has only one.
        """
        ids = {n.id for n in self.host.numa_nodes}
        ids |= {g.numa_node for g in self.gpus if g.numa_node is not None and g.numa_node >= 0}
        if len(ids) > 1 or any(i > 0 for i in ids):
            return False
        if ids and self.capture.origin.kind != "import":
            return True
        return None

    @cached_property
    def mig_gpus(self) -> set[int]:
        """Indices of GPUs with MIG enabled."""
        return {g.index for g in self.gpus if g.mig.enabled}

    def gpu_cpus(self, gpu: Gpu) -> frozenset[int] | None:
        """CPUs local to a GPU (its cpu_affinity), or ``None``."""
        return parse_cpulist(gpu.cpu_affinity)

    # -------------------------------------------------------------------- measurements

    def p2p_matrices(
        self,
        kind: str = "bandwidth",
        p2p: str | None = None,
        bidirectional: bool | None = None,
    ) -> list[P2PMatrixMeasurement]:
        """Measured P2P matrices filtered by kind, P2P mode and direction."""
        return [
            m
            for m in self.measurements.p2p
            if m.kind == kind
            and (p2p is None or m.p2p == p2p)
            and (bidirectional is None or m.bidirectional == bidirectional)
        ]

    def transfers(
        self,
        gpu: int | None = None,
        direction: str | None = None,
        memory: str | None = None,
        bidirectional: bool | None = False,
    ) -> list[TransferMeasurement]:
        """Transfer measurements filtered by GPU, direction, memory kind and bidirectionality."""
        return [
            t
            for t in self.measurements.transfers
            if (gpu is None or t.gpu == gpu)
            and (direction is None or t.direction == direction)
            and (memory is None or t.memory == memory)
            and (bidirectional is None or t.bidirectional == bidirectional)
        ]

    def probe_error(self, probe: str) -> ProbeError | None:
        """Why a probe of this run produced nothing (``transfer``, ``p2p``, ``allreduce``,
        ``scaling``), if it reported why."""
        for error in self.measurements.probe_errors:
            if error.probe == probe:
                return error
        return None

    def unmeasured(self, probe: str, summary: str, needs: str | None = None) -> Finding:
        """The finding of a probe-fed check with nothing to judge.

        A ``skip`` saying what would provide the measurement; when the probe ran and could not
        measure, its reason instead: unavailable (no torch/CUDA, with the install hint),
        refused (busy GPUs) and interrupted stay ``skip``; a timeout, crash or error becomes
        ``error``, because a probe that hangs or dies is something to look at.
        """
        error = self.probe_error(probe)
        hint = needs or self.probe_hint()
        if error is None:
            return Finding("skip", summary, needs=hint)
        if error.kind in ("unavailable", "refused", "interrupted"):
            verb = {
                "unavailable": "could not run",
                "refused": "was refused",
                "interrupted": "was cancelled",
            }[error.kind]
            follow = {
                "refused": "stop the other GPU processes or rerun with `--force`",
                "interrupted": hint,
            }.get(error.kind, error.message)
            return Finding("skip", f"the {probe} probe {verb}: {error.message}", needs=follow)
        what = {"timeout": "timed out", "crash": "crashed"}.get(error.kind, "failed")
        return Finding(
            "error",
            f"the {probe} probe {what}: {error.message}",
            remediation=[
                "Rerun it alone with `pcidoc probe " + probe + " --debug` and read its stderr; "
                "a peer copy or collective that hangs points at P2P/ACS/IOMMU (see "
                "p2p.acs-iommu) or at NCCL (rerun with `NCCL_DEBUG=INFO`)."
            ],
            confidence="low",
        )

    def probe_hint(self) -> str:
        """What to run to get measurements on this machine."""
        if self.capture.origin.kind == "live":
            return "run `pcidoc check --probes quick` on the GPU machine"
        return (
            "run `pcidoc check --probes quick` on the machine, or import a "
            "p2pBandwidthLatencyTest / bandwidthTest / nvbandwidth / nccl-tests output with "
            "`pcidoc import`"
        )

    # ------------------------------------------------------- P2P status (p2p/scaling checks)

    _P2P_GRANT_CAPS: tuple[str, ...] = ("read", "write", "pci")
    _P2P_CODE_ORDER: tuple[str, ...] = ("OK", "U", "DR", "NS", "TNS", "CNS", "GNS")
    """Refusal codes from least to most telling."""
    _P2P_CODE_RANK: ClassVar[dict[str, int]] = {c: i for i, c in enumerate(_P2P_CODE_ORDER)}

    def p2p_code(self, a: int, b: int) -> str | None:
        """NVML P2P status of the pair (both directions, read/write/pci capabilities).

        Returns ``"OK"`` when every known code is OK, the most telling refusal code otherwise
        (``GNS`` > ``CNS`` > ``TNS`` > ``NS`` > ``DR`` > ``U``), ``None`` when nothing is known.
        """
        i = self._p2p_pos.get(a)
        j = self._p2p_pos.get(b)
        if i is None or j is None:
            return None
        table = self._p2p_rank_table
        if table is None:
            return self._p2p_code_at(i, j)
        ranks, codes = table
        if i >= len(ranks) or j >= len(ranks):
            return None
        return codes.get(ranks[i][j])

    def p2p_codes_from(self, a: int, others: list[int]) -> list[str | None]:
        """``[self.p2p_code(a, b) for b in others]``, read off the table in one sweep when it
        holds every GPU asked about (a check over all pairs asks row by row)."""
        table = self._p2p_rank_table
        positions = self._p2p_pos
        i = positions.get(a)
        if table is not None and i is not None and i < len(table[0]):
            ranks, codes = table
            try:
                columns = list(map(positions.__getitem__, others))
                return list(map(codes.get, map(ranks[i].__getitem__, columns)))
            except (KeyError, IndexError):
                pass  # a GPU outside the table: cell by cell below
        return [self.p2p_code(a, b) for b in others]

    def can_access_peer_from(self, a: int, others: list[int]) -> list[bool | None]:
        """``[self.can_access_peer(a, b) for b in others]``."""
        if self.capture.p2p.can_access_peer is None:
            return [None] * len(others)
        return [self.can_access_peer(a, b) for b in others]

    @cached_property
    def p2p_codes_seen(self) -> frozenset[str]:
        """Every code of the read/write/pci P2P matrices (``X`` and empty cells left out): the
        answers :meth:`p2p_code` can give besides ``None``."""
        present: set[str | None] = set()
        for cap in self._P2P_GRANT_CAPS:
            present.update(*self.capture.p2p.matrices.get(cap) or [])
        return frozenset(present - {None, "", "X"})  # type: ignore[arg-type]

    @cached_property
    def _p2p_rank_table(self) -> tuple[list[list[int]], dict[int, str]] | None:
        """Every pair's :meth:`p2p_code` at once: the best rank of its six cells by matrix
        positions (``-1`` when none is known), and the code of each rank present.

        Built with list operations in one pass instead of six cell reads per pair. ``None``
        when the matrices hold two different codes of equal rank (``U`` and a code outside the
        order): which of them wins then depends on the order the cells are read in, so
        :meth:`_p2p_code_at` answers per pair. Otherwise the most telling code of the six cells
        wins whatever the order, and the table gives the same answer.
        """
        rank = self._P2P_CODE_RANK
        matrices = [m for cap in self._P2P_GRANT_CAPS if (m := self.capture.p2p.matrices.get(cap))]
        present = self.p2p_codes_seen
        codes = {rank.get(code, 1): code for code in present}
        if len(codes) < len(present):
            return None
        size = max((max([len(matrix), *map(len, matrix)]) for matrix in matrices), default=0)
        cell: dict[str | None, int] = {
            **{code: rank.get(code, 1) for code in present},
            None: -1,
            "": -1,
            "X": -1,
        }
        pad = [-1] * size
        # Each matrix as ranks, square, then with its transpose: the six cells of a pair are
        # the same position of these six tables. Equal tables are kept once (a symmetric
        # matrix is its own transpose, and read and write usually agree): the maximum over
        # them is the same, and often a single table is left, which is then the answer.
        tables: list[list[list[int]]] = []
        for k, matrix in enumerate(matrices):
            if matrix in matrices[:k]:
                continue  # the same codes as an earlier matrix: the same two tables
            rows = [[*map(cell.__getitem__, row), *pad[len(row) :]] for row in matrix]
            rows += [pad] * (size - len(rows))
            for table in (rows, [list(column) for column in zip(*rows, strict=True)]):
                if table not in tables:
                    tables.append(table)
        if len(tables) == 1:
            return tables[0], codes
        best = [list(map(max, *cells)) for cells in zip(*tables, strict=True)]
        return best, codes

    def _p2p_code_at(self, i: int, j: int) -> str | None:
        """:meth:`p2p_code` of the GPUs at matrix positions ``i`` and ``j``, cell by cell."""
        matrices = self.capture.p2p.matrices
        rank = self._P2P_CODE_RANK
        # The most telling code wins; among equals the first seen (read, write, pci; a->b then
        # b->a). Codes outside the order rank as "U". Called for every pair on big boxes.
        best: str | None = None
        best_rank = -1
        for cap in self._P2P_GRANT_CAPS:
            matrix = matrices.get(cap)
            if matrix is None:
                continue
            for x, y in ((i, j), (j, i)):
                if x < len(matrix):
                    row = matrix[x]
                    if y < len(row):
                        code = row[y]
                        if code and code != "X":
                            r = rank.get(code, 1)
                            if r > best_rank:
                                best, best_rank = code, r
        return best

    def can_access_peer(self, a: int, b: int) -> bool | None:
        """``cudaDeviceCanAccessPeer`` for the pair (False if either direction is False)."""
        status = self.capture.p2p
        matrix = status.can_access_peer
        i = self._p2p_pos.get(a)
        j = self._p2p_pos.get(b)
        if matrix is None or i is None or j is None:
            return None
        values = []
        for x, y in ((i, j), (j, i)):
            try:
                values.append(matrix[x][y])
            except IndexError:
                values.append(None)
        if False in values:
            return False
        if values and all(v is True for v in values):
            return True
        return None

    def p2p_available(self, a: int, b: int) -> bool | None:
        """Whether peer access is granted for the pair: CUDA's answer first, then NVML's."""
        cuda = self.can_access_peer(a, b)
        if cuda is not None:
            return cuda
        code = self.p2p_code(a, b)
        if code is None or code == "U":
            return None
        return code == "OK"

    def p2p_gpu_indices(self) -> list[int]:
        """GPU indices known from the GPU list or, failing that, from the P2P status matrix."""
        indices = {g.index for g in self.gpus}
        if not indices:
            indices = set(self.capture.p2p.gpus)
        return sorted(indices)

    def gpu_model(self, gpu: Gpu | None) -> linkmodel.GpuModel | None:
        """:func:`pcidoc.model.linkmodel.gpu_model_of`, looked up once per GPU name and run (a
        lookup tries dozens of name patterns; a big box has many GPUs of one name)."""
        if gpu is None:
            return None
        name = gpu.name
        models = self._gpu_models
        if name not in models:
            models[name] = linkmodel.gpu_model_of(gpu)
        return models[name]

    @staticmethod
    def is_geforce(gpu: Gpu | None) -> bool:
        """True for consumer (GeForce/TITAN) GPUs, whose stock driver refuses P2P (GNS)."""
        name = (gpu.name or "").lower() if gpu else ""
        return "geforce" in name or "titan" in name

    def nvlink_rate(self, index: int) -> tuple[str | None, float | None]:
        """NVLink version and per-link speed (GB/s) of a GPU's up links, if known.

        From the capture when it reports them, else from the GPU's model in the link model
        (:mod:`pcidoc.model.linkmodel`): an A100 SXM4 named in a paste runs NVLink 3.0 links.
        A model whose links run below its version's line rate (GA102 bridges, 14.06 GB/s)
        returns its per-link rate without a version so that nothing rounds it up.
        """
        gpu = self.gpu_by_index.get(index)
        version, speed, _ = linkmodel.nvlink_facts(gpu)
        if version or speed:
            return version, speed
        model = linkmodel.gpu_model_of(gpu)
        if model is None or not model.nvlink_gbps_per_link:
            return None, None
        if linkmodel.nvlink_nominal_rate_gbps(model.nvlink_version) == model.nvlink_gbps_per_link:
            return model.nvlink_version, model.nvlink_gbps_per_link
        return None, model.nvlink_gbps_per_link


def _several_nodes(text: str) -> bool:
    """True for a NUMA set naming more than one node (``"0-1"``, ``"0,1"``), without
    expanding it (a hostile ``0-999999999`` must stay cheap)."""
    match = re.fullmatch(r"(\d+)(?:-(\d+))?((?:,\d+(?:-\d+)?)*)", text.replace(" ", ""))
    if not match:
        return False
    first, last, rest = match.groups()
    return bool(rest) or (last is not None and int(last) > int(first))

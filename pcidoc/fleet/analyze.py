"""``pcidoc fleet``: diagnose many machines and find the odd ones.

1. Every input file is loaded and diagnosed by the doctor in worker processes (one per usable
   core); each worker returns a small :class:`~pcidoc.fleet.summary.NodeSummary`, never the
   capture, so memory grows with the summaries only. An unreadable file is named and skipped.
2. Nodes are grouped by hardware signature (GPU models and count, GPU-GPU link classes, NICs).
3. Inside a group of at least :data:`MIN_PEERS` nodes, each fact is compared with the group's
   majority value (more than half of the group must agree, else the split is reported as a
   fleet finding, not as outliers), counters with the peers' median, and each verdict with the
   group's majority verdict. A node that differs is an **outlier**, with what differs.
4. Verdicts worse than pass on every node of a group are **fleet findings** (a configuration or
   a design choice, fixed once for the group).
5. The **exclude** list: nodes with a failing check, and outliers whose difference degrades
   bandwidth or reliability.
"""

from __future__ import annotations

import bisect
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from pcidoc import __version__
from pcidoc.errors import PcidocError
from pcidoc.fleet.summary import NodeSummary, display_name, summarise_file
from pcidoc.model.fleet import (
    Difference,
    ExcludeEntry,
    FleetFinding,
    FleetGroup,
    FleetNode,
    FleetReport,
    NodeFinding,
    UnreadableInput,
)
from pcidoc.model.report import SEVERITY_ORDER
from pcidoc.sanitize import clean_line

MIN_PEERS = 3
"""Smallest group in which a majority can single out a node (with 2, neither is 'the odd one')."""

COUNTER_FACTOR = 10
COUNTER_FLOOR = 100
"""A counter differs when it exceeds ``COUNTER_FACTOR x (peers' median + 1)`` and the median by
at least ``COUNTER_FLOOR``: an order of magnitude above what the node's identical peers
accumulated. A heuristic of pcidoc's (no published fleet threshold exists); the per-node
``pcie.errors``/``nvlink.errors`` checks judge the counters against their own thresholds."""

DEGRADING_FACTS = ("pcie_width", "pcie_gen", "nvlinks_up", "peer_links", "state", "gpu_count")
"""Facts whose difference costs bandwidth or a GPU (the node should be drained)."""

INPUT_SUFFIXES = (".json", ".json.gz")
PARALLEL_MIN_FILES = 16
"""Below this many files the doctor runs in this process (starting workers costs more)."""


def _is_input(name: str) -> bool:
    """``*.json``, ``*.json.gz``, and ``*.json.<node>`` (what ``clush --rcopy`` writes)."""
    if name.startswith("."):
        return False
    return name.endswith(INPUT_SUFFIXES) or (".json." in name and not name.endswith(".tmp"))


def find_inputs(paths: Iterable[str]) -> tuple[list[str], list[UnreadableInput]]:
    """Expand directories (recursively, ``*.json``, ``*.json.gz`` and ``*.json.<node>``,
    sorted) and keep files.

    Returns the files and the inputs that do not exist.
    """
    files: list[str] = []
    missing: list[UnreadableInput] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(str(p) for p in path.rglob("*") if p.is_file() and _is_input(p.name))
            if not found:
                missing.append(
                    UnreadableInput(path=raw, error=f"{clean_line(raw)}: no .json files in it")
                )
            files.extend(found)
        elif path.exists():
            files.append(str(path))
        else:
            missing.append(
                UnreadableInput(path=raw, error=f"{clean_line(raw)}: no such file or directory")
            )
    return files, missing


def usable_cores() -> int:
    """CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def summarise_all(
    files: list[str], workers: int | None = None
) -> Iterator[NodeSummary | tuple[str, str]]:
    """Summaries (or ``(path, error)``) of ``files`` in input order, using ``workers`` processes
    (default: the usable cores; 1 = in this process)."""
    count = usable_cores() if workers is None else max(1, workers)
    if count == 1 or len(files) < PARALLEL_MIN_FILES:
        for path in files:
            yield summarise_file(path)
        return
    import multiprocessing

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    ctx = multiprocessing.get_context(method)
    chunk = max(1, min(32, len(files) // (count * 8)))
    with ctx.Pool(count) as pool:
        yield from pool.imap(summarise_file, files, chunksize=chunk)


# ------------------------------------------------------------------------------ comparison


def _majority(values: list[str]) -> tuple[str, float] | None:
    """The value more than half of ``values`` share, with its share; ``None`` without one."""
    if not values:
        return None
    value, count = Counter(values).most_common(1)[0]
    share = count / len(values)
    return (value, share) if share > 0.5 else None


def _subject(summary: NodeSummary, key: str) -> str | None:
    label = key.split(".", 1)[0]
    return summary.subjects.get(label) if "." in key else None


_FACT_NAMES = {
    "pcie_width": "PCIe link width",
    "pcie_gen": "PCIe link generation (P0 or under load)",
    "pcie_max": "PCIe maximum link",
    "nearest_nic": "nearest NIC",
    "numa_node": "NUMA node",
    "state": "state",
    "nvlinks_up": "NVLinks up",
    "peer_links": "links to its peers",
    "mig": "MIG",
    "replays": "PCIe replays",
    "aer_correctable": "AER correctable errors",
    "aer_fatal": "AER fatal errors",
    "nvlink_errors": "NVLink error counters",
    "driver": "driver",
    "cuda_driver": "CUDA driver version",
    "gpu_count": "GPU count",
    "virtualization": "virtualization",
    "iommu": "IOMMU",
}


def _fact_label(key: str) -> str:
    return _FACT_NAMES.get(key.rsplit(".", 1)[-1], key)


def _compare_group(members: list[NodeSummary]) -> tuple[dict[int, list[Difference]], list[str]]:
    """Differences of each member (by position) from the group, and facts with no majority."""
    diffs: dict[int, list[Difference]] = defaultdict(list)
    split = _fact_differences(members, diffs)
    _counter_differences(members, diffs)
    _verdict_differences(members, diffs)
    return diffs, split


def _on_peers(value: str, same: int, peers: int) -> str:
    """``x16 on all 23 peers`` / ``12/12 on 10 of its 11 peers``: the peers' value and how many
    of this node's peers (the others of its group whose value is known) hold it."""
    return (
        f"{value} on all {peers} peers"
        if same == peers
        else f"{value} on {same} of its {peers} peers"
    )


def _fact_differences(members: list[NodeSummary], diffs: dict[int, list[Difference]]) -> list[str]:
    """Facts where a member differs from the majority of its group; the facts without one."""
    split: list[str] = []
    for key in sorted({k for m in members for k in m.facts}):
        values = [m.facts.get(key) for m in members]
        known = [v for v in values if v is not None]
        if len(known) < MIN_PEERS:
            continue
        majority = _majority(known)
        if majority is None:
            if len(set(known)) > 1:
                split.append(key)
            continue
        value, share = majority
        same = known.count(value)
        last = key.rsplit(".", 1)[-1]
        for i, (member, mine) in enumerate(zip(members, values, strict=True)):
            if mine is None or mine == value:
                continue
            subject = _subject(member, key)
            who = f"{subject}: " if subject else ""
            diffs[i].append(
                Difference(
                    key=key,
                    kind="fact",
                    value=mine,
                    peers=value,
                    peer_share=round(share, 3),
                    degrades=last in DEGRADING_FACTS and _worse_fact(last, mine, value),
                    subject=subject,
                    text=f"{who}{_fact_label(key)} {mine} "
                    f"({_on_peers(value, same, len(known) - 1)})",
                )
            )
    return split


def _counter_differences(members: list[NodeSummary], diffs: dict[int, list[Difference]]) -> None:
    """Counters an order of magnitude above the median of the member's peers."""
    for key in sorted({k for m in members for k in m.counters}):
        values_c = [m.counters.get(key) for m in members]
        known_c = [v for v in values_c if v is not None]
        if len(known_c) < MIN_PEERS:
            continue
        ordered = sorted(known_c)
        for i, (member, mine_c) in enumerate(zip(members, values_c, strict=True)):
            if mine_c is None:
                continue
            median = _median_without(ordered, mine_c)
            if mine_c > COUNTER_FACTOR * (median + 1) and mine_c - median >= COUNTER_FLOOR:
                subject = _subject(member, key)
                who = f"{subject}: " if subject else ""
                peers = f"{median:g}"
                diffs[i].append(
                    Difference(
                        key=key,
                        kind="fact",
                        value=str(mine_c),
                        peers=f"median {peers}",
                        degrades=True,
                        subject=subject,
                        text=f"{who}{_fact_label(key)} {mine_c} (peers' median {peers})",
                    )
                )


def _verdict_differences(members: list[NodeSummary], diffs: dict[int, list[Difference]]) -> None:
    """Checks at warn or worse on a member where its group's majority verdict is better."""
    for check_id in sorted({k for m in members for k in m.verdicts}):
        values_v = [m.verdicts.get(check_id) for m in members]
        known_v = [v for v in values_v if v is not None]
        majority_v = _majority(known_v)
        if majority_v is None or len(known_v) < MIN_PEERS:
            continue
        value, share = majority_v
        same = known_v.count(value)
        for i, (member, mine_v) in enumerate(zip(members, values_v, strict=True)):
            # Only a worse verdict at warn or above marks a node: a better one is not a reason to
            # look at it, and an info note (an idle link, a gap in the capture) is not a problem.
            if mine_v is None or SEVERITY_ORDER[mine_v] <= SEVERITY_ORDER[value]:
                continue
            if SEVERITY_ORDER[mine_v] < SEVERITY_ORDER["warn"]:
                continue
            summary = next((f[2] for f in member.findings if f[0] == check_id), "")
            peers = _on_peers(value, same, len(known_v) - 1)
            diffs[i].append(
                Difference(
                    key=f"check:{check_id}",
                    kind="verdict",
                    value=mine_v,
                    peers=value,
                    peer_share=round(share, 3),
                    degrades=True,
                    text=f"{check_id}: {mine_v} ({peers}): {summary}".rstrip(": "),
                )
            )


def _median_without(ordered: list[int], value: int) -> float:
    """Median of the sorted ``ordered`` with one occurrence of ``value`` removed (the node's
    peers), in O(log n): the group is compared with each of its members, so this runs
    nodes x counters times."""
    k = bisect.bisect_left(ordered, value)
    m = len(ordered) - 1
    if m <= 0:
        return 0.0

    def at(j: int) -> int:
        return ordered[j] if j < k else ordered[j + 1]

    return (at((m - 1) // 2) + at(m // 2)) / 2


def _worse_fact(kind: str, mine: str, peers: str) -> bool:
    """True when this node's value of a degrading fact is worse than its peers'."""
    if kind in ("pcie_width", "pcie_gen", "nvlinks_up"):
        return _leading_int(mine) < _leading_int(peers)
    if kind == "gpu_count":
        return _leading_int(mine) < _leading_int(peers)
    if kind == "state":
        return mine != "ok"
    return True  # peer_links: a different NVLink wiring than identical peers


def _leading_int(text: str) -> int:
    """The first number in ``text`` (``x8`` -> 8, ``Gen4`` -> 4, ``11/12`` -> 11)."""
    digits = ""
    for ch in text.lstrip("xGen"):
        if not ch.isdecimal():
            break
        digits += ch
    return int(digits) if digits else 0


def _signature_diff(mine: str, reference: str) -> str:
    a, b = mine.split("; "), reference.split("; ")
    parts = [f"{x} (peers: {y})" for x, y in zip(a, b, strict=False) if x != y]
    return "; ".join(parts) or mine


# --------------------------------------------------------------------------------- the report


def analyse(
    paths: Iterable[str],
    *,
    workers: int | None = None,
    generated_at: str | None = None,
    progress: Callable[[str], None] | None = None,
    names: str = "host",
) -> FleetReport:
    """Diagnose every capture/report under ``paths`` and compare the nodes.

    Raises:
        PcidocError: no input could be read at all.
    """
    from pcidoc.collect.capture import utc_now

    files, unreadable = find_inputs(paths)
    summaries: list[NodeSummary] = []
    for done, item in enumerate(summarise_all(files, workers), start=1):
        if isinstance(item, tuple):
            unreadable.append(UnreadableInput(path=item[0], error=clean_line(item[1])))
        else:
            summaries.append(item)
        if progress is not None and done % 250 == 0:
            progress(f"pcidoc: {done}/{len(files)} files diagnosed")
    if not summaries:
        detail = f": {unreadable[0].error}" if unreadable else ""
        raise PcidocError(f"no readable capture or report among the inputs{detail}")
    return build_report(summaries, unreadable, generated_at or utc_now(), names)


def _unique_names(summaries: list[NodeSummary], how: str = "host") -> list[str]:
    names = [display_name(s, how) for s in summaries]
    counts = Counter(names)
    out = []
    for name, summary in zip(names, summaries, strict=True):
        if counts[name] > 1:
            base = clean_line(os.path.basename(summary.path))
            name = (
                f"{name} ({base})"
                if summary.hostname and how == "host"
                else clean_line(summary.path)
            )
        out.append(name)
    return out


def build_report(
    summaries: list[NodeSummary],
    unreadable: list[UnreadableInput],
    generated_at: str,
    how_named: str = "host",
) -> FleetReport:
    """Compare the summarised nodes and build the ``pcidoc.fleet/1`` report (nodes named by
    hostname, or by file name with ``how_named="file"``)."""
    names = _unique_names(summaries, how_named)
    by_signature: dict[str, list[int]] = defaultdict(list)
    for i, summary in enumerate(summaries):
        by_signature[summary.signature].append(i)
    ordered = sorted(by_signature.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    groups: list[FleetGroup] = []
    group_of: dict[int, str] = {}
    diffs: dict[int, list[Difference]] = defaultdict(list)
    findings: list[FleetFinding] = []
    largest = ordered[0][1] if ordered else []
    for n, (signature, members) in enumerate(ordered, start=1):
        gid = f"g{n}"
        comparable = len(members) >= MIN_PEERS
        groups.append(
            FleetGroup(
                id=gid,
                signature=signature,
                nodes=[names[i] for i in members],
                peers_comparable=comparable,
            )
        )
        for i in members:
            group_of[i] = gid
        group_summaries = [summaries[i] for i in members]
        if comparable:
            group_diffs, split = _compare_group(group_summaries)
            for pos, found in group_diffs.items():
                diffs[members[pos]].extend(found)
            for key in split:
                values = Counter(s.facts.get(key) for s in group_summaries if key in s.facts)
                shown = ", ".join(f"{v} on {c}" for v, c in values.most_common(4))
                findings.append(
                    FleetFinding(
                        group=gid,
                        id=f"fleet.split:{key}",
                        severity="info",
                        summary=f"no majority for {_fact_label(key)} ({key}): {shown}",
                        nodes=len(members),
                    )
                )
        elif (
            len(largest) >= MIN_PEERS
            and members is not largest
            and summaries[members[0]].gpu_models == summaries[largest[0]].gpu_models
        ):
            # Same GPU model as the main group but fewer GPUs, other links or NICs: a node
            # that lost something. Another GPU model is another kind of node, not an outlier.
            reference = summaries[largest[0]].signature
            for i in members:
                diffs[i].append(
                    Difference(
                        key="signature",
                        kind="signature",
                        value=signature,
                        peers=reference,
                        degrades=summaries[i].gpus < summaries[largest[0]].gpus,
                        text="hardware differs from the largest group: "
                        + _signature_diff(signature, reference),
                    )
                )
        if len(members) >= 2:
            findings.extend(_shared_findings(gid, group_summaries))
    nodes: list[FleetNode] = []
    exclude: list[ExcludeEntry] = []
    for i, summary in enumerate(summaries):
        found = diffs.get(i, [])
        node = FleetNode(
            name=names[i],
            path=summary.path,
            hostname=summary.hostname,
            group=group_of[i],
            worst=summary.worst,  # type: ignore[arg-type]
            summary=summary.summary,
            outlier=bool(found),
            differs=found,
            findings=[
                NodeFinding(id=f[0], severity=f[1], summary=f[2], subjects=f[3])  # type: ignore[arg-type]
                for f in summary.findings
            ],
            gpus=summary.gpus,
            link_speed_ratio=summary.link_speed_ratio,
        )
        nodes.append(node)
        reason = _exclude_reason(node)
        if reason:
            exclude.append(ExcludeEntry(name=node.name, reason=reason))
    nodes.sort(key=lambda n: (-SEVERITY_ORDER[n.worst], not n.outlier, n.name))
    exclude_names = {e.name for e in exclude}
    order = {n.name: k for k, n in enumerate(nodes)}
    exclude.sort(key=lambda e: order[e.name])
    worst = max((n.worst for n in nodes), key=SEVERITY_ORDER.__getitem__, default="pass")
    summary_counts: dict[str, int] = {
        "nodes": len(nodes),
        "groups": len(groups),
        "outliers": sum(1 for n in nodes if n.outlier),
        "excluded": len(exclude_names),
        "unreadable": len(unreadable),
    }
    for sev in ("fail", "error", "warn", "info", "pass"):
        summary_counts[sev] = sum(1 for n in nodes if n.worst == sev)
    findings.sort(key=lambda f: (-SEVERITY_ORDER[f.severity], f.group, f.id))
    return FleetReport(
        pcidoc_version=__version__,
        generated_at=generated_at,
        nodes=nodes,
        groups=groups,
        fleet_findings=findings,
        exclude=exclude,
        unreadable=unreadable,
        summary=summary_counts,
        worst=worst,  # type: ignore[arg-type]
    )


def _shared_findings(gid: str, members: list[NodeSummary]) -> list[FleetFinding]:
    """Checks at warn or worse on every member of the group."""
    shared: list[FleetFinding] = []
    first = members[0]
    for check_id, severity, summary, _subjects in first.findings:
        if SEVERITY_ORDER[severity] < SEVERITY_ORDER["warn"]:
            continue
        levels = [m.verdicts.get(check_id) for m in members]
        if any(lv is None or SEVERITY_ORDER[lv] < SEVERITY_ORDER["warn"] for lv in levels):
            continue
        common = min(levels, key=lambda lv: SEVERITY_ORDER[lv or "pass"])
        shared.append(
            FleetFinding(
                group=gid,
                id=check_id,
                severity=common,  # type: ignore[arg-type]
                summary=summary,
                nodes=len(members),
            )
        )
    return shared


def _exclude_reason(node: FleetNode) -> str | None:
    reasons: list[str] = []
    fails = [f for f in node.findings if f.severity == "fail"]
    if fails:
        reasons.append("fail: " + "; ".join(f"{f.id}: {f.summary}" for f in fails[:2]))
    degrading = [d for d in node.differs if d.degrades and d.kind != "verdict"]
    degrading += [
        d
        for d in node.differs
        if d.degrades and d.kind == "verdict" and d.value != "fail"  # fails listed above
    ]
    if degrading:
        reasons.append("outlier: " + "; ".join(d.text for d in degrading[:3]))
    return " | ".join(reasons) or None


def exit_code_for_fleet(report: FleetReport) -> int:
    """0/1/2 by the worst node (a crashed check counts as 3), 3 when an input was unreadable."""
    from pcidoc.errors import ExitCode

    if report.unreadable:
        return int(ExitCode.BAD_INPUT)
    if report.summary.get("fail"):
        return int(ExitCode.FAIL)
    if report.summary.get("error"):
        return int(ExitCode.BAD_INPUT)
    if report.summary.get("warn"):
        return int(ExitCode.WARN)
    return int(ExitCode.OK)

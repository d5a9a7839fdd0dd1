"""Run-time evidence readers (NCCL RAS, watchdog, flight recorder, Inspector, profiler trace,
P2P data integrity) as fragments for the importer: one entry point for text and one for JSON."""

from __future__ import annotations

from typing import Any

from pcidoc.collect.importers import nccl_inspector, nccl_ras, p2p_integrity
from pcidoc.collect.importers.fragment import Fragment
from pcidoc.collect.importers.text import Doc


def runtime_fragments(doc: Doc, name: str) -> list[Fragment]:
    """Fragments of every run-time reader that recognises something in ``doc``."""
    fragments: list[Fragment] = []
    if nccl_ras.looks_like_ras(doc):
        report = nccl_ras.parse_ras_text(doc, name)
        frag = Fragment(nccl_ras.FORMAT_RAS)
        frag.evidence.nccl_ras.append(report)
        frag.read.append(nccl_ras.summary_ras(report))
        if report.version:
            frag.tool_versions["nccl"] = report.version
        fragments.append(frag)
    else:
        fragments.extend(_embedded_json(doc, name))
    watchdogs = nccl_ras.extract_watchdogs(doc)
    if watchdogs:
        frag = Fragment(nccl_ras.FORMAT_WATCHDOG)
        frag.evidence.nccl_watchdogs.extend(watchdogs)
        frag.read.append(nccl_ras.summary_watchdogs(watchdogs))
        fragments.append(frag)
    records = nccl_inspector.parse_prometheus(doc) or nccl_inspector.parse_json_lines(doc)
    if records:
        fragments.append(_inspector_fragment(records))
    trace = nccl_inspector.parse_trace(doc, name)
    if trace is not None:
        frag = Fragment(nccl_inspector.FORMAT_TRACE)
        frag.evidence.profiler_traces.append(trace)
        frag.read.append(nccl_inspector.summary_trace(trace))
        fragments.append(frag)
    integrity = p2p_integrity.extract(doc)
    if integrity:
        frag = Fragment(p2p_integrity.FORMAT)
        frag.evidence.p2p_integrity.extend(integrity)
        frag.read.append(p2p_integrity.summary(integrity))
        fragments.append(frag)
    return fragments


def _embedded_json(doc: Doc, name: str) -> list[Fragment]:
    """RAS JSON reports and flight-recorder dumps pasted among other lines (a prompt, a
    command, prose): each top-level object is tried on its own."""
    head = "\n".join(doc.lines[:200000])
    if '"communicators"' not in head and '"collective_seq_id"' not in head:
        return []
    found = []
    for value in nccl_inspector.json_objects(head, limit=64):
        if nccl_ras.looks_like_ras_json(value) or nccl_ras.looks_like_flight_recorder(value):
            fragment = json_fragment(value, name)
            if fragment is not None:
                found.append(fragment)
    return found


def _inspector_fragment(records: list[Any]) -> Fragment:
    frag = Fragment(nccl_inspector.FORMAT_INSPECTOR)
    frag.evidence.inspector.extend(records)
    frag.read.append(nccl_inspector.summary(records))
    return frag


def json_fragment(data: Any, name: str) -> Fragment | None:
    """The fragment of a JSON document of a run-time kind, or None."""
    if nccl_ras.looks_like_ras_json(data):
        report = nccl_ras.parse_ras_json(data, name)
        frag = Fragment(nccl_ras.FORMAT_RAS)
        frag.evidence.nccl_ras.append(report)
        frag.read.append(nccl_ras.summary_ras(report))
        if report.version:
            frag.tool_versions["nccl"] = report.version
        return frag
    if nccl_inspector.looks_like_inspector(data):
        records = nccl_inspector.parse_json(data)
        return _inspector_fragment(records) if records else None
    if nccl_ras.looks_like_flight_recorder(data):
        dump = nccl_ras.parse_flight_recorder(data, name)
        frag = Fragment(nccl_ras.FORMAT_FLIGHT)
        frag.evidence.flight_records.append(dump)
        frag.read.append(nccl_ras.summary_flight(dump))
        return frag
    return None

"""Readers that look at a whole text rather than one section: NCCL log lines (interleaved with
everything else), the launch of nccl-tests/rccl-tests runs across hosts, and collect_env
reports (whose embedded ``topo -m`` the section scanner reads on its own)."""

from __future__ import annotations

from pcidoc.collect.importers import (
    collect_env,
    error_lines,
    kernel_log,
    link_history,
    nccl_log,
    perf_runs,
)
from pcidoc.collect.importers.fragment import Fragment
from pcidoc.collect.importers.runtime import runtime_fragments
from pcidoc.collect.importers.text import Doc


def extract(doc: Doc, name: str) -> tuple[list[Fragment], list[str]]:
    """Fragments of the whole-text readers, and their warnings."""
    fragments: list[Fragment] = []
    warnings: list[str] = []
    log, log_warnings = nccl_log.extract(doc, name)
    warnings.extend(log_warnings)
    if log is not None:
        frag = Fragment(nccl_log.FORMAT)
        frag.evidence.nccl_logs.append(log)
        frag.read.append(nccl_log.summary(log))
        if log.version:
            frag.tool_versions["nccl"] = log.version
        fragments.append(frag)
    run, run_warnings = perf_runs.extract(doc, name)
    warnings.extend(run_warnings)
    if run is not None and (run.ranks or run.headers > 1 or run.duplicated_rows):
        frag = Fragment(perf_runs.FORMAT)
        frag.evidence.test_runs.append(run)
        frag.read.append(perf_runs.summary(run))
        fragments.append(frag)
    fragments.extend(runtime_fragments(doc, name))
    report = collect_env.extract(doc, name)
    if report is not None:
        frag = Fragment(collect_env.FORMAT)
        frag.evidence.env_reports.append(report)
        frag.read.append(collect_env.summary(report))
        if report.driver_version:
            frag.driver["driver_version"] = report.driver_version
        fragments.append(frag)
    kernel = kernel_log.extract(doc, name)
    if kernel is not None:
        frag = Fragment(kernel_log.FORMAT)
        frag.evidence.kernel_logs.append(kernel)
        frag.read.append(kernel_log.summary(kernel))
        fragments.append(frag)
    errors, notes = error_lines.extract(doc, name)
    if errors is not None:
        fragments.append(errors)
    warnings.extend(notes)
    history = link_history.extract(doc, name)
    if history is not None:
        frag = Fragment(link_history.FORMAT)
        frag.evidence.link_histories.append(history)
        frag.read.append(link_history.summary(history))
        fragments.append(frag)
    return fragments, warnings

"""Wording shared by every presenter: machine summary, severity marks, exit-code meanings.

Nothing here diagnoses; it only names what the report and the capture already say. Kept free of
rich so that the JSON and Markdown paths stay light.
"""

from __future__ import annotations

from collections import Counter

from pcidoc.model.capture import Capture
from pcidoc.model.facts import Gpu
from pcidoc.model.report import SEVERITIES, CheckResult, Evidence, Report, ReportSource

MARKS: dict[str, str] = {
    "fail": "✗",
    "warn": "!",
    "error": "●",
    "info": "i",
    "pass": "✓",
    "skip": "-",
}
"""One-character severity marks (terminal, Markdown, HTML)."""

ASCII_MARKS: dict[str, str] = {
    "fail": "X",
    "warn": "!",
    "error": "E",
    "info": "i",
    "pass": "+",
    "skip": "-",
}
"""Marks for terminals whose encoding cannot show the Unicode ones."""

EXIT_MEANINGS: dict[int, str] = {
    0: "nothing worse than info",
    1: "warnings, no failures",
    2: "at least one check failed",
    3: "a check could not run (error) or the input was bad",
}
"""What each exit code of ``pcidoc check`` means (DESIGN.md §4)."""

VERDICTS: dict[str, str] = {
    "fail": "FAIL",
    "error": "ERROR",
    "warn": "WARN",
    "info": "OK",
    "pass": "OK",
    "skip": "OK",
}
"""Short verdict shown in titles, from the report's worst severity."""

MAX_FIRST = 5
"""How many findings "What to do first" lists before pointing at the rest (every presenter)."""


def hostname(capture: Capture) -> str:
    """The machine's host name, or a placeholder that says why there is none."""
    name = capture.host.hostname
    if name:
        return name
    if capture.origin.redacted:
        return "(redacted host)"
    return "(unknown host)"


def machine_title(capture: Capture) -> str:
    """What to call the machine in a report's header.

    Its host name; for a bundled sample, the sample's title; for an import without a host
    name, ``"imported capture"`` (pastes rarely carry one); else :func:`hostname`'s placeholder.
    """
    if capture.host.hostname:
        return capture.host.hostname
    if capture.origin.sample is not None:
        return capture.origin.sample.title
    if capture.origin.kind == "import":
        return "imported capture"
    return hostname(capture)


def numa_text(capture: Capture) -> str | None:
    """``"2 NUMA nodes"``; for an import, which nodes the GPUs sit on (the only ones it shows)."""
    nodes = sorted(n.id for n in capture.host.numa_nodes)
    if not nodes:
        return None
    if capture.origin.kind == "import":
        noun = "node" if len(nodes) == 1 else "nodes"
        return f"GPUs on NUMA {noun} {', '.join(map(str, nodes))}"
    return f"{len(nodes)} NUMA {'node' if len(nodes) == 1 else 'nodes'}"


def gpu_name(capture: Capture, gpu: Gpu) -> str | None:
    """The GPU's model name; for a GPU the capture left nameless (a pasted topology matrix), the one
    model that the rest of the capture names (other GPUs, a collect_env report, nccl-tests rank
    lines), or None when no source names one or they name several."""
    if gpu.name:
        return gpu.name
    names = {g.name for g in capture.gpus if g.name}
    ev = capture.evidence
    if ev is not None:
        names.update(n for report in ev.env_reports for n in report.gpu_models if n)
        names.update(r.name for run in ev.test_runs for r in run.ranks if r.name)
    return names.pop() if len(names) == 1 else None


UNNAMED_MODEL = "(model not in this capture)"
"""Said of GPUs that no source of the capture names (a pasted topology matrix has no model
names): not "unknown GPU", which reads as a GPU pcidoc failed to recognise."""


def gpu_models(capture: Capture) -> str:
    """``"8 × NVIDIA H100 80GB HBM3"``, ``"2 × A, 1 × B"``, ``"8 × GPU (model not in this
    capture)"`` or ``"no GPUs"``."""
    if not capture.gpus:
        return "no GPUs"
    counts = Counter(gpu_name(capture, gpu) for gpu in capture.gpus)
    return ", ".join(
        f"{n} × {name}" if name else f"{n} × GPU {UNNAMED_MODEL}" for name, n in counts.items()
    )


def versions(capture: Capture) -> list[tuple[str, str]]:
    """Known software versions as ``(name, version)``: driver, CUDA, NVML, fabric manager."""
    driver = capture.driver
    out: list[tuple[str, str]] = []
    if driver.driver_version:
        out.append(("driver", driver.driver_version))
    if driver.cuda_driver_version:
        out.append(("CUDA", driver.cuda_driver_version))
    if driver.nvml_version:
        out.append(("NVML", driver.nvml_version))
    if driver.fabric_manager.version:
        out.append(("fabric manager", driver.fabric_manager.version))
    return out


def versions_text(capture: Capture) -> str:
    """``"driver 550.54.15 · CUDA 12.4"``, or ``""`` when none is known."""
    return " · ".join(f"{name} {value}" for name, value in versions(capture))


def source_text(source: ReportSource | None, capture: Capture) -> str:
    """Where the machine came from, for headers (``capture: x.json``, ``live``...)."""
    if source is not None:
        text = source.describe()
    else:
        text = capture.origin.kind
        if capture.origin.sample is not None:
            text = f"demo: {capture.origin.sample.name}"
        if text == "synthetic":
            return text + (" (redacted)" if capture.origin.redacted else "")
    if capture.origin.kind == "synthetic" and (source is None or source.kind != "synthetic"):
        text += " (synthetic data)"
    if capture.origin.redacted:
        text += " (redacted)"
    return text


def severity_counts(report: Report) -> list[tuple[str, int]]:
    """Non-zero ``(severity, count)`` worst first; counted from the checks when needed."""
    counts: dict[str, int] = dict(report.summary)
    if sum(counts.values()) != len(report.checks):
        counts = dict(Counter(check.severity for check in report.checks))
    return [(sev, counts[sev]) for sev in SEVERITIES if counts.get(sev)]


def summary_line(report: Report) -> str:
    """``"1 fail · 2 warn · 14 pass · 3 skip (20 checks)"``."""
    parts = [f"{count} {sev}" for sev, count in severity_counts(report)]
    total = len(report.checks)
    return f"{' · '.join(parts) or 'no checks ran'} ({total} {'check' if total == 1 else 'checks'})"


def exit_code(report: Report) -> int:
    """The exit code ``pcidoc check`` returns for this report."""
    from pcidoc.doctor.runner import exit_code_for

    return int(exit_code_for(report))


def attention(report: Report) -> list[CheckResult]:
    """Checks that need the reader's attention (fail, error, warn), worst first."""
    return [c for c in report.sorted_checks() if c.severity in ("fail", "error", "warn")]


def split_code(text: str) -> list[tuple[str, bool]]:
    """Split text on backticks into ``(piece, is_code)`` parts.

    An unmatched backtick is kept as a literal character.
    """
    parts = text.split("`")
    if len(parts) % 2 == 0:  # odd number of backticks: keep the last one literal
        parts = [*parts[:-2], parts[-2] + "`" + parts[-1]]
    return [(piece, i % 2 == 1) for i, piece in enumerate(parts) if piece]


DOCS_BASE_URL = "https://github.com/pcidoc/pcidoc/tree/main/docs"
"""Published documentation (pyproject's ``Documentation`` URL; a test keeps them equal)."""


def docs_link(docs_url: str | None) -> str | None:
    """A check's documentation as an absolute URL, usable from a forwarded file.

    Reports store the repository-relative ``docs/checks.md#<id>``; a mailed report has no
    repository beside it, so presenters point at the published docs instead. Absolute URLs
    are kept as they are.
    """
    if not docs_url:
        return None
    if docs_url.startswith(("http://", "https://")):
        return docs_url
    path = docs_url.removeprefix("./").removeprefix("docs/")
    return f"{DOCS_BASE_URL}/{path}"


def plural(count: int, word: str, many: str | None = None) -> str:
    """``"1 link"``, ``"2 links"``; ``many`` for irregular plurals."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


_SINGULAR_UNITS: dict[str, str] = {
    "links": "link",
    "errors": "error",
    "replays": "replay",
    "events": "event",
    "GPUs": "GPU",
    "NICs": "NIC",
    "pairs": "pair",
    "ranks": "rank",
    "processes": "process",
    "copies": "copy",
    "steps": "step",
}


def findings_of(check: CheckResult) -> list[tuple[str, str]]:
    """``(severity, summary)`` of every finding when the check found several (its summary names
    the worst and "(+N more)"): what each presenter lists so that no finding is hidden."""
    if len(check.findings) < 2:
        return []
    return [(f.severity, f.summary) for f in check.findings]


def evidence_text(item: Evidence) -> str:
    """``subject: label: value unit``, with a count unit in the singular for a count of one."""
    text = item.text()
    value = item.value
    singular = _SINGULAR_UNITS.get(item.unit or "")
    if singular and not isinstance(value, bool) and isinstance(value, int | float) and value == 1:
        text = text[: -len(item.unit or "")] + singular
    return text

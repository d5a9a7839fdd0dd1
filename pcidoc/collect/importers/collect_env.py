"""``python -m torch.utils.collect_env`` and vLLM's ``collect_env.py`` reports.

Three layouts are read alike: PyTorch's ``Key: value`` lines, vLLM >= 0.8's aligned
``Key                 : value`` lines, and vLLM >= 0.10's ``=====`` section banners around
them. Read: PyTorch, CUDA (build and runtime), ROCm, NCCL (``nvidia-nccl-cu12==2.21.5`` in the
library list, or ``NCCL version``), NVIDIA driver and vLLM versions, vLLM's ``CUDA Archs``, the OS
and kernel (from ``Python platform``), the GPU models listed under ``GPU models and
configuration`` and the ``N NICs found ... only displaying M`` notice of the topology section.
The embedded ``nvidia-smi topo -m`` matrix itself is read by the topology importer.
"""

from __future__ import annotations

import re

from pcidoc._record import record
from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.nccl_log import clean
from pcidoc.collect.importers.text import Doc, lazy
from pcidoc.collect.importers.walk import each_line, first_line
from pcidoc.model.evidence import EnvReport

FORMAT = "collect-env"

_KEY_RE = lazy(r"^\s*([A-Za-z][A-Za-z0-9 ./()_-]{1,60}?)\s*:\s*(\S(?:.*\S)?|)\s*$")
_MARKERS = (
    "collecting environment information",
    "pytorch version",
    "vllm version",
    "cuda used to build pytorch",
    "is cuda available",
    "gpu models and configuration",
)
_NCCL_PIP_RE = lazy(r"nvidia-nccl-cu\d+\s*[=]=\s*([\d.]+)|\bnccl\s*[=]=\s*([\d.]+)", re.IGNORECASE)
_NCCL_VERSION_RE = lazy(r"^\s*NCCL version\s*:\s*\(?([\d., ]+)\)?", re.IGNORECASE)
_GPU_LINE_RE = lazy(r"^\s*GPU\s*(\d+)\s*:\s*(\S(?:.*\S)?)\s*$")
_NIC_NOTICE_RE = lazy(
    r"(?<!\d)(\d{1,6})\s+NICs?\b.{0,80}?\b(?:only\s+(?:display|show)(?:ing|ed|s)?|"
    r"(?:display|show)(?:ing|ed|s)?\s+only)\s+(?:the\s+first\s+)?(\d+)",
    re.I,
)
_KERNEL_RE = lazy(r"Linux-(\d[^\s]{0,120}?)-(?:x86_64|aarch64|ppc64le|s390x)")


def read(doc: Doc, ctx: Context) -> list[Fragment]:
    """The importer's face: the report of ``doc`` as a fragment (none when there is none)."""
    report = extract(doc, ctx.file)
    if report is None:
        return []
    frag = Fragment(FORMAT)
    frag.evidence.env_reports.append(report)
    frag.read.append(summary(report))
    if report.driver_version:
        frag.driver["driver_version"] = report.driver_version
    return [frag]


_SECTION_BEFORE = 100
"""Lines read before the first marker line (vLLM's ``System Info`` section comes first)."""


def _is_marker(line: str) -> bool:
    """A line that starts a collect_env report (a word of every marker is looked for first:
    most lines of a long paste are passed over by that)."""
    if not (
        "ersion" in line
        or "ollecting" in line
        or "vailable" in line
        or "onfiguration" in line
        or "uild" in line
    ):
        return False
    lowered = line.strip().lower()
    return any(lowered.startswith(m) for m in _MARKERS) or "vllm version" in lowered


@record
class _Report:
    report: EnvReport
    in_gpus: bool = False


def _env_line(state: _Report, raw: str, index: int) -> bool:
    """One line of the report (the walker's handler)."""
    report = state.report
    line = clean(raw)
    stripped = line.strip()
    if state.in_gpus:
        gpu = _GPU_LINE_RE.match(line)
        if gpu:
            report.gpu_models.append(gpu.group(2))
            return True
        state.in_gpus = False
    notice = _NIC_NOTICE_RE.search(line)
    if notice:
        report.nic_notice = " ".join(stripped.split())
    _nccl_version(report, line)
    if "CUDA Archs:" in line:
        report.cuda_archs = line.split("CUDA Archs:", 1)[1].split(";", 1)[0].strip()
        return True
    key_match = _KEY_RE.match(line)
    if not key_match:
        return True
    key, value = key_match.group(1).strip().lower(), key_match.group(2).strip()
    if key == "gpu models and configuration":
        state.in_gpus = True
        gpu = _GPU_LINE_RE.match(value)
        if gpu:
            report.gpu_models.append(gpu.group(2))
        elif value and value.lower() not in ("could not collect", "n/a"):
            report.gpu_models.append(value)
    elif value and value.lower() not in ("could not collect", "n/a", "none"):
        _set_field(report, key, value)
    return True


def _nccl_version(report: EnvReport, line: str) -> None:
    if report.nccl_version is not None:
        return
    nccl = _NCCL_PIP_RE.search(line)
    if nccl:
        report.nccl_version = nccl.group(1) or nccl.group(2)
        return
    match = _NCCL_VERSION_RE.match(line)
    if match:
        report.nccl_version = ".".join(p.strip() for p in match.group(1).split(",") if p.strip())


def extract(doc: Doc, source: str) -> EnvReport | None:
    """The report in ``doc``; None when the text is not a collect_env report. The report is
    read from where it starts (its first ``Collecting environment information...``, ``PyTorch
    version:`` line, and the section before it that vLLM prints), whatever precedes it."""
    first = first_line(doc, _is_marker)
    if first is None:
        return None
    start = max(0, first - _SECTION_BEFORE)
    window = doc.lines[start : start + 4000]
    hits = sum(1 for line in window if any(line.strip().lower().startswith(m) for m in _MARKERS))
    vllm = any("vllm version" in line.lower() for line in window)
    if hits < 2 and not vllm:
        return None
    report = EnvReport(tool="vllm" if vllm else "torch", source=source)
    each_line(doc, _Report(report), _env_line, start=start, stop=start + 20000)
    return report


_FIELDS = {
    "pytorch version": "torch_version",
    "torch version": "torch_version",
    "cuda used to build pytorch": "cuda_build",
    "cuda runtime version": "cuda_runtime",
    "rocm version": "rocm_version",
    "rocm used to build pytorch": "rocm_version",
    "nvidia driver version": "driver_version",
    "vllm version": "vllm_version",
    "os": "os",
}
"""``Key: value`` lines of the report -> the EnvReport field they fill."""
_FIRST_ONLY = {"rocm_version"}
"""Fields two keys fill: the first one seen wins."""


def _set_field(report: EnvReport, key: str, value: str) -> None:
    if key == "python platform":
        kernel = _KERNEL_RE.search(value)
        if kernel:
            report.kernel = kernel.group(1)
        return
    name = _FIELDS.get(key)
    if name is None or (name in _FIRST_ONLY and getattr(report, name) is not None):
        return
    setattr(report, name, value)


def summary(report: EnvReport) -> str:
    """One line for ``origin.sources[].read``."""
    parts = [f"{report.tool} collect_env"]
    for label, value in (
        ("torch", report.torch_version),
        ("vLLM", report.vllm_version),
        ("CUDA", report.cuda_build),
        ("NCCL", report.nccl_version),
        ("driver", report.driver_version),
    ):
        if value:
            parts.append(f"{label} {value}")
    if report.gpu_models:
        parts.append(f"{len(report.gpu_models)} GPU(s) listed")
    return ", ".join(parts)

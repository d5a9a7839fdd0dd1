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

from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.nccl_log import clean
from pcidoc.collect.importers.text import Doc, lazy
from pcidoc.model.evidence import EnvReport

FORMAT = "collect-env"

_KEY_RE = lazy(r"^\s*([A-Za-z][A-Za-z0-9 ./()_-]{1,60}?)\s*:\s*(.*?)\s*$")
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
_GPU_LINE_RE = lazy(r"^\s*GPU\s*(\d+)\s*:\s*(.+?)\s*$")
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


def extract(doc: Doc, source: str) -> EnvReport | None:
    """The report in ``doc``; None when the text is not a collect_env report."""
    lowered = [line.lower() for line in doc.lines[:4000]]
    hits = sum(1 for line in lowered if any(line.strip().startswith(m) for m in _MARKERS))
    vllm = any("vllm version" in line for line in lowered)
    if hits < 2 and not vllm:
        return None
    report = EnvReport(tool="vllm" if vllm else "torch", source=source)
    in_gpus = False
    for raw in doc.lines[:20000]:
        line = clean(raw)
        stripped = line.strip()
        if in_gpus:
            gpu = _GPU_LINE_RE.match(line)
            if gpu:
                report.gpu_models.append(gpu.group(2))
                continue
            in_gpus = False
        notice = _NIC_NOTICE_RE.search(line)
        if notice:
            report.nic_notice = " ".join(stripped.split())
        nccl = _NCCL_PIP_RE.search(line)
        if nccl and report.nccl_version is None:
            report.nccl_version = nccl.group(1) or nccl.group(2)
        match = _NCCL_VERSION_RE.match(line)
        if match and report.nccl_version is None:
            report.nccl_version = ".".join(
                p.strip() for p in match.group(1).split(",") if p.strip()
            )
        if "CUDA Archs:" in line:
            report.cuda_archs = line.split("CUDA Archs:", 1)[1].split(";", 1)[0].strip()
            continue
        key_match = _KEY_RE.match(line)
        if not key_match:
            continue
        key, value = key_match.group(1).strip().lower(), key_match.group(2).strip()
        if key == "gpu models and configuration":
            in_gpus = True
            gpu = _GPU_LINE_RE.match(value)
            if gpu:
                report.gpu_models.append(gpu.group(2))
            elif value and value.lower() not in ("could not collect", "n/a"):
                report.gpu_models.append(value)
            continue
        if not value or value.lower() in ("could not collect", "n/a", "none"):
            continue
        _set_field(report, key, value)
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

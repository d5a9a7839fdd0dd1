#!/usr/bin/env python3
"""Rebuild the bundled samples in pcidoc/samples/data/ from ../shared/realdata.

Each real sample is made with pcidoc's own importer from the outputs of ONE machine (files of
one source thread/post), with every input file's ``# source:`` line kept as its citation. The
synthetic samples come from ``pcidoc.samples.synthetic``. The default ``--demo`` sample is the
real one with the most to diagnose (failures weigh more than warnings; a tie goes to the
smallest machine).

Usage: ``python tools/build_samples.py [--realdata DIR] [--check]``. With ``--check`` nothing
is written; the exit code says whether the committed samples are up to date.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pcidoc.collect.capture import dump_json  # noqa: E402
from pcidoc.model.capture import Capture, SampleInfo  # noqa: E402

FIXED_TIME = "1767225600"  # 2026-01-01T00:00:00Z: reproducible created_at / generated_at

REAL_SAMPLES: list[dict[str, object]] = [
    {
        "name": "autodl-2080ti-2gpu",
        "title": "2x RTX 2080 Ti in a rented container: PIX pair, P2P not supported",
        "summary": "Two GeForce GPUs behind one PCIe Gen3 switch in an AutoDL container; the "
        "driver refuses P2P, copies bounce through host memory and all-reduce runs at 4 GB/s.",
        "files": [
            "topo/rtx2080ti-x2-pix-container-with-p2p-ns-autodl.txt",
            "p2p-bandwidth/rtx2080ti-x2-pix-no-p2p-5.7gbps-autodl.txt",
            "nccl-tests/rtx2080ti-x2-pix-no-p2p-allreduce-4gbps-autodl.txt",
            "bandwidth/rtx2080ti-pinned-gen3-autodl.txt",
        ],
    },
    {
        "name": "rtx4090-8gpu-pcie",
        "title": "8x RTX 4090 on 2x EPYC (NPS4), no PCIe switch, stock driver: no P2P",
        "summary": "Every GPU on its own NUMA node, every pair SYS, P2P unavailable with the "
        "stock GeForce driver; P2P-enabled copies equal the host-staged fallback.",
        "files": [
            "topo/rtx4090x8-dual-epyc7542-nps4-4mlx5-all-sys-blog.txt",
            "p2p-bandwidth/rtx4090x8-sys-no-p2p-stock-driver-blog.txt",
        ],
    },
    {
        "name": "a100-sxm4-8gpu-nvswitch",
        "title": "8x A100-SXM4-80GB NVSwitch box (NV12), 4 NICs all SYS to the GPUs",
        "summary": "Healthy NVLink (~270 GB/s P2P) but every NIC is SYS to every GPU, so "
        "GPUDirect RDMA would cross the CPU.",
        "files": [
            "topo/a100-sxm4-80gb-x8-nv12-4nic-all-sys-distserve-3.txt",
            "p2p-bandwidth/a100-sxm4-80gb-x8-nvlink-270gbps-distserve-3.txt",
        ],
    },
    {
        "name": "h100-pcie-nvlink-bridge",
        "title": "2x H100 PCIe joined by NVLink bridges (NV12), HPE DL380a Gen11",
        "summary": "A bridged pair: 12 of 18 NVLinks wired and active (the 6 inactive lanes are "
        "unwired, not faults), ~257 GB/s P2P.",
        "files": [
            "topo/h100-pcie-x2-nv12-bridged-dl380a-koga.txt",
            "nvlink/h100-pcie-x2-bridge-12of18-active-6-inactive-koga.txt",
            "p2p-bandwidth/h100-pcie-x2-nvlink-bridge-256gbps-koga.txt",
        ],
    },
    {
        "name": "h800-8gpu-hgx",
        "title": "8x H800 HGX (NV8), 4 NICs, from a damaged terminal paste",
        "summary": "NVLink NV8 mesh with Gen5 x16 host links; the topology paste was clipped "
        "by the terminal and is imported partially.",
        "files": [
            "topo/h800-8gpu-nv8-terminal-truncated-paste-llm-action.txt",
            "pcie-query/h800-q-gen5-x16-llm-action.txt",
            "nvlink/h800-8links-26gbps-llm-action.txt",
        ],
    },
]


def _read(realdata: Path, rel: str) -> tuple[str, str]:
    lines = (realdata / rel).read_text(encoding="utf-8").splitlines(keepends=True)
    source = lines[0].removeprefix("# source:").strip()
    return "".join(lines[3:]), source


def build_real(realdata: Path, spec: dict[str, object]) -> Capture:
    """Import one machine's files and attach citations and sample metadata."""
    from pcidoc.collect.importers import import_texts

    files = [str(f) for f in spec["files"]]  # type: ignore[union-attr]
    texts, citations = [], {}
    for rel in files:
        text, source = _read(realdata, rel)
        texts.append((rel, text))
        citations[rel] = source
    capture = import_texts(texts).capture
    for origin_source in capture.origin.sources:
        origin_source.citation = citations.get(origin_source.path)
    capture.origin.sample = SampleInfo(
        name=str(spec["name"]), title=str(spec["title"]), summary=str(spec["summary"])
    )
    capture.origin.note = (
        "Built with `pcidoc import` from public outputs of one real machine; see sources."
    )
    return capture


def diagnosis_weight(capture: Capture) -> int:
    """How much there is to diagnose: 3 per failure, 1 per warning."""
    from pcidoc import doctor
    from pcidoc.model.report import ReportSource

    report = doctor.run(capture, ReportSource(kind="demo"), generated_at="1970-01-01T00:00:00Z")
    return 3 * report.summary.get("fail", 0) + report.summary.get("warn", 0)


def build_all(realdata: Path) -> dict[str, str]:
    """All samples as file name -> content, including index.json."""
    from pcidoc.samples.synthetic import SYNTHETIC

    os.environ["SOURCE_DATE_EPOCH"] = FIXED_TIME
    from pcidoc import __version__
    from pcidoc.collect.capture import utc_now

    outputs: dict[str, str] = {}
    index: list[dict[str, object]] = []
    weights: dict[str, int] = {}
    for spec in REAL_SAMPLES:
        capture = build_real(realdata, spec)
        capture.origin.created_at = utc_now()
        capture.origin.pcidoc_version = __version__
        name = str(spec["name"])
        outputs[f"{name}.json"] = dump_json(capture)
        weights[name] = diagnosis_weight(capture)
        index.append(
            {
                "name": name,
                "title": spec["title"],
                "summary": spec["summary"],
                "file": f"{name}.json",
                "kind": "import",
                "gpus": len(capture.gpus),
            }
        )
    for name, make in SYNTHETIC.items():
        capture = make()
        capture.origin.created_at = utc_now()
        capture.origin.pcidoc_version = __version__
        sample = capture.origin.sample
        assert sample is not None
        outputs[f"{name}.json"] = dump_json(capture)
        index.append(
            {
                "name": name,
                "title": sample.title,
                "summary": sample.summary,
                "file": f"{name}.json",
                "kind": "synthetic",
                "gpus": len(capture.gpus),
            }
        )
    # A tie goes to the smallest machine (its first screen is the easiest to read), then by name.
    gpus = {str(e["name"]): int(e["gpus"]) for e in index}  # type: ignore[call-overload]
    default = max(weights, key=lambda n: (weights[n], -gpus[n], n))
    for entry in index:
        if entry["name"] == default:
            entry["default"] = True
        if entry["name"] in weights:
            entry["diagnosis_weight"] = weights[str(entry["name"])]
    outputs["index.json"] = json.dumps(index, indent=2) + "\n"
    return outputs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--realdata", default=str(ROOT.parent / "shared" / "realdata"))
    parser.add_argument("--check", action="store_true", help="only compare, write nothing")
    args = parser.parse_args()
    outputs = build_all(Path(args.realdata))
    data_dir = ROOT / "pcidoc" / "samples" / "data"
    stale = [
        name
        for name, text in outputs.items()
        if not (data_dir / name).is_file() or (data_dir / name).read_text() != text
    ]
    if args.check:
        for name in stale:
            print(f"stale: {name}")
        return 1 if stale else 0
    data_dir.mkdir(parents=True, exist_ok=True)
    for name, text in outputs.items():
        (data_dir / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(outputs)} files to {data_dir} ({len(stale)} changed)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

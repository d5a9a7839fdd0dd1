#!/usr/bin/env python3
"""CPU time, peak memory and outcome of ``pcidoc import`` on the hostile inputs of issue 30.

Usage::

    .venv/bin/python tests/benchmarks/bad_inputs.py [--scale 1.0] [--only NAME] [--limit-s 120]
        [--code DIR]

Each case is built here (from lines of real outputs) and imported, written as a capture and
diagnosed (what ``pcidoc import`` then ``pcidoc check`` do) in a fresh process under a
CPU-time limit; the process's ``ru_maxrss`` is its peak memory. ``--scale`` changes every size
(held-out variants: other sizes than the issue's), ``--code DIR`` runs another checkout's
importers (what the figures were before a change). Prints one line per case; asserts nothing
(tests/importers/test_bounded_work.py holds the behaviour, this prints the figures).

Cases (the issue's sizes at scale 1):

* ``lspci``: a 35 KB ``lspci -vv`` paste whose cut header line ends in a run of blanks;
* ``nccl-log``: a 119 KB NCCL log with a ``P2P plugin`` line padded with blanks;
* ``collect-env``: a 102 KB collect_env report whose platform line repeats ``Linux-``;
* ``p2p-blank-lines``: 20,000 blank lines inside a p2pBandwidthLatencyTest matrix;
* ``topo-xml-nvlinks``: a 1.9 MB NCCL topology of GPUs with 64 NVLinks each;
* ``inspector-400-digits``: an Inspector JSON record with a 400-digit number;
* ``kernel-absurd-pid``: a kernel log whose first Xid line has a pid of 40 digits (and one
  that is not a number), then real Xid lines;
* ``kernel-nul-block``: a kern.log with a 64 KB block of NUL bytes (read as text: the file
  reader's refusal of NUL bytes is pcidoc/fileio.py's).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import resource, sys
from pcidoc.collect.importers import import_texts
from pcidoc.errors import PcidocError
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
try:
    result = import_texts([(sys.argv[2], text)])
    from pcidoc import doctor
    from pcidoc.collect.capture import capture_text
    from pcidoc.model.report import ReportSource
    capture_text(result.capture)
    doctor.run(result.capture, ReportSource(kind="import"), generated_at="2026-01-01T00:00:00Z")
    ev = result.capture.evidence
    facts = []
    if ev is not None:
        facts += [f"{len(k.xids)} Xid" for k in ev.kernel_logs]
        facts += [f"{len(t.pci)} pci nodes" for t in ev.nccl_topologies]
        facts += [f"{len(r)} inspector records" for r in [ev.inspector] if r]
    links = sum(len(g.nvlinks) for g in result.capture.gpus)
    if links:
        facts.append(f"{links} NVLinks")
    out = "imported (" + ", ".join(result.capture.origin.sources[0].formats) + ")"
    if facts:
        out += " " + ", ".join(facts)
    if result.warnings:
        out += f"; {len(result.warnings)} warning(s): " + result.warnings[0][:100]
except PcidocError as exc:
    out = "refused: " + str(exc)[:100]
except Exception as exc:
    out = f"internal error: {exc.__class__.__name__}: {str(exc)[:80]}"
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
print(out)
"""

_LSPCI_BLOCK = (
    "41:00.0 PCI bridge: PLX Technology, Inc. PEX 8747 48-Lane, 5-Port PCI Express Gen 3\n"
    "\tControl: I/O+ Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop-\n"
    "\t\tLnkCap:\tPort #0, Speed 8GT/s, Width x16, ASPM L1, Exit Latency L1 <4us\n"
    "\t\tLnkSta:\tSpeed 8GT/s (ok), Width x16 (ok)\n"
)
_NCCL_LINES = (
    "node1:2043:2043 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    "node1:2043:2043 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0\n"
    "node1:2043:2050 [0] NCCL INFO Channel 00/02 :    0   1\n"
    "node1:2043:2050 [0] NCCL INFO Channel 00 : 0[1b000] -> 1[3d000] via P2P/IPC/read\n"
)
_ENV_HEAD = (
    "Collecting environment information...\nPyTorch version: 2.3.0+cu121\n"
    "Is debug build: False\nCUDA used to build PyTorch: 12.1\nOS: Ubuntu 22.04.4 LTS (x86_64)\n"
)
_P2P_HEAD = (
    "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\n"
    "Device: 0, NVIDIA A100-SXM4-80GB, pciBusID: 7, pciDeviceID: 0, pciDomainID:0\n"
    "Device: 1, NVIDIA A100-SXM4-80GB, pciBusID: b, pciDeviceID: 0, pciDomainID:0\n"
    "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n"
    "   D\\D     0      1\n"
    "     0 1520.10  18.47\n"
)
_XID = (
    "[ 5{n:03d}.000001] NVRM: Xid (PCI:0000:3b:00): 79, pid={pid}, name=python, "
    "GPU has fallen off the bus.\n"
)


def _lspci(scale: float) -> str:
    size = int(35_000 * scale)
    return _LSPCI_BLOCK + "0000:42:00.0 " + " " * size + "x\n" + _LSPCI_BLOCK


def _nccl_log(scale: float) -> str:
    size = int(119_000 * scale)
    pad = "node1:2043:2043 [0] NCCL INFO P2P plugin IBext" + " " * size + "v8\n"
    return _NCCL_LINES + pad + _NCCL_LINES


def _collect_env(scale: float) -> str:
    size = int(102_000 * scale)
    return _ENV_HEAD + "Python platform: " + "Linux-5a" * (size // 8) + "\n"


def _p2p_blank_lines(scale: float) -> str:
    head, _, rows = _P2P_HEAD.partition("   D\\D")
    return head + "\n" * int(20_000 * scale) + "   D\\D" + rows + "     1  18.51 1519.93\n"


def _topo_xml(scale: float) -> str:
    gpus = max(2, int(480 * scale))
    parts = ['<system version="1">', '<cpu numaid="0" arch="x86_64" vendor="AuthenticAMD">']
    for index in range(gpus):
        bus = f"0000:{index // 32:02x}:{index % 32:02x}.0"
        parts.append(f'<pci busid="{bus}" class="0x030200"><gpu dev="{index}" sm="90" gdr="1">')
        target = f"0000:{(index + 1) % gpus // 32:02x}:{(index + 1) % gpus % 32:02x}.0"
        parts += [f'<nvlink target="{target}" count="1" tclass="0x030200"/>'] * 64
        parts.append("</gpu></pci>")
    parts.append("</cpu></system>")
    return "\n".join(parts) + "\n"


def _inspector(scale: float) -> str:
    digits = "9" * max(20, int(400 * scale))
    return (
        '{"header": {"id": "0x7f", "rank": 2, "n_ranks": 8, "nnodes": 1}, '
        '"metadata": {"inspector_output_format_version": "v4.0", "hostname": "h"}, '
        f'"coll_perf": {{"coll": "AllReduce", "coll_sn": 1, "coll_msg_size_bytes": {digits}, '
        '"coll_exec_time_us": 61974, "coll_algobw_gbs": 277.2, "coll_busbw_gbs": 485.1}}\n'
    )


def _kernel_pid(scale: float) -> str:
    lines = [_XID.format(n=0, pid="9" * max(12, int(40 * scale))), _XID.format(n=1, pid="²")]
    lines += [_XID.format(n=i, pid=1000 + i) for i in range(2, 6)]
    return "".join(lines)


def _kernel_nul(scale: float) -> str:
    head = "".join(_XID.format(n=i, pid=1000 + i) for i in range(3))
    tail = "".join(_XID.format(n=i, pid=1000 + i) for i in range(3, 6))
    return head + "\x00" * int(65_536 * scale) + tail


CASES: dict[str, Callable[[float], str]] = {
    "lspci": _lspci,
    "nccl-log": _nccl_log,
    "collect-env": _collect_env,
    "p2p-blank-lines": _p2p_blank_lines,
    "topo-xml-nvlinks": _topo_xml,
    "inspector-400-digits": _inspector,
    "kernel-absurd-pid": _kernel_pid,
    "kernel-nul-block": _kernel_nul,
}


def run_case(name: str, text: str, code: Path, limit_s: int) -> str:
    with tempfile.TemporaryDirectory(prefix="pcidoc-bad-") as folder:
        path = Path(folder) / f"{name}.txt"
        path.write_text(text, encoding="utf-8")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(path), path.name],
            cwd=code,
            env={**os.environ, "PYTHONPATH": str(code)},
            capture_output=True,
            text=True,
            check=False,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CPU, (limit_s, limit_s + 5)),
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    lines = done.stdout.strip().splitlines()
    peak = f"{int(lines[0]) / 1024:>6.0f} MB" if len(lines) == 2 else "     ? MB"
    outcome = lines[-1] if len(lines) == 2 else f"failed: {done.stderr.strip()[-100:]}"
    if done.returncode < 0:
        outcome = f"over {limit_s} s of CPU (killed)"
    size = len(text.encode())
    return f"{name:<22} {size / 1000:>8.0f} KB {cpu:>7.2f} s CPU {peak} peak  {outcome}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--only", action="append", help="run this case (repeatable)")
    parser.add_argument("--limit-s", type=int, default=120, help="CPU seconds per case")
    parser.add_argument("--code", type=Path, default=ROOT, help="checkout whose pcidoc runs")
    args = parser.parse_args(argv)
    print(f"pcidoc from {args.code}, scale {args.scale}", flush=True)
    for name, build in CASES.items():
        if args.only and name not in args.only:
            continue
        print(run_case(name, build(args.scale), args.code, args.limit_s), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

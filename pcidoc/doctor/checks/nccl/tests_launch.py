"""``nccl.tests-launch``: an nccl-tests/rccl-tests run where every process ran as its own 1-rank
job (several headers each listing only rank 0, busbw 0, the same table repeated): the binary
was built without MPI or launched without it, so nothing between GPUs was measured. Also
reports how a multi-node run spread over hosts, and virtualised bus ids.
"""

from __future__ import annotations

from collections import Counter

from pcidoc.doctor import config
from pcidoc.doctor.checks._common import ev
from pcidoc.doctor.checks.nccl._shared import evidence, quote
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, bare_skip, check
from pcidoc.model.evidence import PerfRun


@check("nccl.tests-launch")
def tests_launch(ctx: Context) -> list[Finding]:
    """1-rank jobs and the spread of a multi-node run."""
    findings: list[Finding] = []
    for run in evidence(ctx).test_runs:
        ranks = run.ranks
        alone = _alone(run)
        if alone is not None:
            findings.append(alone)
            continue
        hosts = run.hosts
        if len(hosts) > 1:
            per_host = Counter(r.host for r in ranks)
            virtual = [r.bus for r in ranks if r.bus and _virtual_bus(r.bus)]
            text = (
                f"{run.tool}: {len(ranks)} rank(s) over {len(hosts)} hosts ("
                + ", ".join(f"{h}: {n}" for h, n in per_host.items())
                + ")"
            )
            evidence_ = [quote(f"{r.host} device {r.device} [{r.bus}]", "rank") for r in ranks[:2]]
            if virtual:
                findings.append(
                    Finding(
                        "info",
                        text + "; the bus ids are a VM's virtual ones "
                        f"({virtual[0]}): NCCL needs the provider's NCCL_TOPO_FILE for "
                        "GPU/NIC locality",
                        evidence=evidence_,
                        remediation=[
                            "Check that NCCL_TOPO_FILE points at the instance type's file "
                            "(`pcidoc check --only nccl.topo-file` on a node).",
                        ],
                        confidence="medium",
                    )
                )
            else:
                findings.append(Finding("pass", text, evidence=evidence_, confidence="medium"))
        elif ranks:
            findings.append(
                Finding(
                    "pass",
                    f"{run.tool}: {len(ranks)} rank(s) in one job on {hosts[0]}",
                    confidence="medium",
                )
            )
    if not findings:
        return [bare_skip("nccl.tests-launch")]
    return findings


def _alone(run: PerfRun) -> Finding | None:
    """Every process ran as its own 1-rank job: several headers each listing only rank 0, or,
    without launch lines, rows repeated size by size with busbw 0."""
    ranks = run.ranks
    zero_only = bool(ranks) and all(r.rank == 0 for r in ranks)
    pids = {(r.host, r.pid) for r in ranks}
    launched = (run.headers > 1 or run.rank_lists > 1) and zero_only and len(pids) > 1
    # With one rank every collective but broadcast/reduce reports busbw 0; repeated tables
    # or rows are the other mark. Headers alone could be separate runs.
    proven = bool(run.zero_busbw_rows and run.duplicated_rows) or (
        launched and bool(run.zero_busbw_rows or run.duplicated_rows)
    )
    if not launched and not (proven and not ranks):
        return None
    how = (
        f"{run.headers} headers, {len(pids)} processes each listing only rank 0"
        if launched
        else f"{run.duplicated_rows} rows repeating the size before them"
    )
    if run.zero_busbw_rows:
        how += f", {run.zero_busbw_rows} rows with busbw 0"
    evidence = [quote(run.quote, "header")] if run.quote else []
    fastest = config.FASTEST_GPU_LINK_GBPS
    if run.max_algbw_gbps is not None and run.max_algbw_gbps > fastest:
        how += f", algbw up to {run.max_algbw_gbps:g} GB/s, above any GPU link ({fastest:g} GB/s)"
        evidence.append(ev("largest algbw", run.max_algbw_gbps, "GB/s"))
    return Finding(
        "fail" if proven else "warn",
        f"every process of the {run.tool} run ran as its own 1-rank job ({how}): no "
        "GPU-to-GPU traffic was measured",
        evidence=evidence,
        remediation=[
            "Build nccl-tests with MPI (`make MPI=1 MPI_HOME=/path/to/mpi`) and "
            "launch it with `mpirun`/`srun --mpi=pmix`, or drive all GPUs from one "
            "process with `-g <number of GPUs>`.",
        ],
        confidence="high" if proven else "medium",
    )


def _virtual_bus(bus: str) -> bool:
    """``0002:00:01``: a PCI domain per group of devices on bus 00 (Hyper-V style)."""
    parts = bus.split(":")
    return len(parts) == 3 and parts[0] not in ("0000",) and parts[1] == "00"

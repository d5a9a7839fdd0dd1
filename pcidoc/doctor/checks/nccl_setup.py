"""``nccl.version``, ``nccl.shm`` and ``nccl.env-ignored``: how NCCL was set up for the job.

* ``nccl.version``: an NCCL older than the first release that supports the GPU architecture.
* ``nccl.shm``: NCCL could not create its shared-memory segments (``/dev/shm`` too small, the
  Docker default of 64 MB).
* ``nccl.env-ignored``: settings the log shows were not honoured (``NCCL_IB_DISABLE`` while an
  external network plugin carried the traffic; ``NCCL_P2P_DISABLE``/``NCCL_SHM_DISABLE`` with
  the transport they disable still in use).
"""

from __future__ import annotations

import re

from pcidoc.doctor.checks.nccl_common import evidence, gpu_names, logs, quote
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check

# First NCCL release supporting each compute capability (GPU models are resolved by
# pcidoc.model.linkmodel). Source: NCCL 2.7.3 release notes, "Added support for A100 GPU and
# related platforms" (docs.nvidia.com/deeplearning/sdk/nccl-release-notes/rel_2-7-3.html).
# Compute capabilities whose first supporting release we could not cite are not judged.
_MIN_NCCL: tuple[tuple[float, str, tuple[int, int, int]], ...] = (
    (8.0, "Ampere (sm_80)", (2, 7, 3)),
)


def _cc(name: str) -> float | None:
    from pcidoc.model.linkmodel import lookup_gpu

    model = lookup_gpu(name)
    return model.compute_capability if model is not None else None


def _version(text: str | None) -> tuple[int, int, int] | None:
    if not text:
        return None
    match = re.match(r"^\s*(\d+)\.(\d+)\.(\d+)", text)
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


@check("nccl.version", "NCCL version vs the GPU architecture")
def version(ctx: Context) -> list[Finding]:
    """An NCCL release older than the GPU architecture."""
    found: list[tuple[str, str]] = []
    for log in logs(ctx):
        if log.version:
            found.append((log.version, f"NCCL log ({log.source})"))
    for report in evidence(ctx).env_reports:
        if report.nccl_version:
            found.append((report.nccl_version, f"{report.tool} collect_env"))
    if not found:
        return [
            Finding(
                "skip",
                "no NCCL version in the evidence",
                needs="import an NCCL_DEBUG=INFO log (it prints `NCCL version`) or a "
                "collect_env report",
            )
        ]
    names = gpu_names(ctx)
    text, where = found[0]
    have = _version(text)
    if have is None:
        return [Finding("skip", f"NCCL version '{text}' is not a release number")]
    if not names:
        return [
            Finding(
                "skip",
                f"NCCL {text} ({where}); the GPU model is not in the evidence",
                needs="import nvidia-smi output or a collect_env report with the GPU names",
            )
        ]
    for cc, arch, minimum in _MIN_NCCL:
        matching = [n for n in names if _cc(n) == cc]
        if matching and have < minimum:
            need = ".".join(map(str, minimum))
            return [
                Finding(
                    "fail",
                    f"NCCL {text} predates support for {arch} GPUs ({matching[0]}); "
                    f"{need} is the first release that supports them",
                    evidence=[quote(text, "NCCL version"), quote(matching[0], "GPU")],
                    remediation=[
                        "Use an NCCL build for this architecture: upgrade the framework "
                        "(its bundled NCCL) or the container image, or point LD_LIBRARY_PATH "
                        "at a newer libnccl.",
                    ],
                )
            ]
    judged = [n for n in names if any(_cc(n) == cc for cc, _, _ in _MIN_NCCL)]
    if judged:
        return [
            Finding(
                "pass",
                f"NCCL {text} supports {judged[0]}",
                evidence=[quote(text, "NCCL version")],
            )
        ]
    return [
        Finding(
            "skip",
            f"NCCL {text}; no cited minimum version for {names[0]}",
            needs="pcidoc's table covers the architectures whose first NCCL release is cited",
        )
    ]


@check("nccl.shm", "NCCL shared memory (/dev/shm)")
def shm(ctx: Context) -> list[Finding]:
    """``/dev/shm`` too small for NCCL's SHM transport."""
    all_logs = logs(ctx)
    errors = [q for log in all_logs for q in log.shm_errors]
    if errors:
        return [
            Finding(
                "fail",
                "NCCL could not allocate its shared-memory buffers: /dev/shm is too small "
                "(a container's 64 MB default)",
                evidence=[quote(q.quote) for q in errors[:3]],
                remediation=[
                    "Start the container with `--shm-size=1g` (or more) or `--ipc=host`; in "
                    "Kubernetes mount an `emptyDir: {medium: Memory}` volume at /dev/shm.",
                    "Check with `df -h /dev/shm` inside the container.",
                ],
            )
        ]
    used = [c for log in all_logs for c in log.connections if c.transport == "SHM"]
    if used:
        return [
            Finding(
                "pass",
                f"NCCL set up {len(used)} SHM connection(s) without a shared-memory error in "
                "the log shown",
                evidence=[quote(used[0].quote)],
                confidence="medium",
            )
        ]
    return [
        Finding(
            "skip",
            "no NCCL shared-memory use or error in the evidence",
            needs="import the job's NCCL_DEBUG=INFO log",
        )
    ]


@check("nccl.env-ignored", "NCCL settings the log shows were not honoured")
def env_ignored(ctx: Context) -> list[Finding]:
    """Environment settings NCCL ignored."""
    findings: list[Finding] = []
    seen = False
    for log in logs(ctx):
        if not log.env:
            continue
        seen = True
        ib_off = log.env.get("NCCL_IB_DISABLE", "").strip() not in ("", "0")
        net = (log.network or "").strip()
        if ib_off and log.net_plugin and net and net.lower() not in ("socket", "ib"):
            findings.append(
                Finding(
                    "warn",
                    f"NCCL_IB_DISABLE={log.env['NCCL_IB_DISABLE']} did not keep traffic off "
                    f"RDMA: the external network plugin '{log.net_plugin}' carried it "
                    f"(network {net})",
                    evidence=[
                        quote(log.env_quotes.get("NCCL_IB_DISABLE")),
                        quote(log.net_plugin_quote, "plugin"),
                        quote(log.networks[-1].quote if log.networks else None),
                    ],
                    remediation=[
                        "NCCL_IB_DISABLE only switches off NCCL's internal IB transport. To "
                        "force sockets use `NCCL_NET=Socket`; to skip the plugin, "
                        "`NCCL_NET_PLUGIN=none`.",
                    ],
                )
            )
        for name, transport in (("NCCL_P2P_DISABLE", "P2P"), ("NCCL_SHM_DISABLE", "SHM")):
            value = log.env.get(name, "").strip()
            if value in ("", "0"):
                continue
            still = [c for c in log.connections if c.transport == transport]
            if still:
                findings.append(
                    Finding(
                        "warn",
                        f"{name}={value} is set, yet the log shows {transport} connections",
                        evidence=[quote(log.env_quotes.get(name)), quote(still[0].quote)],
                        remediation=[
                            "The setting reached only some processes: export it for every "
                            "rank (`mpirun -x`, `srun --export`, the launcher's env).",
                        ],
                        confidence="medium",
                    )
                )
    if findings:
        return findings
    if seen:
        names = sorted({k for log in logs(ctx) for k in log.env})
        return [
            Finding(
                "pass",
                f"no sign that NCCL ignored {', '.join(names[:6])}",
                confidence="medium",
            )
        ]
    return [
        Finding(
            "skip",
            "no `set by environment` line in the NCCL evidence",
            needs="import an NCCL_DEBUG=INFO log (NCCL_DEBUG_SUBSYS=INIT,ENV shows the settings)",
        )
    ]

"""``nccl.env-ignored``: settings the log shows were not honoured (``NCCL_IB_DISABLE`` while an
external network plugin carried the traffic; ``NCCL_P2P_DISABLE``/``NCCL_SHM_DISABLE`` with
the transport they disable still in use).
"""

from __future__ import annotations

from pcidoc.doctor.checks.nccl._shared import logs, quote
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, bare_skip, check
from pcidoc.doctor.wording import short_list


@check("nccl.env-ignored")
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
                f"no sign that NCCL ignored {short_list(names, 6)}",
                confidence="medium",
            )
        ]
    return [bare_skip("nccl.env-ignored")]

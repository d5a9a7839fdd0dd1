"""The ``nccl.*`` checks: what imported evidence (NCCL logs, nccl-tests output, pasted
``lspci``, NCCL topology files) says about the job. One module per check id; lookups over
``capture.evidence`` that several of them use live in ``_shared``.
"""

from pcidoc.doctor.checks.nccl import (  # noqa: F401  (registers on import)
    acs_redirect,
    env_ignored,
    inspector,
    lspci_link,
    network,
    nic_inventory,
    ras,
    shm,
    tests_launch,
    topo_file,
    transport,
    version,
    watchdog,
)

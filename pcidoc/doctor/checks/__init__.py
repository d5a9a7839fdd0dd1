"""Check modules, one topic each. Importing this package registers every check."""

from pcidoc.doctor.checks import (  # noqa: F401
    env,
    nccl_launch,
    nccl_lspci,
    nccl_setup,
    nccl_topofile,
    nccl_transport,
    numa,
    nvlink,
    nvml,
    p2p,
    pcie,
    scaling,
    transfer,
)

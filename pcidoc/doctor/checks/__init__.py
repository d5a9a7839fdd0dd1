"""Check modules, one topic each. Importing this package registers every check."""

from pcidoc.doctor.checks import (  # noqa: F401
    env,
    numa,
    nvlink,
    nvml,
    p2p,
    pcie,
    scaling,
    transfer,
)

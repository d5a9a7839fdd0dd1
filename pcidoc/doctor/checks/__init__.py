"""Check packages, one per topic, one module per check id (``p2p.acs-iommu`` lives in
``p2p/acs_iommu.py``). Importing this package registers every check.
"""

from pcidoc.doctor.checks import (  # noqa: F401
    env,
    kernel,
    log,
    nccl,
    numa,
    nvlink,
    nvml,
    p2p,
    pcie,
    scaling,
    transfer,
)

"""The ``kernel.*`` checks: what the kernel log (``capture.evidence.kernel_logs``: a pasted
``dmesg``/``journalctl -k``, or the live machine's last boot) says about the interconnect. One
module per check id; the Xid catalogue and the bus-id joins live in ``_shared``.
"""

from pcidoc.doctor.checks.kernel import aer, iommu_fault, xid  # noqa: F401  (registers on import)

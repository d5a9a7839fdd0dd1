"""The ``kernel.*`` checks: what the kernel log (``capture.evidence.kernel_logs``: a pasted
``dmesg``/``journalctl -k``, or the live machine's last boot) says about the interconnect. One
module per check id; what a code or a bit means is the failure catalogue's, and the log lookups
and bus-id joins are doctor-level (:mod:`pcidoc.doctor.evidence`, :mod:`pcidoc.doctor.devices`).
"""

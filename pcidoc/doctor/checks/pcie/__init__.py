"""PCIe checks: ``pcie.link-speed``, ``pcie.errors`` and ``pcie.shared-uplink``.

* ``pcie.link-speed``: a link trained below what both ends support (downtrained, judged only
  under load or in P0) versus a link capped by the slot, the host or an upstream port
  (slot-limited); upstream ports on the path whose own link runs below its ceiling.
* ``pcie.errors``: replay counters against DCGM's generation-scaled rate, replay outliers
  among identical GPUs, rollovers and AER counters on the GPU and every port of its path.
* ``pcie.shared-uplink``: GPUs behind one switch uplink that contend for it during
  concurrent host transfers, and switch pairs without P2P whose copies cross the uplink twice.

* ``pcie.link-flap``: links that change gen/width over repeated readings (``watch``, pasted
  snapshots) or stay trained low, told apart from idle power saving.

All are pure functions of the capture; every threshold is in :mod:`pcidoc.doctor.config`.
"""

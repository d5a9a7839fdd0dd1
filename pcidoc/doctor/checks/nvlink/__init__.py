"""NVLink checks: ``nvlink.state``, ``nvlink.errors`` and ``nvlink.fabric``.

* ``nvlink.state``: links down or missing, judged against identical peers and against the
  topology matrix, never against a table of GPU models. Designed partial meshes (DGX-1 hybrid
  cube mesh), bridged pairs and unwired bridge lanes are recognised as designs, and MIG mode
  (where NVML reports links down) is never a failure.
* ``nvlink.errors``: replay, recovery and CRC counters, which are cumulative.
* ``nvlink.fabric``: NVSwitch systems whose fabric is not registered, whose Fabric Manager is
  not running or does not match the driver, and multi-node NVLink (MNNVL) nodes without a
  clique/cluster.
"""

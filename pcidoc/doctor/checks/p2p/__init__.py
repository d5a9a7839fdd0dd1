"""P2P checks: what the driver grants (``p2p.capability``), what the PCIe fabric does to peer
traffic (``p2p.acs-iommu``), what peer copies deliver (``p2p.fallback``) and whether their
bytes are right (``p2p.integrity``).

The three link cause and effect both ways: a refused or redirected pair explains a slow copy,
and a slow copy names the bridge, IOMMU mode or driver policy that explains it.
"""

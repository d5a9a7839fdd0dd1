"""Check packages, one per topic, one module per check id (``p2p.acs-iommu`` lives in
``p2p/acs_iommu.py``). A check's module is imported when the check first runs
(:mod:`pcidoc.doctor.registry`; ``load_checks()`` imports them all).
"""

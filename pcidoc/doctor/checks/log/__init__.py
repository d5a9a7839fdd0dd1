"""The ``log.*`` checks: error lines of any program, read through the failure catalogue
(:mod:`pcidoc.catalogue`). One module per check id.
"""

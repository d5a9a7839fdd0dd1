"""The ``nccl.*`` checks: what imported evidence (NCCL logs, nccl-tests output, pasted
``lspci``, NCCL topology files) says about the job. One module per check id; lookups over
``capture.evidence`` that several of them use live in ``_shared``.
"""

"""Environment checks: ``env.nccl`` and ``env.virtualization``.

* ``env.nccl``: ``NCCL_*`` and ``CUDA_*`` variables of the captured environment that defeat
  the topology (P2P or SHM disabled, P2P level below what the links need, GPUDirect RDMA or IB
  off with RDMA NICs present, forced algorithms/protocols, CUDA_VISIBLE_DEVICES that hides or
  reorders GPUs so NVLink partners are split, ordinals that differ from nvidia-smi indices).
* ``env.virtualization``: VM, vGPU, MIG, containers and confidential computing, and what each
  changes for the other checks and for NCCL.
"""

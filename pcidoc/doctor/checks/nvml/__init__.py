"""Check ``nvml.health``: can pcidoc (and every CUDA program) talk to the NVIDIA driver?

Reads ``driver.nvml_available`` / ``driver.nvml_error`` (why NVML did not initialise),
``driver.nvidia_pci_devices`` (NVIDIA GPUs counted on the PCI bus without the driver), each
GPU's ``nvml_error`` (``GPU_IS_LOST``, ``NO_PERMISSION``...) and the virtualization facts that
explain why a container or VM sees fewer GPUs than the bus. Imported captures carry no NVML
state of the machine as it is now, so they never pass this check.
"""

"""NUMA checks: GPU pairs and GPU↔NIC paths across sockets (``numa.cross-socket``), GPU
processes bound away from their GPU (``numa.process-affinity``) and GPUs without a near NIC
(``numa.nic-affinity``)."""

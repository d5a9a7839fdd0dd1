"""The outputs ``pcidoc import`` reads: one table for the importer, ``pcidoc import --help``,
the README and docs/import.md (tests/test_import_formats_docs.py keeps them equal).

A module of its own, with no imports, so that building the command-line help does not load
the importers (~0.3 s).
"""

from __future__ import annotations

SUPPORTED_FORMATS: dict[str, str] = {
    "nvidia-smi-topo": "nvidia-smi topo -m / --matrix (topology, CPU/NUMA affinity, NIC legend)",
    "nvidia-smi-p2p": "nvidia-smi topo -p2p r|w|n|a|p (P2P status matrix)",
    "nvidia-smi-query": "nvidia-smi -q [-i N] [-d PCIE] (GPU identity, PCIe link, fabric)",
    "nvidia-smi-nvlink": "nvidia-smi nvlink -s / -R / -e (NVLink state, rate, remote ends)",
    "nvidia-smi-list": "nvidia-smi -L (GPU index, name, UUID)",
    "nvidia-smi": "nvidia-smi summary table (driver/CUDA versions, GPU names, bus ids)",
    "p2pBandwidthLatencyTest": "cuda-samples p2pBandwidthLatencyTest (P2P bandwidth/latency)",
    "bandwidthTest": "cuda-samples bandwidthTest (host<->device bandwidth)",
    "nvbandwidth": "nvbandwidth (CE/SM copy bandwidth and latency)",
    "nccl-tests": "nccl-tests/rccl-tests *_perf tables since 2019 (bus bandwidth, #wrong)",
    "pytorch-trace": "PyTorch profiler Chrome trace JSON (torch.profiler)",
    "nccl-log": "NCCL_DEBUG=INFO logs, NCCL 2.4 to 2.2x (transports, network, NICs, WARN lines)",
    "nccl-topo-xml": "NCCL topology XML (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE)",
    "lspci": "lspci -vv/-vvv blocks, -tv trees, grep excerpts (LnkSta, LnkCtl2, ACSCtl, AER)",
    "collect-env": "torch.utils.collect_env / vLLM collect_env.py reports",
    "nccl-tests-launch": "nccl-tests/rccl-tests rank lines across hosts (multi-node launches)",
    "nccl-tests-json": "nccl-tests JSON output (-J / --output_file)",
    "amd-topology": "rocm-smi --showtopo / amd-smi topology (XGMI/PCIe links, NUMA)",
    "nccl-ras": "NCCL RAS status reports (ncclras text and -f json)",
    "nccl-watchdog": "PyTorch ProcessGroupNCCL watchdog timeouts (WorkNCCL(SeqNum=...))",
    "flight-recorder": "PyTorch NCCL flight-recorder dumps (JSON)",
    "nccl-inspector": "NCCL Inspector records (JSON and Prometheus textfile)",
    "nccl-profiler-trace": "NCCL example profiler plugin trace (timings, no bandwidth)",
    "p2p-integrity": "simpleP2P verification, PyTorch peer-copy sessions, IOMMU-group tables",
    "kernel-log": "dmesg / journalctl -k / kern.log (Xid, AER, IOMMU faults, PCIe notices)",
    "link-history": "repeated link readings (nvidia-smi --query-gpu / -q -d PCIE, lspci, sysfs)",
    "error-lines": "error lines anywhere in a paste, matched against the failure catalogue "
    "(NCCL, InfiniBand, CUDA, PyTorch, Xid, AER, IOMMU, NVML, fabric manager, GPUDirect RDMA)",
}
"""Format id -> what it is; ids appear in ``origin.sources[].formats``."""

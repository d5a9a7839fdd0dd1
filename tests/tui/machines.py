"""Machines and fakes for the TUI tests. Every number here is SYNTHETIC (not measured).

* :func:`acs_machine` — 4 PCIe GPUs behind two switches with ACS redirect on, P2P refused
  across switches, one downtrained GPU, AER and replay counts, a NIC, and P2P matrices: the
  richest pair detail the Topology pane can show.
* :func:`no_gpu_machine` — what ``collect_live()`` returns on a laptop or CI box without the
  NVIDIA driver.
* :func:`hgx_live` — a live-looking 8-GPU NVSwitch box with a :class:`FakeNvmlBackend` whose
  counters advance deterministically, and a manual clock for the sampler.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from pcidoc.collect.counters import CounterSampler
from pcidoc.model import Capture, Nic, PcieHop
from pcidoc.model.facts import AcsControl, P2PStatus
from pcidoc.model.measurements import P2PMatrixMeasurement
from pcidoc.model.report import ReportSource
from tests.builders import machine
from tests.fakes.fake_nvml import FakeNvmlBackend

FIXED_NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
"""The wall clock of every TUI test (export names, report time stamps)."""

NO_DRIVER = (
    "NVML library libnvidia-ml.so.1 not found: the NVIDIA driver is not installed "
    "(no NVIDIA devices on the PCI bus)"
)


def _hop(
    bus: str, role: str, gen: int = 4, width: int = 16, acs: int | None = None, **kw: object
) -> PcieHop:
    hop = PcieHop(
        bus_id=bus, role=role, current_gen=gen, current_width=width, max_gen=4, max_width=16, **kw
    )
    if acs is None:
        hop.acs_capable = None
        hop.mark_unavailable("acs", "needs root (config space beyond 64 bytes)")
    else:
        hop.acs_capable = True
        hop.acs = AcsControl.from_raw(acs)
    return hop


def acs_machine() -> Capture:
    """4 GPUs: 0-1 behind switch A, 2-3 behind switch B (ACS ReqRedir+CmpltRedir on B)."""
    pairs = {
        (0, 1): "PIX",
        (2, 3): "PIX",
        (0, 2): "NODE",
        (0, 3): "NODE",
        (1, 2): "NODE",
        (1, 3): "NODE",
    }
    cap = machine(
        4,
        link="NODE",
        pairs=pairs,
        nics=["NIC0"],
        nic_links={
            (0, "NIC0"): "PIX",
            (1, "NIC0"): "PIX",
            (2, "NIC0"): "NODE",
            (3, "NIC0"): "NODE",
        },
        gpu_fields={"name": "NVIDIA L40S"},
    )
    cap.host.hostname = "acs-box"
    cap.host.kernel = "6.8.0-45-generic"
    cap.host.cpu_model = "AMD EPYC 9354 32-Core Processor"
    cap.host.cpu_vendor = "amd"
    cap.host.logical_cpus = 64
    cap.host.iommu.enabled = True
    cap.host.iommu.vendor = "amd"
    cap.host.iommu.default_domain_type = "DMA-FQ"
    cap.host.environment = {"NCCL_P2P_DISABLE": "1"}
    # Switch A (GPU0, GPU1, NIC0): ACS off. Switch B (GPU2, GPU3): ACS redirect on its
    # downstream ports, as a BIOS or a kernel with ACS enabled leaves them.
    downstream = {0: "0000:21:00.0", 1: "0000:22:00.0", 2: "0000:41:00.0", 3: "0000:42:00.0"}
    for gpu in cap.gpus:
        gpu.pcie.current_gen, gpu.pcie.current_width = 4, 16
        gpu.pcie.max_gen, gpu.pcie.max_width = 4, 16
        on_a = gpu.index < 2
        gpu.path = [
            _hop(downstream[gpu.index], "switch_downstream", acs=0x0000 if on_a else 0x001D),
            _hop(
                "0000:20:00.0" if on_a else "0000:40:00.0",
                "switch_upstream",
                acs=0x0000 if on_a else 0x0011,
            ),
            _hop("0000:00:01.1" if on_a else "0000:00:03.1", "root_port", acs=None),
        ]
        gpu.replay_count = 0
        gpu.aer_correctable = 0
    # GPU3 trained at Gen3 x8 under load, with replays and AER on its switch port.
    gpu3 = cap.gpus[3]
    gpu3.pcie.current_gen, gpu3.pcie.current_width = 3, 8
    gpu3.replay_count = 1200
    gpu3.aer_correctable = 87
    gpu3.path[0] = _hop(
        "0000:42:00.0", "switch_downstream", gen=3, width=8, acs=0x001D, aer_correctable=87
    )
    nic_path = [
        _hop("0000:23:00.0", "switch_downstream", acs=0x0000),
        _hop("0000:20:00.0", "switch_upstream", acs=0x0000),
        _hop("0000:00:01.1", "root_port", acs=None),
    ]
    cap.nics = [
        Nic(
            label="NIC0",
            name="mlx5_0",
            bus_id="0000:24:00.0",
            numa_node=0,
            kind="infiniband",
            netdevs=["ibp36s0"],
            path=nic_path,
        )
    ]
    ok, cns = "OK", "CNS"
    status = [
        [("X" if i == j else (ok if (i < 2) == (j < 2) else cns)) for j in range(4)]
        for i in range(4)
    ]
    cap.p2p = P2PStatus(gpus=[0, 1, 2, 3], matrices={"read": status, "write": status})

    def matrix(same: float, cross: float) -> list[list[float | None]]:
        return [
            [None if i == j else (same if (i < 2) == (j < 2) else cross) for j in range(4)]
            for i in range(4)
        ]

    cap.measurements.p2p = [
        P2PMatrixMeasurement(
            kind="bandwidth",
            p2p="enabled",
            access="write",
            method="ce",
            unit="GB/s",
            gpus=[0, 1, 2, 3],
            values=matrix(25.1, 9.8),
            source="synthetic:tui-test",
        ),
        P2PMatrixMeasurement(
            kind="bandwidth",
            p2p="disabled",
            method="ce",
            unit="GB/s",
            gpus=[0, 1, 2, 3],
            values=matrix(13.0, 12.4),
            source="synthetic:tui-test",
        ),
    ]
    # GPU3's Gen3 x8 link (7.9 GB/s raw) caps every copy to or from it; GPU2-GPU3 sit behind
    # switch B with ACS redirect, so their P2P goes up to the root complex and back.
    enabled = cap.measurements.p2p[0].values
    for other in (0, 1):
        enabled[other][3] = enabled[3][other] = 6.1
    enabled[2][3] = enabled[3][2] = 3.0
    cap.origin.kind = "synthetic"
    return cap


def acs_source() -> ReportSource:
    """Where :func:`acs_machine` claims to come from."""
    return ReportSource(kind="capture", path="acs-box.json")


def no_gpu_machine() -> Capture:
    """A live capture of a machine without the NVIDIA driver."""
    cap = Capture.empty("live")
    cap.host.hostname = "dev-laptop"
    cap.host.kernel = "6.10.3-arch1-1"
    cap.host.os = "Arch Linux"
    cap.host.cpu_model = "Intel(R) Core(TM) i7-1260P"
    cap.host.cpu_vendor = "intel"
    cap.host.logical_cpus = 16
    cap.host.sockets = 1
    from pcidoc.model import NumaNode

    cap.host.numa_nodes = [NumaNode(id=0, cpus="0-15", distances=[10])]
    cap.host.iommu.enabled = False
    cap.host.virtualization.hypervisor = False
    cap.host.privileged = False
    cap.driver.nvml_available = False
    cap.driver.nvml_error = "LIBRARY_NOT_FOUND"
    cap.driver.nvml_error_message = NO_DRIVER
    cap.driver.nvidia_pci_devices = 0
    cap.unavailable["gpus"] = NO_DRIVER
    return cap


@dataclass
class ManualClock:
    """A monotonic clock that moves only when told to."""

    t: float = 1000.0

    def __call__(self) -> float:
        return self.t


@dataclass
class LiveBox:
    """A live-looking machine: its capture, a fake NVML backend and the sampler's clock."""

    capture: Capture
    backend: FakeNvmlBackend
    clock: ManualClock = field(default_factory=ManualClock)

    def sampler(self, capture: Capture | None = None) -> CounterSampler:
        """The counter sampler over the fake backend (the app's ``sampler_factory``)."""
        return CounterSampler(self.backend, [g.index for g in self.capture.gpus], clock=self.clock)

    def advance(self, seconds: float = 1.0) -> None:
        """Move the counters and the clock forward together."""
        self.backend.advance(seconds)
        self.clock.t += seconds


def hgx_live(n: int = 8) -> LiveBox:
    """An 8-GPU NVSwitch box (NV18) whose counters advance at fixed, distinct rates."""
    backend = FakeNvmlBackend.hgx(n)
    backend.init()
    for i, fake in enumerate(backend.gpus):
        fake.pcie_tx_bytes_per_s = (i + 1) * 3.0e9
        fake.pcie_rx_bytes_per_s = (i + 1) * 1.5e9
        for link in fake.nvlinks or []:
            link.tx_kib_per_s = (link.link + 1) * 1.0e6
            link.rx_kib_per_s = (link.link + 1) * 0.5e6
    fake_gpu = backend.gpus[5]
    fake_gpu.replays_per_s = 4.0
    capture = machine(n, link="NV18", nics=["NIC0", "NIC1"], numa_nodes=2)
    capture.host.hostname = "hgx-live"
    for gpu in capture.gpus:
        gpu.tx_bytes_per_s = None
        gpu.rx_bytes_per_s = None
    return LiveBox(capture, backend)

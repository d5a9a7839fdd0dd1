"""The plain nvidia-smi summary table."""

from __future__ import annotations

from tests.importers.helpers import load

TABLE = (
    "+-----------------------------------------------------------------------------------------+\n"
    "| NVIDIA-SMI 550.90.07              Driver Version: 550.90.07      CUDA Version: 12.4     |\n"
    "|-----------------------------------------+------------------------+----------------------+\n"
    "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
    "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n"
    "|=========================================+========================+======================|\n"
    "|   0  NVIDIA GeForce RTX 4090        Off |   00000000:01:00.0 Off |                  Off |\n"
    "|  0%   38C    P8             21W /  450W |       2MiB /  24564MiB |      0%      Default |\n"
    "+-----------------------------------------+------------------------+----------------------+\n"
    "|   1  NVIDIA GeForce RTX 4090...      Off |   00000000:41:00.0 Off |                  Off |\n"
    "|  0%   35C    P2             25W /  450W |       2MiB /  24564MiB |      0%      Default |\n"
    "+-----------------------------------------+------------------------+----------------------+\n"
    "\n"
    "+-----------------------------------------------------------------------------------------+\n"
    "| Processes:                                                                              |\n"
    "|  No running processes found                                                             |\n"
    "+-----------------------------------------------------------------------------------------+\n"
)


def test_summary_table() -> None:
    cap = load("$ nvidia-smi\n" + TABLE)
    assert cap.driver.driver_version == "550.90.07"
    assert cap.driver.cuda_driver_version == "12.4"
    gpu0, gpu1 = cap.gpu(0), cap.gpu(1)
    assert gpu0 is not None
    assert gpu1 is not None
    assert (gpu0.name, gpu0.bus_id, gpu0.pstate, gpu0.persistence_mode) == (
        "NVIDIA GeForce RTX 4090",
        "0000:01:00.0",
        8,
        False,
    )
    assert gpu1.name is None  # truncated by the table
    assert gpu1.bus_id == "0000:41:00.0"
    assert gpu1.pstate == 2
    assert "gpus" not in cap.unavailable
    assert cap.origin.sources[0].formats == ["nvidia-smi"]


def test_summary_table_of_one_selected_gpu_does_not_set_the_count() -> None:
    lines = TABLE.splitlines(keepends=True)
    only_gpu0 = "".join(line for line in lines if "RTX 4090..." not in line and "P2 " not in line)
    cap = load("$ nvidia-smi -i 0\n" + only_gpu0)
    assert [g.index for g in cap.gpus] == [0]
    assert "no imported output lists every GPU" in cap.unavailable["gpus"]

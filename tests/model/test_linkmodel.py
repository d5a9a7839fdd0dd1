"""The link model: GPU model lookup, link rates and capture-level ceilings."""

from __future__ import annotations

import pytest

from pcidoc.model import linkmodel
from pcidoc.model.linkmodel import (
    GPU_MODELS,
    lookup_gpu,
    nccl_nvlink_model_gbps,
    nvlink_rate_gbps,
    pair_ceiling,
    pcie_rate_gbps,
)
from tests.builders import machine


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm5"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H100 NVL", "h100-nvl"),
        ("Tesla V100-SXM2-32GB", "v100-sxm2"),
        ("Tesla V100-PCIE-16GB", "v100-pcie"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 3090", "rtx-3090"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm4"),
        ("NVIDIA A100 80GB PCIe", "a100-pcie"),
        ("NVIDIA H800", "h800-sxm5"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA L40", "l40"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA RTX A6000", "rtx-a6000"),
        ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"),
        ("NVIDIA B200", "b200"),
        ("NVIDIA GB200", "gb200"),
        ("NVIDIA GH200 480GB", "gh200"),
        ("NVIDIA H200", "h200-sxm"),
        ("NVIDIA H20", "h20"),
        ("AMD Instinct MI300X", "mi300x"),
        ("AMD Instinct MI250X", "mi250x"),
        ("H100", "h100"),
    ],
)
def test_lookup_by_marketing_name(name: str, key: str) -> None:
    model = lookup_gpu(name)
    assert model is not None and model.key == key


def test_lookup_by_pci_device_id_bare_and_nvml_packed() -> None:
    assert lookup_gpu(None, 0x2330).key == "h100-sxm5"  # type: ignore[union-attr]
    assert lookup_gpu(None, 0x233010DE).key == "h100-sxm5"  # type: ignore[union-attr]
    # The id wins over a misleading name.
    assert lookup_gpu("something else", 0x20B2).key == "a100-sxm4"  # type: ignore[union-attr]


def test_unknown_names_are_none_not_a_guess() -> None:
    assert lookup_gpu("Tesla K80") is None
    assert lookup_gpu("") is None
    assert lookup_gpu(None) is None
    # Family entries know the NVLink version but not how many links the form factor carries.
    h100 = lookup_gpu("H100")
    assert h100 is not None and h100.nvlink_links is None and h100.form_factor == "unknown"


def test_expected_link_counts_per_form_factor() -> None:
    links = {m.key: m.nvlink_links for m in GPU_MODELS}
    assert links["h100-sxm5"] == 18
    assert links["a100-sxm4"] == 12
    assert links["v100-sxm2"] == 6
    assert links["h100-pcie"] == 12
    assert links["h800-sxm5"] == 8
    assert links["rtx-4090"] is None


def test_every_entry_cites_a_source_and_has_consistent_nvlink_fields() -> None:
    for model in GPU_MODELS:
        assert model.source.startswith("[A]"), model.key
        if model.nvlink_version is None:
            assert model.nvlink_links is None and model.nvlink_gbps_per_link is None
        else:
            assert model.nvlink_gbps_per_link


def test_rates_follow_the_datasheets() -> None:
    # Datasheet totals are bidirectional over all links: A100 600, H100 900, B200 1800 GB/s.
    assert lookup_gpu("NVIDIA A100-SXM4-80GB").nvlink_gbps == 300.0  # type: ignore[union-attr]
    assert lookup_gpu("NVIDIA H100 80GB HBM3").nvlink_gbps == 450.0  # type: ignore[union-attr]
    assert lookup_gpu("NVIDIA B200").nvlink_gbps == 900.0  # type: ignore[union-attr]
    assert lookup_gpu("RTX A6000").nvlink_gbps == 56.25  # type: ignore[union-attr]
    assert nvlink_rate_gbps("3.0", 12) == 300.0
    assert nvlink_rate_gbps("nope", 12) is None
    assert nvlink_rate_gbps("3.0", 0) is None
    assert pcie_rate_gbps(4, 16) == pytest.approx(31.5, abs=0.01)
    assert pcie_rate_gbps(None, 16) is None


def test_nccl_model_follows_the_compute_capability_like_nccl() -> None:
    assert nccl_nvlink_model_gbps("3.0", 12) == 240.0
    assert nccl_nvlink_model_gbps("3.0", 4, compute_capability=8.6) == 48.0
    assert nccl_nvlink_model_gbps("4.0", 18, compute_capability=9.0) == pytest.approx(370.8)
    assert nccl_nvlink_model_gbps(None, 12, 26.562) == pytest.approx(240.0)
    assert nccl_nvlink_model_gbps("3.0", None) is None


def test_pair_ceiling_nvlink_from_model_when_capture_has_no_nvlink_facts() -> None:
    cap = machine(2, link="NV12", gpu_fields={"name": "NVIDIA A100-SXM4-80GB"})
    for gpu in cap.gpus:
        gpu.nvlinks = []
    ceiling = pair_ceiling(cap, 0, 1)
    assert (ceiling.gbps, ceiling.kind, ceiling.provenance) == (300.0, "nvlink", "model")
    assert ceiling.source and "A100" in ceiling.source


def test_pair_ceiling_nvlink_from_capture_facts_is_fact() -> None:
    cap = machine(2, link="NV18", gpu_fields={"nvlink_version": "4.0", "nvlink_speed": 26.562})
    ceiling = pair_ceiling(cap, 0, 1)
    assert (ceiling.gbps, ceiling.provenance) == (450.0, "fact")


def test_pair_ceiling_pcie_is_the_slower_link_and_unknown_without_a_link_class() -> None:
    cap = machine(2, link="PIX", gpu_fields={"gen": 4, "width": 16})
    cap.gpus[1].pcie.current_width = 8
    cap.gpus[1].pcie.max_width = 8
    ceiling = pair_ceiling(cap, 0, 1)
    assert ceiling.kind == "pcie" and ceiling.gbps == pytest.approx(15.75, abs=0.01)
    cap.topology.labels, cap.topology.links = [], []
    assert pair_ceiling(cap, 0, 1).kind == "unknown"


def test_gpu_pcie_ceiling_falls_back_to_the_cards_own_generation() -> None:
    cap = machine(1, gpu_fields={"name": "NVIDIA H100 80GB HBM3"})
    gpu = cap.gpus[0]
    gpu.pcie.current_gen = gpu.pcie.max_gen = None
    ceiling = linkmodel.gpu_pcie_ceiling(gpu)
    assert ceiling.provenance == "model" and ceiling.gbps == pytest.approx(63.0, abs=0.1)


def test_link_ceilings_counts_links_up_or_the_models_links() -> None:
    cap = machine(2, link="NV12", gpu_fields={"name": "NVIDIA A100-SXM4-80GB"})
    for gpu in cap.gpus:
        gpu.nvlinks = []
    assert linkmodel.link_ceilings(cap, 0)["nvlink"].gbps == 300.0
    assert linkmodel.link_ceilings(cap, 0)["nvlink"].provenance == "model"


def test_every_model_is_listed_with_its_source_in_checks_md() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "checks.md").read_text("utf-8")
    for model in GPU_MODELS:
        assert f"| `{model.key}` |" in text, model.key
        assert model.source.replace("|", "/") in text, model.key

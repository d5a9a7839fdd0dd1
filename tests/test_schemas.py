"""Generated schemas stay in sync with the models, and the fast loader validates like them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pcidoc.collect.capture import load_capture, load_capture_data, save_capture
from pcidoc.errors import PcidocError
from pcidoc.model.compiled import STORE_FILE
from pcidoc.model.schemas import CORE_SCHEMA_FILE
from tests.builders import machine

ROOT = Path(__file__).resolve().parent.parent


_GENERATE = """
import json, sys
import os; os.environ["PCIDOC_COMPILED_SCHEMAS"] = "0"
from pcidoc.model.schemas import generate_all
json.dump(generate_all(), sys.stdout)
"""


@pytest.fixture(scope="module")
def generated() -> dict:
    """Schemas generated in a fresh interpreter: pydantic inlines or references nested model
    schemas depending on which models the process already built, so the text is only stable
    from scratch."""
    proc = subprocess.run(
        [sys.executable, "-c", _GENERATE], capture_output=True, text=True, cwd=ROOT, check=True
    )
    return json.loads(proc.stdout)


def test_stored_core_schema_matches_the_models(generated: dict) -> None:
    assert CORE_SCHEMA_FILE.read_text(encoding="utf-8") == generated["core"], (
        "pcidoc/model/capture.core.json is stale: run `python -m pcidoc.model.schemas`"
    )


def test_stored_compiled_schemas_match_the_models(generated: dict) -> None:
    assert Path(STORE_FILE).read_text(encoding="utf-8") == generated["compiled"], (
        "pcidoc/model/compiled.jsonl is stale: run `python -m pcidoc.model.schemas`"
    )


def test_published_json_schemas_match_the_models(generated: dict) -> None:
    for name, schema in generated["schemas"].items():
        published = json.loads((ROOT / "docs" / "schema" / name).read_text(encoding="utf-8"))
        stale = f"docs/schema/{name} is stale: run python -m pcidoc.model.schemas"
        assert published == schema, stale


def test_fast_loader_returns_the_same_data(tmp_path: Path) -> None:
    cap = machine(4, link="NV18", nics=["NIC0"], numa_nodes=2)
    path = save_capture(cap, tmp_path / "m.json")
    data = load_capture_data(path)
    assert data["schema"] == "pcidoc.capture/1"
    assert data["topology"]["labels"] == cap.topology.labels
    assert data["topology"]["links"] == cap.topology.links
    assert [g["index"] for g in data["gpus"]] == [0, 1, 2, 3]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["gpus"][1].__setitem__("index", "abc"),
        lambda d: d.__delitem__("topology"),
        lambda d: d["topology"]["links"][0].__setitem__(1, 5),
        lambda d: d["origin"].__setitem__("kind", "guess"),
        lambda d: d["gpus"][0]["nvlinks"].append({"state": "up"}),
    ],
    ids=["wrong-type", "missing-section", "bad-cell", "bad-literal", "missing-required"],
)
def test_fast_loader_rejects_what_the_models_reject(tmp_path: Path, mutate) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(save_capture(machine(2, link="NV4"), tmp_path / "ok.json").read_text())
    mutate(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(PcidocError) as slow:
        load_capture(bad)
    with pytest.raises(PcidocError) as fast:
        load_capture_data(bad)
    assert fast.value.message == slow.value.message

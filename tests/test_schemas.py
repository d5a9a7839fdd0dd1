"""Generated schemas stay in sync with the models; every command loads a capture one way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pcidoc.cli import main
from pcidoc.collect.capture import save_capture
from pcidoc.model.compiled import STORE_FILE
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


def test_stored_compiled_schemas_match_the_models(generated: dict) -> None:
    assert Path(STORE_FILE).read_text(encoding="utf-8") == generated["compiled"], (
        "pcidoc/model/compiled.jsonl is stale: run `python -m pcidoc.model.schemas`"
    )


def test_published_json_schemas_match_the_models(generated: dict) -> None:
    for name, schema in generated["schemas"].items():
        published = json.loads((ROOT / "docs" / "schema" / name).read_text(encoding="utf-8"))
        stale = f"docs/schema/{name} is stale: run python -m pcidoc.model.schemas"
        assert published == schema, stale


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
def test_topo_json_refuses_what_check_refuses(tmp_path: Path, capsys, mutate) -> None:  # type: ignore[no-untyped-def]
    """``topo --json`` reads a capture as every command does (the models over the one schema
    store); an earlier second, class-free schema for it had to be kept equal by hand."""
    data = json.loads(save_capture(machine(2, link="NV4"), tmp_path / "ok.json").read_text())
    mutate(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    errors = []
    for argv in (["check", "--json"], ["topo", "--json"], ["topo"]):
        assert main([*argv, "--from", str(bad)]) == 3
        out = capsys.readouterr()
        assert out.out == ""
        errors.append(out.err)
    assert errors[0].count("\n") == 1 and str(bad) in errors[0], errors[0]
    assert errors[1] == errors[0] and errors[2] == errors[0]

"""The stored core schemas (pcidoc/model/compiled.jsonl) replace pydantic's schema building at
start-up, and only while they match the running code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pcidoc.model import compiled

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "pcidoc" / "samples" / "data" / "h800-8gpu-hgx.json"

# Runs `check` in-process with pydantic's schema builder booby-trapped, and reports whether it
# was called and what the check printed.
_PROBE = """
import io, json, os, sys, contextlib
from pydantic._internal import _generate_schema
calls = []
real = _generate_schema.GenerateSchema.generate_schema
def spy(self, obj):
    calls.append(getattr(obj, "__name__", repr(obj)))
    return real(self, obj)
_generate_schema.GenerateSchema.generate_schema = spy
{setup}
from pcidoc.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(["check", "--json", "--from", sys.argv[1]])
json.dump({{"calls": calls, "code": code, "report": out.getvalue()}}, sys.stderr)
"""


def _run(setup: str = "", env: dict[str, str] | None = None) -> dict:
    import os

    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE.format(setup=setup), str(SAMPLE)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=full_env,
        check=False,
    )
    return json.loads(proc.stderr.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def stored_run() -> dict:
    return _run()


def test_check_builds_no_schema_when_the_store_matches(stored_run: dict) -> None:
    assert stored_run["calls"] == []
    assert stored_run["code"] in (0, 1, 2)


def test_disabled_store_builds_schemas_and_prints_the_same_report(stored_run: dict) -> None:
    built = _run(env={"PCIDOC_COMPILED_SCHEMAS": "0"})
    assert "Capture" in built["calls"] and "Report" in built["calls"]
    strip = [line for line in built["report"].splitlines() if '"generated_at"' not in line]
    same = [line for line in stored_run["report"].splitlines() if '"generated_at"' not in line]
    assert strip == same
    assert built["code"] == stored_run["code"]


def test_a_changed_model_source_falls_back_to_pydantic(stored_run: dict) -> None:
    # Pretend facts.py changed since the store was generated: its classes must be built by
    # pydantic, and the report must not change.
    setup = (
        "from pcidoc.model import compiled\n"
        "store = compiled._load_store()\n"
        "store.sources['pcidoc.model.facts'] = 'not-this-source'\n"
        "store._fresh = None\n"
    )
    built = _run(setup)
    assert "Gpu" in built["calls"] or "Capture" in built["calls"]
    strip = [line for line in built["report"].splitlines() if '"generated_at"' not in line]
    same = [line for line in stored_run["report"].splitlines() if '"generated_at"' not in line]
    assert strip == same


def test_another_pydantic_version_is_not_trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    from pcidoc.model.facts import Gpu

    store = compiled._load_store()
    assert store is not None
    assert compiled.stored_entry(Gpu) is not None
    monkeypatch.setattr(store, "pydantic", "0.0.1")
    assert compiled.stored_entry(Gpu) is None


def test_encode_round_trips_classes_methods_and_tuples() -> None:
    from pcidoc.model.facts import Gpu

    node = {
        "cls": Gpu,
        "factory": list,
        "hook": Gpu.__get_pydantic_json_schema__,
        "pair": (1, "a"),
        "ref": "pcidoc.model.facts.Gpu:1234",
    }
    text = json.dumps(compiled.encode(node))
    back = json.loads(text, object_hook=compiled._decode)
    assert back["cls"] is Gpu and back["factory"] is list
    assert back["hook"] == Gpu.__get_pydantic_json_schema__
    assert back["pair"] == (1, "a")
    assert back["ref"] == "pcidoc.model.facts.Gpu"


def test_encode_refuses_what_it_cannot_name() -> None:
    with pytest.raises(TypeError):
        compiled.encode({"default_factory": lambda: []})

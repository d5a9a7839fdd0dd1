"""Everything generated from the models, from one command: ``python -m pcidoc.model.schemas``.

It writes the schema store the models run on (``pcidoc/model/compiled.jsonl``: the validation and
serialization schemas pydantic builds for every model class, and the JSON Schemas of the three
file formats; see :mod:`pcidoc.model.compiled`) and the JSON Schemas under ``docs/schema/``.
``tests/test_schemas.py`` fails when either is stale. Nothing else is generated from the models:
every command, ``topo --json`` included, validates a capture with the models over that one store.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def json_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schemas of the capture, report and fleet formats, keyed by file name."""
    from pcidoc.model.capture import Capture
    from pcidoc.model.fleet import FleetReport
    from pcidoc.model.report import Report

    return {
        "capture.schema.json": Capture.model_json_schema(by_alias=True),
        "report.schema.json": Report.model_json_schema(by_alias=True),
        "fleet.schema.json": FleetReport.model_json_schema(by_alias=True),
    }


def generate_all() -> dict[str, Any]:
    """Every generated schema, built by pydantic in one fixed order (call in a fresh
    interpreter): ``compiled`` (the text of ``compiled.jsonl``) and ``schemas`` (the docs' JSON
    Schemas by file name)."""
    os.environ["PCIDOC_COMPILED_SCHEMAS"] = "0"  # pydantic models, not the stored schemas
    from pcidoc.model import compiled

    store = compiled.generate()
    return {"compiled": store, "schemas": json_schemas()}


def write_all(docs_dir: Path) -> list[Path]:
    """Regenerate the stored schemas and the docs' JSON Schemas."""
    from pcidoc.model.compiled import STORE_FILE

    store_file = Path(STORE_FILE)
    generated = generate_all()
    written = [store_file]
    store_file.write_text(generated["compiled"], encoding="utf-8")
    docs_dir.mkdir(parents=True, exist_ok=True)
    for name, schema in generated["schemas"].items():
        path = docs_dir / name
        path.write_text(json.dumps(schema, indent=2) + "\n", encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":  # pragma: no cover - maintenance entry point
    root = Path(__file__).resolve().parents[2]
    for path in write_all(root / "docs" / "schema"):
        print(f"wrote {path}")

"""Schemas generated from the models: JSON Schemas for the docs and the compiled validation
schema of the fast read path.

``pcidoc topo --json --from FILE`` only needs plain data, yet must validate the file exactly as
the models would. Building the pydantic model classes costs more than the whole command may
take, so the models' validation core schema is converted ahead of time into a class-free form
(typed dicts instead of model classes) and stored as ``capture.core.json`` next to this module.
``pydantic_core`` compiles it in a few milliseconds. ``tests/test_schemas.py`` fails when the
stored file no longer matches the models; ``python -m pcidoc.model.schemas`` rewrites it and the
JSON Schemas under ``docs/schema/``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

CORE_SCHEMA_FILE = Path(__file__).resolve().parent / "capture.core.json"
_REF_ID = re.compile(r":\d+$")

_DROPPED_KEYS = {
    "cls",
    "config",
    "metadata",
    "serialization",
    "post_init",
    "custom_init",
    "root_model",
    "generic_origin",
}


def _stable_ref(ref: str) -> str:
    """pydantic suffixes refs with ``:<id(cls)>``, which changes every run; drop it."""
    return _REF_ID.sub("", ref)


def _class_free(node: Any) -> Any:
    """Turn a pydantic core schema into one without Python classes (model -> typed dict)."""
    if isinstance(node, list):
        return [_class_free(item) for item in node]
    if not isinstance(node, dict):
        return node
    kind = node.get("type")
    if kind == "model":
        converted = _class_free(node["schema"])
        if "ref" in node:
            converted["ref"] = _stable_ref(node["ref"])
        return converted
    if kind == "model-fields":
        fields: dict[str, Any] = {}
        for name, field in node["fields"].items():
            schema = field["schema"]
            required = True
            if schema.get("type") == "default":
                required = False
                schema = schema["schema"]
            key = field.get("validation_alias") or name
            if not isinstance(key, str):
                key = name
            fields[key] = {
                "type": "typed-dict-field",
                "schema": _class_free(schema),
                "required": required,
            }
        return {"type": "typed-dict", "fields": fields, "extra_behavior": "ignore"}
    out = {key: _class_free(value) for key, value in node.items() if key not in _DROPPED_KEYS}
    for key in ("ref", "schema_ref"):
        if isinstance(out.get(key), str):
            out[key] = _stable_ref(out[key])
    return out


def capture_core_schema() -> dict[str, Any]:
    """The class-free validation schema of ``pcidoc.capture/1``, from the models."""
    from pcidoc.model.capture import Capture

    Capture.model_rebuild()
    return _class_free(Capture.__pydantic_core_schema__)


def json_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schemas of the capture, report and fleet formats, keyed by file name."""
    from pcidoc.fleet.model import FleetReport
    from pcidoc.model.capture import Capture
    from pcidoc.model.report import Report

    return {
        "capture.schema.json": Capture.model_json_schema(by_alias=True),
        "report.schema.json": Report.model_json_schema(by_alias=True),
        "fleet.schema.json": FleetReport.model_json_schema(by_alias=True),
    }


def dumps(data: Any) -> str:
    """Stable JSON text for generated files."""
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def generate_all() -> dict[str, Any]:
    """Every generated schema, built by pydantic in one fixed order (call in a fresh
    interpreter): ``compiled`` (the text of ``compiled.jsonl``), ``core`` (the text of
    ``capture.core.json``) and ``schemas`` (the docs' JSON Schemas by file name)."""
    os.environ["PCIDOC_COMPILED_SCHEMAS"] = "0"  # pydantic models, not the stored schemas
    from pcidoc.model import compiled

    store = compiled.generate()
    return {"compiled": store, "core": dumps(capture_core_schema()), "schemas": json_schemas()}


def write_all(docs_dir: Path) -> list[Path]:
    """Regenerate the stored schemas and the docs' JSON Schemas."""
    from pcidoc.model.compiled import STORE_FILE

    store_file = Path(STORE_FILE)
    generated = generate_all()
    written = [store_file, CORE_SCHEMA_FILE]
    store_file.write_text(generated["compiled"], encoding="utf-8")
    CORE_SCHEMA_FILE.write_text(generated["core"], encoding="utf-8")
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

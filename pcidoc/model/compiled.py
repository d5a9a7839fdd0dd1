"""Validation and serialization schemas of the models, generated ahead of time.

pydantic builds a model's validator the first time the model is used: it walks every field's
annotation and assembles a *core schema* (about 40 ms for the capture and the report, on every
start of ``pcidoc check``, ``import`` and the TUI). The result depends only on the model
definitions and the pydantic version, so it is generated once, stored next to this module as
``compiled.jsonl`` and, on first use of a model class, turned into the same
``SchemaValidator``/``SchemaSerializer`` pydantic would have built (``Model.model_rebuild``
installs it; see :mod:`pcidoc.model.base`).

The store is only used when it was generated from the same model sources and the same pydantic
version as the running ones (a SHA-256 of every model module's source and the version are kept in
its first line; one changed module disables all of it, since a class's schema embeds the schemas
of the classes it holds); otherwise pydantic builds the schema as usual, so a stale store costs
time, never correctness. ``PCIDOC_COMPILED_SCHEMAS=0`` turns it off.
``python -m pcidoc.model.schemas`` regenerates it; ``tests/test_schemas.py`` fails when it is
stale.

Format: JSON lines. Line 1 is a header (pydantic version, the source digests, and the line of
each class). Every other line is one class's core schema, in which Python objects are tagged:
``{"$class": "module:qualname"}`` (model classes, ``list``/``dict`` default factories),
``{"$method": ["module:qualname", "name"]}`` (a class's JSON Schema hook) and
``{"$tuple": [...]}``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from importlib import import_module
from pathlib import Path
from typing import Any

STORE_FILE = Path(__file__).resolve().parent / "compiled.jsonl"
_MODULES = (
    "pcidoc.model.base",
    "pcidoc.model.facts",
    "pcidoc.model.measurements",
    "pcidoc.model.evidence",
    "pcidoc.model.capture",
    "pcidoc.model.report",
    "pcidoc.fleet.model",
)
"""Modules whose model classes are stored (their sources are fingerprinted)."""

_store: _Store | None = None
_REF_ID = re.compile(r":\d+$")


class _Store:
    """The parsed header and the raw lines of :data:`STORE_FILE`, read once."""

    def __init__(self, lines: list[str]) -> None:
        header = json.loads(lines[0])
        self.pydantic: str = header["pydantic"]
        self.sources: dict[str, str] = header["sources"]
        self.lines: dict[str, int] = header["lines"]
        self.raw = lines
        self._fresh: bool | None = None

    @property
    def fresh(self) -> bool:
        """True when every model module's source is the one the store was generated from
        (a class's schema embeds the schemas of the classes it holds, from other modules)."""
        if self._fresh is None:
            self._fresh = all(
                digest is not None and source_digest(name) == digest
                for name, digest in self.sources.items()
            ) and set(self.sources) == set(_MODULES)
        return self._fresh

    def entry(self, key: str) -> dict[str, Any] | None:
        line = self.lines.get(key)
        if line is None:
            return None
        return json.loads(self.raw[line], object_hook=_decode)  # type: ignore[no-any-return]


def core_config(cls: Any) -> dict[str, Any]:
    """The ``CoreConfig`` pydantic passes with ``cls``'s schema."""
    from pydantic._internal._config import ConfigWrapper

    return dict(ConfigWrapper(cls.model_config, check=False).core_config(title=cls.__name__))


def enabled() -> bool:
    """False when ``PCIDOC_COMPILED_SCHEMAS=0`` (pydantic then builds every schema itself)."""
    return os.environ.get("PCIDOC_COMPILED_SCHEMAS", "1") != "0"


def class_key(cls: type) -> str:
    """``module:qualname`` of a class (how the store names it)."""
    return f"{cls.__module__}:{cls.__qualname__}"


def source_digest(module: str) -> str | None:
    """SHA-256 of a ``pcidoc.*`` module's source file, or ``None`` when it has none on disk."""
    package = Path(__file__).resolve().parents[1]
    file = package.joinpath(*module.split(".")[1:]).with_suffix(".py")
    try:
        return hashlib.sha256(file.read_bytes()).hexdigest()
    except OSError:
        return None


def _load_store() -> _Store | None:
    global _store
    if _store is None:
        try:
            text = STORE_FILE.read_text(encoding="utf-8")
            _store = _Store(text.split("\n"))
        except (OSError, ValueError, KeyError, IndexError):
            return None
    return _store


def stored_entry(cls: type) -> dict[str, Any] | None:
    """``cls``'s stored ``{"config", "schema"}`` when the store matches the running code, else
    ``None``."""
    if not enabled():
        return None
    store = _load_store()
    if store is None:
        return None
    import pydantic

    if store.pydantic != pydantic.VERSION:
        return None
    if not store.fresh:
        return None
    return store.entry(class_key(cls))


def install(cls: Any) -> bool:
    """Give a model class the validator and serializer of its stored schema, as pydantic's
    ``complete_model_class`` would; False (nothing changed) when there is no usable entry."""
    if not cls.__pydantic_fields_complete__ or cls.__pydantic_decorators__.computed_fields:
        return False
    if any(f.deprecation_message is not None for f in cls.__pydantic_fields__.values()):
        return False
    entry = stored_entry(cls)
    if entry is None:
        return False
    from functools import partial

    from pydantic._internal._config import ConfigWrapper
    from pydantic._internal._signature import generate_pydantic_signature
    from pydantic._internal._utils import LazyClassAttribute
    from pydantic_core import SchemaSerializer

    schema, config = entry["schema"], entry["config"]
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS"):
        from pydantic_core import SchemaValidator

        validator: Any = SchemaValidator(schema, config)
    else:
        from pydantic.plugin._schema_validator import create_schema_validator

        wrapper = ConfigWrapper(cls.model_config, check=False)
        validator = create_schema_validator(
            schema,
            cls,
            cls.__module__,
            cls.__qualname__,
            "BaseModel",
            config,
            wrapper.plugin_settings,
        )
    wrapper = ConfigWrapper(cls.model_config, check=False)
    cls.__pydantic_computed_fields__ = {}
    cls.__pydantic_core_schema__ = schema
    cls.__pydantic_validator__ = validator
    cls.__pydantic_serializer__ = SchemaSerializer(schema, config)
    cls.__signature__ = LazyClassAttribute(
        "__signature__",
        partial(
            generate_pydantic_signature,
            init=cls.__init__,
            fields=cls.__pydantic_fields__,
            validate_by_alias=wrapper.validate_by_alias,
            extra=wrapper.extra,
        ),
    )
    cls.__pydantic_complete__ = True
    cls.__pydantic_on_complete__()
    return True


# ----------------------------------------------------------------------------- encoding


def _resolve(key: str) -> Any:
    module, _, qualname = key.partition(":")
    obj: Any = import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _decode(node: dict[str, Any]) -> Any:
    if len(node) == 1:
        if "$class" in node:
            return _resolve(node["$class"])
        if "$method" in node:
            owner, name = node["$method"]
            return getattr(_resolve(owner), name)
        if "$tuple" in node:
            return tuple(node["$tuple"])
    return node


def encode(node: Any) -> Any:
    """A core schema as JSON-ready data (raises TypeError on anything that cannot be named)."""
    if isinstance(node, dict):
        out = {key: encode(value) for key, value in node.items()}
        for key in ("ref", "schema_ref"):
            # pydantic suffixes refs with ``:<id(cls)>``, different in every process.
            if isinstance(out.get(key), str):
                out[key] = _REF_ID.sub("", out[key])
        return out
    if isinstance(node, list):
        return [encode(value) for value in node]
    if isinstance(node, tuple):
        return {"$tuple": [encode(value) for value in node]}
    if node is None or isinstance(node, (str, int, float, bool)):
        return node
    if isinstance(node, type):
        key = class_key(node)
        if _resolve(key) is not node:
            raise TypeError(f"cannot store {node!r}: not importable as {key}")
        return {"$class": key}
    owner = getattr(node, "__self__", None)
    if isinstance(owner, type) and getattr(owner, node.__name__, None) == node:
        return {"$method": [class_key(owner), node.__name__]}
    raise TypeError(f"cannot store {node!r} in a compiled schema")


def model_classes() -> list[type]:
    """Every model class of :data:`_MODULES`, in a fixed order (module, then definition)."""
    from pydantic import BaseModel

    classes: list[type] = []
    for name in _MODULES:
        module = import_module(name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseModel)
                and value.__module__ == name
                and value not in classes
            ):
                classes.append(value)
    return classes


def generate() -> str:
    """The store's text, built by pydantic itself (call in a fresh interpreter with
    ``PCIDOC_COMPILED_SCHEMAS=0``: pydantic inlines or references nested schemas depending on
    what the process already built)."""
    import pydantic

    os.environ["PCIDOC_COMPILED_SCHEMAS"] = "0"  # never regenerate the store from itself
    classes = model_classes()
    built = [class_key(c) for c in classes if c.__pydantic_complete__]  # type: ignore[attr-defined]
    if built:
        raise RuntimeError(f"generate() needs a fresh interpreter; already built: {built[:3]}")
    lines: list[str] = []
    index: dict[str, int] = {}
    for cls in classes:
        cls.model_rebuild()  # type: ignore[attr-defined]
        schema = cls.__pydantic_core_schema__  # type: ignore[attr-defined]
        index[class_key(cls)] = len(lines) + 1
        entry = {"config": encode(core_config(cls)), "schema": encode(schema)}
        # Field order is the serialization order: keys are never sorted.
        lines.append(json.dumps(entry, separators=(",", ":")))
    digests = {name: source_digest(name) for name in _MODULES}
    header = {"pydantic": pydantic.VERSION, "sources": digests, "lines": index}
    return "\n".join([json.dumps(header, sort_keys=True), *lines]) + "\n"
